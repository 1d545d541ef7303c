"""Defence-in-depth rules (docs/defence-in-depth.md; in policies/rules/<area>.py) at the edges their rule cases do not
reach."""

from __future__ import annotations

from typing import Any

from policies.rules import BY_NAME
from tests.policy.helpers import found, mutated, run, shipped
from tests.policy.test_rules import REGISTRIES_VAP
from trainstack.engine import UNKNOWN


def test_an_allowlist_not_known_yet_is_judged_at_pulumi_up() -> None:
    """The allowlist names the account's private ECR, known once the stack runs against an account: a preview
    that cannot read it reports nothing rather than guessing."""

    def unknown(inputs: dict[str, Any]) -> None:
        inputs["spec"]["validations"][0]["expression"] = UNKNOWN

    result = run(mutated(shipped("prod"), REGISTRIES_VAP, unknown), policies=[BY_NAME["registry-allowlist-breadth"]])
    assert found(result, "registry-allowlist-breadth") == []

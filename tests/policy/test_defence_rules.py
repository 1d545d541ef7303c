"""Defence-in-depth rules (docs/defence-in-depth.md; in policies/rules/<area>.py) at the edges their rule cases do not
reach."""

from __future__ import annotations

from typing import Any

from pulumi_policy import EnforcementLevel

from policies.rules import BY_NAME
from tests.policy.helpers import found, mutated, run, shipped
from tests.policy.test_rules import P5_NG, REGISTRIES_VAP, _group_label
from trainstack.engine import UNKNOWN
from trainstack.review import PackConfig, run_policies


def test_an_allowlist_not_known_yet_is_judged_at_pulumi_up() -> None:
    """The allowlist names the account's private ECR, known once the stack runs against an account: a preview
    that cannot read it reports nothing rather than guessing."""

    def unknown(inputs: dict[str, Any]) -> None:
        inputs["spec"]["validations"][0]["expression"] = UNKNOWN

    result = run(mutated(shipped("prod"), REGISTRIES_VAP, unknown), policies=[BY_NAME["registry-allowlist-breadth"]])
    assert found(result, "registry-allowlist-breadth") == []


# --------------------------------------------------------------- a config that leaves a threshold out


def _without_config(policy: str, source: Any) -> list[str]:
    """What `policy` alone, mandatory, reports on `source` when its config names no property at all: the rule's
    own fallback decides, which must be the schema default the policy tables document."""
    config = PackConfig(levels={policy: EnforcementLevel.MANDATORY}, properties={policy: {}})
    violations, _, _ = run_policies(source, config, [BY_NAME[policy]])
    return [v.message for v in violations]


def test_log_retention_falls_back_to_its_documented_floors_not_one_day() -> None:
    logs = mutated(shipped("prod"), "-eks-cluster-logs", lambda inputs: inputs.update(retentionInDays=30))
    [message] = _without_config("log-retention-floor", logs)
    assert "kept 30 days" in message and "the floor here is 90 days" in message


def test_gpu_operator_opt_outs_fall_back_to_the_guarded_operands_not_none() -> None:
    opted_out = mutated(shipped("prod"), P5_NG, _group_label("nvidia.com/gpu.deploy.dcgm-exporter", "false"))
    assert len(_without_config("gpu-operator-node-opt-outs", opted_out)) == 1

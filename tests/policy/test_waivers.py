"""Waivers, one rule for the served pack and the offline review (policies/waivers.py), and the `stack-waivers`
rule's three cases (compliant, violated, not applicable).

The pack reads the waivers from `PULUMI_CONFIG`, the stack's config map as the Python language host hands it
over: every value a string, `trainstack:cluster` the JSON of the object (pulumi/pulumi v3.259.0,
pulumi-language-python RunPlugin; sdk/go/common/resource/config Plaintext.marshalText). `pulumi_config` below
builds that map from a stack file the way the CLI does.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from policies import waivers
from policies.rules import BY_NAME, POLICIES
from stacks.load import FULL_KEY, ConfigError
from tests.conftest import stack_config, stack_document
from tests.policy.helpers import shipped
from trainstack.review import resolve_config, review, run_policies

REASON = "approved by the platform team for the evaluation quarter, with an owner"


def pulumi_config(document: dict[str, Any]) -> dict[str, str]:
    """A stack file's `config:` as the CLI hands it to a policy pack in PULUMI_CONFIG: strings stay as they are,
    anything else is its JSON (Go's json.Marshal: compact, map keys sorted)."""
    return {
        key: value if isinstance(value, str) else json.dumps(value, sort_keys=True, separators=(",", ":"))
        for key, value in document["config"].items()
    }


def test_the_pack_reads_the_waivers_pulumi_hands_it() -> None:
    document = stack_document("staging")
    environ = {"PULUMI_CONFIG": json.dumps(pulumi_config(document)), "PULUMI_STACK": "staging"}
    read = waivers.from_environment(environ)
    expected = stack_config("staging").waivers
    assert read and [(w.rule, w.resource) for w in read] == [(w.rule, w.resource) for w in expected]
    assert all(w.reason == " ".join(e.reason.split()) for w, e in zip(read, expected, strict=True))


@pytest.mark.parametrize(
    "environ",
    [{}, {"PULUMI_CONFIG": "not json"}, {"PULUMI_CONFIG": "[]"}, {"PULUMI_CONFIG": json.dumps({FULL_KEY: "{"})}],
)
def test_no_or_unreadable_config_waives_nothing(environ: dict[str, str]) -> None:
    assert waivers.from_environment(environ) == ()


def test_a_waiver_exempts_one_rule_on_one_resource_and_never_a_stack_wide_violation() -> None:
    ledger = waivers.Ledger((waivers.Waiver("nat-per-az", "a", REASON),))
    assert ledger.screen("nat-per-az", "urn:pulumi:dev::trainstack::aws:ec2/subnet:Subnet::a", "m")
    assert not ledger.screen("nat-per-az", "urn:pulumi:dev::trainstack::aws:ec2/subnet:Subnet::b", "m")
    assert not ledger.screen("log-retention-floor", "urn:pulumi:dev::trainstack::aws:ec2/subnet:Subnet::a", "m")
    assert not ledger.screen("nat-per-az", "", "m")  # a stack-wide violation names no resource
    assert ledger.used == {0} and [w.resource for w in ledger.waived] == ["a"]


# ------------------------------------------------------------------------------------------------ stack-waivers


def _stack_waivers(recorded: Any, given: list[waivers.Waiver]) -> list[str]:
    """What the pack's rules report with `given` in force, as the served pack runs them: every rule, then
    `stack-waivers` last."""
    config = resolve_config({"all": "mandatory"})
    with waivers.applying(given):
        violations, skipped, _ = run_policies(recorded, config)
    assert POLICIES[-1].name == "stack-waivers"  # it judges what the others reported, so it runs last
    skipped_here = [reason for name, _, reason in skipped if name == "stack-waivers"]
    return [v.message for v in violations if v.policy == "stack-waivers"] or skipped_here


@pytest.mark.slow
def test_stack_waivers_compliant() -> None:
    """Staging's own waiver exempts a real violation: nothing to report."""
    given = [waivers.Waiver(w.rule, w.resource, w.reason) for w in stack_config("staging").waivers]
    assert _stack_waivers(shipped("staging"), given) == []


@pytest.mark.slow
@pytest.mark.parametrize(
    ("waiver", "says"),
    [
        (waivers.Waiver("no-such-rule", "a", REASON), "waivers.0.rule ('no-such-rule'): no such policy rule"),
        (waivers.Waiver("sg-no-world-ingress", "a", REASON), "a critical rule cannot be waived"),
        (waivers.Waiver("nat-per-az", "zzz", REASON), "waivers.0.resource ('zzz'): waives nothing"),
    ],
)
def test_stack_waivers_violated(waiver: waivers.Waiver, says: str) -> None:
    [message] = _stack_waivers(shipped("staging"), [waiver])
    assert says in message and message.startswith(f"{FULL_KEY}.waivers.0.")


@pytest.mark.slow
def test_stack_waivers_not_applicable() -> None:
    assert _stack_waivers(shipped("staging"), []) == ["the stack waives nothing"]


@pytest.mark.slow
def test_the_offline_review_refuses_what_the_pack_rule_reports() -> None:
    """The same problems, from the same function: the pack reports them under `stack-waivers` (mandatory in
    code), the offline plan refuses the stack file with them (exit 2)."""
    from stacks.schema.waivers import WaiverSpec

    bad = WaiverSpec(rule="nat-per-az", resource="zzz", reason=REASON)
    with pytest.raises(ConfigError) as raised:
        review(shipped("staging"), "staging", waivers=[bad])
    [problem] = raised.value.problems
    [message] = _stack_waivers(shipped("staging"), [waivers.Waiver(bad.rule, bad.resource, REASON)])
    assert message == f"{problem.key} ({problem.value!r}): {problem.message}"


def test_the_waiver_rule_is_critical_and_a_floor_everywhere() -> None:
    from policies.rules.floors import floor_level

    assert BY_NAME["stack-waivers"].severity is not None and BY_NAME["stack-waivers"].severity.value == "critical"
    for environment in ("dev", "staging", "prod", None):
        assert floor_level("stack-waivers", environment, "disabled") == "mandatory"

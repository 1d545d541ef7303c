"""One rule called directly on hand-built resources: for the branches no recording of the program reaches (a
resource type it never creates, an inline rule block, a partial input), one branch at a time and without a review.

The rule runs as the engine runs it: through its decorator (type filter, waivers screening, with no waiver in
force) and with the args' `not_applicable` raising, so a skip is told from a silent pass. The harness is kept in
a test module, with its own tests below, so that adding it maps only these tests again (scripts/mutate.py
`is_test_file`: any other file under tests/ makes `make mutate` map the whole suite again).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pulumi_policy import (
    PolicyCustomTimeouts,
    PolicyProviderResource,
    PolicyResource,
    PolicyResourceOptions,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)

from policies import enforcement
from policies.facts_generated import VPC
from policies.rules.network import vpc_flow_logs

OPTIONS = PolicyResourceOptions(False, [], None, [], PolicyCustomTimeouts(0, 0, 0), [])


def resource(
    type_: str,
    name: str,
    props: Mapping[str, Any] | None = None,
    deps: Mapping[str, Sequence[PolicyResource]] | None = None,
    stack: str = "prod",
) -> PolicyResource:
    """A resource of `type_` as the engine hands it to a stack rule; `deps`: property -> resources it was computed
    from (the graph's joins)."""
    urn = f"urn:pulumi:{stack}::trainstack::{type_}::{name}"
    return PolicyResource(
        type_, dict(props or {}), urn, name, OPTIONS, None, None, [], {k: list(v) for k, v in (deps or {}).items()}
    )


class Skipped(Exception):
    """The rule called `args.not_applicable(reason)`."""


class _ResourceArgs(ResourceValidationArgs):
    def not_applicable(self, reason: str | None = None) -> None:
        raise Skipped(reason)


class _StackArgs(StackValidationArgs):
    def not_applicable(self, reason: str | None = None) -> None:
        raise Skipped(reason)


@dataclass
class Verdict:
    """What one run of a rule said: its reports (message, urn) and, when it skipped, why."""

    reports: list[tuple[str, str | None]] = field(default_factory=list[tuple[str, str | None]])
    skipped: str | None = None

    @property
    def messages(self) -> list[str]:
        return [message for message, _ in self.reports]

    @property
    def urns(self) -> list[str | None]:
        return [urn for _, urn in self.reports]


def _run(policy: ResourceValidationPolicy | StackValidationPolicy, args: Any) -> Verdict:
    verdict = Verdict()

    def report(message: str, urn: str | None = None) -> None:
        verdict.reports.append((message, urn))

    with enforcement.applying([], "dev"):
        try:
            policy.validate(args, report)
        except Skipped as skip:
            verdict.skipped = str(skip.args[0] if skip.args else "")
    return verdict


def judge_stack(
    policy: StackValidationPolicy, resources: Sequence[PolicyResource], config: Mapping[str, Any] | None = None
) -> Verdict:
    return _run(policy, _StackArgs(list(resources), dict(config or {})))


def judge_resource(
    policy: ResourceValidationPolicy,
    type_: str,
    props: Mapping[str, Any],
    config: Mapping[str, Any] | None = None,
    *,
    provider: PolicyProviderResource | None = None,
    protect: bool = False,
) -> Verdict:
    """`policy` on one resource named "subject"; `provider`: the provider it was created with (default tags),
    `protect`: its `protect` option."""
    urn = f"urn:pulumi:prod::trainstack::{type_}::subject"
    opts = PolicyResourceOptions(protect, [], None, [], PolicyCustomTimeouts(0, 0, 0), [])
    return _run(policy, _ResourceArgs(type_, dict(props), urn, "subject", opts, provider, dict(config or {})))


# ------------------------------------------------------------------------------------------ the harness


def test_the_harness_tells_a_skip_from_a_pass_and_a_report() -> None:
    vpc = resource(VPC, "vpc")
    assert judge_stack(vpc_flow_logs, []).skipped  # no VPC: the rule says it does not apply
    reported = judge_stack(vpc_flow_logs, [vpc], {"requiredTrafficType": "ANY"})
    assert reported.skipped is None and reported.urns == [vpc.urn]

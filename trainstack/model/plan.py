"""The plan pipeline, once: from the program's recordings to the reports, the diff and the verdicts every renderer
reads. `plan` runs it for the command line (trainstack/cli.py) and for the tests that plan as the command line does.

    recording ─ review ─ build_report ─ example values ─┐
    (--against) baseline ─ the same ────────────────────┴─ diff_reports ─ the diff's violations ─ Plan
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from stacks.placeholders import find as find_placeholders
from stacks.schema import StackConfig
from trainstack.engine import Recording
from trainstack.model.diff import PlanDiff, apply_ignore_changes, diff_reports, diff_violations
from trainstack.model.report import Report, build_report
from trainstack.review import Violation, review

PLACEHOLDER_POLICY = "deploy-example-value"


@dataclass(frozen=True)
class Plan:
    """What the renderers read: the report, and with `--against` the diff, the baseline's report and recording."""

    report: Report
    diff: PlanDiff | None = None
    before: Report | None = None  # the baseline's own report, so every headline figure has its value before
    baseline: Recording | None = None  # what is deployed now (the baseline's recording)


def with_violations(report: Report, extra: tuple[Violation, ...]) -> Report:
    """The report with violations the pack cannot see (the diff's, the example values) added to its review."""
    if report.policy is None or not extra:
        return report
    return dataclasses.replace(
        report, policy=dataclasses.replace(report.policy, violations=report.policy.violations + extra)
    )


def placeholder_advisories(stack: StackConfig) -> tuple[Violation, ...]:
    """One advisory per example value: fine offline, refused by `pulumi up` (components/deploy_guard.py)."""
    return tuple(
        Violation(
            policy=PLACEHOLDER_POLICY,
            level="advisory",
            severity="high",
            urn="",
            type="",
            name=p.path,
            message=f"{p.render()} (`pulumi up` refuses example values)",
        )
        for p in find_placeholders(stack)
    )


def reviewed(stack: StackConfig, recording: Recording, baseline: Recording | None = None) -> Report:
    """One config's report as the command line builds it: the policy review with the stack's waivers, then the
    example values; `baseline` (what is deployed now) feeds the day-2 journeys."""
    policy = review(recording, stack.environment.value, waivers=stack.waivers)
    return with_violations(build_report(stack, recording, policy, baseline), placeholder_advisories(stack))


def plan(
    stack: StackConfig,
    recording: Recording,
    against: tuple[StackConfig, Recording, str] | None = None,
) -> Plan:
    """The plan of `stack`'s recording; with `against` (the baseline's config, its recording and the path it
    came from) the proposed recording as `pulumi up` applies it (ignore_changes kept), the diff, and the diff's
    own violations added to the review."""
    if against is None:
        return Plan(reviewed(stack, recording))
    baseline_stack, baseline, path = against
    applied, ignored = apply_ignore_changes(baseline, recording)
    report = reviewed(stack, applied, baseline)
    before = reviewed(baseline_stack, baseline)
    diff = diff_reports(before, report, path, ignored)
    return Plan(with_violations(report, diff_violations(diff)), diff, before, baseline)

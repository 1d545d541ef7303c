"""The policy review in the report: the CrossGuard pack's rules run offline by `trainstack.review`."""

from __future__ import annotations

from trainstack.engine import Recording
from trainstack.report.model import PolicyResult, Violation
from trainstack.review import review


def run_review(recording: Recording, environment: str) -> PolicyResult:
    """The pack's verdict with `environment`'s enforcement levels (policies/config/<environment>.json)."""
    result = review(recording, environment)
    return PolicyResult(
        violations=tuple(
            Violation(level=v.level, policy=v.policy, urn=v.urn, message=v.message, severity=v.severity)
            for v in result.violations
        ),
        mandatory=len(result.mandatory),
        policies=result.policies_run,
        not_applicable=len(result.not_applicable),
    )

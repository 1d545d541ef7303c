"""The report model: one plan's summary, cost, policy review and (optionally) diff, for every renderer."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from stacks.schema import ClusterConfig
from trainstack.cost import CostEstimate, estimate
from trainstack.engine import Recording
from trainstack.report.summary import Summary, summarize


@dataclass(frozen=True)
class Violation:
    level: str  # mandatory or advisory
    policy: str
    urn: str  # empty for a stack-wide violation
    message: str
    severity: str = ""  # low, medium, high, critical


@dataclass(frozen=True)
class PolicyResult:
    """The policy pack's verdict on the recorded resources (from trainstack.review)."""

    violations: tuple[Violation, ...]
    mandatory: int
    policies: int  # how many policies ran
    not_applicable: int = 0  # (policy, resource) pairs a rule skipped as not applicable

    @property
    def advisory(self) -> int:
        return sum(1 for v in self.violations if v.level != "mandatory")

    def to_dict(self) -> dict[str, Any]:
        return {
            "mandatory": self.mandatory,
            "advisory": self.advisory,
            "policies": self.policies,
            "notApplicable": self.not_applicable,
            "violations": [
                {"level": v.level, "policy": v.policy, "severity": v.severity, "urn": v.urn, "message": v.message}
                for v in self.violations
            ],
        }


@dataclass(frozen=True)
class Report:
    cluster: ClusterConfig
    recording: Recording
    summary: Summary
    cost: CostEstimate
    policy: PolicyResult | None
    elapsed_s: float

    @property
    def stack(self) -> str:
        return self.recording.stack


def build_report(
    cluster: ClusterConfig, recording: Recording, policy: PolicyResult | None = None, elapsed_s: float = 0.0
) -> Report:
    summary = summarize(recording, cluster)
    return Report(
        cluster=cluster,
        recording=recording,
        summary=summary,
        cost=estimate(summary, cluster.cost.hours_per_month),
        policy=policy,
        elapsed_s=elapsed_s,
    )

"""The report model: one plan's summary, cost, contract check and policy review, for every renderer."""

from __future__ import annotations

from dataclasses import dataclass

from stacks.schema import ClusterConfig
from trainstack.contracts import ContractViolation, check
from trainstack.cost import CostEstimate, estimate
from trainstack.engine import Recording
from trainstack.report.summary import Summary, summarize
from trainstack.review import Review


@dataclass(frozen=True)
class Report:
    cluster: ClusterConfig
    recording: Recording
    summary: Summary
    cost: CostEstimate
    policy: Review | None  # the policy pack's verdict (trainstack.review), None when not run
    contracts: tuple[ContractViolation, ...]  # what AWS or Kubernetes would refuse (trainstack.contracts)

    @property
    def stack(self) -> str:
        return self.recording.stack


def build_report(cluster: ClusterConfig, recording: Recording, policy: Review | None = None) -> Report:
    summary = summarize(recording, cluster)
    return Report(
        cluster=cluster,
        recording=recording,
        summary=summary,
        cost=estimate(summary, cluster.cost.hours_per_month),
        policy=policy,
        contracts=check(recording),
    )

"""The report model: one plan's summary, cost, contract check, journeys and policy review, for every renderer."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime

from stacks.schema import StackConfig
from trainstack.contracts import ContractViolation, check
from trainstack.engine import Recording
from trainstack.journeys import Journey, walk
from trainstack.model.capacity import GroupCapacity, capacity_plan
from trainstack.model.cost import CostEstimate, estimate, observability_items
from trainstack.model.health import HealthSummary, summarize_health
from trainstack.model.summary import Summary, summarize
from trainstack.review import Review


@dataclass(frozen=True)
class Report:
    stack: StackConfig
    recording: Recording
    summary: Summary
    cost: CostEstimate
    policy: Review | None  # the policy pack's verdict (trainstack.review), None when not run
    contracts: tuple[ContractViolation, ...]  # what AWS or Kubernetes would refuse (trainstack.contracts)
    health: HealthSummary | None = None  # monitoring, repair and alerts (trainstack.model.health)
    journeys: tuple[Journey, ...] = ()  # users' paths through the objects together (trainstack.journeys)
    capacity: tuple[GroupCapacity, ...] = ()  # per GPU group: who scales it, the worst wait, cost at min and max

    @property
    def stack_name(self) -> str:
        return self.recording.stack


def build_report(
    stack: StackConfig,
    recording: Recording,
    policy: Review | None = None,
    baseline: Recording | None = None,
    now: datetime | None = None,
) -> Report:
    """One plan's report; `baseline` (with `plan --against`) is what is deployed now, for the day-2 journeys; `now`
    places a Capacity Block's window (the capacity plan's waits count from it)."""
    summary = summarize(recording, stack)
    health = summarize_health(recording)
    cost = estimate(summary, stack.cost.hours_per_month)
    if health.scrape_interval_s:
        cost = replace(cost, items=cost.items + observability_items(summary, health.scrape_interval_s))
    return Report(
        stack=stack,
        recording=recording,
        summary=summary,
        cost=cost,
        policy=policy,
        contracts=check(recording),
        health=health,
        journeys=walk(recording, stack, baseline=baseline),
        capacity=tuple(capacity_plan(stack, now or datetime.now(UTC))),
    )

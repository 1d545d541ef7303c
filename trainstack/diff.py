"""`plan --config proposed.yaml --against stacks/Pulumi.prod.yaml`: what a config change does.

Both configs run through the same program under the same mock engine and the same stack name, so a
resource keeps its URN unless the change renames or re-parents it. Resources are matched by URN: added,
removed, or changed (with each changed input by its engine path, the old and the new value). The totals
that matter for review (GPUs, EFA fabric bandwidth, cost) are compared too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from trainstack.engine import RecordedResource, Recording
from trainstack.report.model import Report

_MISSING = "<absent>"


@dataclass(frozen=True)
class InputChange:
    path: str  # engine names, dotted; list items by index, e.g. scalingConfig.maxSize
    old: Any
    new: Any


@dataclass(frozen=True)
class ResourceChange:
    urn: str
    type: str
    changes: tuple[InputChange, ...]


@dataclass(frozen=True)
class Delta:
    """One number before and after."""

    before: float
    after: float

    @property
    def change(self) -> float:
        return self.after - self.before


@dataclass(frozen=True)
class PlanDiff:
    against: str  # where the baseline came from
    added: tuple[tuple[str, str], ...]  # (urn, type)
    removed: tuple[tuple[str, str], ...]
    changed: tuple[ResourceChange, ...]
    gpus_desired: Delta
    gpus_max: Delta
    fabric_gbps_desired: Delta
    fabric_gbps_max: Delta
    usd_per_hour_desired: Delta
    usd_per_hour_max: Delta
    usd_per_month_desired: Delta
    usd_per_month_max: Delta

    @property
    def empty(self) -> bool:
        return not (self.added or self.removed or self.changed)

    def to_dict(self) -> dict[str, Any]:
        def delta(d: Delta) -> dict[str, float]:
            return {"before": round(d.before, 4), "after": round(d.after, 4), "change": round(d.change, 4)}

        return {
            "against": self.against,
            "added": [{"urn": urn, "type": typ} for urn, typ in self.added],
            "removed": [{"urn": urn, "type": typ} for urn, typ in self.removed],
            "changed": [
                {
                    "urn": c.urn,
                    "type": c.type,
                    "changes": [{"path": i.path, "old": i.old, "new": i.new} for i in c.changes],
                }
                for c in self.changed
            ],
            "gpusDesired": delta(self.gpus_desired),
            "gpusMax": delta(self.gpus_max),
            "fabricGbpsDesired": delta(self.fabric_gbps_desired),
            "fabricGbpsMax": delta(self.fabric_gbps_max),
            "usdPerHourDesired": delta(self.usd_per_hour_desired),
            "usdPerHourMax": delta(self.usd_per_hour_max),
            "usdPerMonthDesired": delta(self.usd_per_month_desired),
            "usdPerMonthMax": delta(self.usd_per_month_max),
        }


def input_changes(old: Any, new: Any, path: str = "") -> list[InputChange]:
    """Every leaf that differs between two input trees (dicts by key; lists of equal length by index)."""
    if isinstance(old, dict) and isinstance(new, dict):
        found: list[InputChange] = []
        for key in sorted(set(old) | set(new)):
            child = f"{path}.{key}" if path else str(key)
            found += input_changes(old.get(key, _MISSING), new.get(key, _MISSING), child)
        return found
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        found = []
        for i, (a, b) in enumerate(zip(old, new, strict=True)):
            found += input_changes(a, b, f"{path}[{i}]")
        return found
    return [] if old == new else [InputChange(path, old, new)]


def resource_changes(before: RecordedResource, after: RecordedResource) -> tuple[InputChange, ...]:
    changes = input_changes(before.inputs, after.inputs)
    if before.protect != after.protect:
        changes.append(InputChange("(protect)", before.protect, after.protect))
    if before.provider_urn != after.provider_urn:
        changes.append(InputChange("(provider)", before.provider_urn, after.provider_urn))
    return tuple(changes)


def diff_recordings(
    before: Recording, after: Recording
) -> tuple[tuple[tuple[str, str], ...], tuple[tuple[str, str], ...], tuple[ResourceChange, ...]]:
    """(added, removed, changed) between two recordings, matched by URN, in registration order."""
    old = before.by_urn()
    new = after.by_urn()
    added = tuple((r.urn, r.type) for r in after.resources if r.urn not in old)
    removed = tuple((r.urn, r.type) for r in before.resources if r.urn not in new)
    changed = tuple(
        ResourceChange(r.urn, r.type, changes)
        for r in after.resources
        if r.urn in old and (changes := resource_changes(old[r.urn], r))
    )
    return added, removed, changed


def diff_reports(before: Report, after: Report, against: str) -> PlanDiff:
    added, removed, changed = diff_recordings(before.recording, after.recording)
    b, a = before.summary, after.summary
    return PlanDiff(
        against=against,
        added=added,
        removed=removed,
        changed=changed,
        gpus_desired=Delta(b.gpus_desired, a.gpus_desired),
        gpus_max=Delta(b.gpus_max, a.gpus_max),
        fabric_gbps_desired=Delta(b.fabric_gbps_desired, a.fabric_gbps_desired),
        fabric_gbps_max=Delta(b.fabric_gbps_max, a.fabric_gbps_max),
        usd_per_hour_desired=Delta(before.cost.usd_per_hour_desired, after.cost.usd_per_hour_desired),
        usd_per_hour_max=Delta(before.cost.usd_per_hour_max, after.cost.usd_per_hour_max),
        usd_per_month_desired=Delta(before.cost.usd_per_month_desired, after.cost.usd_per_month_desired),
        usd_per_month_max=Delta(before.cost.usd_per_month_max, after.cost.usd_per_month_max),
    )

"""A diff as a reviewer reads it: one entry per component, short names, one changed input per line."""

from __future__ import annotations

from dataclasses import dataclass

from trainstack.diff import PlanDiff, ResourceChange
from trainstack.engine import RecordedResource, Recording
from trainstack.report import fmt
from trainstack.report.names import grouped, kind, short, urn_name


@dataclass(frozen=True)
class Entry:
    """`+ GpuNodeGroup p5e-burst: launch template, node group`, and the changed inputs under a `~` or `!`."""

    mark: str  # + add, - delete, ~ update, ! replace
    label: str
    members: tuple[str, ...]
    details: tuple[str, ...] = ()

    @property
    def line(self) -> str:
        return f"{self.mark} {self.label}" + (f": {', '.join(self.members)}" if self.members else "")


def _detail(change: ResourceChange, cluster: str) -> list[str]:
    out: list[str] = []
    what = f"{kind(change.type)} {short(urn_name(change.urn), cluster)}"
    tags: list[str] = []
    if change.op == "replace":
        tags.append("REPLACE: " + ", ".join(change.replace_reasons))
    if change.protected and change.op == "replace":
        tags.append("PROTECTED")
    out.append(what + (f" [{'; '.join(tags)}]" if tags else ""))
    for c in change.changes:
        out.append(f"  {c.path}: {fmt.short(c.old, 40)} -> {fmt.short(c.new, 40)}")
    out += [f"  note: {note}" for note in change.notes]  # what the rollout takes (trainstack.diff.rollout_notes)
    return out


def entries(diff: PlanDiff, after: Recording, before: Recording | None, cluster: str) -> list[Entry]:
    """Added, deleted, then changed resources, grouped by their component."""
    now = after.by_urn()
    was = before.by_urn() if before is not None else {}
    out: list[Entry] = []
    for label, members in grouped([u for u, _ in diff.added], now, cluster):
        out.append(Entry("+", label, tuple(members)))
    for label, members in grouped([u for u, _ in diff.removed], was, cluster):
        out.append(Entry("-", label, tuple(members)))
    by_urn = {c.urn: c for c in diff.changed}
    for label, members in grouped(list(by_urn), now, cluster):
        changes = [c for u, c in by_urn.items() if _label_of(u, now, cluster) == label]
        mark = "!" if any(c.op == "replace" for c in changes) else "~"
        details = [line for c in changes for line in _detail(c, cluster)]
        out.append(Entry(mark, label, tuple(members), tuple(details)))
    return out


def _label_of(urn: str, resources: dict[str, RecordedResource], cluster: str) -> str:
    return grouped([urn], resources, cluster)[0][0]

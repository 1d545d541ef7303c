"""What a change does, in the stack's own terms: the lines a reviewer reads before anything else.

`pulumi preview` counts resources; a reviewer of a training cluster asks which GPU group grows, by how many
accelerators, for which team, and what it does to storage and the bill. `domain_changes` compares two reports'
summaries (node groups, teams, file systems, EKS, HyperPod, add-ons, the base name) and says it in those words:
`p5-train max 16 → 24 nodes (+64 H100 at max)`, `team inference-eval added (16 accelerators)`. Pure functions
over the model; every renderer shows the same `Header`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from trainstack.model import units
from trainstack.model.diff import PlanDiff
from trainstack.model.names import short
from trainstack.model.report import Report
from trainstack.model.summary import FileSystemSummary, NodeGroupSummary, Summary
from trainstack.model.time_to_ready import minutes
from trainstack.model.verdict import Figure, Verdict
from trainstack.report import fmt

ARROW = "→"
MAX_CHANGES = 6  # domain changes named in the header; the rest are counted (the JSON lists every one)


@dataclass(frozen=True)
class DomainChange:
    """One change in the stack's terms: a subject (a GPU group, a team, a file system), what about it changed,
    the value before and after (None for an added or removed subject) and what it means (`+64 H100 at max`)."""

    subject: str
    what: str  # "max nodes", "added", "removed", "GPU quota", "version", "capacity", "name", ...
    before: str | None = None
    after: str | None = None
    note: str = ""

    @property
    def text(self) -> str:
        moved = f"{self.before} {ARROW} {self.after}" if self.what not in ("added", "removed") else ""
        body = " ".join(part for part in (self.subject, self.what, moved) if part)
        return body + (f" ({self.note})" if self.note else "")

    def to_dict(self) -> dict[str, Any]:
        return {
            "subject": self.subject,
            "what": self.what,
            "before": self.before,
            "after": self.after,
            "note": self.note,
            "text": self.text,
        }


def _group_name(g: NodeGroupSummary, prefix: str) -> str:
    return short(g.name, prefix)


def _accelerators(count: int, model: str | None) -> str:
    return f"{units.signed(count)} {model or 'accelerators'}"


def _node_groups(before: Summary, after: Summary) -> list[DomainChange]:
    old = {_group_name(g, before.name): g for g in before.node_groups}
    new = {_group_name(g, after.name): g for g in after.node_groups}
    found: list[DomainChange] = []
    for name, g in new.items():
        was = old.get(name)
        if was is None:
            what = f"{g.desired_size} x {g.instance_type}" + (
                f", {g.gpus_desired} {g.accelerator_model}" if g.gpu else ""
            )
            found.append(DomainChange(f"{'GPU' if g.gpu else 'system'} group {name}", "added", None, None, what))
            continue
        if was.instance_type != g.instance_type:
            found.append(DomainChange(name, "type", was.instance_type, g.instance_type))
        for what, a, b, gpus in (
            ("max", was.max_size, g.max_size, g.gpus_max - was.gpus_max),
            ("desired", was.desired_size, g.desired_size, g.gpus_desired - was.gpus_desired),
            ("min", was.min_size, g.min_size, 0),
        ):
            if a != b:
                note = f"{_accelerators(gpus, g.accelerator_model)} at {what}" if gpus and g.gpu else ""
                found.append(DomainChange(name, what, str(a), f"{b} nodes", note))
        if was.capacity != g.capacity:
            found.append(DomainChange(name, "capacity", was.capacity, g.capacity))
        if was.efa_interfaces != g.efa_interfaces:
            found.append(DomainChange(name, "EFA interfaces", str(was.efa_interfaces), str(g.efa_interfaces)))
    for name, g in old.items():
        if name not in new:
            note = f"{_accelerators(-g.gpus_max, g.accelerator_model)} at max" if g.gpu else ""
            found.append(DomainChange(f"{'GPU' if g.gpu else 'system'} group {name}", "removed", None, None, note))
    return found


def _teams(before: Summary, after: Summary) -> list[DomainChange]:
    old = {t.name: t for t in before.teams}
    new = {t.name: t for t in after.teams}
    found: list[DomainChange] = []
    for name, t in new.items():
        was = old.get(name)
        if was is None:
            found.append(DomainChange(f"team {name}", "added", None, None, f"{t.accelerator_quota} accelerators"))
        elif was.accelerator_quota != t.accelerator_quota:
            found.append(
                DomainChange(f"team {name}", "quota", str(was.accelerator_quota), f"{t.accelerator_quota} accelerators")
            )
    found += [DomainChange(f"team {name}", "removed") for name in old if name not in new]
    return found


def _file_system(fs: FileSystemSummary, prefix: str) -> str:
    return short(fs.name, prefix)


def _storage(before: Summary, after: Summary) -> list[DomainChange]:
    old = {_file_system(fs, before.name): fs for fs in before.file_systems}
    new = {_file_system(fs, after.name): fs for fs in after.file_systems}
    found: list[DomainChange] = []
    for name, fs in new.items():
        was = old.get(name)
        if was is None:
            found.append(DomainChange(name, "added", None, None, f"{fs.capacity_gib:,} GiB"))
            continue
        if was.capacity_gib != fs.capacity_gib:
            found.append(DomainChange(name, "capacity", f"{was.capacity_gib:,}", f"{fs.capacity_gib:,} GiB"))
        if was.throughput_mb_s_per_tib != fs.throughput_mb_s_per_tib:
            found.append(
                DomainChange(
                    name, "throughput", str(was.throughput_mb_s_per_tib), f"{fs.throughput_mb_s_per_tib} MB/s/TiB"
                )
            )
    found += [DomainChange(name, "removed") for name in old if name not in new]
    return found


def _platform(before: Summary, after: Summary) -> list[DomainChange]:
    found: list[DomainChange] = []
    if before.name != after.name:
        found.append(DomainChange("base name", "", before.name, after.name, "physical names follow it"))
    old_versions = [version for _n, version, _s in before.eks_clusters]
    new_versions = [version for _n, version, _s in after.eks_clusters]
    if old_versions and new_versions and old_versions[0] != new_versions[0]:
        found.append(DomainChange("EKS", "version", old_versions[0], new_versions[0]))
    old_addons = {a.name: a.version for a in before.addons}
    for addon in after.addons:
        was = old_addons.get(addon.name)
        if was is not None and was != addon.version:
            found.append(DomainChange(addon.name, "", was, addon.version))
    old_hp = {(h.cluster.removeprefix(before.name + "-"), h.name): h for h in before.hyperpod}
    for h in after.hyperpod:
        key = (h.cluster.removeprefix(after.name + "-"), h.name)
        was = old_hp.get(key)
        if was is None:
            found.append(DomainChange(f"HyperPod {h.name}", "added", None, None, f"{h.count} x {h.instance_type}"))
        elif was.count != h.count:
            found.append(DomainChange(f"HyperPod {h.name}", "instances", str(was.count), str(h.count)))
    return found


def domain_changes(before: Report, after: Report) -> tuple[DomainChange, ...]:
    """What the change does to GPU groups, teams, storage and the platform, most consequential first."""
    b, a = before.summary, after.summary
    return tuple(_node_groups(b, a) + _teams(b, a) + _storage(b, a) + _platform(b, a))


def changes_line(changes: tuple[DomainChange, ...]) -> str:
    """`p5-train max 16 → 24 nodes (+64 H100 at max); team inference-eval added (16 accelerators)`."""
    if not changes:
        return "no GPU group, team, file system, version or name changes (the resources below do)"
    shown = "; ".join(c.text for c in changes[:MAX_CHANGES])
    more = len(changes) - MAX_CHANGES
    return shown + (f"; and {more} more" if more > 0 else "")


@dataclass(frozen=True)
class Header:
    """The three to five lines above everything else: the verdict and its one reason, what changed (a diff), every
    headline figure (before → after in a diff), the change's size and time (or a new stack's time to ready), and
    on a refusal the fix."""

    status: str
    verdict: str  # `Verdict: REFUSED (1 refused, 1 high): policy storage-throughput-floor on lustre-fs`
    changes: tuple[DomainChange, ...] | None  # None for a plan of a stack, not a diff
    figures: tuple[Figure, ...]
    size: str  # `21 to add, 2 to change, ...; applies in about 0-2 min`, or a new stack's time to ready
    fixes: tuple[str, ...]  # on a refusal: what to do, first fix first

    def lines(self) -> list[str]:
        """The header as plain lines (each may be long: renderers wrap them)."""
        out = [self.verdict]
        if self.changes is not None:
            out.append("Changes: " + changes_line(self.changes))
            moved = [f for f in self.figures if f.moved]
            same = [f for f in self.figures if not f.moved]
            if moved:
                out.append(" · ".join(figure_text(f) for f in moved))
            out.append(("Unchanged: " + " · ".join(figure_text(f) for f in same) + "; " if same else "") + self.size)
        else:
            out.append(" · ".join(figure_text(f) for f in self.figures))
            out.append(self.size)
        if self.fixes:
            more = len(self.fixes) - 1
            out.append("Fix: " + self.fixes[0] + (f" (and {more} more: see Next step)" if more else ""))
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "lines": self.lines(),
            "changes": [c.to_dict() for c in self.changes] if self.changes is not None else None,
            "fix": list(self.fixes),
        }


def figure_text(f: Figure) -> str:
    """`storage throughput 119% → 79% of demand`, `policy 0 → 1 mandatory, 14 → 15 advisory`."""
    if not f.moved or f.before is None:
        return f"{f.label} {f.value}"
    return f"{f.label} {moved(f.before, f.value)}" + (f" ({f.change})" if f.change else "")


_NUMBER = re.compile(r"\$?\d[\d,.]*")


def moved(before: str, after: str) -> str:
    """Two values of one figure, the words they share written once: each number beside its own where every number
    has its own word and several moved (`0 → 1 mandatory, 14 → 15 advisory`), else the common tail once
    (`119% → 79% of demand`, `$671,859 → $993,548/month`)."""
    words = _NUMBER.split(after)
    labelled = all(re.search(r"[a-z]", word) for word in words[1:-1])  # `0 mandatory, 14 advisory`, not `128 / 128`
    if _NUMBER.sub("#", before) == _NUMBER.sub("#", after) and labelled:
        pairs = list(zip(_NUMBER.findall(before), _NUMBER.findall(after), strict=True))
        if sum(a != b for a, b in pairs) > 1:
            out = words[0]
            for (a, b), word in zip(pairs, words[1:], strict=True):
                out += (b if a == b else f"{a} {ARROW} {b}") + word
            return out
    tail = fmt.shared_end(before, after)
    while tail and before[len(before) - tail] not in " /":  # the shared tail starts at a word
        tail -= 1
    if tail == 0 or tail == len(before):
        return f"{before} {ARROW} {after}"
    return f"{before[: len(before) - tail]} {ARROW} {after}"


def verdict_line(v: Verdict) -> str:
    """`Verdict: REFUSED (1 refused, 1 high): <the deciding risk>`; `Verdict: OK: no high or medium risk; 5 low`."""
    head = "Verdict: " + v.status.upper() + v.headline.removeprefix(v.status)
    if v.reason is not None:
        return f"{head}: {v.reason.title}"
    low = sum(1 for r in v.risks if r.severity == "low")
    return f"{head}: " + (f"no high or medium risk; {low} low" if low else "no risk found")


def build(report: Report, v: Verdict, diff: PlanDiff | None = None, before: Report | None = None) -> Header:
    """The header of a plan, or of a diff against `before`."""
    if diff is None:
        pole = v.time.long_pole
        size = f"new stack: ready in about {minutes(v.time.low, v.time.high)}" + (
            f" (long pole: {pole.what})" if pole else ""
        )
        return Header(v.status, verdict_line(v), None, v.figures, size, v.fixes)
    c = v.counts or {}
    size = ", ".join(f"{c.get(op, 0)} to {op}" for op in ("add", "change", "replace", "delete") if c.get(op))
    size = size or "no resource changes"
    if v.change is not None and size != "no resource changes":
        pole = v.change.long_pole
        size += f"; applies in about {minutes(v.change.low, v.change.high)}" + (f" ({pole.what})" if pole else "")
    changes = domain_changes(before, report) if before is not None else ()
    return Header(v.status, verdict_line(v), changes, v.figures, size, v.fixes)

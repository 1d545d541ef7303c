"""The verdict a reviewer reads first: one status, the headline figures, the risks ranked, the time to ready.

Status: `refused` when a real deployment would refuse the change (a contract violation, a mandatory policy
violation, the replacement of a protected resource) or a user's path through what it builds is broken (a
journey); `needs attention` when a high or medium risk stands (storage
below demand, accelerators with nothing reserved behind them, a replacement of accelerator nodes, ...); `ok`
otherwise. Low risks (estimated prices, unconfirmed pins, advisories) are listed but do not move the status.

Pure functions over a Report (and a PlanDiff for a diff); every renderer shows the same Verdict.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from stacks.catalog import CATALOG
from trainstack.model import units
from trainstack.model.diff import PROTECTED_DELETE, PROTECTED_REPLACE, PlanDiff
from trainstack.model.names import short, urn_name
from trainstack.model.pins import risk_title, unconfirmed
from trainstack.model.report import Report
from trainstack.model.time_to_ready import Estimate, change_estimate, deploy_estimate
from trainstack.tokens import HYPERPOD_CLUSTER, LAUNCH_TEMPLATE, NODE_GROUP, PLACEMENT_GROUP

OK = "ok"
ATTENTION = "needs attention"
REFUSED = "refused"
SEVERITIES = (REFUSED, "high", "medium", "low")  # most serious first
_ACCELERATOR_TYPES = {NODE_GROUP, LAUNCH_TEMPLATE, PLACEMENT_GROUP, HYPERPOD_CLUSTER}


@dataclass(frozen=True)
class Risk:
    """One thing a reviewer should know before approving, and one line of why."""

    severity: str  # one of SEVERITIES
    title: str
    why: str
    fix: str = ""  # what to do about it, where the plan knows (a refusal's next step)

    def to_dict(self) -> dict[str, str]:
        return {"severity": self.severity, "title": self.title, "why": self.why, "fix": self.fix}


@dataclass(frozen=True)
class Figure:
    """One headline figure: a label, its value, and in a diff the value before."""

    label: str
    value: str
    before: str | None = None
    change: str | None = None  # in a diff, the signed difference where the figure is a number (`+$321,689/month`)

    @property
    def moved(self) -> bool:
        return self.before is not None and self.before != self.value


@dataclass(frozen=True)
class Verdict:
    status: str
    figures: tuple[Figure, ...]
    risks: tuple[Risk, ...]
    time: Estimate  # from nothing to a ready stack
    change: Estimate | None  # applying the diff (None without one)
    counts: dict[str, int] | None  # add, change, replace, delete (None without a diff)

    @property
    def reason(self) -> Risk | None:
        """The one risk that decides the status (the most serious; None when only low risks stand)."""
        first = self.risks[0] if self.risks else None
        return first if first is not None and first.severity != "low" else None

    @property
    def fixes(self) -> tuple[str, ...]:
        """On a refusal, what to do about each refused risk: the next step is the fix, never `pulumi up`."""
        return tuple(f"{r.title}: {r.fix or r.why}" for r in self.risks if r.severity == REFUSED)

    @property
    def headline(self) -> str:
        """The verdict in a few words: `needs attention: 2 high, 1 medium risk(s)`."""
        counts = Counter(r.severity for r in self.risks)
        parts = [f"{counts[s]} {s}" for s in SEVERITIES if counts[s] and s != "low"]
        return self.status + (f" ({', '.join(parts)})" if parts and self.status != OK else "")

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "figures": [
                {"label": f.label, "value": f.value, "before": f.before, "change": f.change} for f in self.figures
            ],
            "counts": self.counts,
            "reason": self.reason.to_dict() if self.reason is not None else None,
            "fix": list(self.fixes),
        }


# ------------------------------------------------------------------------------------------- figures


def accelerator_mix(report: Report) -> str:
    """`128 x H100 (desired) / 128 (max)`, or per model when the stack mixes them."""
    desired: Counter[str] = Counter()
    maximum: Counter[str] = Counter()
    for g in report.summary.gpu_groups:
        desired[g.accelerator_model or "?"] += g.gpus_desired
        maximum[g.accelerator_model or "?"] += g.gpus_max
    for h in report.summary.hyperpod:
        row = CATALOG.get(h.instance_type.removeprefix("ml."))
        if row is not None:
            desired[row.accelerator_model] += h.count * row.accelerator_count
            maximum[row.accelerator_model] += h.count * row.accelerator_count
    if not maximum:
        return "none"
    return " + ".join(f"{desired[m]:,} / {maximum[m]:,} {m}" for m in sorted(maximum))


def storage_coverage(report: Report) -> str:
    covered = [fs.coverage for fs in report.summary.file_systems if fs.coverage is not None]
    if not report.summary.file_systems:
        return "no file system"
    if not covered:
        return "no accelerators to serve"
    return f"{units.percent(min(covered))} of demand"


def figures(report: Report) -> tuple[Figure, ...]:
    s, cost = report.summary, report.cost
    found = [
        Figure("accelerators desired / max", accelerator_mix(report)),
        Figure("EFA fabric at desired", units.gbps(s.fabric_gbps_desired) if s.fabric_gbps_desired else "no EFA"),
        Figure("storage throughput", storage_coverage(report)),
        Figure("cost at desired", f"{units.usd(cost.usd_per_month_desired)}/month"),
        Figure("cost at max", f"{units.usd(cost.usd_per_month_max)}/month"),
    ]
    if report.policy is not None:
        p = report.policy
        found.append(Figure("policy", f"{len(p.mandatory)} mandatory, {len(p.advisory)} advisory"))
    found.append(Figure("contracts", f"{len(report.contracts)} refused"))
    if report.journeys:
        holding = sum(1 for j in report.journeys if j.holds)
        total = len(report.journeys)
        # "all 31 hold" is two characters shorter than "31 of 31 hold": prod's verdict keeps to three lines.
        found.append(Figure("journeys", f"all {total} hold" if holding == total else f"{holding} of {total} hold"))
    return tuple(found)


def diff_figures(before: Report | None, after: Report, diff: PlanDiff) -> tuple[Figure, ...]:
    """Every headline figure before and after: from the baseline's own report when there is one (the CLI builds it),
    else from the diff's deltas for the figures they carry. Numbers that moved carry their signed change; the
    fabric is in one unit on both sides."""
    d = diff
    now = {f.label: f.value for f in figures(after)}
    was = {f.label: f.value for f in figures(before)} if before is not None else {}
    # What the deltas know, in the units a reviewer compares (both sides of the fabric in one unit).
    fabric_after, fabric_before = units.gbps_pair(d.fabric_gbps_desired.after, d.fabric_gbps_desired.before)
    if d.fabric_gbps_desired.after or d.fabric_gbps_desired.before:
        now["EFA fabric at desired"], was["EFA fabric at desired"] = fabric_after, fabric_before
    if before is None:
        accelerators = "accelerators desired / max"
        now[accelerators] = f"{int(d.accelerators_desired.after):,} / {int(d.accelerators_max.after):,}"
        was[accelerators] = f"{int(d.accelerators_desired.before):,} / {int(d.accelerators_max.before):,}"
        was["cost at desired"] = f"{units.usd(d.usd_per_month_desired.before)}/month"
        was["cost at max"] = f"{units.usd(d.usd_per_month_max.before)}/month"
    changes = {
        "accelerators desired / max": _count_change(d.accelerators_desired.change, d.accelerators_max.change),
        "EFA fabric at desired": units.gbps_row(d.fabric_gbps_desired.change, signed_last=True)[0]
        if d.fabric_gbps_desired.change
        else None,
        "cost at desired": _usd_change(d.usd_per_month_desired.change),
        "cost at max": _usd_change(d.usd_per_month_max.change),
    }
    return tuple(
        Figure(label, value, was.get(label), changes.get(label) if was.get(label, value) != value else None)
        for label, value in now.items()
    )


def _usd_change(value: float) -> str | None:
    return f"{units.signed_usd(value)}/month" if round(value) else None


def _count_change(desired: float, maximum: float) -> str | None:
    if not desired and not maximum:
        return None
    return f"{units.signed(desired)} / {units.signed(maximum)}"


# --------------------------------------------------------------------------------------------- risks


def _risks(report: Report, diff: PlanDiff | None) -> list[Risk]:
    """Every risk of the plan (or the diff), most severe first; detection order within a severity."""
    cluster = report.summary.name
    found = [
        *_refusals(report, diff),
        *_storage_risks(report),
        *_replaced_accelerators(diff, cluster),
        *_capacity_risks(report),
        *_budget_and_pin_risks(report),
        *_estimated_price_risks(report),
        *_accepted_risks(report),
    ]
    rank = {severity: i for i, severity in enumerate(SEVERITIES)}
    return sorted(found, key=lambda r: rank[r.severity])  # stable: detection order within a severity


def _refusals(report: Report, diff: PlanDiff | None) -> list[Risk]:
    """What refuses the plan: contracts, broken journeys, mandatory policies, protected resources the diff
    deletes or replaces."""
    cluster = report.summary.name
    found: list[Risk] = []
    for c in report.contracts:
        found.append(Risk(REFUSED, f"contract: {short(c.name, cluster)} {c.path or '(resource)'}", c.rule))
    for j in report.journeys:
        if (step := j.broken_step) is not None:
            found.append(Risk(REFUSED, f"journey {j.kind}: {j.subject}", f"{step.name}: {step.detail}"))
    # The diff's own refusals below say more than their policy entries (PROTECTED_*): one risk each, not two.
    told = {urn for urn in diff.protected_removals} | {c.urn for c in diff.protected_replacements} if diff else set()
    if report.policy is not None:
        for v in report.policy.mandatory:
            if v.policy in (PROTECTED_DELETE, PROTECTED_REPLACE) and v.urn in told:
                continue
            where = short(urn_name(v.urn), cluster) if v.urn else "stack"
            found.append(Risk(REFUSED, f"policy {v.policy} on {where}", v.message))
    if diff is not None:
        for urn in diff.protected_removals:
            found.append(
                Risk(
                    REFUSED,
                    f"deletes protected {short(urn_name(urn), cluster)}",
                    "`pulumi up` refuses to delete a protected resource; removing protect first destroys the data",
                    "keep it in the stack, or, if it moved to a new logical name, add an alias naming the old URN "
                    "(docs/day2.md)",
                )
            )
        for change in diff.protected_replacements:
            reasons = ", ".join(change.replace_reasons)
            found.append(
                Risk(
                    REFUSED,
                    f"replaces protected {short(urn_name(change.urn), cluster)}",
                    f"{reasons} cannot change in place; `pulumi up` refuses to delete a protected resource, and "
                    "forcing it destroys the data",
                    f"undo the change that moves its {reasons}; to move it on purpose, follow docs/day2.md",
                )
            )
    return found


def _storage_risks(report: Report) -> list[Risk]:
    """File systems that feed the accelerators less than they read."""
    s, cluster = report.summary, report.summary.name
    found: list[Risk] = []
    for fs in s.file_systems:
        if fs.coverage is not None and fs.coverage < 1:
            found.append(
                Risk(
                    "high",
                    f"storage covers {units.percent(fs.coverage)} of demand",
                    f"{short(fs.name, cluster)} gives {units.mb_s(fs.throughput_mb_s)} for {s.accelerators_max} "
                    f"accelerators x {s.per_gpu_read_mb_s:g} MB/s = {units.mb_s(fs.demand_mb_s)}: data loading "
                    "stalls the GPUs",
                )
            )
    return found


def _replaced_accelerators(diff: PlanDiff | None, cluster: str) -> list[Risk]:
    """Accelerator resources the diff replaces: their nodes are recreated and running jobs stop."""
    found: list[Risk] = []
    if diff is not None:
        for change in diff.replaced:
            if change.type in _ACCELERATOR_TYPES and not change.protected:
                found.append(
                    Risk(
                        "high",
                        f"replaces {short(urn_name(change.urn), cluster)}",
                        f"{', '.join(change.replace_reasons)} forces a new resource: its nodes are recreated and "
                        "running jobs stop",
                    )
                )
    return found


def _capacity_risks(report: Report) -> list[Risk]:
    """GPU groups without held capacity, reservations billed for idle instances, EFA below the type's fabric."""
    s, cluster = report.summary, report.summary.name
    found: list[Risk] = []
    for g in s.gpu_groups:
        name = short(g.name, cluster)
        if g.capacity in ("on-demand", "spot"):
            why = (
                "Spot capacity can be reclaimed with two minutes' notice and is often short for GPU types"
                if g.capacity == "spot"
                else "On-Demand launches of large GPU types fail with InsufficientInstanceCapacity when the AZ is short"
            )
            found.append(
                Risk(
                    # Spot is a deliberate trade (cheap, interruptible); On-Demand is the one that surprises.
                    "medium" if g.capacity == "on-demand" and g.max_size else "low",
                    f"{name}: {g.max_size} x {g.instance_type} with no reservation or Capacity Block",
                    why,
                )
            )
        elif g.desired_size < g.max_size:
            found.append(
                Risk(
                    "medium",
                    f"{name}: desired {g.desired_size} below max {g.max_size} on {g.capacity}",
                    "a reservation bills every reserved instance whether a node runs on it or not",
                )
            )
        if g.efa_max and 0 < g.efa_interfaces < g.efa_max:
            found.append(
                Risk(
                    "medium",
                    f"{name}: {g.efa_interfaces} of {g.efa_max} EFA interfaces",
                    f"the fabric runs at {g.efa_interfaces / g.efa_max:.0%} of {g.instance_type}'s bandwidth",
                )
            )
    return found


def _budget_and_pin_risks(report: Report) -> list[Risk]:
    """Accelerators over the GPU budget, and add-on builds no AWS source confirms for the EKS version."""
    s = report.summary
    found: list[Risk] = []
    if s.accelerators_max > s.gpu_budget:
        found.append(
            Risk("high", f"{s.accelerators_max} accelerators at max over the budget of {s.gpu_budget}", "cost.max_gpus")
        )
    for _name, version, _support in s.eks_clusters:
        pins = {a.name: a.version for a in s.addons if a.kind == "eks-addon"}
        for addon, build, why in unconfirmed(version, pins):
            found.append(Risk("low", risk_title(addon, build, version), why))
    return found


def _estimated_price_risks(report: Report) -> list[Risk]:
    """Cost rows priced without a list price read."""
    found: list[Risk] = []
    estimated = [i.name for i in report.cost.items if i.estimated]
    if estimated:
        found.append(
            Risk(
                "low",
                f"estimated price{'s' if len(estimated) > 1 else ''}: {', '.join(estimated)}",
                "no list price was read for the type, or the catalog doubts it",
            )
        )
    return found


def _accepted_risks(report: Report) -> list[Risk]:
    """Advisory policy findings, and every waiver: risks someone accepted."""
    cluster = report.summary.name
    found: list[Risk] = []
    if report.policy is not None:
        advisories: dict[str, list[str]] = {}
        for v in report.policy.advisory:
            advisories.setdefault(v.policy, []).append(v.message)
        for policy, messages in advisories.items():
            more = f" (+{len(messages) - 1} more)" if len(messages) > 1 else ""
            found.append(Risk("low", f"advisory {policy}: {len(messages)} finding(s)", messages[0] + more))
        # Every waiver is a risk someone accepted: a waived floor (dev, staging) weighs more than another rule.
        for w in report.policy.waived:
            what = "floor" if w.floor else "rule"
            expires = f" until {w.expires.isoformat()}" if w.expires else ""
            found.append(
                Risk(
                    "medium" if w.floor else "low",
                    f"waived {what} {w.violation.policy} on {short(w.violation.name, cluster)}",
                    f"owner {w.owner}{expires}: {w.reason}",
                )
            )
    return found


def assess(report: Report, diff: PlanDiff | None = None, before: Report | None = None) -> Verdict:
    """The verdict of a plan, or of a diff when `diff` is given."""
    risks = tuple(_risks(report, diff))
    if any(r.severity == REFUSED for r in risks):
        status = REFUSED
    elif any(r.severity in ("high", "medium") for r in risks):
        status = ATTENTION
    else:
        status = OK
    counts = None
    shown = figures(report)
    if diff is not None:
        counts = {
            "add": len(diff.added),
            "change": len(diff.changed) - len(diff.replaced),
            "replace": len(diff.replaced),
            "delete": len(diff.removed),
        }
        shown = diff_figures(before, report, diff)
    return Verdict(
        status=status,
        figures=shown,
        risks=risks,
        time=deploy_estimate(report.recording),
        change=change_estimate(report.recording, diff) if diff is not None else None,
        counts=counts,
    )

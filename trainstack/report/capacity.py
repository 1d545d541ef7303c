"""The plan's "Capacity" section: per GPU group, who scales it, from and to, what a scale-up needs, the worst-case
wait of a job of the group's whole size, and the cost at min and at max (trainstack/model/capacity.py)."""

from __future__ import annotations

from datetime import timedelta

from trainstack.model import units
from trainstack.model.capacity import GroupCapacity
from trainstack.model.report import Report
from trainstack.report import fmt


def duration(value: timedelta) -> str:
    """`1h07m`, `15m10s`, `3d04h`: the two largest units."""
    seconds = int(value.total_seconds())
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}d{hours:02d}h"
    if hours:
        return f"{hours}h{minutes:02d}m"
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


def group_line(g: GroupCapacity) -> str:
    sizes = f"{g.min_size} to {g.max_size}" if g.min_size != g.max_size else f"{g.max_size}"
    job = f"a {g.max_size}-node job"
    if g.wait is None:
        wait = f"{job} waits {'never: the block has ended' if 'ended' in g.window else 'unknown: no window recorded'}"
    elif g.wait == timedelta(0):
        wait = f"{job} starts without waiting"  # the nodes exist (or are held for it)
    else:
        wait = f"{job} waits up to {duration(g.wait)}"
    line = f"{g.name}: {g.scaler}, {sizes} node(s); a scale-up needs {g.scale_up_needs}; {wait} for capacity"
    if g.gives_up_after is not None:
        line += f", deactivated after {duration(g.gives_up_after)} without it"
    if g.window:
        line += f"; window {g.window}"
    return line + f"; {units.usd(g.usd_per_hour_min)}/h at min, {units.usd(g.usd_per_hour_max)}/h at max"


def capacity_lines(report: Report, style: fmt.Style, width: int) -> list[str]:
    groups = report.capacity
    if not groups:
        return []
    out = [style.heading("Capacity")]
    out += ["  " + line for g in groups for line in fmt.fit(group_line(g), width - 2, "    ")]
    out.append("")
    return out


def markdown_lines(report: Report) -> list[str]:
    """The Capacity section of the pull-request comment: one bullet per GPU group."""
    if not report.capacity:
        return []
    return ["### Capacity", "", *(f"- {group_line(g)}" for g in report.capacity), ""]

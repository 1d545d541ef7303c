"""`--format markdown`: the plan as a pull-request comment, with a Mermaid diagram of the architecture."""

from __future__ import annotations

from trainstack.diff import PROVIDER_DIFF_NOTE, PlanDiff
from trainstack.report import fmt, verdict
from trainstack.report.changes import entries
from trainstack.report.mermaid import flowchart
from trainstack.report.model import Report
from trainstack.report.text import (
    COMPUTE_HEADERS,
    COST_HEADERS,
    change_line,
    compute_rows,
    cost_rows,
    hyperpod_lines,
    next_steps,
    ready_line,
    system_lines,
)
from trainstack.report.time_to_ready import minutes


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


MAX_ROWS = 40  # rows of one table in the comment; the rest are counted (the JSON has them all)


def md_table(headers: tuple[str, ...] | list[str], rows: list[list[str]], limit: int = MAX_ROWS) -> list[str]:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows[:limit]]
    if len(rows) > limit:
        more = [f"… {len(rows) - limit} more rows: see `--format json`"] + [""] * (len(headers) - 1)
        lines.append("| " + " | ".join(more) + " |")
    return lines


def diff_note() -> str:
    return PROVIDER_DIFF_NOTE[0].upper() + PROVIDER_DIFF_NOTE[1:] + "."


def _diff(report: Report, diff: PlanDiff, before: Report | None) -> list[str]:
    out = [f"### Changes against `{diff.against}`", ""]
    for change in diff.protected_replacements:
        out.append(
            f"> [!CAUTION]\n> **Replaces protected `{change.urn.rsplit('::', 1)[-1]}`** "
            f"({', '.join(change.replace_reasons)}): `pulumi up` refuses to delete a protected resource, and "
            "forcing it destroys the data."
        )
        out.append("")
    for change in diff.ignored:
        paths = ", ".join(f"`{c.path}` stays `{c.old}` (config: `{c.new}`)" for c in change.changes)
        out += [f"- `{change.urn.rsplit('::', 1)[-1]}` ignoreChanges: {paths}", ""]
    d = diff
    fabric = fmt.gbps_row(
        d.fabric_gbps_desired.before, d.fabric_gbps_desired.after, d.fabric_gbps_desired.change, signed_last=True
    )
    rows = [
        [
            "accelerators at desired",
            fmt.number(d.accelerators_desired.before),
            fmt.number(d.accelerators_desired.after),
            fmt.signed(d.accelerators_desired.change),
        ],
        [
            "accelerators at max",
            fmt.number(d.accelerators_max.before),
            fmt.number(d.accelerators_max.after),
            fmt.signed(d.accelerators_max.change),
        ],
        ["EFA fabric at desired", *fabric],
        [
            "$/h at desired",
            fmt.usd(d.usd_per_hour_desired.before),
            fmt.usd(d.usd_per_hour_desired.after),
            fmt.signed_usd(d.usd_per_hour_desired.change),
        ],
        [
            "$/month at desired",
            fmt.usd(d.usd_per_month_desired.before),
            fmt.usd(d.usd_per_month_desired.after),
            fmt.signed_usd(d.usd_per_month_desired.change),
        ],
    ]
    out += md_table(["", "before", "after", "change"], rows)
    out.append("")
    found = entries(diff, report.recording, before.recording if before is not None else None, report.summary.name)
    if found:
        out.append("```diff")
        for entry in found[:MAX_ROWS]:
            out.append(entry.line)
            out += [f"{entry.mark}     {line}" for line in entry.details[:MAX_ROWS]]
        if len(found) > MAX_ROWS:
            out.append(f"  … {len(found) - MAX_ROWS} more components changed: see `--format json`")
        out.append("```")
        out.append("")
    for change in diff.changed:
        out += [f"> [!IMPORTANT]\n> **{change.urn.rsplit('::', 1)[-1]}**: {note}\n" for note in change.notes]
    out.append(f"_{diff_note()}_")
    out.append("")
    return out


def _verdict(v: verdict.Verdict) -> list[str]:
    icon = {verdict.OK: "✅", verdict.ATTENTION: "⚠️", verdict.REFUSED: "⛔"}[v.status]
    out = [f"**{icon} Verdict: {v.headline}**", ""]
    if v.counts is not None:
        out += [f"**{change_line(v)}.**", ""]
    rows = [[f.label, f.value if f.before is None else f"{f.before} → {f.value}"] for f in v.figures]
    rows.append(["time to ready", ready_line(v).removeprefix("ready in ")])
    out += md_table(["", ""], rows)
    out.append("")
    return out


def _risks(v: verdict.Verdict) -> list[str]:
    out = ["### Risks", ""]
    if not v.risks:
        return [*out, "None found.", ""]
    out += [f"{i}. **{r.severity}**: {r.title}. {r.why}" for i, r in enumerate(v.risks[:MAX_ROWS], 1)]
    if len(v.risks) > MAX_ROWS:
        out.append(f"{MAX_ROWS + 1}. … {len(v.risks) - MAX_ROWS} more (`--format json` lists them all)")
    return [*out, ""]


def _time(v: verdict.Verdict) -> list[str]:
    out = []
    for title, estimate in (("Time to ready", v.time), ("Time to apply the change", v.change)):
        if estimate is None:
            continue
        out += [f"### {title}: about {minutes(estimate.low, estimate.high)}", ""]
        pole = estimate.long_pole
        out.append(
            "Critical path of the recorded dependency graph"
            + (f"; the long pole is the {pole.what} (`{pole.name}`)." if pole else ".")
        )
        out.append("")
        out += md_table(
            ["step", "typical", "source"],
            [
                [f"{s.what} `{s.name}`", minutes(s.time.low, s.time.high), s.time.source]
                for s in estimate.path
                if s.time.high >= 1
            ],
        )
        out += [""] + [f"_{note}._" for note in estimate.notes] + ([""] if estimate.notes else [])
    return out


def _resources(report: Report, budget: int) -> list[str]:
    """The resource list, cut to fit `budget` characters (GitHub refuses comments over 65,536)."""
    s = report.summary
    head = [f"<details><summary>Resources ({s.resource_count})</summary>", ""]
    rows = md_table(
        ["type", "name", "protect"],
        [[f"`{r.type}`", f"`{r.name}`", "yes" if r.protect else ""] for r in report.recording.resources],
        limit=len(report.recording.resources),
    )
    tail = ["", "</details>", ""]
    kept: list[str] = []
    used = sum(len(line) + 1 for line in head + tail) + 120
    for i, line in enumerate(rows):
        if used + len(line) + 1 > budget:
            kept.append(f"| … | {len(rows) - i} more: see `--format json` | |")
            break
        kept.append(line)
        used += len(line) + 1
    return head + kept + tail


GITHUB_COMMENT_LIMIT = 65_536  # characters GitHub accepts in an issue or pull-request comment body


def render(report: Report, diff: PlanDiff | None = None, before: Report | None = None) -> str:
    """The pull-request comment: verdict, risks and time to ready first, then the tables, always under
    GitHub's comment limit (the resource list gives way first)."""
    s, cost = report.summary, report.cost
    v = verdict.assess(report, diff, before)
    head = (
        f"## trainstack diff: `{s.stack}` against `{diff.against}` ({s.region})"
        if diff is not None
        else f"## trainstack plan: `{s.stack}` ({s.region}, {s.environment})"
    )
    out = [head, "", *_verdict(v), *_risks(v), *_time(v)]
    if diff is not None:
        out += _diff(report, diff, before)

    out += ["### Compute", ""]
    if s.gpu_groups:
        out += md_table(COMPUTE_HEADERS, compute_rows(report))
        out.append("")
    out += [f"- {line}" for line in system_lines(report) + hyperpod_lines(report)]
    out.append(
        f"- accelerators **{s.accelerators_desired}** at desired, **{s.accelerators_max}** at max "
        f"(budget {s.gpu_budget})"
        + (f"; EFA fabric {fmt.gbps(s.fabric_gbps_desired)} at desired" if s.fabric_gbps_desired else "")
    )
    out.append("")

    out += ["### Storage", ""]
    for fs in s.file_systems:
        tier = f", {fs.throughput_mb_s_per_tib} MB/s/TiB" if fs.throughput_mb_s_per_tib else ""
        line = (
            f"- FSx for Lustre `{fs.name}`: {fs.deployment_type}, {fs.capacity_gib:,} GiB{tier}"
            f"{', EFA' if fs.efa_enabled else ''}: **{fmt.mb_s(fs.throughput_mb_s)}** aggregate"
        )
        if fs.coverage is not None:
            line += (
                f"; demand {s.accelerators_max} accelerators x {s.per_gpu_read_mb_s:g} MB/s"
                f" = {fmt.mb_s(fs.demand_mb_s)} "
                f"({fmt.percent(fs.coverage)} covered{'' if fs.coverage >= 1 else ', **under demand**'})"
            )
        out.append(line)
    out.append(f"- S3 buckets: {s.bucket_count}")
    out.append("")

    out += ["### Cost (estimate)", ""]
    if cost.items:
        out += md_table(COST_HEADERS, cost_rows(report))
        out.append("")
        out.append(
            f"**Total {fmt.usd(cost.usd_per_hour_desired)}/h at desired, {fmt.usd(cost.usd_per_hour_max)}/h at max; "
            f"{fmt.usd(cost.usd_per_month_desired)} / {fmt.usd(cost.usd_per_month_max)} per month** "
            f"({cost.hours_per_month:g} h). GPU share {fmt.percent(cost.gpu_share_desired)} at desired, "
            f"{fmt.percent(cost.gpu_share_max)} at max."
        )
    else:
        out.append("Nothing recorded that the cost model prices.")
    out.append("")
    out += [f"> {note}  " for note in cost.notes]
    out.append("")

    if report.contracts:
        out += ["### Contracts: refused", ""]
        out += md_table(
            ["resource", "input", "value", "rule", "source"],
            [[f"`{c.name}`", f"`{c.path}`", f"`{c.value}`", c.rule, c.source] for c in report.contracts],
        )
        out.append("")

    if report.policy is not None:
        p = report.policy
        out += ["### Policy review", ""]
        out.append(
            f"{len(p.mandatory)} mandatory, {len(p.advisory)} advisory violation(s) from {p.policies_run} policies."
        )
        out.append("")
        if p.violations:
            out += md_table(
                ["level", "policy", "resource", "message"],
                [[v.level, v.policy, f"`{v.urn.rsplit('::', 1)[-1]}`", v.message] for v in p.violations],
            )
            out.append("")

    out += [
        "### Architecture",
        "",
        "```mermaid",
        flowchart(report.recording, diff, before.recording if before else None),
    ]
    out += ["```", ""]
    tail = ["### Next step", "", "```sh", *[line.strip() for line in next_steps(s.stack, s.environment)[1:]], "```", ""]
    budget = GITHUB_COMMENT_LIMIT - sum(len(line) + 1 for line in out + tail)
    out += _resources(report, budget)
    return "\n".join(out + tail)

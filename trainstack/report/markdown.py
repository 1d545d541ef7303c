"""`--format markdown`: the plan as a pull-request comment, with a Mermaid diagram of the architecture."""

from __future__ import annotations

from trainstack.diff import PROVIDER_DIFF_NOTE, PlanDiff
from trainstack.report import fmt
from trainstack.report.mermaid import flowchart
from trainstack.report.model import Report
from trainstack.report.text import COMPUTE_HEADERS, COST_HEADERS, compute_rows, cost_rows, hyperpod_lines, next_steps


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def md_table(headers: tuple[str, ...] | list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return lines


def diff_note() -> str:
    return PROVIDER_DIFF_NOTE[0].upper() + PROVIDER_DIFF_NOTE[1:] + "."


def _diff(diff: PlanDiff) -> list[str]:
    out = [f"### Diff against `{diff.against}`", ""]
    updates = len(diff.changed) - len(diff.replaced)
    out.append(
        f"**{len(diff.added)} to add, {updates} to change, {len(diff.replaced)} to replace, "
        f"{len(diff.removed)} to remove.**"
    )
    out.append("")
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
    rows = [
        [
            "Accelerators at desired",
            f"{d.accelerators_desired.before:g}",
            f"{d.accelerators_desired.after:g}",
            fmt.signed(d.accelerators_desired.change),
        ],
        [
            "Accelerators at max",
            f"{d.accelerators_max.before:g}",
            f"{d.accelerators_max.after:g}",
            fmt.signed(d.accelerators_max.change),
        ],
        [
            "EFA fabric at desired",
            fmt.gbps(d.fabric_gbps_desired.before),
            fmt.gbps(d.fabric_gbps_desired.after),
            fmt.signed(d.fabric_gbps_desired.change, " Gbit/s"),
        ],
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
        [
            "$/h at max",
            fmt.usd(d.usd_per_hour_max.before),
            fmt.usd(d.usd_per_hour_max.after),
            fmt.signed_usd(d.usd_per_hour_max.change),
        ],
    ]
    out += md_table(["", "before", "after", "change"], rows)
    out.append("")
    if diff.added or diff.removed or diff.changed:
        out.append("```diff")
        out += [f"+ {urn}" for urn, _ in diff.added]
        out += [f"- {urn}" for urn, _ in diff.removed]
        for change in diff.changed:
            mark = "!" if change.op == "replace" else "~"
            tag = " (REPLACE" + (", PROTECTED" if change.protected else "") + ")" if change.op == "replace" else ""
            out.append(f"{mark} {change.urn}{tag}")
            out += [f"{mark}     {c.path}: {fmt.short(c.old)} -> {fmt.short(c.new)}" for c in change.changes]
        out.append("```")
        out.append("")
    out.append(f"_{diff_note()}_")
    out.append("")
    return out


def render(report: Report, diff: PlanDiff | None = None) -> str:
    s, cost = report.summary, report.cost
    out = [
        f"## trainstack plan: `{s.stack}` ({s.region}, {s.environment})",
        "",
        f"{s.resource_count} resources ({s.custom_count} cloud, {s.component_count} components). {s.mode}.",
        "",
    ]
    if report.contracts:
        out += [f"**Contracts: {len(report.contracts)} input(s) a real deployment would refuse.**", ""]
    if report.policy is not None:
        p = report.policy
        verdict = "passes" if p.passed else "**blocked**"
        out.append(f"Policy review {verdict}: {len(p.mandatory)} mandatory, {len(p.advisory)} advisory violation(s).")
        out.append("")

    out += ["### Compute", ""]
    if s.node_groups:
        out += md_table(COMPUTE_HEADERS, compute_rows(report))
        out.append("")
        out.append(
            f"Accelerators: **{s.gpus_desired}** at desired, **{s.gpus_max}** at max"
            + (f" + {s.hyperpod_gpus} in SageMaker HyperPod" if s.hyperpod_gpus else "")
            + f" (budget {s.gpu_budget}). "
            f"EFA fabric {fmt.gbps(s.fabric_gbps_desired)} at desired, {fmt.gbps(s.fabric_gbps_max)} at max."
        )
    else:
        out.append("No node groups recorded.")
    out.append("")
    hyperpod = hyperpod_lines(report)
    if hyperpod:
        out += [f"- {line}" for line in hyperpod] + [""]

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

    if report.policy is not None and report.policy.violations:
        out += ["### Policy review", ""]
        out += md_table(
            ["level", "policy", "resource", "message"],
            [[v.level, v.policy, f"`{v.urn.rsplit('::', 1)[-1]}`", v.message] for v in report.policy.violations],
        )
        out.append("")

    if diff is not None:
        out += _diff(diff)

    out += ["### Architecture", "", "```mermaid", flowchart(report.recording), "```", ""]

    out += [f"<details><summary>Resources ({s.resource_count})</summary>", ""]
    out += md_table(
        ["type", "name", "protect"],
        [[f"`{r.type}`", f"`{r.name}`", "yes" if r.protect else ""] for r in report.recording.resources],
    )
    out += ["", "</details>", "", "### Next step", ""]
    out += ["```sh", *[line.strip() for line in next_steps(s.stack, s.environment)[1:]], "```", ""]
    return "\n".join(out)

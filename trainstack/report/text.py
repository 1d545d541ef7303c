"""The text report: what `make plan` prints. ANSI colour only when asked (a terminal, no NO_COLOR)."""

from __future__ import annotations

import shlex
from collections import defaultdict
from collections.abc import Callable, Sequence

from stacks.catalog import CATALOG
from trainstack.engine import RecordedResource, Recording
from trainstack.journeys import Journey
from trainstack.model import units, verdict
from trainstack.model.bringup import summarize_bringup
from trainstack.model.diff import PROVIDER_DIFF_NOTE, PlanDiff
from trainstack.model.graph import Index
from trainstack.model.report import Report
from trainstack.model.summary import NodeGroupSummary
from trainstack.model.time_to_ready import minutes
from trainstack.report import fmt, header
from trainstack.report.account import lines as account_lines
from trainstack.report.bringup import lines as bringup_lines
from trainstack.report.capacity import capacity_lines
from trainstack.report.changes import entries
from trainstack.report.findings import journey_kinds, rule_groups, where
from trainstack.report.fmt import Style as Style  # the renderers share it (preflight too)
from trainstack.report.health import lines as health_lines


def next_steps(stack: str, environment: str) -> list[str]:
    """The commands for a real deployment, shell-quoted: they are meant to be copied into a shell."""
    quoted, config = shlex.quote(stack), shlex.quote(f"policies/config/{environment}.json")
    # `up` names the pack and its config too: without them nothing reviews the update itself, and without the
    # config every rule the pack does not hold mandatory in code is only advisory (docs/policies.md).
    pack = f"--policy-pack policies --policy-pack-config {config}"
    return [
        "With AWS credentials and the Pulumi CLI:",
        f"  trainstack preflight --stack {quoted}",
        f"  pulumi preview --stack {quoted} {pack}",
        f"  pulumi up --stack {quoted} {pack}",
    ]


def efa_cell(group: NodeGroupSummary) -> str:
    if not group.efa_max:
        return "-"
    return f"{group.efa_interfaces}/{group.efa_max}"


def _fabric(g: NodeGroupSummary) -> str:
    if not g.fabric_gbps_per_node:
        return "-"
    return f"{efa_cell(g)} EFA, {units.gbps(g.fabric_gbps_per_node)}/node"


def compute_rows(report: Report) -> list[list[str]]:
    """One row per GPU group: what a reviewer checks (the system group is one line below the table)."""
    return [
        [
            g.name.removeprefix(report.summary.name + "-"),
            g.instance_type or "?",
            f"{g.desired_size}/{g.max_size}",
            f"{g.gpus_desired}/{g.gpus_max} {g.accelerator_model}",
            _fabric(g),
            g.capacity,
            ",".join(g.availability_zones) or "-",
        ]
        for g in report.summary.gpu_groups
    ]


COMPUTE_HEADERS = ("group", "type", "nodes des/max", "accelerators des/max", "fabric", "capacity", "AZ")


def system_lines(report: Report) -> list[str]:
    """The CPU (system) groups, one line each."""
    return [
        f"system {g.name.removeprefix(report.summary.name + '-')}: {g.desired_size} x {g.instance_type} "
        f"(min {g.min_size}, max {g.max_size}) in {', '.join(g.availability_zones) or '-'}"
        for g in report.summary.node_groups
        if not g.gpu
    ]


def group_block(report: Report, g: NodeGroupSummary) -> list[str]:
    """One GPU group as a few short lines, for a narrow terminal."""
    name = g.name.removeprefix(report.summary.name + "-")
    placement = f"placement group {g.placement_group}" if g.placement_group else "no placement group"
    if not g.placement_group and g.capacity.startswith(("reservation", "capacity-block")):
        placement += " (the reservation decides)"
    return [
        f"{name}: {g.desired_size} x {g.instance_type} (min {g.min_size}, max {g.max_size}) in "
        f"{', '.join(g.availability_zones) or '-'}",
        f"  accelerators {g.gpus_desired}/{g.gpus_max} {g.accelerator_model} ({g.gpus_per_node} x "
        f"{g.gpu_memory_gib_per_node // max(g.gpus_per_node, 1)} GiB per node)"
        + (f"; EFA {efa_cell(g)}, {units.gbps(g.fabric_gbps_per_node)}/node" if g.fabric_gbps_per_node else ""),
        f"  capacity {g.capacity}; {placement}; {g.subnets} subnet(s); taint {', '.join(g.taints) or 'none'}",
    ]


def cost_rows(report: Report) -> list[list[str]]:
    return [
        [
            i.name.replace(report.summary.name + "-", "").replace(f" {report.summary.name} ", " "),
            f"{fmt.number(i.quantity_desired)} / {fmt.number(i.quantity_max)} {i.unit}",
            units.unit_usd(i.unit_usd),
            units.usd(i.usd_per_hour_desired),
            units.usd(i.usd_per_hour_max),
            i.date_label,
        ]
        for i in sorted(report.cost.items, key=lambda i: (-i.usd_per_hour_max, i.name))
    ]


COST_HEADERS = ("item", "quantity des / max", "unit $", "$/h desired", "$/h max", "price date")
TERMINAL_COST_ROWS = 6  # cost rows on screen, the last folding the smaller items (a 50-line screen holds the total)


def hyperpod_lines(report: Report) -> list[str]:
    """One line per SageMaker HyperPod instance group: count, ml.* type and its accelerators (catalog)."""
    lines: list[str] = []
    for group in report.summary.hyperpod:
        row = CATALOG.get(group.instance_type.removeprefix("ml."))
        chips = f" ({group.count * row.accelerator_count} x {row.accelerator_model})" if row else ""
        lines.append(f"SageMaker HyperPod {group.cluster}/{group.name}: {group.count} x {group.instance_type}{chips}")
    return lines


def resource_tree(resources: Sequence[RecordedResource]) -> list[str]:
    """The recorded resources as a tree by parent, siblings sorted by name: registration order depends on
    when outputs resolve, and a report that reshuffles between runs is noise in a pull request."""
    urns = {r.urn for r in resources}
    children: dict[str, list[RecordedResource]] = defaultdict(list)
    roots: list[RecordedResource] = []
    for r in sorted(resources, key=lambda r: (r.name, r.type)):
        (children[r.parent] if r.parent in urns else roots).append(r)
    lines: list[str] = []

    def walk(node: RecordedResource, prefix: str, last: bool) -> None:
        branch = "└─ " if last else "├─ "
        flag = " [protect]" if node.protect else ""
        lines.append(f"{prefix}{branch}{node.type}  {node.name}{flag}")
        kids = children.get(node.urn, [])
        for i, kid in enumerate(kids):
            walk(kid, prefix + ("   " if last else "│  "), i == len(kids) - 1)

    for i, root in enumerate(roots):
        walk(root, "  ", i == len(roots) - 1)
    return lines


def _status(style: Style, status: str) -> str:
    text = status.upper()
    return (
        style.ok(text) if status == verdict.OK else style.bad(text) if status == verdict.REFUSED else style.warn(text)
    )


def _severity(style: Style, severity: str) -> str:
    label = severity.ljust(7)
    if severity == verdict.REFUSED:
        return style.bad(label)
    return style.warn(label) if severity in ("high", "medium") else style.dim(label)


def ready_line(v: verdict.Verdict) -> str:
    pole = v.time.long_pole
    line = f"ready in about {minutes(v.time.low, v.time.high)}"
    return line + (f" (long pole: {pole.what})" if pole else "")


def _paint(style: Style, status: str) -> Callable[[str], str]:
    return style.ok if status == verdict.OK else style.bad if status == verdict.REFUSED else style.warn


def header_lines(h: header.Header, style: Style, width: int) -> list[str]:
    """The header: the verdict line bold in its status's colour, then the changes, figures, size and fix."""
    lines = h.lines()
    paint = _paint(style, h.status)
    out = [style.bold(paint(line)) for line in fmt.fit(lines[0], width, "  ")]
    for line in lines[1:]:
        wrapped = fmt.fit(line, width - 2, "  ")
        if line.startswith("Fix: "):
            out += [paint("  " + part) for part in wrapped]
        else:
            out += ["  " + part for part in wrapped]
    return out


def risk_lines(v: verdict.Verdict, style: Style, width: int) -> list[str]:
    if not v.risks:
        return [style.heading("Risks"), style.ok("  none found"), ""]
    out = [style.heading(f"Risks ({len(v.risks)}, most serious first)")]
    for risk in v.risks:
        # A low risk gets one line (the Markdown and the JSON have its whole why): the screen is for the others.
        lines = fmt.clip(fmt.fit(f"{risk.title}: {risk.why}", width - 11, "  "), 1 if risk.severity == "low" else 2)
        out.append("  " + _severity(style, risk.severity) + "  " + lines[0])
        out += [" " * 11 + line for line in lines[1:]]
    out.append("")
    return out


def time_lines(v: verdict.Verdict, width: int) -> list[str]:
    """The critical path in one or two lines: what waits for what, with each step's typical minutes. A diff shows
    the time its change takes, never the full build's."""
    out: list[str] = []
    timed = (("Time to apply the change", v.change),) if v.change is not None else (("Time to ready", v.time),)
    for title, estimate in timed:
        if estimate is None:
            continue
        head = f"{title}: about {minutes(estimate.low, estimate.high)} on the critical path"
        path = " > ".join(f"{s.what} {minutes(s.time.low, s.time.high)}" for s in estimate.path if s.time.high >= 1)
        out += fmt.fit(head, width)
        if path:
            out += ["  " + line for line in fmt.fit(path, width - 2, "  ")]
        out += ["  " + line for note in estimate.notes for line in fmt.fit(note, width - 2)]
    out.append("")
    return out


SYMBOLS = {"create": "+", "delete": "-", "update": "~", "replace": "+-", "tags": "~", "ignored": "="}
LEGEND = "+ add · - delete · ~ update in place · +- replace · = kept by ignoreChanges"
DIFF_LINES = 30  # lines of the diff block on screen; the rest are counted (`--format json` has every change)


def diff_lines(report: Report, diff: PlanDiff, style: Style, width: int, before: Recording | None = None) -> list[str]:
    """Each changed resource (or group of them) with Pulumi's symbol, replacements first, at most `DIFF_LINES`."""
    lines = [style.bold(line) for line in fmt.fit(f"Changes against {diff.against}", width, "  ")]
    lines += [style.dim("  " + line) for line in fmt.fit(LEGEND, width - 2)]
    paint = {
        "create": style.ok,
        "delete": style.bad,
        "replace": style.bad,
        "update": style.warn,
        "tags": style.warn,
        "ignored": style.dim,
    }
    body: list[str] = []
    for entry in entries(diff, report.recording, before, report.summary.name, team_names(report, before)):
        symbol = SYMBOLS[entry.op]
        head = fmt.fit(f"{symbol} {entry.line}", width - 2, " " * (len(symbol) + 3))
        body += [paint[entry.op]("  " + line) for line in head]
        body += ["  " + line for d in entry.body for line in fmt.fit(" " * (len(symbol) + 3) + d, width - 2, " " * 8)]
    if len(body) > DIFF_LINES:
        hidden = len(body) - (DIFF_LINES - 1)
        body = [*body[: DIFF_LINES - 1], style.dim(f"  … {hidden} more lines: every change is in `--format json`")]
    lines += body
    lines += [style.dim("  " + line) for line in fmt.fit(PROVIDER_DIFF_NOTE, width - 2, "  ")]
    return lines


def team_names(report: Report, before: Recording | None) -> tuple[str, ...]:
    """The teams of the plan (and of the baseline, for what a change removes)."""
    from trainstack.model.summary import team_summaries

    names = [t.name for t in report.summary.teams]
    if before is not None:
        names += [t.name for t in team_summaries(Index(before)) if t.name not in names]
    return tuple(names)


def contract_lines(report: Report, style: Style, width: int = 100) -> list[str]:
    """The contract check: what AWS or Kubernetes would refuse, one violation per block."""
    if not report.contracts:
        return [style.heading("Contracts: ") + style.ok("every checked input meets its API contract"), ""]
    out = [style.heading("Contracts (what AWS and Kubernetes would accept)")]
    out.append(style.bad(f"  {len(report.contracts)} input(s) a real deployment would refuse"))
    for c in report.contracts:
        body = fmt.fit(f"{c.name} {c.path or '(resource)'} = {c.value}: {c.rule}", width - 10, "  ")
        out.append(f"  {style.bad('REFUSED')} {body[0]}")
        out += ["          " + line for line in body[1:]]
        out += [style.dim("          " + line) for line in fmt.fit(f"source: {c.source}", width - 10)]
    out.append("")
    return out


MAX_FIGURE_ROWS = 8  # distinct (path, figures) rows of one kind in the terminal; the JSON has every journey


def figure_rows(journeys: Sequence[Journey]) -> list[tuple[str, str]]:
    """Each distinct path and what its user gets, teams folded: `team a: torch TrainJob on p5` and `team b: ...`
    with the same figures are one row `torch TrainJob on p5`."""
    rows: dict[tuple[str, str], None] = {}
    for j in journeys:
        path = j.subject.split(": ", 1)[1] if j.subject.startswith("team ") and ": " in j.subject else j.subject
        rows[(path, ", ".join(f"{name} {value}" for name, value in j.figures.items()))] = None
    return list(rows)


def journey_lines(report: Report, style: Style, width: int = 100) -> list[str]:
    """The journeys: how many hold per kind, each broken one with its first failing step and source (never
    folded), and per kind one line for those that hold: their count and what the first one's user gets."""
    if not report.journeys:
        return []
    journeys = report.journeys
    holding = sum(1 for j in journeys if j.holds)
    kinds = journey_kinds(journeys)
    per_kind = ", ".join(f"{k.kind} {k.total}" for k in kinds)
    head = f"{holding} of {len(journeys)} hold ({per_kind})"
    paint = style.ok if holding == len(journeys) else style.bad
    first, *rest = fmt.fit(f"Journeys: {head}", width, "  ")
    out = [style.heading("Journeys: ") + paint(first.removeprefix("Journeys: ")), *(paint(line) for line in rest)]
    for k in kinds:
        for j in k.broken:
            step = j.broken_step
            if step is None:
                continue
            body = fmt.fit(f"{j.kind}: {j.subject}", width - 9, "  ")
            out.append(f"  {style.bad('BROKEN')} {body[0]}")
            out += ["         " + line for line in body[1:]]
            out += ["         " + line for line in fmt.fit(f"{step.name}: {step.detail}", width - 9, "  ")]
            out += [style.dim("         " + line) for line in fmt.fit(f"source: {step.source}", width - 9)]
        if k.holding and any(j.figures for j in k.holding):
            # What each user gets, once per distinct path (teams on the same group get the same ranks).
            out.append(f"  {k.kind}: {len(k.holding)} hold; what each gets:")
            for path, figures in figure_rows(k.holding)[:MAX_FIGURE_ROWS]:
                out += ["    " + line for line in fmt.fit(f"{path}: {figures}", width - 4, "    ")]
            if len(rows := figure_rows(k.holding)) > MAX_FIGURE_ROWS:
                out.append(style.dim(f"    and {len(rows) - MAX_FIGURE_ROWS} more (--format json has every one)"))
        elif k.holding:
            first = k.holding[0]
            more = f" and {len(k.holding) - 1} more" if len(k.holding) > 1 else ""
            text = f"{k.kind}: {len(k.holding)} hold, e.g. {first.subject}{more}"
            out += [style.dim("  ") + line for line in fmt.clip(fmt.fit(text, width - 2, "    "), 2)]
    out.append("")
    return out


def _compute(report: Report, style: Style, width: int) -> list[str]:
    s = report.summary
    out = [style.heading("Compute")]
    if s.gpu_groups:
        table = fmt.table(COMPUTE_HEADERS, compute_rows(report))
        if max(len(line) for line in table) <= width:
            out += table
        else:  # narrow: one block per group
            for g in s.gpu_groups:
                out += ["  " + line for text in group_block(report, g) for line in fmt.fit(text, width - 2, "    ")]
    out += ["  " + line for text in system_lines(report) + hyperpod_lines(report) for line in fmt.fit(text, width - 2)]
    if not s.node_groups:
        out.append(style.dim("  no node groups recorded"))
    total = s.accelerators_max
    line = (
        f"accelerators {s.accelerators_desired} at desired, {total} of budget {s.gpu_budget} at max"
        + (f" ({s.hyperpod_gpus} in HyperPod)" if s.hyperpod_gpus else "")
        + (f"; EFA fabric {units.gbps(s.fabric_gbps_desired)} at desired" if s.fabric_gbps_desired else "")
    )
    paint = style.bad if total > s.gpu_budget else (lambda text: text)
    out += [paint("  " + part) for part in fmt.fit(line, width - 2, "  ")]
    out.append("")
    return out


def _bringup(report: Report, style: Style, width: int) -> list[str]:
    """How each HyperPod instance group comes up (trainstack.model.bringup); nothing without HyperPod."""
    groups = summarize_bringup(report.recording)
    if not groups:
        return []
    out = [style.heading("HyperPod node bring-up")]
    for text in bringup_lines(groups):
        out += ["  " + line for line in fmt.fit(text, width - 2, "      ")]
    out.append("")
    return out


def _storage(report: Report, style: Style, width: int) -> list[str]:
    s = report.summary
    out = [style.heading("Storage")]
    for fs in s.file_systems:
        tier = f", {fs.throughput_mb_s_per_tib} MB/s/TiB" if fs.throughput_mb_s_per_tib else ""
        line = (
            f"FSx for Lustre {fs.name.removeprefix(s.name + '-')}: {fs.deployment_type}, {fs.capacity_gib:,} GiB{tier}"
            f"{', EFA' if fs.efa_enabled else ''} -> {units.mb_s(fs.throughput_mb_s)}"
        )
        if fs.coverage is not None:
            line += (
                f"; demand {s.accelerators_max} x {s.per_gpu_read_mb_s:g} MB/s = {units.mb_s(fs.demand_mb_s)}, "
                f"covered {units.percent(fs.coverage)}"
            )
        paint = style.ok if fs.coverage is None or fs.coverage >= 1 else style.warn
        out += [paint("  " + text) for text in fmt.fit(line, width - 2, "  ")]
    if not s.file_systems:
        out.append(style.dim("  no FSx for Lustre file system recorded"))
    out.append(f"  S3 buckets: {s.bucket_count}")
    out.append("")
    return out


def _platform(report: Report, style: Style, width: int) -> list[str]:
    s, c = report.summary, report.stack
    endpoint = "public (" + ", ".join(c.eks.public_access_cidrs) + ")" if c.eks.endpoint_public_access else "private"
    out = [style.heading("Network and platform")]
    clusters = "; ".join(f"EKS {version} ({support.lower()} support)" for _n, version, support in s.eks_clusters)
    existing = c.network.existing_vpc
    vpc = (
        f"VPC {c.network.vpc_cidr} over {len(c.network.availability_zones)} AZs; NAT gateways {s.nat_gateways}; "
        f"{s.interface_endpoints} interface endpoints"
        if existing is None
        else f"existing VPC {existing.vpc_id} ({c.network.vpc_cidr}), private subnets "
        + ", ".join(f"{az} {sid}" for az, sid in existing.private_subnet_ids.items())
        + "; its routing, endpoints and flow logs are its owner's"
    )
    head = f"{vpc}; {clusters or 'no EKS cluster'}, endpoint {endpoint}"
    out += ["  " + line for line in fmt.fit(head, width - 2, "  ")]
    helm = ", ".join(f"{a.chart.rstrip('/').rsplit('/', 1)[-1]} {a.version}" for a in s.addons if a.kind == "helm")
    eks = ", ".join(f"{a.name} {a.version}" for a in s.addons if a.kind == "eks-addon")
    for label, items in (("Helm", helm), ("EKS add-ons", eks)):
        if items:
            out += ["  " + line for line in fmt.fit(f"{label}: {items}", width - 2, "  ")]
    out.append("")
    return out


def _health(report: Report, style: Style, width: int) -> list[str]:
    if report.health is None:
        return []
    out = [style.heading("Health")]
    for line in health_lines(report.health):
        out += fmt.fit(f"  {line}", width, indent="    ")
    return [*out, ""]


def _cost(report: Report, style: Style, width: int) -> list[str]:
    cost = report.cost
    out = [style.heading(f"Cost (estimate, {cost.region} list prices)")]
    if cost.items:
        rows = cost_rows(report)
        if len(rows) > TERMINAL_COST_ROWS:  # the screen keeps the big items; Markdown and JSON list every one
            rest = sorted(report.cost.items, key=lambda i: (-i.usd_per_hour_max, i.name))[TERMINAL_COST_ROWS - 1 :]
            rows = [
                *rows[: TERMINAL_COST_ROWS - 1],
                [
                    f"{len(rest)} smaller items",
                    "",
                    "",
                    units.usd(sum(i.usd_per_hour_desired for i in rest)),
                    units.usd(sum(i.usd_per_hour_max for i in rest)),
                    "",
                ],
            ]
        # Narrow: the price date goes first, then the unit price and the quantities; never a cut cell.
        out += fmt.fit_table(COST_HEADERS, rows, width, drop=(5, 2, 1))
        total = (
            f"Total {units.usd(cost.usd_per_hour_desired)}/h at desired, {units.usd(cost.usd_per_hour_max)}/h at max; "
            f"{units.usd(cost.usd_per_month_desired)} / {units.usd(cost.usd_per_month_max)} per month "
            f"({cost.hours_per_month:g} h); GPU share {units.percent(cost.gpu_share_desired)}"
        )
        out += [style.bold("  " + line) for line in fmt.fit(total, width - 2, "  ")]
    else:
        out.append(style.dim("  nothing recorded that the cost model prices"))
    out.append("")
    return out


def _policy(report: Report, style: Style, width: int) -> list[str]:
    """Every mandatory violation on its own; advisories one line per rule (count, the first message and where)."""
    if report.policy is None:
        return []
    p = report.policy
    head = f"{len(p.mandatory)} mandatory, {len(p.advisory)} advisory violation(s) from {p.policies_run} policies"
    if p.waived:
        head += f"; {len(p.waived)} waived"
    if p.not_applicable:
        head += f"; {len(p.not_applicable)} check(s) not applicable"
    out = [style.heading("Policy review")]
    out += ["  " + (style.ok(part) if p.passed else style.bad(part)) for part in fmt.fit(head, width - 2, "  ")]
    cluster = report.summary.name
    for v in p.mandatory:
        body = fmt.fit(f"{v.policy} on {where(v, cluster)}: {v.message}", width - 12, "  ")
        out.append(f"  {style.bad('MANDATORY')} {body[0]}")
        out += ["            " + line for line in body[1:]]
    for group in rule_groups(p):
        if group.level == "mandatory":
            continue
        count = f" x{group.count}" if group.count > 1 else ""
        others = len(group.messages) - 1
        text = f"{group.policy}{count}: {group.example.message} (on {group.where(cluster)}"
        text += f"; {others} other message(s))" if others else ")"
        body = fmt.clip(fmt.fit(text, width - 12, "  "), 2)
        out.append(f"  {style.warn('advisory ')} {body[0]}")
        out += ["            " + line for line in body[1:]]
    for w in p.waived:
        body = fmt.fit(
            f"{'floor ' if w.floor else ''}{w.violation.policy} on {w.violation.name}: {w.violation.message} "
            f"Reason: {w.reason} Owner {w.owner}" + (f", until {w.expires.isoformat()}." if w.expires else "."),
            width - 12,
            "  ",
        )
        out.append(f"  {style.warn('waived   ')} {body[0]}")
        out += ["            " + line for line in fmt.clip(body, 2)[1:]]
    out.append("")
    return out


def _notes(report: Report, style: Style, width: int) -> list[str]:
    out = [style.heading("Cost notes")]
    for note in report.cost.notes:
        out += [style.dim("  " + line) for line in fmt.fit(f"* {note}", width - 2, "  ")]
    out.append("")
    return out


def title(report: Report, diff: PlanDiff | None) -> str:
    s = report.summary
    if diff is not None:
        return (
            f"trainstack diff: stack {s.stack} against {diff.against}  ·  {s.region}  ·  {s.resource_count} resources"
        )
    return (
        f"trainstack plan: stack {s.stack}  ·  {s.region}  ·  {s.environment}  ·  {s.resource_count} resources "
        f"({s.custom_count} cloud, {s.component_count} components)"
    )


def next_step_lines(v: verdict.Verdict, stack: str, environment: str, width: int, style: Style) -> list[str]:
    """A refusal's next step is its fix (then the plan again); otherwise the commands of a real deployment."""
    out = [style.heading("Next step")]
    if v.status == verdict.REFUSED:
        out += ["  " + line for line in fmt.fit("Fix what refuses the plan, then plan again:", width - 2)]
        for fix in v.fixes:
            out += [style.bad("  " + line) for line in fmt.fit(f"- {fix}", width - 2, "    ")]
        return out
    intro, *commands = next_steps(stack, environment)
    out += ["  " + line for line in fmt.fit(intro, width - 2, "    ")]
    return out + ["  " + line for command in commands for line in fmt.fit_command(command, width - 2, "      ")]


def render(
    report: Report,
    style: Style,
    diff: PlanDiff | None = None,
    tree: bool = False,
    width: int = 100,
    before: Report | None = None,
) -> str:
    """The terminal report, no line wider than `width`: the header (verdict, what changed, the figures) first,
    then a diff's changes, the risks and the sections, the summary line last, so both the top and the tail of a
    run show where the plan stands. The resource tree only when asked for."""
    s = report.summary
    width = max(width, 60)
    v = verdict.assess(report, diff, before)
    out = [style.bold(line) for line in fmt.fit(title(report, diff), width, "  ")]
    out.append(style.dim(fmt.clip(fmt.fit(f"  mode: {s.mode}", width), 1)[0]))
    out += header_lines(header.build(report, v, diff, before), style, width)
    out.append("")
    if diff is not None:
        out += diff_lines(report, diff, style, width, before.recording if before is not None else None)
        out.append("")
    out += risk_lines(v, style, width)
    out += time_lines(v, width)
    out += _compute(report, style, width)
    out += _bringup(report, style, width)
    out += _storage(report, style, width)
    out += _cost(report, style, width)
    out += contract_lines(report, style, width)
    out += _policy(report, style, width)
    # After the policy result: the verdict and its risks above already name every broken journey.
    out += journey_lines(report, style, width)
    out += capacity_lines(report, style, width)  # reference, like the platform below
    out += _platform(report, style, width)  # reference sections after the result, above the summary line
    out += _health(report, style, width)
    out += _notes(report, style, width)
    if tree:
        out.append(style.heading(f"Resources ({s.resource_count})"))
        out += [
            line if len(line) <= width else line[: width - 1] + "…"
            for line in resource_tree(report.recording.resources)
        ]
        out.append("")
    if account := account_lines(report.recording):
        out.append(style.heading("Account state"))
        out += ["  " + line for item in account for line in fmt.fit(item, width - 2, "    ")]
        out.append("")
    out += next_step_lines(v, s.stack, s.environment, width, style)
    out.append("")
    summary = f"{s.stack}: {v.headline} · {units.usd(report.cost.usd_per_hour_desired)}/h at desired"
    if report.policy is not None:
        summary += f" · policy {len(report.policy.mandatory)} mandatory, {len(report.policy.advisory)} advisory"
    summary += f" · contracts {len(report.contracts)} refused"
    if report.journeys:
        summary += f" · journeys {sum(1 for j in report.journeys if not j.holds)} broken"
    summary += f" · {ready_line(v) if diff is None else change_time(v)}"
    paint = _paint(style, v.status)
    out += [style.bold(paint(line)) for line in fmt.fit(summary, width, "  ")]
    return "\n".join(out) + "\n"


def change_time(v: verdict.Verdict) -> str:
    if v.change is None:
        return "no change to apply"
    return f"the change applies in about {minutes(v.change.low, v.change.high)}"

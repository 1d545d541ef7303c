"""The text report: what `make plan` prints. ANSI colour only when asked (a terminal, no NO_COLOR)."""

from __future__ import annotations

import shlex
from collections import defaultdict
from dataclasses import dataclass

from stacks.catalog import CATALOG
from trainstack.diff import PROVIDER_DIFF_NOTE, PlanDiff
from trainstack.engine import RecordedResource
from trainstack.report import fmt
from trainstack.report.model import Report
from trainstack.report.summary import NodeGroupSummary


@dataclass(frozen=True)
class Style:
    """ANSI styling, or none."""

    color: bool

    def _wrap(self, code: str, text: str) -> str:
        return f"\033[{code}m{text}\033[0m" if self.color else text

    def bold(self, text: str) -> str:
        return self._wrap("1", text)

    def dim(self, text: str) -> str:
        return self._wrap("2", text)

    def ok(self, text: str) -> str:
        return self._wrap("32", text)

    def warn(self, text: str) -> str:
        return self._wrap("33", text)

    def bad(self, text: str) -> str:
        return self._wrap("31", text)

    def heading(self, text: str) -> str:
        return self._wrap("1;36", text)


def next_steps(stack: str, environment: str) -> list[str]:
    """The commands for a real deployment, shell-quoted: they are meant to be copied into a shell."""
    quoted, config = shlex.quote(stack), shlex.quote(f"policies/config/{environment}.json")
    return [
        "With AWS credentials and the Pulumi CLI:",
        f"  pulumi preview --stack {quoted} --policy-pack policies --policy-pack-config {config}",
        f"  pulumi up --stack {quoted}",
    ]


def efa_cell(group: NodeGroupSummary) -> str:
    if not group.efa_max:
        return "-"
    return f"{group.efa_interfaces}/{group.efa_max}"


def compute_rows(report: Report) -> list[list[str]]:
    rows = []
    for g in report.summary.node_groups:
        rows.append(
            [
                g.name,
                g.instance_type or "?",
                f"{g.min_size}/{g.desired_size}/{g.max_size}",
                f"{g.gpus_desired}/{g.gpus_max}" if g.gpu else "-",
                f"{g.gpus_per_node} x {g.accelerator_model}, {g.gpu_memory_gib_per_node:,} GiB" if g.gpu else "-",
                efa_cell(g),
                fmt.gbps(g.fabric_gbps_per_node) if g.fabric_gbps_per_node else "-",
                f"{fmt.gbps(g.fabric_gbps_desired)} / {fmt.gbps(g.fabric_gbps_max)}" if g.fabric_gbps_per_node else "-",
                g.placement_group or "-",
                ",".join(g.availability_zones) or "-",
                g.capacity,
            ]
        )
    return rows


COMPUTE_HEADERS = (
    "group",
    "instance",
    "nodes min/des/max",
    "GPUs des/max",
    "per node",
    "EFA",
    "fabric/node",
    "fabric des/max",
    "placement group",
    "AZ",
    "capacity",
)


def cost_rows(report: Report) -> list[list[str]]:
    return [
        [
            i.name,
            f"{i.quantity_desired:,g} / {i.quantity_max:,g} {i.unit}",
            fmt.unit_usd(i.unit_usd),
            fmt.usd(i.usd_per_hour_desired),
            fmt.usd(i.usd_per_hour_max),
            i.date_label,
        ]
        for i in sorted(report.cost.items, key=lambda i: (-i.usd_per_hour_max, i.name))
    ]


COST_HEADERS = ("item", "quantity des / max", "unit $", "$/h desired", "$/h max", "price date")


def hyperpod_lines(report: Report) -> list[str]:
    """One line per SageMaker HyperPod instance group: count, ml.* type and its accelerators (catalog)."""
    lines = []
    for group in report.summary.hyperpod:
        row = CATALOG.get(group.instance_type.removeprefix("ml."))
        chips = f" ({group.count * row.accelerator_count} x {row.accelerator_model})" if row else ""
        lines.append(f"SageMaker HyperPod {group.cluster}/{group.name}: {group.count} x {group.instance_type}{chips}")
    return lines


def resource_tree(resources: list[RecordedResource]) -> list[str]:
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


def diff_lines(diff: PlanDiff, style: Style) -> list[str]:
    lines = [style.heading(f"Diff against {diff.against}")]
    updates = len(diff.changed) - len(diff.replaced)
    lines.append(
        f"  {len(diff.added)} to add, {updates} to change, {len(diff.replaced)} to replace, "
        f"{len(diff.removed)} to remove"
    )
    for change in diff.protected_replacements:
        lines.append(
            style.bad(
                f"  !! REPLACES PROTECTED {change.urn.rsplit('::', 1)[-1]} ({', '.join(change.replace_reasons)}): "
                "`pulumi up` refuses to delete a protected resource, and forcing it destroys the data"
            )
        )
    for urn, _type in diff.added:
        lines.append(style.ok(f"  + {urn}"))
    for urn, _type in diff.removed:
        lines.append(style.bad(f"  - {urn}"))
    for change in diff.changed:
        if change.op == "replace":
            lines.append(style.bad(f"  +- {change.urn} (replace{', protected' if change.protected else ''})"))
        else:
            lines.append(style.warn(f"  ~ {change.urn}"))
        for c in change.changes:
            forced = "  [forces replacement]" if c.path in change.replace_reasons else ""
            lines.append(f"      {c.path}: {fmt.short(c.old)} -> {fmt.short(c.new)}{forced}")
    for change in diff.ignored:
        lines.append(style.dim(f"  = {change.urn} (ignoreChanges: `pulumi up` keeps the deployed value)"))
        for c in change.changes:
            lines.append(style.dim(f"      {c.path}: stays {fmt.short(c.old)} (config says {fmt.short(c.new)})"))
    a_des, a_max = diff.accelerators_desired, diff.accelerators_max
    lines.append(
        f"  Accelerators (incl. HyperPod) at desired {a_des.before:g} -> {a_des.after:g} "
        f"({fmt.signed(a_des.change)}), at max {a_max.before:g} -> {a_max.after:g} ({fmt.signed(a_max.change)})"
    )
    lines.append(
        f"  EFA fabric at desired {fmt.gbps(diff.fabric_gbps_desired.before)} -> "
        f"{fmt.gbps(diff.fabric_gbps_desired.after)} ({fmt.signed(diff.fabric_gbps_desired.change, ' Gbit/s')})"
    )
    lines.append(
        f"  Cost at desired {fmt.usd(diff.usd_per_hour_desired.before)}/h -> "
        f"{fmt.usd(diff.usd_per_hour_desired.after)}/h "
        f"({fmt.signed_usd(diff.usd_per_hour_desired.change)}/h, {fmt.signed_usd(diff.usd_per_month_desired.change)}"
        f"/month); at max {fmt.signed_usd(diff.usd_per_hour_max.change)}/h"
    )
    lines.append(style.dim(f"  {PROVIDER_DIFF_NOTE}"))
    return lines


def contract_lines(report: Report, style: Style) -> list[str]:
    """The contract check: what AWS or Kubernetes would refuse, one violation per block."""
    out = [style.heading("Contracts (what AWS and Kubernetes would accept)")]
    if not report.contracts:
        out += [style.ok("  every checked input meets its API contract"), ""]
        return out
    out.append(style.bad(f"  {len(report.contracts)} input(s) a real deployment would refuse"))
    for c in report.contracts:
        out.append(f"  {style.bad('REFUSED')} {c.name} {c.path or '(resource)'} = {c.value}: {c.rule}")
        out.append(style.dim(f"          source: {c.source}"))
    out.append("")
    return out


def render(report: Report, style: Style, diff: PlanDiff | None = None, tree: bool = True) -> str:
    s, c, cost = report.summary, report.cluster, report.cost
    out: list[str] = []
    out.append(
        style.bold(f"trainstack plan: stack {s.stack}")
        + f"  ·  {s.region}  ·  {s.environment}  ·  {s.resource_count} resources "
        f"({s.custom_count} cloud, {s.component_count} components)"
    )
    out.append(style.dim(f"  mode: {s.mode}"))
    out.append("")

    out.append(style.heading("Settings"))
    net = c.network
    out.append(
        f"  {c.name}: VPC {net.vpc_cidr} over {', '.join(net.availability_zones)}; NAT {net.nat_gateways.value}; "
        f"interface endpoints {'on' if net.interface_endpoints else 'off'}"
    )
    endpoint = "public (" + ", ".join(c.eks.public_access_cidrs) + ")" if c.eks.endpoint_public_access else "private"
    out.append(
        f"  EKS {c.eks.version} ({c.eks.support_type.lower()} support), endpoint {endpoint}, "
        f"auth {c.eks.authentication_mode.value}, {len(c.eks.admin_role_arns)} admin role(s)"
    )
    out.append(
        f"  GPU budget {c.cost.max_gpus} accelerators at max size; data protected: {'yes' if c.protect_data else 'no'}"
    )
    out.append("")

    out.append(style.heading("Compute"))
    if s.node_groups:
        out += fmt.table(COMPUTE_HEADERS, compute_rows(report))
        total = s.gpus_max + s.hyperpod_gpus
        hyperpod = f" + {s.hyperpod_gpus} in HyperPod" if s.hyperpod_gpus else ""
        budget = f"{s.gpus_max} at max{hyperpod}: {total} of budget {s.gpu_budget}"
        out.append(
            f"  Accelerators: {s.gpus_desired} at desired, "
            + (style.bad(budget) if total > s.gpu_budget else budget)
            + f"; EFA fabric {fmt.gbps(s.fabric_gbps_desired)} at desired, {fmt.gbps(s.fabric_gbps_max)} at max"
        )
        for g in s.node_groups:
            if g.gpu:
                placement = f"placement group {g.placement_group}" if g.placement_group else "no placement group"
                if not g.placement_group and g.capacity.startswith(("reservation", "capacity-block")):
                    placement += " (the reservation decides placement)"
                out.append(
                    f"  {g.name}: {g.subnets} subnet(s) in {', '.join(g.availability_zones)}; {placement}; "
                    f"taint {', '.join(g.taints) or 'none'}"
                )
            if g.efa_max and 0 < g.efa_interfaces < g.efa_max:
                out.append(
                    style.warn(
                        f"  {g.name}: {g.efa_interfaces} of {g.efa_max} EFA interfaces configured; the fabric runs at "
                        f"{g.efa_interfaces / g.efa_max:.0%} of {g.instance_type}'s bandwidth"
                    )
                )
    else:
        out.append(style.dim("  no node groups recorded"))
    out += [f"  {line}" for line in hyperpod_lines(report)]
    out.append("")

    out.append(style.heading("Storage"))
    for fs in s.file_systems:
        tier = f", {fs.throughput_mb_s_per_tib} MB/s/TiB" if fs.throughput_mb_s_per_tib else ""
        line = (
            f"  FSx for Lustre {fs.name}: {fs.deployment_type}, {fs.capacity_gib:,} GiB{tier}"
            f"{', EFA' if fs.efa_enabled else ''} -> {fmt.mb_s(fs.throughput_mb_s)} aggregate"
        )
        out.append(line)
        if fs.coverage is not None:
            verdict = (
                f"  demand {s.accelerators_max} accelerators x {s.per_gpu_read_mb_s:g} MB/s"
                f" = {fmt.mb_s(fs.demand_mb_s)}: "
                f"throughput covers {fmt.percent(fs.coverage)}"
            )
            out.append(style.ok(verdict) if fs.coverage >= 1 else style.warn(verdict + " (under demand)"))
    out.append(f"  S3 buckets: {s.bucket_count}" if s.bucket_count else style.dim("  no S3 buckets recorded"))
    if not s.file_systems:
        out.append(style.dim("  no FSx for Lustre file system recorded"))
    out.append("")

    out.append(style.heading("Network and platform"))
    out.append(
        f"  NAT gateways {s.nat_gateways}; interface endpoints {s.interface_endpoints} "
        f"({s.interface_endpoint_azs} endpoint-AZs)"
    )
    for name, version, support in s.eks_clusters:
        out.append(f"  EKS cluster {name}: Kubernetes {version}, {support.lower()} support")
    for addon in s.addons:
        where = f" in {addon.namespace}" if addon.namespace else ""
        out.append(f"  {addon.kind} {addon.name}: {addon.chart} {addon.version}{where}")
    out.append("")

    out.append(style.heading(f"Cost (estimate, {cost.region} list prices)"))
    if cost.items:
        out += fmt.table(COST_HEADERS, cost_rows(report))
        out.append(
            style.bold(
                f"  Total {fmt.usd(cost.usd_per_hour_desired)}/h at desired, {fmt.usd(cost.usd_per_hour_max)}/h at max"
                f"; {fmt.usd(cost.usd_per_month_desired)} / {fmt.usd(cost.usd_per_month_max)} per month "
                f"({cost.hours_per_month:g} h)"
            )
        )
        out.append(
            f"  GPU share {fmt.percent(cost.gpu_share_desired)} at desired, "
            f"{fmt.percent(cost.gpu_share_max)} at max; top items: "
            + ", ".join(i.name for i in cost.top(3) if i.usd_per_hour_desired or i.usd_per_hour_max)
        )
    else:
        out.append(style.dim("  nothing recorded that the cost model prices"))
    for note in cost.notes:
        out.append(style.dim(f"  * {note}"))
    out.append("")

    out += contract_lines(report, style)

    if report.policy is not None:
        p = report.policy
        out.append(style.heading("Policy review"))
        head = f"  {len(p.mandatory)} mandatory, {len(p.advisory)} advisory violation(s) from {p.policies_run} policies"
        if p.not_applicable:
            head += f"; {len(p.not_applicable)} check(s) not applicable"
        out.append(style.ok(head) if p.passed else style.bad(head))
        for v in p.violations:
            tag = style.bad("MANDATORY") if v.level == "mandatory" else style.warn("advisory ")
            out.append(f"  {tag} {v.policy}: {v.message}")
            out.append(style.dim(f"            {v.urn or '(stack)'}"))
        out.append("")

    if diff is not None:
        out += diff_lines(diff, style)
        out.append("")

    if tree:
        out.append(style.heading(f"Resources ({s.resource_count})"))
        out += resource_tree(report.recording.resources)
        out.append("")

    out.append(style.heading("Next step"))
    out += ["  " + line for line in next_steps(s.stack, s.environment)]
    return "\n".join(out) + "\n"

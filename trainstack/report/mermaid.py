"""A Mermaid `flowchart` for a reviewer, drawn from the recorded resource graph.

What a reviewer looks for, readable at a pull request's width: the AZ with the GPUs first, its GPU groups with
their EFA fabric, the data path (GPU nodes to FSx for Lustre, and the S3 buckets the file system's data repository
association links, with the direction its policies give: import, export or both), the control plane the nodes join,
and the GPU Operator and EFA device plugin drawn on the GPU nodes they run on (found from the tolerations in their
values). What the text report already lists is folded: the other Helm charts and the EKS managed add-ons are one
node, the interface endpoints one node, AZs with nothing but subnets and NAT one node, GPU groups beyond
`MAX_GROUPS_PER_AZ` in an AZ one node; labels are wrapped to `LABEL_WIDTH` characters. So the chart stays narrow
enough that GitHub's 880 px column shows its labels at 12 px or more (Mermaid shrinks a wider chart to fit, and its
16 px text with it; tests/report/test_comment_browser.py measures the rendered labels in chromium).

In a diff, each node's style says what happens to it: added, changed (an input other than a tag), replaced,
replaced while protected (the refusal), removed; a legend names the styles the chart uses, and the label says it
too (`replaced:`), so the meaning does not rest on colour alone.
"""

from __future__ import annotations

import itertools
import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from trainstack.engine import RecordedResource, Recording
from trainstack.model import units
from trainstack.model.diff import PlanDiff
from trainstack.model.graph import Index, as_int, get
from trainstack.model.names import urn_type
from trainstack.model.summary import NodeGroupSummary, node_group_summary
from trainstack.report import fmt
from trainstack.report.changes import tags_only
from trainstack.tokens import (
    EKS_ADDON,
    EKS_CLUSTER,
    FSX_DATA_REPOSITORY_ASSOCIATION,
    FSX_LUSTRE,
    HELM_CHART,
    HELM_RELEASE,
    HYPERPOD_CLUSTER,
    LAUNCH_TEMPLATE,
    NAT_GATEWAY,
    NODE_GROUP,
    PLACEMENT_GROUP,
    S3_BUCKETS,
    SUBNET,
    VPC,
    VPC_ENDPOINT,
)

MAX_GROUPS_PER_AZ = 2  # GPU groups drawn one by one in an AZ; the rest fold into one node under them
LABEL_WIDTH = 22  # characters per label line: Mermaid wraps a label at 200 px (flowchart.wrappingWidth) itself

# Styles distinct from each other and from Mermaid's own fills (lavender nodes, pale yellow subgraphs), GitHub's
# palette: green added, blue changed, red replaced, white on dark red replaced-while-protected, dashed removed.
CLASSES = {
    "added": "fill:#dafbe1,stroke:#1a7f37,stroke-width:2px,color:#0d1117",
    "changed": "fill:#ddf4ff,stroke:#0969da,stroke-width:2px,color:#0d1117",
    "replaced": "fill:#ffebe9,stroke:#cf222e,stroke-width:3px,color:#0d1117",
    "protected": "fill:#82071e,stroke:#82071e,stroke-width:3px,color:#ffffff",
    "removed": "fill:#f6f8fa,stroke:#cf222e,stroke-width:2px,color:#57606a,stroke-dasharray:6 4",
}
LEGEND = {
    "added": "added",
    "changed": "changed in place",
    "replaced": "replaced",
    "protected": "protected, replaced: refused",
    "removed": "removed",
}
# Mermaid's gaps between nodes (50 px side by side and between ranks by default) at 30 and 40: a chart four nodes
# wide is 60 px narrower, so its text is shrunk less to fit the column. An init directive, as GitHub's renderer reads.
INIT = '%%{init: {"flowchart": {"nodeSpacing": 30, "rankSpacing": 40}}}%%'
PREFIX = {"replaced": "replaced: ", "protected": "PROTECTED, replaced: ", "removed": "removed: "}


@dataclass
class Node:
    key: str  # stable across two recordings of the same stack: what a diff matches on
    label: str
    shape: str  # rect, cyl (storage), round (add-on), stadium (gateway), hex (fabric)
    container: str  # "", "vpc", "az:<zone>", "eks"
    urns: set[str] = field(default_factory=set)  # the recorded resources the node stands for
    status: str = ""  # one of CLASSES (diffs only)

    @property
    def id(self) -> str:
        return "n_" + re.sub(r"[^A-Za-z0-9]", "_", self.key)


@dataclass(frozen=True)
class Edge:
    source: str  # node keys
    target: str
    label: str = ""
    style: str = "-->"  # --> flow, -.-> runs on, === fabric, <--> both ways, ~~~ layout only (invisible)


def plural(count: int, word: str) -> str:
    return f"{count} {word}" + ("" if count == 1 else "s")


def _label(text: str) -> str:
    """Mermaid label text: no double quotes (they end the label), no backticks or pipes of Markdown, no angle
    brackets (the labels are HTML: `<br>` is the only tag they carry)."""
    return text.replace('"', "'").replace("`", "'").replace("|", "/").replace("<", "").replace(">", "")


def wrap(text: str, width: int = LABEL_WIDTH) -> str:
    """A label in lines of at most `width` characters (Mermaid's `<br>`), each `\n` in `text` a break of its own."""
    return "<br>".join(_label(line) for paragraph in text.split("\n") for line in fmt.fit(paragraph, width, "") if line)


def _shape(node: Node) -> str:
    text = f'"{wrap(PREFIX.get(node.status, "") + node.label)}"'
    return {
        "cyl": f"[({text})]",
        "round": f"({text})",
        "stadium": f"([{text}])",
        "hex": "{{" + text + "}}",
    }.get(node.shape, f"[{text}]")


def _tolerated_keys(values: Any) -> set[str]:
    """Taint keys a chart's values tolerate, wherever the tolerations sit (daemonsets.tolerations, ...)."""
    found: set[str] = set()
    if isinstance(values, dict):
        if "effect" in values or "operator" in values:
            key = values.get("key")
            if isinstance(key, str):
                found.add(key)
        for value in values.values():
            found |= _tolerated_keys(value)
    elif isinstance(values, list):
        for value in values:
            found |= _tolerated_keys(value)
    return found


def _chart(release: RecordedResource) -> str:
    return str(get(release.inputs, "chart") or release.name).rstrip("/").rsplit("/", 1)[-1]


def _group_label(g: NodeGroupSummary, prefix: str) -> str:
    """A GPU group and its fabric in one node, a short fact per line: the fabric is the group's launch template
    interfaces in its placement, the same resources, and a node of its own per group would widen the chart."""
    lines = [
        g.name.removeprefix(prefix + "-"),
        f"{g.desired_size} x {g.instance_type}",
        f"{g.gpus_desired} {g.accelerator_model}, max {g.max_size} nodes",
    ]
    if g.fabric_gbps_per_node:
        lines.append(f"EFA {g.efa_interfaces}/{g.efa_max}, {units.gbps(g.fabric_gbps_desired)}")
    lines.append(g.capacity.split(" ")[0])
    if g.placement_group:
        lines.append(f"placement {g.placement_group.removeprefix(prefix + '-')}")
    return "\n".join(lines)


class _Model:
    """The drawn nodes and edges of one recording."""

    def __init__(self, recording: Recording, prefix: str) -> None:
        self.index = Index(recording)
        self.prefix = prefix
        self.nodes: dict[str, Node] = {}
        self.edges: list[Edge] = []
        self.zones: list[str] = []  # AZ subgraphs to draw, GPU AZ first
        self.vpc_label = ""
        self._build(recording)

    def add(self, key: str, label: str, shape: str, container: str, urns: Iterable[str]) -> Node:
        node = self.nodes.get(key)
        if node is None:
            node = self.nodes[key] = Node(key, label, shape, container)
        node.urns |= set(urns)
        return node

    def group_target(self, key: str) -> str:
        """Where an edge to a node group ends: at its AZ when the AZ draws several groups (one edge to the AZ, not
        one per group: edges fanned out from the control plane cut the corners of the groups beside their target)."""
        container = self.nodes[key].container
        here = [k for k, n in self.nodes.items() if n.container == container and k.startswith("ng_")]
        return container if container.startswith("az:") and len(here) > 1 else key

    def column(self) -> list[str]:
        """The nodes `_layout` stacks: the last node in an AZ, then the VPC's own nodes that send no edge (system
        nodes, the network; HyperPod mounts the file system, so it ranks above it by its own edge)."""
        senders = {e.source for e in self.edges if e.style != "~~~"}
        in_zones = [k for k, n in self.nodes.items() if n.container.startswith("az:")]
        in_zones.sort(key=lambda k: k.startswith("ng_more_"))  # folded groups sit lowest in their AZ
        vpc = [k for k, n in self.nodes.items() if n.container == "vpc" and k not in senders]
        return ([in_zones[-1]] if in_zones else []) + vpc

    def lowest(self) -> str | None:
        """The node the layout puts last: the bottom of the column, else the last one drawn."""
        column = self.column()
        return column[-1] if column else next(reversed(self.nodes), None)

    def _members(self, resource: RecordedResource) -> set[str]:
        """What a node stands for: the resource, the launch templates and placement groups it uses (a node group's
        nodes come from them: replacing one recreates the nodes), and its component."""
        urns = {resource.urn, *(r.urn for r in self.index.refs(resource, "launchTemplate", LAUNCH_TEMPLATE))}
        for template in self.index.refs(resource, "launchTemplate", LAUNCH_TEMPLATE):
            urns |= {r.urn for r in self.index.refs(template, "placement", PLACEMENT_GROUP)}
        if resource.parent:
            urns.add(resource.parent)
        return urns

    def _build(self, recording: Recording) -> None:
        index = self.index
        vpcs = index.of_type(VPC)
        in_vpc = "vpc" if vpcs else ""  # the container of what sits in the VPC, when one is drawn
        self.vpc_label = f"VPC {get(vpcs[0].inputs, 'cidrBlock') or ''}".strip() if vpcs else ""
        subnet_zone = {s.urn: str(get(s.inputs, "availabilityZone") or "") for s in index.of_type(SUBNET)}

        # GPU groups by AZ, system groups in the VPC.
        groups = [(r, node_group_summary(index, r)) for r in index.of_type(NODE_GROUP)]
        gpu_by_zone: dict[str, list[tuple[RecordedResource, NodeGroupSummary]]] = defaultdict(list)
        for r, g in groups:
            if g.gpu:
                zone = g.availability_zones[0] if len(g.availability_zones) == 1 else ""
                gpu_by_zone[zone].append((r, g))
            else:
                label = (
                    f"system nodes: {g.desired_size} x {g.instance_type} (max {g.max_size}) "
                    f"over {len(g.availability_zones)} AZs"
                )
                self.add(f"ng_{r.name}", label, "rect", in_vpc, self._members(r))
        file_systems = index.of_type(FSX_LUSTRE)
        fs_zone: dict[str, str] = {}
        for fs in file_systems:
            zones = {subnet_zone.get(s.urn, "") for s in index.refs(fs, "subnetIds", SUBNET)}
            fs_zone[fs.urn] = zones.pop() if len(zones) == 1 else ""
        hyperpods = index.of_type(HYPERPOD_CLUSTER)

        busy = {z for z in gpu_by_zone if z} | {z for z in fs_zone.values() if z}
        self.zones = sorted(busy, key=lambda z: (z not in gpu_by_zone, z not in fs_zone.values(), z))

        self._add_network(subnet_zone, in_vpc)
        self._add_gpu_groups(gpu_by_zone, in_vpc)
        self._add_file_systems(file_systems, fs_zone)
        self._add_control_plane_and_charts(groups)
        self._add_buckets()
        self._add_hyperpod(hyperpods, in_vpc)
        self._add_data_path(hyperpods, file_systems)

    def _add_network(self, subnet_zone: dict[str, str], in_vpc: str) -> None:
        """The network is one node: subnets and NAT gateways of every AZ and the interface endpoints (the text
        report lists them); the AZ subgraphs hold what must share an AZ (GPU groups, their fabric, the file
        system)."""
        all_zones = sorted({z for z in subnet_zone.values() if z})
        nats = self.index.of_type(NAT_GATEWAY)
        endpoints = self.index.of_type(VPC_ENDPOINT)
        subnets = list(subnet_zone)
        if subnets or nats or endpoints:
            parts = [f"{plural(len(subnets), 'subnet')} in {plural(len(all_zones), 'AZ')}"] if subnets else []
            parts += [plural(len(nats), "NAT gateway")] if nats else []
            parts += [plural(len(endpoints), "VPC endpoint")] if endpoints else []
            self.add(
                "network",
                "\n".join(parts),
                "stadium",
                in_vpc,
                {*subnets, *(n.urn for n in nats), *(e.urn for e in endpoints)},
            )

    def _add_gpu_groups(
        self, gpu_by_zone: dict[str, list[tuple[RecordedResource, NodeGroupSummary]]], in_vpc: str
    ) -> None:
        """Each AZ's largest GPU groups (MAX_GROUPS_PER_AZ), the rest folded into one node."""
        for zone, members in sorted(gpu_by_zone.items()):
            container = f"az:{zone}" if zone else in_vpc
            members.sort(key=lambda m: (-m[1].gpus_max, m[1].name))
            for r, g in members[:MAX_GROUPS_PER_AZ]:
                key = f"ng_{r.name}"
                self.add(key, _group_label(g, self.prefix), "rect", container, self._members(r))
            rest = members[MAX_GROUPS_PER_AZ:]
            if rest:
                accelerators = sum(g.gpus_desired for _, g in rest)
                self.add(
                    f"ng_more_{zone or 'vpc'}",
                    f"{plural(len(rest), 'more GPU group')}: {accelerators} accelerators at desired",
                    "rect",
                    container,
                    {u for r, _ in rest for u in self._members(r)},
                )

    def _add_file_systems(self, file_systems: list[RecordedResource], fs_zone: dict[str, str]) -> None:
        """Each FSx for Lustre file system in its AZ: deployment type, size, EFA."""
        for fs in file_systems:
            zone = fs_zone[fs.urn]
            capacity = as_int(get(fs.inputs, "storageCapacity")) or 0
            label = f"FSx for Lustre {get(fs.inputs, 'deploymentType') or ''} {capacity / 1024:,.1f} TiB" + (
                ", EFA" if get(fs.inputs, "efaEnabled") else ""
            )
            self.add(f"fs_{fs.name}", label, "cyl", f"az:{zone}" if zone else "vpc", self._members(fs))

    def _add_control_plane_and_charts(self, groups: list[tuple[RecordedResource, NodeGroupSummary]]) -> None:
        """The control plane; the charts that run on the GPU nodes (they tolerate the GPU taint) are drawn there,
        the other charts and the EKS managed add-ons fold into one node: the text report lists every one with its
        version."""
        index = self.index
        for cluster in index.of_type(EKS_CLUSTER):
            label = f"control plane {get(cluster.inputs, 'version') or ''}".strip()
            self.add("eks", label, "rect", "eks", {cluster.urn})
        gpu_taints = {t.split("=", 1)[0] for _, g in groups if g.gpu for t in g.taints}
        on_gpus: list[RecordedResource] = []
        others: list[RecordedResource] = []
        for release in index.of_type(HELM_RELEASE, HELM_CHART):
            (on_gpus if _tolerated_keys(release.inputs.get("values")) & gpu_taints else others).append(release)
        if on_gpus:
            names = ", ".join(f"{_chart(r)} {get(r.inputs, 'version') or ''}".strip() for r in on_gpus)
            self.add("gpu_charts", names, "round", "eks", {r.urn for r in on_gpus})
            for r, g in groups:
                if g.gpu and f"ng_{r.name}" in self.nodes:
                    self.edges.append(Edge("gpu_charts", self.group_target(f"ng_{r.name}"), "runs on", "-.->"))
        addons = index.of_type(EKS_ADDON)
        if others or addons:
            parts = [plural(len(others), "more Helm chart")] if others else []
            parts += [plural(len(addons), "EKS add-on")] if addons else []
            self.add("addons", " and ".join(parts), "round", "eks", {a.urn for a in [*others, *addons]})

    def _add_buckets(self) -> None:
        """S3: the buckets a data repository association links, drawn with its direction; the rest in one node."""
        index = self.index
        buckets = index.of_type(*S3_BUCKETS)
        linked: dict[str, set[str]] = defaultdict(set)  # bucket urn -> file system node keys
        flows: dict[tuple[str, str], tuple[str, str]] = {}
        for dra in index.of_type(FSX_DATA_REPOSITORY_ASSOCIATION):
            targets = index.refs(dra, "fileSystemId", FSX_LUSTRE)
            sources = [b for b in index.refs(dra, "dataRepositoryPath") if b.type in S3_BUCKETS]
            for fs in targets:
                if f"fs_{fs.name}" in self.nodes:
                    self.nodes[f"fs_{fs.name}"].urns.add(dra.urn)
                for bucket in sources:
                    linked[bucket.urn].add(f"fs_{fs.name}")
                    flows[(bucket.urn, f"fs_{fs.name}")] = direction(dra)
        for bucket in buckets:
            if bucket.urn in linked:
                self.add(f"s3_{bucket.name}", f"S3 {short_bucket(bucket, self.prefix)}", "cyl", "", {bucket.urn})
        rest = [b for b in buckets if b.urn not in linked]
        if rest:
            names = ", ".join(sorted(short_bucket(b, self.prefix) for b in rest))
            self.add("s3_other", f"S3 {names}", "cyl", "", {b.urn for b in rest})
        for (bucket_urn, fs_key), (label, style) in flows.items():
            bucket = index.by_urn[bucket_urn]
            if style == "<--":  # export only: the file system writes to the bucket
                self.edges.append(Edge(fs_key, f"s3_{bucket.name}", label, "-->"))
            else:
                self.edges.append(Edge(f"s3_{bucket.name}", fs_key, label, style))

    def _add_hyperpod(self, hyperpods: list[RecordedResource], in_vpc: str) -> None:
        """A HyperPod cluster as one node of its instances, orchestrated by EKS when it names an orchestrator."""
        for hp in hyperpods:
            count = sum(as_int(get(g, "instanceCount")) or 0 for g in hp.inputs.get("instanceGroups") or [])
            self.add("hyperpod", f"SageMaker HyperPod: {count} instances", "rect", in_vpc, {hp.urn})
            if get(hp.inputs, "orchestrator", "eks"):
                self.edges.append(Edge("eks", "hyperpod", "orchestrates"))

    def _add_data_path(self, hyperpods: list[RecordedResource], file_systems: list[RecordedResource]) -> None:
        """The data path and the control plane: every drawn node group joins EKS and mounts each file system.
        A folded node of groups has no edges of its own (`_layout` puts it under the groups drawn): two more
        edges per fold would cross the drawn groups' edges for no fact the drawn ones do not already show."""
        compute = [k for k in self.nodes if k.startswith("ng_") and not k.startswith("ng_more_")]
        compute += ["hyperpod"] if hyperpods else []
        for key in compute:
            if "eks" in self.nodes and key != "hyperpod":
                self.edges.append(Edge("eks", self.group_target(key), "manages"))
            if key == "hyperpod" or not self.nodes[key].label.startswith("system"):
                self.edges += [Edge(key, f"fs_{fs.name}", "Lustre") for fs in file_systems]


def short_bucket(bucket: RecordedResource, prefix: str) -> str:
    return bucket.name.removeprefix(prefix + "-").removeprefix("data-")


def direction(dra: RecordedResource) -> tuple[str, str]:
    """What a data repository association moves, from its policies: (edge label, arrow from the bucket's side).
    Import when `s3.autoImportPolicy` has events or `batchImportMetaDataOnCreate` is set; export when
    `s3.autoExportPolicy` has events (FSx API, S3DataRepositoryConfiguration / AutoImportPolicy, AutoExportPolicy)."""
    imports = bool(get(dra.inputs, "s3", "autoImportPolicy", "events")) or bool(
        get(dra.inputs, "batchImportMetaDataOnCreate")
    )
    exports = bool(get(dra.inputs, "s3", "autoExportPolicy", "events"))
    path = str(get(dra.inputs, "fileSystemPath") or "")
    where = f" {path}" if path else ""
    if imports and exports:
        return f"imports and exports{where}", "<-->"
    if exports:
        return f"exports{where}", "<--"
    return f"imports to{where}" if imports else "linked", "-->"


def _layout(model: _Model) -> None:
    """Invisible links that stack the VPC's own nodes (system nodes, the network) in one column under the AZs, and
    the S3 buckets no file system links under those it links, so the chart grows down, not sideways."""
    column = model.column()
    for key, node in model.nodes.items():  # folded GPU groups under their AZ's file system (else its first group)
        if key.startswith("ng_more_"):
            same = [k for k, n in model.nodes.items() if n.container == node.container and k != key]
            anchor = next((k for k in same if k.startswith("fs_")), same[0] if same else None)
            if anchor is not None:
                model.edges.append(Edge(anchor, key, "", "~~~"))
    model.edges += [Edge(a, b, "", "~~~") for a, b in itertools.pairwise(column)]
    buckets = [k for k in model.nodes if k.startswith("s3_")]
    model.edges += [Edge(a, b, "", "~~~") for a, b in itertools.pairwise(buckets)]


def _mark(model: _Model, diff: PlanDiff, before: Recording | None, prefix: str) -> None:
    """Style what the diff touches, the most serious first: a protected resource replaced, a replacement, all of a
    node's resources added, an input other than a tag changed; draw what it removes (from the baseline) as removed
    nodes. A change of tags alone leaves a node as it is: the diff block counts those."""
    added = {urn for urn, _ in diff.added}
    replaced = {c.urn for c in diff.replaced}
    protected = {c.urn for c in diff.protected_replacements}
    changed = {c.urn for c in diff.changed if not tags_only(c)}
    for node in model.nodes.values():
        own = {u for u in node.urns if not urn_type(u).startswith("trainstack:")}  # components have no cloud state
        if node.urns & protected:
            node.status = "protected"
        elif node.urns & replaced:
            node.status = "replaced"
        elif own and own <= added:
            node.status = "added"
        elif node.urns & (added | changed):
            node.status = "changed"
    if before is None:
        return
    old = _Model(before, prefix)
    for key, node in old.nodes.items():
        if key not in model.nodes:
            node.status = "removed"
            if node.container.startswith("az:") and node.container[3:] not in model.zones:
                node.container = "vpc"
            model.nodes[key] = node


def flowchart(recording: Recording, diff: PlanDiff | None = None, before: Recording | None = None) -> str:
    """The Mermaid source (without the code fence)."""
    prefix = _cluster_prefix(recording)
    model = _Model(recording, prefix)
    if diff is not None:
        _mark(model, diff, before, prefix)
    _layout(model)
    nodes = model.nodes
    by_container: dict[str, list[Node]] = defaultdict(list)
    for node in nodes.values():
        by_container[node.container].append(node)

    lines = [INIT, "flowchart TB"]

    def draw(container: str, indent: str) -> None:
        lines.extend(f"{indent}{n.id}{_shape(n)}" for n in by_container.get(container, []))

    if "eks" in {n.container for n in nodes.values()}:
        lines.append('  subgraph eks_cluster["EKS"]')
        draw("eks", "    ")
        lines.append("  end")
    if model.vpc_label or any(n.container.startswith(("vpc", "az:")) for n in nodes.values()):
        lines.append(f'  subgraph vpc["{_label(model.vpc_label or "VPC")}"]')
        for zone in model.zones:
            lines.append(f'    subgraph {_zone_id(zone)}["{_label(zone)}"]')
            draw(f"az:{zone}", "      ")
            lines.append("    end")
        draw("vpc", "    ")
        lines.append("  end")
    draw("", "  ")
    ends = {key: node.id for key, node in nodes.items()} | {f"az:{zone}": _zone_id(zone) for zone in model.zones}
    seen: set[tuple[str, str]] = set()
    for edge in model.edges:
        if edge.source not in ends or edge.target not in ends or (edge.source, edge.target) in seen:
            continue
        seen.add((edge.source, edge.target))
        label = f'|"{_label(edge.label)}"|' if edge.label else ""
        lines.append(f"  {ends[edge.source]} {edge.style}{label} {ends[edge.target]}")
    marked = {status: [n.id for n in nodes.values() if n.status == status] for status in CLASSES}
    used = [status for status, ids in marked.items() if ids]
    if used:  # the legend: one node per style the chart uses, in a row under the lowest node
        lines.append('  subgraph legend["legend"]')
        lines += [f'    legend_{status}["{LEGEND[status]}"]' for status in used]
        lines.append("  end")
        last = model.lowest()
        if last is not None:
            lines += [f"  {nodes[last].id} ~~~ legend_{status}" for status in used]
    for status in used:
        lines.append(f"  classDef {status} {CLASSES[status]}")
        lines.append(f"  class {','.join([*marked[status], f'legend_{status}'])} {status}")
    return "\n".join(lines)


def _zone_id(zone: str) -> str:
    return "az_" + re.sub(r"[^A-Za-z0-9]", "_", zone)


def _cluster_prefix(recording: Recording) -> str:
    clusters = Index(recording).of_type(EKS_CLUSTER)
    if clusters and (name := get(clusters[0].inputs, "name")):
        return str(name)
    return ""


def node_count(source: str) -> int:
    """How many nodes a flowchart this module writes defines."""
    return sum(1 for line in source.splitlines() if _SHAPE.match(line.strip()))


_SHAPE = re.compile(
    r'^([A-Za-z][A-Za-z0-9_]*)(\[\("[^"]*"\)\]|\(\["[^"]*"\]\)|\("[^"]*"\)|\["[^"]*"\]|\{\{"[^"]*"\}\})$'
)
_EDGE = re.compile(r'^([A-Za-z][A-Za-z0-9_]*) (-->|-\.->|===|<-->|~~~)(\|"[^"]*"\|)? ([A-Za-z][A-Za-z0-9_]*)$')


def check(source: str) -> list[str]:
    """Structural problems of a flowchart this module writes (empty when well-formed)."""
    problems: list[str] = []
    lines = [line.strip() for line in source.splitlines() if line.strip()]
    if lines and lines[0] == INIT:
        lines = lines[1:]
    if not lines or not re.match(r"^flowchart (LR|RL|TB|TD|BT)$", lines[0]):
        problems.append("first line must be `flowchart <direction>`")
    depth = 0
    defined: set[str] = set()
    edges: list[tuple[str, str]] = []
    classes: set[str] = set()
    subgraphs: set[str] = set()  # an edge may end at a subgraph (an AZ)
    for line in lines[1:]:
        if line.startswith("subgraph "):
            depth += 1
            if not (m := re.match(r'^subgraph ([A-Za-z][A-Za-z0-9_]*)\["[^"]*"\]$', line)):
                problems.append(f"bad subgraph line: {line}")
            else:
                subgraphs.add(m.group(1))
        elif line == "end":
            depth -= 1
            if depth < 0:
                problems.append("`end` without a subgraph")
        elif line.startswith("direction "):
            continue
        elif m := re.match(r"^classDef ([a-z]+) [^ ]+$", line):
            classes.add(m.group(1))
        elif m := re.match(r"^class ([A-Za-z0-9_,]+) ([a-z]+)$", line):
            if m.group(2) not in classes:
                problems.append(f"class {m.group(2)} used before its classDef")
            edges += [(node, node) for node in m.group(1).split(",")]
        elif m := _SHAPE.match(line):
            if m.group(1) in defined:
                problems.append(f"node {m.group(1)} defined twice")
            defined.add(m.group(1))
        elif m := _EDGE.match(line):
            edges.append((m.group(1), m.group(4)))
        else:
            problems.append(f"unparsed line: {line}")
    if depth != 0:
        problems.append(f"{depth} subgraph(s) not closed")
    known = defined | subgraphs
    problems += [f"edge {a} --> {b} names an undefined node" for a, b in edges if a not in known or b not in known]
    return problems

"""A Mermaid `flowchart` for a reviewer, drawn from the recorded resource graph.

What a reviewer looks for, readable at a pull request's width (about 880 px): the AZ with the GPUs first, its
GPU groups with their EFA fabric, the data path (GPU nodes to FSx for Lustre to S3), the control plane the nodes
join, and the cluster add-ons grouped under EKS, with the GPU Operator and the EFA device plugin drawn on the
GPU nodes they run on (found from the tolerations in their values). Everything numerous is folded: the
interface endpoints into one node, AZs with nothing but subnets and NAT into one node, the EKS managed add-ons
into one node, GPU groups beyond `MAX_GROUPS_PER_AZ` in an AZ into one node; so the node count stays bounded
however many groups a stack has. In a diff, added, changed and removed nodes are coloured.
"""

from __future__ import annotations

import itertools
import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from trainstack.diff import PlanDiff
from trainstack.engine import RecordedResource, Recording
from trainstack.report import fmt, graph
from trainstack.report.graph import Index, as_int, get
from trainstack.report.names import urn_type
from trainstack.report.summary import NodeGroupSummary, node_group_summary

MAX_GROUPS_PER_AZ = 3  # GPU groups drawn one by one in an AZ; the rest fold into one node
ROW = 3  # nodes side by side in the EKS box: three boxes of about 200 px fit a comment's 880 px
DRA = "aws:fsx/dataRepositoryAssociation:DataRepositoryAssociation"

# GitHub-like colours: green added, amber changed, red removed (dashed).
CLASSES = {
    "added": "fill:#dafbe1,stroke:#1a7f37,color:#0d1117",
    "changed": "fill:#fff8c5,stroke:#9a6700,color:#0d1117",
    "removed": "fill:#ffebe9,stroke:#cf222e,color:#0d1117,stroke-dasharray:4 3",
}


@dataclass
class Node:
    key: str  # stable across two recordings of the same stack: what a diff matches on
    label: str
    shape: str  # rect, cyl (storage), round (add-on), stadium (gateway), hex (fabric)
    container: str  # "", "vpc", "az:<zone>", "eks"
    urns: set[str] = field(default_factory=set)  # the recorded resources the node stands for
    status: str = ""  # added, changed, removed (diffs only)

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
    """Mermaid label text: no double quotes (they end the label), no backticks, pipes or brackets of markdown."""
    return text.replace('"', "'").replace("`", "'").replace("|", "/")


def _shape(node: Node) -> str:
    text = f'"{_label(node.label)}"'
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
    name = g.name.removeprefix(prefix + "-")
    return (
        f"{name}: {g.desired_size} x {g.instance_type}, {g.gpus_desired} {g.accelerator_model} "
        f"(max {g.max_size} nodes), {g.capacity.split(' ')[0]}"
    )


class _Model:
    """The drawn nodes and edges of one recording."""

    def __init__(self, recording: Recording, prefix: str) -> None:
        self.index = Index(recording)
        self.prefix = prefix
        self.nodes: dict[str, Node] = {}
        self.edges: list[Edge] = []
        self.zones: list[str] = []  # AZ subgraphs to draw, GPU AZ first
        self.folded_zones: list[str] = []
        self.vpc_label = ""
        self._build(recording)

    def add(self, key: str, label: str, shape: str, container: str, urns: Iterable[str]) -> Node:
        node = self.nodes.get(key)
        if node is None:
            node = self.nodes[key] = Node(key, label, shape, container)
        node.urns |= set(urns)
        return node

    def _members(self, resource: RecordedResource) -> set[str]:
        """A resource and its component's other resources (a node group stands for its launch template too)."""
        urns = {resource.urn}
        if resource.parent:
            urns |= {r.urn for r in self.index.recording.resources if r.parent == resource.parent}
            urns.add(resource.parent)
        return urns

    def _build(self, recording: Recording) -> None:
        index = self.index
        vpcs = index.of_type(graph.VPC)
        self.vpc_label = f"VPC {get(vpcs[0].inputs, 'cidrBlock') or ''}".strip() if vpcs else ""
        subnet_zone = {s.urn: str(get(s.inputs, "availabilityZone") or "") for s in index.of_type(graph.SUBNET)}
        all_zones = sorted({z for z in subnet_zone.values() if z})

        # GPU groups by AZ, system groups in the VPC.
        groups = [(r, node_group_summary(index, r)) for r in index.of_type(graph.NODE_GROUP)]
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
                self.add(f"ng_{g.name}", label, "rect", "vpc" if vpcs else "", self._members(r))
        file_systems = index.of_type(graph.FSX_LUSTRE)
        fs_zone: dict[str, str] = {}
        for fs in file_systems:
            zones = {subnet_zone.get(s.urn, "") for s in index.refs(fs, "subnetIds", graph.SUBNET)}
            fs_zone[fs.urn] = zones.pop() if len(zones) == 1 else ""
        hyperpods = index.of_type(graph.HYPERPOD_CLUSTER)

        busy = {z for z in gpu_by_zone if z} | {z for z in fs_zone.values() if z}
        self.zones = sorted(busy, key=lambda z: (z not in gpu_by_zone, z not in fs_zone.values(), z))
        self.folded_zones = [z for z in all_zones if z not in busy]

        # Subnets and NAT per drawn AZ fold into one node; the empty AZs into one node together.
        nats = index.of_type(graph.NAT_GATEWAY)
        for zone in self.zones:
            subnets = [u for u, z in subnet_zone.items() if z == zone]
            nat = [n.urn for n in nats if any(s in subnets for s in n.dependencies) or _nat_zone(index, n) == zone]
            self.add(
                f"subnets_{zone}",
                plural(len(subnets), "subnet") + (", NAT gateway" if nat else ""),
                "stadium",
                f"az:{zone}",
                subnets + nat,
            )
        if self.folded_zones:
            subnets = [u for u, z in subnet_zone.items() if z in self.folded_zones]
            nat = [n.urn for n in nats if _nat_zone(index, n) in self.folded_zones]
            self.add(
                "zones_folded",
                f"{', '.join(self.folded_zones)}: {plural(len(subnets), 'subnet')}"
                + (f", {plural(len(nat), 'NAT gateway')}" if nat else "")
                + " (no GPUs, no file system)",
                "stadium",
                "vpc",
                subnets + nat,
            )

        for zone, members in sorted(gpu_by_zone.items()):
            container = f"az:{zone}" if zone else ("vpc" if vpcs else "")
            members.sort(key=lambda m: (-m[1].gpus_max, m[1].name))
            for r, g in members[:MAX_GROUPS_PER_AZ]:
                key = f"ng_{g.name}"
                self.add(key, _group_label(g, self.prefix), "rect", container, self._members(r))
                if g.fabric_gbps_per_node:
                    fabric = (
                        f"EFA fabric: {g.efa_interfaces}/{g.efa_max} interfaces, "
                        f"{fmt.gbps(g.fabric_gbps_desired)} at desired"
                        + (f", placement group {g.placement_group}" if g.placement_group else "")
                    )
                    # The fabric is the launch template's interfaces in the group's placement: the same resources.
                    self.add(f"efa_{g.name}", fabric, "hex", container, self._members(r))
                    self.edges.append(Edge(key, f"efa_{g.name}", "RDMA", "==="))
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

        for fs in file_systems:
            zone = fs_zone[fs.urn]
            capacity = as_int(get(fs.inputs, "storageCapacity")) or 0
            label = f"FSx for Lustre {get(fs.inputs, 'deploymentType') or ''} {capacity / 1024:,.1f} TiB" + (
                ", EFA" if get(fs.inputs, "efaEnabled") else ""
            )
            self.add(f"fs_{fs.name}", label, "cyl", f"az:{zone}" if zone else "vpc", self._members(fs))

        endpoints = index.of_type(graph.VPC_ENDPOINT)
        if endpoints:
            services = sorted(str(get(e.inputs, "serviceName") or e.name).split(".", 3)[-1] for e in endpoints)
            self.add(
                "endpoints",
                f"{plural(len(endpoints), 'VPC endpoint')}: {', '.join(services)}",
                "stadium",
                "vpc" if vpcs else "",
                {e.urn for e in endpoints},
            )

        buckets = index.of_type(*graph.S3_BUCKETS)
        if buckets:
            names = sorted(r.name.removeprefix(self.prefix + "-") for r in buckets)
            self.add("s3", f"S3: {', '.join(names)}", "cyl", "", {b.urn for b in buckets})

        for cluster in index.of_type(graph.EKS_CLUSTER):
            label = f"control plane {get(cluster.inputs, 'version') or ''}".strip()
            self.add("eks", label, "rect", "eks", {cluster.urn})
        addons = index.of_type(graph.EKS_ADDON)
        if addons:
            names = sorted(str(get(a.inputs, "addonName") or a.name) for a in addons)
            self.add("eks_addons", f"EKS add-ons: {', '.join(names)}", "round", "eks", {a.urn for a in addons})
        for release in index.of_type(graph.HELM_RELEASE, graph.HELM_CHART):
            key = f"helm_{_chart(release)}"
            self.add(
                key, f"{_chart(release)} {get(release.inputs, 'version') or ''}".strip(), "round", "eks", {release.urn}
            )
            tolerated = _tolerated_keys(release.inputs.get("values"))
            for _, g in groups:
                taints = {t.split("=", 1)[0] for t in g.taints}
                if g.gpu and taints & tolerated and f"ng_{g.name}" in self.nodes:
                    self.edges.append(Edge(key, f"ng_{g.name}", "runs on", "-.->"))

        for hp in hyperpods:
            count = sum(as_int(get(g, "instanceCount")) or 0 for g in hp.inputs.get("instanceGroups") or [])
            self.add("hyperpod", f"SageMaker HyperPod: {count} instances", "rect", "vpc" if vpcs else "", {hp.urn})
            if get(hp.inputs, "orchestrator", "eks"):
                self.edges.append(Edge("eks", "hyperpod", "orchestrates"))

        # The data path and the control plane: every drawn node group joins EKS and mounts each file system.
        compute = [k for k in self.nodes if k.startswith("ng_")] + (["hyperpod"] if hyperpods else [])
        for key in compute:
            if "eks" in self.nodes and key != "hyperpod":
                self.edges.append(Edge("eks", key, "manages"))
            if key == "hyperpod" or not self.nodes[key].label.startswith("system"):
                self.edges += [Edge(key, f"fs_{fs.name}", "Lustre") for fs in file_systems]
        for dra in index.of_type(DRA):
            for fs in index.refs(dra, "fileSystemId", graph.FSX_LUSTRE):
                if "s3" in self.nodes:
                    self.nodes[f"fs_{fs.name}"].urns.add(dra.urn)
                    self.edges.append(Edge(f"fs_{fs.name}", "s3", "import / export", "<-->"))


def _layout(model: _Model) -> None:
    """Invisible links that stack nodes which have no edge between them, so the chart grows down, not sideways:
    the EKS add-ons in rows of `ROW` above the control plane, the VPC's own nodes (system nodes, folded AZs,
    endpoints) in one column."""
    # The control plane goes last, so everything it manages ranks below the whole EKS box, not beside it.
    eks = sorted((k for k, n in model.nodes.items() if n.container == "eks"), key=lambda k: k == "eks")
    model.edges += [Edge(eks[i], eks[i + ROW], "", "~~~") for i in range(len(eks) - ROW)]
    vpc = [k for k, n in model.nodes.items() if n.container == "vpc"]
    model.edges += [Edge(a, b, "", "~~~") for a, b in itertools.pairwise(vpc)]


def _nat_zone(index: Index, nat: RecordedResource) -> str:
    zones = {str(get(s.inputs, "availabilityZone") or "") for s in index.refs(nat, "subnetId", graph.SUBNET)}
    return zones.pop() if len(zones) == 1 else ""


def _mark(model: _Model, diff: PlanDiff, before: Recording | None, prefix: str) -> None:
    """Colour what the diff touches; draw what it removes (from the baseline recording) as removed nodes."""
    added = {urn for urn, _ in diff.added}
    changed = {c.urn for c in diff.changed}
    for node in model.nodes.values():
        own = {u for u in node.urns if not urn_type(u).startswith("trainstack:")}  # components have no cloud state
        if own and own <= added:
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

    lines = ["flowchart TB"]

    def draw(container: str, indent: str) -> None:
        lines.extend(f"{indent}{n.id}{_shape(n)}" for n in by_container.get(container, []))

    if "eks" in {n.container for n in nodes.values()}:
        lines.append('  subgraph eks_cluster["EKS"]')
        draw("eks", "    ")
        lines.append("  end")
    if model.vpc_label or any(n.container.startswith(("vpc", "az:")) for n in nodes.values()):
        lines.append(f'  subgraph vpc["{_label(model.vpc_label or "VPC")}"]')
        for zone in model.zones:
            lines.append(f'    subgraph az_{re.sub(r"[^A-Za-z0-9]", "_", zone)}["{_label(zone)}"]')
            draw(f"az:{zone}", "      ")
            lines.append("    end")
        draw("vpc", "    ")
        lines.append("  end")
    draw("", "  ")
    seen: set[tuple[str, str]] = set()
    for edge in model.edges:
        if edge.source not in nodes or edge.target not in nodes or (edge.source, edge.target) in seen:
            continue
        seen.add((edge.source, edge.target))
        label = f'|"{_label(edge.label)}"|' if edge.label else ""
        lines.append(f"  {nodes[edge.source].id} {edge.style}{label} {nodes[edge.target].id}")
    marked = {status: [n.id for n in nodes.values() if n.status == status] for status in CLASSES}
    for status, ids in marked.items():
        if ids:
            lines.append(f"  classDef {status} {CLASSES[status]}")
            lines.append(f"  class {','.join(ids)} {status}")
    return "\n".join(lines)


def _cluster_prefix(recording: Recording) -> str:
    clusters = Index(recording).of_type(graph.EKS_CLUSTER)
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
    if not lines or not re.match(r"^flowchart (LR|RL|TB|TD|BT)$", lines[0]):
        problems.append("first line must be `flowchart <direction>`")
    depth = 0
    defined: set[str] = set()
    edges: list[tuple[str, str]] = []
    classes: set[str] = set()
    for line in lines[1:]:
        if line.startswith("subgraph "):
            depth += 1
            if not re.match(r'^subgraph [A-Za-z][A-Za-z0-9_]*\["[^"]*"\]$', line):
                problems.append(f"bad subgraph line: {line}")
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
    problems += [f"edge {a} --> {b} names an undefined node" for a, b in edges if a not in defined or b not in defined]
    return problems

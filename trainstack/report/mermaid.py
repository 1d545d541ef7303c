"""A Mermaid `flowchart` of the architecture, drawn from the recorded resource graph.

Nodes are the resources a reviewer thinks in (VPC, subnets grouped by AZ, NAT gateways, interface endpoints,
the EKS cluster, node groups, FSx, S3, Helm add-ons, SageMaker HyperPod); every other recorded resource is
transparent: an edge A --> B means A depends on B, directly or through resources that are not drawn (a node
group reaches its subnet through its launch template, a Helm release reaches the cluster through the
Kubernetes provider). Containment (VPC > AZ > subnet, node group, file system) replaces edges to subnets.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass

from trainstack.engine import RecordedResource, Recording
from trainstack.report import graph
from trainstack.report.graph import Index, as_int, get
from trainstack.report.summary import node_group_summary

_DRAWN = {
    graph.VPC,
    graph.SUBNET,
    graph.NAT_GATEWAY,
    graph.VPC_ENDPOINT,
    graph.EKS_CLUSTER,
    graph.NODE_GROUP,
    graph.FSX_LUSTRE,
    *graph.S3_BUCKETS,
    graph.HELM_RELEASE,
    graph.HELM_CHART,
    graph.HYPERPOD_CLUSTER,
}
_CONTAINERS = {graph.VPC, graph.SUBNET}
_IN_VPC = {graph.VPC_ENDPOINT, graph.NODE_GROUP, graph.HYPERPOD_CLUSTER}
_ZONAL = {graph.SUBNET, graph.NAT_GATEWAY, graph.NODE_GROUP, graph.FSX_LUSTRE}
NODE_ID = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class Node:
    id: str
    label: str
    shape: str  # rect, cyl (storage), round (add-on), stadium (gateway)
    urn: str
    zone: str | None  # the AZ the node sits in, when it has one


def _label(text: str) -> str:
    """Mermaid label text: no double quotes (they end the label), no backticks or pipes."""
    return text.replace('"', "'").replace("`", "'").replace("|", "/")


def _shape(node: Node) -> str:
    text = f'"{_label(node.label)}"'
    return {
        "cyl": f"[({text})]",
        "round": f"({text})",
        "stadium": f"([{text}])",
    }.get(node.shape, f"[{text}]")


def _zone_of(index: Index, resource: RecordedResource) -> str | None:
    """The one AZ a resource sits in; None when it has none or spans several (then it is drawn in the VPC)."""
    zone = get(resource.inputs, "availabilityZone")
    if zone:
        return str(zone)
    zones: set[str] = set()
    for prop in ("subnetId", "subnetIds", "launchTemplate"):
        for target in index.refs(resource, prop):
            subnets = [target] if target.type == graph.SUBNET else []
            if target.type == graph.LAUNCH_TEMPLATE:
                subnets = index.refs(target, "networkInterfaces", graph.SUBNET)
            zones |= {str(z) for s in subnets if (z := get(s.inputs, "availabilityZone"))}
    return zones.pop() if len(zones) == 1 else None


def _describe(index: Index, r: RecordedResource) -> tuple[str, str]:
    """(label, shape) of a drawn resource."""
    i = r.inputs
    if r.type == graph.VPC:
        return f"VPC {get(i, 'cidrBlock') or ''}".strip(), "rect"
    if r.type == graph.SUBNET:
        public = bool(get(i, "mapPublicIpOnLaunch")) or "public" in r.name
        return f"{'public' if public else 'private'} subnet {get(i, 'cidrBlock') or r.name}", "rect"
    if r.type == graph.NAT_GATEWAY:
        return "NAT gateway", "stadium"
    if r.type == graph.VPC_ENDPOINT:
        # com.amazonaws.<region>.ecr.api -> ecr.api
        service = str(get(i, "serviceName") or r.name).split(".", 3)[-1]
        return f"endpoint {service}", "stadium"
    if r.type == graph.EKS_CLUSTER:
        return f"EKS {get(i, 'name') or r.name} {get(i, 'version') or ''}".strip(), "rect"
    if r.type == graph.NODE_GROUP:
        g = node_group_summary(index, r)
        efa = f", {g.efa_interfaces} EFA" if g.efa_interfaces else ""
        sizes = f"{g.desired_size} x {g.instance_type} (min {g.min_size}, max {g.max_size})"
        return f"node group {g.name}: {sizes}{efa}", "rect"
    if r.type == graph.FSX_LUSTRE:
        return (
            f"FSx for Lustre {get(i, 'deploymentType') or ''} {as_int(get(i, 'storageCapacity')) or 0:,} GiB",
            "cyl",
        )
    if r.type in graph.S3_BUCKETS:
        return f"S3 {get(i, 'bucket') or r.name}", "cyl"
    if r.type in (graph.HELM_RELEASE, graph.HELM_CHART):
        chart = str(get(i, "chart") or r.name).rstrip("/").rsplit("/", 1)[-1]  # oci://.../charts/kueue -> kueue
        return f"Helm {chart} {get(i, 'version') or ''}".strip(), "round"
    if r.type == graph.HYPERPOD_CLUSTER:
        groups = i.get("instanceGroups") or []
        count = sum(as_int(get(g, "instanceCount")) or 0 for g in groups if isinstance(g, dict))
        return f"SageMaker HyperPod {get(i, 'clusterName') or r.name}: {count} instances", "rect"
    return r.name, "rect"


def _depends_on(index: Index, r: RecordedResource, drawn: set[str]) -> set[str]:
    """The drawn resources `r` reaches through dependencies and providers, crossing undrawn ones only."""
    seen: set[str] = set()
    found: set[str] = set()
    stack = [*r.dependencies, r.provider_urn]
    while stack:
        urn = stack.pop()
        if not urn or urn in seen:
            continue
        seen.add(urn)
        if urn in drawn:
            found.add(urn)
            continue
        target = index.by_urn.get(urn)
        if target is not None:
            stack += [*target.dependencies, target.provider_urn]
    found.discard(r.urn)
    return found


def _edge_sources(recording: Recording, drawn: set[str]) -> list[tuple[RecordedResource, RecordedResource]]:
    """(drawn resource, resource whose dependencies it shows): each drawn resource for itself, plus the
    undrawn siblings of a component's only drawn resource (a file system's data repository association
    shows as the file system's link to its bucket)."""
    pairs = [(r, r) for r in recording.resources if r.urn in drawn]
    by_parent: dict[str, list[RecordedResource]] = defaultdict(list)
    for r in recording.resources:
        by_parent[r.parent].append(r)
    for siblings in by_parent.values():
        anchors = [r for r in siblings if r.urn in drawn]
        if len(anchors) == 1 and anchors[0].parent:
            pairs += [(anchors[0], r) for r in siblings if r.urn not in drawn and r.custom]
    return pairs


def flowchart(recording: Recording) -> str:
    """The Mermaid source (without the code fence)."""
    index = Index(recording)
    resources = [r for r in recording.resources if r.type in _DRAWN]
    nodes: dict[str, Node] = {}
    for n, r in enumerate(resources):
        label, shape = _describe(index, r)
        zone = _zone_of(index, r) if r.type in _ZONAL else None
        nodes[r.urn] = Node(id=f"n{n}", label=label, shape=shape, urn=r.urn, zone=zone)

    lines = ["flowchart LR"]
    vpcs = [r for r in resources if r.type == graph.VPC][:1]  # trainstack builds one VPC per stack
    in_vpc = {u for u, node in nodes.items() if node.zone} if vpcs else set()
    for v, vpc in enumerate(vpcs):
        lines.append(f'  subgraph vpc{v}["{_label(nodes[vpc.urn].label)}"]')
        by_zone: dict[str, list[Node]] = defaultdict(list)
        for node in nodes.values():
            if node.zone:
                by_zone[node.zone].append(node)
        for z, zone in enumerate(sorted(by_zone)):
            lines.append(f'    subgraph az{v}_{z}["{_label(zone)}"]')
            lines.append("      direction TB")
            lines += [f"      {node.id}{_shape(node)}" for node in by_zone[zone]]
            lines.append("    end")
        # Endpoints, multi-AZ node groups and HyperPod sit in the VPC without one AZ.
        spanning = [r for r in resources if r.type in _IN_VPC and not nodes[r.urn].zone]
        for r in spanning:
            lines.append(f"    {nodes[r.urn].id}{_shape(nodes[r.urn])}")
            in_vpc.add(r.urn)
        lines.append("  end")
        in_vpc.add(vpc.urn)
    for urn, node in nodes.items():
        if urn not in in_vpc:
            lines.append(f"  {node.id}{_shape(node)}")

    drawn = set(nodes)
    edges: set[tuple[str, str]] = set()
    for source, r in _edge_sources(recording, drawn):
        if source.type in _CONTAINERS or source.type == graph.VPC_ENDPOINT:
            continue
        for target in _depends_on(index, r, drawn):
            if target == source.urn or index.by_urn[target].type in _CONTAINERS:
                continue  # containment already shows it
            edges.add((nodes[source.urn].id, nodes[target].id))
    edges = transitive_reduction(edges)
    lines += [f"  {a} --> {b}" for a, b in sorted(edges, key=lambda e: (int(e[0][1:]), int(e[1][1:])))]
    return "\n".join(lines)


def transitive_reduction(edges: set[tuple[str, str]]) -> set[tuple[str, str]]:
    """Drop a --> c when c is reachable from a another way (a --> b --> c): the diagram shows the order."""
    succ: dict[str, set[str]] = defaultdict(set)
    for a, b in edges:
        succ[a].add(b)

    def reachable(start: str, skip: tuple[str, str]) -> set[str]:
        seen: set[str] = set()
        todo = [b for b in succ[start] if (start, b) != skip]
        while todo:
            node = todo.pop()
            if node not in seen:
                seen.add(node)
                todo += succ[node]
        return seen

    return {(a, b) for a, b in edges if b not in reachable(a, (a, b))}


def check(source: str) -> list[str]:
    """Structural problems of a flowchart this module writes (empty when well-formed)."""
    problems: list[str] = []
    lines = [line.strip() for line in source.splitlines() if line.strip()]
    if not lines or not re.match(r"^flowchart (LR|RL|TB|TD|BT)$", lines[0]):
        problems.append("first line must be `flowchart <direction>`")
    depth = 0
    defined: set[str] = set()
    shape = re.compile(r'^([A-Za-z][A-Za-z0-9_]*)(\[\("[^"]*"\)\]|\(\["[^"]*"\]\)|\("[^"]*"\)|\["[^"]*"\])$')
    edge = re.compile(r"^([A-Za-z][A-Za-z0-9_]*) --> ([A-Za-z][A-Za-z0-9_]*)$")
    edges: list[tuple[str, str]] = []
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
        elif m := shape.match(line):
            if m.group(1) in defined:
                problems.append(f"node {m.group(1)} defined twice")
            defined.add(m.group(1))
        elif m := edge.match(line):
            edges.append((m.group(1), m.group(2)))
        else:
            problems.append(f"unparsed line: {line}")
    if depth != 0:
        problems.append(f"{depth} subgraph(s) not closed")
    problems += [f"edge {a} --> {b} names an undefined node" for a, b in edges if a not in defined or b not in defined]
    return problems

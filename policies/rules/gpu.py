"""GPU and EFA rules: what generic packs do not know about RDMA fabrics and accelerated node groups.

EFA facts (EC2 User Guide, "Elastic Fabric Adapter"): EFA traffic stays inside one subnet/AZ, instances
belong in a cluster placement group (except a reservation made without one), the security group must allow
all traffic to and from itself, and an instance gets one EFA interface per EFA-capable network card.
"""

from __future__ import annotations

from pulumi_policy import PolicyResource, Severity, StackValidationArgs

from ..facts import ACCELERATED_AMI_TYPES, TAINT_KEYS, Instance, instance
from .base import (
    EKS_CLUSTER,
    PLACEMENT_GROUP,
    SECURITY_GROUP,
    SUBNET,
    Graph,
    Report,
    accelerated_node_groups,
    efa_interfaces,
    efa_node_groups,
    get,
    graph,
    has,
    instance_types_of,
    items,
    number,
    stack_rule,
)
from .network import allows_all_self


def _reserved(template: PolicyResource) -> bool:
    """Whether the launch template targets a capacity reservation: an ODCR or a Capacity Block, which both name
    it in capacityReservationTarget (EC2 refuses a capacity-block market without one, and the contract tier's
    capacity-block rule reports such a template)."""
    return get(template.props, "capacityReservationSpecification.capacityReservationTarget") is not None


def _efa(args: StackValidationArgs) -> tuple[Graph, list[tuple[PolicyResource, PolicyResource]]]:
    g = graph(args)
    groups = efa_node_groups(g)
    if not groups:
        args.not_applicable("no node group with EFA interfaces")
    return g, groups


@stack_rule(
    name="efa-cluster-placement",
    description="EFA node groups launch in a cluster placement group, unless they run on a reservation "
    "(forcing a group onto a reservation made without one breaks launches): EFA needs the low-latency, "
    "non-blocking network of one placement group (AWS Batch and ParallelCluster EFA docs).",
    severity=Severity.HIGH,
)
def efa_cluster_placement(args: StackValidationArgs, report: Report) -> None:
    _, groups = _efa(args)
    for group, template in groups:
        placement_groups = Graph.deps(template, "placement", PLACEMENT_GROUP)
        named = has(get(template.props, "placement"), "groupName")
        if _reserved(template) and not named:
            continue  # the reservation decides placement
        if not placement_groups:
            if named:
                report(
                    f"{template.name} names a placement group that is not managed in this stack; its "
                    "strategy cannot be checked.",
                    template.urn,
                )
            else:
                report(
                    f"node group {group.name}: launch template {template.name} has EFA interfaces but no "
                    "placement group.",
                    template.urn,
                )
            continue
        for pg in placement_groups:
            if get(pg.props, "strategy") != "cluster":
                report(
                    f"{template.name} uses placement group {pg.name} with strategy "
                    f"{get(pg.props, 'strategy')!r}; EFA needs 'cluster'.",
                    template.urn,
                )


@stack_rule(
    name="efa-single-subnet",
    description="An EFA node group spans exactly one subnet (one AZ): EFA's OS-bypass traffic does not "
    "cross subnets, so nodes in a second subnet silently fall back to TCP (ParallelCluster EFA docs).",
    severity=Severity.HIGH,
)
def efa_single_subnet(args: StackValidationArgs, report: Report) -> None:
    _, groups = _efa(args)
    for group, _ in groups:
        subnets = Graph.deps(group, "subnetIds", SUBNET)
        count = len(subnets) if subnets else len(items(get(group.props, "subnetIds")))
        azs = {str(get(s.props, "availabilityZone")) for s in subnets}
        if count != 1:
            report(
                f"node group {group.name} spans {count} subnets ({', '.join(sorted(azs)) or 'AZs unknown'}); "
                "EFA needs exactly one.",
                group.urn,
            )


@stack_rule(
    name="efa-sg-self-all",
    description="A security group on the EFA interfaces allows all traffic (protocol -1) from itself "
    "(ingress) and to itself (egress); with anything less NCCL hangs or falls back to sockets (EC2 User "
    "Guide, 'Prepare an EFA-enabled security group').",
    severity=Severity.CRITICAL,
)
def efa_sg_self_all(args: StackValidationArgs, report: Report) -> None:
    g, groups = _efa(args)
    for group, template in groups:
        groups_ = Graph.deps(template, "networkInterfaces", SECURITY_GROUP)
        clusters = Graph.deps(template, "networkInterfaces", EKS_CLUSTER)
        verdicts = {sg.name: allows_all_self(g, sg) for sg in groups_}
        if any(all(v) for v in verdicts.values()):
            continue
        detail = "; ".join(f"{name}: ingress-self {i}, egress-self {e}" for name, (i, e) in verdicts.items())
        extra = " (the EKS cluster security group cannot be checked here)" if clusters else ""
        report(
            f"node group {group.name}: no security group on {template.name}'s EFA interfaces allows all "
            f"traffic to and from itself [{detail or 'no security group of the stack'}]{extra}.",
            template.urn,
        )


@stack_rule(
    name="efa-interface-count",
    description="An EFA launch template configures one EFA interface on every EFA network card the instance "
    "has (p5/p5e 32, p5en 16, p6-b200 8, p4d 4), on distinct cards, and the primary interface (card 0, "
    "device 0) is not efa-only: fewer interfaces cap the fabric bandwidth (EC2 'Maximize network bandwidth "
    "on accelerated instances').",
    severity=Severity.MEDIUM,
)
def efa_interface_count(args: StackValidationArgs, report: Report) -> None:
    _, groups = _efa(args)
    for group, template in groups:
        types = instance_types_of(group)
        facts = instance(types[0]) if len(types) == 1 else None
        if facts is None:
            continue  # efa-instance-supported reports unknown or mixed types
        nics = efa_interfaces(template.props)
        cards = [int(number(get(n, "networkCardIndex")) or 0) for n in nics]
        if len(nics) != facts.max_efa_interfaces:
            report(
                f"{template.name} has {len(nics)} EFA interfaces; {types[0]} supports {facts.max_efa_interfaces}.",
                template.urn,
            )
        if len(set(cards)) != len(cards):
            report(f"{template.name} puts two EFA interfaces on one network card ({sorted(cards)}).", template.urn)
        elif set(cards) != set(facts.efa_cards) and len(nics) == facts.max_efa_interfaces:
            report(
                f"{template.name} uses network cards {sorted(cards)}; {types[0]}'s EFA cards are "
                f"{list(facts.efa_cards)}.",
                template.urn,
            )
        for nic in items(get(template.props, "networkInterfaces")):
            primary = (number(get(nic, "networkCardIndex")) or 0) == 0 and (number(get(nic, "deviceIndex")) or 0) == 0
            if primary and get(nic, "interfaceType") == "efa-only":
                report(
                    f"{template.name}: the primary interface (card 0, device 0) is efa-only; it must carry IP.",
                    template.urn,
                )


@stack_rule(
    name="efa-instance-supported",
    description="An EFA node group has exactly one instance type and that type supports EFA: a cluster "
    "placement group is filled from one type, and a type without EFA fails to launch with EFA interfaces.",
    severity=Severity.HIGH,
)
def efa_instance_supported(args: StackValidationArgs, report: Report) -> None:
    _, groups = _efa(args)
    for group, _ in groups:
        types = instance_types_of(group)
        if len(types) != 1:
            report(f"node group {group.name} has instance types {types}; an EFA group needs exactly one.", group.urn)
            continue
        facts = instance(types[0])
        if facts is None or facts.max_efa_interfaces == 0:
            report(f"node group {group.name}: {types[0]} does not support EFA.", group.urn)


@stack_rule(
    name="efa-no-spot",
    description="EFA node groups do not run on Spot: a multi-node job dies with its first reclaimed node, "
    "and Spot cannot be packed into one placement group reliably.",
    severity=Severity.HIGH,
)
def efa_no_spot(args: StackValidationArgs, report: Report) -> None:
    _, groups = _efa(args)
    for group, _ in groups:
        if get(group.props, "capacityType") == "SPOT":
            report(f"node group {group.name} is an EFA group on SPOT capacity.", group.urn)


def _accelerated(args: StackValidationArgs) -> tuple[Graph, list[tuple[PolicyResource, Instance]]]:
    g = graph(args)
    groups = accelerated_node_groups(g)
    if not groups:
        args.not_applicable("no GPU or Trainium node group")
    return g, groups


@stack_rule(
    name="gpu-taint",
    description="GPU (and Trainium) node groups carry the accelerator taint (nvidia.com/gpu or "
    "aws.amazon.com/neuron, NO_SCHEDULE), so ordinary pods never land on the most expensive nodes (EKS "
    "User Guide, taints on managed node groups).",
    severity=Severity.MEDIUM,
)
def gpu_taint(args: StackValidationArgs, report: Report) -> None:
    _, groups = _accelerated(args)
    for group, facts in groups:
        key = TAINT_KEYS[facts.accelerator]
        taints = [(get(t, "key"), get(t, "effect")) for t in items(get(group.props, "taints"))]
        if (key, "NO_SCHEDULE") not in taints:
            report(f"node group {group.name} lacks the taint {key}:NO_SCHEDULE (has {taints}).", group.urn)


@stack_rule(
    name="gpu-ami-type",
    description="Accelerated node groups use an EKS-optimized accelerated AMI (AL2023 or Bottlerocket "
    "NVIDIA, AL2023 Neuron), which ships a driver matched to the kernel; a standard AMI has no driver.",
    severity=Severity.MEDIUM,
)
def gpu_ami_type(args: StackValidationArgs, report: Report) -> None:
    _, groups = _accelerated(args)
    for group, facts in groups:
        ami = get(group.props, "amiType")
        allowed = sorted(ACCELERATED_AMI_TYPES[facts.accelerator])
        if ami not in allowed:
            report(f"node group {group.name} uses amiType {ami!r}; use one of {allowed}.", group.urn)

"""GPU and EFA rules (the `trainstack:gpu` area): what generic packs do not know about RDMA fabrics and
accelerated node groups, and the floors that keep a fleet of them usable (EFA where the type has it, the NCCL
validation job, a bounded update budget).

EFA facts (EC2 User Guide, "Elastic Fabric Adapter"): EFA traffic stays inside one subnet/AZ, instances
belong in a cluster placement group (except a reservation made without one), the security group must allow
all traffic to and from itself, and an instance gets one EFA interface per EFA-capable network card."""

from __future__ import annotations

from typing import Any

from pulumi_policy import PolicyResource, Severity, StackValidationArgs

from ..facts import ACCELERATED_AMI_TYPES, TAINT_KEYS, Instance, instance
from ..facts_generated import (
    EKS_CLUSTER,
    PLACEMENT_GROUP,
    SECURITY_GROUP,
    SUBNET,
    TRAIN_JOB,
)
from .base import (
    Graph,
    Report,
    accelerated_node_groups,
    efa_interfaces,
    efa_node_groups,
    get,
    graph,
    has,
    instance_types_of,
    int_config,
    items,
    launch_template_of,
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


@stack_rule(
    name="dev-scale-to-zero",
    description="Accelerated node groups can scale to zero (minSize 0, and desiredSize 0 at creation where "
    "required), so an idle development cluster costs nothing for GPUs.",
    severity=Severity.LOW,
    config={"requireDesiredZero": {"type": "boolean", "default": True, "description": "Also require desiredSize 0."}},
)
def dev_scale_to_zero(args: StackValidationArgs, report: Report) -> None:
    groups = accelerated_node_groups(graph(args))
    if not groups:
        args.not_applicable("no GPU node group")
    for group, _ in groups:
        minimum = number(get(group.props, "scalingConfig.minSize"))
        desired = number(get(group.props, "scalingConfig.desiredSize"))
        if minimum != 0:
            report(f"node group {group.name} has minSize {minimum}; it cannot scale to zero.", group.urn)
        elif args.get_config().get("requireDesiredZero", True) and desired != 0:
            report(f"node group {group.name} starts with desiredSize {desired}; start at 0.", group.urn)


NCCL_WORKLOADS = (
    TRAIN_JOB,
    "kubernetes:kubeflow.org/v2beta1:MPIJob",
)


@stack_rule(
    name="node-update-budget",
    floor="staging",
    description="An accelerated node group replaces at most the floor's share of its nodes at a time during "
    "updates: a managed node group update drains maxUnavailable nodes at once, and every drained node kills "
    "the multi-node jobs that span it (EKS User Guide, managed node group update behaviour).",
    severity=Severity.MEDIUM,
    config={
        "maxUnavailablePercent": {
            "type": "number",
            "minimum": 1,
            "maximum": 100,
            "default": 25,
            "description": "Largest share of a GPU node group's maxSize an update may take down at once (one node "
            "is always allowed). Why: a fleet-wide update must not stop every training job at once. Source: EKS "
            "UpdateConfig maxUnavailable / maxUnavailablePercentage.",
        }
    },
)
def node_update_budget(args: StackValidationArgs, report: Report) -> None:
    groups = accelerated_node_groups(graph(args))
    if not groups:
        args.not_applicable("no GPU or Trainium node group")
    limit = float(args.get_config().get("maxUnavailablePercent", 25))
    for group, _ in groups:
        size = number(get(group.props, "scalingConfig.maxSize")) or 0
        count = number(get(group.props, "updateConfig.maxUnavailable"))
        percent = number(get(group.props, "updateConfig.maxUnavailablePercentage"))
        share = percent if percent is not None else (100 * count / size if count and size else 0)
        if share > limit and not (percent is None and count == 1):
            report(
                f"node group {group.name} may replace {share:.0f}% of its {int(size)} nodes at once "
                f"(gpu_node_groups[].max_unavailable {int(count or 0)}); the floor here allows {limit:g}%.",
                group.urn,
            )


# -------------------------------------------------------------------------------------- fabric performance


@stack_rule(
    name="efa-on-capable-groups",
    floor="staging",
    description="An accelerated node group whose instance type has EFA and that spans nodes (maxSize of at least "
    "the floor) runs with EFA: without it NCCL sends every all-reduce over TCP sockets at a fraction of the "
    "fabric's bandwidth, the job still runs, and nobody is told (EC2 User Guide, EFA; aws-ofi-nccl).",
    severity=Severity.HIGH,
    config={
        "minNodes": {
            "type": "integer",
            "minimum": 2,
            "default": 2,
            "description": "maxSize from which an EFA-capable group must use EFA. Why: a single-node job needs no "
            "fabric, two nodes already all-reduce across it. Source: EC2 User Guide, EFA supported instance types.",
        }
    },
)
def efa_on_capable_groups(args: StackValidationArgs, report: Report) -> None:
    capable: list[PolicyResource] = []
    for group, facts in accelerated_node_groups(graph(args)):
        if facts.max_efa_interfaces:
            capable.append(group)
    if not capable:
        args.not_applicable("no node group of an EFA-capable instance type")
    floor = int_config(args, "minNodes", 2)
    for group in capable:
        size = int(number(get(group.props, "scalingConfig.maxSize")) or 0)
        template = launch_template_of(group)
        has_efa = template is not None and bool(efa_interfaces(template.props))
        if size >= floor and not has_efa:
            types = ", ".join(instance_types_of(group))
            report(
                f"node group {group.name} runs up to {size} {types} nodes without EFA (gpu_node_groups[].efa_enabled "
                "false): multi-node jobs would fall back to TCP sockets. Enable EFA, or keep the group to one node.",
                group.urn,
            )


def _nvidia_efa_groups(g: Graph) -> list[PolicyResource]:
    out: list[PolicyResource] = []
    for group, facts in accelerated_node_groups(g):
        template = launch_template_of(group)
        if facts.accelerator == "nvidia" and template is not None and efa_interfaces(template.props):
            out.append(group)
    return out


@stack_rule(
    name="fabric-validation",
    floor="staging",
    description="A cluster with NVIDIA EFA node groups plans a multi-node job over them, trainstack's NCCL "
    "all-reduce validation job (kubernetes.validation) or another TrainJob or MPIJob: it is the only check that "
    "proves traffic goes over EFA and not TCP sockets before "
    "a long run starts (AWS EFA on EKS guide, 'Run an NCCL test'; NVIDIA/nvcf #1349 'prove traffic actually "
    "goes over EFA').",
    severity=Severity.MEDIUM,
)
def fabric_validation(args: StackValidationArgs, report: Report) -> None:
    g = graph(args)
    groups = _nvidia_efa_groups(g)
    if not groups:
        args.not_applicable("no NVIDIA node group with EFA")
    if not g.of_type(*NCCL_WORKLOADS):
        for group in groups:
            report(
                f"no NCCL validation job proves node group {group.name}'s EFA fabric: set "
                "kubernetes.validation.enabled true.",
                group.urn,
            )


# The GPU Operator's per-node switches (NVIDIA/gpu-operator v25.3.4, controllers/state_manager.go: the operator
# labels each GPU node `nvidia.com/gpu.deploy.<operand>=true` but keeps a value already there, and removes them all
# when `nvidia.com/gpu.deploy.operands=false`; `nvidia.com/gpu.workload.config` picks the VM operand sets instead
# of the container ones).
OPERANDS_LABEL = "nvidia.com/gpu.deploy.operands"
WORKLOAD_CONFIG_LABEL = "nvidia.com/gpu.workload.config"
OPERAND_LABEL_PREFIX = "nvidia.com/gpu.deploy."


# The operands no group may opt out of; when a config leaves the list out, its schema default (what the policy
# tables document) applies, never an empty list.
_OPT_OUTS_CONFIG: dict[str, Any] = {
    "guardedOperands": {
        "type": "array",
        "items": {"type": "string"},
        "default": [
            "device-plugin",
            "dcgm",
            "dcgm-exporter",
            "gpu-feature-discovery",
            "operator-validator",
            "node-status-exporter",
        ],
        "description": "Operands a node group may not switch off. Why: the device plugin makes the GPUs "
        "requestable, DCGM and its exporter feed the GPU alerts, the validator holds pods until the stack "
        "works. Source: NVIDIA/gpu-operator v25.3.4 controllers/state_manager.go gpuStateLabels.",
    }
}


@stack_rule(
    name="gpu-operator-node-opt-outs",
    description="No NVIDIA node group on an AL2023 AMI carries the GPU Operator's per-node opt-outs "
    "(nvidia.com/gpu.deploy.<operand> other than true, nvidia.com/gpu.deploy.operands, "
    "nvidia.com/gpu.workload.config): on AL2023 the operator runs the device plugin, DCGM and its exporter, so an "
    "opt-out label silently leaves the group's GPUs unschedulable or unwatched (no Xid or ECC alert). Bottlerocket's "
    "required device-plugin opt-out is gpu-operator-values' concern.",
    severity=Severity.HIGH,
    config=_OPT_OUTS_CONFIG,
)
def gpu_operator_node_opt_outs(args: StackValidationArgs, report: Report) -> None:
    g = graph(args)
    al2023 = {t for t in ACCELERATED_AMI_TYPES["nvidia"] if t.startswith("AL2023")}
    groups = [group for group, _ in accelerated_node_groups(g) if str(get(group.props, "amiType", "")) in al2023]
    if not groups:
        args.not_applicable("no NVIDIA node group on an AL2023 AMI")
    default = _OPT_OUTS_CONFIG["guardedOperands"]["default"]
    guarded = {str(o) for o in args.get_config().get("guardedOperands", default)}
    for group in groups:
        labels = get(group.props, "labels", {})
        for key in sorted(labels) if hasattr(labels, "keys") else []:
            value = str(labels[key])
            operand = key.removeprefix(OPERAND_LABEL_PREFIX)
            if key in (OPERANDS_LABEL, WORKLOAD_CONFIG_LABEL) or (
                key.startswith(OPERAND_LABEL_PREFIX) and operand in guarded and value != "true"
            ):
                report(
                    f"node group {group.name} carries {key}={value} (gpu_node_groups[].labels): the GPU Operator "
                    "then skips its operands on these nodes; remove the label.",
                    group.urn,
                )

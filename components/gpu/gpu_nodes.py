"""`GpuNodeGroup`: an EKS managed node group of accelerated instances with its own launch template.

Per group: a cluster placement group (created, referenced from the reservation, or none), a launch template
(every EFA interface the type supports, IMDSv2, gp3 encrypted with the cluster's node-volume KMS key, tags on
instances, volumes and interfaces, capacity reservation / Capacity Block targeting, nodeadm or Bottlerocket
user data) and the node group (one subnet, labels, the accelerator taint, a rolling update config).

Decisions a reader may look for:
- Desired size is in `ignore_changes`: after creation the cluster autoscaler, an operator scaling a Capacity
  Block group to zero, or `aws eks update-nodegroup-config` own it; re-applying the config must never
  terminate GPU nodes mid-job. min and max stay managed, and bound it. Change desired size outside Pulumi.
- The node group is replaced delete-first: a replacement built alongside the old group would need twice the
  GPUs, which a reservation sized to the group does not have (and On-Demand p5 capacity rarely does).
- Reserved groups update with EKS's MINIMAL strategy (terminate, then launch) for the same reason; the
  DEFAULT strategy launches first (EKS API reference, NodegroupUpdateConfig.updateStrategy).
- The launch template names no AMI, so EKS picks the accelerated AMI from `ami_type` and merges its bootstrap
  with ours; a custom `ami_id` goes on the template instead, with no amiType, version or releaseVersion on the
  node group (EKS CreateNodegroup refuses them) and user data that joins the cluster itself
  (`userdata.ClusterJoin`).
- More than one instance type only without EFA or a reservation (`extra_instance_types`): an EFA launch template
  carries one interface layout, which differs by type, and a reservation holds one type.
- The instance type goes on exactly one of the launch template and the node group (EKS refuses both: botocore
  CreateNodegroup `instanceTypes`): on the node group, except for a Capacity Block, where EKS requires it on the launch
  template with the capacity-block market and the reservation target, and the node group lists none (EKS
  User Guide, "Create a managed node group with Capacity Blocks for ML"). The schema makes `ami_type` fit the
  type's CPU: p6e-gb200 (NVIDIA Grace, arm64) gets AL2023_ARM_64_NVIDIA, not the x86_64 AMI.
- Labels: only trainstack's own and the user's. The kubelet sets `node.kubernetes.io/instance-type` itself,
  and EKS refuses any node group label under kubernetes.io/, k8s.io/ or eks.amazonaws.com/.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pulumi
import pulumi_aws as aws

from components.gpu.efa import NetworkInterfaceSlot, efa_interface_count, efa_interfaces
from components.gpu.userdata import ClusterJoin, bottlerocket_user_data, encode, nodeadm_user_data
from components.k8s.gpu_operator import operand_opt_out_labels
from components.launch_template import GpuLaunchOptions, NodeVolume, node_launch_template
from components.naming import child_name, physical_name, resource_tags
from stacks.catalog import CATALOG, Accelerator, InstanceType
from stacks.schema import (
    ACCELERATOR_LABEL,
    EFA_PRESENT_LABEL,
    NODE_GROUP_LABEL,
    NVIDIA_GPU_PRESENT_LABEL,
    AmiFamily,
    CapacityType,
    GpuNodeGroupSpec,
    NodeRepairSpec,
    StackConfig,
    TaintEffect,
)

# EKS node group capacityType values (EKS API reference, Nodegroup.capacityType). An ODCR is On-Demand
# capacity, targeted through the launch template.
_EKS_CAPACITY_TYPE: dict[CapacityType, str] = {
    CapacityType.ON_DEMAND: "ON_DEMAND",
    CapacityType.SPOT: "SPOT",
    CapacityType.RESERVATION: "ON_DEMAND",
    CapacityType.CAPACITY_BLOCK: "CAPACITY_BLOCK",
}

# Root (AL2023) or data (Bottlerocket) volume device, the same on x86_64 and arm64: Bottlerocket keeps its
# read-only OS on /dev/xvda and images, containers and kubelet state on the data volume /dev/xvdb, so that is
# the one to size.
AL2023_ROOT_DEVICE = "/dev/xvda"
BOTTLEROCKET_DATA_DEVICE = "/dev/xvdb"


@dataclass(frozen=True)
class Taint:
    key: str
    value: str
    effect: str  # EKS API value: NO_SCHEDULE, NO_EXECUTE or PREFER_NO_SCHEDULE


# ----------------------------------------------------------------------------------------- pure rules


def eks_capacity_type(spec: GpuNodeGroupSpec) -> str:
    """The node group's EKS capacityType for the spec's purchase option."""
    return _EKS_CAPACITY_TYPE[spec.capacity.type]


def volume_device(ami_family: AmiFamily) -> str:
    return BOTTLEROCKET_DATA_DEVICE if ami_family.bottlerocket else AL2023_ROOT_DEVICE


def node_labels(spec: GpuNodeGroupSpec) -> dict[str, str]:
    """Kubernetes labels of the group's nodes; the schema keeps spec.labels off the keys set here."""
    row = CATALOG[spec.instance_type]
    labels = {
        **spec.labels,
        NODE_GROUP_LABEL: spec.name,
        ACCELERATOR_LABEL: row.accelerator.value,
    }
    if row.accelerator is Accelerator.NVIDIA:
        labels[NVIDIA_GPU_PRESENT_LABEL] = "true"
    if spec.efa_enabled:
        labels[EFA_PRESENT_LABEL] = "true"
    return labels


def node_taint(row: InstanceType) -> Taint:
    """The taint that keeps everything but accelerator workloads (and their tolerating daemons) off the node."""
    return Taint(key=row.device_resource, value="true", effect="NO_SCHEDULE")


# Kubernetes taint effect -> EKS API TaintEffect (EKS API reference, Taint.effect).
_EKS_TAINT_EFFECT: dict[TaintEffect, str] = {
    TaintEffect.NO_SCHEDULE: "NO_SCHEDULE",
    TaintEffect.NO_EXECUTE: "NO_EXECUTE",
    TaintEffect.PREFER_NO_SCHEDULE: "PREFER_NO_SCHEDULE",
}


def node_taints(spec: GpuNodeGroupSpec) -> list[Taint]:
    """The accelerator taint first (it always stays), then the group's own taints."""
    own = [Taint(key=t.key, value=t.value, effect=_EKS_TAINT_EFFECT[t.effect]) for t in spec.taints]
    return [node_taint(CATALOG[spec.instance_type]), *own]


def interface_layout(spec: GpuNodeGroupSpec) -> list[NetworkInterfaceSlot]:
    """The launch template's explicit network interfaces: the EFA layout, or none for a non-EFA group."""
    if not spec.efa_enabled:
        return []
    return efa_interfaces(CATALOG[spec.instance_type], spec.efa_layout)


def user_data(spec: GpuNodeGroupSpec, join: ClusterJoin | None = None) -> str:
    """The group's user data, un-encoded: Bottlerocket TOML or an AL2023 nodeadm MIME document; with `join` (a
    custom AMI, into which EKS merges nothing) the cluster, labels and taints too."""
    # RAID0 over the instance store only when every type the group may launch has one.
    instance_store = all(CATALOG[t].instance_store_gib > 0 for t in spec.instance_types)
    if spec.ami_family.bottlerocket:
        return bottlerocket_user_data(hugepages_2mi=spec.hugepages_2mi, instance_store=instance_store, join=join)
    nvidia = CATALOG[spec.instance_type].accelerator is Accelerator.NVIDIA
    return nodeadm_user_data(hugepages_2mi=spec.hugepages_2mi, instance_store=instance_store, nvidia=nvidia, join=join)


_K8S_TAINT_EFFECT = {eks: k8s for k8s, eks in _EKS_TAINT_EFFECT.items()}


def cluster_join(
    spec: GpuNodeGroupSpec, labels: Mapping[str, str], name: str, endpoint: str, certificate_authority: str, cidr: str
) -> ClusterJoin:
    """The join a custom AMI's user data carries: the cluster, and the labels and taints EKS would have passed."""
    taints = [(t.key, t.value, _K8S_TAINT_EFFECT[t.effect].value) for t in node_taints(spec)]
    return ClusterJoin(name, endpoint, certificate_authority, cidr, dict(labels), taints)


def instance_type_on_template(spec: GpuNodeGroupSpec) -> bool:
    """Whether the instance type goes on the launch template (Capacity Blocks) instead of the node group."""
    return spec.capacity.type is CapacityType.CAPACITY_BLOCK


def update_strategy(spec: GpuNodeGroupSpec) -> str:
    return "MINIMAL" if spec.capacity.reserved else "DEFAULT"


def node_repair_config(repair: NodeRepairSpec) -> aws.eks.NodeGroupNodeRepairConfigArgs:
    """EKS node auto repair with the fleet's limits: how many nodes at once, and the unhealthy share above
    which EKS stops repairing (EKS API NodeRepairConfig; botocore bounds: counts >= 1, percentages 1-100)."""
    if not repair.enabled:
        return aws.eks.NodeGroupNodeRepairConfigArgs(enabled=False)
    return aws.eks.NodeGroupNodeRepairConfigArgs(
        enabled=True,
        max_parallel_nodes_repaired_count=repair.max_parallel_nodes_repaired_count,
        max_unhealthy_node_threshold_percentage=repair.max_unhealthy_node_threshold_percentage,
    )


# ------------------------------------------------------------------------------------------ component


@dataclass
class GpuNodeGroupArgs:
    """Spec (what the group is) plus wiring (ids from the network and EKS components)."""

    spec: GpuNodeGroupSpec
    base_name: str  # physical base name, for example the stack's cluster name
    cluster_name: pulumi.Input[str]
    node_role_arn: pulumi.Input[str]
    subnet_id: pulumi.Input[str]  # the one private subnet of spec.availability_zone
    security_group_ids: pulumi.Input[Sequence[pulumi.Input[str]]]  # cluster SG + EFA SG
    default_tags: dict[str, str]
    kubernetes_version: str
    """The nodes' Kubernetes version: the group's own, or the cluster's when it sets none."""
    node_volume_kms_key_arn: pulumi.Input[str]
    """Customer KMS key for the root/data volume (`EksCluster.node_volume_kms_key_arn`), never aws/ebs."""
    cluster_endpoint: pulumi.Input[str] = ""
    cluster_certificate_authority: pulumi.Input[str] = ""
    cluster_service_cidr: pulumi.Input[str] = ""
    """The API server, its CA and the Service CIDR: only a custom AMI's user data needs them (`ClusterJoin`)."""
    node_dependencies: Sequence[pulumi.Resource] = ()  # what nodes need before they join: add-ons, role policies
    extra_labels: Mapping[str, str] = field(default_factory=dict[str, str])
    """Labels decided outside the group, e.g. the GPU Operator's per-node operand opt-outs."""
    repair: NodeRepairSpec = field(default_factory=NodeRepairSpec)
    """Auto repair and its limits (`health.node_repair`); the node monitoring agent supplies the conditions."""
    version_from_cluster: bool = False
    """The group sets no version of its own: it takes `kubernetes_version` (the cluster's) at creation and keeps
    what it runs when the cluster moves, so the control plane is upgraded alone (docs/day2.md)."""

    @classmethod
    def of_stack(
        cls,
        stack: StackConfig,
        group: GpuNodeGroupSpec,
        *,
        cluster_name: pulumi.Input[str],
        node_role_arn: pulumi.Input[str],
        subnet_id: pulumi.Input[str],
        security_group_ids: pulumi.Input[Sequence[pulumi.Input[str]]],
        node_volume_kms_key_arn: pulumi.Input[str],
        node_dependencies: Sequence[pulumi.Resource] = (),
        cluster_endpoint: pulumi.Input[str] = "",
        cluster_certificate_authority: pulumi.Input[str] = "",
        cluster_service_cidr: pulumi.Input[str] = "",
    ) -> GpuNodeGroupArgs:
        """`group` of `stack` as its config decides it (base name, tags, Kubernetes version, the GPU Operator's
        opt-outs, repair), wired to the cluster's ids: the one builder for the program and for a test that builds
        a group alone."""
        return cls(
            spec=group,
            base_name=stack.name,
            cluster_name=cluster_name,
            node_role_arn=node_role_arn,
            subnet_id=subnet_id,
            security_group_ids=security_group_ids,
            default_tags=stack.default_tags(pulumi.get_project()),
            kubernetes_version=group.kubernetes_version or stack.eks.version,
            version_from_cluster=group.kubernetes_version is None,
            node_volume_kms_key_arn=node_volume_kms_key_arn,
            node_dependencies=node_dependencies,
            cluster_endpoint=cluster_endpoint,
            cluster_certificate_authority=cluster_certificate_authority,
            cluster_service_cidr=cluster_service_cidr,
            extra_labels=operand_opt_out_labels(group.ami_family, stack.gpu_operator_ami_family),
            repair=stack.health.node_repair,
        )


class GpuNodeGroup(pulumi.ComponentResource):
    """A managed node group of one accelerated instance type in one subnet, with its own launch template."""

    node_group: aws.eks.NodeGroup
    """The node group resource itself, for `depends_on` (workloads that need the nodes to exist)."""
    node_group_name: pulumi.Output[str]
    """The EKS node group name."""
    node_group_arn: pulumi.Output[str]
    """The EKS node group ARN."""
    launch_template_id: pulumi.Output[str]
    """The launch template id (lt-...)."""
    placement_group_name: pulumi.Output[str] | None
    """The cluster placement group the nodes launch in (created here or the reservation's), or None."""
    efa_interface_count: int
    """EFA devices per node: the catalog maximum for the type when EFA is on, else 0."""
    gpu_count_max: int
    """Accelerators at max size: max nodes x accelerators per node."""
    labels: dict[str, str]
    """Kubernetes labels every node of the group carries."""
    taint: Taint
    """The accelerator taint on every node (tolerate it in daemons that must run there)."""

    def __init__(self, name: str, args: GpuNodeGroupArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("trainstack:gpu:GpuNodeGroup", name, None, opts)
        spec = args.spec
        row = CATALOG[spec.instance_type]
        physical = physical_name(args.base_name, spec.name)

        placement_group = self._placement_group(name, args, physical)
        slots = interface_layout(spec)
        labels = {**node_labels(spec), **args.extra_labels}
        launch_template = self._launch_template(name, args, physical, slots, labels, placement_group)
        taint = node_taint(row)
        node_group = self._node_group(name, args, physical, labels, launch_template)

        self.node_group = node_group
        self.node_group_name = node_group.node_group_name
        self.node_group_arn = node_group.arn
        self.launch_template_id = launch_template.id
        self.placement_group_name = placement_group
        self.efa_interface_count = efa_interface_count(slots)
        self.gpu_count_max = spec.max_gpus
        self.labels = labels
        self.taint = taint
        self.register_outputs(
            {
                "node_group_name": self.node_group_name,
                "node_group_arn": self.node_group_arn,
                "launch_template_id": self.launch_template_id,
                "placement_group_name": self.placement_group_name,
                "efa_interface_count": self.efa_interface_count,
                "gpu_count_max": self.gpu_count_max,
            }
        )

    def _placement_group(self, name: str, args: GpuNodeGroupArgs, physical: str) -> pulumi.Output[str] | None:
        """Placement: none, the reservation's own group (referenced, never created), or a new cluster group."""
        spec = args.spec
        if not spec.uses_placement_group:
            return None
        if spec.capacity.reservation_placement_group is not None:
            return pulumi.Output.from_input(spec.capacity.reservation_placement_group)
        created = aws.ec2.PlacementGroup(
            child_name(name, "pg"),
            aws.ec2.PlacementGroupArgs(
                name=physical_name(physical, "pg"),
                strategy="cluster",
                tags=resource_tags(args.default_tags, physical_name(physical, "pg")),
            ),
            opts=pulumi.ResourceOptions(parent=self),
        )
        return created.name

    def _launch_template(
        self,
        name: str,
        args: GpuNodeGroupArgs,
        physical: str,
        slots: list[NetworkInterfaceSlot],
        labels: dict[str, str],
        placement_group: pulumi.Output[str] | None,
    ) -> aws.ec2.LaunchTemplate:
        """The launch template: every EFA interface the type has, the placement group, the reservation or
        Capacity Block, and (with a custom AMI) the user data that joins the node to the cluster."""
        spec = args.spec
        encoded_user_data: pulumi.Input[str] = encode(user_data(spec))
        if spec.ami_id is not None:
            encoded_user_data = pulumi.Output.all(
                args.cluster_name, args.cluster_endpoint, args.cluster_certificate_authority, args.cluster_service_cidr
            ).apply(lambda v: encode(user_data(spec, cluster_join(spec, labels, str(v[0]), v[1], v[2], v[3]))))
        return node_launch_template(
            child_name(name, "lt"),
            description=f"trainstack GPU node group {spec.name}: {spec.instance_type}, "
            f"{efa_interface_count(slots)} EFA interfaces",
            volume=NodeVolume(volume_device(spec.ami_family), spec.root_volume_size_gib, args.node_volume_kms_key_arn),
            hop_limit=spec.imds_hop_limit,
            launch_tags=resource_tags(args.default_tags, physical, **{NODE_GROUP_LABEL: spec.name}),
            parent=self,
            instance_metadata_tags="disabled",
            gpu=GpuLaunchOptions(
                name=physical_name(physical, "lt"),
                instance_type=spec.instance_type if instance_type_on_template(spec) else None,
                user_data=encoded_user_data,
                image_id=spec.ami_id,
                network_interfaces=[
                    aws.ec2.LaunchTemplateNetworkInterfaceArgs(
                        network_card_index=slot.network_card_index,
                        device_index=slot.device_index,
                        interface_type=slot.interface_type.value,
                        delete_on_termination=str(slot.delete_on_termination).lower(),
                        security_groups=args.security_group_ids,
                    )
                    for slot in slots
                ],
                security_group_ids=args.security_group_ids,
                placement=aws.ec2.LaunchTemplatePlacementArgs(group_name=placement_group)
                if placement_group is not None
                else None,
                capacity_reservation=aws.ec2.LaunchTemplateCapacityReservationSpecificationArgs(
                    capacity_reservation_target=aws.ec2.LaunchTemplateCapacityReservationSpecificationCapacityReservationTargetArgs(
                        capacity_reservation_id=spec.capacity.reservation_id,
                    )
                )
                if spec.capacity.reserved
                else None,
                market=aws.ec2.LaunchTemplateInstanceMarketOptionsArgs(market_type="capacity-block")
                if spec.capacity.type is CapacityType.CAPACITY_BLOCK
                else None,
                tags=resource_tags(args.default_tags, physical_name(physical, "lt")),
            ),
        )

    def _node_group(
        self,
        name: str,
        args: GpuNodeGroupArgs,
        physical: str,
        labels: dict[str, str],
        launch_template: aws.ec2.LaunchTemplate,
    ) -> aws.eks.NodeGroup:
        """The EKS managed node group launching from the template, tainted for accelerators."""
        spec = args.spec
        custom_ami = spec.ami_id is not None  # EKS takes no amiType, version or releaseVersion with one
        return aws.eks.NodeGroup(
            child_name(name, "ng"),
            aws.eks.NodeGroupArgs(
                cluster_name=args.cluster_name,
                node_group_name=physical,
                node_role_arn=args.node_role_arn,
                subnet_ids=[args.subnet_id],
                version=None if custom_ami else args.kubernetes_version,
                release_version=None if custom_ami else spec.ami_release_version,
                ami_type=None if custom_ami else spec.ami_family.value,
                capacity_type=eks_capacity_type(spec),
                instance_types=None if instance_type_on_template(spec) else spec.instance_types,
                scaling_config=aws.eks.NodeGroupScalingConfigArgs(
                    min_size=spec.min_size, desired_size=spec.desired_size, max_size=spec.max_size
                ),
                update_config=aws.eks.NodeGroupUpdateConfigArgs(
                    max_unavailable=spec.max_unavailable, update_strategy=update_strategy(spec)
                ),
                launch_template=aws.eks.NodeGroupLaunchTemplateArgs(
                    id=launch_template.id, version=launch_template.latest_version.apply(str)
                ),
                labels=labels,
                taints=[
                    aws.eks.NodeGroupTaintArgs(key=t.key, value=t.value, effect=t.effect) for t in node_taints(spec)
                ],
                node_repair_config=node_repair_config(args.repair),
                tags=resource_tags(args.default_tags, physical),
            ),
            opts=pulumi.ResourceOptions(
                parent=self,
                # The autoscaler owns the desired size after creation; a group without a version of its own keeps
                # the one it was created with when eks.version moves (it moves when its kubernetes_version is set).
                ignore_changes=["scalingConfig.desiredSize", *(["version"] if args.version_from_cluster else [])],
                delete_before_replace=True,
                depends_on=list(args.node_dependencies),
            ),
        )

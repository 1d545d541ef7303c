"""`gpu_node_groups`: accelerated managed node groups, their AMI family, capacity and EFA layout."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from enum import StrEnum
from typing import Literal, Self

from pydantic import Field, ValidationInfo, field_validator, model_validator

from stacks.catalog import CATALOG, Accelerator, Architecture, InstanceType, efa_capable
from stacks.schema.base import AmiReleaseVersion, CatalogInstanceType, Spec
from stacks.schema.capacity import ReservationWindow
from stacks.schema.eks import NODE_KUBERNETES_VERSION_HELP, KubernetesVersion
from stacks.schema.values import AvailabilityZone, GroupName, LabelKey, LabelValue, Limits


class AmiFamily(StrEnum):
    """EKS-optimized accelerated AMIs (EKS API Nodegroup.amiType values). The NVIDIA ones ship the NVIDIA driver
    and container toolkit; the ARM_64 ones are for Grace (arm64) hosts such as p6e-gb200. EKS offers no
    arm64 Neuron AMI (Trainium hosts are x86_64)."""

    AL2023_NVIDIA = "AL2023_x86_64_NVIDIA"
    AL2023_ARM_NVIDIA = "AL2023_ARM_64_NVIDIA"
    BOTTLEROCKET_NVIDIA = "BOTTLEROCKET_x86_64_NVIDIA"
    BOTTLEROCKET_ARM_NVIDIA = "BOTTLEROCKET_ARM_64_NVIDIA"
    AL2023_NEURON = "AL2023_x86_64_NEURON"

    @property
    def architecture(self) -> Architecture:
        return "arm64" if "_ARM_64_" in self.value else "x86_64"

    @property
    def accelerator(self) -> Accelerator:
        return Accelerator.NEURON if self.value.endswith("_NEURON") else Accelerator.NVIDIA

    @property
    def bottlerocket(self) -> bool:
        """Bottlerocket takes TOML settings as user data and keeps its data on a second volume."""
        return self.value.startswith("BOTTLEROCKET_")


def effective_ami_family(families: Iterable[AmiFamily], *, hyperpod_nvidia: bool = False) -> AmiFamily | None:
    """The one AMI family the GPU Operator's cluster-wide release is configured for; None without NVIDIA nodes.

    The values depend on the image (Bottlerocket or not), never on the CPU architecture: the operator's images
    are multi-arch, so x86_64 and Grace (ARM_64) groups share one release. HyperPod NVIDIA nodes run
    HyperPod's accelerated AMI, which ships the driver and toolkit and no device plugin: they count as AL2023.
    """
    nvidia = {f for f in families if f.accelerator is Accelerator.NVIDIA}
    if hyperpod_nvidia:
        nvidia.add(AmiFamily.AL2023_NVIDIA)
    if not nvidia:
        return None
    if len(nvidia) == 1:
        return next(iter(nvidia))
    return AmiFamily.BOTTLEROCKET_NVIDIA if all(f.bottlerocket for f in nvidia) else AmiFamily.AL2023_NVIDIA


def ami_families_for(row: InstanceType) -> list[AmiFamily]:
    """The AMI families whose accelerator and architecture fit the instance type, the default first."""
    fitting = [f for f in AmiFamily if f.accelerator is row.accelerator and f.architecture == row.architecture]
    return sorted(fitting, key=lambda f: f.bottlerocket)


def default_ami_family(row: InstanceType) -> AmiFamily:
    """The family a group gets when `ami_family` is left out: AL2023 for the type's accelerator and CPU."""
    return ami_families_for(row)[0]


class CapacityType(StrEnum):
    ON_DEMAND = "on_demand"
    SPOT = "spot"
    RESERVATION = "reservation"  # an On-Demand Capacity Reservation (ODCR)
    CAPACITY_BLOCK = "capacity_block"  # a Capacity Block for ML


class CapacitySpec(Spec):
    """Where the instances come from. A reservation fixes the AZ."""

    type: CapacityType = Field(
        default=CapacityType.ON_DEMAND,
        description="Purchase option: on_demand, spot (not with EFA), reservation (an On-Demand Capacity "
        "Reservation) or capacity_block (a Capacity Block for ML); the last two need reservation_id.",
    )
    reservation_id: str | None = Field(
        default=None,
        pattern=r"^cr-[0-9a-f]{8,17}$",
        examples=["cr-0123456789abcdef0"],
        description="ODCR or Capacity Block id (cr-...).",
    )
    reservation_availability_zone: AvailabilityZone | None = Field(
        default=None, description="The AZ the reservation was made in; must equal the group's AZ."
    )
    reservation_placement_group: str | None = Field(
        default=None,
        description="Name of the cluster placement group the reservation was made in, if any. Without it, no "
        "placement group is used for a reserved group: forcing one onto the reservation breaks launches.",
    )
    window: ReservationWindow | None = Field(
        default=None,
        description="A capacity_block's start and end (from `aws ec2 describe-capacity-reservations`): the plan "
        "says when its nodes appear and its queue admits nothing before then (docs/capacity.md).",
    )

    @model_validator(mode="after")
    def _reservation(self) -> Self:
        reserved = self.type in (CapacityType.RESERVATION, CapacityType.CAPACITY_BLOCK)
        if reserved and (self.reservation_id is None or self.reservation_availability_zone is None):
            raise ValueError(f"capacity type {self.type.value} needs reservation_id and reservation_availability_zone")
        settings = (self.reservation_id, self.reservation_availability_zone, self.reservation_placement_group)
        if not reserved and any(setting is not None for setting in settings):
            raise ValueError(f"capacity type {self.type.value} takes no reservation_* settings")
        if self.type is CapacityType.CAPACITY_BLOCK and self.reservation_placement_group is not None:
            # EC2 places Capacity Block instances close together in an UltraCluster itself; a block is never
            # made in a placement group (EC2 API reference, CapacityBlock).
            raise ValueError("capacity_block takes no reservation_placement_group: EC2 co-locates a block itself")
        if self.window is not None and self.type is not CapacityType.CAPACITY_BLOCK:
            raise ValueError(f"capacity type {self.type.value} takes no window: only a capacity_block has one")
        return self

    @property
    def reserved(self) -> bool:
        return self.type in (CapacityType.RESERVATION, CapacityType.CAPACITY_BLOCK)


class EfaLayout(StrEnum):
    ENA_PRIMARY = "ena_primary"  # AWS's current guidance: ENA primary, then efa-only on every EFA card
    EFA_PRIMARY = "efa_primary"  # legacy (pulumi-eks, terraform-aws-eks): efa primary, efa-only secondaries


def efa_layout_problem(row: InstanceType, layout: EfaLayout) -> str | None:
    """Why `layout` cannot be built on `row`, or None. The one home of the rule that an `efa` primary needs EFA
    on network card 0 (the primary must sit on card 0, device 0); the schema and the layout builder both ask."""
    if not row.supports_efa:
        return f"{row.name} has no EFA; EFA-capable types: {', '.join(efa_capable())}"
    if layout is EfaLayout.EFA_PRIMARY and not row.efa_on_card_0:
        return (
            f"efa_layout efa_primary needs EFA on network card 0, but {row.name} has EFA on cards "
            f"{list(row.efa_cards)} (card 0 is ENA-only); use ena_primary"
        )
    return None


# 2 MiB hugepages an EFA group reserves unless told otherwise: 5128 pages, about 10 GiB. AWS's EKS EFA guide
# (docs.aws.amazon.com/eks/latest/userguide/node-efa.html) has a training pod request `hugepages-2Mi: 5120Mi`,
# which fits with room to spare.
EFA_HUGEPAGES_2MI = 5128
# Hugepages are taken from the node's memory at boot whether or not a pod uses them; a quarter of it is the
# most a group may reserve (10 GiB is under 1 percent of a p5's 2 TiB).
MAX_HUGEPAGES_FRACTION = 0.25


def _default_hugepages(data: dict[str, object]) -> int:
    # Only EFA groups use them (libfabric); Kueue's quota counts them only there too.
    return EFA_HUGEPAGES_2MI if data.get("efa_enabled", True) else 0


def _default_ami_family(data: dict[str, object]) -> AmiFamily:
    # Runs only when instance_type validated (pydantic skips a data-taking default after an earlier error).
    return default_ami_family(CATALOG[str(data["instance_type"])])


class PlacementMode(StrEnum):
    AUTO = "auto"  # cluster placement group for EFA groups, except on a reservation made without one
    CLUSTER = "cluster"  # always a cluster placement group
    NONE = "none"


# Node labels trainstack sets on every GPU node itself (components/gpu/gpu_nodes.py); spec.labels may not set them.
NODE_GROUP_LABEL = "trainstack.io/node-group"
ACCELERATOR_LABEL = "trainstack.io/accelerator"
NVIDIA_GPU_PRESENT_LABEL = "nvidia.com/gpu.present"  # what NVIDIA's GPU Operator selects on
EFA_PRESENT_LABEL = "vpc.amazonaws.com/efa.present"  # what the EFA device plugin selects on
# Well-known label the kubelet sets itself on every node; selectors may use it, node groups may not set it.
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
# SageMaker HyperPod (EKS orchestrator) node labels. `compute-type: hyperpod` and `instance-group-name` are not
# in AWS's reference pages we could find; they are what the HyperPod training operator's add-on pods select on
# and what AWS and community HyperPod EKS tooling filter nodes by (aws-samples and awslabs HyperPod repos).
# `node-health-status` is documented (SageMaker developer guide, "Resilience-related Kubernetes labels by
# SageMaker HyperPod": Schedulable, Unschedulable, UnschedulablePendingReplacement, UnschedulablePendingReboot).
# HyperPod nodes also carry the well-known instance-type label with the ml.* name (ml.p5.48xlarge): the
# HyperPod dependencies chart (aws/sagemaker-hyperpod-cli helm_chart) selects its device plugins on it.
HYPERPOD_INSTANCE_GROUP_LABEL = "sagemaker.amazonaws.com/instance-group-name"
HYPERPOD_HEALTH_LABEL = "sagemaker.amazonaws.com/node-health-status"
HYPERPOD_SCHEDULABLE = "Schedulable"
RESERVED_NODE_LABELS = (
    NODE_GROUP_LABEL,
    ACCELERATOR_LABEL,
    NVIDIA_GPU_PRESENT_LABEL,
    EFA_PRESENT_LABEL,
)
# The GPU Operator's per-node switches that leave an AL2023 NVIDIA node without a device plugin, never right there:
# all operands off, the VM workload configurations, the device plugin off. Others (dcgm-exporter for a profiling
# node) are judged per environment by the policy pack's gpu-operator-node-opt-outs.
GPU_OPERATOR_STOPPERS = ("nvidia.com/gpu.deploy.operands", "nvidia.com/gpu.workload.config")
GPU_OPERATOR_DEVICE_PLUGIN = "nvidia.com/gpu.deploy.device-plugin"
# EKS managed node groups refuse any label key containing one of these: CreateNodegroup fails with
# InvalidParameterException "Label cannot contain reserved prefixes [kubernetes.io/, k8s.io/,
# eks.amazonaws.com/]" (the error as reported in eksctl-io/eksctl#4007 for node-role.kubernetes.io/test, and
# kubernetes/cloud-provider-aws#242); botocore's labelsMap shape does not encode it.
EKS_RESERVED_LABEL_PREFIXES = ("kubernetes.io/", "k8s.io/", "eks.amazonaws.com/")


class TaintEffect(StrEnum):
    """Kubernetes taint effects (core/v1 Taint.effect), spelled as in a pod's tolerations."""

    NO_SCHEDULE = "NoSchedule"
    NO_EXECUTE = "NoExecute"
    PREFER_NO_SCHEDULE = "PreferNoSchedule"


# EKS node group taints: key 1-63 characters, value 0-63 (EKS API reference, Taint; botocore taintKey/taintValue),
# at most 50 per node group (pulumi-aws eks.NodeGroup `taints`), one of which is trainstack's accelerator taint.
MAX_CUSTOM_TAINTS = 49


class NodeTaintSpec(Spec):
    """A taint the group's nodes carry besides the accelerator taint; Kueue's flavor and trainstack's runtimes,
    validation jobs and device daemons tolerate it, so only pods that name it (or are admitted by Kueue) land."""

    key: LabelKey = Field(max_length=63, description="Taint key (a qualified name; EKS takes 1-63 characters).")
    value: LabelValue = Field(default="", max_length=63, description="Taint value (at most 63 characters).")
    effect: TaintEffect = Field(default=TaintEffect.NO_SCHEDULE, description="NoSchedule, NoExecute, PreferNoSchedule.")


def eks_reserved_label_prefix(key: str) -> str | None:
    """The reserved prefix `key` contains (so EKS refuses it as a managed node group label), or None."""
    return next((prefix for prefix in EKS_RESERVED_LABEL_PREFIXES if prefix in key), None)


class GpuNodeGroupSpec(Spec):
    """A managed node group of accelerated instances with its own launch template."""

    name: GroupName = Field(description="Short name, unique in the stack (DNS label).")
    instance_type: CatalogInstanceType = Field(description="An instance type from the accelerator catalog.")
    availability_zone: AvailabilityZone = Field(description="The one AZ (and subnet) of the group.")
    ami_family: AmiFamily = Field(
        default_factory=_default_ami_family,
        description="EKS accelerated AMI family. No fixed default: left out, it follows the instance type's "
        "accelerator and CPU architecture (AL2023_x86_64_NVIDIA or AL2023_ARM_64_NVIDIA for GPUs, "
        "AL2023_x86_64_NEURON for Trainium), so swapping the instance type alone is enough.",
    )
    capacity: CapacitySpec = Field(default_factory=CapacitySpec, description="Purchase option and reservation.")
    min_size: int = Field(
        ge=0, le=Limits.NODES_PER_GROUP, description="Minimum nodes (0 lets the group scale to zero)."
    )
    desired_size: int = Field(ge=0, le=Limits.NODES_PER_GROUP, description="Nodes at creation.")
    max_size: int = Field(ge=1, le=Limits.NODES_PER_GROUP, description="Maximum nodes.")
    efa_enabled: bool = Field(default=True, description="Attach EFA interfaces (all the type supports).")
    efa_layout: EfaLayout = Field(
        default=EfaLayout.ENA_PRIMARY,
        description="EFA interface layout: ena_primary (AWS's current guidance: an ENA primary, then efa-only on "
        "every EFA card) or efa_primary (legacy: an efa primary; needs EFA on network card 0).",
    )
    placement: PlacementMode = Field(
        default=PlacementMode.AUTO,
        description="Cluster placement group: auto (a new one for EFA groups; on a reservation, only the one it "
        "was made in), cluster (always) or none.",
    )
    root_volume_size_gib: int = Field(
        default=200,
        ge=50,
        le=16384,
        description="GiB of the encrypted gp3 EBS volume that holds images, containers and kubelet state: the root "
        "volume /dev/xvda on AL2023, the data volume /dev/xvdb on Bottlerocket (its OS volume keeps the AMI's size). "
        "With instance store, containerd and kubelet move to the NVMe RAID0 instead.",
    )
    imds_hop_limit: Literal[1, 2] = Field(
        default=1, description="IMDSv2 hop limit; 1 keeps pods without hostNetwork away from the node role."
    )
    hugepages_2mi: int = Field(
        default_factory=_default_hugepages,
        ge=0,
        le=2**31,
        description=f"2 MiB hugepages pre-allocated per node for EFA (libfabric) buffers. Left out: "
        f"{EFA_HUGEPAGES_2MI} (10 GiB) on EFA groups, 0 without EFA. At most {MAX_HUGEPAGES_FRACTION:.0%} of the "
        "instance's memory.",
    )
    max_unavailable: int = Field(
        default=1, ge=1, le=100, description="Nodes replaced at a time during updates (EKS allows 1 to 100)."
    )
    ami_release_version: AmiReleaseVersion | None = Field(
        default=None,
        description="Pinned EKS AMI release of the group (rotation: change it; EKS replaces max_unavailable "
        "nodes at a time). Left out, EKS takes the newest release at creation and nodes keep it.",
    )
    labels: dict[LabelKey, LabelValue] = Field(
        default_factory=dict, max_length=Limits.NODE_LABELS, description="Extra Kubernetes node labels."
    )
    kubernetes_version: KubernetesVersion | None = Field(default=None, description=NODE_KUBERNETES_VERSION_HELP)
    ami_id: str | None = Field(
        default=None,
        pattern=r"^ami-([0-9a-f]{8}|[0-9a-f]{17})$",
        description="A custom AMI for the group's nodes, built on `ami_family` (which still decides the user data "
        "format and the GPU Operator's driver choice). EKS merges no bootstrap into a custom AMI's user data, so "
        "trainstack writes the whole join (cluster, labels, taints); EKS then takes no amiType, version or "
        "release version, and rotating the AMI is a change of this id.",
    )
    extra_instance_types: list[CatalogInstanceType] = Field(
        default_factory=list,
        max_length=19,
        description="More instance types EKS may launch for the group (Spot or On-Demand diversification), groups "
        "without EFA only. Each must match `instance_type`'s accelerator family, count and CPU architecture and have "
        "at least its vCPUs, memory and accelerator memory, so a pod sized for `instance_type` fits every node.",
    )
    selector: dict[LabelKey, LabelValue] = Field(
        default_factory=dict,
        max_length=8,
        description="Platform-only mode (`existing_cluster`): labels the existing group's nodes already carry, for "
        "example {eks.amazonaws.com/nodegroup: gpu} or HyperPod's {sagemaker.amazonaws.com/instance-group-name: "
        "worker}. Kueue's flavor, the runtimes and the validation jobs select on them instead of trainstack's own "
        "node-group label.",
    )
    taints: list[NodeTaintSpec] = Field(
        default_factory=list,
        max_length=MAX_CUSTOM_TAINTS,
        description="Extra node taints (the accelerator taint stays). The group's Kueue flavor adds their "
        "tolerations to admitted jobs, and trainstack's device plugins and operators tolerate them.",
    )

    @field_validator("ami_family")
    @classmethod
    def _ami_fits_instance_type(cls, value: AmiFamily, info: ValidationInfo) -> AmiFamily:
        # A field rule (not in `_group`) so the problem is reported at gpu_node_groups.N.ami_family.
        row = CATALOG.get(str(info.data.get("instance_type")))
        if row is not None and value not in ami_families_for(row):
            raise ValueError(
                f"ami_family {value.value} ({value.accelerator.value}, {value.architecture}) does not fit "
                f"{row.name} ({row.accelerator.value}, {row.architecture}); valid: "
                + ", ".join(f.value for f in ami_families_for(row))
            )
        return value

    @model_validator(mode="after")
    def _group(self) -> Self:
        """Every rule across the group's fields (GROUP_RULES, in order); all their problems in one error."""
        problems = [problem for rule in GROUP_RULES for problem in rule(self)]
        if problems:
            raise ValueError("\n".join(problems))
        return self

    @property
    def _row(self) -> InstanceType:
        """The catalog's row for the group's instance type."""
        return CATALOG[self.instance_type]

    def _sizes_in_order(self) -> list[str]:
        """min_size <= desired_size <= max_size, as EKS's scaling config requires."""
        if self.min_size <= self.desired_size <= self.max_size:
            return []
        return [f"need min_size <= desired_size <= max_size, got {self.min_size}, {self.desired_size}, {self.max_size}"]

    def _efa_fits_the_group(self) -> list[str]:
        """EFA needs an instance type that has it, and at least two nodes to talk between."""
        problems: list[str] = []
        if self.efa_enabled and not self._row.supports_efa:
            problems.append(
                f"efa_enabled but {self.instance_type} has no EFA; EFA-capable types: {', '.join(efa_capable())}"
            )
        if self.efa_enabled and self.max_size < 2:
            problems.append(f"efa_enabled with max_size {self.max_size}: EFA is for multi-node jobs, use at least 2")
        return problems

    def _reservation_fixes_the_zone(self) -> list[str]:
        """A reservation holds capacity in one AZ: the group must sit there."""
        if self.capacity.reserved and self.capacity.reservation_availability_zone != self.availability_zone:
            return [
                f"availability_zone {self.availability_zone} differs from the reservation's "
                f"{self.capacity.reservation_availability_zone}: a reservation fixes the AZ"
            ]
        return []

    def _no_spot_for_efa(self) -> list[str]:
        """Spot nodes are reclaimed mid-job, which stops a whole multi-node EFA job."""
        if self.capacity.type is CapacityType.SPOT and self.efa_enabled:
            return ["spot capacity with efa_enabled: spot nodes are reclaimed mid-job; use on_demand or a reservation"]
        return []

    def _efa_layout_fits(self) -> list[str]:
        """The EFA interface layout fits the instance type's network cards."""
        row = self._row
        if self.efa_enabled and row.supports_efa and (problem := efa_layout_problem(row, self.efa_layout)):
            return [problem]
        return []

    def _hugepages_problems(self) -> list[str]:
        """Huge pages serve libfabric's EFA buffers, and take memory from pods: only with EFA, and not too many."""
        row = self._row
        problems: list[str] = []
        if self.hugepages_2mi and not self.efa_enabled:
            problems.append(
                f"hugepages_2mi {self.hugepages_2mi} without EFA: the pages are for libfabric's EFA buffers and "
                "would only take memory from the node; remove hugepages_2mi or set it to 0"
            )
        hugepages_gib = self.hugepages_2mi * 2 / 1024
        if hugepages_gib > MAX_HUGEPAGES_FRACTION * row.memory_gib:
            problems.append(
                f"hugepages_2mi {self.hugepages_2mi} reserves {hugepages_gib:.1f} GiB, over "
                f"{MAX_HUGEPAGES_FRACTION:.0%} of {self.instance_type}'s {row.memory_gib} GiB memory; use at most "
                f"{int(MAX_HUGEPAGES_FRACTION * row.memory_gib * 1024 / 2)}"
            )
        return problems

    def _labels_keep_the_gpu_operator(self) -> list[str]:
        """On an AL2023 NVIDIA AMI a few node labels switch the GPU Operator's device plugin off."""
        if not (self.ami_family.value.startswith("AL2023") and self.ami_family.accelerator is Accelerator.NVIDIA):
            return []
        return [
            f"labels {key}={value}: on an AL2023 NVIDIA AMI the GPU Operator runs the device plugin, and this "
            "label stops it on these nodes (NVIDIA/gpu-operator v25.3.4 controllers/state_manager.go), so no "
            "pod can request their GPUs; remove it"
            for key, value in sorted(self.labels.items())
            if key in GPU_OPERATOR_STOPPERS or (key == GPU_OPERATOR_DEVICE_PLUGIN and value != "true")
        ]

    def _labels_eks_and_trainstack_accept(self) -> list[str]:
        """Labels trainstack sets itself, and those EKS refuses (too long, or under its reserved prefixes)."""
        problems: list[str] = []
        reserved_labels = sorted(set(self.labels) & set(RESERVED_NODE_LABELS))
        if reserved_labels:
            problems.append(f"labels may not set {reserved_labels}: trainstack sets these itself")
        # EKS CreateNodegroup labelsMap (botocore): keys 1-63 characters in all (prefix included), values at most 63.
        too_long = sorted(key for key, value in self.labels.items() if not 1 <= len(key) <= 63 or len(value) > 63)
        if too_long:
            problems.append(
                f"labels {too_long}: EKS takes label keys of 1-63 characters (prefix included) and values of at most 63"
            )
        eks_reserved = sorted(key for key in self.labels if eks_reserved_label_prefix(key))
        if eks_reserved:
            problems.append(
                f"labels {eks_reserved}: EKS managed node groups refuse label keys containing "
                f"{', '.join(EKS_RESERVED_LABEL_PREFIXES)} (the kubelet sets those itself); use your own domain"
            )
        return problems

    def _custom_ami_takes_no_pins(self) -> list[str]:
        """A custom AMI is its own pin: EKS refuses a release version or a Kubernetes version beside it."""
        if self.ami_id is None:
            return []
        problems: list[str] = []
        if self.ami_release_version is not None:
            problems.append(
                f"ami_release_version {self.ami_release_version} with ami_id {self.ami_id}: EKS refuses a release "
                "version for a custom AMI (CreateNodegroup releaseVersion); the AMI id is the pin"
            )
        if self.kubernetes_version is not None:
            problems.append(
                f"kubernetes_version {self.kubernetes_version} with ami_id {self.ami_id}: EKS refuses a version for a "
                "custom AMI (CreateNodegroup version); the AMI's kubelet is the group's version"
            )
        return problems

    def _taint_problems(self) -> list[str]:
        """The accelerator taint stays trainstack's, and Kubernetes keeps one taint per key and effect."""
        row = self._row
        device = row.device_resource
        problems: list[str] = []
        if any(taint.key == device for taint in self.taints):
            problems.append(
                f"taints may not use the key {device}: trainstack taints every {row.accelerator.value} node with it "
                "(NoSchedule) and that taint stays; pick your own key"
            )
        pairs = [(t.key, t.effect) for t in self.taints]
        if len(set(pairs)) != len(pairs):
            problems.append("taints repeat a key with the same effect: Kubernetes keeps one taint per key and effect")
        return problems

    def _placement_fits_the_capacity(self) -> list[str]:
        """A cluster placement group fits on-demand capacity, not a block nor a reservation made without one."""
        if self.placement is not PlacementMode.CLUSTER:
            return []
        if self.capacity.type is CapacityType.CAPACITY_BLOCK:
            return [
                "placement cluster on a capacity_block: EC2 co-locates a block's instances itself and a block "
                "takes no placement group; use placement auto or none"
            ]
        if self.capacity.reserved and self.capacity.reservation_placement_group is None:
            return [
                f"placement cluster on a {self.capacity.type.value} made without a placement group: forcing one "
                "onto the reservation breaks launches; set capacity.reservation_placement_group or use auto"
            ]
        return []

    def _extra_type_problems(self) -> list[str]:
        """Extra instance types must be interchangeable with the group's own type."""
        row = self._row
        if not self.extra_instance_types:
            return []
        if self.efa_enabled or self.capacity.reserved:
            # One EFA layout per launch template (interface count and network cards differ by type), and a
            # reservation or Capacity Block holds one type; NCCL would also mix GPU generations in one job.
            why = "efa_enabled" if self.efa_enabled else f"capacity {self.capacity.type.value}"
            return [
                f"extra_instance_types with {why}: an EFA group launches one type (its launch template carries one "
                "interface layout, and a reservation holds one type); use extra_instance_types on groups without "
                "EFA or reservations"
            ]
        problems: list[str] = []
        names = [self.instance_type, *self.extra_instance_types]
        if len(set(names)) != len(names):
            problems.append("extra_instance_types repeat a type (or instance_type)")
        for name in self.extra_instance_types:
            other = CATALOG[name]
            if (other.accelerator, other.architecture, other.accelerator_count) != (
                row.accelerator,
                row.architecture,
                row.accelerator_count,
            ):
                problems.append(
                    f"extra_instance_types {name} ({other.accelerator_count} x {other.accelerator_model}, "
                    f"{other.architecture}) does not match {row.name} ({row.accelerator_count} x "
                    f"{row.accelerator_model}, {row.architecture}): one AMI and one pod size serve the group"
                )
            elif (
                other.vcpus < row.vcpus
                or other.memory_gib < row.memory_gib
                or other.accelerator_memory_gib < row.accelerator_memory_gib
            ):
                problems.append(
                    f"extra_instance_types {name} ({other.vcpus} vCPUs, {other.memory_gib} GiB, "
                    f"{other.accelerator_memory_gib} GiB per accelerator) is smaller than {row.name} ({row.vcpus} "
                    f"vCPUs, {row.memory_gib} GiB, {row.accelerator_memory_gib} GiB): pods and models sized for "
                    f"{row.name} would not fit"
                )
        return problems

    @property
    def node_selector(self) -> dict[str, str]:
        """The labels that pick this group's nodes: its `selector` on an existing cluster, else trainstack's own."""
        return dict(self.selector) if self.selector else {NODE_GROUP_LABEL: self.name}

    @property
    def instance_types(self) -> list[str]:
        """Every type EKS may launch for the group, `instance_type` first."""
        return [self.instance_type, *self.extra_instance_types]

    @property
    def uses_placement_group(self) -> bool:
        """Whether the group launches in a cluster placement group (created by trainstack or the reservation's)."""
        if self.placement is PlacementMode.NONE:
            return False
        if self.placement is PlacementMode.CLUSTER:
            return True
        if self.capacity.reserved:
            return self.capacity.reservation_placement_group is not None
        return self.efa_enabled

    @property
    def max_gpus(self) -> int:
        return self.max_size * CATALOG[self.instance_type].accelerator_count


# The rules across one GPU group's fields, each a GpuNodeGroupSpec method returning its problems; run in this
# order, so the error lists their problems in it.
GROUP_RULES: tuple[Callable[[GpuNodeGroupSpec], list[str]], ...] = (
    GpuNodeGroupSpec._sizes_in_order,
    GpuNodeGroupSpec._efa_fits_the_group,
    GpuNodeGroupSpec._reservation_fixes_the_zone,
    GpuNodeGroupSpec._no_spot_for_efa,
    GpuNodeGroupSpec._efa_layout_fits,
    GpuNodeGroupSpec._hugepages_problems,
    GpuNodeGroupSpec._labels_keep_the_gpu_operator,
    GpuNodeGroupSpec._labels_eks_and_trainstack_accept,
    GpuNodeGroupSpec._custom_ami_takes_no_pins,
    GpuNodeGroupSpec._extra_type_problems,
    GpuNodeGroupSpec._taint_problems,
    GpuNodeGroupSpec._placement_fits_the_capacity,
)

"""The typed schema of a trainstack stack: one `trainstack:cluster` object per `stacks/Pulumi.<env>.yaml`.

It describes the whole platform (network, EKS, GPU node groups, storage, Kubernetes add-ons, SageMaker, tags
and cost) and decides what exists and how many. Models are frozen and refuse unknown keys; units are in the
field names; closed sets are enums or Literals; rules that span fields are model validators, so a bad file
fails with every problem listed at once, before any resource is registered.

No Pulumi import here: components and tooling depend on this module, never the other way round.
"""

from __future__ import annotations

import ipaddress
from enum import StrEnum
from typing import Annotated, Literal, Self

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from components import fsx_sizing  # pure: no Pulumi import
from stacks.catalog import CATALOG, Accelerator, Architecture, InstanceType, efa_capable

CONFIG_NAMESPACE = "trainstack"
CONFIG_KEY = "cluster"

_DNS_LABEL = r"^[a-z]([a-z0-9-]{0,30}[a-z0-9])?$"
_AZ = r"^[a-z]{2}(-gov)?-[a-z]+-\d[a-z]$"
_REGION = r"^[a-z]{2}(-gov)?-[a-z]+-\d$"


class Spec(BaseModel):
    """Base of every config model: frozen, unknown keys refused, described fields."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=False)


class Environment(StrEnum):
    DEV = "dev"
    STAGING = "staging"
    PROD = "prod"


def _ipv4_cidr(value: str) -> str:
    network = ipaddress.IPv4Network(value, strict=True)  # ValueError names the problem
    return str(network)


Cidr = Annotated[str, AfterValidator(_ipv4_cidr)]


def _instance_type(value: str) -> str:
    if value not in CATALOG:
        raise ValueError(f"unknown instance type; valid: {', '.join(sorted(CATALOG))}")
    return value


CatalogInstanceType = Annotated[str, AfterValidator(_instance_type)]


# --------------------------------------------------------------------------------------------- tags, cost


class TagsSpec(Spec):
    """Cost-allocation tags. They go on the AWS provider's default_tags (and launch templates' instances,
    volumes and network interfaces), together with `project` and `env`, which trainstack sets itself."""

    cost_center: str = Field(min_length=1, max_length=256, description="Value of the `cost-center` tag.")
    owner: str = Field(min_length=1, max_length=256, description="Value of the `owner` tag (team or e-mail).")
    extra: dict[str, str] = Field(default_factory=dict, description="Further tags for every resource.")

    @model_validator(mode="after")
    def _no_reserved_keys(self) -> Self:
        reserved = {"project", "env", "cost-center", "owner"} & set(self.extra)
        if reserved:
            raise ValueError(f"tags.extra may not set {sorted(reserved)}: trainstack sets these itself")
        return self


class CostSpec(Spec):
    """Guardrails and assumptions for the cost estimate and the GPU budget policy."""

    max_gpus: int = Field(
        ge=0, description="GPU budget: the sum over GPU node groups of max nodes x GPUs per node may not exceed it."
    )
    hours_per_month: float = Field(default=730.0, gt=0, le=744, description="Hours in a billing month.")


# ------------------------------------------------------------------------------------------------ network


class NatGateways(StrEnum):
    SINGLE = "single"
    PER_AZ = "per_az"


class NetworkSpec(Spec):
    """The VPC: private subnets per AZ for nodes and pods, public subnets for NAT only."""

    vpc_cidr: Cidr = Field(description="IPv4 CIDR of the VPC, /16 to /20.")
    availability_zones: list[Annotated[str, Field(pattern=_AZ)]] = Field(
        min_length=2, max_length=4, description="AZs for subnets; EKS needs two. GPU groups pick one of them."
    )
    private_subnet_prefix_length: int = Field(
        default=18, ge=16, le=24, description="Prefix length of each private subnet (nodes, pods, EFA IPs)."
    )
    public_subnet_prefix_length: int = Field(
        default=24, ge=20, le=28, description="Prefix length of each public subnet (NAT gateways, load balancers)."
    )
    nat_gateways: NatGateways = Field(
        default=NatGateways.SINGLE, description="One NAT gateway for the VPC, or one per AZ for zonal resilience."
    )
    interface_endpoints: bool = Field(
        default=False,
        description="Create interface endpoints (ECR api/dkr, STS, EC2, CloudWatch Logs, SSM, EKS Auth for Pod "
        "Identity) so private nodes reach AWS without NAT; required when the EKS endpoint is private only.",
    )
    flow_logs_traffic_type: Literal["ALL", "REJECT"] = Field(default="ALL", description="VPC flow log filter.")
    flow_logs_retention_days: int = Field(default=30, ge=1, description="CloudWatch retention for flow logs.")

    @model_validator(mode="after")
    def _subnets_fit(self) -> Self:
        vpc = ipaddress.IPv4Network(self.vpc_cidr)
        if not 16 <= vpc.prefixlen <= 20:
            raise ValueError(f"vpc_cidr {self.vpc_cidr} must be /16 to /20")
        if len(set(self.availability_zones)) != len(self.availability_zones):
            raise ValueError(f"availability_zones has duplicates: {self.availability_zones}")
        if self.private_subnet_prefix_length > self.public_subnet_prefix_length:
            # Private subnets hold nodes, pods and EFA IPs; carving the larger blocks first packs without gaps.
            raise ValueError(
                f"private_subnet_prefix_length /{self.private_subnet_prefix_length} is smaller than "
                f"public_subnet_prefix_length /{self.public_subnet_prefix_length}: private subnets must be at least "
                "as large as public ones"
            )
        count = len(self.availability_zones)
        needed = count * 2 ** (32 - self.private_subnet_prefix_length) + count * 2 ** (
            32 - self.public_subnet_prefix_length
        )
        if needed > vpc.num_addresses:
            raise ValueError(
                f"{count} private /{self.private_subnet_prefix_length} and {count} public "
                f"/{self.public_subnet_prefix_length} subnets need {needed} addresses; vpc_cidr {self.vpc_cidr} "
                f"has {vpc.num_addresses}"
            )
        return self


# ---------------------------------------------------------------------------------------------------- EKS


class LogType(StrEnum):
    API = "api"
    AUDIT = "audit"
    AUTHENTICATOR = "authenticator"
    CONTROLLER_MANAGER = "controllerManager"
    SCHEDULER = "scheduler"


class AuthenticationMode(StrEnum):
    API = "API"
    API_AND_CONFIG_MAP = "API_AND_CONFIG_MAP"


class EksAddonVersions(Spec):
    """EKS managed add-on versions, pinned (`aws eks describe-addon-versions` lists them per cluster version)."""

    vpc_cni: str = Field(pattern=r"^v\d+\.\d+\.\d+-eksbuild\.\d+$", description="vpc-cni add-on version.")
    coredns: str = Field(pattern=r"^v\d+\.\d+\.\d+-eksbuild\.\d+$", description="coredns add-on version.")
    kube_proxy: str = Field(pattern=r"^v\d+\.\d+\.\d+-eksbuild\.\d+$", description="kube-proxy add-on version.")
    pod_identity_agent: str = Field(
        pattern=r"^v\d+\.\d+\.\d+-eksbuild\.\d+$", description="eks-pod-identity-agent add-on version."
    )
    ebs_csi_driver: str = Field(
        pattern=r"^v\d+\.\d+\.\d+-eksbuild\.\d+$", description="aws-ebs-csi-driver add-on version."
    )
    fsx_csi_driver: str = Field(
        pattern=r"^v\d+\.\d+\.\d+-eksbuild\.\d+$", description="aws-fsx-csi-driver add-on version."
    )


class SystemNodeGroupSpec(Spec):
    """The small on-demand CPU node group for controllers (CoreDNS, Kueue, operators)."""

    instance_type: str = Field(default="m7i.xlarge", pattern=r"^[a-z0-9-]+\.[a-z0-9]+$", description="CPU type.")
    min_size: int = Field(default=2, ge=1, description="Minimum nodes.")
    desired_size: int = Field(default=2, ge=1, description="Nodes at creation.")
    max_size: int = Field(default=4, ge=1, description="Maximum nodes.")
    disk_size_gib: int = Field(default=100, ge=20, le=16384, description="gp3 root volume in GiB.")

    @model_validator(mode="after")
    def _sizes(self) -> Self:
        if not self.min_size <= self.desired_size <= self.max_size:
            raise ValueError(
                f"need min_size <= desired_size <= max_size, got {self.min_size}, {self.desired_size}, "
                f"{self.max_size}"
            )
        return self


class EksSpec(Spec):
    """The EKS control plane and its core add-ons."""

    # Versions EKS still creates clusters on as of 2026-11-29 (EKS release calendar; endoflife.date/amazon-eks):
    # 1.35 and 1.36 on standard support, 1.34 until 2026-12-02, 1.32-1.33 on extended support only; 1.31 left
    # extended support on 2026-11-26. The policy pack (eks-version-allowed) narrows this to standard support.
    version: Literal["1.32", "1.33", "1.34", "1.35", "1.36"] = Field(description="Kubernetes minor version.")
    support_type: Literal["STANDARD", "EXTENDED"] = Field(
        default="STANDARD", description="Upgrade policy; EXTENDED support is billed extra per cluster hour."
    )
    authentication_mode: AuthenticationMode = Field(
        default=AuthenticationMode.API, description="Cluster access: access entries only (API) or with aws-auth."
    )
    admin_role_arns: list[Annotated[str, Field(pattern=r"^arn:aws[a-z-]*:iam::\d{12}:role/.+$")]] = Field(
        default_factory=list, description="IAM roles given cluster-admin through access entries."
    )
    endpoint_public_access: bool = Field(description="Whether the API endpoint is reachable from the internet.")
    public_access_cidrs: list[Cidr] = Field(
        default_factory=list, description="CIDRs allowed to the public endpoint; required when it is public."
    )
    control_plane_log_types: list[LogType] = Field(
        default_factory=lambda: [LogType.API, LogType.AUDIT, LogType.AUTHENTICATOR],
        description="Control-plane log types sent to CloudWatch.",
    )
    log_retention_days: int = Field(default=90, ge=1, description="CloudWatch retention for control-plane logs.")
    addons: EksAddonVersions = Field(description="Pinned EKS add-on versions.")
    system_node_group: SystemNodeGroupSpec = Field(
        default_factory=SystemNodeGroupSpec, description="CPU nodes for controllers."
    )

    @model_validator(mode="after")
    def _endpoint(self) -> Self:
        if self.endpoint_public_access:
            if not self.public_access_cidrs:
                raise ValueError("endpoint_public_access is true but public_access_cidrs is empty: list the CIDRs")
            if "0.0.0.0/0" in self.public_access_cidrs:
                raise ValueError("public_access_cidrs may not contain 0.0.0.0/0: list the CIDRs that need access")
        elif self.public_access_cidrs:
            raise ValueError("public_access_cidrs is set but endpoint_public_access is false")
        if len(set(self.control_plane_log_types)) != len(self.control_plane_log_types):
            raise ValueError("control_plane_log_types has duplicates")
        return self


# ------------------------------------------------------------------------------------------- GPU nodes


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

    type: CapacityType = Field(default=CapacityType.ON_DEMAND, description="Purchase option.")
    reservation_id: str | None = Field(
        default=None, pattern=r"^cr-[0-9a-f]{8,17}$", description="ODCR or Capacity Block id (cr-...)."
    )
    reservation_availability_zone: str | None = Field(
        default=None, pattern=_AZ, description="The AZ the reservation was made in; must equal the group's AZ."
    )
    reservation_placement_group: str | None = Field(
        default=None,
        description="Name of the cluster placement group the reservation was made in, if any. Without it, no "
        "placement group is used for a reserved group: forcing one onto the reservation breaks launches.",
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
        return self

    @property
    def reserved(self) -> bool:
        return self.type in (CapacityType.RESERVATION, CapacityType.CAPACITY_BLOCK)


class EfaLayout(StrEnum):
    ENA_PRIMARY = "ena_primary"  # AWS's current guidance: ENA primary, then efa-only on every EFA card
    EFA_PRIMARY = "efa_primary"  # legacy (pulumi-eks, terraform-aws-eks): efa primary, efa-only secondaries


class PlacementMode(StrEnum):
    AUTO = "auto"  # cluster placement group for EFA groups, except on a reservation made without one
    CLUSTER = "cluster"  # always a cluster placement group
    NONE = "none"


# Node labels trainstack sets on every GPU node itself (components/gpu_nodes.py); spec.labels may not set them.
RESERVED_NODE_LABELS = (
    "trainstack.io/node-group",
    "trainstack.io/accelerator",
    "nvidia.com/gpu.present",
    "vpc.amazonaws.com/efa.present",
    "node.kubernetes.io/instance-type",
)


class GpuNodeGroupSpec(Spec):
    """A managed node group of accelerated instances with its own launch template."""

    name: str = Field(pattern=_DNS_LABEL, description="Short name, unique in the stack (DNS label).")
    instance_type: CatalogInstanceType = Field(description="An instance type from the accelerator catalog.")
    availability_zone: str = Field(pattern=_AZ, description="The one AZ (and subnet) of the group.")
    ami_family: AmiFamily = Field(
        default=AmiFamily.AL2023_NVIDIA,
        description="EKS accelerated AMI family. Left out, it follows the instance type's accelerator and CPU "
        "architecture: AL2023 NVIDIA (x86_64 or ARM_64) for GPUs, AL2023 Neuron for Trainium, so swapping the "
        "instance type alone is enough.",
    )
    capacity: CapacitySpec = Field(default_factory=CapacitySpec, description="Purchase option and reservation.")
    min_size: int = Field(ge=0, description="Minimum nodes (0 lets the group scale to zero).")
    desired_size: int = Field(ge=0, description="Nodes at creation.")
    max_size: int = Field(ge=1, description="Maximum nodes.")
    efa_enabled: bool = Field(default=True, description="Attach EFA interfaces (all the type supports).")
    efa_layout: EfaLayout = Field(default=EfaLayout.ENA_PRIMARY, description="EFA interface layout.")
    placement: PlacementMode = Field(default=PlacementMode.AUTO, description="Cluster placement group choice.")
    root_volume_size_gib: int = Field(default=200, ge=50, le=16384, description="Encrypted gp3 root volume.")
    imds_hop_limit: Literal[1, 2] = Field(
        default=1, description="IMDSv2 hop limit; 1 keeps pods without hostNetwork away from the node role."
    )
    hugepages_2mi: int = Field(
        default=5128, ge=0, description="2 MiB hugepages pre-allocated per node for EFA (libfabric) buffers."
    )
    max_unavailable: int = Field(
        default=1, ge=1, le=100, description="Nodes replaced at a time during updates (EKS allows 1 to 100)."
    )
    labels: dict[str, str] = Field(default_factory=dict, description="Extra Kubernetes node labels.")

    @model_validator(mode="before")
    @classmethod
    def _ami_follows_instance_type(cls, data: object) -> object:
        # Only when the key is absent: an explicit ami_family is kept and checked by `_ami_fits_instance_type`.
        if isinstance(data, dict) and "ami_family" not in data:
            row = CATALOG.get(str(data.get("instance_type")))
            if row is not None:
                return {**data, "ami_family": default_ami_family(row)}
        return data

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
        row = CATALOG[self.instance_type]
        problems: list[str] = []
        if not self.min_size <= self.desired_size <= self.max_size:
            problems.append(
                f"need min_size <= desired_size <= max_size, got {self.min_size}, {self.desired_size}, {self.max_size}"
            )
        if self.efa_enabled and not row.supports_efa:
            problems.append(
                f"efa_enabled but {self.instance_type} has no EFA; EFA-capable types: {', '.join(efa_capable())}"
            )
        if self.efa_enabled and self.max_size < 2:
            problems.append(f"efa_enabled with max_size {self.max_size}: EFA is for multi-node jobs, use at least 2")
        if self.capacity.reserved and self.capacity.reservation_availability_zone != self.availability_zone:
            problems.append(
                f"availability_zone {self.availability_zone} differs from the reservation's "
                f"{self.capacity.reservation_availability_zone}: a reservation fixes the AZ"
            )
        if self.capacity.type is CapacityType.SPOT and self.efa_enabled:
            problems.append(
                "spot capacity with efa_enabled: spot nodes are reclaimed mid-job; use on_demand or a reservation"
            )
        if (
            self.efa_enabled
            and row.supports_efa
            and self.efa_layout is EfaLayout.EFA_PRIMARY
            and row.efa_cards[0] != 0
        ):
            problems.append(
                f"efa_layout efa_primary needs EFA on network card 0, but {self.instance_type} has EFA on cards "
                f"{list(row.efa_cards)}; use ena_primary"
            )
        reserved_labels = sorted(set(self.labels) & set(RESERVED_NODE_LABELS))
        if reserved_labels:
            problems.append(f"labels may not set {reserved_labels}: trainstack sets these itself")
        if (
            self.placement is PlacementMode.CLUSTER
            and self.capacity.reserved
            and self.capacity.reservation_placement_group is None
        ):
            problems.append(
                f"placement cluster on a {self.capacity.type.value} made without a placement group: forcing one "
                "onto the reservation breaks launches; set capacity.reservation_placement_group or use auto"
            )
        if problems:
            raise ValueError("\n".join(problems))
        return self

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


# ---------------------------------------------------------------------------------------------- storage


class FsxDeploymentType(StrEnum):
    SCRATCH_2 = "SCRATCH_2"  # not replicated; dev only (ClusterConfig refuses it elsewhere)
    PERSISTENT_2 = "PERSISTENT_2"


# CloudWatch Logs accepts only these retention periods (PutRetentionPolicy `retentionInDays`).
LOG_RETENTION_DAYS = (1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557,
                      2922, 3288, 3653)


def _deployment(info: ValidationInfo) -> FsxDeploymentType | None:
    """The already-validated deployment type, or None when it was itself invalid (reported there)."""
    value = info.data.get("deployment_type")
    return value if isinstance(value, FsxDeploymentType) else None


class FsxSpec(Spec):
    """FSx for Lustre in the GPU node groups' AZ, linked to the datasets bucket.

    Rules that span fields are field validators reading the fields declared before them, so each problem is
    reported at its own key (storage.fsx.storage_capacity_gib, ...) with the value given. Field order matters.
    """

    enabled: bool = Field(default=True, description="Create the file system.")
    deployment_type: FsxDeploymentType = Field(description="SCRATCH_2 (dev only) or PERSISTENT_2.")
    throughput_mb_s_per_tib: int | None = Field(
        default=None,
        validate_default=True,
        description="Per-unit storage throughput in MB/s/TiB: PERSISTENT_2 needs 125, 250, 500 or 1000; "
        "SCRATCH_2 takes none (fixed 200 MB/s/TiB baseline).",
    )
    efa_enabled: bool = Field(
        default=False,
        description="EFA-enabled file system (GPUDirect Storage): PERSISTENT_2 only; trainstack then adds the "
        "metadata configuration and the EFA security group. Set at creation, cannot change later.",
    )
    metadata_iops: int | None = Field(
        default=None,
        description="PERSISTENT_2 metadata IOPS (USER_PROVISIONED): 1500, 3000, 6000, 12000 or a multiple of "
        "12000 up to 192000. Unset: AUTOMATIC mode (scales with capacity).",
    )
    storage_capacity_gib: int = Field(
        gt=0,
        description="Capacity in GiB: 1200, 2400 or a multiple of 2400; EFA-enabled: a multiple of 38400/19200/"
        "9600/4800 at 125/250/500/1000 MB/s/TiB.",
    )
    data_compression: Literal["LZ4", "NONE"] = Field(default="LZ4", description="Lustre data compression.")
    import_path_prefix: str = Field(
        default="datasets/",
        pattern=r"^([A-Za-z0-9._-]+/)*$",
        description="Prefix in the datasets bucket linked to Lustre: empty (whole bucket) or ending in `/`.",
    )
    file_system_path: str = Field(
        default="/datasets",
        pattern=r"^/[A-Za-z0-9._/-]*$",
        description="Lustre directory the bucket prefix appears at (the data repository association's path).",
    )
    automatic_backup_retention_days: int = Field(
        default=0, ge=0, le=90, description="Daily automatic backups kept, PERSISTENT_2 only (0 is off)."
    )
    weekly_maintenance_start_time: str = Field(
        default="7:03:00", pattern=r"^[1-7]:([01]\d|2[0-3]):[0-5]\d$", description="d:HH:MM in UTC (1 is Monday)."
    )
    log_retention_days: int = Field(
        default=90, description="CloudWatch retention of the file system's data-repository event log."
    )
    per_gpu_read_mb_s: float = Field(
        default=200.0, gt=0, description="Read throughput each GPU needs from storage in MB/s (sizing demand)."
    )

    @field_validator("throughput_mb_s_per_tib")
    @classmethod
    def _throughput_tier(cls, value: int | None, info: ValidationInfo) -> int | None:
        deployment = _deployment(info)
        if deployment is FsxDeploymentType.SCRATCH_2 and value is not None:
            raise ValueError(
                "SCRATCH_2 takes no throughput_mb_s_per_tib (its baseline is fixed at 200 MB/s/TiB): remove it"
            )
        if deployment is FsxDeploymentType.PERSISTENT_2:
            valid = fsx_sizing.valid_throughputs(deployment)
            if value is None:
                raise ValueError(f"PERSISTENT_2 needs throughput_mb_s_per_tib: one of {', '.join(map(str, valid))}")
            if value not in valid:
                raise ValueError(
                    f"throughput_mb_s_per_tib {value} is not a PERSISTENT_2 tier: use {', '.join(map(str, valid))}"
                )
        return value

    @field_validator("efa_enabled")
    @classmethod
    def _efa_prerequisites(cls, value: bool, info: ValidationInfo) -> bool:
        deployment = _deployment(info)
        if value and deployment is not None and deployment is not FsxDeploymentType.PERSISTENT_2:
            raise ValueError(
                f"efa_enabled needs deployment_type PERSISTENT_2 (with a metadata configuration and an EFA "
                f"security group, which trainstack adds), not {deployment.value}"
            )
        return value

    @field_validator("metadata_iops")
    @classmethod
    def _metadata_iops(cls, value: int | None, info: ValidationInfo) -> int | None:
        if value is None:
            return value
        deployment = _deployment(info)
        if deployment is FsxDeploymentType.SCRATCH_2:
            raise ValueError("metadata_iops is for PERSISTENT_2 only; SCRATCH_2 has no metadata configuration")
        if not fsx_sizing.is_valid_metadata_iops(value):
            raise ValueError(
                f"metadata_iops {value} is not valid: use 1500, 3000, 6000, 12000 or a multiple of 12000 up to "
                "192000 (or leave it unset for AUTOMATIC)"
            )
        return value

    @field_validator("storage_capacity_gib")
    @classmethod
    def _capacity_step(cls, value: int, info: ValidationInfo) -> int:
        if _deployment(info) is None or "throughput_mb_s_per_tib" not in info.data or "efa_enabled" not in info.data:
            return value  # an earlier field is invalid and reported; the step depends on it
        problem = fsx_sizing.capacity_problem(
            value,
            efa_enabled=info.data["efa_enabled"],
            throughput_mb_s_per_tib=info.data["throughput_mb_s_per_tib"],
        )
        if problem:
            raise ValueError(problem)
        return value

    @field_validator("automatic_backup_retention_days")
    @classmethod
    def _backups(cls, value: int, info: ValidationInfo) -> int:
        if value and _deployment(info) is FsxDeploymentType.SCRATCH_2:
            raise ValueError("SCRATCH_2 has no automatic backups: set automatic_backup_retention_days to 0")
        return value

    @field_validator("log_retention_days")
    @classmethod
    def _log_retention(cls, value: int) -> int:
        if value not in LOG_RETENTION_DAYS:
            raise ValueError(f"{value} is not a CloudWatch retention period: use one of {list(LOG_RETENTION_DAYS)}")
        return value

    @property
    def persistent(self) -> bool:
        return self.deployment_type is FsxDeploymentType.PERSISTENT_2


class BucketsSpec(Spec):
    """S3 buckets for datasets and checkpoints: SSE-KMS with a bucket key, versioning, public access blocked,
    TLS only, lifecycle rules for old versions and stale multipart uploads."""

    noncurrent_version_expiration_days: int = Field(
        default=30, ge=1, description="Days after which an object version that is no longer current is deleted."
    )
    noncurrent_versions_kept: int = Field(
        default=3, ge=0, le=100, description="Newest noncurrent versions kept regardless of age (S3 allows 100)."
    )
    abort_incomplete_multipart_days: int = Field(
        default=7, ge=1, description="Days after which an unfinished multipart upload is aborted and its parts freed."
    )


class StorageSpec(Spec):
    """Training data: the S3 buckets and the FSx for Lustre file system in front of the datasets bucket."""

    buckets: BucketsSpec = Field(default_factory=BucketsSpec, description="S3 datasets and checkpoints buckets.")
    fsx: FsxSpec = Field(description="FSx for Lustre.")


# ------------------------------------------------------------------------------------------- Kubernetes


class MigStrategy(StrEnum):
    NONE = "none"
    SINGLE = "single"
    MIXED = "mixed"


_CHART_VERSION = r"^v?\d+\.\d+\.\d+$"


def _pinned_image(value: str) -> str:
    """A container image pinned by digest or by a tag that is not `latest` (or a `latest-*` alias)."""
    if "@sha256:" in value:
        return value
    name, _, tag = value.rpartition(":")
    if not name or "/" in tag or not tag:
        raise ValueError(f"image {value!r} has no tag: pin it by tag or digest")
    if tag == "latest" or tag.startswith("latest-"):
        raise ValueError(f"image {value!r} uses a moving `latest` tag: pin a versioned tag or a digest")
    return value


PinnedImage = Annotated[str, AfterValidator(_pinned_image)]


class GpuOperatorSpec(Spec):
    """NVIDIA GPU Operator (Helm chart `gpu-operator` from https://helm.ngc.nvidia.com/nvidia)."""

    chart_version: str = Field(pattern=_CHART_VERSION, description="NVIDIA gpu-operator Helm chart version.")
    mig_strategy: MigStrategy = Field(default=MigStrategy.NONE, description="MIG strategy for the device plugin.")
    dcgm_exporter: bool = Field(default=True, description="Run the DCGM exporter for GPU metrics.")


class EfaDevicePluginSpec(Spec):
    """AWS EFA Kubernetes device plugin (chart `aws-efa-k8s-device-plugin` from https://aws.github.io/eks-charts)."""

    chart_version: str = Field(
        pattern=_CHART_VERSION,
        description="aws-efa-k8s-device-plugin chart version; v0.5.18 or newer ships plugin v0.5.10+, the first "
        "that counts p6-b200 EFA devices correctly.",
    )


# neuron-helm-chart 1.9.0 (Neuron SDK 2.31.0, device plugin image 2.31.0.0): the newest release whose notes and
# values.yaml we checked (github.com/aws-neuron/neuron-helm-charts releases/tag/1.9.0). The chart has no
# leading v in its tags.
NEURON_HELM_CHART_VERSION = "1.9.0"


class NeuronDevicePluginSpec(Spec):
    """AWS Neuron device plugin for Trainium nodes (chart oci://public.ecr.aws/neuron/neuron-helm-chart).

    Installed only when a GPU node group is Neuron; the default pins a checked chart release, so swapping a
    group to a Trainium type needs no other edit."""

    chart_version: str = Field(
        default=NEURON_HELM_CHART_VERSION,
        pattern=_CHART_VERSION,
        description="neuron-helm-chart version (no leading v); its device plugin advertises aws.amazon.com/neuron.",
    )


class KueueSpec(Spec):
    """Kueue job queueing (chart oci://registry.k8s.io/kueue/charts/kueue)."""

    chart_version: str = Field(pattern=_CHART_VERSION, description="Kueue Helm chart version (no leading v).")
    wait_for_pods_ready_timeout_s: int = Field(
        default=600,
        ge=60,
        description="All-or-nothing admission: a workload whose pods are not all ready within this many seconds "
        "is evicted and requeued, so a half-scheduled multi-node job never holds GPUs.",
    )


class TrainingOperatorSpec(Spec):
    """The distributed-training operator for multi-node jobs."""

    kind: Literal["kubeflow_trainer", "mpi_operator"] = Field(
        default="kubeflow_trainer",
        description="kubeflow_trainer: Kubeflow Trainer v2 (TrainJob, Helm chart oci://ghcr.io/kubeflow/charts/"
        "kubeflow-trainer); mpi_operator: Kubeflow MPI Operator (MPIJob v2beta1, release manifest).",
    )
    version: str = Field(pattern=_CHART_VERSION, description="Operator release (chart) version.")


class TeamSpec(Spec):
    """A team namespace with a LocalQueue per ClusterQueue and a GPU ResourceQuota."""

    name: str = Field(pattern=_DNS_LABEL, description="Team namespace name.")
    gpu_quota: int = Field(ge=0, description="Accelerators (GPUs or Neuron devices) the namespace may request at once.")


class ValidationSpec(Spec):
    """Opt-in cluster validation jobs: multi-node NCCL all-reduce over EFA and a DCGM diagnostic."""

    enabled: bool = Field(default=False, description="Create the validation jobs.")
    node_group: str | None = Field(default=None, description="GPU group to test; the first EFA group if unset.")
    nodes: int = Field(default=2, ge=2, description="Nodes the NCCL test spans.")
    nccl_tests_image: PinnedImage = Field(
        description="Container image with nccl-tests, aws-ofi-nccl, libfabric and Open MPI, pinned by tag or digest."
    )
    nccl_max_message_size: str = Field(
        default="16G",
        pattern=r"^\d+[KMG]?$",
        description="Largest all-reduce message (all_reduce_perf -e); bus bandwidth is measured up to it.",
    )
    dcgm_image: PinnedImage = Field(
        # DCGM 4.2.3 is the standalone DCGM that GPU Operator v25.3 pairs with; NVIDIA NGC cloud-native/dcgm tags.
        default="nvcr.io/nvidia/cloud-native/dcgm:4.2.3-1-ubuntu22.04",
        description="NVIDIA DCGM image for the `dcgmi diag` job, pinned by tag or digest.",
    )
    dcgm_diag_level: Literal[1, 2, 3, 4] = Field(default=2, description="dcgmi diag run level.")


class KubernetesSpec(Spec):
    gpu_operator: GpuOperatorSpec = Field(description="NVIDIA GPU Operator.")
    efa_device_plugin: EfaDevicePluginSpec = Field(description="AWS EFA Kubernetes device plugin.")
    neuron_device_plugin: NeuronDevicePluginSpec | None = Field(
        default_factory=NeuronDevicePluginSpec,
        description="AWS Neuron device plugin, installed when a GPU node group is Neuron (Trainium); null only "
        "in a stack without Neuron groups.",
    )
    kueue: KueueSpec = Field(description="Kueue job queueing.")
    training_operator: TrainingOperatorSpec = Field(description="Distributed-training operator.")
    teams: list[TeamSpec] = Field(min_length=1, description="Team namespaces with queues and GPU quotas.")
    validation: ValidationSpec | None = Field(default=None, description="Cluster validation jobs.")

    @model_validator(mode="after")
    def _unique_teams(self) -> Self:
        names = [t.name for t in self.teams]
        if len(set(names)) != len(names):
            raise ValueError(f"team names must be unique, got {names}")
        return self


# -------------------------------------------------------------------------------------------- SageMaker


class HyperPodOrchestrator(StrEnum):
    """Who schedules work on the HyperPod nodes: the trainstack EKS cluster, or Slurm run by HyperPod."""

    EKS = "eks"
    SLURM = "slurm"


class HyperPodGroupRole(StrEnum):
    """The Slurm role of an instance group; EKS-orchestrated clusters have compute groups only."""

    COMPUTE = "compute"
    CONTROLLER = "controller"  # runs slurmctld
    LOGIN = "login"  # where users ssh in and submit jobs


class HyperPodCapacity(StrEnum):
    ON_DEMAND = "on_demand"
    TRAINING_PLAN = "training_plan"  # reserved capacity from a SageMaker training plan (hyperpod-cluster target)


# HyperPod instance group names: [a-zA-Z0-9](-*[a-zA-Z0-9]){0,62} (SageMaker API, ClusterInstanceGroupSpecification);
# trainstack keeps them DNS labels so they double as Slurm partition and Kubernetes label values.
_HYPERPOD_GROUP = r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$"


class HyperPodInstanceGroupSpec(Spec):
    """One HyperPod instance group: a set of identical ml.* instances with one role and lifecycle."""

    name: str = Field(pattern=_HYPERPOD_GROUP, description="Instance group name, unique in the cluster.")
    instance_type: str = Field(
        pattern=r"^ml\.[a-z0-9-]+\.[a-z0-9]+$", description="SageMaker instance type, for example ml.p5.48xlarge."
    )
    instance_count: int = Field(ge=1, description="Instances in the group.")
    role: HyperPodGroupRole = Field(
        default=HyperPodGroupRole.COMPUTE, description="Slurm role of the group (EKS takes compute groups only)."
    )
    capacity: HyperPodCapacity = Field(
        default=HyperPodCapacity.ON_DEMAND,
        description="on_demand, or training_plan to run on the reserved capacity of hyperpod.training_plan_arn.",
    )
    # HyperPod mounts the extra volume at /opt/sagemaker; VolumeSizeInGB is 1-16384 (ClusterEbsVolumeConfig).
    ebs_volume_size_gib: int = Field(
        default=500, ge=1, le=16384, description="Extra EBS volume per instance in GiB, mounted at /opt/sagemaker."
    )

    @model_validator(mode="after")
    def _known(self) -> Self:
        problems: list[str] = []
        ec2_type = self.ec2_instance_type
        if self.role is HyperPodGroupRole.COMPUTE and ec2_type not in CATALOG:
            problems.append(
                f"compute instance_type {self.instance_type} is not in the catalog; valid: "
                + ", ".join(f"ml.{name}" for name in sorted(CATALOG))
            )
        if self.role is not HyperPodGroupRole.COMPUTE and self.capacity is HyperPodCapacity.TRAINING_PLAN:
            problems.append(
                f"{self.role.value} group {self.name} with capacity training_plan: training plans reserve "
                "accelerated compute; run controller and login groups on_demand"
            )
        if self.role is HyperPodGroupRole.CONTROLLER and self.instance_count != 1:
            problems.append(f"controller group {self.name} has instance_count {self.instance_count}: HyperPod "
                            "Slurm runs one slurmctld node, use 1")
        if problems:
            raise ValueError("\n".join(problems))
        return self

    @property
    def ec2_instance_type(self) -> str:
        """The EC2 type behind the ml.* type (ml.p5.48xlarge -> p5.48xlarge), for catalog lookups."""
        return self.instance_type.removeprefix("ml.")

    @property
    def accelerators(self) -> int:
        """Accelerators in the whole group (0 for CPU controller and login groups outside the catalog)."""
        row = CATALOG.get(self.ec2_instance_type)
        return self.instance_count * row.accelerator_count if row else 0


class HyperPodSpec(Spec):
    """An optional SageMaker HyperPod cluster on trainstack's VPC, EFA security group, FSx and S3."""

    enabled: bool = Field(default=False, description="Create a SageMaker HyperPod cluster.")
    orchestrator: HyperPodOrchestrator = Field(default=HyperPodOrchestrator.EKS, description="eks or slurm.")
    instance_groups: list[HyperPodInstanceGroupSpec] = Field(
        default_factory=list, description="HyperPod instance groups."
    )
    training_plan_arn: str | None = Field(
        default=None,
        pattern=r"^arn:aws[a-z-]*:sagemaker:[a-z0-9-]+:\d{12}:training-plan/[A-Za-z0-9-]+$",
        description="SageMaker training plan (target resource hyperpod-cluster) for training_plan groups.",
    )

    @model_validator(mode="after")
    def _groups(self) -> Self:
        problems: list[str] = []
        names = [g.name for g in self.instance_groups]
        if len(set(names)) != len(names):
            problems.append(f"instance group names must be unique, got {names}")
        planned = [g.name for g in self.instance_groups if g.capacity is HyperPodCapacity.TRAINING_PLAN]
        if planned and self.training_plan_arn is None:
            problems.append(f"instance groups {planned} use capacity training_plan but training_plan_arn is unset")
        if self.training_plan_arn is not None and not planned:
            problems.append(
                "training_plan_arn is set but every instance group is on_demand: set capacity training_plan on "
                "the compute groups the plan reserves, or remove training_plan_arn"
            )
        if self.enabled:
            roles = [g.role for g in self.instance_groups]
            if HyperPodGroupRole.COMPUTE not in roles:
                problems.append("an enabled HyperPod cluster needs at least one compute instance group")
            if self.orchestrator is HyperPodOrchestrator.SLURM:
                if roles.count(HyperPodGroupRole.CONTROLLER) != 1:
                    problems.append(
                        f"a Slurm HyperPod cluster needs exactly one controller instance group, got "
                        f"{roles.count(HyperPodGroupRole.CONTROLLER)}"
                    )
                if roles.count(HyperPodGroupRole.LOGIN) > 1:
                    problems.append("a Slurm HyperPod cluster takes at most one login instance group")
            elif set(roles) - {HyperPodGroupRole.COMPUTE}:
                problems.append(
                    "an EKS HyperPod cluster takes compute instance groups only: the EKS control plane schedules; "
                    "remove the controller and login groups or use orchestrator slurm"
                )
        if problems:
            raise ValueError("\n".join(problems))
        return self

    def groups(self, role: HyperPodGroupRole) -> list[HyperPodInstanceGroupSpec]:
        return [g for g in self.instance_groups if g.role is role]

    @property
    def accelerators(self) -> int:
        """Accelerators over all instance groups."""
        return sum(g.accelerators for g in self.instance_groups)


class SageMakerSpec(Spec):
    """Optional SageMaker: a HyperPod cluster, and an execution role plus VPC settings for training jobs."""

    hyperpod: HyperPodSpec = Field(default_factory=HyperPodSpec, description="SageMaker HyperPod cluster.")
    training_job_role: bool = Field(
        default=False, description="Create an execution role and VPC settings for SageMaker training jobs."
    )


# ------------------------------------------------------------------------------------------------ root


class ClusterConfig(Spec):
    """The `trainstack:cluster` object of one stack."""

    environment: Environment = Field(description="dev, staging or prod; decides protection and policy levels.")
    region: str = Field(pattern=_REGION, description="AWS region, for example us-east-1.")
    name: str = Field(pattern=_DNS_LABEL, description="Base name for every resource, for example trainstack-dev.")
    tags: TagsSpec = Field(description="Cost-allocation tags.")
    cost: CostSpec = Field(description="GPU budget and cost assumptions.")
    network: NetworkSpec = Field(description="VPC, subnets, NAT, endpoints, flow logs.")
    eks: EksSpec = Field(description="EKS control plane and add-ons.")
    gpu_node_groups: list[GpuNodeGroupSpec] = Field(default_factory=list, description="GPU node groups.")
    storage: StorageSpec = Field(description="S3 buckets and FSx for Lustre.")
    kubernetes: KubernetesSpec = Field(description="GPU Operator, EFA plugin, Kueue, teams, validation.")
    sagemaker: SageMakerSpec = Field(default_factory=SageMakerSpec, description="Optional SageMaker HyperPod.")

    @model_validator(mode="after")
    def _cross_field(self) -> Self:
        problems: list[str] = []
        azs = self.network.availability_zones
        names = [g.name for g in self.gpu_node_groups]
        if len(set(names)) != len(names):
            problems.append(f"gpu_node_groups names must be unique, got {names}")
        for i, group in enumerate(self.gpu_node_groups):
            if group.availability_zone not in azs:
                problems.append(
                    f"gpu_node_groups.{i}.availability_zone {group.availability_zone} is not in "
                    f"network.availability_zones {azs}"
                )
        problems += [
            f"network.availability_zones entry {az} is not in region {self.region}"
            for az in azs
            if not az.startswith(self.region)
        ]
        # The budget counts every accelerator trainstack can start: GPU node groups and HyperPod groups.
        node_group_gpus = sum(g.max_gpus for g in self.gpu_node_groups)
        hyperpod_gpus = self.sagemaker.hyperpod.accelerators if self.sagemaker.hyperpod.enabled else 0
        if node_group_gpus + hyperpod_gpus > self.cost.max_gpus:
            problems.append(
                f"GPU node groups ({node_group_gpus} at max size) and HyperPod ({hyperpod_gpus}) reach "
                f"{node_group_gpus + hyperpod_gpus} accelerators, over cost.max_gpus {self.cost.max_gpus}"
            )
        efa_azs = sorted({g.availability_zone for g in self.gpu_node_groups if g.efa_enabled})
        if self.storage.fsx.enabled and len(efa_azs) > 1:
            problems.append(f"EFA GPU groups span {efa_azs}: FSx serves one AZ, keep the EFA groups in one")
        if self.storage.fsx.enabled and self.storage.fsx.efa_enabled and not efa_azs:
            problems.append("storage.fsx.efa_enabled needs at least one EFA GPU node group to serve")
        if not self.eks.endpoint_public_access and not self.network.interface_endpoints:
            problems.append("eks.endpoint_public_access is false: set network.interface_endpoints true")
        validation = self.kubernetes.validation
        if validation and validation.enabled:
            candidates = [g.name for g in self.validation_candidates]
            target = self.validation_node_group
            if validation.node_group is not None and validation.node_group not in candidates:
                problems.append(
                    f"kubernetes.validation.node_group {validation.node_group!r} must name an NVIDIA EFA GPU "
                    f"group (the NCCL and DCGM jobs are NVIDIA-only); valid: {candidates}"
                )
            elif target is not None and validation.nodes > target.max_size:
                # The NCCL job would wait forever for nodes the group can never have.
                problems.append(
                    f"kubernetes.validation.nodes {validation.nodes} exceeds the max_size {target.max_size} of "
                    f"GPU group {target.name!r}; use at most {target.max_size}"
                )
        # HyperPod on EKS needs access entries (API or API_AND_CONFIG_MAP): AuthenticationMode offers only
        # those two, so a CONFIG_MAP cluster cannot be configured at all.
        if self.environment is not Environment.DEV and self.storage.fsx.deployment_type is FsxDeploymentType.SCRATCH_2:
            problems.append(f"storage.fsx.deployment_type SCRATCH_2 is for dev only, not {self.environment.value}")
        # Without the Neuron device plugin, Trainium nodes never advertise aws.amazon.com/neuron: nothing schedules.
        neuron_groups = [g.name for g in self.gpu_node_groups if CATALOG[g.instance_type].accelerator.value == "neuron"]
        if neuron_groups and self.kubernetes.neuron_device_plugin is None:
            problems.append(
                f"gpu_node_groups {neuron_groups} are Neuron (Trainium): set kubernetes.neuron_device_plugin "
                "(remove the null to use the pinned default chart_version)"
            )
        if problems:
            raise ValueError("\n".join(problems))
        return self

    @property
    def validation_candidates(self) -> list[GpuNodeGroupSpec]:
        """GPU groups the validation jobs can test: NVIDIA groups with EFA (NCCL over EFA, DCGM)."""
        return [
            g for g in self.gpu_node_groups if g.efa_enabled and CATALOG[g.instance_type].accelerator.value == "nvidia"
        ]

    @property
    def validation_node_group(self) -> GpuNodeGroupSpec | None:
        """The group the validation jobs run on: the named one, else the first candidate. None when validation
        is off or no NVIDIA EFA group exists (a Trainium-only cluster), in which case no jobs are planned."""
        validation = self.kubernetes.validation
        if validation is None or not validation.enabled:
            return None
        candidates = self.validation_candidates
        if validation.node_group is not None:
            return next((g for g in candidates if g.name == validation.node_group), None)
        return next(iter(candidates), None)

    @property
    def gpu_availability_zone(self) -> str:
        """The AZ of the EFA GPU groups (and of FSx): the first group's, or the first network AZ."""
        for group in self.gpu_node_groups:
            if group.efa_enabled:
                return group.availability_zone
        if self.gpu_node_groups:
            return self.gpu_node_groups[0].availability_zone
        return self.network.availability_zones[0]

    @property
    def protect_data(self) -> bool:
        """Prod data (FSx, S3, KMS keys, the cluster) is protected against deletion."""
        return self.environment is Environment.PROD


def json_schema() -> dict[str, object]:
    """The JSON schema editors use for the `trainstack:cluster` object."""
    return ClusterConfig.model_json_schema()


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

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from stacks.catalog import CATALOG, efa_capable

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
        description="Create interface endpoints (ECR api/dkr, STS, EC2, CloudWatch Logs, SSM) so private nodes "
        "reach AWS without NAT; required when the EKS endpoint is private only.",
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

    version: Literal["1.31", "1.32", "1.33", "1.34"] = Field(description="Kubernetes minor version.")
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
    """EKS-optimized accelerated AMIs. Both ship the NVIDIA driver and container toolkit."""

    AL2023_NVIDIA = "AL2023_x86_64_NVIDIA"
    BOTTLEROCKET_NVIDIA = "BOTTLEROCKET_x86_64_NVIDIA"
    AL2023_NEURON = "AL2023_x86_64_NEURON"


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
        if not reserved and (self.reservation_id or self.reservation_availability_zone or self.reservation_placement_group):
            raise ValueError(f"capacity type {self.type.value} takes no reservation_* settings")
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


class GpuNodeGroupSpec(Spec):
    """A managed node group of accelerated instances with its own launch template."""

    name: str = Field(pattern=_DNS_LABEL, description="Short name, unique in the stack (DNS label).")
    instance_type: CatalogInstanceType = Field(description="An instance type from the accelerator catalog.")
    availability_zone: str = Field(pattern=_AZ, description="The one AZ (and subnet) of the group.")
    ami_family: AmiFamily = Field(default=AmiFamily.AL2023_NVIDIA, description="EKS accelerated AMI family.")
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
    max_unavailable: int = Field(default=1, ge=1, description="Nodes replaced at a time during updates.")
    labels: dict[str, str] = Field(default_factory=dict, description="Extra Kubernetes node labels.")

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
        neuron = row.accelerator.value == "neuron"
        if neuron != (self.ami_family is AmiFamily.AL2023_NEURON):
            problems.append(
                f"ami_family {self.ami_family.value} does not fit {self.instance_type} ({row.accelerator.value}); "
                f"use {AmiFamily.AL2023_NEURON.value if neuron else 'an NVIDIA AMI family'}"
            )
        if self.capacity.reserved and self.capacity.reservation_availability_zone != self.availability_zone:
            problems.append(
                f"availability_zone {self.availability_zone} differs from the reservation's "
                f"{self.capacity.reservation_availability_zone}: a reservation fixes the AZ"
            )
        if self.capacity.type is CapacityType.SPOT and self.efa_enabled:
            problems.append("spot capacity with efa_enabled: spot nodes are reclaimed mid-job; use on_demand or a reservation")
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
    SCRATCH_2 = "SCRATCH_2"
    PERSISTENT_2 = "PERSISTENT_2"


class FsxSpec(Spec):
    """FSx for Lustre in the GPU node groups' AZ, linked to the datasets bucket."""

    enabled: bool = Field(default=True, description="Create the file system.")
    deployment_type: FsxDeploymentType = Field(description="SCRATCH_2 (dev only) or PERSISTENT_2.")
    storage_capacity_gib: int = Field(gt=0, description="Capacity in GiB, in AWS's increments for the type.")
    throughput_mb_s_per_tib: int | None = Field(
        default=None, description="Per-unit storage throughput (PERSISTENT_2: 125, 250, 500 or 1000)."
    )
    efa_enabled: bool = Field(
        default=False, description="EFA-enabled file system (GPUDirect Storage); PERSISTENT_2 with metadata config."
    )
    metadata_iops: int | None = Field(
        default=None, description="User-provisioned metadata IOPS (PERSISTENT_2); automatic when unset."
    )
    data_compression: Literal["LZ4", "NONE"] = Field(default="LZ4", description="Lustre data compression.")
    import_path_prefix: str = Field(
        default="datasets/", pattern=r"^[A-Za-z0-9._/-]*$", description="Prefix in the datasets bucket linked to Lustre."
    )
    file_system_path: str = Field(
        default="/datasets", pattern=r"^/[A-Za-z0-9._/-]*$", description="Lustre path the bucket prefix appears at."
    )
    automatic_backup_retention_days: int = Field(
        default=0, ge=0, le=90, description="Daily automatic backups kept (persistent types; 0 is off)."
    )
    weekly_maintenance_start_time: str = Field(
        default="7:03:00", pattern=r"^[1-7]:([01]\d|2[0-3]):[0-5]\d$", description="d:HH:MM in UTC (1 is Monday)."
    )
    per_gpu_read_mb_s: float = Field(
        default=200.0, gt=0, description="Read throughput each GPU needs from storage in MB/s (sizing demand)."
    )


class BucketsSpec(Spec):
    """S3 buckets for datasets and checkpoints."""

    noncurrent_version_expiration_days: int = Field(default=30, ge=1, description="Expire old object versions.")
    abort_incomplete_multipart_days: int = Field(default=7, ge=1, description="Abort stale multipart uploads.")


class StorageSpec(Spec):
    buckets: BucketsSpec = Field(default_factory=BucketsSpec, description="S3 datasets and checkpoints buckets.")
    fsx: FsxSpec = Field(description="FSx for Lustre.")


# ------------------------------------------------------------------------------------------- Kubernetes


class MigStrategy(StrEnum):
    NONE = "none"
    SINGLE = "single"
    MIXED = "mixed"


_CHART_VERSION = r"^v?\d+\.\d+\.\d+$"


class GpuOperatorSpec(Spec):
    chart_version: str = Field(pattern=_CHART_VERSION, description="NVIDIA gpu-operator Helm chart version.")
    mig_strategy: MigStrategy = Field(default=MigStrategy.NONE, description="MIG strategy for the device plugin.")
    dcgm_exporter: bool = Field(default=True, description="Run the DCGM exporter for GPU metrics.")


class EfaDevicePluginSpec(Spec):
    chart_version: str = Field(pattern=_CHART_VERSION, description="aws-efa-k8s-device-plugin chart version.")


class KueueSpec(Spec):
    chart_version: str = Field(pattern=_CHART_VERSION, description="Kueue Helm chart version.")


class TrainingOperatorSpec(Spec):
    kind: Literal["kubeflow_trainer", "mpi_operator"] = Field(
        default="kubeflow_trainer", description="Distributed-training operator for multi-node jobs."
    )
    version: str = Field(pattern=_CHART_VERSION, description="Operator release version.")


class TeamSpec(Spec):
    name: str = Field(pattern=_DNS_LABEL, description="Team namespace name.")
    gpu_quota: int = Field(ge=0, description="GPUs the team namespace may request at once.")


class ValidationSpec(Spec):
    """Opt-in cluster validation jobs: multi-node NCCL all-reduce over EFA and a DCGM diagnostic."""

    enabled: bool = Field(default=False, description="Create the validation jobs.")
    node_group: str | None = Field(default=None, description="GPU group to test; the first EFA group if unset.")
    nodes: int = Field(default=2, ge=2, description="Nodes the NCCL test spans.")
    nccl_tests_image: str = Field(
        description="Container image with nccl-tests, aws-ofi-nccl and libfabric, pinned by tag or digest."
    )
    dcgm_diag_level: Literal[1, 2, 3, 4] = Field(default=2, description="dcgmi diag run level.")


class KubernetesSpec(Spec):
    gpu_operator: GpuOperatorSpec = Field(description="NVIDIA GPU Operator.")
    efa_device_plugin: EfaDevicePluginSpec = Field(description="AWS EFA Kubernetes device plugin.")
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
    EKS = "eks"
    SLURM = "slurm"


class HyperPodInstanceGroupSpec(Spec):
    name: str = Field(pattern=_DNS_LABEL, description="Instance group name.")
    instance_type: str = Field(
        pattern=r"^ml\.[a-z0-9-]+\.[a-z0-9]+$", description="SageMaker instance type, for example ml.p5.48xlarge."
    )
    instance_count: int = Field(ge=1, description="Instances in the group.")
    role: Literal["compute", "controller", "login"] = Field(
        default="compute", description="Slurm role of the group (EKS uses compute only)."
    )
    ebs_volume_size_gib: int = Field(default=500, ge=1, le=16384, description="Extra EBS volume per instance.")

    @model_validator(mode="after")
    def _known(self) -> Self:
        ec2_type = self.instance_type.removeprefix("ml.")
        if self.role == "compute" and ec2_type not in CATALOG:
            raise ValueError(
                f"compute instance_type {self.instance_type} is not in the catalog; valid: "
                + ", ".join(f"ml.{name}" for name in sorted(CATALOG))
            )
        return self


class HyperPodSpec(Spec):
    enabled: bool = Field(default=False, description="Create a SageMaker HyperPod cluster.")
    orchestrator: HyperPodOrchestrator = Field(default=HyperPodOrchestrator.EKS, description="EKS or Slurm.")
    instance_groups: list[HyperPodInstanceGroupSpec] = Field(
        default_factory=list, description="HyperPod instance groups."
    )
    training_plan_arn: str | None = Field(
        default=None, pattern=r"^arn:aws[a-z-]*:sagemaker:", description="SageMaker training plan to run on."
    )

    @model_validator(mode="after")
    def _groups(self) -> Self:
        if not self.enabled:
            return self
        roles = [g.role for g in self.instance_groups]
        if "compute" not in roles:
            raise ValueError("an enabled HyperPod cluster needs at least one compute instance group")
        if self.orchestrator is HyperPodOrchestrator.SLURM and roles.count("controller") != 1:
            raise ValueError("a Slurm HyperPod cluster needs exactly one controller instance group")
        if self.orchestrator is HyperPodOrchestrator.EKS and set(roles) != {"compute"}:
            raise ValueError("an EKS HyperPod cluster takes compute instance groups only")
        names = [g.name for g in self.instance_groups]
        if len(set(names)) != len(names):
            raise ValueError(f"instance group names must be unique, got {names}")
        return self


class SageMakerSpec(Spec):
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
            if not group.availability_zone.startswith(self.region):
                problems.append(f"gpu_node_groups.{i}.availability_zone {group.availability_zone} is not in {self.region}")
        for az in azs:
            if not az.startswith(self.region):
                problems.append(f"network.availability_zones entry {az} is not in region {self.region}")
        gpus = sum(g.max_gpus for g in self.gpu_node_groups)
        if gpus > self.cost.max_gpus:
            problems.append(f"gpu_node_groups can reach {gpus} GPUs at max size, over cost.max_gpus {self.cost.max_gpus}")
        gpu_azs = {g.availability_zone for g in self.gpu_node_groups if g.efa_enabled}
        if self.storage.fsx.enabled and len(gpu_azs) > 1:
            problems.append(f"EFA GPU groups span {sorted(gpu_azs)}: FSx serves one AZ, keep the EFA groups in one")
        if not self.eks.endpoint_public_access and not self.network.interface_endpoints:
            problems.append("eks.endpoint_public_access is false: set network.interface_endpoints true")
        validation = self.kubernetes.validation
        if validation and validation.enabled:
            efa_groups = [g.name for g in self.gpu_node_groups if g.efa_enabled]
            target = validation.node_group or (efa_groups[0] if efa_groups else None)
            if target is None or target not in efa_groups:
                problems.append(
                    f"kubernetes.validation.node_group {target!r} must name an EFA GPU group: {efa_groups}"
                )
        hyperpod = self.sagemaker.hyperpod
        if (
            hyperpod.enabled
            and hyperpod.orchestrator is HyperPodOrchestrator.EKS
            and self.eks.authentication_mode not in (AuthenticationMode.API, AuthenticationMode.API_AND_CONFIG_MAP)
        ):
            problems.append("HyperPod with the EKS orchestrator needs eks.authentication_mode API or API_AND_CONFIG_MAP")
        if self.environment is not Environment.DEV and self.storage.fsx.deployment_type is FsxDeploymentType.SCRATCH_2:
            problems.append(f"storage.fsx.deployment_type SCRATCH_2 is for dev only, not {self.environment.value}")
        if problems:
            raise ValueError("\n".join(problems))
        return self

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


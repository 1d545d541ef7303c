"""The plan's summary: what a stack builds, read from what the program recorded.

Pure functions from a `Recording` (and the validated `StackConfig` for what follows from the config
alone: the accelerators at max size and the storage demand they make) to plain frozen dataclasses. Nothing
here knows which component created a resource: node groups, launch templates, file systems and add-ons are
found by type and joined through the recorded dependency graph, so the summary fills in as components land
and stays right when they change. Launch templates' EFA interfaces and file systems' throughput are read
by the policy pack's readers (`policies/rules/base.py`), so the report and the review agree.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from policies.facts import TENANT_LABEL, TENANT_TEAM
from policies.rules.base import efa_interfaces, lustre_throughput_mb_s
from stacks.catalog import CATALOG
from stacks.schema import StackConfig
from trainstack.engine import RecordedResource, Recording
from trainstack.model.graph import Index, as_int, get, known
from trainstack.tokens import (
    EKS_ADDON,
    EKS_CLUSTER,
    FSX_LUSTRE,
    HELM_CHART,
    HELM_RELEASE,
    HYPERPOD_CLUSTER,
    LAUNCH_TEMPLATE,
    NAMESPACE,
    NAT_GATEWAY,
    NODE_GROUP,
    PLACEMENT_GROUP,
    RESOURCE_QUOTA,
    S3_BUCKETS,
    SUBNET,
    VPC_ENDPOINT,
)

MODE_APPLY = "offline: mock engine, computed outputs mocked (as after `pulumi up`)"
MODE_PREVIEW = "offline: mock engine, computed outputs unknown (as in `pulumi preview`)"


@dataclass(frozen=True)
class NodeGroupSummary:
    """One managed node group as recorded, with its catalog facts."""

    name: str
    urn: str
    instance_type: str | None
    accelerator_model: str | None  # None for CPU (system) groups
    min_size: int
    desired_size: int
    max_size: int
    gpus_per_node: int
    gpu_memory_gib_per_node: int
    efa_interfaces: int  # EFA / efa-only interfaces in the launch template
    efa_max: int  # the instance type's EfaInfo.MaximumEfaInterfaces (0 when not in the catalog)
    fabric_gbps_per_node: float  # EFA bandwidth the configured interfaces reach (0 without EFA)
    placement_group: str | None
    availability_zones: tuple[str, ...]
    subnets: int  # subnets the group may launch in (EFA needs exactly one)
    taints: tuple[str, ...]  # key=value:EFFECT, as EKS spells the effect
    capacity: str  # on-demand, spot, reservation cr-..., capacity-block cr-...
    root_volume_gib: int

    @property
    def gpu(self) -> bool:
        return self.accelerator_model is not None

    @property
    def gpus_desired(self) -> int:
        return self.desired_size * self.gpus_per_node

    @property
    def gpus_max(self) -> int:
        return self.max_size * self.gpus_per_node

    @property
    def fabric_gbps_desired(self) -> float:
        return self.desired_size * self.fabric_gbps_per_node

    @property
    def fabric_gbps_max(self) -> float:
        return self.max_size * self.fabric_gbps_per_node


@dataclass(frozen=True)
class FileSystemSummary:
    """An FSx for Lustre file system and how its throughput compares with the GPUs' demand."""

    name: str
    urn: str
    deployment_type: str | None
    capacity_gib: int
    throughput_mb_s_per_tib: int | None
    efa_enabled: bool
    throughput_mb_s: float  # aggregate baseline: capacity in TiB x per-unit throughput
    demand_mb_s: float  # accelerators at max size x the configured read rate per GPU (StackConfig)
    availability_zones: tuple[str, ...] = ()  # its subnet's AZ ((): a subnet outside the recording)

    @property
    def coverage(self) -> float | None:
        """Throughput over demand (1.0 means exactly enough); None without GPUs."""
        return self.throughput_mb_s / self.demand_mb_s if self.demand_mb_s else None


@dataclass(frozen=True)
class AddonSummary:
    kind: str  # helm or eks-addon
    name: str
    chart: str
    version: str
    namespace: str


@dataclass(frozen=True)
class HyperPodGroupSummary:
    cluster: str
    name: str
    instance_type: str
    count: int


@dataclass(frozen=True)
class TeamSummary:
    """A team namespace (labelled `trainstack.io/tenant: team`) and the accelerators its quota lets it request."""

    name: str
    accelerator_quota: int  # the namespace's ResourceQuota on requests.nvidia.com/gpu or aws.amazon.com/neuron


@dataclass(frozen=True)
class Summary:
    """Everything the report says about a stack, except cost and policy (see cost.py, review.py)."""

    stack: str
    environment: str
    region: str
    name: str
    preview: bool
    resource_count: int
    custom_count: int
    component_count: int
    node_groups: tuple[NodeGroupSummary, ...]
    file_systems: tuple[FileSystemSummary, ...]
    bucket_count: int
    nat_gateways: int
    interface_endpoints: int
    interface_endpoint_azs: int  # sum over interface endpoints of their subnets (ENIs), each billed per hour
    eks_clusters: tuple[tuple[str, str, str], ...]  # (name, version, support type)
    addons: tuple[AddonSummary, ...]
    hyperpod: tuple[HyperPodGroupSummary, ...]
    accelerators_max: int  # every accelerator at max size: what the budget and FSx serve (StackConfig)
    gpu_budget: int
    per_gpu_read_mb_s: float
    type_counts: dict[str, int] = field(default_factory=dict)
    teams: tuple[TeamSummary, ...] = ()

    @property
    def mode(self) -> str:
        return MODE_PREVIEW if self.preview else MODE_APPLY

    @property
    def gpu_groups(self) -> tuple[NodeGroupSummary, ...]:
        return tuple(g for g in self.node_groups if g.gpu)

    @property
    def gpus_desired(self) -> int:
        return sum(g.gpus_desired for g in self.node_groups)

    @property
    def gpus_max(self) -> int:
        return sum(g.gpus_max for g in self.node_groups)

    @property
    def hyperpod_gpus(self) -> int:
        """Accelerators in SageMaker HyperPod instance groups (ml.<ec2 type> rows of the catalog)."""
        return hyperpod_accelerators(self.hyperpod)

    @property
    def accelerators_desired(self) -> int:
        """Every accelerator the stack runs at desired size: node groups plus HyperPod instance groups."""
        return self.gpus_desired + self.hyperpod_gpus

    @property
    def fabric_gbps_desired(self) -> float:
        return sum(g.fabric_gbps_desired for g in self.node_groups)

    @property
    def fabric_gbps_max(self) -> float:
        return sum(g.fabric_gbps_max for g in self.node_groups)


def hyperpod_accelerators(groups: tuple[HyperPodGroupSummary, ...]) -> int:
    """Accelerators in HyperPod instance groups: count x the catalog's accelerators of the ml.* type's EC2 twin."""
    return sum(
        g.count * row.accelerator_count
        for g in groups
        if (row := CATALOG.get(g.instance_type.removeprefix("ml."))) is not None
    )


# ------------------------------------------------------------------------------------------ node groups


def fabric_gbps(instance_type: str | None, efa_interfaces: int) -> float:
    """EFA bandwidth per node: the type's network bandwidth, in proportion to the EFA interfaces configured.

    A p5.48xlarge reaches 3,200 Gbit/s only with all 32 interfaces; with 4 it gets an eighth (one 100 Gbit/s
    card each; the EC2 User Guide's "Maximize network bandwidth on accelerated instances").
    """
    row = CATALOG.get(instance_type or "")
    if row is None or not row.supports_efa or efa_interfaces <= 0:
        return 0.0
    return row.network_gbps * min(efa_interfaces, row.max_efa_interfaces) / row.max_efa_interfaces


def _capacity(node_group: RecordedResource, launch_template: RecordedResource | None) -> str:
    capacity_type = str(get(node_group.inputs, "capacityType") or "ON_DEMAND")
    reservation = None
    market = None
    if launch_template is not None:
        reservation = get(
            launch_template.inputs,
            "capacityReservationSpecification",
            "capacityReservationTarget",
            "capacityReservationId",
        )
        market = get(launch_template.inputs, "instanceMarketOptions", "marketType")
    if capacity_type == "CAPACITY_BLOCK" or market == "capacity-block":
        return f"capacity-block {reservation}" if reservation else "capacity-block"
    if reservation:
        return f"reservation {reservation}"
    return "spot" if capacity_type == "SPOT" else "on-demand"


def _placement_group(index: Index, launch_template: RecordedResource | None) -> str | None:
    if launch_template is None:
        return None
    groups = index.refs(launch_template, "placement", PLACEMENT_GROUP)
    if groups:
        group = groups[0]
        return str(known(group.inputs.get("name")) or group.name)
    name = get(launch_template.inputs, "placement", "groupName")
    return str(name) if name else None


def _availability_zones(
    index: Index, node_group: RecordedResource, lt: RecordedResource | None, existing_subnets: Mapping[str, str]
) -> tuple[str, ...]:
    zones = {
        str(zone)
        for subnet in index.refs(node_group, "subnetIds", SUBNET)
        if (zone := get(subnet.inputs, "availabilityZone"))
    }
    # Subnets of an existing VPC are not in the recording: the stack file says where they are (and `pulumi up`
    # checks it, components/network/network.py).
    zones |= {existing_subnets[s] for s in get(node_group.inputs, "subnetIds") or [] if s in existing_subnets}
    if not zones and lt is not None and (zone := get(lt.inputs, "placement", "availabilityZone")):
        zones.add(str(zone))
    return tuple(sorted(zones))


def _root_volume_gib(launch_template: RecordedResource | None, node_group: RecordedResource) -> int:
    if launch_template is not None:
        for mapping in launch_template.inputs.get("blockDeviceMappings") or []:
            size = as_int(get(mapping, "ebs", "volumeSize")) if isinstance(mapping, dict) else None
            if size:
                return size
    return as_int(get(node_group.inputs, "diskSize")) or 0


def node_group_summary(
    index: Index, node_group: RecordedResource, existing_subnets: Mapping[str, str] | None = None
) -> NodeGroupSummary:
    """One recorded `aws.eks.NodeGroup`, joined with its launch template, subnets and placement group;
    `existing_subnets` maps the ids of subnets outside the stack to their AZs."""
    templates = index.refs(node_group, "launchTemplate", LAUNCH_TEMPLATE)
    lt = templates[0] if templates else None
    instance_type = get(lt.inputs, "instanceType") if lt is not None else None
    if not instance_type:
        types = get(node_group.inputs, "instanceTypes") or []
        instance_type = types[0] if types else None
    row = CATALOG.get(instance_type or "")
    efa = len(efa_interfaces(lt.inputs)) if lt is not None else 0
    scaling = node_group.inputs.get("scalingConfig") or {}
    return NodeGroupSummary(
        name=str(get(node_group.inputs, "nodeGroupName") or node_group.name),
        urn=node_group.urn,
        instance_type=instance_type,
        accelerator_model=row.accelerator_model if row else None,
        min_size=as_int(get(scaling, "minSize")) or 0,
        desired_size=as_int(get(scaling, "desiredSize")) or 0,
        max_size=as_int(get(scaling, "maxSize")) or 0,
        gpus_per_node=row.accelerator_count if row else 0,
        gpu_memory_gib_per_node=row.total_accelerator_memory_gib if row else 0,
        efa_interfaces=efa,
        efa_max=row.max_efa_interfaces if row else 0,
        fabric_gbps_per_node=fabric_gbps(instance_type, efa),
        placement_group=_placement_group(index, lt),
        availability_zones=_availability_zones(index, node_group, lt, existing_subnets or {}),
        subnets=len(get(node_group.inputs, "subnetIds") or []),
        taints=tuple(
            f"{t.get('key')}={t.get('value', '')}:{t.get('effect')}"
            for t in node_group.inputs.get("taints") or []
            if isinstance(t, dict)
        ),
        capacity=_capacity(node_group, lt),
        root_volume_gib=_root_volume_gib(lt, node_group),
    )


# -------------------------------------------------------------------------------------------- storage


def file_system_summary(fs: RecordedResource, demand_mb_s: float, index: Index | None = None) -> FileSystemSummary:
    deployment = get(fs.inputs, "deploymentType")
    capacity = as_int(get(fs.inputs, "storageCapacity")) or 0
    per_unit = as_int(get(fs.inputs, "perUnitStorageThroughput"))
    return FileSystemSummary(
        name=fs.name,
        urn=fs.urn,
        deployment_type=str(deployment) if deployment else None,
        capacity_gib=capacity,
        throughput_mb_s_per_tib=per_unit,
        efa_enabled=bool(get(fs.inputs, "efaEnabled")),
        throughput_mb_s=lustre_throughput_mb_s(fs.inputs),
        demand_mb_s=demand_mb_s,
        availability_zones=tuple(
            sorted(
                {
                    str(zone)
                    for subnet in index.refs(fs, "subnetIds", SUBNET)
                    if (zone := get(subnet.inputs, "availabilityZone"))
                }
            )
        )
        if index is not None
        else (),
    )


# ---------------------------------------------------------------------------------------------- add-ons


def addon_summaries(index: Index) -> tuple[AddonSummary, ...]:
    found: list[AddonSummary] = []
    for release in index.of_type(HELM_RELEASE, HELM_CHART):
        found.append(
            AddonSummary(
                kind="helm",
                name=str(get(release.inputs, "name") or release.name),
                chart=str(get(release.inputs, "chart") or ""),
                version=str(get(release.inputs, "version") or ""),
                namespace=str(get(release.inputs, "namespace") or ""),
            )
        )
    for addon in index.of_type(EKS_ADDON):
        found.append(
            AddonSummary(
                kind="eks-addon",
                name=str(get(addon.inputs, "addonName") or addon.name),
                chart=str(get(addon.inputs, "addonName") or ""),
                version=str(get(addon.inputs, "addonVersion") or ""),
                namespace="kube-system",
            )
        )
    return tuple(found)


def hyperpod_summaries(index: Index) -> tuple[HyperPodGroupSummary, ...]:
    found: list[HyperPodGroupSummary] = []
    for cluster in index.of_type(HYPERPOD_CLUSTER):
        for group in cluster.inputs.get("instanceGroups") or []:
            if not isinstance(group, dict):
                continue
            found.append(
                HyperPodGroupSummary(
                    cluster=str(get(cluster.inputs, "clusterName") or cluster.name),
                    name=str(get(group, "instanceGroupName") or ""),
                    instance_type=str(get(group, "instanceType") or ""),
                    count=as_int(get(group, "instanceCount")) or 0,
                )
            )
    return tuple(found)


ACCELERATOR_QUOTAS = ("requests.nvidia.com/gpu", "requests.aws.amazon.com/neuron")


def team_summaries(index: Index) -> tuple[TeamSummary, ...]:
    """The team namespaces, each with the accelerators its ResourceQuotas allow (0 when none caps them)."""
    namespaces = index.of_type(NAMESPACE)
    teams = [
        str(get(ns.inputs, "metadata", "name"))
        for ns in namespaces
        if (get(ns.inputs, "metadata", "labels") or {}).get(TENANT_LABEL) == TENANT_TEAM
    ]
    quota: dict[str, int] = {}
    for q in index.of_type(RESOURCE_QUOTA):
        namespace = str(get(q.inputs, "metadata", "namespace") or "")
        hard = get(q.inputs, "spec", "hard") or {}
        found = sum(as_int(hard.get(key)) or 0 for key in ACCELERATOR_QUOTAS if isinstance(hard, dict))
        quota[namespace] = quota.get(namespace, 0) + found
    return tuple(TeamSummary(name, quota.get(name, 0)) for name in teams)


def _endpoint_azs(index: Index) -> tuple[int, int]:
    endpoints = [r for r in index.of_type(VPC_ENDPOINT) if get(r.inputs, "vpcEndpointType") == "Interface"]
    azs = 0
    for endpoint in endpoints:
        subnets = endpoint.inputs.get("subnetIds") or endpoint.inputs.get("subnetConfigurations") or []
        azs += len(subnets) if isinstance(subnets, list) else 0
    return len(endpoints), azs


def summarize(recording: Recording, stack: StackConfig) -> Summary:
    """The summary of one plan."""
    index = Index(recording)
    existing = stack.network.existing_vpc
    existing_subnets = {sid: az for az, sid in existing.private_subnet_ids.items()} if existing else {}
    node_groups = tuple(node_group_summary(index, ng, existing_subnets) for ng in index.of_type(NODE_GROUP))
    hyperpod = hyperpod_summaries(index)
    demand = stack.storage_demand_mb_s
    endpoints, endpoint_azs = _endpoint_azs(index)
    type_counts: dict[str, int] = {}
    for resource in recording.resources:
        type_counts[resource.type] = type_counts.get(resource.type, 0) + 1
    return Summary(
        stack=recording.stack,
        environment=stack.environment.value,
        region=stack.region,
        name=stack.name,
        preview=recording.preview,
        resource_count=len(recording.resources),
        custom_count=sum(1 for r in recording.resources if r.custom),
        component_count=sum(1 for r in recording.resources if not r.custom),
        node_groups=node_groups,
        file_systems=tuple(file_system_summary(fs, demand, index) for fs in index.of_type(FSX_LUSTRE)),
        bucket_count=len(index.of_type(*S3_BUCKETS)),
        nat_gateways=len(index.of_type(NAT_GATEWAY)),
        interface_endpoints=endpoints,
        interface_endpoint_azs=endpoint_azs,
        eks_clusters=tuple(
            (
                str(get(c.inputs, "name") or c.name),
                str(get(c.inputs, "version") or ""),
                str(get(c.inputs, "upgradePolicy", "supportType") or "STANDARD"),
            )
            for c in index.of_type(EKS_CLUSTER)
        ),
        addons=addon_summaries(index),
        hyperpod=hyperpod,
        accelerators_max=stack.accelerators_at_max,
        gpu_budget=stack.cost.max_gpus,
        per_gpu_read_mb_s=stack.storage.fsx.per_gpu_read_mb_s,
        type_counts=dict(sorted(type_counts.items())),
        teams=team_summaries(index),
    )

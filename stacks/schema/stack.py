"""The root `trainstack:cluster` object: tags, cost, every area, and the rules that span them."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Literal, Self

from pydantic import Field, model_validator

from stacks.catalog import CATALOG, Accelerator
from stacks.cfn_data import cfn_lint_version, sagemaker_cluster_instance_types
from stacks.compatibility import efa_plugin_problem, kube_proxy_problem, kubelet_problem, kueue_trainer_problem
from stacks.schema.base import Environment, Spec
from stacks.schema.eks import EksSpec
from stacks.schema.gpu import (
    HYPERPOD_HEALTH_LABEL,
    HYPERPOD_INSTANCE_GROUP_LABEL,
    HYPERPOD_SCHEDULABLE,
    AmiFamily,
    CapacityType,
    GpuNodeGroupSpec,
    effective_ami_family,
)
from stacks.schema.health import HealthSpec
from stacks.schema.kubernetes import KubernetesSpec
from stacks.schema.network import NetworkSpec
from stacks.schema.sagemaker import (
    HYPERPOD_EKS_VERSIONS_DOCUMENTED,
    HYPERPOD_EKS_VERSIONS_UNCONFIRMED,
    HyperPodGroupRole,
    HyperPodInstanceGroupSpec,
    HyperPodOrchestrator,
    SageMakerSpec,
    hyperpod_eks_version_problem,
)
from stacks.schema.security import SecuritySpec
from stacks.schema.storage import FsxDeploymentType, StorageSpec
from stacks.schema.values import Limits, Region, ResourceName, TagKey, TagValue
from stacks.schema.waivers import WaiverSpec

# AWS keeps 5 addresses of every subnet (VPC User Guide, "Subnet CIDR blocks": network, router, DNS, future
# use, broadcast).
SUBNET_RESERVED_ADDRESSES = 5
# Pod addresses a node can take from its subnet under the VPC CNI (secondary-IP mode): the Kubernetes default of
# 110 pods per node, which EKS's max-pods calculation recommends for nodes under 30 vCPUs; large GPU nodes
# run far fewer pods. A planning allowance, not an AWS limit.
POD_ADDRESSES_PER_NODE = 110

# trainstack's security groups, by role (components/network/network.py and the EKS cluster's own group).
SecurityGroupRole = Literal["cluster", "efa", "workload"]


# The tags trainstack sets on every resource itself (the AWS provider's default_tags, launch templates' instance,
# volume and network-interface tags); the `cost-tags` policy requires them (policies/facts_generated.py).
PROJECT_TAG = "project"
ENV_TAG = "env"
COST_CENTER_TAG = "cost-center"
OWNER_TAG = "owner"
REQUIRED_TAGS = (PROJECT_TAG, ENV_TAG, COST_CENTER_TAG, OWNER_TAG)


class TagsSpec(Spec):
    """Cost-allocation tags. They go on the AWS provider's default_tags (and launch templates' instances,
    volumes and network interfaces), together with `project` and `env`, which trainstack sets itself."""

    cost_center: TagValue = Field(min_length=1, description="Value of the `cost-center` tag.")
    owner: TagValue = Field(min_length=1, description="Value of the `owner` tag (team or e-mail).")
    extra: dict[TagKey, TagValue] = Field(
        default_factory=dict,
        max_length=Limits.EXTRA_TAGS,
        description=f"Further tags for every resource (AWS tag rules; at most {Limits.EXTRA_TAGS}).",
    )

    @model_validator(mode="after")
    def _no_reserved_keys(self) -> Self:
        reserved = set(REQUIRED_TAGS) & set(self.extra)
        if reserved:
            raise ValueError(f"tags.extra may not set {sorted(reserved)}: trainstack sets these itself")
        return self


class CostSpec(Spec):
    """Guardrails and assumptions for the cost estimate and the GPU budget policy."""

    max_gpus: int = Field(
        ge=0,
        le=Limits.ACCELERATORS,
        description="GPU budget: the accelerators of every GPU node group at max size, plus an enabled HyperPod "
        "cluster's, may not exceed it.",
    )
    hours_per_month: float = Field(default=730.0, gt=0, le=744, description="Hours in a billing month.")


class ExistingClusterSpec(Spec):
    """Platform-only mode: an EKS cluster trainstack does not own (a team's, or a SageMaker HyperPod cluster's EKS
    orchestrator). trainstack creates no VPC, cluster or node groups there: only the Kubernetes layer (GPU
    Operator, EFA plugin, Kueue, Trainer, runtimes, tenancy, health, metrics-server), the teams' IAM and, when
    asked, the FSx CSI driver and volumes. docs/existing-infra.md says what the cluster must already have."""

    name: str = Field(pattern=r"^[0-9A-Za-z][A-Za-z0-9_-]{0,99}$", description="The EKS cluster's name.")
    hyperpod: bool = Field(
        default=False,
        description="The cluster orchestrates a SageMaker HyperPod cluster: HyperPod's dependencies chart already "
        "runs the NVIDIA and EFA device plugins there, so trainstack installs neither. A group whose selector names "
        "a HyperPod instance group (sagemaker.amazonaws.com/instance-group-name) must also select "
        "sagemaker.amazonaws.com/node-health-status: Schedulable (refused otherwise), so its queue never admits "
        "a job onto a node HyperPod is checking, replacing or rebooting.",
    )


def _minor_number(version: str) -> int:
    """`1.36` -> 36: the minor of a Kubernetes version."""
    return int(version.split(".")[1])


class StackConfig(Spec):
    """The `trainstack:cluster` object of one stack."""

    environment: Environment = Field(description="dev, staging or prod; decides protection and policy levels.")
    region: Region = Field(description="AWS region, for example us-east-1 (stacks/regions.py lists them).")
    name: ResourceName = Field(description="Base name for every resource, for example trainstack-dev.")
    tags: TagsSpec = Field(description="Cost-allocation tags.")
    cost: CostSpec = Field(description="GPU budget and cost assumptions.")
    network: NetworkSpec = Field(description="VPC, subnets, NAT, endpoints, flow logs.")
    eks: EksSpec = Field(description="EKS control plane and add-ons.")
    existing_cluster: ExistingClusterSpec | None = Field(
        default=None,
        description="Platform-only mode: put trainstack's Kubernetes layer on this existing EKS cluster; needs "
        "network.existing_vpc (its VPC) and a `selector` on every GPU group, each of fixed size (min_size = max_size: "
        "trainstack scales no group it does not own). `eks.version` is then the cluster's "
        "version and `eks.addons.fsx_csi_driver` the FSx CSI driver's; the other eks keys describe nothing created.",
    )
    gpu_node_groups: list[GpuNodeGroupSpec] = Field(
        default_factory=list[GpuNodeGroupSpec], max_length=Limits.GPU_NODE_GROUPS, description="GPU node groups."
    )
    storage: StorageSpec = Field(description="S3 buckets and FSx for Lustre.")
    kubernetes: KubernetesSpec = Field(description="GPU Operator, EFA plugin, Kueue, teams, validation.")
    sagemaker: SageMakerSpec = Field(default_factory=SageMakerSpec, description="Optional SageMaker HyperPod.")
    health: HealthSpec = Field(
        default_factory=HealthSpec, description="Node monitoring, auto repair, metrics, dashboards, alerts."
    )
    security: SecuritySpec = Field(
        default_factory=SecuritySpec, description="Key administrators, image registries, data perimeter, Object Lock."
    )
    waivers: list[WaiverSpec] = Field(
        default_factory=list[WaiverSpec],
        description="Written exemptions, each from one policy rule for one resource; the plan lists every one.",
    )

    @model_validator(mode="after")
    def _cross_field(self) -> Self:
        """Every rule that spans areas (CROSS_FIELD_RULES, in order); all their problems in one error."""
        problems = [problem for rule in CROSS_FIELD_RULES for problem in rule(self)]
        if problems:
            raise ValueError("\n".join(problems))
        return self

    def _unique_group_names(self) -> list[str]:
        """GPU group names name their resources and queues: two groups of one name would collide."""
        names = [g.name for g in self.gpu_node_groups]
        if len(set(names)) != len(names):
            return [f"gpu_node_groups names must be unique, got {names}"]
        return []

    def _group_zones_in_network(self) -> list[str]:
        """A GPU group lands in one of the network's AZs: only those have its subnets."""
        azs = self.network.availability_zones
        return [
            f"gpu_node_groups.{i}.availability_zone {group.availability_zone} is not in "
            f"network.availability_zones {azs}"
            for i, group in enumerate(self.gpu_node_groups)
            if group.availability_zone not in azs
        ]

    def _zones_in_region(self) -> list[str]:
        """The network's AZs belong to the stack's region."""
        return [
            f"network.availability_zones entry {az} is not in region {self.region}"
            for az in self.network.availability_zones
            if not az.startswith(self.region)
        ]

    def _members_not_admins(self) -> list[str]:
        """An IAM role has one EKS access entry: a team member cannot also be an admin."""
        admins = set(self.eks.admin_role_arns)
        return [
            f"kubernetes.teams.{i}.member_role_arns.{j} {role} is in eks.admin_role_arns: an IAM role has "
            "one EKS access entry; admins already reach every namespace"
            for i, team in enumerate(self.kubernetes.teams)
            for j, role in enumerate(team.member_role_arns)
            if role in admins
        ]

    def _node_version_problems(self) -> list[str]:
        """Each node group runs its own Kubernetes version (the cluster's when left out): never newer than the
        control plane, at most three minors older; its AL2023 AMI release belongs to that version (EKS refuses
        another)."""
        system = self.eks.system_node_group
        groups = [("eks.system_node_group", True, system.ami_release_version, system.kubernetes_version)] + [
            (
                f"gpu_node_groups.{i}",
                g.ami_family.value.startswith("AL2023"),
                g.ami_release_version,
                g.kubernetes_version,
            )
            for i, g in enumerate(self.gpu_node_groups)
        ]
        problems: list[str] = []
        for where, al2023, release, own in groups:
            if own is not None and (skew := kubelet_problem(self.eks.version, own)):
                problems.append(f"{where}.kubernetes_version {own}: {skew}")
            runs = own or self.eks.version
            if release and al2023 and not release.startswith(f"{runs}."):
                key = f"{where}.kubernetes_version" if own else "eks.version"
                problems.append(
                    f"{where}.ami_release_version {release} is not a release for Kubernetes {runs} ({key}); AL2023 "
                    f"releases look like {runs}.0-20260915 (pin {where}.kubernetes_version to keep a release while "
                    "the control plane moves)"
                )
        return problems

    def _gpu_budget(self) -> list[str]:
        """The budget counts every accelerator trainstack can start: GPU node groups and HyperPod groups."""
        if self.accelerators_at_max <= self.cost.max_gpus:
            return []
        node_group_gpus = self.accelerators_at_max - self.hyperpod_accelerators
        return [
            f"GPU node groups ({node_group_gpus} at max size) and HyperPod ({self.hyperpod_accelerators}) reach "
            f"{self.accelerators_at_max} accelerators, over cost.max_gpus {self.cost.max_gpus}"
        ]

    def _waivers_for_this_environment(self) -> list[str]:
        """A waiver applies only in the environment it was granted for."""
        return [
            f"waivers.{i}.environment {w.environment.value}: this is a {self.environment.value} stack, and a waiver "
            "applies only in the environment it was granted for; grant it for this environment or remove it"
            for i, w in enumerate(self.waivers)
            if w.environment is not self.environment
        ]

    def _waivers_once_each(self) -> list[str]:
        """One waiver per rule and resource: a second one says nothing the first does not."""
        pairs = [(w.rule, w.resource) for w in self.waivers]
        return [
            f"waivers: {rule} on {res} is waived twice"
            for rule, res in sorted(set(pairs))
            if pairs.count((rule, res)) > 1
        ]

    def _lustre_over_efa_problems(self) -> list[str]:
        """EFA groups may sit in several AZs (each group in one: reservations land where capacity is); FSx stays in
        the first EFA group's AZ and the plan prices the other groups' cross-AZ reads. Lustre over EFA cannot
        follow them: EFA traffic does not leave its subnet. And it needs an EFA group to serve."""
        fsx = self.storage.fsx
        if not (fsx.enabled and fsx.efa_enabled):
            return []
        efa_azs = sorted({g.availability_zone for g in self.gpu_node_groups if g.efa_enabled})
        if len(efa_azs) > 1:
            return [
                f"storage.fsx.efa_enabled with EFA GPU groups in {efa_azs}: Lustre over EFA reaches clients in its "
                f"own subnet only ({self.gpu_availability_zone}); keep the EFA groups in one AZ or turn it off"
            ]
        if not efa_azs:
            return ["storage.fsx.efa_enabled needs at least one EFA GPU node group to serve"]
        return []

    def _private_cluster_endpoints(self) -> list[str]:
        """Nodes reach a private endpoint inside the VPC either way; this is trainstack's policy for private
        clusters, not an EKS requirement (interface endpoints are required only without NAT)."""
        if self.eks.endpoint_public_access or not self.network.creates_vpc or self.network.interface_endpoints:
            return []
        return [
            "eks.endpoint_public_access is false: set network.interface_endpoints true (trainstack policy: a "
            "private cluster keeps its AWS API traffic on interface endpoints, off NAT)"
        ]

    def _existing_vpc_s3_endpoint(self) -> list[str]:
        """The buckets' policy admits requests through the VPC's S3 gateway endpoint only; trainstack creates none
        in a VPC it does not own, so it must be named."""
        existing = self.network.existing_vpc
        if existing is None or existing.s3_endpoint_id is not None or not self.data_buckets_vpc_only:
            return []
        return [
            "network.existing_vpc.s3_endpoint_id is missing: the data buckets admit only requests through the "
            "VPC's S3 gateway endpoint here (security.data_buckets_vpc_only, on outside dev); give its id "
            "(vpce-...) or set security.data_buckets_vpc_only false"
        ]

    def _validation_target(self) -> list[str]:
        """The validation jobs run on an NVIDIA EFA group that can have the nodes they ask for."""
        validation = self.kubernetes.validation
        if not (validation and validation.enabled):
            return []
        candidates = [g.name for g in self.validation_candidates]
        target = self.validation_node_group
        if validation.node_group is not None and validation.node_group not in candidates:
            return [
                f"kubernetes.validation.node_group {validation.node_group!r} must name an NVIDIA EFA GPU "
                f"group (the NCCL and DCGM jobs are NVIDIA-only); valid: {candidates}"
            ]
        if target is not None and validation.nodes > target.max_size:
            # The NCCL job would wait forever for nodes the group can never have.
            return [
                f"kubernetes.validation.nodes {validation.nodes} exceeds the max_size {target.max_size} of "
                f"GPU group {target.name!r}; use at most {target.max_size}"
            ]
        return []

    def _scratch_for_dev_only(self) -> list[str]:
        """SCRATCH_2 keeps no replica: a lost server loses its data, which only dev accepts."""
        if self.environment is not Environment.DEV and self.storage.fsx.deployment_type is FsxDeploymentType.SCRATCH_2:
            return [f"storage.fsx.deployment_type SCRATCH_2 is for dev only, not {self.environment.value}"]
        return []

    def _neuron_device_plugin(self) -> list[str]:
        """Without the Neuron device plugin, Trainium nodes never advertise aws.amazon.com/neuron: nothing
        schedules."""
        if not self.neuron_node_groups or self.kubernetes.neuron_device_plugin is not None:
            return []
        return [
            f"gpu_node_groups {[g.name for g in self.neuron_node_groups]} are Neuron (Trainium): set "
            "kubernetes.neuron_device_plugin "
            "(remove the null to use the pinned default chart_version)"
        ]

    def _hyperpod_instance_types_offered(self) -> list[str]:
        """HyperPod offers its own list of instance types per region (cfn-lint's regional data)."""
        hyperpod = self.sagemaker.hyperpod
        if not hyperpod.enabled:
            return []
        offered = sagemaker_cluster_instance_types(self.region)
        return [
            f"sagemaker.hyperpod.instance_groups.{i}.instance_type {g.instance_type} is not offered for HyperPod "
            f"in {self.region} (AWS::SageMaker::Cluster InstanceType, cfn-lint {cfn_lint_version()} regional list)"
            for i, g in enumerate(hyperpod.instance_groups)
            if g.instance_type not in offered
        ]

    def _hyperpod_eks_version(self) -> list[str]:
        """HyperPod joins only the EKS versions it supports."""
        if self.hyperpod_on_eks and (problem := hyperpod_eks_version_problem(self.eks.version)):
            return [f"sagemaker.hyperpod.orchestrator eks with eks.version {self.eks.version}: {problem}"]
        return []

    def _slurm_fsx_problems(self) -> list[str]:
        """What the Slurm lifecycle needs from FSx for Lustre (docs/hyperpod-slurm.md, "/fsx under root squash")."""
        hyperpod, fsx = self.sagemaker.hyperpod, self.storage.fsx
        if not hyperpod.enabled or hyperpod.orchestrator.value != "slurm":
            return []
        slurm = hyperpod.slurm
        problems: list[str] = []
        if not fsx.enabled:
            # Homes, the users' SSH keys and the accounting database's backups must outlive a node: that is /fsx.
            needs = {
                "homes_on_lustre true": slurm.homes_on_lustre,
                f"users {[u.name for u in slurm.users]}": bool(slurm.users),
                "accounting true": slurm.accounting,
            }
            problems += [
                f"sagemaker.hyperpod.slurm.{setting} needs storage.fsx.enabled: the lifecycle keeps homes, SSH keys "
                "and the accounting database's backups on /fsx; enable FSx for Lustre or turn the setting off"
                for setting, on in needs.items()
                if on
            ]
            return problems
        if fsx.squashes_root and not fsx.no_squash_nids:
            problems.append(
                f"storage.fsx.root_squash {fsx.root_squash} with storage.fsx.no_squash_nids [] and a Slurm HyperPod "
                "cluster: its nodes need /fsx world-writable and sticky (mode 1777), which under root squash only a "
                "client exempt from it can set, once; list an administration host in storage.fsx.no_squash_nids"
            )
        squash_uid = fsx.root_squash.split(":")[0] if fsx.squashes_root and fsx.root_squash else None
        for i, user in enumerate(slurm.users):
            if str(user.uid) == squash_uid:
                problems.append(
                    f"sagemaker.hyperpod.slurm.users.{i}.uid {user.uid} ({user.name}) is storage.fsx.root_squash's "
                    f"UID ({fsx.root_squash}): root on every node would act as {user.name} on /fsx; give the user "
                    "another uid or squash root to one no user has (65534:65534)"
                )
        return problems

    def _runtime_image_problems(self) -> list[str]:
        """Training runtime pods run in the team namespaces, whose registry policy (components/k8s/tenancy.py) refuses
        an unapproved image: a default image from elsewhere would stop every TrainJob that keeps it, and the
        restart-wait init container runs in every one."""
        operator = self.kubernetes.training_operator
        if operator.kind != "kubeflow_trainer":
            return []
        allowed = self.security.allowed_image_registries
        private_ecr = re.compile(rf"^\d{{12}}\.dkr\.ecr\.{re.escape(self.region)}\.amazonaws\.com/")
        runtimes = operator.runtimes
        images = {
            "torch_image": runtimes.torch_image,
            "mpi_image": runtimes.mpi_image,
            "restart_wait_image": runtimes.restart_wait_image,
        }
        return [
            f"kubernetes.training_operator.runtimes.{key} {image} is not from an approved registry "
            f"(security.allowed_image_registries {allowed}, or the account's private ECR in {self.region}): team "
            "namespaces would refuse the training runtime's pods"
            for key, image in images.items()
            if not any(image.startswith(prefix) for prefix in allowed) and not private_ecr.match(image)
        ]

    def _restricted_team_problems(self) -> list[str]:
        """A `restricted` team namespace must be able to run every runtime the stack installs: the torch runtime
        runs as the squash identity with the restricted settings, the MPI runtime's workers run sshd as root
        (kubernetes/pod-security-admission v0.36.2 policy check_runAsNonRoot and check_runAsUser refuse it)."""
        operator = self.kubernetes.training_operator
        installs_mpi = (
            operator.kind == "kubeflow_trainer"
            and operator.runtimes.mpi
            and any(CATALOG[g.instance_type].accelerator is Accelerator.NVIDIA for g in self.gpu_node_groups)
        )
        if not installs_mpi:
            return []
        return [
            f"kubernetes.teams.{i}.pod_security restricted: the MPI runtime (trainstack-mpi-<group>) runs sshd as "
            "root in its workers, which the restricted level refuses (runAsNonRoot, runAsUser 0), so this team's "
            "MPI TrainJobs would never start; set kubernetes.training_operator.runtimes.mpi false (the torch "
            "runtime runs restricted) or pod_security baseline"
            for i, team in enumerate(self.kubernetes.teams)
            if team.pod_security == "restricted"
        ]

    def _security_problems(self) -> list[str]:
        """The protections docs/security.md promises outside dev cannot be switched off in the stack file."""
        if self.environment is Environment.DEV:
            return []
        problems: list[str] = []
        if self.storage.fsx.root_squash is None:
            problems.append(
                f"storage.fsx.root_squash is null: root squash is required in {self.environment.value} "
                '(use "65534:65534" and list exempt administration hosts in storage.fsx.no_squash_nids)'
            )
        problems += self._principal_overlaps()
        if self.environment is Environment.PROD:
            if self.security.checkpoint_lock is None:
                problems.append(
                    "security.checkpoint_lock is unset: prod checkpoints need S3 Object Lock, for example "
                    "{mode: GOVERNANCE, retention_days: 14}"
                )
            if self.security.team_internet_egress:
                problems.append(
                    "security.team_internet_egress is true: prod team pods reach only the VPC and S3 (a pod with the "
                    "team's credentials and data must not open HTTPS to anywhere); mirror what they download into "
                    "S3 or the account's ECR"
                )
            if self.security.data_buckets_vpc_only is False:
                problems.append(
                    "security.data_buckets_vpc_only is false: prod data buckets deny access from outside the VPC; "
                    "exempt specific roles with security.outside_vpc_data_role_arns instead"
                )
        return problems

    def _principal_overlaps(self) -> list[str]:
        """Who administers the keys does not use the data, and who may reach the data from outside the VPC is not
        a team member: a key administrator who reads the data can also re-key or destroy it, and a member exempt
        from the perimeter reads every team's data from anywhere (IAM role names are not case-sensitive)."""
        security = self.security
        members: dict[str, str] = {
            arn.lower(): team.name for team in self.kubernetes.teams for arn in team.member_role_arns
        }
        exempt = {arn.lower() for arn in security.outside_vpc_data_role_arns}
        problems = [
            f"security.key_administrator_arns.{i} {arn} is also a member of team {members[arn.lower()]}: in "
            f"{self.environment.value} who administers the data's keys does not use the data; name separate roles"
            for i, arn in enumerate(security.key_administrator_arns)
            if arn.lower() in members
        ]
        problems += [
            f"security.key_administrator_arns.{i} {arn} is also in security.outside_vpc_data_role_arns: in "
            f"{self.environment.value} who administers the data's keys does not use the data; name separate roles"
            for i, arn in enumerate(security.key_administrator_arns)
            if arn.lower() in exempt
        ]
        problems += [
            f"security.outside_vpc_data_role_arns.{i} {arn} is a member of team {members[arn.lower()]}: a team "
            "member exempt from the data perimeter reads every team's data from outside the VPC; exempt a "
            "dedicated ingest or break-glass role instead"
            for i, arn in enumerate(security.outside_vpc_data_role_arns)
            if arn.lower() in members
        ]
        return problems

    def _version_pairings(self) -> list[str]:
        """Known-broken pairings of versions that must move together (stacks/compatibility.py)."""
        problems: list[str] = []
        k8s = self.kubernetes
        if k8s.training_operator.kind == "kubeflow_trainer":
            why = kueue_trainer_problem(k8s.kueue.chart_version, k8s.training_operator.version)
            if why:
                problems.append(f"kubernetes.kueue.chart_version / kubernetes.training_operator.version: {why}")
        why = kube_proxy_problem(self.eks.version, self.eks.addons.kube_proxy)
        if why:
            problems.append(f"eks.addons.kube_proxy: {why}")
        for i, group in enumerate(self.gpu_node_groups):
            why = (
                efa_plugin_problem(k8s.efa_device_plugin.chart_version, group.instance_type)
                if group.efa_enabled
                else None
            )
            if why:
                problems.append(f"kubernetes.efa_device_plugin.chart_version (gpu_node_groups.{i}): {why}")
        # cluster-autoscaler's minor follows the Kubernetes minor it supports (its FAQ, "Releases"); checked where
        # the stack runs one. One minor behind is the upgrade's in-between step (control plane first, then the
        # add-ons and the autoscaler: docs/day2.md); newer than the control plane or further behind is refused.
        autoscaler = k8s.cluster_autoscaler
        if autoscaler.minor is not None and self.autoscaled_groups:
            behind = _minor_number(self.eks.version) - _minor_number(autoscaler.minor)
            if behind not in (0, 1):
                problems.append(
                    f"kubernetes.cluster_autoscaler.image_tag {autoscaler.image_tag} is for Kubernetes "
                    f"{autoscaler.minor}, but eks.version is {self.eks.version}: use a v{self.eks.version}.x release "
                    "(or one minor behind while upgrading) or leave it out"
                )
        return problems

    def _platform_only_problems(self) -> list[str]:
        """An existing cluster: its VPC, its groups' labels, and nothing trainstack would create beside it."""
        if self.existing_cluster is None:
            return [
                f"gpu_node_groups.{i}.selector is for an existing cluster's groups (existing_cluster): trainstack "
                "labels the nodes of the groups it creates itself"
                for i, g in enumerate(self.gpu_node_groups)
                if g.selector
            ]
        problems: list[str] = []
        if self.network.existing_vpc is None:
            problems.append("existing_cluster needs network.existing_vpc: the cluster's VPC and private subnets")
        problems += [
            f"gpu_node_groups.{i} ({g.name}) needs a selector on an existing cluster: the labels its nodes carry"
            for i, g in enumerate(self.gpu_node_groups)
            if not g.selector
        ]
        # trainstack runs no cluster-autoscaler for groups it does not own, so nothing would answer Kueue's
        # provisioning check: a queue on an existing cluster admits onto the nodes that exist.
        problems += [
            f"gpu_node_groups.{i} ({g.name}) min_size {g.min_size} < max_size {g.max_size} on an existing cluster: "
            "trainstack scales no group it does not own, so its queue admits jobs onto the nodes that exist; "
            "describe them with min_size = desired_size = max_size"
            for i, g in enumerate(self.gpu_node_groups)
            if g.min_size < g.max_size
        ]
        problems += [
            f"gpu_node_groups.{i} ({g.name}) capacity capacity_block on an existing cluster: a block's queue waits "
            "for trainstack's cluster-autoscaler, which runs only on a cluster trainstack creates"
            for i, g in enumerate(self.gpu_node_groups)
            if g.capacity.type is CapacityType.CAPACITY_BLOCK
        ]
        if self.sagemaker.hyperpod.enabled:
            problems.append(
                "existing_cluster with sagemaker.hyperpod.enabled: trainstack creates no HyperPod cluster on a cluster "
                "it does not own; describe an existing HyperPod cluster's groups as gpu_node_groups with a selector"
            )
        if self.storage.fsx.enabled and self.storage.fsx.existing is None:
            problems.append(
                "existing_cluster with a new FSx file system: name the cluster's file system (storage.fsx.existing) "
                "or set storage.fsx.enabled false"
            )
        return problems

    def _hyperpod_groups_select_schedulable(self) -> list[str]:
        """On a HyperPod cluster, a group of HyperPod's nodes (its selector names an instance group) selects only the
        nodes HyperPod marks Schedulable: its queue must not admit jobs onto a node under deep health checks or
        pending replacement or reboot (SageMaker Developer Guide, "Resilience-related Kubernetes labels")."""
        if self.existing_cluster is None or not self.existing_cluster.hyperpod:
            return []
        problems: list[str] = []
        for i, g in enumerate(self.gpu_node_groups):
            health = g.selector.get(HYPERPOD_HEALTH_LABEL)
            if HYPERPOD_INSTANCE_GROUP_LABEL in g.selector and health != HYPERPOD_SCHEDULABLE:
                problems.append(
                    f"gpu_node_groups.{i} ({g.name}).selector['{HYPERPOD_HEALTH_LABEL}'] is "
                    f"{repr(health) if health is not None else 'absent'} on HyperPod instance group "
                    f"{g.selector[HYPERPOD_INSTANCE_GROUP_LABEL]!r}; valid: {HYPERPOD_SCHEDULABLE!r}, so its queue "
                    "never admits a job onto a node HyperPod is checking, replacing or rebooting"
                )
        return problems

    @property
    def platform_only(self) -> bool:
        """Whether trainstack puts only its Kubernetes layer on an existing cluster."""
        return self.existing_cluster is not None

    @property
    def autoscaled_groups(self) -> list[GpuNodeGroupSpec]:
        """GPU groups cluster-autoscaler serves: those that can grow, and Capacity Blocks (whose queue asks it
        whether the block's nodes exist); the same rule as components/k8s/autoscaling.py `admission`."""
        return [
            g for g in self.gpu_node_groups if g.min_size < g.max_size or g.capacity.type is CapacityType.CAPACITY_BLOCK
        ]

    def nodes_per_subnet(self) -> dict[str, int]:
        """Nodes each AZ's private subnet may hold at every group's max size. The system group may land wholly
        in any AZ, so it counts in each; HyperPod's instances sit in the GPU AZ."""
        nodes = dict.fromkeys(self.network.availability_zones, self.eks.system_node_group.max_size)
        for group in self.gpu_node_groups:
            if group.availability_zone in nodes:
                nodes[group.availability_zone] += group.max_size
        if self.sagemaker.hyperpod.enabled and self.gpu_availability_zone in nodes:
            nodes[self.gpu_availability_zone] += sum(g.instance_count for g in self.sagemaker.hyperpod.instance_groups)
        return nodes

    def _subnet_capacity_problems(self) -> list[str]:
        """Each AZ's private subnet must hold, at every group's max size, one address per node for its
        primary interface (trainstack's EFA layouts add only `efa-only` interfaces, which take none) and one per
        pod the VPC CNI can place on it (`nodes_per_subnet`; preflight holds an existing subnet's free addresses
        against the same need). With `network.pod_network` (custom networking) the pods take their addresses from
        the AZ's pod subnet instead, so each subnet is held against its own half of the need."""
        usable = 2 ** (32 - self.network.private_subnet_prefix_length) - SUBNET_RESERVED_ADDRESSES
        nodes = self.nodes_per_subnet()
        pods = self.network.pod_network
        if pods is not None:
            pod_usable = pods.per_subnet_addresses - SUBNET_RESERVED_ADDRESSES
            return [
                f"network.private_subnet_prefix_length /{self.network.private_subnet_prefix_length} gives {usable} "
                f"addresses in {az}, fewer than its {count} nodes at max size: use a larger private subnet"
                for az, count in nodes.items()
                if count > usable
            ] + [
                f"network.pod_network.subnet_prefix_length /{pods.subnet_prefix_length} gives {pod_usable} pod "
                f"addresses in {az}, but {count} nodes at max size need up to {count * POD_ADDRESSES_PER_NODE} "
                f"({POD_ADDRESSES_PER_NODE} pods each): use a larger pod subnet or smaller groups"
                for az, count in nodes.items()
                if count * POD_ADDRESSES_PER_NODE > pod_usable
            ]
        per_node = 1 + POD_ADDRESSES_PER_NODE
        return [
            f"network.private_subnet_prefix_length /{self.network.private_subnet_prefix_length} gives {usable} "
            f"addresses in {az}, but {count} nodes at max size need up to {count * per_node} (1 + "
            f"{POD_ADDRESSES_PER_NODE} pods each): use a larger private subnet (a smaller prefix length) or "
            "smaller groups"
            for az, count in nodes.items()
            if count * per_node > usable
        ]

    def default_tags(self, project: str) -> dict[str, str]:
        """Tags for the AWS provider's default_tags (every taggable resource gets them): the stack's own, then
        the four trainstack sets and requires."""
        return {
            **self.tags.extra,
            PROJECT_TAG: project,
            ENV_TAG: self.environment.value,
            COST_CENTER_TAG: self.tags.cost_center,
            OWNER_TAG: self.tags.owner,
        }

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

    # ------------------------------------------------------------------ facts derived from the config alone

    @property
    def hyperpod_accelerators(self) -> int:
        """Accelerators in an enabled HyperPod cluster (its groups have one fixed count each); 0 without one."""
        return self.sagemaker.hyperpod.accelerators if self.sagemaker.hyperpod.enabled else 0

    @property
    def accelerators_at_max(self) -> int:
        """Every accelerator trainstack can start: each GPU node group at its max size, plus an enabled HyperPod
        cluster's groups (whose nodes mount the same FSx). What `cost.max_gpus` caps and what storage must feed."""
        return sum(g.max_gpus for g in self.gpu_node_groups) + self.hyperpod_accelerators

    @property
    def storage_demand_mb_s(self) -> float:
        """What the accelerators read from FSx when all train at once: accelerators at max x the per-GPU read
        rate (`storage.fsx.per_gpu_read_mb_s`). Sizing compares it with `storage.fsx.throughput_mb_s`."""
        return self.accelerators_at_max * self.storage.fsx.per_gpu_read_mb_s

    @property
    def hyperpod_on_eks(self) -> bool:
        """Whether an enabled HyperPod cluster joins this EKS cluster (orchestrator eks)."""
        hyperpod = self.sagemaker.hyperpod
        return hyperpod.enabled and hyperpod.orchestrator is HyperPodOrchestrator.EKS

    @property
    def hyperpod_eks_groups(self) -> list[HyperPodInstanceGroupSpec]:
        """HyperPod compute groups that join this EKS cluster: they get the EFA plugin, GPU Operator operands and
        Kueue queues like the GPU node groups. Empty without HyperPod on EKS."""
        return self.sagemaker.hyperpod.groups(HyperPodGroupRole.COMPUTE) if self.hyperpod_on_eks else []

    @property
    def hyperpod_eks_nvidia(self) -> bool:
        """Whether NVIDIA HyperPod nodes join this EKS cluster (the GPU Operator then serves them too)."""
        return any(CATALOG[g.ec2_instance_type].accelerator is Accelerator.NVIDIA for g in self.hyperpod_eks_groups)

    @property
    def gpu_operator_ami_family(self) -> AmiFamily | None:
        """The AMI family the one GPU Operator release is configured for (groups whose image differs opt out per
        node); None when no NVIDIA node exists, so no operator is installed."""
        return effective_ami_family(
            (g.ami_family for g in self.gpu_node_groups), hyperpod_nvidia=self.hyperpod_eks_nvidia
        )

    @property
    def efa_plugin_hyperpod_instance_types(self) -> list[str]:
        """HyperPod instance types (ml.*) on this EKS cluster that carry EFA: the EFA plugin must select them."""
        return [g.instance_type for g in self.hyperpod_eks_groups if CATALOG[g.ec2_instance_type].supports_efa]

    @property
    def needs_efa_plugin(self) -> bool:
        """Whether the EFA device plugin is installed: an EFA GPU group, or EFA HyperPod nodes on this cluster."""
        return any(g.efa_enabled for g in self.gpu_node_groups) or bool(self.efa_plugin_hyperpod_instance_types)

    @property
    def neuron_node_groups(self) -> list[GpuNodeGroupSpec]:
        """Trainium (Neuron) GPU node groups: they need the Neuron device plugin."""
        return [g for g in self.gpu_node_groups if CATALOG[g.instance_type].accelerator is Accelerator.NEURON]

    @property
    def hyperpod_security_groups(self) -> tuple[SecurityGroupRole, ...]:
        """Which of trainstack's security groups HyperPod nodes get. EKS-orchestrated nodes are cluster nodes:
        the cluster security group lets them reach the API endpoint and the control plane reach their kubelets
        (and gives them egress), as for the GPU node groups. Slurm nodes get their egress (S3, endpoints, NAT,
        FSx) from the workload group. Both get the EFA group (all traffic to and from itself)."""
        return ("cluster", "efa") if self.hyperpod_on_eks else ("efa", "workload")

    @property
    def hyperpod_eks_version_warning(self) -> str | None:
        """A warning when HyperPod joins an EKS version no public AWS source confirms it supports, else None."""
        if not self.hyperpod_on_eks or self.eks.version not in HYPERPOD_EKS_VERSIONS_UNCONFIRMED:
            return None
        return (
            f"HyperPod on EKS {self.eks.version}: no public AWS source confirms HyperPod supports this Kubernetes "
            f"version (documented: {', '.join(HYPERPOD_EKS_VERSIONS_DOCUMENTED)}); check the SageMaker guide "
            "(EKS support in SageMaker HyperPod, Kubernetes version support) before deploying"
        )

    @property
    def gpu_availability_zone(self) -> str:
        """The GPU AZ, where FSx and HyperPod go: the first EFA group's AZ, else the first GPU group's, else the
        first network AZ."""
        for group in self.gpu_node_groups:
            if group.efa_enabled:
                return group.availability_zone
        if self.gpu_node_groups:
            return self.gpu_node_groups[0].availability_zone
        return self.network.availability_zones[0]

    @property
    def metrics_enabled(self) -> bool:
        """Whether the metrics stack exists: `health.metrics`, or by default everywhere but dev."""
        if self.health.metrics is not None:
            return self.health.metrics
        return self.environment is not Environment.DEV

    @property
    def data_buckets_vpc_only(self) -> bool:
        """Whether the data buckets deny access from outside the VPC: the setting, else on outside dev."""
        setting = self.security.data_buckets_vpc_only
        return self.environment is not Environment.DEV if setting is None else setting

    @property
    def team_internet_egress(self) -> bool:
        """Whether team pods may open HTTPS to anywhere: the setting, else on outside prod."""
        setting = self.security.team_internet_egress
        return self.environment is not Environment.PROD if setting is None else setting

    @property
    def protect_data(self) -> bool:
        """Prod data (FSx, S3, KMS keys, the cluster) is protected against deletion."""
        return self.environment is Environment.PROD


# The rules that span areas, each a StackConfig method returning its problems; run in this order, so the error
# lists their problems in it.
CROSS_FIELD_RULES: tuple[Callable[[StackConfig], list[str]], ...] = (
    StackConfig._platform_only_problems,
    StackConfig._hyperpod_groups_select_schedulable,
    StackConfig._unique_group_names,
    StackConfig._group_zones_in_network,
    StackConfig._zones_in_region,
    StackConfig._members_not_admins,
    StackConfig._node_version_problems,
    StackConfig._gpu_budget,
    StackConfig._waivers_for_this_environment,
    StackConfig._waivers_once_each,
    StackConfig._subnet_capacity_problems,
    StackConfig._lustre_over_efa_problems,
    StackConfig._private_cluster_endpoints,
    StackConfig._existing_vpc_s3_endpoint,
    StackConfig._validation_target,
    StackConfig._runtime_image_problems,
    StackConfig._restricted_team_problems,
    StackConfig._slurm_fsx_problems,
    StackConfig._scratch_for_dev_only,
    StackConfig._neuron_device_plugin,
    StackConfig._hyperpod_instance_types_offered,
    StackConfig._hyperpod_eks_version,
    StackConfig._security_problems,
    StackConfig._version_pairings,
)


def json_schema() -> dict[str, object]:
    """The JSON schema editors use for the `trainstack:cluster` object."""
    return StackConfig.model_json_schema()

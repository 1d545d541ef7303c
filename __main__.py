"""trainstack: the composition root. Load and validate the stack config, build the explicit providers,
compose the components, export what exists. Every decision lives in `stacks/` (what) or `components/`
(how); this file only wires them together."""

import pulumi

from components.account_checks import check_account
from components.deploy_guard import refuse_placeholders, under_mock_engine
from components.eks.eks import EksCluster, EksClusterArgs, control_plane_log_group_name
from components.eks.existing_cluster import ExistingCluster, ExistingClusterArgs
from components.eks.team_access import TeamAccess, TeamAccessArgs, members_by_role
from components.fleet_metrics import dcgm_metrics_csv
from components.gpu.gpu_nodes import GpuNodeGroup, GpuNodeGroupArgs
from components.health.checkpoints import CheckpointAccess, CheckpointAccessArgs
from components.health.observability import FleetHealth, FleetHealthArgs
from components.k8s.autoscaling import needs_autoscaler
from components.k8s.cluster_autoscaler import ClusterAutoscaler, ClusterAutoscalerArgs, ScaledGroup
from components.k8s.efa_device_plugin import EfaDevicePlugin, EfaDevicePluginArgs
from components.k8s.gpu_operator import GpuOperator, GpuOperatorArgs
from components.k8s.metrics_server import MetricsServer, MetricsServerArgs
from components.k8s.neuron_device_plugin import NeuronDevicePlugin, NeuronDevicePluginArgs
from components.k8s.scheduling import Scheduling, SchedulingArgs
from components.k8s.tenancy import Tenancy, TenancyArgs
from components.k8s.training_runtimes import LustreMount, TrainingRuntimes, TrainingRuntimesArgs
from components.k8s.validation_jobs import ValidationJobs, ValidationJobsArgs
from components.k8s_common import custom_taint_tolerations
from components.naming import aws_partition
from components.network.network import Network, NetworkArgs, flow_log_group_name, s3_prefix_cidrs
from components.providers import aws_provider
from components.sagemaker.hyperpod_dependencies import (
    CHART_PATH,
    HYPERPOD_CLI_TAG,
    HyperPodDependencies,
    HyperPodDependenciesArgs,
)
from components.sagemaker.sagemaker_roles import TrainingJobRole, TrainingJobRoleArgs
from components.security.telemetry_key import TelemetryKey, TelemetryKeyArgs, alert_topic_name
from components.storage.buckets import DataBuckets, DataBucketsArgs
from components.storage.lustre import LustreFileSystem, LustreFileSystemArgs
from components.storage.lustre import log_group_name as lustre_log_group_name
from components.storage.lustre_volume import CLAIM_NAME, LustreVolume, LustreVolumeArgs
from components.storage.team_storage import TeamStorageAccess, TeamStorageAccessArgs
from stacks.load import FULL_KEY, ConfigError, check_stack, secret_refusal, validate_object
from stacks.schema import CONFIG_KEY, CONFIG_NAMESPACE

# A `secure:` value inside trainstack:cluster makes the whole object a secret key (pulumi/pulumi sdk/go/common/resource/
# config: an object containing a secure string is Secure()), and the language host hands the program its decrypted
# JSON with the key in PULUMI_CONFIG_SECRET_KEYS. Read with require_object, every value in it would reach resource
# inputs, and the state, in plain text: trainstack's settings hold no secrets, so such a file is refused.
if FULL_KEY in pulumi.runtime.get_config_secret_keys_env() or pulumi.runtime.is_config_secret(FULL_KEY):
    raise pulumi.RunError(secret_refusal(f"stack {pulumi.get_stack()}"))

try:
    stack = check_stack(
        pulumi.get_stack(),
        validate_object(pulumi.Config(CONFIG_NAMESPACE).require_object(CONFIG_KEY), f"stack {pulumi.get_stack()}"),
        f"stack {pulumi.get_stack()}",
    )
except ConfigError as error:
    raise pulumi.RunError(error.render()) from None
refuse_placeholders(stack, pulumi.get_stack())

tags = stack.default_tags(pulumi.get_project())


def moved(logical: str) -> list[pulumi.Alias]:
    """The name `logical` had while logical names carried the base name (`<name>-<logical>`): an alias, so a stack
    deployed then moves to the fixed name without a replace. Children whose names start with their parent's name
    inherit it (the engine rewrites the prefix); docs/day2.md, "Renaming a stack's `name`"."""
    return [pulumi.Alias(name=f"{stack.name}-{logical}")]


# Logical names are fixed ("network", "eks", ...) so that changing `name` in a stack file changes physical names
# only: the URNs Pulumi tracks state by stay put (tests/stack/golden_urns/). Physical names come from `name`.
aws = aws_provider("aws", stack.region, tags, aliases=moved("aws"))
# The account's state (caller, principals, offerings, quotas, Capacity Blocks, the EKS version), asked through the
# provider before anything else is registered: a real preview or up stops here with preflight's message. The mock
# engine's answers are no account's, so the offline plan judges none of them (docs/preflight.md).
pulumi.export("account_checks", check_account(stack, aws, judge=not under_mock_engine()))

# The key of every log group and of the alert topic: its policy names exactly the ones this stack creates.
telemetry = TelemetryKey(
    "telemetry",
    TelemetryKeyArgs(
        base_name=stack.name,
        region=stack.region,
        log_groups=[
            *([control_plane_log_group_name(stack.name)] if stack.existing_cluster is None else []),
            *([] if stack.network.existing_vpc else [flow_log_group_name(stack.name)]),
            *(
                [lustre_log_group_name(stack.name)]
                if stack.storage.fsx.enabled and not stack.storage.fsx.existing
                else []
            ),
        ],
        alert_topic_name=alert_topic_name(stack.name) if stack.metrics_enabled else None,
        administrators=stack.security.key_administrator_arns,
        protect=stack.protect_data,
    ),
    opts=pulumi.ResourceOptions(provider=aws, aliases=moved("telemetry")),
)
pulumi.export("telemetry_kms_key_arn", telemetry.key_arn)

# Network, EKS control plane and the EFA GPU node groups.
network = Network(
    "network",
    NetworkArgs(spec=stack.network, base_name=stack.name, region=stack.region, log_kms_key_arn=telemetry.key_arn),
    opts=pulumi.ResourceOptions(provider=aws, aliases=moved("network")),
)
eks: EksCluster | ExistingCluster
if stack.existing_cluster is not None:
    # Platform-only mode: the cluster and its nodes are someone else's; everything below the Kubernetes layer is
    # read, not created (components/eks/existing_cluster.py).
    eks = ExistingCluster(
        "eks",
        ExistingClusterArgs(name=stack.existing_cluster.name, region=stack.region),
        opts=pulumi.ResourceOptions(provider=aws, aliases=moved("eks")),
    )
else:
    eks = EksCluster(
        "eks",
        EksClusterArgs(
            spec=stack.eks,
            base_name=stack.name,
            region=stack.region,
            vpc_id=network.vpc_id,
            private_subnet_ids=list(network.private_subnet_ids.values()),
            protect=stack.protect_data,
            tags=tags,
            key_administrator_arns=stack.security.key_administrator_arns,
            pod_subnet_ids=network.pod_subnet_ids,
            log_kms_key_arn=telemetry.key_arn,
        ),
        opts=pulumi.ResourceOptions(provider=aws, aliases=moved("eks")),
    )
pulumi.export("vpc_id", network.vpc_id)
pulumi.export("private_subnet_ids", network.private_subnet_ids)
pulumi.export("efa_security_group_id", network.efa_security_group_id)
pulumi.export("workload_security_group_id", network.workload_security_group_id)
pulumi.export("cluster_name", eks.cluster_name)
pulumi.export("cluster_endpoint", eks.cluster_endpoint)
pulumi.export("oidc_issuer_url", eks.oidc_issuer_url)
pulumi.export("cluster_security_group_id", eks.cluster_security_group_id)
pulumi.export("kubeconfig", eks.kubeconfig)
if isinstance(eks, EksCluster):
    pulumi.export("oidc_provider_arn", eks.oidc_provider_arn)
    pulumi.export("secrets_kms_key_arn", eks.kms_key_arn)
    pulumi.export("node_role_arn", eks.node_role_arn)

# An existing cluster's groups are its owner's: they are described (gpu_node_groups[].selector), never created.
gpu_groups: dict[str, GpuNodeGroup] = {}
if isinstance(eks, EksCluster):
    cluster = eks
    gpu_groups = {
        group.name: GpuNodeGroup(
            f"gpu-{group.name}",
            GpuNodeGroupArgs.of_stack(
                stack,
                group,
                cluster_name=cluster.cluster_name,
                node_role_arn=cluster.node_role_arn,
                subnet_id=network.private_subnet_ids[group.availability_zone],
                security_group_ids=[cluster.cluster_security_group_id, network.efa_security_group_id],
                node_volume_kms_key_arn=cluster.node_volume_kms_key_arn,
                node_dependencies=cluster.node_dependencies,
                cluster_endpoint=cluster.cluster_endpoint,
                cluster_certificate_authority=cluster.cluster_certificate_authority,
                cluster_service_cidr=cluster.cluster_service_cidr,
            ),
            opts=pulumi.ResourceOptions(provider=aws, aliases=moved(f"gpu-{group.name}")),
        )
        for group in stack.gpu_node_groups
    }
pulumi.export(
    "gpu_node_groups",
    {
        name: {
            "node_group_name": group.node_group_name,
            "launch_template_id": group.launch_template_id,
            "placement_group_name": group.placement_group_name,
            "efa_interfaces_per_node": group.efa_interface_count,
            "gpus_at_max_size": group.gpu_count_max,
        }
        for name, group in gpu_groups.items()
    },
)

# Data: S3 datasets and checkpoints, FSx for Lustre in the GPU AZ. Buckets that deny requests from outside
# the VPC need its S3 gateway endpoint: a new VPC always has one, and the schema requires an existing VPC's
# (network.existing_vpc.s3_endpoint_id) when data_buckets_vpc_only is on; this check only says so.
data_vpc_endpoint_ids: list[pulumi.Input[str]] = []
if stack.data_buckets_vpc_only:
    if network.s3_endpoint_id is None:
        raise pulumi.RunError("security.data_buckets_vpc_only is on but the network has no S3 gateway endpoint")
    data_vpc_endpoint_ids.append(network.s3_endpoint_id)
data = DataBuckets(
    "data",
    DataBucketsArgs(
        spec=stack.storage.buckets,
        region=stack.region,
        base_name=stack.name,
        protect=stack.protect_data,
        key_administrator_arns=stack.security.key_administrator_arns,
        vpc_endpoint_ids=data_vpc_endpoint_ids,
        outside_vpc_role_arns=stack.security.outside_vpc_data_role_arns,
        checkpoint_lock=stack.security.checkpoint_lock,
    ),
    opts=pulumi.ResourceOptions(provider=aws, aliases=moved("data")),
)
pulumi.export("datasets_bucket", data.datasets_bucket_name)
pulumi.export("checkpoints_bucket", data.checkpoints_bucket_name)
pulumi.export("datasets_bucket_arn", data.datasets_bucket_arn)
pulumi.export("checkpoints_bucket_arn", data.checkpoints_bucket_arn)
pulumi.export("data_kms_key_arn", data.kms_key_arn)
lustre: LustreFileSystem | None = None
existing_fsx = stack.storage.fsx.existing if stack.storage.fsx.enabled else None
if stack.storage.fsx.enabled and existing_fsx is None:
    lustre = LustreFileSystem(
        "lustre",
        LustreFileSystemArgs(
            spec=stack.storage.fsx,
            base_name=stack.name,
            vpc_id=network.vpc_id,
            subnet_id=network.private_subnet_ids[stack.gpu_availability_zone],
            client_security_group_ids=[
                eks.cluster_security_group_id,
                network.efa_security_group_id,
                network.workload_security_group_id,
            ],
            efa_security_group_id=network.efa_security_group_id,
            kms_key_arn=data.kms_key_arn,
            log_kms_key_arn=telemetry.key_arn,
            datasets_bucket_name=data.datasets_bucket_name,
            protect=stack.protect_data,
        ),
        opts=pulumi.ResourceOptions(provider=aws, aliases=moved("lustre")),
    )
    pulumi.export("fsx_file_system_id", lustre.file_system_id)
    pulumi.export("fsx_dns_name", lustre.dns_name)
    pulumi.export("fsx_mount_name", lustre.mount_name)
    pulumi.export("fsx_security_group_id", lustre.security_group_id)

# Kubernetes GPU platform: device plugins before anything that requests GPUs or EFA, then queues and jobs.
system_nodes = [eks.system_node_group] if eks.system_node_group is not None else []
k8s_spec = stack.kubernetes
device_plugins: list[pulumi.Resource] = []
# One GPU Operator release serves every NVIDIA node (groups whose image differs opt out, GpuNodeGroupArgs.of_stack).
operator_ami_family = stack.gpu_operator_ami_family
# On a HyperPod cluster, HyperPod's dependencies chart already runs the NVIDIA and EFA device plugins.
hyperpod_owns_device_plugins = stack.existing_cluster is not None and stack.existing_cluster.hyperpod
if operator_ami_family is not None and not hyperpod_owns_device_plugins:
    gpu_operator = GpuOperator(
        "gpu-operator",
        GpuOperatorArgs(
            spec=k8s_spec.gpu_operator,
            ami_family=operator_ami_family,
            hyperpod_nodes=stack.hyperpod_eks_nvidia,
            dcgm_metrics_csv=dcgm_metrics_csv() if stack.metrics_enabled else None,
            group_taints=custom_taint_tolerations(stack.gpu_node_groups),
            after=[eks],
        ),
        opts=pulumi.ResourceOptions(provider=eks.k8s_provider, aliases=moved("gpu-operator")),
    )
    device_plugins.append(gpu_operator.release)
    pulumi.export("gpu_operator_values", gpu_operator.values)
if stack.needs_efa_plugin and not hyperpod_owns_device_plugins:
    efa_plugin = EfaDevicePlugin(
        "efa-plugin",
        EfaDevicePluginArgs(
            spec=k8s_spec.efa_device_plugin,
            hyperpod_instance_types=stack.efa_plugin_hyperpod_instance_types,
            group_taints=custom_taint_tolerations(stack.gpu_node_groups),
            instance_types=[g.instance_type for g in stack.gpu_node_groups if g.efa_enabled]
            if stack.platform_only
            else [],
            after=[eks],
        ),
        opts=pulumi.ResourceOptions(provider=eks.k8s_provider, aliases=moved("efa-plugin")),
    )
    device_plugins.append(efa_plugin.release)
if k8s_spec.metrics_server.enabled:
    MetricsServer(
        "metrics-server",
        MetricsServerArgs(spec=k8s_spec.metrics_server, after=[eks], system_nodes=not stack.platform_only),
        opts=pulumi.ResourceOptions(provider=eks.k8s_provider, aliases=moved("metrics-server")),
    )
# The schema requires kubernetes.neuron_device_plugin when a Neuron group exists.
if stack.neuron_node_groups and k8s_spec.neuron_device_plugin:
    neuron_plugin = NeuronDevicePlugin(
        "neuron-plugin",
        NeuronDevicePluginArgs(
            spec=k8s_spec.neuron_device_plugin,
            group_taints=custom_taint_tolerations(stack.gpu_node_groups),
            after=[eks],
        ),
        opts=pulumi.ResourceOptions(provider=eks.k8s_provider, aliases=moved("neuron-plugin")),
    )
    device_plugins.append(neuron_plugin.release)
# Capacity that follows the work (docs/capacity.md): cluster-autoscaler when a group can grow or waits for a
# Capacity Block; its ProvisioningRequest CRD must exist before Kueue starts.
capacity_after: list[pulumi.Resource] = []
# On an existing cluster the groups, and scaling them, are the owner's.
if needs_autoscaler(stack.gpu_node_groups) and isinstance(eks, EksCluster):
    autoscaler = ClusterAutoscaler(
        "cluster-autoscaler",
        ClusterAutoscalerArgs(
            spec=k8s_spec.cluster_autoscaler,
            kubernetes_version=stack.eks.version,
            cluster_name=stack.name,
            region=stack.region,
            partition=aws_partition(stack.region),
            account_id=eks.account_id,
            system_node_group=eks.system_node_group_name,
            groups=[
                ScaledGroup(
                    spec=spec,
                    labels=gpu_groups[spec.name].labels,
                    taint=(
                        gpu_groups[spec.name].taint.key,
                        gpu_groups[spec.name].taint.value,
                        gpu_groups[spec.name].taint.effect,
                    ),
                    node_group=gpu_groups[spec.name].node_group,
                )
                for spec in stack.gpu_node_groups
            ],
            after=[eks],
        ),
        opts=pulumi.ResourceOptions(providers=[aws, eks.k8s_provider], aliases=moved("cluster-autoscaler")),
    )
    capacity_after.append(autoscaler.provisioning_request_crd)
    pulumi.export("cluster_autoscaler_asg_tags", autoscaler.asg_tags)
scheduling = Scheduling(
    "scheduling",
    SchedulingArgs(
        kueue=k8s_spec.kueue,
        training_operator=k8s_spec.training_operator,
        teams=k8s_spec.teams,
        node_groups=stack.gpu_node_groups,
        hyperpod_groups=stack.hyperpod_eks_groups,
        cohort=stack.name,
        after=[eks, *device_plugins, *capacity_after],
    ),
    opts=pulumi.ResourceOptions(provider=eks.k8s_provider, aliases=moved("scheduling")),
)
# What keeps teams apart on shared nodes: compute quotas, default limits, network policies, approved registries.
tenancy = Tenancy(
    "tenancy",
    TenancyArgs(
        teams=k8s_spec.teams,
        node_groups=stack.gpu_node_groups,
        hyperpod_groups=stack.hyperpod_eks_groups,
        namespaces=scheduling.team_namespaces,
        allowed_registries=stack.security.allowed_image_registries,
        region=stack.region,
        account_id=eks.account_id,
        # Without internet (prod by default): HTTPS to the VPC's interface endpoints and to S3 only.
        https_destinations=None
        if stack.team_internet_egress
        else s3_prefix_cidrs(stack.region, aws).apply(lambda cidrs: [stack.network.vpc_cidr, *cidrs]),
    ),
    opts=pulumi.ResourceOptions(provider=eks.k8s_provider, aliases=moved("tenancy")),
)
pulumi.export("team_compute_quotas", tenancy.quotas)
# Per-team AWS credentials: datasets read-only, checkpoints only under the team's own prefix.
team_storage = TeamStorageAccess(
    "team-storage",
    TeamStorageAccessArgs(
        cluster_name=eks.cluster_name,
        teams=[team.name for team in k8s_spec.teams],
        namespaces=dict(scheduling.team_namespaces),
        datasets_bucket_arn=data.datasets_bucket_arn,
        checkpoints_bucket_arn=data.checkpoints_bucket_arn,
        data_key_arn=data.kms_key_arn,
        checkpoints_key_arn=data.checkpoints_kms_key_arn,
        region=stack.region,
    ),
    opts=pulumi.ResourceOptions(providers=[aws, eks.k8s_provider], aliases=moved("team-storage")),
)
pulumi.export("team_storage_role_arns", team_storage.role_arns)
team_members = members_by_role([(team.name, team.member_role_arns) for team in k8s_spec.teams])
if team_members:
    TeamAccess(
        "team-access",
        TeamAccessArgs(
            cluster_name=eks.cluster_name,
            members=team_members,
            after=list(scheduling.team_namespaces.values()),
        ),
        opts=pulumi.ResourceOptions(provider=aws, aliases=moved("team-access")),
    )
pulumi.export("kueue_cluster_queue_quotas", scheduling.quotas)
# Resume: where each team's jobs write checkpoints (docs/health.md); team_storage gives the credentials.
CheckpointAccess(
    "checkpoints",
    CheckpointAccessArgs(
        teams=[team.name for team in k8s_spec.teams],
        checkpoints_bucket_name=data.checkpoints_bucket_name,
        after=list(scheduling.team_namespaces.values()),
    ),
    opts=pulumi.ResourceOptions(provider=eks.k8s_provider, aliases=moved("checkpoints")),
)
pulumi.export("team_namespaces", {team: ns.metadata.name for team, ns in scheduling.team_namespaces.items()})
fsx_target = (
    (lustre.file_system_id, lustre.dns_name, lustre.mount_name, lustre.storage_capacity_gib)
    if lustre is not None
    else (
        existing_fsx.file_system_id,
        existing_fsx.dns_name,
        existing_fsx.mount_name,
        stack.storage.fsx.storage_capacity_gib,
    )
    if existing_fsx is not None
    else None
)
if fsx_target is not None:
    # The FSx CSI driver and one static PV + PVC per team namespace, all on the same file system (trainstack's, or
    # the existing one storage.fsx.existing names).
    file_system_id, dns_name, mount_name, capacity_gib = fsx_target
    lustre_volume = LustreVolume(
        "lustre-volume",
        LustreVolumeArgs(
            cluster_name=eks.cluster_name,
            addon_version=stack.eks.addons.fsx_csi_driver,
            namespaces=[team.name for team in k8s_spec.teams],
            file_system_id=file_system_id,
            dns_name=dns_name,
            mount_name=mount_name,
            capacity_gib=capacity_gib,
            team_directory=stack.storage.fsx.team_directory,
            datasets_path=stack.storage.fsx.file_system_path,
            depends_on=[*system_nodes, *scheduling.team_namespaces.values()],
        ),
        opts=pulumi.ResourceOptions(providers=[aws, eks.k8s_provider], aliases=moved("lustre-volume")),
    )
    pulumi.export("fsx_claims", lustre_volume.claims)
    pulumi.export("fsx_datasets_claims", lustre_volume.datasets_claims)
if k8s_spec.training_operator.kind == "kubeflow_trainer" and stack.gpu_node_groups:
    # Trainer's chart installs no runtimes: trainstack's own, per GPU group, with its taint, EFA and Lustre.
    runtimes = TrainingRuntimes(
        "training-runtimes",
        TrainingRuntimesArgs(
            spec=k8s_spec.training_operator.runtimes,
            node_groups=stack.gpu_node_groups,
            lustre_claim=LustreMount(CLAIM_NAME, *stack.storage.fsx.squash_identity)
            if fsx_target is not None
            else None,
            after=[scheduling.training_operator],
        ),
        opts=pulumi.ResourceOptions(provider=eks.k8s_provider, aliases=moved("training-runtimes")),
    )
    pulumi.export("training_runtimes", sorted(runtimes.runtimes))
target = stack.validation_node_group
if k8s_spec.validation and k8s_spec.validation.enabled and target is None:
    pulumi.log.warn("kubernetes.validation is on but no NVIDIA EFA GPU group exists: no NCCL/DCGM jobs planned")
if k8s_spec.validation and target is not None:
    validation = ValidationJobs(
        "validation",
        ValidationJobsArgs(
            spec=k8s_spec.validation,
            node_group=target,
            training_operator_kind=k8s_spec.training_operator.kind,
            after=[
                *device_plugins,
                scheduling.training_operator,
                scheduling.kueue_release,
                scheduling.cluster_queues[target.name],
            ],
        ),
        opts=pulumi.ResourceOptions(provider=eks.k8s_provider, aliases=moved("validation")),
    )
    pulumi.export("validation_namespace", validation.namespace.metadata.name)
    pulumi.export("nccl_busbw_floor_gb_s", validation.plan.busbw_floor_gb_s)

# Fleet health: the node monitoring agent (auto repair acts on its conditions), and metrics, alerts, dashboards.
fleet_health = FleetHealth(
    "health",
    FleetHealthArgs(
        spec=stack.health,
        base_name=stack.name,
        region=stack.region,
        cluster_name=eks.cluster_name,
        cluster_arn=eks.cluster_arn,
        subnet_ids=list(network.private_subnet_ids.values()),
        security_group_ids=[eks.cluster_security_group_id],
        metrics=stack.metrics_enabled,
        # YACE finds trainstack's file system by its Name tag; an existing one's tags are its owner's.
        fsx_throughput_mb_s=stack.storage.fsx.throughput_mb_s if lustre is not None else None,
        # GPU and EFA alerts only where dcgm-exporter runs: an alert that cannot fire is not listed. dcgm-exporter
        # comes with trainstack's GPU Operator: none on a HyperPod cluster (HyperPod's chart instead).
        gpu_metrics=operator_ami_family is not None
        and not hyperpod_owns_device_plugins
        and k8s_spec.gpu_operator.dcgm_exporter,
        alert_kms_key_arn=telemetry.key_arn,
        after=[*system_nodes, *device_plugins, scheduling.kueue_release],
    ),
    opts=pulumi.ResourceOptions(providers=[aws, eks.k8s_provider], aliases=moved("health")),
)
pulumi.export("node_monitoring_agent_version", stack.health.node_monitoring_agent_version)
if fleet_health.workspace_id is not None:
    pulumi.export("prometheus_workspace_id", fleet_health.workspace_id)
    pulumi.export("alert_topic_arn", fleet_health.alert_topic_arn)

# Optional SageMaker: HyperPod on the same network and storage, and a training-job role.
sagemaker_spec = stack.sagemaker
gpu_subnet_id = network.private_subnet_ids[stack.gpu_availability_zone]
security_groups = {
    "cluster": eks.cluster_security_group_id,
    "efa": network.efa_security_group_id,
    "workload": network.workload_security_group_id,
}
if sagemaker_spec.hyperpod.enabled:
    # Imported here, not at the top: the aws-native SDK (about 250 MB) serves only HyperPod, and importing it
    # costs every plan of a stack without HyperPod about a second (docs/testing.md, docs/bench.md).
    from components.sagemaker.hyperpod import HyperPodCluster, HyperPodClusterArgs, aws_native_provider

    aws_native = aws_native_provider("aws-native", stack.region, tags, aliases=moved("aws-native"))
    hyperpod_after: list[pulumi.Resource] = []
    if warning := stack.hyperpod_eks_version_warning:
        pulumi.log.warn(warning)
    if stack.hyperpod_on_eks:
        # SageMaker requires its dependencies chart on the EKS cluster before the HyperPod cluster joins it;
        # `make hyperpod-chart` fetches it at its pinned tag into .hyperpod-chart/ (never copied into the repo).
        # Relative to the project: the engine runs providers in the project directory (pulumi/pulumi
        # pkg/resource/plugin ExecPlugin, cmd.Dir = the plugin context's Pwd), so every checkout (a laptop, each
        # CI run's workspace) records one chart input and no checkout path turns into a Helm upgrade.
        core = [*eks.addons.values(), *system_nodes]
        dependencies = HyperPodDependencies(
            "hyperpod-dependencies",
            HyperPodDependenciesArgs(
                chart_dir=f"./.hyperpod-chart/{HYPERPOD_CLI_TAG}/{CHART_PATH}",
                after=core,
            ),
            opts=pulumi.ResourceOptions(provider=eks.k8s_provider, aliases=moved("hyperpod-dependencies")),
        )
        hyperpod_after = [dependencies.release, *core]
    hyperpod = HyperPodCluster(
        "hyperpod",
        HyperPodClusterArgs(
            spec=sagemaker_spec.hyperpod,
            base_name=stack.name,
            region=stack.region,
            subnet_ids=[gpu_subnet_id],
            security_group_ids=[security_groups[role] for role in stack.hyperpod_security_groups],
            vpc_id=network.vpc_id,
            eks_cluster_arn=eks.cluster_arn if stack.hyperpod_on_eks else None,
            kms_key_arn=data.kms_key_arn,
            fsx_dns_name=lustre.dns_name if lustre else None,
            fsx_mount_name=lustre.mount_name if lustre else None,
            fsx_root_squash=stack.storage.fsx.root_squash if lustre and stack.storage.fsx.squashes_root else None,
            protect=stack.protect_data,
            after=hyperpod_after,
        ),
        opts=pulumi.ResourceOptions(providers=[aws, aws_native], aliases=moved("hyperpod")),
    )
    pulumi.export("hyperpod_cluster_name", hyperpod.cluster_name)
    pulumi.export("hyperpod_cluster_arn", hyperpod.cluster_arn)
    pulumi.export("hyperpod_orchestrator", hyperpod.orchestrator)
    pulumi.export("hyperpod_execution_role_arn", hyperpod.execution_role_arn)
    if hyperpod.login_role_arn is not None:
        pulumi.export("hyperpod_login_role_arn", hyperpod.login_role_arn)
    pulumi.export("hyperpod_lifecycle_s3_uri", hyperpod.lifecycle_source_s3_uri)
if sagemaker_spec.training_job_role:
    training = TrainingJobRole(
        "sagemaker-training",
        TrainingJobRoleArgs(
            base_name=stack.name,
            region=stack.region,
            teams=[team.name for team in k8s_spec.teams],
            datasets_bucket_arn=data.datasets_bucket_arn,
            checkpoints_bucket_arn=data.checkpoints_bucket_arn,
            subnet_ids=[gpu_subnet_id],
            security_group_ids=[network.efa_security_group_id, network.workload_security_group_id],
            vpc_id=network.vpc_id,
            fsx_arn=lustre.arn if lustre else None,
            kms_key_arn=data.kms_key_arn,
            checkpoints_kms_key_arn=data.checkpoints_kms_key_arn,
        ),
        opts=pulumi.ResourceOptions(provider=aws, aliases=moved("sagemaker-training")),
    )
    pulumi.export("sagemaker_training_role_arns", training.role_arns)
    pulumi.export("sagemaker_training_subnet_ids", training.subnet_ids)
    pulumi.export("sagemaker_training_security_group_ids", training.security_group_ids)

pulumi.export("environment", stack.environment.value)
pulumi.export("region", stack.region)

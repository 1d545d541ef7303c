"""Job scheduling: Kueue, per-node-group queues, team namespaces with quotas, and the training operator.

- Kueue (Helm chart oci://registry.k8s.io/kueue/charts/kueue) in `kueue-system`, configured for all-or-nothing
  admission (`waitForPodsReady`) and the job kinds the training operator creates.
- Per GPU node group: a ResourceFlavor (its nodes by the `trainstack.io/node-group` label, the accelerator
  taint tolerated) and a ClusterQueue whose nominal quota is the group at its maximum size (accelerators, EFA
  devices, CPU, memory, hugepages from the catalog), all in one cohort so idle quota can be borrowed.
- Per SageMaker HyperPod compute group (EKS orchestrator): a ResourceFlavor and ClusterQueue named
  `hyperpod-<group>`, the flavor pinning pods to the group's healthy nodes (HyperPod's
  `instance-group-name` and `node-health-status: Schedulable` labels), the quota the group's instance count
  times the catalog row of the ml.* type's EC2 twin (no hugepages: HyperPod's lifecycle reserves none).
- Per team: a namespace (label `trainstack.io/team`), a ResourceQuota capping accelerator requests, and a
  LocalQueue per ClusterQueue, named after the node group.
- The training operator: Kubeflow Trainer v2 (Helm chart oci://ghcr.io/kubeflow/charts/kubeflow-trainer, which
  also installs JobSet) or the MPI Operator (its release manifest).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import yaml

from components.k8s.autoscaling import (
    Admission,
    admission,
    admission_check_name,
    admission_check_spec,
    provisioning_request_config_spec,
)
from components.k8s_common import (
    EFA_RESOURCE,
    HYPERPOD_HEALTH_LABEL,
    HYPERPOD_INSTANCE_GROUP_LABEL,
    HYPERPOD_SCHEDULABLE,
    IMMUTABLE_FIELDS,
    TEAM_LABEL,
    Toleration,
    group_tolerations,
)
from components.namespaces import system_namespace_labels, team_namespace_labels
from components.naming import child_name
from stacks.catalog import CATALOG, InstanceType
from stacks.schema import GpuNodeGroupSpec, HyperPodInstanceGroupSpec, KueueSpec, TeamSpec, TrainingOperatorSpec

KUEUE_CHART = "oci://registry.k8s.io/kueue/charts/kueue"  # Kueue installation docs (Helm, OCI registry)
KUEUE_NAMESPACE = "kueue-system"
KUEUE_API_VERSION = "kueue.x-k8s.io/v1beta1"  # served by Kueue 0.14 (v1beta2 arrives in 0.15)

TRAINER_CHART = "oci://ghcr.io/kubeflow/charts/kubeflow-trainer"  # kubeflow.org Trainer installation guide
TRAINER_NAMESPACE = "kubeflow-system"
MPI_OPERATOR_MANIFEST = (
    "https://raw.githubusercontent.com/kubeflow/mpi-operator/v{version}/deploy/v2beta1/mpi-operator.yaml"
)

# Kueue integration names (Kueue Configuration API, `integrations.frameworks`).
_FRAMEWORKS: dict[str, list[str]] = {
    "kubeflow_trainer": ["batch/job", "jobset.x-k8s.io/jobset", "trainer.kubeflow.org/trainjob"],
    "mpi_operator": ["batch/job", "kubeflow.org/mpijob"],
}


# ----------------------------------------------------------------------------------------------- pure


def kueue_frameworks(training_operator_kind: str) -> list[str]:
    """The workload kinds Kueue manages: plain Jobs plus what the training operator creates."""
    return list(_FRAMEWORKS[training_operator_kind])


# Resources Kueue leaves out of admission (Kueue Configuration v1beta1 `resources.excludeResourcePrefixes`,
# kubernetes-sigs/kueue v0.14.8 pkg/workload/workload.go dropExcludedResources). Ephemeral storage is node-local:
# the kube-scheduler already places pods by each node's allocatable disk and the namespace ResourceQuota caps a
# team's total, while a ClusterQueue quota of it would only add up disks across nodes. Left in, every workload
# in a team namespace requests it (the LimitRange defaults it) and Kueue refuses the workload ("resource
# ephemeral-storage unavailable in ClusterQueue", pkg/scheduler/flavorassigner/flavorassigner.go) unless every
# queue covered it; excluded, no queue has to, and a team's own ephemeral request cannot strand a job.
KUEUE_EXCLUDED_RESOURCES = ("ephemeral-storage",)


def team_namespace_selector() -> dict[str, Any]:
    """The namespaces Kueue serves: those with the team label (team namespaces and the validation namespace)."""
    return {"matchExpressions": [{"key": TEAM_LABEL, "operator": "Exists"}]}


def kueue_values(training_operator_kind: str, wait_for_pods_ready_timeout_s: int) -> dict[str, Any]:
    """Helm values for the Kueue chart: its controller configuration (`managerConfig.controllerManagerConfigYaml`,
    the chart's own key) with our integrations and all-or-nothing admission."""
    config = {
        "apiVersion": "config.kueue.x-k8s.io/v1beta1",
        "kind": "Configuration",
        "health": {"healthProbeBindAddress": ":8081"},
        # Per-ClusterQueue usage and quota series (kueue_cluster_queue_resource_usage, _nominal_quota) are
        # reported only with this on (v0.14.8 apis/config/v1beta1 `enableClusterQueueResources`); the
        # WorkloadsPendingDespiteQuota alert reads them (components/health/alert_rules.py).
        "metrics": {"bindAddress": ":8443", "enableClusterQueueResources": True},
        "webhook": {"port": 9443},
        "leaderElection": {"leaderElect": True, "resourceName": "c1f6bfd2.kueue.x-k8s.io"},
        "controller": {"groupKindConcurrency": {"Job.batch": 5, "Workload.kueue.x-k8s.io": 5}},
        "clientConnection": {"qps": 50, "burst": 100},
        # A multi-node job admitted but only partly scheduled would hold GPUs forever: evict and requeue it.
        "waitForPodsReady": {
            "enable": True,
            "timeout": f"{wait_for_pods_ready_timeout_s}s",
            "blockAdmission": False,
            "requeuingStrategy": {"timestamp": "Eviction", "backoffLimitCount": 5},
        },
        "integrations": {"frameworks": kueue_frameworks(training_operator_kind)},
        "resources": {"excludeResourcePrefixes": list(KUEUE_EXCLUDED_RESOURCES)},
        # A job without a queue label in a team namespace is still Kueue's: it is created suspended and waits
        # for a queue, so the GPU quotas cannot be sidestepped. Other namespaces (kube-system, operators) are
        # left alone (Kueue Configuration v1beta1 `manageJobsWithoutQueueName`, `managedJobsNamespaceSelector`).
        "manageJobsWithoutQueueName": True,
        "managedJobsNamespaceSelector": team_namespace_selector(),
    }
    return {"managerConfig": {"controllerManagerConfigYaml": yaml.safe_dump(config, sort_keys=False)}}


@dataclass(frozen=True)
class QueueTarget:
    """One ResourceFlavor + ClusterQueue pair: the nodes it pins pods to and what they hold at most."""

    name: str
    """Name of the flavor, the ClusterQueue and every team's LocalQueue for it."""
    node_labels: dict[str, str]
    tolerations: list[Toleration]
    quota: dict[str, str]
    device_resource: str
    admission_check: str | None = None
    """The AdmissionCheck a job must pass before admission (its nodes provisioned), or None: the nodes exist."""


def _node_quota(row: InstanceType, nodes: int, efa: bool) -> dict[str, str]:
    # Accelerators from the catalog's `device_resource`, EFA devices (`max_efa_interfaces` per node), CPU and
    # memory from the catalog (node capacity: an upper bound, allocatable is a little lower).
    quota = {
        row.device_resource: str(row.accelerator_count * nodes),
        "cpu": str(row.vcpus * nodes),
        "memory": f"{row.memory_gib * nodes}Gi",
    }
    if efa:
        quota[EFA_RESOURCE] = str(row.max_efa_interfaces * nodes)
    return quota


def group_quota(group: GpuNodeGroupSpec) -> dict[str, str]:
    """The nominal quota of a node group's ClusterQueue: every resource of the group at its maximum size,
    including the pre-allocated 2 MiB hugepages EFA groups reserve for libfabric."""
    quota = _node_quota(CATALOG[group.instance_type], group.max_size, group.efa_enabled)
    if group.efa_enabled and group.hugepages_2mi:
        quota["hugepages-2Mi"] = f"{group.hugepages_2mi * 2 * group.max_size}Mi"
    return quota


def resource_flavor_spec(group: GpuNodeGroupSpec) -> dict[str, Any]:
    """A ResourceFlavor for one node group: Kueue pins admitted pods to its nodes and adds the toleration."""
    return {
        "nodeLabels": group.node_selector,
        "tolerations": group_tolerations(group),
    }


def node_group_target(group: GpuNodeGroupSpec) -> QueueTarget:
    """Queue target of a GPU node group: its nodes, tainted, at its maximum size."""
    flavor = resource_flavor_spec(group)
    return QueueTarget(
        name=group.name,
        node_labels=flavor["nodeLabels"],
        tolerations=flavor["tolerations"],
        quota=group_quota(group),
        device_resource=CATALOG[group.instance_type].device_resource,
        admission_check=None if admission(group) is Admission.NODES_EXIST else admission_check_name(group),
    )


def hyperpod_queue_name(group: HyperPodInstanceGroupSpec) -> str:
    """HyperPod queues are prefixed so a HyperPod group and a GPU node group may share a name."""
    return f"hyperpod-{group.name}"


def hyperpod_target(group: HyperPodInstanceGroupSpec) -> QueueTarget:
    """Queue target of a HyperPod compute group: its healthy nodes, at its instance count.

    HyperPod nodes carry no trainstack taint, so the flavor adds no toleration; it never tolerates HyperPod's
    health taint either, which marks nodes under deep health checks. EFA devices count when the type has EFA
    (HyperPod enables it on EFA-capable types); no hugepages, which HyperPod nodes do not pre-allocate.
    """
    row = CATALOG[group.ec2_instance_type]
    return QueueTarget(
        name=hyperpod_queue_name(group),
        node_labels={HYPERPOD_INSTANCE_GROUP_LABEL: group.name, HYPERPOD_HEALTH_LABEL: HYPERPOD_SCHEDULABLE},
        tolerations=[],
        quota=_node_quota(row, group.instance_count, row.supports_efa),
        device_resource=row.device_resource,
    )


def queue_targets(
    groups: Sequence[GpuNodeGroupSpec], hyperpod_groups: Sequence[HyperPodInstanceGroupSpec] = ()
) -> list[QueueTarget]:
    """Every flavor/queue pair of the cluster: GPU node groups first, then HyperPod compute groups."""
    return [*(node_group_target(g) for g in groups), *(hyperpod_target(g) for g in hyperpod_groups)]


def cluster_queue_spec(target: QueueTarget, cohort: str) -> dict[str, Any]:
    """A ClusterQueue for one target, its quota nominal, in the shared cohort; a group that must provision its
    nodes first admits through its AdmissionCheck (Kueue reserves the quota, then asks the autoscaler)."""
    quota = target.quota
    checks = {"admissionChecks": [target.admission_check]} if target.admission_check else {}
    return {
        "cohort": cohort,
        "namespaceSelector": team_namespace_selector(),
        "queueingStrategy": "BestEffortFIFO",
        "preemption": {
            "reclaimWithinCohort": "Any",
            "borrowWithinCohort": {"policy": "Never"},
            "withinClusterQueue": "LowerPriority",
        },
        "resourceGroups": [
            {
                "coveredResources": list(quota),
                "flavors": [
                    {"name": target.name, "resources": [{"name": k, "nominalQuota": v} for k, v in quota.items()]}
                ],
            }
        ],
        **checks,
    }


def device_resources(
    groups: Sequence[GpuNodeGroupSpec], hyperpod_groups: Sequence[HyperPodInstanceGroupSpec] = ()
) -> list[str]:
    """The accelerator resources the cluster's nodes offer, in target order, without duplicates."""
    return list(dict.fromkeys(t.device_resource for t in queue_targets(groups, hyperpod_groups)))


def team_quota_hard(
    team: TeamSpec, groups: Sequence[GpuNodeGroupSpec], hyperpod_groups: Sequence[HyperPodInstanceGroupSpec] = ()
) -> dict[str, str]:
    """The team namespace's ResourceQuota: `gpu_quota` accelerators of each kind the cluster offers."""
    return {f"requests.{resource}": str(team.gpu_quota) for resource in device_resources(groups, hyperpod_groups)}


def custom_resource_name(resource: k8s.apiextensions.CustomResource) -> pulumi.Output[Any]:
    """`metadata.name` of a custom resource as the API server returns it. The SDK sets the `metadata` output at
    run time (its shape comes from the CRD, unknown to the SDK) without declaring the attribute."""
    return vars(resource)["metadata"]["name"]


def local_queue(
    resource_name: str, queue: str, namespace: pulumi.Input[str], opts: pulumi.ResourceOptions
) -> k8s.apiextensions.CustomResource:
    """A LocalQueue named after its ClusterQueue (`queue`) in `namespace`: how a namespace's jobs reach it."""
    return k8s.apiextensions.CustomResource(
        resource_name,
        api_version=KUEUE_API_VERSION,
        kind="LocalQueue",
        metadata=k8s.meta.v1.ObjectMetaArgs(name=queue, namespace=namespace),
        spec={"clusterQueue": queue},
        opts=pulumi.ResourceOptions.merge(
            opts,
            pulumi.ResourceOptions(replace_on_changes=list(IMMUTABLE_FIELDS["LocalQueue"]), delete_before_replace=True),
        ),
    )


# ------------------------------------------------------------------------------------------ component


@dataclass
class SchedulingArgs:
    """Spec (Kueue, training operator, teams, node groups) and wiring (what must exist first)."""

    kueue: KueueSpec
    training_operator: TrainingOperatorSpec
    teams: Sequence[TeamSpec]
    node_groups: Sequence[GpuNodeGroupSpec]
    cohort: str
    """Name of the cohort all ClusterQueues share (the stack's base name)."""
    hyperpod_groups: Sequence[HyperPodInstanceGroupSpec] = ()
    """SageMaker HyperPod compute groups joined to the cluster (EKS orchestrator): each gets a queue too."""
    after: Sequence[pulumi.Resource] = ()
    """Resources to install after (the device plugins and GPU Operator), so quotas never precede devices."""


class Scheduling(pulumi.ComponentResource):
    """Kueue, its flavors and queues, team namespaces with quotas, and the training operator."""

    kueue_release: k8s.helm.v3.Release
    """The Kueue Helm release."""
    training_operator: pulumi.Resource
    """The Kubeflow Trainer Helm release or the MPI Operator manifest."""
    resource_flavors: dict[str, k8s.apiextensions.CustomResource]
    """ResourceFlavor per queue name (the node group's name, or `hyperpod-<group>`)."""
    cluster_queues: dict[str, k8s.apiextensions.CustomResource]
    """ClusterQueue per queue name."""
    admission_checks: dict[str, k8s.apiextensions.CustomResource]
    """AdmissionCheck per GPU group whose jobs wait for provisioned nodes (components/k8s/autoscaling.py)."""
    team_namespaces: dict[str, k8s.core.v1.Namespace]
    """Namespace per team name (the storage component binds PVCs in them)."""
    local_queues: dict[str, dict[str, k8s.apiextensions.CustomResource]]
    """LocalQueue per team name, then per queue name."""
    quotas: dict[str, dict[str, str]]
    """Nominal ClusterQueue quota per queue name (plain data)."""

    def __init__(self, name: str, args: SchedulingArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("trainstack:k8s:Scheduling", name, None, opts)
        after = list(args.after)
        # Kueue enables an integration only when its CRD exists, so the operator goes first.
        self.training_operator = self._training_operator(name, args.training_operator, after)
        self.kueue_release = self._kueue(name, args, after)

        targets = queue_targets(args.node_groups, args.hyperpod_groups)
        self.quotas = {t.name: t.quota for t in targets}
        self.resource_flavors = {}
        self.cluster_queues = {}
        self.admission_checks = {}
        self._admission_checks(name, args)
        self._cluster_queues(name, args, targets)
        self.team_namespaces = {}
        self.local_queues = {}
        self._teams(name, args, targets)

        self.register_outputs(
            {
                "kueue_release": self.kueue_release.name,
                "cluster_queues": {k: custom_resource_name(v) for k, v in self.cluster_queues.items()},
                "team_namespaces": {k: v.metadata.name for k, v in self.team_namespaces.items()},
                "quotas": self.quotas,
            }
        )

    def _kueue(self, name: str, args: SchedulingArgs, after: list[pulumi.Resource]) -> k8s.helm.v3.Release:
        """Kueue in its own namespace, installed after the training operator whose CRDs it integrates with."""
        child = pulumi.ResourceOptions(parent=self)
        kueue_ns = k8s.core.v1.Namespace(
            child_name(name, "kueue-ns"),
            metadata=k8s.meta.v1.ObjectMetaArgs(name=KUEUE_NAMESPACE, labels=system_namespace_labels(KUEUE_NAMESPACE)),
            opts=child,
        )
        return k8s.helm.v3.Release(
            child_name(name, "kueue"),
            k8s.helm.v3.ReleaseArgs(
                chart=KUEUE_CHART,
                version=args.kueue.chart_version,
                namespace=kueue_ns.metadata.name,
                values=kueue_values(args.training_operator.kind, args.kueue.wait_for_pods_ready_timeout_s),
                atomic=True,
                cleanup_on_fail=True,
            ),
            opts=pulumi.ResourceOptions(parent=self, depends_on=[kueue_ns, self.training_operator, *after]),
        )

    def _admission_checks(self, name: str, args: SchedulingArgs) -> None:
        """An AdmissionCheck (and its ProvisioningRequestConfig) per GPU group whose jobs wait for nodes."""
        after_kueue = pulumi.ResourceOptions(parent=self, depends_on=[self.kueue_release])
        for group in args.node_groups:
            if admission(group) is Admission.NODES_EXIST:
                continue
            check = admission_check_name(group)
            config = k8s.apiextensions.CustomResource(
                child_name(name, group.name, "provisioning-config"),
                api_version=KUEUE_API_VERSION,
                kind="ProvisioningRequestConfig",
                metadata=k8s.meta.v1.ObjectMetaArgs(name=check),
                spec=provisioning_request_config_spec(group),
                opts=after_kueue,
            )
            self.admission_checks[group.name] = k8s.apiextensions.CustomResource(
                child_name(name, group.name, "admission-check"),
                api_version=KUEUE_API_VERSION,
                kind="AdmissionCheck",
                metadata=k8s.meta.v1.ObjectMetaArgs(name=check),
                spec=admission_check_spec(group),
                opts=pulumi.ResourceOptions(parent=self, depends_on=[self.kueue_release, config]),
            )

    def _cluster_queues(self, name: str, args: SchedulingArgs, targets: list[QueueTarget]) -> None:
        """A ResourceFlavor and a ClusterQueue per queue target, the queue after its admission check."""
        after_kueue = pulumi.ResourceOptions(parent=self, depends_on=[self.kueue_release])
        for target in targets:
            flavor = k8s.apiextensions.CustomResource(
                child_name(name, target.name, "flavor"),
                api_version=KUEUE_API_VERSION,
                kind="ResourceFlavor",
                metadata=k8s.meta.v1.ObjectMetaArgs(name=target.name),
                spec={"nodeLabels": target.node_labels, "tolerations": target.tolerations},
                opts=after_kueue,
            )
            self.resource_flavors[target.name] = flavor
            self.cluster_queues[target.name] = k8s.apiextensions.CustomResource(
                child_name(name, target.name, "cq"),
                api_version=KUEUE_API_VERSION,
                kind="ClusterQueue",
                metadata=k8s.meta.v1.ObjectMetaArgs(name=target.name),
                spec=cluster_queue_spec(target, args.cohort),
                opts=pulumi.ResourceOptions(
                    parent=self,
                    depends_on=[
                        self.kueue_release,
                        flavor,
                        *([self.admission_checks[target.name]] if target.admission_check else []),
                    ],
                ),
            )

    def _teams(self, name: str, args: SchedulingArgs, targets: list[QueueTarget]) -> None:
        """Per team: its namespace, an accelerator quota where it has one, and a LocalQueue per queue target."""
        child = pulumi.ResourceOptions(parent=self)
        for team in args.teams:
            namespace = k8s.core.v1.Namespace(
                child_name(name, "team", team.name),
                metadata=k8s.meta.v1.ObjectMetaArgs(name=team.name, labels=team_namespace_labels(team)),
                opts=child,
            )
            self.team_namespaces[team.name] = namespace
            hard = team_quota_hard(team, args.node_groups, args.hyperpod_groups)
            if hard:
                k8s.core.v1.ResourceQuota(
                    child_name(name, "team", team.name, "quota"),
                    metadata=k8s.meta.v1.ObjectMetaArgs(name="accelerators", namespace=namespace.metadata.name),
                    spec=k8s.core.v1.ResourceQuotaSpecArgs(hard=hard),
                    opts=child,
                )
            self.local_queues[team.name] = {
                target.name: local_queue(
                    child_name(name, "team", team.name, target.name, "lq"),
                    target.name,
                    namespace.metadata.name,
                    pulumi.ResourceOptions(parent=self, depends_on=[self.cluster_queues[target.name]]),
                )
                for target in targets
            }

    def _training_operator(
        self, name: str, spec: TrainingOperatorSpec, after: list[pulumi.Resource]
    ) -> pulumi.Resource:
        version = spec.version.removeprefix("v")
        if spec.kind == "kubeflow_trainer":
            namespace = k8s.core.v1.Namespace(
                child_name(name, "trainer-ns"),
                metadata=k8s.meta.v1.ObjectMetaArgs(
                    name=TRAINER_NAMESPACE, labels=system_namespace_labels(TRAINER_NAMESPACE)
                ),
                opts=pulumi.ResourceOptions(parent=self),
            )
            return k8s.helm.v3.Release(
                child_name(name, "trainer"),
                k8s.helm.v3.ReleaseArgs(
                    chart=TRAINER_CHART,
                    version=version,
                    namespace=namespace.metadata.name,
                    atomic=True,
                    cleanup_on_fail=True,
                ),
                opts=pulumi.ResourceOptions(parent=self, depends_on=[namespace, *after]),
            )
        # The MPI Operator publishes no Helm chart; its release manifest creates the `mpi-operator` namespace.
        return k8s.yaml.v2.ConfigFile(
            child_name(name, "mpi-operator"),
            file=MPI_OPERATOR_MANIFEST.format(version=version),
            opts=pulumi.ResourceOptions(parent=self, depends_on=after),
        )

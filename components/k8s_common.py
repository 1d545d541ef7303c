"""Kubernetes names the GPU platform components agree on: labels, taints, extended resources, tolerations.

Pure data and pure functions, no resources. The GPU node groups put `NODE_GROUP_LABEL` (and, on EFA groups,
`EFA_NODE_LABEL`) on their nodes and taint them with their device resource name (`GPU_TAINT_KEY` or
`NEURON_TAINT_KEY`); everything that must run there (operators' daemonsets, the EFA plugin, queued jobs)
tolerates those taints from here. SageMaker HyperPod nodes (EKS orchestrator) carry HyperPod's own labels and,
during deep health checks, HyperPod's health taint.
"""

from __future__ import annotations

from collections.abc import Iterable

from stacks.catalog import CATALOG, DEVICE_RESOURCE, Accelerator
from stacks.schema import (
    EFA_PRESENT_LABEL,
    HYPERPOD_HEALTH_LABEL,
    HYPERPOD_INSTANCE_GROUP_LABEL,
    HYPERPOD_SCHEDULABLE,
    INSTANCE_TYPE_LABEL,
    NODE_GROUP_LABEL,
    GpuNodeGroupSpec,
    NodeTaintSpec,
)

__all__ = [
    "EFA_NODE_LABEL",
    "EFA_RESOURCE",
    "GPU_TAINT_KEY",
    "HYPERPOD_HEALTH_LABEL",
    "HYPERPOD_INSTANCE_GROUP_LABEL",
    "HYPERPOD_SCHEDULABLE",
    "IMMUTABLE_FIELDS",
    "INSTANCE_TYPE_LABEL",
    "KUEUE_QUEUE_LABEL",
    "NEURON_TAINT_KEY",
    "NODE_GROUP_LABEL",
    "TEAM_LABEL",
    "Toleration",
    "custom_taint_tolerations",
    "group_tolerations",
    "hyperpod_health_toleration",
    "taint_key",
    "taint_toleration",
    "toleration",
]

TEAM_LABEL = "trainstack.io/team"
# The label EFA nodes carry (set by the GPU node groups); the EFA plugin selects on it instead of an
# instance-type list (user pain point 4).
EFA_NODE_LABEL = EFA_PRESENT_LABEL
EFA_RESOURCE = "vpc.amazonaws.com/efa"  # the extended resource the EFA device plugin advertises
# The node groups taint accelerator nodes with their device resource name (components/gpu/gpu_nodes.node_taint).
GPU_TAINT_KEY = DEVICE_RESOURCE[Accelerator.NVIDIA]
NEURON_TAINT_KEY = DEVICE_RESOURCE[Accelerator.NEURON]
KUEUE_QUEUE_LABEL = "kueue.x-k8s.io/queue-name"  # Kueue's label that puts a job in a LocalQueue

# Fields the CRDs' transition rules freeze (`self == oldSelf`: the API server refuses an update that changes them),
# by kind, in Pulumi's property path syntax (`[*]`: every item). An object that sets one is replaced rather than
# updated when it changes (its `replace_on_changes`), deleting the old object first because the new one keeps its
# name (`delete_before_replace`; pulumi-kubernetes asks for that only for replacements its own diff finds). The
# day-2 journey (trainstack/journeys/day2.py) checks every such rule of the recorded CRDs against these options.
IMMUTABLE_FIELDS: dict[str, tuple[str, ...]] = {
    # kubeflow/trainer v2.1.0 manifests/base/crds/trainer.kubeflow.org_clustertrainingruntimes.yaml (JobSet's spec)
    "ClusterTrainingRuntime": (
        "spec.template.spec.failurePolicy",
        "spec.template.spec.network",
        "spec.template.spec.startupPolicy",
        "spec.template.spec.successPolicy",
        "spec.template.spec.replicatedJobs[*].dependsOn",
    ),
    # kubeflow/trainer v2.1.0 manifests/base/crds/trainer.kubeflow.org_trainjobs.yaml
    "TrainJob": ("spec.managedBy", "spec.runtimeRef"),
    # kubernetes-sigs/kueue v0.14.8 config/components/crd/bases/kueue.x-k8s.io_localqueues.yaml
    "LocalQueue": ("spec.clusterQueue",),
}


Toleration = dict[str, str]


def toleration(key: str) -> Toleration:
    """Tolerate any value of `key` with effect NoSchedule (the node groups' taint effect)."""
    return {"key": key, "operator": "Exists", "effect": "NoSchedule"}


def hyperpod_health_toleration() -> Toleration:
    """HyperPod taints a node `sagemaker.amazonaws.com/node-health-status=Unschedulable:NoSchedule` while its deep
    health checks run (SageMaker developer guide, HyperPod EKS prerequisites); device plugins must tolerate it
    or the checks never see the node's GPUs and EFA devices (aws/sagemaker-hyperpod-cli helm_chart README)."""
    return {"key": HYPERPOD_HEALTH_LABEL, "operator": "Equal", "value": "Unschedulable", "effect": "NoSchedule"}


def taint_key(instance_type: str) -> str:
    """The taint key an accelerated node group of this instance type carries (its device resource name)."""
    return CATALOG[instance_type].device_resource


def taint_toleration(taint: NodeTaintSpec) -> Toleration:
    """Tolerate exactly one of a group's own taints (`gpu_node_groups[].taints`): key, value and effect."""
    return {"key": taint.key, "operator": "Equal", "value": taint.value, "effect": taint.effect.value}


def group_tolerations(group: GpuNodeGroupSpec) -> list[Toleration]:
    """What a pod needs to land on a group's nodes: the accelerator taint, then the group's own taints."""
    return [toleration(taint_key(group.instance_type)), *(taint_toleration(t) for t in group.taints)]


def custom_taint_tolerations(groups: Iterable[GpuNodeGroupSpec]) -> list[Toleration]:
    """Every group's own taints, once each, for the daemons that must run on every accelerated node (device
    plugins, the GPU Operator's operands): without them a custom NoSchedule taint keeps a node's GPUs and EFA
    devices unadvertised."""
    seen: list[Toleration] = []
    for group in groups:
        for taint in group.taints:
            if (tol := taint_toleration(taint)) not in seen:
                seen.append(tol)
    return seen

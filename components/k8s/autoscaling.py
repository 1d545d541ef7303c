"""Capacity that follows the work: cluster-autoscaler, scale-from-zero tags and Kueue's gang admission.

Decisions (docs/capacity.md has the reasoning and sources):
- cluster-autoscaler, not Karpenter, for every GPU node group: the groups are EKS managed node groups whose
  Auto Scaling groups cluster-autoscaler scales in place, and only cluster-autoscaler answers Kueue's
  ProvisioningRequest (autoscaling.x-k8s.io/v1) with an all-or-nothing scale-up.
- Per group, how Kueue admits a gang job (`admission`): a group that can grow (min < max) asks for all its nodes
  at once (`best-effort-atomic-scale-up`); a fixed Capacity Block group, whose nodes exist only inside the
  block's window, asks whether they exist now (`check-capacity`), so its queue holds jobs until the start; any
  other fixed group (an ODCR with min = max, say) admits against the nodes that exist, with no check.
- Kueue starts its ProvisioningRequest controller only when the CRD is served at its start
  (kubernetes-sigs/kueue v0.14.8 cmd/kueue/main.go, `ServerSupportsProvisioningRequest`), so the CRD goes in
  before the Kueue release.
- Scale from zero: EKS does not copy a managed node group's labels or taints to its Auto Scaling group
  (aws/containers-roadmap#608), and cluster-autoscaler asks EKS DescribeNodegroup only for a group that never
  had a node (kubernetes/autoscaler cluster-autoscaler-1.36.1 cloudprovider/aws/README.md, "IAM Policy").
  The group's ASG is tagged with the node-template keys (same README, "Auto-Discovery Setup") for what a node
  offers: accelerators, EFA devices, hugepages, labels and the accelerator taint.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from enum import StrEnum
from typing import Any

from stacks.catalog import CATALOG
from stacks.schema import CapacityType, ClusterAutoscalerSpec, GpuNodeGroupSpec

CLUSTER_AUTOSCALER_CHART = "cluster-autoscaler"
CLUSTER_AUTOSCALER_REPO = "https://kubernetes.github.io/autoscaler"  # the chart's README, "TL;DR"
CLUSTER_AUTOSCALER_NAMESPACE = "kube-system"
CLUSTER_AUTOSCALER_SERVICE_ACCOUNT = "cluster-autoscaler"
# The CRD ships beside the autoscaler's API types, not in its chart (chart 9.59.0 templates/ has none).
PROVISIONING_REQUEST_CRD = (
    "https://raw.githubusercontent.com/kubernetes/autoscaler/cluster-autoscaler-{version}/cluster-autoscaler/"
    "apis/config/crd/autoscaling.x-k8s.io_provisioningrequests.yaml"
)
# EKS labels every managed node with its node group's name (EKS User Guide, "Managed node groups", node labels).
EKS_NODEGROUP_LABEL = "eks.amazonaws.com/nodegroup"

# Kueue's provisioning admission check controller (kubernetes-sigs/kueue v0.14.8
# apis/kueue/v1beta1/provisioningrequestconfig_types.go, ProvisioningRequestControllerName); GA in 0.14.
PROVISIONING_CONTROLLER = "kueue.x-k8s.io/provisioning-request"

# ASG tag prefixes cluster-autoscaler reads for a group at zero nodes (cloudprovider/aws/README.md at
# cluster-autoscaler-1.36.1). EKS tags a managed node group's ASG `k8s.io/cluster-autoscaler/enabled=true` and
# `k8s.io/cluster-autoscaler/<cluster>=owned` itself (EKS User Guide, "Managed node groups"): auto-discovery
# finds every group of the cluster with them.
NODE_TEMPLATE = "k8s.io/cluster-autoscaler/node-template"
DISCOVERY_TAG = "k8s.io/cluster-autoscaler/enabled"

# EKS taint effects (NodeGroup API) -> Kubernetes taint effects (the tag's value format).
_TAINT_EFFECT = {"NO_SCHEDULE": "NoSchedule", "NO_EXECUTE": "NoExecute", "PREFER_NO_SCHEDULE": "PreferNoSchedule"}

# Capacity Blocks can be bought up to 8 weeks ahead (EC2 User Guide, "Capacity Blocks for ML"): a job queued on
# the day of purchase retries its capacity check every `backoffMaxSeconds` until the block starts.
CAPACITY_BLOCK_MAX_LEAD = timedelta(weeks=8)


class Admission(StrEnum):
    """How Kueue admits a gang job to a group's queue."""

    NODES_EXIST = "nodes-exist"  # fixed group: the quota is the nodes that exist, no admission check
    ATOMIC_SCALE_UP = "best-effort-atomic-scale-up.autoscaling.x-k8s.io"  # all of a job's nodes at once, or none
    CHECK_CAPACITY = "check-capacity.autoscaling.x-k8s.io"  # admitted only when the nodes exist now

    @property
    def provisioning_class(self) -> str | None:
        """The ProvisioningRequest class the admission check asks for, or None (no check)."""
        return None if self is Admission.NODES_EXIST else self.value


def can_grow(group: GpuNodeGroupSpec) -> bool:
    """Whether the autoscaler changes the group's size: min_size < max_size."""
    return group.min_size < group.max_size


def admission(group: GpuNodeGroupSpec) -> Admission:
    """How a gang job is admitted to the group's queue (see the module docstring)."""
    if can_grow(group):
        return Admission.ATOMIC_SCALE_UP
    if group.capacity.type is CapacityType.CAPACITY_BLOCK:
        return Admission.CHECK_CAPACITY
    return Admission.NODES_EXIST


def needs_autoscaler(groups: Sequence[GpuNodeGroupSpec]) -> bool:
    """Whether the stack plans cluster-autoscaler: some group can grow or waits for a Capacity Block."""
    return any(admission(g) is not Admission.NODES_EXIST for g in groups)


def admission_check_name(group: GpuNodeGroupSpec) -> str:
    """Name of the group's AdmissionCheck and ProvisioningRequestConfig (cluster-scoped)."""
    return f"{group.name}-capacity"


@dataclass(frozen=True)
class RetryStrategy:
    """Kueue's ProvisioningRequestConfig `retryStrategy`: after a failed request the workload is requeued after
    about base * 2^(n-1) seconds, at most `max_s`, and deactivated after `limit` retries (v0.14.8 API docs)."""

    limit: int
    base_s: int
    max_s: int

    def spec(self) -> dict[str, int]:
        return {"backoffLimitCount": self.limit, "backoffBaseSeconds": self.base_s, "backoffMaxSeconds": self.max_s}

    def span(self) -> timedelta:
        """How long a workload keeps retrying before Kueue deactivates it (jitter left out)."""
        return timedelta(seconds=sum(min(self.base_s * 2 ** (n - 1), self.max_s) for n in range(1, self.limit + 1)))


# Kueue's defaults (the CRD's +kubebuilder:default): three retries, 1 min doubling to at most 30 min.
SCALE_UP_RETRY = RetryStrategy(limit=3, base_s=60, max_s=1800)


def _window_retry() -> RetryStrategy:
    # Enough half-hourly retries to outlast the longest lead a block can be bought with.
    ramp = RetryStrategy(limit=6, base_s=60, max_s=1800)  # 1, 2, 4, 8, 16, 30 minutes
    rest = (CAPACITY_BLOCK_MAX_LEAD - ramp.span()) / timedelta(seconds=ramp.max_s)
    return RetryStrategy(limit=ramp.limit + math.ceil(rest), base_s=ramp.base_s, max_s=ramp.max_s)


WINDOW_RETRY = _window_retry()


def retry_strategy(group: GpuNodeGroupSpec) -> RetryStrategy:
    return WINDOW_RETRY if group.capacity.type is CapacityType.CAPACITY_BLOCK else SCALE_UP_RETRY


def provisioning_request_config_spec(group: GpuNodeGroupSpec) -> dict[str, Any]:
    """The group's ProvisioningRequestConfig: its class, the accelerator as the managed resource (a job's CPU-only
    pod sets need no new node) and the retry strategy."""
    cls = admission(group).provisioning_class
    if cls is None:
        raise ValueError(f"group {group.name} admits against the nodes that exist: it has no ProvisioningRequestConfig")
    return {
        "provisioningClassName": cls,
        "managedResources": [CATALOG[group.instance_type].device_resource],
        "retryStrategy": retry_strategy(group).spec(),
    }


def admission_check_spec(group: GpuNodeGroupSpec, kueue_api_group: str = "kueue.x-k8s.io") -> dict[str, Any]:
    """The group's AdmissionCheck: Kueue's provisioning controller with the group's ProvisioningRequestConfig."""
    return {
        "controllerName": PROVISIONING_CONTROLLER,
        "parameters": {
            "apiGroup": kueue_api_group,
            "kind": "ProvisioningRequestConfig",
            "name": admission_check_name(group),
        },
    }


def node_template_tags(
    group: GpuNodeGroupSpec, labels: Mapping[str, str], taint: tuple[str, str, str]
) -> dict[str, str]:
    """ASG tags that tell cluster-autoscaler what a node of an empty group offers: accelerators (it knows NVIDIA
    GPUs per type from its own list, not Neuron devices), EFA devices, hugepages, every label and the taint
    (key, value, EKS effect). Without them a job that selects the group's label or requests EFA never scales
    it from zero."""
    row = CATALOG[group.instance_type]
    tags = {f"{NODE_TEMPLATE}/resources/{row.device_resource}": str(row.accelerator_count)}
    if group.efa_enabled:
        tags[f"{NODE_TEMPLATE}/resources/vpc.amazonaws.com/efa"] = str(row.max_efa_interfaces)
    if group.hugepages_2mi:
        tags[f"{NODE_TEMPLATE}/resources/hugepages-2Mi"] = f"{group.hugepages_2mi * 2}Mi"
    for key, value in sorted(labels.items()):
        tags[f"{NODE_TEMPLATE}/label/{key}"] = value
    key, value, effect = taint
    tags[f"{NODE_TEMPLATE}/taint/{key}"] = f"{value}:{_TAINT_EFFECT[effect]}"
    return tags


def cluster_autoscaler_values(
    spec: ClusterAutoscalerSpec, *, kubernetes_version: str, cluster_name: str, region: str, system_node_group: Any
) -> dict[str, Any]:
    """Helm values of the cluster-autoscaler chart: AWS auto-discovery of the cluster's groups, ProvisioningRequest
    handling, the pinned image, the Pod Identity service account, and the system nodes to run on.
    `system_node_group` (the system node group's name) may be an Output."""
    return {
        "cloudProvider": "aws",
        "awsRegion": region,
        "autoDiscovery": {"clusterName": cluster_name},
        "image": {"tag": spec.image_for(kubernetes_version)},
        "rbac": {"serviceAccount": {"create": True, "name": CLUSTER_AUTOSCALER_SERVICE_ACCOUNT}},
        "nodeSelector": {EKS_NODEGROUP_LABEL: system_node_group},
        "extraArgs": {
            "enable-provisioning-requests": "true",
            "max-node-provision-time": f"{spec.max_node_provision_time_s}s",
            "scale-down-unneeded-time": f"{spec.scale_down_unneeded_time_s}s",
            # Each GPU group is its own instance type, AZ and placement group: never balance across them.
            "balance-similar-node-groups": "false",
            "expander": "least-waste",
        },
    }


def autoscaler_policy(cluster_name: str, *, nodegroup_arns: Any) -> dict[str, Any]:
    """The autoscaler's IAM policy: describe calls (they take no resource-level scoping), EKS DescribeNodegroup
    on this cluster's node groups, and scaling only Auto Scaling groups EKS tagged as this cluster's.

    Upstream's recommended policy (cloudprovider/aws/README.md, "Full Cluster Autoscaler Features Policy"),
    with its second block scoped by tag as the same README asks."""
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "Describe",
                "Effect": "Allow",
                "Action": [
                    "autoscaling:DescribeAutoScalingGroups",
                    "autoscaling:DescribeAutoScalingInstances",
                    "autoscaling:DescribeLaunchConfigurations",
                    "autoscaling:DescribeScalingActivities",
                    "autoscaling:DescribeTags",
                    "ec2:DescribeImages",
                    "ec2:DescribeInstanceTypes",
                    "ec2:DescribeLaunchTemplateVersions",
                    "ec2:GetInstanceTypesFromInstanceRequirements",
                ],
                "Resource": "*",
            },
            {
                "Sid": "DescribeNodegroups",
                "Effect": "Allow",
                "Action": "eks:DescribeNodegroup",
                "Resource": nodegroup_arns,
            },
            {
                "Sid": "ScaleOwnGroups",
                "Effect": "Allow",
                "Action": ["autoscaling:SetDesiredCapacity", "autoscaling:TerminateInstanceInAutoScalingGroup"],
                "Resource": "*",
                "Condition": {
                    "StringEquals": {
                        f"aws:ResourceTag/{DISCOVERY_TAG}": "true",
                        f"aws:ResourceTag/k8s.io/cluster-autoscaler/{cluster_name}": "owned",
                    }
                },
            },
        ],
    }

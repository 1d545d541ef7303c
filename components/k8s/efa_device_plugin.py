"""The AWS EFA Kubernetes device plugin: Helm values (pure) and the component that installs the chart.

The plugin advertises `vpc.amazonaws.com/efa`; without it, pods cannot request EFA devices and NCCL falls
back to TCP sockets. Three things the chart's defaults get wrong for a GPU cluster
(`aws/eks-charts` `stable/aws-efa-k8s-device-plugin/values.yaml`, `templates/daemonset.yaml`):
- `tolerations: []`: the DaemonSet never reaches tainted GPU or Neuron nodes (user pain point 5);
- `nodeSelector: {}`: it would start on EFA-capable types launched without EFA and crash-loop with
  "No valid EFA devices found" (pain point 4; zalando-incubator/kubernetes-on-aws PR #8881);
- `supportedInstanceLabels`: a required node affinity on a hard-coded instance-type list that lags new types
  (p6 was missing until a chart bump, aws-ia/terraform-aws-eks-data-addons #53).

The chart turns every key of `supportedInstanceLabels.keys` into its own `nodeSelectorTerms` entry (terms are
ORed), each `key In supportedInstanceLabels.values`. We use that for exactly two kinds of node:
- trainstack GPU nodes launched with EFA interfaces: `vpc.amazonaws.com/efa.present In [true, ...]`;
- SageMaker HyperPod nodes (EKS orchestrator) of EFA-capable types, which trainstack does not label:
  `node.kubernetes.io/instance-type In [..., ml.p5.48xlarge]` (HyperPod attaches EFA on every EFA-capable
  type; AWS's own HyperPod dependencies chart selects its EFA plugin the same way).
Both terms share one value list, so each also lists the other's values; neither can match them (no instance
type is called `true`, and the EFA label is never an instance-type name). No `nodeSelector`: it would be ANDed
with both terms and keep the plugin off HyperPod nodes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.k8s_common import (
    EFA_NODE_LABEL,
    GPU_TAINT_KEY,
    INSTANCE_TYPE_LABEL,
    NEURON_TAINT_KEY,
    Toleration,
    hyperpod_health_toleration,
    toleration,
)
from components.naming import child_name
from stacks.schema import EfaDevicePluginSpec

CHART = "aws-efa-k8s-device-plugin"
REPOSITORY = "https://aws.github.io/eks-charts"
NAMESPACE = "kube-system"  # the chart README installs it there; system-node-critical needs no quota


def efa_device_plugin_values(
    hyperpod_instance_types: Sequence[str] = (),
    group_taints: Sequence[Toleration] = (),
    instance_types: Sequence[str] = (),
) -> dict[str, Any]:
    """Helm values: run on trainstack's EFA nodes and on HyperPod nodes of the given EFA-capable ml.* types,
    tolerating the GPU and Neuron taints, the groups' own taints (`custom_taint_tolerations`) and HyperPod's
    deep-health-check taint when HyperPod nodes exist."""
    keys = [EFA_NODE_LABEL]
    values = ["true"]
    tolerations = [toleration(GPU_TAINT_KEY), toleration(NEURON_TAINT_KEY), *group_taints]
    # Nodes trainstack did not label (HyperPod's, an existing cluster's EFA groups) are picked by instance type.
    if hyperpod_instance_types or instance_types:
        keys.append(INSTANCE_TYPE_LABEL)
        values += sorted(set(hyperpod_instance_types) | set(instance_types))
    if hyperpod_instance_types:
        tolerations.append(hyperpod_health_toleration())
    return {"supportedInstanceLabels": {"keys": keys, "values": values}, "tolerations": tolerations}


@dataclass
class EfaDevicePluginArgs:
    """Spec (the pinned chart version) and what must exist first."""

    spec: EfaDevicePluginSpec
    hyperpod_instance_types: Sequence[str] = ()
    """EFA-capable ml.* instance types of SageMaker HyperPod groups joined to the cluster (EKS orchestrator)."""
    group_taints: Sequence[Toleration] = ()
    """Tolerations of the GPU node groups' own taints (`k8s_common.custom_taint_tolerations`)."""
    instance_types: Sequence[str] = ()
    """EC2 types of an existing cluster's EFA groups (platform-only mode), whose nodes lack trainstack's EFA label."""
    after: Sequence[pulumi.Resource] = ()
    """What must exist first (the cluster and its system nodes)."""


class EfaDevicePlugin(pulumi.ComponentResource):
    """The aws-efa-k8s-device-plugin Helm release in kube-system."""

    release: k8s.helm.v3.Release
    """The Helm release; depend on it before scheduling anything that requests `vpc.amazonaws.com/efa`."""
    values: dict[str, Any]
    """The Helm values the release was given."""

    def __init__(self, name: str, args: EfaDevicePluginArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("trainstack:k8s:EfaDevicePlugin", name, None, opts)
        self.values = efa_device_plugin_values(args.hyperpod_instance_types, args.group_taints, args.instance_types)
        self.release = k8s.helm.v3.Release(
            child_name(name, "release"),
            k8s.helm.v3.ReleaseArgs(
                chart=CHART,
                version=args.spec.chart_version,
                repository_opts=k8s.helm.v3.RepositoryOptsArgs(repo=REPOSITORY),
                namespace=NAMESPACE,
                values=self.values,
                atomic=True,
                cleanup_on_fail=True,
            ),
            opts=pulumi.ResourceOptions(parent=self, depends_on=list(args.after)),
        )
        self.register_outputs({"release": self.release.name, "values": self.values})

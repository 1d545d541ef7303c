"""The AWS Neuron Kubernetes device plugin: Helm values (pure) and the component that installs the chart.

Trainium nodes advertise `aws.amazon.com/neuron` (whole devices) and `aws.amazon.com/neuroncore` only once
the Neuron device plugin runs on them; without it every job that requests Neuron devices stays Pending and
Kueue's Neuron ClusterQueues never admit anything. AWS ships the plugin in its umbrella chart
`oci://public.ecr.aws/neuron/neuron-helm-chart` (source: github.com/aws-neuron/neuron-helm-charts; Neuron docs
"Neuron Helm Chart" and "Deploy Neuron Device Plugin", which install it with `--set npd.enabled=false`).
The chart bundles more than the plugin; we enable the plugin only:
- `scheduler` (Neuron scheduler extension) stays off. AWS calls it optional and "primarily beneficial for
  workloads that require specific subsets of Neuron devices or cores rather than consuming all available
  resources on a node" (Neuron docs, "Neuron scheduler extension"); on EKS it can only run as a second
  scheduler (`my-scheduler`) that every Neuron pod must name in `schedulerName` ("Neuron scheduler extension
  with multiple schedulers"), which Kueue-admitted training jobs do not. trainstack's Neuron jobs are
  multi-node and take every device of their nodes (16 on trn1/trn1n.32xlarge), so there is nothing to pack.
- `npd` (node problem detector + recovery agent) is on by default in the chart; it runs privileged in its
  own namespace and its recovery agent needs extra IAM permissions, so it is off like in AWS's plugin guide.
- `draDriver` and `ultraserverOperator` stay off: the DRA driver cannot share a node with the device plugin
  (chart README, "Validation Rules"), and Kueue's quotas count the device plugin's extended resource.

Two chart defaults we replace (chart `values.yaml`, `devicePlugin.*`; Helm replaces lists, merges maps):
- `affinity`: a required node affinity on the chart's hard-coded `neuronInstances` list, which lags new
  instance types (the same trap as the EFA plugin's list). We key it on the accelerator label the GPU node
  groups set instead, in agreement with `nodeSelector`.
- `tolerations`: the chart's list also tolerates `CriticalAddonsOnly` and SageMaker HyperPod's health taint,
  neither of which trainstack's Neuron node groups carry; we tolerate exactly their `aws.amazon.com/neuron`
  NoSchedule taint.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.k8s_common import NEURON_TAINT_KEY, Toleration, toleration
from components.naming import child_name
from stacks.catalog import Accelerator
from stacks.schema import ACCELERATOR_LABEL, NeuronDevicePluginSpec

# The chart's only published location (Neuron docs "Neuron Helm Chart"; gallery.ecr.aws/neuron/neuron-helm-chart).
CHART = "oci://public.ecr.aws/neuron/neuron-helm-chart"
# The chart's `devicePlugin.namespaceOverride` default; system-node-critical pods need no ResourceQuota there.
NAMESPACE = "kube-system"


def neuron_node_selector() -> dict[str, str]:
    """The label every node of a Neuron (Trainium) GPU node group carries (components/gpu/gpu_nodes.node_labels)."""
    return {ACCELERATOR_LABEL: Accelerator.NEURON.value}


def neuron_device_plugin_values(group_taints: Sequence[Toleration] = ()) -> dict[str, Any]:
    """Helm values: the device plugin alone, on Neuron nodes only, tolerating their taint.

    Keys follow the chart's `values.yaml` (aws-neuron/neuron-helm-charts, `charts/neuron-helm-chart`):
    `devicePlugin.{enabled,nodeSelector,affinity,tolerations}`, `scheduler.enabled`, `npd.enabled`,
    `draDriver.enabled`, `ultraserverOperator.enabled`.
    """
    neuron_only = neuron_node_selector()
    return {
        "devicePlugin": {
            "enabled": True,
            "nodeSelector": neuron_only,
            # Replaces the chart's instance-type term (its list lags new types) with the accelerator label.
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {
                                "matchExpressions": [
                                    {"key": key, "operator": "In", "values": [value]}
                                    for key, value in neuron_only.items()
                                ]
                            }
                        ]
                    }
                }
            },
            "tolerations": [toleration(NEURON_TAINT_KEY), *group_taints],
        },
        "scheduler": {"enabled": False},
        "npd": {"enabled": False},
        "draDriver": {"enabled": False},
        "ultraserverOperator": {"enabled": False},
    }


@dataclass
class NeuronDevicePluginArgs:
    """Spec (the pinned chart version) and what must exist first."""

    spec: NeuronDevicePluginSpec
    group_taints: Sequence[Toleration] = ()
    """Tolerations of the GPU node groups' own taints (`k8s_common.custom_taint_tolerations`)."""
    after: Sequence[pulumi.Resource] = ()
    """What must exist first (the cluster and its system nodes)."""


class NeuronDevicePlugin(pulumi.ComponentResource):
    """The neuron-helm-chart Helm release in kube-system, running only the Neuron device plugin."""

    release: k8s.helm.v3.Release
    """The Helm release; depend on it before scheduling anything that requests `aws.amazon.com/neuron`."""
    values: dict[str, Any]
    """The Helm values the release was given."""

    def __init__(self, name: str, args: NeuronDevicePluginArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("trainstack:k8s:NeuronDevicePlugin", name, None, opts)
        self.values = neuron_device_plugin_values(args.group_taints)
        self.release = k8s.helm.v3.Release(
            child_name(name, "release"),
            k8s.helm.v3.ReleaseArgs(
                chart=CHART,
                version=args.spec.chart_version,
                namespace=NAMESPACE,
                values=self.values,
                atomic=True,
                cleanup_on_fail=True,
            ),
            opts=pulumi.ResourceOptions(parent=self, depends_on=list(args.after)),
        )
        self.register_outputs({"release": self.release.name, "values": self.values})

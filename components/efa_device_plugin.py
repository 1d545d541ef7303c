"""The AWS EFA Kubernetes device plugin: Helm values (pure) and the component that installs the chart.

The plugin advertises `vpc.amazonaws.com/efa`; without it, pods cannot request EFA devices and NCCL falls
back to TCP sockets. Three things the chart's defaults get wrong for a GPU cluster
(`aws/eks-charts` `stable/aws-efa-k8s-device-plugin/values.yaml`, `templates/daemonset.yaml`):
- `tolerations: []`: the DaemonSet never reaches tainted GPU or Neuron nodes (user pain point 5);
- `nodeSelector: {}`: it would start on EFA-capable types launched without EFA and crash-loop with
  "No valid EFA devices found" (pain point 4; zalando-incubator/kubernetes-on-aws PR #8881);
- `supportedInstanceLabels`: a required node affinity on a hard-coded instance-type list that lags new types
  (p6 was missing until a chart bump, aws-ia/terraform-aws-eks-data-addons #53). We point that affinity at the
  EFA node label instead, so the plugin runs exactly where EFA interfaces were attached.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.k8s_common import EFA_NODE_LABEL, GPU_TAINT_KEY, NEURON_TAINT_KEY, toleration
from components.naming import child_name
from stacks.schema import EfaDevicePluginSpec

CHART = "aws-efa-k8s-device-plugin"
REPOSITORY = "https://aws.github.io/eks-charts"
NAMESPACE = "kube-system"  # the chart README installs it there; system-node-critical needs no quota


def efa_device_plugin_values() -> dict[str, Any]:
    """Helm values: run only on EFA nodes, tolerate the GPU and Neuron taints."""
    efa_only = {EFA_NODE_LABEL: "true"}
    return {
        "nodeSelector": efa_only,
        # The chart turns every key into a required `In` affinity term; keyed on the EFA label it agrees with
        # the node selector and no longer depends on the chart's instance-type list.
        "supportedInstanceLabels": {"keys": [EFA_NODE_LABEL], "values": ["true"]},
        "tolerations": [toleration(GPU_TAINT_KEY), toleration(NEURON_TAINT_KEY)],
    }


@dataclass
class EfaDevicePluginArgs:
    """Spec (the pinned chart version) and what must exist first."""

    spec: EfaDevicePluginSpec
    after: Sequence[pulumi.Resource] = field(default_factory=list)
    """What must exist first (the cluster and its system nodes)."""


class EfaDevicePlugin(pulumi.ComponentResource):
    """The aws-efa-k8s-device-plugin Helm release in kube-system."""

    release: k8s.helm.v3.Release
    """The Helm release; depend on it before scheduling anything that requests `vpc.amazonaws.com/efa`."""
    values: dict[str, Any]
    """The Helm values the release was given."""

    def __init__(self, name: str, args: EfaDevicePluginArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("trainstack:k8s:EfaDevicePlugin", name, None, opts)
        self.values = efa_device_plugin_values()
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

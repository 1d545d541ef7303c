"""Kubernetes metrics-server: the `metrics.k8s.io` API behind `kubectl top` and the HorizontalPodAutoscaler.

EKS runs none by default; the peers install it with every cluster (ai-on-eks's training blueprints, the EKS
Blueprints add-on). The chart is kubernetes-sigs/metrics-server's own (`charts/metrics-server`, published at
https://kubernetes-sigs.github.io/metrics-server/), pinned by `kubernetes.metrics_server.chart_version`; the
plan checks the values below against the recorded facts of that version. Keys from its `values.yaml`:
- `replicas: 2` with `podDisruptionBudget` (minAvailable 1): the aggregated API stays up while a system node
  drains, so `kubectl top` and autoscalers do not see the APIService go unavailable during node rotation.
- `nodeSelector`: the system node group (its `trainstack.io/node-role: system` label), never GPU nodes, which
  are tainted anyway. On an existing cluster there is no such group and no node carries the label, so the pods
  would stay Pending: there the release sets no selector and the scheduler places it.
- `containerPort` stays the chart's 10250: the EKS cluster security group lets the control plane reach nodes on
  the kubelet port, which is what the aggregated API's calls to the pod need (EKS User Guide, "Amazon EKS
  security group requirements"; metrics-server's README, "Requirements").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.eks.eks import NODE_ROLE_LABEL
from components.naming import child_name
from stacks.schema import MetricsServerSpec

CHART = "metrics-server"
REPOSITORY = "https://kubernetes-sigs.github.io/metrics-server/"
NAMESPACE = "kube-system"  # the chart's README installs it there; system-cluster-critical needs no quota


def metrics_server_values(system_nodes: bool = True) -> dict[str, Any]:
    """Helm values: two replicas with a PodDisruptionBudget, on the system nodes where trainstack made them."""
    values: dict[str, Any] = {"replicas": 2, "podDisruptionBudget": {"enabled": True, "minAvailable": 1}}
    if system_nodes:
        values["nodeSelector"] = {NODE_ROLE_LABEL: "system"}
    return values


@dataclass
class MetricsServerArgs:
    spec: MetricsServerSpec
    after: Sequence[pulumi.Resource] = ()
    """What must exist first (the cluster and its system nodes)."""
    system_nodes: bool = True
    """Whether the cluster has trainstack's system node group; an existing cluster has not."""


class MetricsServer(pulumi.ComponentResource):
    """The metrics-server Helm release in kube-system."""

    release: k8s.helm.v3.Release
    values: dict[str, Any]

    def __init__(self, name: str, args: MetricsServerArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("trainstack:k8s:MetricsServer", name, None, opts)
        self.values = metrics_server_values(args.system_nodes)
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

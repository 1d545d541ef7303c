"""The NVIDIA GPU Operator: Helm values per AMI family (pure) and the component that installs the chart.

What the operator may own depends on the node image (EKS user guide; awsdocs/amazon-eks-user-guide PR #1143;
NVIDIA/gpu-operator #686, #2060). Every AMI family trainstack builds is an EKS accelerated NVIDIA AMI (or
Neuron, which the operator does not serve), and every one ships the NVIDIA driver and container toolkit, so
the operator's driver and toolkit are always off:
- EKS AL2023 NVIDIA AMI (x86_64 or ARM_64): the operator runs the device plugin, GFD, DCGM exporter and (with
  MIG) the MIG manager.
- EKS Bottlerocket NVIDIA AMI (x86_64 or ARM_64): the image also runs its own device plugin, so the operator's
  device plugin is off too.
SageMaker HyperPod nodes (EKS orchestrator) run HyperPod's accelerated AMI, which also ships the driver and
toolkit; they count as AL2023 here. Their operands tolerate HyperPod's deep-health-check taint.

A cluster mixing families gets one release (`StackConfig.gpu_operator_ami_family`): the device plugin is
off only when every NVIDIA group is Bottlerocket. In a mixed AL2023 + Bottlerocket cluster the Bottlerocket
nodes opt out of the operator's device plugin with the per-node labels from `operand_opt_out_labels` (the
operator honours `nvidia.com/gpu.deploy.<operand>=false`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.fleet_metrics import DCGM_CONFIG_MAP
from components.k8s_common import GPU_TAINT_KEY, Toleration, hyperpod_health_toleration, toleration
from components.namespaces import system_namespace_labels
from components.naming import child_name
from stacks.catalog import Accelerator
from stacks.schema import AmiFamily, GpuOperatorSpec, MigStrategy

CHART = "gpu-operator"
REPOSITORY = "https://helm.ngc.nvidia.com/nvidia"  # NVIDIA GPU Operator install guide (NGC Helm repository)
NAMESPACE = "gpu-operator"
DEVICE_LIST_STRATEGY = "volume-mounts"  # NVIDIA/k8s-device-plugin: envvar, volume-mounts, cdi-annotations, cdi-cri


def gpu_operator_values(
    ami_family: AmiFamily,
    mig_strategy: MigStrategy,
    dcgm_exporter: bool,
    *,
    hyperpod_nodes: bool = False,
    dcgm_metrics_csv: str | None = None,
    group_taints: Sequence[Toleration] = (),
) -> dict[str, Any]:
    """Helm values for the gpu-operator chart on nodes of `ami_family` (and HyperPod nodes, when asked).

    Keys follow the chart's `deployments/gpu-operator/values.yaml` (NVIDIA/gpu-operator; the plan checks them
    against the recorded facts of the pinned version): `operator.upgradeCRD`, `driver.enabled`,
    `toolkit.enabled`, `devicePlugin.enabled`, `dcgmExporter.enabled`, `gfd.enabled`, `migManager.enabled`,
    `mig.strategy`, `daemonsets.tolerations`, `node-feature-discovery.worker.tolerations`.
    """
    if ami_family.accelerator is not Accelerator.NVIDIA:
        raise ValueError("the NVIDIA GPU Operator does not serve Neuron (Trainium) nodes")
    tolerations = [toleration(GPU_TAINT_KEY), *group_taints]  # the groups' own taints too (their operands run there)
    if hyperpod_nodes:
        tolerations.append(hyperpod_health_toleration())
    dcgm: dict[str, Any] = {"enabled": dcgm_exporter}
    if dcgm_exporter and dcgm_metrics_csv is not None:
        # The fleet's own field list (ECC, Xid, NVLink, thermal: components/fleet_metrics.py), as a ConfigMap the
        # chart creates (gpu-operator values.yaml `dcgmExporter.config.{name,create,data}`).
        dcgm["config"] = {"name": DCGM_CONFIG_MAP, "create": True, "data": dcgm_metrics_csv}
    return {
        # Helm never upgrades a chart's crds/ directory; the chart's pre-upgrade hook applies the new CRDs when this
        # is on (NVIDIA/gpu-operator v25.3.4 values.yaml `operator.upgradeCRD`, templates/upgrade_crd.yaml). It
        # is the chart's default at v25.3.4, set here so a chart bump that changed the default cannot drop it.
        # (The operator detects the container runtime itself: v25.3.4 has no `operator.defaultRuntime` key.)
        "operator": {"upgradeCRD": True},
        # Every EKS NVIDIA AMI ships the driver and toolkit; an operator driver container would fight them.
        "driver": {"enabled": False},
        "toolkit": {"enabled": False},
        # Allocated GPUs reach containers as volume mounts, never as NVIDIA_VISIBLE_DEVICES, which the nodes' runtime
        # ignores in unprivileged containers (components/gpu/userdata.py nvidia_runtime_script). The chart's
        # `devicePlugin.env` is applied after the operator's own DEVICE_LIST_STRATEGY (NVIDIA/gpu-operator v25.3.4
        # controllers/object_controls.go TransformDevicePlugin), so it wins.
        "devicePlugin": {
            "enabled": not ami_family.bottlerocket,
            "env": [{"name": "DEVICE_LIST_STRATEGY", "value": DEVICE_LIST_STRATEGY}],
        },
        "dcgmExporter": dcgm,
        "gfd": {"enabled": True},
        "mig": {"strategy": mig_strategy.value},
        "migManager": {"enabled": mig_strategy is not MigStrategy.NONE},
        # Operands select GPU nodes by the nvidia.com/gpu.present label the operator sets from NFD's PCI
        # labels, so they need the GPU taint tolerated but no extra node selector.
        "daemonsets": {"tolerations": tolerations},
        # NFD's worker must reach the tainted GPU nodes to label them in the first place.
        "node-feature-discovery": {"worker": {"tolerations": tolerations}},
    }


def operand_opt_out_labels(ami_family: AmiFamily, cluster_family: AmiFamily | None) -> dict[str, str]:
    """Node labels that keep the operator's operands off a node whose image already provides them.

    Only needed where the cluster-wide release enables an operand the node's image ships itself: a
    Bottlerocket group in a cluster configured for AL2023 opts out of the device plugin.
    """
    if ami_family.bottlerocket and not (cluster_family is not None and cluster_family.bottlerocket):
        return {"nvidia.com/gpu.deploy.device-plugin": "false"}
    return {}


@dataclass
class GpuOperatorArgs:
    """Spec (which chart, MIG, DCGM) and the cluster's one NVIDIA AMI family
    (`StackConfig.gpu_operator_ami_family`)."""

    spec: GpuOperatorSpec
    ami_family: AmiFamily
    """The family the release is configured for; the composition root computes it once for labels and values."""
    hyperpod_nodes: bool = False
    """Whether SageMaker HyperPod NVIDIA nodes join the cluster (their operands tolerate HyperPod's health taint)."""
    dcgm_metrics_csv: str | None = None
    """dcgm-exporter's field list (`fleet_metrics.dcgm_metrics_csv`) when the metrics stack scrapes it."""
    group_taints: Sequence[Toleration] = ()
    """Tolerations of the GPU node groups' own taints (`k8s_common.custom_taint_tolerations`)."""
    after: list[pulumi.Resource] = field(default_factory=list[pulumi.Resource])
    """What must exist first (the cluster and its system nodes, which run the operator)."""


class GpuOperator(pulumi.ComponentResource):
    """The NVIDIA GPU Operator Helm release in its own `gpu-operator` namespace."""

    namespace: k8s.core.v1.Namespace
    """The operator's namespace."""
    release: k8s.helm.v3.Release
    """The Helm release; depend on it before scheduling anything that requests `nvidia.com/gpu`."""
    values: dict[str, Any]
    """The Helm values the release was given (plain data, for plans and tests)."""

    def __init__(self, name: str, args: GpuOperatorArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("trainstack:k8s:GpuOperator", name, None, opts)
        self.values = gpu_operator_values(
            args.ami_family,
            args.spec.mig_strategy,
            args.spec.dcgm_exporter,
            hyperpod_nodes=args.hyperpod_nodes,
            dcgm_metrics_csv=args.dcgm_metrics_csv,
            group_taints=args.group_taints,
        )
        self.namespace = k8s.core.v1.Namespace(
            child_name(name, "ns"),
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name=NAMESPACE,
                # The operands need host access (hostPath, privileged validator): PSA must allow it here.
                labels=system_namespace_labels(NAMESPACE),
            ),
            opts=pulumi.ResourceOptions(parent=self, depends_on=list(args.after)),
        )
        self.release = k8s.helm.v3.Release(
            child_name(name, "release"),
            k8s.helm.v3.ReleaseArgs(
                chart=CHART,
                version=args.spec.chart_version,
                repository_opts=k8s.helm.v3.RepositoryOptsArgs(repo=REPOSITORY),
                namespace=self.namespace.metadata.name,
                values=self.values,
                atomic=True,
                cleanup_on_fail=True,
                timeout=900,  # driverless installs settle in minutes; validators wait for every GPU node
            ),
            opts=pulumi.ResourceOptions(parent=self, depends_on=[self.namespace, *args.after]),
        )
        self.register_outputs(
            {"namespace": self.namespace.metadata.name, "release": self.release.name, "values": self.values}
        )

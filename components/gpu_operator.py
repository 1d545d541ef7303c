"""The NVIDIA GPU Operator: Helm values per AMI family (pure) and the component that installs the chart.

What the operator may own depends on the node image (EKS user guide; awsdocs/amazon-eks-user-guide PR #1143;
NVIDIA/gpu-operator #686, #2060):
- EKS AL2023 NVIDIA AMI (x86_64 or ARM_64): the AMI ships the driver and the container toolkit, so the
  operator's driver and toolkit are off; the operator runs the device plugin, GFD, DCGM exporter and (with MIG)
  the MIG manager.
- EKS Bottlerocket NVIDIA AMI (x86_64 or ARM_64): the image also runs its own device plugin, so driver, toolkit
  AND device plugin are off.
- Any other (custom) image: the operator owns the driver and the toolkit too.

A cluster mixing families gets one release (`effective_ami_family`): the operator's driver and toolkit stay
off as soon as one group runs an EKS NVIDIA AMI (a driver container on those nodes would fight the AMI's
driver); the device plugin is off only when every NVIDIA group is Bottlerocket. In a mixed AL2023 +
Bottlerocket cluster the Bottlerocket nodes opt out of the operator's device plugin with the per-node labels
from `operand_opt_out_labels` (the operator honours `nvidia.com/gpu.deploy.<operand>=false`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.k8s_common import GPU_TAINT_KEY, toleration
from components.naming import child_name
from stacks.catalog import Accelerator
from stacks.schema import AmiFamily, GpuOperatorSpec, MigStrategy

CHART = "gpu-operator"
REPOSITORY = "https://helm.ngc.nvidia.com/nvidia"  # NVIDIA GPU Operator install guide (NGC Helm repository)
NAMESPACE = "gpu-operator"

CUSTOM_AMI = "CUSTOM"  # any image that does not ship the NVIDIA driver: the operator owns the driver

# Every EKS NVIDIA AMI, x86_64 and ARM_64 (Grace) alike, ships the driver and the container toolkit.
_EKS_NVIDIA_AMIS = frozenset(f for f in AmiFamily if f.accelerator is Accelerator.NVIDIA)


def _bottlerocket(family: AmiFamily | str | None) -> bool:
    return family in _EKS_NVIDIA_AMIS and AmiFamily(family).bottlerocket


def gpu_operator_values(ami_family: AmiFamily | str, mig_strategy: MigStrategy, dcgm_exporter: bool) -> dict[str, Any]:
    """Helm values for the gpu-operator chart on nodes of `ami_family`.

    Keys follow the chart's `deployments/gpu-operator/values.yaml` (NVIDIA/gpu-operator): `driver.enabled`,
    `toolkit.enabled`, `devicePlugin.enabled`, `dcgmExporter.enabled`, `gfd.enabled`, `migManager.enabled`,
    `mig.strategy`, `daemonsets.tolerations`, `node-feature-discovery.worker.tolerations`.
    """
    if ami_family == AmiFamily.AL2023_NEURON:
        raise ValueError("the NVIDIA GPU Operator does not serve Neuron (Trainium) nodes")
    eks_ami = ami_family in _EKS_NVIDIA_AMIS
    bottlerocket = _bottlerocket(ami_family)
    gpu_taint = [toleration(GPU_TAINT_KEY)]
    return {
        "operator": {"defaultRuntime": "containerd"},  # EKS AMIs run containerd
        "driver": {"enabled": not eks_ami},
        "toolkit": {"enabled": not eks_ami},
        "devicePlugin": {"enabled": not bottlerocket},
        "dcgmExporter": {"enabled": dcgm_exporter},
        "gfd": {"enabled": True},
        "mig": {"strategy": mig_strategy.value},
        "migManager": {"enabled": mig_strategy is not MigStrategy.NONE},
        # Operands select GPU nodes by the nvidia.com/gpu.present label the operator sets from NFD's PCI
        # labels, so they need the GPU taint tolerated but no extra node selector.
        "daemonsets": {"tolerations": gpu_taint},
        # NFD's worker must reach the tainted GPU nodes to label them in the first place.
        "node-feature-discovery": {"worker": {"tolerations": gpu_taint}},
    }


def effective_ami_family(families: Iterable[AmiFamily | str]) -> AmiFamily | str | None:
    """The one AMI family the cluster-wide release is configured for, or None without NVIDIA groups.

    The values depend on the image (EKS NVIDIA or custom, Bottlerocket or not), never on the CPU architecture:
    the operator's images are multi-arch, so x86_64 and Grace (ARM_64) groups share one release.
    """
    nvidia = [f for f in families if f != AmiFamily.AL2023_NEURON]
    if not nvidia:
        return None
    if len(set(nvidia)) == 1:
        return nvidia[0]
    if all(_bottlerocket(f) for f in nvidia):
        return AmiFamily.BOTTLEROCKET_NVIDIA
    if any(f in _EKS_NVIDIA_AMIS for f in nvidia):
        return AmiFamily.AL2023_NVIDIA
    return CUSTOM_AMI


def operand_opt_out_labels(ami_family: AmiFamily | str, cluster_family: AmiFamily | str | None) -> dict[str, str]:
    """Node labels that keep the operator's operands off a node whose image already provides them.

    Only needed where the cluster-wide release enables an operand the node's image ships itself: a
    Bottlerocket group in a cluster configured for AL2023 opts out of the device plugin.
    """
    if _bottlerocket(ami_family) and not _bottlerocket(cluster_family):
        return {"nvidia.com/gpu.deploy.device-plugin": "false"}
    return {}


@dataclass
class GpuOperatorArgs:
    """Spec (which chart, MIG, DCGM) and the AMI families of the cluster's NVIDIA node groups."""

    spec: GpuOperatorSpec
    ami_families: Sequence[AmiFamily | str]
    after: Sequence[pulumi.Resource] = field(default_factory=list)
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
        family = effective_ami_family(args.ami_families)
        if family is None:
            raise ValueError("GpuOperator needs at least one NVIDIA node group")
        self.values = gpu_operator_values(family, args.spec.mig_strategy, args.spec.dcgm_exporter)
        self.namespace = k8s.core.v1.Namespace(
            child_name(name, "ns"),
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name=NAMESPACE,
                # The operands need host access (hostPath, privileged validator): PSA must allow it here.
                labels={"pod-security.kubernetes.io/enforce": "privileged"},
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

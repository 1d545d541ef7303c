"""Versions that must move together, with their sources; known-broken pairings are refused.

Pure data and pure functions (no pydantic, no Pulumi), used twice: the stack schema refuses a pairing the stack
file makes (exit 2, the key path named), and the plan's contract tier (`trainstack/contracts/compatibility.py`)
holds the recorded releases against the same table and against the CRD facts of the installed versions.

- Kueue and Kubeflow Trainer: the TrainJob field Kueue writes a flavor's node selector and tolerations into must
  be a field of the installed Trainer's TrainJob CRD (`KUEUE_TRAINJOB_FIELD`, `TRAINER_TRAINJOB_FIELD`).
- EKS and the kube-proxy add-on: never newer than the cluster, at most three minors older (Kubernetes version
  skew policy); EKS recommends the cluster's own minor (`v1.36.x-eksbuild.N` on 1.36).
- EKS and its node groups' kubelets: never newer than the control plane, at most three minors older
  (`kubelet_problem`), so the upgrade recipe moves the control plane first and the nodes after it.
- GPU Operator and the AMI family: the operator owns no operand the node image already ships (`NVIDIA_AMI_SHIPS`).
- EFA device plugin and instance types: the plugin must know the type's EFA devices (`EFA_PLUGIN_MINIMUM`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

Version = tuple[int, ...]


def version(text: str) -> Version:
    """`v1.2.3`, `1.2.3`, `v1.36.0-eksbuild.21` -> (1, 2, 3) / (1, 36, 0): the numeric release, no suffix."""
    match = re.match(r"^v?(\d+(?:\.\d+)*)", text.strip())
    if not match:
        raise ValueError(f"not a version: {text!r}")
    return tuple(int(p) for p in match.group(1).split("."))


@dataclass(frozen=True)
class Span:
    """A field that versions in [since, until) of a project use; `until` None: still current."""

    since: Version
    until: Version | None
    field: str
    source: str

    def covers(self, v: Version) -> bool:
        return self.since <= v and (self.until is None or v < self.until)


# The TrainJob spec field Kueue's TrainJob integration writes the admitted flavor's node selector and tolerations
# into (kubernetes-sigs/kueue `pkg/controller/jobs/trainjob/` at each tag; the Trainer module in its go.mod).
# Kueue before 0.14.0 has no TrainJob integration (CHANGELOG-0.14: "Add an alpha integration for Kubeflow Trainer").
KUEUE_TRAINJOB_FIELD: tuple[Span, ...] = (
    Span((0, 14, 0), (0, 14, 5), "podSpecOverrides", "kueue v0.14.0-v0.14.4 trainjob_controller.go (trainer v2.0.1)"),
    Span(
        (0, 14, 5),
        (0, 17, 0),
        "podTemplateOverrides",
        "kueue CHANGELOG-0.14 v0.14.5 urgent note (update Trainer to v2.1.0 at least); trainjob_controller.go "
        "v0.14.5-v0.16.x (trainer v2.1.0)",
    ),
    Span((0, 17, 0), None, "runtimePatches", "kueue CHANGELOG-0.17 v0.17.0 (support Kubeflow Trainer v2.2, #10127)"),
)

# The same field in Kubeflow Trainer's TrainJob CRD (kubeflow/trainer `manifests/base/crds/
# trainer.kubeflow.org_trainjobs.yaml` at v2.0.0, v2.0.1, v2.1.0, v2.2.0, v2.3.0).
TRAINER_TRAINJOB_FIELD: tuple[Span, ...] = (
    Span((2, 0, 0), (2, 1, 0), "podSpecOverrides", "kubeflow/trainer v2.0.x TrainJob CRD"),
    Span((2, 1, 0), (2, 2, 0), "podTemplateOverrides", "kubeflow/trainer v2.1.0 TrainJob CRD"),
    Span((2, 2, 0), None, "runtimePatches", "kubeflow/trainer v2.2.0 and v2.3.0 TrainJob CRD"),
)


def _span(table: tuple[Span, ...], v: Version) -> Span | None:
    return next((s for s in table if s.covers(v)), None)


def kueue_trainjob_field(kueue_version: str) -> Span | None:
    """The TrainJob field this Kueue writes on admission, or None when it has no TrainJob integration."""
    return _span(KUEUE_TRAINJOB_FIELD, version(kueue_version))


def kueue_trainer_problem(kueue_version: str, trainer_version: str) -> str | None:
    """Why this Kueue and this Trainer do not work together, or None when they do."""
    writes = kueue_trainjob_field(kueue_version)
    if writes is None:
        return f"Kueue {kueue_version} has no Kubeflow Trainer (TrainJob) integration; use Kueue 0.14.5 or newer"
    has = _span(TRAINER_TRAINJOB_FIELD, version(trainer_version))
    if has is None:
        return f"Kubeflow Trainer {trainer_version} has no TrainJob v1alpha1 API; use Trainer 2.1.0 or newer"
    if has.field != writes.field:
        fits = [s for s in KUEUE_TRAINJOB_FIELD if s.field == has.field]
        fix = (
            f"pin a Kueue in [{'.'.join(map(str, fits[0].since))}, "
            f"{'.'.join(map(str, fits[0].until)) if fits[0].until else 'newest'}) for this Trainer"
            if fits
            else "pin a matching pair"
        )
        return (
            f"Kueue {kueue_version} writes the admitted flavor's node selector and tolerations into TrainJob "
            f"spec.{writes.field}, which Kubeflow Trainer {trainer_version}'s TrainJob CRD does not have (it has "
            f"spec.{has.field}): the API server prunes it and TrainJobs lose their GPU toleration; {fix} "
            f"({writes.source}; {has.source})"
        )
    return None


def kube_proxy_problem(eks_version: str, kube_proxy: str) -> str | None:
    """kube-proxy may not be newer than the API server and at most three minors older (Kubernetes version skew
    policy, kube-proxy); EKS recommends the cluster's own minor (EKS user guide, "Manage kube-proxy")."""
    cluster, addon = version(eks_version)[:2], version(kube_proxy)[:2]
    if addon[0] == cluster[0] and cluster[1] - 3 <= addon[1] <= cluster[1]:
        return None
    return (
        f"kube-proxy add-on {kube_proxy} is built for Kubernetes {'.'.join(map(str, addon))} and the cluster runs "
        f"{eks_version}: kube-proxy may not be newer than the API server nor more than 3 minors older (Kubernetes "
        f"version skew policy); pick a v{eks_version}.x-eksbuild.N build (aws eks describe-addon-versions "
        f"--kubernetes-version {eks_version} --addon-name kube-proxy)"
    )


# Kubernetes Version Skew Policy (kubernetes.io/releases/version-skew-policy, "kubelet"): a kubelet must not be
# newer than kube-apiserver and may be up to three minor versions older (kubelets 1.25 and newer). EKS managed
# node groups follow it from 1.28 on (EKS User Guide, "Update a managed node group": a node group's version can
# be at most the cluster's, and EKS refuses UpdateNodegroupVersion to a newer one).
MAX_KUBELET_SKEW = 3


def kubelet_problem(cluster_version: str, node_version: str) -> str | None:
    """Why nodes on Kubernetes `node_version` cannot run under a control plane on `cluster_version`, or None."""
    cluster, node = version(cluster_version)[:2], version(node_version)[:2]
    if node[0] != cluster[0] or node[1] > cluster[1]:
        return (
            f"nodes on Kubernetes {node_version} under a control plane on {cluster_version}: a kubelet is never newer "
            "than the API server (Kubernetes version skew policy); upgrade the control plane (eks.version) first"
        )
    if cluster[1] - node[1] > MAX_KUBELET_SKEW:
        return (
            f"nodes on Kubernetes {node_version} under a control plane on {cluster_version}: a kubelet may be at most "
            f"{MAX_KUBELET_SKEW} minor versions older than the API server (Kubernetes version skew policy); upgrade "
            "the nodes before the control plane moves on"
        )
    return None


# What each EKS accelerated NVIDIA AMI family ships itself, so the GPU Operator must leave it off (EKS user guide,
# "Use EKS-optimized accelerated AMIs" and the Bottlerocket NVIDIA variants' docs; NVIDIA/gpu-operator #686 and
# #2060): Helm values key of the operand -> why. Keyed by the node group's EKS amiType prefix.
NVIDIA_AMI_SHIPS: dict[str, dict[str, str]] = {
    "AL2023": {
        "driver.enabled": "the EKS AL2023 NVIDIA AMI ships the NVIDIA driver",
        "toolkit.enabled": "the EKS AL2023 NVIDIA AMI ships the NVIDIA container toolkit",
    },
    "BOTTLEROCKET": {
        "driver.enabled": "Bottlerocket NVIDIA variants ship the NVIDIA driver",
        "toolkit.enabled": "Bottlerocket NVIDIA variants ship the NVIDIA container toolkit",
        "devicePlugin.enabled": "Bottlerocket NVIDIA variants run their own NVIDIA device plugin",
    },
}

# The first EFA device plugin chart that handles an instance family's devices (aws/eks-charts
# stable/aws-efa-k8s-device-plugin; plugins before v0.5.10 counted p6-b200's NVLink ibp* controllers as EFA
# devices: aws/sagemaker-hyperpod-cli PR #282, user pain point 4).
EFA_PLUGIN_MINIMUM: dict[str, tuple[Version, str]] = {
    "p6-b200": ((0, 5, 10), "aws/sagemaker-hyperpod-cli PR #282"),
}


def efa_plugin_problem(chart_version: str, instance_type: str) -> str | None:
    family = instance_type.split(".")[0]
    minimum = EFA_PLUGIN_MINIMUM.get(family)
    if minimum and version(chart_version) < minimum[0]:
        return (
            f"aws-efa-k8s-device-plugin {chart_version} miscounts EFA devices on {family}: use "
            f"v{'.'.join(map(str, minimum[0]))} or newer ({minimum[1]})"
        )
    return None

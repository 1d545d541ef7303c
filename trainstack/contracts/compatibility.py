"""Versions that must move together, held against what the recording installs (table: stacks/compatibility.py).

- Kueue and Kubeflow Trainer: the TrainJob field the recorded Kueue writes on admission must be a field of the
  recorded Trainer's TrainJob CRD (its facts), or the API server prunes the flavor's placement.
- EKS and kube-proxy: the add-on is not newer than the cluster, nor more than three minors older.
- GPU Operator and the AMI family: the release enables no operand the NVIDIA node groups' image ships.
- EFA device plugin and instance types: the plugin version handles every EFA group's devices.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from stacks.compatibility import (
    NVIDIA_AMI_SHIPS,
    efa_plugin_problem,
    kube_proxy_problem,
    kueue_trainjob_field,
)
from trainstack.contracts import ContractViolation, render_value
from trainstack.contracts.crds import installed_operators
from trainstack.contracts.facts import crd_facts
from trainstack.engine import RecordedResource, Recording
from trainstack.tokens import EKS_ADDON, EKS_CLUSTER, HELM_RELEASE, NODE_GROUP

TABLE = "stacks/compatibility.py"
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
DEVICE_PLUGIN_OPT_OUT = "nvidia.com/gpu.deploy.device-plugin"  # the operator skips nodes labelled "false"


def _releases(recording: Recording, chart: str) -> list[RecordedResource]:
    return [
        r
        for r in recording.by_type(HELM_RELEASE)
        if str(r.inputs.get("chart", "")).rstrip("/").rsplit("/", 1)[-1] == chart
    ]


def _get(values: dict[str, Any], dotted: str) -> Any:
    node: Any = values
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def _kueue_trainer(recording: Recording) -> Iterator[ContractViolation]:
    installed = installed_operators(recording)
    kueue, trainer = installed.get("kueue"), installed.get("kubeflow-trainer")
    if kueue is None or trainer is None:
        return
    release = _releases(recording, "kueue")[0]
    writes = kueue_trainjob_field(kueue)
    trainjob = [f for f in crd_facts("trainer.kubeflow.org/v1alpha1", "TrainJob") if f.operator[1] == trainer]
    if writes is None:
        yield ContractViolation(
            release.urn, "version", kueue, "this Kueue has no Kubeflow Trainer (TrainJob) integration", TABLE
        )
    elif trainjob and f"spec.{writes.field}" not in trainjob[0].fields:
        yield ContractViolation(
            urn=release.urn,
            path="version",
            value=f"kueue {kueue} + kubeflow-trainer {trainer}",
            rule=f"Kueue {kueue} writes the admitted flavor's node selector and tolerations into TrainJob "
            f"spec.{writes.field}; Trainer {trainer}'s TrainJob CRD has no such field, so the API server prunes "
            "it and TrainJobs lose their GPU toleration: pin a matching pair",
            source=f"{writes.source}; {trainjob[0].source}",
        )


def _kube_proxy(recording: Recording) -> Iterator[ContractViolation]:
    clusters = recording.by_type(EKS_CLUSTER)
    if len(clusters) != 1 or not isinstance(clusters[0].inputs.get("version"), str):
        return
    for addon in recording.by_type(EKS_ADDON):
        if addon.inputs.get("addonName") == "kube-proxy" and isinstance(addon.inputs.get("addonVersion"), str):
            why = kube_proxy_problem(clusters[0].inputs["version"], addon.inputs["addonVersion"])
            if why:
                yield ContractViolation(addon.urn, "addonVersion", addon.inputs["addonVersion"], why, TABLE)


def _gpu_operator_ami(recording: Recording) -> Iterator[ContractViolation]:
    groups = [g for g in recording.by_type(NODE_GROUP) if str(g.inputs.get("amiType", "")).endswith("_NVIDIA")]
    for release in _releases(recording, "gpu-operator"):
        values = release.inputs.get("values") or {}
        for group in groups:
            family = str(group.inputs["amiType"]).split("_")[0]
            labels = group.inputs.get("labels") or {}
            for key, why in NVIDIA_AMI_SHIPS.get(family, {}).items():
                opted_out = key == "devicePlugin.enabled" and labels.get(DEVICE_PLUGIN_OPT_OUT) == "false"
                if _get(values, key) is not False and not opted_out:
                    yield ContractViolation(
                        urn=release.urn,
                        path=f"values.{key}",
                        value=render_value(_get(values, key)),
                        rule=f"must be false: {why} (node group {group.name}, {group.inputs['amiType']}); an "
                        "operator-managed copy fights the image's",
                        source=TABLE,
                    )


def _efa_plugin(recording: Recording) -> Iterator[ContractViolation]:
    for release in _releases(recording, "aws-efa-k8s-device-plugin"):
        chart_version = release.inputs.get("version")
        if not isinstance(chart_version, str):
            continue
        for group in recording.by_type(NODE_GROUP):
            instance_type = (group.inputs.get("labels") or {}).get(INSTANCE_TYPE_LABEL)
            why = efa_plugin_problem(chart_version, instance_type) if isinstance(instance_type, str) else None
            if why:
                yield ContractViolation(
                    release.urn, "version", chart_version, f"{why} (node group {group.name})", TABLE
                )


def check(recording: Recording) -> Iterator[ContractViolation]:
    yield from _kueue_trainer(recording)
    yield from _kube_proxy(recording)
    yield from _gpu_operator_ami(recording)
    yield from _efa_plugin(recording)

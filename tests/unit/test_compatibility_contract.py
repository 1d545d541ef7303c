"""The version-compatibility contract (trainstack/contracts/compatibility.py) on hand-built recordings, one pair at
a time: Kueue's TrainJob field against the recorded Trainer CRD, kube-proxy against the cluster, the GPU Operator's
operands against the NVIDIA AMI family, the EFA plugin against the instance types. The tables are
stacks/compatibility.py's (tested in tests/unit/test_compatibility.py); this holds the contract that reads them."""

from __future__ import annotations

from typing import Any

import pytest

from trainstack.contracts import compatibility
from trainstack.engine import RecordedResource, Recording
from trainstack.tokens import EKS_ADDON, EKS_CLUSTER, HELM_RELEASE, NODE_GROUP


def _r(type_: str, name: str, inputs: dict[str, Any]) -> RecordedResource:
    return RecordedResource(type_, name, f"urn:{name}", "", True, inputs, (), {}, False, False, "")


def _release(chart: str, version: Any, values: dict[str, Any] | None = None, name: str = "") -> RecordedResource:
    inputs = {"chart": chart, "version": version, **({"values": values} if values is not None else {})}
    return _r(HELM_RELEASE, name or chart.rsplit("/", 1)[-1], inputs)


def _found(*resources: RecordedResource) -> list[tuple[str, str, str, str]]:
    return [(v.urn, v.path, v.value, v.rule) for v in compatibility.check(Recording("s", False, resources, {}))]


# ----------------------------------------------------------------------------------------- Kueue and Trainer

TRAINER = _release("kubeflow-trainer", "2.1.0")


def test_a_kueue_writing_the_field_the_trainer_crd_has_passes() -> None:
    assert _found(_release("oci://registry.k8s.io/kueue/charts/kueue", "v0.14.8"), TRAINER) == []


def test_a_kueue_writing_a_field_the_trainer_crd_lacks_is_refused() -> None:
    ((urn, path, value, rule),) = _found(_release("kueue", "0.14.3"), TRAINER)
    assert (urn, path, value) == ("urn:kueue", "version", "kueue 0.14.3 + kubeflow-trainer 2.1.0")
    assert "TrainJob spec.podSpecOverrides" in rule and "Trainer 2.1.0's TrainJob CRD has no such field" in rule
    (violation,) = compatibility.check(Recording("s", False, (_release("kueue", "0.14.3"), TRAINER), {}))
    assert "kubeflow/trainer@v2.1.0:" in violation.source and violation.source.startswith("kueue v0.14.0-v0.14.4")


def test_a_kueue_without_a_trainer_integration_is_refused() -> None:
    assert _found(_release("kueue", "0.13.4"), TRAINER) == [
        ("urn:kueue", "version", "0.13.4", "this Kueue has no Kubeflow Trainer (TrainJob) integration")
    ]


def test_kueue_and_trainer_are_judged_only_together_and_with_trainer_facts() -> None:
    assert _found(_release("kueue", "0.13.4")) == []
    assert _found(TRAINER) == []
    assert _found(_release("kueue", "0.14.3"), _release("kubeflow-trainer", "2.0.1")) == []  # no facts of 2.0.1


# ----------------------------------------------------------------------------------------- kube-proxy

CLUSTER = _r(EKS_CLUSTER, "eks", {"version": "1.33"})


def _proxy(version: Any, name: str = "kube-proxy") -> RecordedResource:
    return _r(EKS_ADDON, name, {"addonName": name, "addonVersion": version})


def test_kube_proxy_within_the_skew_passes_and_outside_it_is_refused() -> None:
    assert _found(CLUSTER, _proxy("v1.33.0-eksbuild.1")) == []
    assert _found(CLUSTER, _proxy("v1.30.9-eksbuild.2")) == []
    ((urn, path, value, rule),) = _found(CLUSTER, _proxy("v1.34.1-eksbuild.1"))
    assert (urn, path, value) == ("urn:kube-proxy", "addonVersion", "v1.34.1-eksbuild.1")
    assert rule.startswith("kube-proxy add-on v1.34.1-eksbuild.1 is built for Kubernetes 1.34")


def test_kube_proxy_is_judged_only_against_one_known_cluster_version() -> None:
    newer = _proxy("v1.34.1-eksbuild.1")
    assert _found(newer) == []  # no cluster
    assert _found(CLUSTER, _r(EKS_CLUSTER, "eks2", {"version": "1.33"}), newer) == []  # two: which one?
    assert _found(_r(EKS_CLUSTER, "eks", {"version": None}), newer) == []  # not known yet
    assert _found(CLUSTER, _proxy(None)) == []
    assert _found(CLUSTER, _proxy("v1.20.0-eksbuild.1", name="coredns")) == []  # another add-on


# ----------------------------------------------------------------------------------------- GPU Operator and AMI


def _group(ami: str, labels: dict[str, str] | None = None, name: str = "gpu") -> RecordedResource:
    return _r(NODE_GROUP, name, {"amiType": ami, **({"labels": labels} if labels is not None else {})})


OFF = {"driver": {"enabled": False}, "toolkit": {"enabled": False}}


def test_operands_the_al2023_nvidia_image_ships_must_be_off() -> None:
    assert _found(_release("gpu-operator", "v25.3.4", OFF), _group("AL2023_x86_64_NVIDIA")) == []
    found = _found(_release("gpu-operator", "v25.3.4", {"driver": {"enabled": True}}), _group("AL2023_ARM_64_NVIDIA"))
    assert [(path, value) for _, path, value, _ in found] == [
        ("values.driver.enabled", "true"),
        ("values.toolkit.enabled", "null"),  # left to the chart's default, which is on
    ]
    assert found[0][3].startswith("must be false: the EKS AL2023 NVIDIA AMI ships the NVIDIA driver (node group gpu,")


def test_bottlerocket_also_ships_the_device_plugin_unless_the_group_opts_out() -> None:
    release = _release("gpu-operator", "v25.3.4", OFF)
    found = _found(release, _group("BOTTLEROCKET_x86_64_NVIDIA"))
    assert [path for _, path, _, _ in found] == ["values.devicePlugin.enabled"]
    opted_out = _group("BOTTLEROCKET_x86_64_NVIDIA", {compatibility.DEVICE_PLUGIN_OPT_OUT: "false"})
    assert _found(release, opted_out) == []
    still_on = _group("BOTTLEROCKET_x86_64_NVIDIA", {compatibility.DEVICE_PLUGIN_OPT_OUT: "true"})
    assert len(_found(release, still_on)) == 1
    assert _found(_release("gpu-operator", "v25.3.4", {"driver": {"enabled": True}}), opted_out) != []


def test_groups_without_an_nvidia_image_and_other_charts_are_not_judged() -> None:
    assert _found(_release("gpu-operator", "v25.3.4", {}), _group("AL2023_x86_64_STANDARD")) == []
    assert _found(_release("gpu-operator", "v25.3.4", {}), _group("AL2_x86_64_GPU")) == []
    assert _found(_release("metrics-server", "3.12.2", {}), _group("AL2023_x86_64_NVIDIA")) == []


@pytest.mark.parametrize(
    ("values", "dotted", "found"),
    [
        ({"a": {"b": False}}, "a.b", False),
        ({"a": {"b": 1}}, "a", {"b": 1}),
        ({"a": {}}, "a.b", None),
        ({"a": "text"}, "a.b", None),
        ({}, "a", None),
    ],
)
def test_a_dotted_values_key(values: dict[str, Any], dotted: str, found: Any) -> None:
    assert compatibility._get(values, dotted) == found


# ----------------------------------------------------------------------------------------- EFA device plugin


def _efa_group(instance_type: Any, name: str = "gpu") -> RecordedResource:
    return _r(NODE_GROUP, name, {"labels": {compatibility.INSTANCE_TYPE_LABEL: instance_type}})


def test_an_efa_plugin_too_old_for_an_instance_family_is_refused() -> None:
    plugin = "aws-efa-k8s-device-plugin"
    assert _found(_release(plugin, "v0.5.10"), _efa_group("p6-b200.48xlarge")) == []
    ((urn, path, value, rule),) = _found(_release(plugin, "v0.5.9"), _efa_group("p6-b200.48xlarge", "b200"))
    assert (urn, path, value) == (f"urn:{plugin}", "version", "v0.5.9")
    assert rule.endswith("(node group b200)") and "miscounts EFA devices on p6-b200" in rule
    assert _found(_release(plugin, "v0.5.9"), _efa_group("p5.48xlarge")) == []  # the family has no minimum


def test_the_efa_plugin_is_judged_only_with_known_versions_and_types() -> None:
    plugin = "aws-efa-k8s-device-plugin"
    assert _found(_release(plugin, None), _efa_group("p6-b200.48xlarge")) == []
    assert _found(_release(plugin, "v0.5.9"), _efa_group(None)) == []
    assert _found(_release(plugin, "v0.5.9"), _r(NODE_GROUP, "g", {})) == []

"""Helm values of the GPU Operator (per AMI family), the EFA device plugin and Kueue: snapshots + rules.

Snapshots live in tests/unit/snapshots/*.json. After an intended change, regenerate them with
`TRAINSTACK_UPDATE_SNAPSHOTS=1 .venv/bin/python -m pytest tests/unit/test_helm_values.py` and review the diff.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.fleet_metrics import DCGM_CONFIG_MAP, dcgm_metrics_csv
from components.k8s.efa_device_plugin import efa_device_plugin_values
from components.k8s.gpu_operator import gpu_operator_values, operand_opt_out_labels
from components.k8s.scheduling import kueue_frameworks, kueue_values
from components.k8s_common import EFA_NODE_LABEL, INSTANCE_TYPE_LABEL, hyperpod_health_toleration
from components.sagemaker.hyperpod_dependencies import hyperpod_dependencies_values
from stacks.schema import AmiFamily, MigStrategy
from stacks.schema.gpu import effective_ami_family

SNAPSHOTS = Path(__file__).parent / "snapshots"
GPU_TAINT = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
NEURON_TAINT = {"key": "aws.amazon.com/neuron", "operator": "Exists", "effect": "NoSchedule"}


def check_snapshot(name: str, value: Any) -> None:
    path = SNAPSHOTS / f"{name}.json"
    rendered = json.dumps(value, indent=2, sort_keys=True) + "\n"
    if os.environ.get("TRAINSTACK_UPDATE_SNAPSHOTS") == "1":
        path.write_text(rendered)
    assert path.exists(), f"missing snapshot {path.name}; run with TRAINSTACK_UPDATE_SNAPSHOTS=1"
    assert json.loads(path.read_text()) == value, f"{name} differs from {path.name}"


@pytest.mark.parametrize(
    "family",
    [AmiFamily.AL2023_NVIDIA, AmiFamily.BOTTLEROCKET_NVIDIA],
    ids=["al2023", "bottlerocket"],
)
def test_gpu_operator_values_snapshot(family: AmiFamily) -> None:
    values = gpu_operator_values(family, MigStrategy.NONE, dcgm_exporter=True)
    check_snapshot(f"gpu_operator_{str(family).lower()}", values)


def test_al2023_leaves_driver_and_toolkit_to_the_ami() -> None:
    values = gpu_operator_values(AmiFamily.AL2023_NVIDIA, MigStrategy.NONE, dcgm_exporter=True)
    assert values["driver"]["enabled"] is False
    assert values["toolkit"]["enabled"] is False
    assert values["devicePlugin"]["enabled"] is True


def test_bottlerocket_also_leaves_the_device_plugin_to_the_image() -> None:
    values = gpu_operator_values(AmiFamily.BOTTLEROCKET_NVIDIA, MigStrategy.NONE, dcgm_exporter=True)
    assert (values["driver"]["enabled"], values["toolkit"]["enabled"], values["devicePlugin"]["enabled"]) == (
        False,
        False,
        False,
    )


def test_every_nvidia_family_leaves_driver_and_toolkit_to_the_ami() -> None:
    # Every family trainstack builds is an EKS NVIDIA AMI with the driver and toolkit: no custom-image branch.
    for family in (f for f in AmiFamily if f.accelerator.value == "nvidia"):
        values = gpu_operator_values(family, MigStrategy.NONE, dcgm_exporter=True)
        assert values["driver"]["enabled"] is False and values["toolkit"]["enabled"] is False


def test_hyperpod_nodes_add_the_health_taint_toleration_to_every_operand() -> None:
    values = gpu_operator_values(AmiFamily.AL2023_NVIDIA, MigStrategy.NONE, dcgm_exporter=True, hyperpod_nodes=True)
    for tolerations in (values["daemonsets"]["tolerations"], values["node-feature-discovery"]["worker"]["tolerations"]):
        assert tolerations == [GPU_TAINT, hyperpod_health_toleration()]
    plain = gpu_operator_values(AmiFamily.AL2023_NVIDIA, MigStrategy.NONE, dcgm_exporter=True)
    assert plain["daemonsets"]["tolerations"] == [GPU_TAINT]


@pytest.mark.parametrize("family", [AmiFamily.AL2023_NVIDIA, AmiFamily.BOTTLEROCKET_NVIDIA])
@pytest.mark.parametrize("mig", list(MigStrategy))
@pytest.mark.parametrize("dcgm", [True, False])
def test_operands_tolerate_the_gpu_taint_and_follow_the_spec(family: AmiFamily, mig: MigStrategy, dcgm: bool) -> None:
    values = gpu_operator_values(family, mig, dcgm)
    assert GPU_TAINT in values["daemonsets"]["tolerations"]
    assert GPU_TAINT in values["node-feature-discovery"]["worker"]["tolerations"]
    assert values["gfd"]["enabled"] is True
    assert values["dcgmExporter"]["enabled"] is dcgm
    assert values["mig"]["strategy"] == mig.value
    assert values["migManager"]["enabled"] is (mig is not MigStrategy.NONE)


def test_dcgm_exporter_gets_the_fleets_field_list_as_a_config_map_the_chart_creates() -> None:
    csv = dcgm_metrics_csv()
    values = gpu_operator_values(AmiFamily.AL2023_NVIDIA, MigStrategy.NONE, True, dcgm_metrics_csv=csv)
    assert values["dcgmExporter"] == {
        "enabled": True,
        "config": {"name": DCGM_CONFIG_MAP, "create": True, "data": csv},
    }
    # No list: the chart's own default fields. No exporter: no ConfigMap for it either.
    assert gpu_operator_values(AmiFamily.AL2023_NVIDIA, MigStrategy.NONE, True)["dcgmExporter"] == {"enabled": True}
    off = gpu_operator_values(AmiFamily.AL2023_NVIDIA, MigStrategy.NONE, False, dcgm_metrics_csv=csv)
    assert off["dcgmExporter"] == {"enabled": False}


def test_hyperpod_dependencies_leave_trainstacks_components_alone_and_keep_resilience_on() -> None:
    values = hyperpod_dependencies_values()
    # trainstack installs these itself: a second copy from the HyperPod chart would fight it for the nodes
    for plugin in ("nvidia-device-plugin", "neuron-device-plugin", "aws-efa-k8s-device-plugin"):
        assert values[plugin] == {"devicePlugin": {"enabled": False}}
    assert values["gpu-operator"] == {"enabled": False}
    assert values["trainingOperators"] == {"enabled": False}
    # what NodeRecovery: Automatic and the deep health checks rely on
    for agent in ("health-monitoring-agent", "deep-health-check", "job-auto-restart"):
        assert values[agent] == {"enabled": True}
    assert len(values) == 8


def test_neuron_nodes_get_no_gpu_operator() -> None:
    with pytest.raises(ValueError, match="Neuron"):
        gpu_operator_values(AmiFamily.AL2023_NEURON, MigStrategy.NONE, dcgm_exporter=True)


@pytest.mark.parametrize(
    ("families", "expected"),
    [
        ([AmiFamily.AL2023_NVIDIA], AmiFamily.AL2023_NVIDIA),
        ([AmiFamily.BOTTLEROCKET_NVIDIA, AmiFamily.BOTTLEROCKET_NVIDIA], AmiFamily.BOTTLEROCKET_NVIDIA),
        ([AmiFamily.BOTTLEROCKET_NVIDIA, AmiFamily.AL2023_NVIDIA], AmiFamily.AL2023_NVIDIA),
        ([AmiFamily.AL2023_NEURON, AmiFamily.BOTTLEROCKET_NVIDIA], AmiFamily.BOTTLEROCKET_NVIDIA),
        ([AmiFamily.AL2023_NEURON], None),
        ([], None),
    ],
)
def test_mixed_families_keep_the_device_plugin_unless_every_group_is_bottlerocket(
    families: list[AmiFamily], expected: AmiFamily | None
) -> None:
    assert effective_ami_family(families) == expected


def test_hyperpod_nvidia_nodes_count_as_al2023() -> None:
    assert effective_ami_family([], hyperpod_nvidia=True) is AmiFamily.AL2023_NVIDIA
    assert effective_ami_family([AmiFamily.BOTTLEROCKET_NVIDIA], hyperpod_nvidia=True) is AmiFamily.AL2023_NVIDIA


def test_bottlerocket_nodes_opt_out_of_the_device_plugin_only_in_a_mixed_cluster() -> None:
    assert operand_opt_out_labels(AmiFamily.BOTTLEROCKET_NVIDIA, AmiFamily.AL2023_NVIDIA) == {
        "nvidia.com/gpu.deploy.device-plugin": "false"
    }
    assert operand_opt_out_labels(AmiFamily.BOTTLEROCKET_NVIDIA, AmiFamily.BOTTLEROCKET_NVIDIA) == {}
    assert operand_opt_out_labels(AmiFamily.AL2023_NVIDIA, AmiFamily.AL2023_NVIDIA) == {}


def test_efa_plugin_values_snapshot() -> None:
    check_snapshot("efa_device_plugin", efa_device_plugin_values())


def test_efa_plugin_runs_only_on_efa_nodes_and_tolerates_accelerator_taints() -> None:
    values = efa_device_plugin_values()
    # No nodeSelector (it would be ANDed with the affinity terms); the chart's required affinity is keyed on the
    # EFA label, not on its instance-type list.
    assert "nodeSelector" not in values
    assert values["supportedInstanceLabels"] == {"keys": [EFA_NODE_LABEL], "values": ["true"]}
    assert GPU_TAINT in values["tolerations"] and NEURON_TAINT in values["tolerations"]
    assert hyperpod_health_toleration() not in values["tolerations"]


def _affinity_terms(values: dict[str, Any]) -> list[dict[str, list[str]]]:
    # What the chart's daemonset template renders: one ORed term per key, each `key In values`.
    labels = values["supportedInstanceLabels"]
    return [{key: list(labels["values"])} for key in labels["keys"]]


def _selected(values: dict[str, Any], node_labels: dict[str, str]) -> bool:
    return any(all(node_labels.get(k) in v for k, v in term.items()) for term in _affinity_terms(values))


def test_efa_plugin_also_runs_on_hyperpod_efa_nodes_and_tolerates_their_health_taint() -> None:
    values = efa_device_plugin_values(["ml.p5.48xlarge", "ml.p5.48xlarge"])
    assert values["supportedInstanceLabels"] == {
        "keys": [EFA_NODE_LABEL, INSTANCE_TYPE_LABEL],
        "values": ["true", "ml.p5.48xlarge"],
    }
    assert hyperpod_health_toleration() in values["tolerations"]
    hyperpod_node = {INSTANCE_TYPE_LABEL: "ml.p5.48xlarge", "sagemaker.amazonaws.com/compute-type": "hyperpod"}
    efa_node = {INSTANCE_TYPE_LABEL: "p5.48xlarge", EFA_NODE_LABEL: "true"}
    efa_capable_without_efa = {INSTANCE_TYPE_LABEL: "p5.48xlarge"}
    system_node = {INSTANCE_TYPE_LABEL: "m7i.2xlarge"}
    assert _selected(values, hyperpod_node) and _selected(values, efa_node)
    assert not _selected(values, efa_capable_without_efa) and not _selected(values, system_node)


@pytest.mark.parametrize("kind", ["kubeflow_trainer", "mpi_operator"])
def test_kueue_values_snapshot(kind: str) -> None:
    check_snapshot(f"kueue_{kind}", kueue_values(kind, 600))


@pytest.mark.parametrize(
    ("kind", "framework"),
    [("kubeflow_trainer", "trainer.kubeflow.org/trainjob"), ("mpi_operator", "kubeflow.org/mpijob")],
)
def test_kueue_config_manages_the_training_operators_jobs_all_or_nothing(kind: str, framework: str) -> None:
    config = yaml.safe_load(kueue_values(kind, 420)["managerConfig"]["controllerManagerConfigYaml"])
    assert config["kind"] == "Configuration"
    assert framework in config["integrations"]["frameworks"]
    assert config["integrations"]["frameworks"] == kueue_frameworks(kind)
    assert config["waitForPodsReady"]["enable"] is True
    assert config["waitForPodsReady"]["timeout"] == "420s"


@pytest.mark.parametrize(
    ("arm", "x86"),
    [
        (AmiFamily.AL2023_ARM_NVIDIA, AmiFamily.AL2023_NVIDIA),
        (AmiFamily.BOTTLEROCKET_ARM_NVIDIA, AmiFamily.BOTTLEROCKET_NVIDIA),
    ],
)
def test_arm_nvidia_amis_count_as_eks_nvidia_amis(arm: AmiFamily, x86: AmiFamily) -> None:
    # Grace (p6e-gb200) nodes run the ARM_64 EKS NVIDIA AMIs, which ship the driver and toolkit as well: the
    # operator must not deploy a driver container on them.
    values = gpu_operator_values(arm, MigStrategy.NONE, dcgm_exporter=True)
    assert values == gpu_operator_values(x86, MigStrategy.NONE, dcgm_exporter=True)
    assert values["driver"]["enabled"] is False and values["toolkit"]["enabled"] is False
    assert values["devicePlugin"]["enabled"] is not arm.bottlerocket


@pytest.mark.parametrize(
    ("families", "expected"),
    [
        ([AmiFamily.AL2023_ARM_NVIDIA], AmiFamily.AL2023_ARM_NVIDIA),
        ([AmiFamily.BOTTLEROCKET_ARM_NVIDIA, AmiFamily.BOTTLEROCKET_NVIDIA], AmiFamily.BOTTLEROCKET_NVIDIA),
        ([AmiFamily.BOTTLEROCKET_ARM_NVIDIA, AmiFamily.AL2023_ARM_NVIDIA], AmiFamily.AL2023_NVIDIA),
    ],
)
def test_mixed_architectures_share_one_release(families: list[AmiFamily], expected: AmiFamily) -> None:
    family = effective_ami_family(families)
    assert family == expected
    assert gpu_operator_values(family, MigStrategy.NONE, dcgm_exporter=True)["driver"]["enabled"] is False


def test_arm_bottlerocket_nodes_opt_out_of_the_device_plugin_in_a_mixed_cluster() -> None:
    opt_out = {"nvidia.com/gpu.deploy.device-plugin": "false"}
    assert operand_opt_out_labels(AmiFamily.BOTTLEROCKET_ARM_NVIDIA, AmiFamily.AL2023_NVIDIA) == opt_out
    assert operand_opt_out_labels(AmiFamily.BOTTLEROCKET_ARM_NVIDIA, AmiFamily.BOTTLEROCKET_NVIDIA) == {}
    assert operand_opt_out_labels(AmiFamily.BOTTLEROCKET_NVIDIA, AmiFamily.BOTTLEROCKET_ARM_NVIDIA) == {}

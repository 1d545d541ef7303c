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

from components.efa_device_plugin import efa_device_plugin_values
from components.gpu_operator import (
    CUSTOM_AMI,
    effective_ami_family,
    gpu_operator_values,
    operand_opt_out_labels,
)
from components.k8s_common import EFA_NODE_LABEL
from components.scheduling import kueue_frameworks, kueue_values
from stacks.schema import AmiFamily, MigStrategy

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
    [AmiFamily.AL2023_NVIDIA, AmiFamily.BOTTLEROCKET_NVIDIA, CUSTOM_AMI],
    ids=["al2023", "bottlerocket", "custom"],
)
def test_gpu_operator_values_snapshot(family: AmiFamily | str) -> None:
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


def test_custom_ami_lets_the_operator_own_the_driver() -> None:
    values = gpu_operator_values(CUSTOM_AMI, MigStrategy.NONE, dcgm_exporter=True)
    assert values["driver"]["enabled"] and values["toolkit"]["enabled"] and values["devicePlugin"]["enabled"]


@pytest.mark.parametrize("family", [AmiFamily.AL2023_NVIDIA, AmiFamily.BOTTLEROCKET_NVIDIA, CUSTOM_AMI])
@pytest.mark.parametrize("mig", list(MigStrategy))
@pytest.mark.parametrize("dcgm", [True, False])
def test_operands_tolerate_the_gpu_taint_and_follow_the_spec(
    family: AmiFamily | str, mig: MigStrategy, dcgm: bool
) -> None:
    values = gpu_operator_values(family, mig, dcgm)
    assert GPU_TAINT in values["daemonsets"]["tolerations"]
    assert GPU_TAINT in values["node-feature-discovery"]["worker"]["tolerations"]
    assert values["gfd"]["enabled"] is True
    assert values["dcgmExporter"]["enabled"] is dcgm
    assert values["mig"]["strategy"] == mig.value
    assert values["migManager"]["enabled"] is (mig is not MigStrategy.NONE)


def test_neuron_nodes_get_no_gpu_operator() -> None:
    with pytest.raises(ValueError, match="Neuron"):
        gpu_operator_values(AmiFamily.AL2023_NEURON, MigStrategy.NONE, dcgm_exporter=True)


@pytest.mark.parametrize(
    ("families", "expected"),
    [
        ([AmiFamily.AL2023_NVIDIA], AmiFamily.AL2023_NVIDIA),
        ([AmiFamily.BOTTLEROCKET_NVIDIA, AmiFamily.BOTTLEROCKET_NVIDIA], AmiFamily.BOTTLEROCKET_NVIDIA),
        ([AmiFamily.BOTTLEROCKET_NVIDIA, AmiFamily.AL2023_NVIDIA], AmiFamily.AL2023_NVIDIA),
        ([CUSTOM_AMI, AmiFamily.BOTTLEROCKET_NVIDIA], AmiFamily.AL2023_NVIDIA),
        ([CUSTOM_AMI], CUSTOM_AMI),
        ([AmiFamily.AL2023_NEURON, AmiFamily.BOTTLEROCKET_NVIDIA], AmiFamily.BOTTLEROCKET_NVIDIA),
        ([AmiFamily.AL2023_NEURON], None),
        ([], None),
    ],
)
def test_mixed_families_keep_the_driver_off_when_any_group_runs_an_eks_nvidia_ami(
    families: list[AmiFamily | str], expected: AmiFamily | str | None
) -> None:
    assert effective_ami_family(families) == expected


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
    assert values["nodeSelector"] == {EFA_NODE_LABEL: "true"}
    # The chart's required affinity is keyed on the EFA label, not on its instance-type list.
    assert values["supportedInstanceLabels"] == {"keys": [EFA_NODE_LABEL], "values": ["true"]}
    assert GPU_TAINT in values["tolerations"] and NEURON_TAINT in values["tolerations"]


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
        ([AmiFamily.AL2023_ARM_NVIDIA, CUSTOM_AMI], AmiFamily.AL2023_NVIDIA),
        ([AmiFamily.BOTTLEROCKET_ARM_NVIDIA, AmiFamily.BOTTLEROCKET_NVIDIA], AmiFamily.BOTTLEROCKET_NVIDIA),
        ([AmiFamily.BOTTLEROCKET_ARM_NVIDIA, AmiFamily.AL2023_ARM_NVIDIA], AmiFamily.AL2023_NVIDIA),
    ],
)
def test_mixed_architectures_share_one_release(families: list[AmiFamily | str], expected: AmiFamily | str) -> None:
    family = effective_ami_family(families)
    assert family == expected
    assert gpu_operator_values(family, MigStrategy.NONE, dcgm_exporter=True)["driver"]["enabled"] is False


def test_arm_bottlerocket_nodes_opt_out_of_the_device_plugin_in_a_mixed_cluster() -> None:
    opt_out = {"nvidia.com/gpu.deploy.device-plugin": "false"}
    assert operand_opt_out_labels(AmiFamily.BOTTLEROCKET_ARM_NVIDIA, AmiFamily.AL2023_NVIDIA) == opt_out
    assert operand_opt_out_labels(AmiFamily.BOTTLEROCKET_ARM_NVIDIA, AmiFamily.BOTTLEROCKET_NVIDIA) == {}
    assert operand_opt_out_labels(AmiFamily.BOTTLEROCKET_NVIDIA, AmiFamily.BOTTLEROCKET_ARM_NVIDIA) == {}

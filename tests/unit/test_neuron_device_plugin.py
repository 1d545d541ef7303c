"""Helm values of the Neuron device plugin (snapshot + rules) and the schema's Neuron plugin rule.

Snapshot: tests/unit/snapshots/neuron_device_plugin.json; regenerate with
`TRAINSTACK_UPDATE_SNAPSHOTS=1 .venv/bin/python -m pytest tests/unit/test_neuron_device_plugin.py` and review.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from components.gpu.gpu_nodes import node_labels, node_taint
from components.k8s.neuron_device_plugin import neuron_device_plugin_values
from stacks.catalog import CATALOG, Accelerator
from stacks.load import ConfigError
from stacks.schema import INSTANCE_TYPE_LABEL, NEURON_HELM_CHART_VERSION, GpuNodeGroupSpec, NeuronDevicePluginSpec
from tests.conftest import edited_config
from tests.unit.test_helm_values import check_snapshot

NEURON_TYPES = sorted(t for t, row in CATALOG.items() if row.accelerator is Accelerator.NEURON)
NVIDIA_TYPES = sorted(t for t, row in CATALOG.items() if row.accelerator is Accelerator.NVIDIA)
EFFECTS = {"NO_SCHEDULE": "NoSchedule"}  # EKS API taint effect -> Kubernetes toleration effect


def _group(instance_type: str) -> GpuNodeGroupSpec:
    return GpuNodeGroupSpec(
        name="g",
        instance_type=instance_type,
        availability_zone="us-east-1a",
        min_size=0,
        desired_size=0,
        max_size=2,
        efa_enabled=CATALOG[instance_type].supports_efa,  # the AMI family follows the type
    )


def _matches(term: dict[str, Any], labels: dict[str, str]) -> bool:
    return all(labels.get(e["key"]) in e["values"] for e in term["matchExpressions"])


def test_neuron_plugin_values_snapshot() -> None:
    check_snapshot("neuron_device_plugin", neuron_device_plugin_values())


def test_only_the_device_plugin_is_enabled() -> None:
    values = neuron_device_plugin_values()
    assert values["devicePlugin"]["enabled"] is True
    assert {k: v["enabled"] for k, v in values.items() if k != "devicePlugin"} == {
        "scheduler": False,
        "npd": False,
        "draDriver": False,
        "ultraserverOperator": False,
    }


@pytest.mark.parametrize("instance_type", NEURON_TYPES)
def test_plugin_lands_on_every_neuron_group_and_tolerates_its_taint(instance_type: str) -> None:
    plugin = neuron_device_plugin_values()["devicePlugin"]
    labels = node_labels(_group(instance_type))
    assert plugin["nodeSelector"].items() <= labels.items()
    (term,) = plugin["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert _matches(term, labels)
    taint = node_taint(CATALOG[instance_type])
    assert any(
        t["key"] == taint.key and t["operator"] == "Exists" and t["effect"] == EFFECTS[taint.effect]
        for t in plugin["tolerations"]
    )


@pytest.mark.parametrize("instance_type", NVIDIA_TYPES)
def test_plugin_stays_off_nvidia_nodes(instance_type: str) -> None:
    plugin = neuron_device_plugin_values()["devicePlugin"]
    labels = node_labels(_group(instance_type))
    assert not plugin["nodeSelector"].items() <= labels.items()
    (term,) = plugin["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert not _matches(term, labels)
    assert all(t["key"] != "nvidia.com/gpu" for t in plugin["tolerations"])


def test_affinity_replaces_the_charts_instance_type_list() -> None:
    term = neuron_device_plugin_values()["devicePlugin"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]["nodeSelectorTerms"][0]
    keys = {e["key"] for e in term["matchExpressions"]}
    assert INSTANCE_TYPE_LABEL not in keys and "__INSTANCE_TYPE_KEY__" not in keys


def test_default_spec_pins_a_chart_version() -> None:
    assert NeuronDevicePluginSpec().chart_version == NEURON_HELM_CHART_VERSION
    assert re.fullmatch(r"\d+\.\d+\.\d+", NEURON_HELM_CHART_VERSION)
    with pytest.raises(ValueError, match="chart_version"):
        NeuronDevicePluginSpec(chart_version="latest")


def _prod_on(instance_type: str, plugin: Any = "keep") -> Any:
    def edit(raw: dict[str, Any]) -> None:
        raw["gpu_node_groups"][0]["instance_type"] = instance_type
        if plugin != "keep":
            raw["kubernetes"]["neuron_device_plugin"] = plugin

    return edited_config("prod", edit)


def test_a_neuron_group_gets_the_default_plugin_without_any_other_edit() -> None:
    cluster = _prod_on("trn1n.32xlarge")
    assert cluster.kubernetes.neuron_device_plugin == NeuronDevicePluginSpec()


def test_a_neuron_group_refuses_a_null_plugin_and_names_the_key() -> None:
    with pytest.raises(ConfigError, match=r"kubernetes\.neuron_device_plugin") as error:
        _prod_on("trn1n.32xlarge", plugin=None)
    assert "Neuron" in error.value.render()


def test_a_stack_without_neuron_groups_may_leave_the_plugin_out() -> None:
    cluster = _prod_on("p5.48xlarge", plugin=None)
    assert cluster.kubernetes.neuron_device_plugin is None

"""Custom node taints per GPU group (issue 34): the schema's rules, the EKS taints, and every toleration that must
follow a taint (Kueue's flavor, the runtimes, the validation jobs, the device daemons)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from components.gpu.gpu_nodes import node_taints
from components.k8s.efa_device_plugin import efa_device_plugin_values
from components.k8s.gpu_operator import gpu_operator_values
from components.k8s.neuron_device_plugin import neuron_device_plugin_values
from components.k8s.scheduling import resource_flavor_spec
from components.k8s.training_runtimes import group_scheduling
from components.k8s_common import custom_taint_tolerations, group_tolerations
from stacks.schema import AmiFamily, MigStrategy
from stacks.schema.gpu import MAX_CUSTOM_TAINTS, GpuNodeGroupSpec


def group(taints: list[dict[str, Any]], instance_type: str = "p5.48xlarge", name: str = "train") -> GpuNodeGroupSpec:
    return GpuNodeGroupSpec.model_validate(
        {
            "name": name,
            "instance_type": instance_type,
            "availability_zone": "us-east-1a",
            "min_size": 0,
            "desired_size": 0,
            "max_size": 2,
            "taints": taints,
        }
    )


DEDICATED = {"key": "example.com/dedicated", "value": "llm", "effect": "NoSchedule"}


def test_the_accelerator_taint_stays_first_and_the_groups_own_follow_in_eks_spelling() -> None:
    taints = node_taints(group([DEDICATED, {"key": "example.com/drain", "effect": "NoExecute"}]))
    assert [(t.key, t.value, t.effect) for t in taints] == [
        ("nvidia.com/gpu", "true", "NO_SCHEDULE"),
        ("example.com/dedicated", "llm", "NO_SCHEDULE"),
        ("example.com/drain", "", "NO_EXECUTE"),
    ]


def test_no_taints_means_the_accelerator_taint_alone() -> None:
    assert [t.key for t in node_taints(group([], "trn1n.32xlarge"))] == ["aws.amazon.com/neuron"]


@pytest.mark.parametrize(
    ("instance_type", "key"), [("p5.48xlarge", "nvidia.com/gpu"), ("trn1.32xlarge", "aws.amazon.com/neuron")]
)
def test_the_accelerator_taint_key_cannot_be_reused(instance_type: str, key: str) -> None:
    with pytest.raises(ValidationError, match=f"taints may not use the key {key}"):
        group([{"key": key, "value": "false", "effect": "NoSchedule"}], instance_type)


def test_a_key_may_repeat_with_another_effect_but_not_the_same() -> None:
    group([DEDICATED, {**DEDICATED, "effect": "NoExecute"}])
    with pytest.raises(ValidationError, match="repeat a key with the same effect"):
        group([DEDICATED, {**DEDICATED, "value": "other"}])


@pytest.mark.parametrize(
    ("taint", "field"),
    [
        ({"key": "k" * 64}, "key"),
        ({"key": "example.com/x", "value": "v" * 64}, "value"),
        ({"key": "example.com/x", "effect": "NoEvict"}, "effect"),
        ({"key": "bad key"}, "key"),
    ],
)
def test_eks_bounds_on_key_value_and_effect(taint: dict[str, str], field: str) -> None:
    with pytest.raises(ValidationError) as error:
        group([taint])
    assert any(e["loc"][-1] == field for e in error.value.errors())


def test_at_most_49_own_taints_beside_the_accelerator_taint() -> None:
    many = [{"key": f"example.com/t{i}"} for i in range(MAX_CUSTOM_TAINTS)]
    assert len(node_taints(group(many))) == 50  # EKS's limit per node group
    with pytest.raises(ValidationError, match="at most 49"):
        group([*many, {"key": "example.com/one-more"}])


def test_the_flavor_the_runtimes_and_the_group_tolerate_the_same_taints() -> None:
    spec = group([DEDICATED])
    expected = [
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
        {"key": "example.com/dedicated", "operator": "Equal", "value": "llm", "effect": "NoSchedule"},
    ]
    assert group_tolerations(spec) == expected
    assert resource_flavor_spec(spec)["tolerations"] == expected
    assert group_scheduling(spec)["tolerations"] == expected


def test_daemons_tolerate_every_groups_own_taints_once() -> None:
    groups = [group([DEDICATED]), group([DEDICATED], name="other"), group([{"key": "example.com/b"}], name="b")]
    tolerations = custom_taint_tolerations(groups)
    assert [t["key"] for t in tolerations] == ["example.com/dedicated", "example.com/b"]
    assert all(t in efa_device_plugin_values((), tolerations)["tolerations"] for t in tolerations)
    operator = gpu_operator_values(AmiFamily.AL2023_NVIDIA, MigStrategy.NONE, True, group_taints=tolerations)
    assert operator["daemonsets"]["tolerations"][1:] == tolerations
    assert operator["node-feature-discovery"]["worker"]["tolerations"][1:] == tolerations
    assert neuron_device_plugin_values(tolerations)["devicePlugin"]["tolerations"][1:] == tolerations
    assert custom_taint_tolerations([group([])]) == []

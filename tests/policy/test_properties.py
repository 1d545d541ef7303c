"""Rules whose verdict spans a range, checked over that range (hypothesis) on the real recorded program,
plus the cost-tags type list checked against the SDK and the program."""

from __future__ import annotations

import importlib
import inspect

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pulumi_policy import (
    PolicyCustomTimeouts,
    PolicyResource,
    PolicyResourceOptions,
    StackValidationArgs,
)

from policies import facts
from policies.rules import BY_NAME
from policies.rules.base import graph
from policies.rules.k8s import Taint, node_group_taints, tolerates
from policies.rules.network import SgRule
from policies.rules.stack import TAGGABLE_TYPES
from tests.conftest import STACKS, recording
from tests.policy.helpers import mutated
from trainstack.review import resolve_config, run_policies

PROPERTY = settings(max_examples=25, deadline=None)


def _violated(policy: str, source, config: dict) -> bool:
    violations, _, _ = run_policies(
        source, resolve_config({policy: {"enforcementLevel": "mandatory", **config}}), [BY_NAME[policy]]
    )
    return bool(violations)


@PROPERTY
@given(max_size=st.integers(1, 64), count=st.integers(1, 8), budget=st.integers(0, 1024))
def test_gpu_budget_counts_node_groups_and_hyperpod(max_size: int, count: int, budget: int) -> None:
    source = mutated(recording("staging"), "-gpu-p5-ng", lambda i: i["scalingConfig"].update(maxSize=max_size))
    source = mutated(
        source, "aws-native:sagemaker:Cluster", lambda i: i["instanceGroups"][0].update(instanceCount=count)
    )
    gpus = (max_size + count) * facts.INSTANCES["p5.48xlarge"].accelerators
    assert _violated("gpu-budget", source, {"maxGpus": budget}) == (gpus > budget)


@PROPERTY
@given(
    capacity=st.sampled_from([4800, 9600, 48000, 122400]),
    per_tib=st.sampled_from([125, 250, 500, 1000]),
    per_gpu=st.integers(10, 2000),
)
def test_storage_throughput_compares_supply_with_demand(capacity: int, per_tib: int, per_gpu: int) -> None:
    source = mutated(
        recording("prod"),
        "aws:fsx/lustreFileSystem:LustreFileSystem",
        lambda i: i.update(storageCapacity=capacity, perUnitStorageThroughput=per_tib),
    )
    supply = capacity / 1024 * per_tib
    demand = 16 * 8 * per_gpu  # prod: 16 x p5.48xlarge at max size
    assert _violated("storage-throughput-feeds-gpus", source, {"perGpuReadMbPerS": per_gpu}) == (supply < demand)


@pytest.mark.parametrize(("capacity", "violated"), [(16384, False), (16383, True)])
def test_storage_supply_equal_to_demand_is_enough(capacity: int, violated: bool) -> None:
    """At the edge: 16 TiB at 1000 MB/s/TiB gives 16,000 MB/s, exactly what prod's 128 GPUs at 125 MB/s read."""
    source = mutated(
        recording("prod"),
        "aws:fsx/lustreFileSystem:LustreFileSystem",
        lambda i: i.update(storageCapacity=capacity, perUnitStorageThroughput=1000),
    )
    assert _violated("storage-throughput-feeds-gpus", source, {"perGpuReadMbPerS": 125}) is violated


@PROPERTY
@given(count=st.integers(0, 8), per_gpu=st.integers(10, 400))
def test_storage_demand_counts_hyperpod_accelerators(count: int, per_gpu: int) -> None:
    """HyperPod nodes mount the same Lustre: their accelerators read from it like the node groups'."""
    hyperpod = "aws-native:sagemaker:Cluster"
    source = mutated(recording("staging"), hyperpod, lambda i: i["instanceGroups"][0].update(instanceCount=count))
    inputs = {r.type: r.inputs for r in source.resources}
    fsx = inputs["aws:fsx/lustreFileSystem:LustreFileSystem"]
    supply = fsx["storageCapacity"] / 1024 * fsx["perUnitStorageThroughput"]
    node_group = next(r.inputs for r in source.resources if r.name.endswith("gpu-p5-ng"))
    per_node = facts.INSTANCES["p5.48xlarge"].accelerators  # staging: p5.48xlarge and ml.p5.48xlarge
    demand = (node_group["scalingConfig"]["maxSize"] + count) * per_node * per_gpu
    assert _violated("storage-throughput-feeds-gpus", source, {"perGpuReadMbPerS": per_gpu}) == (supply < demand)


@PROPERTY
@given(keep=st.integers(1, 33))
def test_efa_interface_count_wants_exactly_the_maximum(keep: int) -> None:
    def trim(inputs: dict) -> None:
        inputs["networkInterfaces"] = inputs["networkInterfaces"][:keep]

    source = mutated(recording("staging"), "-gpu-p5-lt", trim)
    efa = keep - 1  # the first interface is the ENA primary
    assert _violated("efa-interface-count", source, {}) == (efa != 32)


@PROPERTY
@given(hops=st.integers(1, 64), allowed=st.integers(1, 64))
def test_hop_limit_threshold(hops: int, allowed: int) -> None:
    source = mutated(
        recording("prod"), "-gpu-p5-train-lt", lambda i: i["metadataOptions"].update(httpPutResponseHopLimit=hops)
    )
    violations, _, _ = run_policies(
        source,
        resolve_config({"lt-imds-hop-limit": {"enforcementLevel": "mandatory", "maxHopLimit": allowed}}),
        [BY_NAME["lt-imds-hop-limit"]],
    )
    assert any(v.name.endswith("gpu-p5-train-lt") for v in violations) == (hops > allowed)


@given(
    protocol=st.sampled_from(["tcp", "6", "udp", "-1"]),
    low=st.integers(0, 65535),
    span=st.integers(0, 2000),
    port=st.integers(0, 65535),
)
def test_security_group_port_coverage(protocol: str, low: int, span: int, port: int) -> None:
    rule = SgRule("ingress", protocol, low, min(low + span, 65535), (), True, "t")
    expected = protocol == "-1" or (protocol in ("tcp", "6") and low <= port <= min(low + span, 65535))
    assert rule.covers_tcp(port) == expected


def _sdk_class(type_token: str) -> type:
    package, module_and_name = type_token.split(":", 1)
    module, name = module_and_name.split(":")
    sdk = {"aws": "pulumi_aws", "aws-native": "pulumi_aws_native"}[package]
    return getattr(importlib.import_module(f"{sdk}.{module.split('/')[0]}"), name)


@pytest.mark.parametrize("type_token", TAGGABLE_TYPES)
def test_taggable_types_take_tags(type_token: str) -> None:
    assert "tags" in inspect.signature(_sdk_class(type_token)._internal_init).parameters


def test_every_taggable_resource_of_the_program_is_checked() -> None:
    types = {r.type for stack in STACKS for r in recording(stack).resources if r.type.startswith("aws:")}
    taggable = {t for t in types if "tags" in inspect.signature(_sdk_class(t)._internal_init).parameters}
    assert taggable <= set(TAGGABLE_TYPES), sorted(taggable - set(TAGGABLE_TYPES))


_GPU_TAINT = Taint("nvidia.com/gpu", "true", "NoSchedule")


@pytest.mark.parametrize(
    ("toleration", "expected"),
    [
        ({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}, True),
        ({"key": "nvidia.com/gpu", "operator": "Exists"}, True),  # no effect: every effect
        ({"key": "nvidia.com/gpu", "operator": "Equal", "value": "true"}, True),
        ({"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}, True),  # Equal is the default
        ({"key": "nvidia.com/gpu", "operator": "Equal", "value": "false", "effect": "NoSchedule"}, False),
        ({"key": "nvidia.com/gpu", "operator": "Equal", "effect": "NoSchedule"}, False),  # "" is not "true"
        ({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoExecute"}, False),
        ({"key": "aws.amazon.com/neuron", "operator": "Exists"}, False),
        ({"operator": "Exists"}, True),  # an empty key with Exists tolerates everything
        ({"operator": "Exists", "effect": "NoExecute"}, False),
        ({"operator": "Equal", "value": "true"}, False),  # invalid: an empty key needs Exists
        ({"key": "nvidia.com/gpu", "operator": "Exists", "value": "true"}, False),  # invalid: Exists takes no value
        ({"key": "nvidia.com/gpu", "operator": "In", "value": "true"}, False),  # not an operator
    ],
)
def test_toleration_matching_follows_kubernetes(toleration: dict, expected: bool) -> None:
    assert tolerates(toleration, _GPU_TAINT) is expected


@given(
    key=st.sampled_from(["", "nvidia.com/gpu", "other"]),
    operator=st.sampled_from(["Exists", "Equal", ""]),
    value=st.sampled_from(["", "true", "false"]),
    effect=st.sampled_from(["", "NoSchedule", "NoExecute"]),
    taint_value=st.sampled_from(["", "true"]),
    taint_effect=st.sampled_from(["NoSchedule", "NoExecute"]),
)
def test_toleration_matching_over_every_combination(
    key: str, operator: str, value: str, effect: str, taint_value: str, taint_effect: str
) -> None:
    taint = Taint("nvidia.com/gpu", taint_value, taint_effect)
    toleration = {"key": key, "operator": operator, "value": value, "effect": effect}
    valid = (operator == "Exists" and not value) or (operator in ("Equal", "") and key != "")
    expected = (
        valid
        and effect in ("", taint_effect)
        and key in ("", taint.key)
        and (operator == "Exists" or value == taint_value)
    )
    assert tolerates(toleration, taint) is expected


def test_node_group_taints_use_kubernetes_effects() -> None:
    group = next(r for r in recording("staging").resources if r.name.endswith("gpu-p5-ng"))

    class _Group:
        props = group.inputs

    assert node_group_taints(_Group()) == [Taint("nvidia.com/gpu", "true", "NoSchedule")]  # type: ignore[arg-type]


def _resource(name: str, deps: list[PolicyResource] | None = None) -> PolicyResource:
    options = PolicyResourceOptions(False, [], None, [], PolicyCustomTimeouts(0, 0, 0), [])
    urn = f"urn:pulumi:dev::trainstack::aws:ec2/subnet:Subnet::{name}"
    return PolicyResource("aws:ec2/subnet:Subnet", {}, urn, name, options, None, None, [], {"vpcId": deps or []})


def test_graph_follows_a_reused_resources_list() -> None:
    """A stack rule sees the resources it is given, even when a caller mutates and reuses one list."""
    first = _resource("a")
    resources = [first]
    args = StackValidationArgs(resources)
    assert [r.name for r in graph(args).of_type("aws:ec2/subnet:Subnet")] == ["a"]
    resources.append(_resource("b", [first]))
    assert [r.name for r in graph(args).of_type("aws:ec2/subnet:Subnet")] == ["a", "b"]
    assert [r.name for r in graph(args).referrers(first, "vpcId")] == ["b"]

"""Thresholds the policy pack is configured with equal what the stack files assume, so the plan's storage
section and the policy review never disagree. The pack cannot read the stack config at run time."""

import json

import pytest

from policies.rules.base import FSX_LUSTRE, Graph, accelerator_capacity, lustre_throughput_mb_s
from tests.conftest import ROOT, STACKS, recording, stack_config
from tests.policy.helpers import found, run
from trainstack.report.summary import summarize
from trainstack.review import _prepare


@pytest.mark.parametrize("name", STACKS)
def test_storage_demand_per_gpu_is_one_number(name: str) -> None:
    policy = json.loads((ROOT / "policies" / "config" / f"{name}.json").read_text())
    threshold = policy["storage-throughput-feeds-gpus"]["perGpuReadMbPerS"]
    assert threshold == stack_config(name).storage.fsx.per_gpu_read_mb_s


@pytest.mark.parametrize("name", STACKS)
def test_gpu_budget_is_one_number(name: str) -> None:
    policy = json.loads((ROOT / "policies" / "config" / f"{name}.json").read_text())
    assert policy["gpu-budget"]["maxGpus"] == stack_config(name).cost.max_gpus


@pytest.mark.parametrize("name", STACKS)
def test_storage_rule_agrees_with_the_sizing(name: str) -> None:
    """The storage rule's supply, accelerator count and verdict on the recorded program equal the sizing the
    config model states: `FsxSpec.throughput_mb_s` for the supply and `ClusterConfig.accelerators_at_max`
    (node groups and HyperPod groups, which mount the same file system) for the demand."""
    cluster = stack_config(name)
    recorded = recording(name)
    systems = [r for r in recorded.resources if r.type == FSX_LUSTRE]
    assert cluster.storage.fsx.enabled and systems, f"{name} ships without Lustre: this test checks nothing"
    supply = sum(lustre_throughput_mb_s(r.inputs) for r in systems)
    assert supply == pytest.approx(cluster.storage.fsx.throughput_mb_s)
    gpus = sum(c.accelerators for c in accelerator_capacity(Graph(_prepare(recorded).stack)))
    assert gpus == summarize(recorded, cluster).accelerators_max == cluster.accelerators_at_max
    starved = cluster.storage.fsx.throughput_mb_s < cluster.storage_demand_mb_s
    assert bool(found(run(recorded), "storage-throughput-feeds-gpus")) == starved

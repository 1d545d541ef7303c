"""Thresholds the policy pack is configured with equal what the stack files assume, so the plan's storage
section and the policy review never disagree. The pack cannot read the stack config at run time; it reads the
config of the stack's environment."""

import json

import pytest

from policies.rules.base import FSX_LUSTRE, Graph, accelerator_capacity
from policies.rules.storage import lustre_throughput_mb_s
from stacks import fsx_sizing
from tests.conftest import STACKS, recording, stack_config
from tests.policy.helpers import found, run
from trainstack.report.summary import summarize
from trainstack.review import _prepare, config_path


@pytest.mark.parametrize("name", STACKS)
def test_storage_demand_per_gpu_is_one_number(name: str) -> None:
    policy = json.loads(config_path(stack_config(name).environment.value).read_text())
    threshold = policy["storage-throughput-feeds-gpus"]["perGpuReadMbPerS"]
    assert threshold == stack_config(name).storage.fsx.per_gpu_read_mb_s


@pytest.mark.parametrize("name", STACKS)
def test_gpu_budget_is_one_number(name: str) -> None:
    policy = json.loads(config_path(stack_config(name).environment.value).read_text())
    assert policy["gpu-budget"]["maxGpus"] == stack_config(name).cost.max_gpus


@pytest.mark.parametrize("name", STACKS)
def test_storage_rule_agrees_with_the_sizing(name: str) -> None:
    """The storage rule's supply, accelerator count and verdict on the recorded program equal the sizing's:
    stacks/fsx_sizing.py's supply for the stack config, the plan's accelerators at max size (node groups and
    HyperPod groups, which mount the same file system) and fsx_sizing's demand for them."""
    cluster = stack_config(name)
    sizing = fsx_sizing.sizing(cluster)
    recorded = recording(name)
    systems = [r for r in recorded.resources if r.type == FSX_LUSTRE]
    assert sizing is not None and systems, f"{name} ships without Lustre: this test checks nothing"
    supply = sum(lustre_throughput_mb_s(r.inputs) for r in systems)
    assert supply == pytest.approx(sizing.supply_mb_s)
    gpus = sum(c.accelerators for c in accelerator_capacity(Graph(_prepare(recorded).stack)))
    assert gpus == summarize(recorded, cluster).accelerators_max == sizing.gpus
    demand = fsx_sizing.demand_mb_s(gpus, cluster.storage.fsx.per_gpu_read_mb_s)
    assert bool(found(run(recorded), "storage-throughput-feeds-gpus")) == (sizing.supply_mb_s < demand)

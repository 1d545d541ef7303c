"""Thresholds the policy pack is configured with equal what the stack files assume, so the plan's storage
section and the policy review never disagree. The pack cannot read the stack config at run time."""

import json

import pytest

from tests.conftest import ROOT, STACKS, stack_config


@pytest.mark.parametrize("name", STACKS)
def test_storage_demand_per_gpu_is_one_number(name: str) -> None:
    policy = json.loads((ROOT / "policies" / "config" / f"{name}.json").read_text())
    threshold = policy["storage-throughput-feeds-gpus"]["perGpuReadMbPerS"]
    assert threshold == stack_config(name).storage.fsx.per_gpu_read_mb_s


@pytest.mark.parametrize("name", STACKS)
def test_gpu_budget_is_one_number(name: str) -> None:
    policy = json.loads((ROOT / "policies" / "config" / f"{name}.json").read_text())
    assert policy["gpu-budget"]["maxGpus"] == stack_config(name).cost.max_gpus

"""The plan's storage sizing and the policy review agree on every shipped stack. The thresholds themselves are
generated into policies/config from the stack files (tests/policy/test_pack_facts.py)."""

import pytest

from policies.facts_generated import FSX_LUSTRE
from policies.rules.base import Graph, accelerator_capacity, lustre_throughput_mb_s
from tests.conftest import STACKS, recording, stack_config
from tests.policy.helpers import found, shipped_review
from trainstack.model.summary import summarize
from trainstack.review import _prepare


@pytest.mark.parametrize("name", STACKS)
def test_storage_rule_agrees_with_the_sizing(name: str) -> None:
    """The storage rule's supply, accelerator count and verdict on the recorded program equal the sizing the
    config model states: `FsxSpec.throughput_mb_s` for the supply and `StackConfig.accelerators_at_max`
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
    assert bool(found(shipped_review(name), "storage-throughput-feeds-gpus")) == starved

"""FSx for Lustre sizing rules: capacity steps, throughput tiers, metadata IOPS, supply versus demand."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stacks import fsx_sizing as fs
from stacks.catalog import CATALOG
from tests.conftest import STACKS, stack_config


@given(st.integers(min_value=1, max_value=400))
def test_every_multiple_of_2400_is_valid(k: int) -> None:
    assert fs.is_valid_capacity(2400 * k)


@given(st.integers(min_value=1, max_value=1_000_000))
def test_ssd_capacity_rule(capacity: int) -> None:
    expected = capacity in (1200, 2400) or capacity % 2400 == 0
    assert fs.is_valid_capacity(capacity) is expected


@given(st.integers(min_value=1, max_value=1_000_000))
def test_nearest_valid_capacities_bracket_the_value(capacity: int) -> None:
    below, above = fs.valid_capacities_near(capacity)
    assert fs.is_valid_capacity(above) and above >= capacity
    assert below is None or (fs.is_valid_capacity(below) and below <= capacity)
    assert above - capacity < 2400


@pytest.mark.parametrize(("tier", "step"), [(125, 38400), (250, 19200), (500, 9600), (1000, 4800)])
def test_efa_capacity_steps_per_tier(tier: int, step: int) -> None:
    assert fs.is_valid_capacity(step * 3, efa_enabled=True, throughput_mb_s_per_tib=tier)
    assert not fs.is_valid_capacity(step + 2400, efa_enabled=True, throughput_mb_s_per_tib=tier)
    assert not fs.is_valid_capacity(1200, efa_enabled=True, throughput_mb_s_per_tib=tier)


def test_capacity_problem_names_the_rule_and_neighbours() -> None:
    message = fs.capacity_problem(122880)
    assert message is not None and "122400 or 124800" in message and "multiple of 2400" in message
    assert fs.capacity_problem(124800) is None


def test_throughput_tiers() -> None:
    assert fs.valid_throughputs("PERSISTENT_2") == (125, 250, 500, 1000)
    assert fs.valid_throughputs("SCRATCH_2") == ()


@given(st.integers(min_value=0, max_value=250_000))
def test_metadata_iops_rule(iops: int) -> None:
    expected = iops in (1500, 3000, 6000) or (iops % 12000 == 0 and 12000 <= iops <= 192000)
    assert fs.is_valid_metadata_iops(iops) is expected


@given(st.integers(min_value=1, max_value=500), st.sampled_from([125, 250, 500, 1000]))
def test_aggregate_throughput_is_linear_in_capacity(k: int, tier: int) -> None:
    assert fs.aggregate_throughput_mb_s(2400 * k, tier) == pytest.approx(2400 * k / 1024 * tier)


@pytest.mark.parametrize("name", STACKS)
def test_supply_is_capacity_times_the_per_unit_throughput(name: str) -> None:
    fsx = stack_config(name).storage.fsx
    per_unit = 200 if fsx.deployment_type == "SCRATCH_2" else fsx.throughput_mb_s_per_tib
    assert fsx.throughput_mb_s == pytest.approx(fsx.storage_capacity_gib / 1024 * per_unit)


@pytest.mark.parametrize("name", STACKS)
def test_demand_counts_every_accelerator_at_max(name: str) -> None:
    """GPU node groups at max size and an enabled HyperPod cluster's groups (same file system) read at once."""
    cluster = stack_config(name)
    hyperpod = cluster.sagemaker.hyperpod
    expected = sum(g.max_size * CATALOG[g.instance_type].accelerator_count for g in cluster.gpu_node_groups) + (
        sum(g.instance_count * CATALOG[g.ec2_instance_type].accelerator_count for g in hyperpod.instance_groups)
        if hyperpod.enabled
        else 0
    )
    assert cluster.accelerators_at_max == expected
    assert cluster.storage_demand_mb_s == expected * cluster.storage.fsx.per_gpu_read_mb_s


def test_per_unit_throughput_needs_a_tier_outside_scratch() -> None:
    assert fs.per_unit_throughput("SCRATCH_2", None) == 200
    assert fs.per_unit_throughput("PERSISTENT_2", 500) == 500
    with pytest.raises(ValueError, match="throughput_mb_s_per_tib"):
        fs.per_unit_throughput("PERSISTENT_2", None)


@pytest.mark.parametrize(
    ("capacity", "automatic"),
    [
        (1200, 1500),
        (2400, 3000),
        (4800, 6000),
        (9600, 6000),
        (12000, 12000),
        (45600, 12000),
        (48000, 24000),
        (124800, 62400),
    ],
)
def test_automatic_metadata_iops_follows_the_guide_table(capacity: int, automatic: int) -> None:
    assert fs.automatic_metadata_iops(capacity) == automatic


@given(st.integers(min_value=1, max_value=200))
def test_user_provisioned_metadata_iops_is_never_below_automatic(k: int) -> None:
    # Issue 11 regression: prod asked for 12000 metadata IOPS on 124800 GiB, where AUTOMATIC gives 62400.
    capacity = 2400 * k
    minimum = fs.minimum_metadata_iops(capacity)
    floor = fs.automatic_metadata_iops(capacity)
    if minimum is None:
        assert floor > 192000
        return
    assert minimum >= floor and fs.is_valid_metadata_iops(minimum)
    assert fs.metadata_iops_problem(minimum, capacity) is None
    below = [i for i in (1500, 3000, 6000, *range(12000, 192001, 12000)) if i < floor]
    assert all(fs.metadata_iops_problem(i, capacity) for i in below)


def test_prod_size_needs_at_least_72000_user_provisioned_iops() -> None:
    problem = fs.metadata_iops_problem(12000, 124800)
    assert problem is not None and "62400" in problem and "at least 72000" in problem

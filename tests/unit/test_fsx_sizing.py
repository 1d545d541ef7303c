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


@pytest.mark.parametrize(
    ("capacity", "efa_tier"), [(1200, None), (2400, None), (4800, None), (4800, 1000), (9600, 500), (38400, 125)]
)
def test_a_valid_capacity_is_its_own_nearest_neighbour_both_ways(capacity: int, efa_tier: int | None) -> None:
    """ "below or equal, above or equal": a valid value brackets itself."""
    assert fs.valid_capacities_near(capacity, efa_enabled=efa_tier is not None, throughput_mb_s_per_tib=efa_tier) == (
        capacity,
        capacity,
    )


@pytest.mark.parametrize("capacity", [0, -2400])
def test_nothing_below_the_minimum_is_offered_and_the_minimum_is_above(capacity: int) -> None:
    assert fs.valid_capacities_near(capacity) == (None, 1200)
    assert fs.valid_capacities_near(capacity, efa_enabled=True, throughput_mb_s_per_tib=1000) == (None, 4800)


@pytest.mark.parametrize("tier", [None, 200, 1200])
def test_an_efa_file_system_without_a_throughput_tier_has_no_capacity_step(tier: int | None) -> None:
    with pytest.raises(ValueError, match=r"EFA file systems need a throughput tier in \[125, 250, 500, 1000\]"):
        fs.capacity_increment_gib(efa_enabled=True, throughput_mb_s_per_tib=tier)
    assert fs.capacity_increment_gib(efa_enabled=False, throughput_mb_s_per_tib=tier) == 2400


@pytest.mark.parametrize(("tier", "step"), [(125, 38400), (250, 19200), (500, 9600), (1000, 4800)])
def test_efa_capacity_steps_per_tier(tier: int, step: int) -> None:
    assert fs.is_valid_capacity(step * 3, efa_enabled=True, throughput_mb_s_per_tib=tier)
    assert not fs.is_valid_capacity(step + 2400, efa_enabled=True, throughput_mb_s_per_tib=tier)
    assert not fs.is_valid_capacity(1200, efa_enabled=True, throughput_mb_s_per_tib=tier)


def test_capacity_problem_names_the_rule_and_neighbours() -> None:
    message = fs.capacity_problem(122880)
    assert message is not None and "122400 or 124800" in message and "multiple of 2400" in message
    assert fs.capacity_problem(124800) is None


@pytest.mark.parametrize("tier", [None, 200])
def test_an_efa_file_system_without_a_tier_leaves_the_capacity_to_the_throughput_rule(tier: int | None) -> None:
    """No capacity step exists without an EFA tier: one problem (the tier's), not a crash or a second one."""
    assert fs.capacity_problem(2400, efa_enabled=True, throughput_mb_s_per_tib=tier) is None


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


# The valid metadata IOPS, written out from the FSx for Lustre guide ("File system metadata performance"):
# 1500, 3000, 6000, then 12000 to 192000 in steps of 12000 -- 19 values, so the rule is tested on both sides.
VALID_METADATA_IOPS = (1500, 3000, 6000, *range(12000, 192001, 12000))


def test_every_valid_metadata_iops_value_is_accepted_and_its_neighbours_are_not() -> None:
    assert len(VALID_METADATA_IOPS) == 19
    for iops in VALID_METADATA_IOPS:
        assert fs.is_valid_metadata_iops(iops), iops
        assert not fs.is_valid_metadata_iops(iops - 1) and not fs.is_valid_metadata_iops(iops + 1), iops
    for iops in (0, 750, 1499, 4500, 18000, 204000, 192000 + 12000 * 2):
        assert not fs.is_valid_metadata_iops(iops), iops


near_valid = st.sampled_from(VALID_METADATA_IOPS).flatmap(
    lambda v: st.sampled_from([v, v, v - 1500, v + 1500, v - 6000, v + 6000, v - 12000, v + 12000])
)


@given(st.one_of(st.sampled_from(VALID_METADATA_IOPS), near_valid, st.integers(0, 250_000)))
def test_metadata_iops_rule_on_valid_and_invalid_draws(iops: int) -> None:
    """Draws from the valid set and from values a step away, not only uniformly (where 19 in 250,000 pass)."""
    assert fs.is_valid_metadata_iops(iops) is (iops in VALID_METADATA_IOPS)
    # a valid value is refused only for being below AUTOMATIC's for the capacity, never as invalid
    problem = fs.metadata_iops_problem(iops, 1200)
    assert (problem is None) is (iops in VALID_METADATA_IOPS and iops >= 1500)


@pytest.mark.parametrize("iops", VALID_METADATA_IOPS)
def test_every_valid_metadata_iops_value_is_accepted_on_a_small_file_system(iops: int) -> None:
    assert fs.metadata_iops_problem(iops, 1200) is None


@pytest.mark.parametrize("efa", [False, True])
def test_zero_and_negative_capacities_are_invalid_though_divisible(efa: bool) -> None:
    tier = 1000 if efa else None
    for capacity in (0, -2400, -4800):
        assert not fs.is_valid_capacity(capacity, efa_enabled=efa, throughput_mb_s_per_tib=tier), capacity


@pytest.mark.parametrize(
    ("capacity", "minimum"),
    [(1200, 1500), (2400, 3000), (9600, 6000), (45600, 12000), (48000, 24000), (72000, 36000), (384000, 192000)],
)
def test_minimum_metadata_iops_is_automatic_when_that_is_a_valid_value(capacity: int, minimum: int) -> None:
    assert fs.automatic_metadata_iops(capacity) == minimum
    assert fs.minimum_metadata_iops(capacity) == minimum


def test_no_user_provisioned_value_fits_above_the_largest() -> None:
    assert fs.automatic_metadata_iops(386400) == 193200
    assert fs.minimum_metadata_iops(386400) is None

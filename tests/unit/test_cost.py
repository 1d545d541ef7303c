"""Tier 1: the cost model over hand-built summaries (no engine), and its price tables."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stacks.catalog import CATALOG
from trainstack.model import cost
from trainstack.model.summary import FileSystemSummary, HyperPodGroupSummary, NodeGroupSummary, Summary

URN = "urn:pulumi:test::trainstack::aws:eks/nodeGroup:NodeGroup::"


def group(
    name: str = "p5",
    instance_type: str = "p5.48xlarge",
    desired: int = 2,
    maximum: int = 4,
    capacity: str = "on-demand",
    root_gib: int = 200,
) -> NodeGroupSummary:
    row = CATALOG.get(instance_type)
    return NodeGroupSummary(
        name=name,
        urn=URN + name,
        instance_type=instance_type,
        accelerator_model=row.accelerator_model if row else None,
        min_size=0,
        desired_size=desired,
        max_size=maximum,
        gpus_per_node=row.accelerator_count if row else 0,
        gpu_memory_gib_per_node=row.total_accelerator_memory_gib if row else 0,
        efa_interfaces=0,
        efa_max=row.max_efa_interfaces if row else 0,
        fabric_gbps_per_node=0.0,
        placement_group=None,
        availability_zones=("us-east-1a",),
        subnets=1,
        taints=(),
        capacity=capacity,
        root_volume_gib=root_gib,
    )


def summary(**changes: object) -> Summary:
    base = Summary(
        stack="test",
        environment="dev",
        region="us-east-1",
        name="t",
        preview=False,
        resource_count=0,
        custom_count=0,
        component_count=0,
        node_groups=(),
        file_systems=(),
        bucket_count=0,
        nat_gateways=0,
        interface_endpoints=0,
        interface_endpoint_azs=0,
        eks_clusters=(),
        addons=(),
        hyperpod=(),
        accelerators_max=0,
        gpu_budget=64,
        per_gpu_read_mb_s=200.0,
    )
    return replace(base, **changes)


def test_gpu_instances_cost_nodes_times_the_catalog_price() -> None:
    estimate = cost.estimate(summary(node_groups=(group(root_gib=0),)), 730)
    (item,) = estimate.items
    assert item.category == "gpu"
    assert item.usd_per_hour_desired == pytest.approx(2 * CATALOG["p5.48xlarge"].on_demand_usd_per_hour)
    assert item.usd_per_hour_max == pytest.approx(4 * CATALOG["p5.48xlarge"].on_demand_usd_per_hour)
    assert estimate.usd_per_month_desired == pytest.approx(estimate.usd_per_hour_desired * 730)
    assert estimate.gpu_share_desired == pytest.approx(1.0)


def test_the_whole_stack_sums_every_item_and_names_each_price_date() -> None:
    estimate = cost.estimate(
        summary(
            node_groups=(group(), group("system", "m7i.xlarge", 2, 3, root_gib=100)),
            eks_clusters=(("c", "1.33", "STANDARD"),),
            nat_gateways=3,
            interface_endpoints=6,
            interface_endpoint_azs=18,
            file_systems=(FileSystemSummary("fs", "urn:x", "PERSISTENT_2", 4800, 250, False, 1171.9, 1600),),
        ),
        730,
    )
    categories = {i.category for i in estimate.items}
    assert categories == {"gpu", "system-nodes", "eks", "nat", "endpoints", "fsx", "ebs"}
    assert estimate.usd_per_hour_desired == pytest.approx(sum(i.usd_per_hour_desired for i in estimate.items))
    assert all(re.fullmatch(r"\d{4}-\d{2}-\d{2}", i.date) and i.source for i in estimate.items)
    by_category = {i.category: i for i in estimate.items}
    assert by_category["nat"].usd_per_hour_desired == pytest.approx(3 * 0.045)
    assert by_category["endpoints"].usd_per_hour_desired == pytest.approx(18 * 0.01)
    assert by_category["eks"].usd_per_hour_desired == pytest.approx(0.10)
    assert by_category["fsx"].usd_per_hour_desired == pytest.approx(4800 * 0.210 / 730)
    assert by_category["ebs"].quantity_desired == 2 * 200 + 2 * 100
    assert 0 < estimate.gpu_share_desired < 1
    assert estimate.top(1)[0].category == "gpu"


def test_extended_support_costs_six_times_standard() -> None:
    standard = cost.estimate(summary(eks_clusters=(("c", "1.31", "STANDARD"),)), 730)
    extended = cost.estimate(summary(eks_clusters=(("c", "1.31", "EXTENDED"),)), 730)
    assert extended.usd_per_hour_desired == pytest.approx(6 * standard.usd_per_hour_desired)


def test_reserved_and_spot_groups_say_how_they_are_billed() -> None:
    groups = (group(capacity="reservation cr-0abc12345"), group("s", capacity="spot"))
    estimate = cost.estimate(summary(node_groups=groups), 730)
    notes = [i.note for i in estimate.items if i.category == "gpu"]
    assert "ODCR" in notes[0] and "Spot" in notes[1]


def test_what_has_no_price_is_named_not_dropped() -> None:
    estimate = cost.estimate(
        summary(
            node_groups=(group("cpu", "c7g.large", 1, 1, root_gib=0),),
            file_systems=(FileSystemSummary("fs", "urn:x", "PERSISTENT_1", 1200, 50, False, 58.6, 0),),
        ),
        730,
    )
    assert estimate.items == ()
    assert any("c7g.large" in n and "PERSISTENT_1" in n for n in estimate.notes)


def test_hyperpod_without_an_ml_price_uses_the_ec2_rate_and_says_so() -> None:
    estimate = cost.estimate(summary(hyperpod=(HyperPodGroupSummary("hp", "workers", "ml.p5.48xlarge", 2),)), 730)
    (item,) = estimate.items
    assert item.usd_per_hour_desired == pytest.approx(2 * CATALOG["p5.48xlarge"].on_demand_usd_per_hour)
    assert any(("ml.p5.48xlarge" in n and "lower bound" not in n) or "EC2 rate" in n for n in estimate.notes)
    assert "lower bound" in item.source


def test_other_regions_are_flagged() -> None:
    assert any("eu-west-1" in n for n in cost.estimate(summary(region="eu-west-1"), 730).notes)
    assert not any("will differ" in n for n in cost.estimate(summary(), 730).notes)


@given(
    desired=st.integers(0, 64),
    extra=st.integers(0, 64),
    instance_type=st.sampled_from(sorted(CATALOG)),
    hours=st.floats(672, 744),
)
def test_cost_is_linear_in_nodes_and_the_headroom_costs_exactly_the_extra_nodes(
    desired: int, extra: int, instance_type: str, hours: float
) -> None:
    one = cost.estimate(summary(node_groups=(group("g", instance_type, 1, 1),)), hours)
    many = cost.estimate(summary(node_groups=(group("g", instance_type, desired, desired + extra),)), hours)
    assert many.usd_per_hour_desired == pytest.approx(desired * one.usd_per_hour_desired)
    # The gap between max and desired is the extra nodes at the instance price plus their root volumes.
    per_node = CATALOG[instance_type].on_demand_usd_per_hour + 200 * cost.EBS_GP3.usd / hours
    assert many.usd_per_hour_max - many.usd_per_hour_desired == pytest.approx(extra * per_node)
    assert many.usd_per_month_max == pytest.approx(many.usd_per_hour_max * hours)


def test_price_tables_are_dated_and_sourced() -> None:
    prices = [
        cost.EKS_STANDARD,
        cost.EKS_EXTENDED,
        cost.NAT_GATEWAY,
        cost.INTERFACE_ENDPOINT,
        cost.EBS_GP3,
        *cost.SYSTEM_INSTANCES.values(),
        *cost.FSX_LUSTRE.values(),
        *cost.HYPERPOD_INSTANCES.values(),
    ]
    for price in prices:
        assert price.usd > 0 and price.source and re.fullmatch(r"\d{4}-\d{2}-\d{2}", price.date)
    # Higher FSx throughput tiers cost more per GB-month.
    tiers = [cost.FSX_LUSTRE[("PERSISTENT_2", t)].usd for t in (125, 250, 500, 1000)]
    assert tiers == sorted(tiers)


def test_gpu_rows_carry_their_catalog_sources_and_mark_estimates() -> None:
    groups = (group("listed", "p5.48xlarge"), group("doubted", "p5e.48xlarge"), group("unlisted", "p6e-gb200.36xlarge"))
    items = {
        i.name.split(":")[0]: i for i in cost.estimate(summary(node_groups=groups), 730).items if i.category == "gpu"
    }
    listed, doubted, unlisted = items["listed"], items["doubted"], items["unlisted"]
    # A list price read from its source: dated, not an estimate, backed by the row's own sources.
    assert not listed.estimated and listed.date == "2025-11-01" and listed.date_label == "2025-11-01"
    assert "p5.48xlarge" in listed.source and "aws.amazon.com/ec2/instance-types/p5/" in listed.source
    # p5e: read on a date, but the catalog's verify note calls the rate an estimate.
    assert doubted.estimated and doubted.date == "2025-11-01" and doubted.date_label == "2025-11-01 (estimate)"
    assert CATALOG["p5e.48xlarge"].verify in doubted.note
    # p6e-gb200: no price source at all, so no read date.
    assert unlisted.estimated and unlisted.date == "" and unlisted.date_label == "estimate (undated)"
    assert "ec2/pricing/on-demand" not in unlisted.source
    assert "UltraServer" in unlisted.note
    document = cost.estimate(summary(node_groups=groups), 730).to_dict()
    assert [i["estimated"] for i in document["items"] if i["category"] == "gpu"] == [False, True, True]  # type: ignore[index]
    assert any("Estimated unit prices" in n and "unlisted" in n for n in document["notes"])  # type: ignore[union-attr]


def test_every_catalog_row_without_a_price_source_or_with_a_doubted_price_is_an_estimate() -> None:
    for row in CATALOG.values():
        _, estimated, _ = cost.catalog_price(row)
        doubted = row.verify is not None and any(w in row.verify.lower() for w in ("price", "rate", "estimate"))
        assert estimated == (not row.price_date or doubted), row.name


def test_max_size_totals_include_the_control_plane_and_every_fixed_item() -> None:
    """At max size the total is every item's max (the GPU headroom plus everything that does not scale)."""
    estimate = cost.estimate(
        summary(
            node_groups=(group(root_gib=0),),
            eks_clusters=(("c", "1.33", "STANDARD"),),
            nat_gateways=2,
        ),
        730,
    )
    gpu = 4 * CATALOG["p5.48xlarge"].on_demand_usd_per_hour
    assert estimate.usd_per_hour_max == pytest.approx(gpu + 0.10 + 2 * 0.045)
    assert estimate.usd_per_month_max == pytest.approx((gpu + 0.10 + 2 * 0.045) * 730)
    eks = next(i for i in estimate.items if i.category == "eks")
    assert (eks.quantity_max, eks.usd_per_hour_max) == (1, pytest.approx(0.10))
    assert estimate.to_dict()["usdPerHourMax"] == pytest.approx(round(gpu + 0.10 + 2 * 0.045, 4))
    assert estimate.gpu_share_max == pytest.approx(gpu / (gpu + 0.10 + 2 * 0.045))


def test_what_is_not_estimated_is_said_in_the_notes() -> None:
    estimate = cost.estimate(summary(nat_gateways=1, bucket_count=3), 730)
    notes = " ".join(estimate.notes)
    assert "NAT data processing ($0.045/GB) is not estimated" in notes
    assert "S3 (3 buckets)" in notes and "not estimated" in notes
    assert "CloudWatch logs and metrics" in notes
    nat = next(i for i in estimate.items if i.category == "nat")
    assert "not estimated" in nat.note
    quiet = " ".join(cost.estimate(summary(), 730).notes)
    assert "NAT data" not in quiet and "S3 (" not in quiet  # said only where there is such a thing


def test_capacity_block_groups_say_they_are_paid_up_front() -> None:
    estimate = cost.estimate(summary(node_groups=(group(capacity="capacity-block cr-0abc12345"),)), 730)
    (note,) = [i.note for i in estimate.items if i.category == "gpu"]
    assert note.startswith("Capacity Block: paid up front")
    plain = cost.estimate(summary(node_groups=(group(capacity="on-demand"),)), 730)
    assert [i.note for i in plain.items if i.category == "gpu"] == [CATALOG["p5.48xlarge"].verify or ""]


def test_fsx_extras_are_said_to_be_not_estimated_only_with_a_file_system() -> None:
    fsx = (FileSystemSummary("fs", "urn:x", "PERSISTENT_2", 4800, 250, False, 1171.9, 1600),)
    assert any("FSx backups" in n for n in cost.estimate(summary(file_systems=fsx), 730).notes)
    assert not any("FSx backups" in n for n in cost.estimate(summary(), 730).notes)


def test_a_hyperpod_type_with_no_price_anywhere_is_named_not_dropped() -> None:
    estimate = cost.estimate(summary(hyperpod=(HyperPodGroupSummary("hp", "cpu", "ml.t3.medium", 2),)), 730)
    assert estimate.items == ()
    assert any("HyperPod group cpu (ml.t3.medium)" in n for n in estimate.notes)


def test_an_estimate_of_nothing_has_no_gpu_share() -> None:
    nothing = cost.CostEstimate(items=(), hours_per_month=730, region="us-east-1", notes=())
    assert (nothing.gpu_share_desired, nothing.gpu_share_max) == (0.0, 0.0)
    assert nothing.to_dict()["gpuShareDesired"] == 0.0


def test_json_amounts_keep_a_hundredth_of_a_cent_per_hour_and_cents_per_month() -> None:
    item = cost.CostItem("x", "gpu", 1, 2, "instance-hour", 1.234567, 1.234567, 2.469134, "src", "2025-11-01")
    data = cost.CostEstimate(items=(item,), hours_per_month=730, region="us-east-1", notes=()).to_dict()
    assert (data["usdPerHourDesired"], data["usdPerHourMax"]) == (1.2346, 2.4691)
    assert (data["usdPerMonthDesired"], data["usdPerMonthMax"]) == (901.23, 1802.47)
    assert (data["gpuShareDesired"], data["gpuShareMax"]) == (1.0, 1.0)
    (row,) = data["items"]
    assert (row["usdPerHourDesired"], row["usdPerHourMax"]) == (1.2346, 2.4691)


def test_fleet_series_count_nodes_gpus_and_efa_devices() -> None:
    p5 = replace(group(desired=2, maximum=4), efa_interfaces=32)  # 8 GPUs, 32 EFA devices per node
    per_node = cost.SERIES_PER_NODE + 8 * cost.SERIES_PER_GPU + 32 * cost.SERIES_PER_EFA_DEVICE
    assert cost.fleet_series(summary(node_groups=(p5,)), at_max=False) == cost.SERIES_CLUSTER + 2 * per_node
    assert cost.fleet_series(summary(node_groups=(p5,)), at_max=True) == cost.SERIES_CLUSTER + 4 * per_node


def test_samples_per_hour_are_series_times_scrapes_per_hour() -> None:
    fleet = summary(node_groups=(replace(group(desired=1, maximum=3), efa_interfaces=32),))
    collector, collected, ingested = cost.observability_items(fleet, scrape_interval_s=30)
    assert (collector.quantity_desired, collector.quantity_max) == (1, 1)  # one managed collector per cluster
    for item in (collected, ingested):
        assert item.quantity_desired == cost.fleet_series(fleet, at_max=False) * 120
        assert item.quantity_max == cost.fleet_series(fleet, at_max=True) * 120


def _in(zone: str, name: str = "p5b", instance_type: str = "p5.48xlarge") -> NodeGroupSummary:
    return dataclasses.replace(group(name, instance_type), availability_zones=(zone,))


def _fs(*zones: str) -> FileSystemSummary:
    return FileSystemSummary("fs", "urn:x", "PERSISTENT_2", 4800, 250, False, 1171.9, 1600, zones)


def test_a_gpu_group_outside_the_file_systems_az_pays_for_its_reads_both_ways() -> None:
    estimate = cost.estimate(
        summary(node_groups=(_in("us-east-1a", "p5"), _in("us-east-1b")), file_systems=(_fs("us-east-1a"),)), 730
    )
    (item,) = [i for i in estimate.items if i.category == "data-transfer"]
    per_node = 8 * 200.0 * 3.6  # GB an hour: 8 GPUs at 200 MB/s
    assert (item.quantity_desired, item.quantity_max) == (per_node * 2, per_node * 4)
    assert item.usd_per_hour_max == pytest.approx(per_node * 4 * 0.02) and item.estimated
    assert item.usd_per_hour_desired == pytest.approx(per_node * 2 * 0.02)
    assert "p5b (us-east-1b) from fs (us-east-1a)" in item.name
    assert any("Cross-AZ Lustre reads" in n for n in estimate.notes)


@pytest.mark.parametrize(
    ("groups", "file_system"),
    [
        ((_in("us-east-1a"),), _fs("us-east-1a")),  # same AZ
        ((_in("us-east-1b"),), _fs()),  # a subnet outside the recording: its AZ is unknown
        ((_in("us-east-1b", "system", "m7i.xlarge"),), _fs("us-east-1a")),  # CPU nodes read no training data
    ],
    ids=["same-az", "unknown-az", "cpu-group"],
)
def test_no_cross_az_item_otherwise(groups: tuple[NodeGroupSummary, ...], file_system: FileSystemSummary) -> None:
    estimate = cost.estimate(summary(node_groups=groups, file_systems=(file_system,)), 730)
    assert not [i for i in estimate.items if i.category == "data-transfer"]
    assert not any("Cross-AZ" in n for n in estimate.notes)


@pytest.mark.parametrize("throughput", [None, 200])
def test_scratch_lustre_has_one_price_whatever_throughput_is_shown(throughput: int | None) -> None:
    """SCRATCH_2 is priced per GB-month alone (aws.amazon.com/fsx/lustre/pricing): a throughput figure beside it
    (its 200 MB/s/TiB baseline, as a report may show it) does not pick another price or leave it unpriced."""
    fs = FileSystemSummary("fs", "urn:x", "SCRATCH_2", 1200, throughput, False, 240.0, 0)
    [fsx] = [i for i in cost.estimate(summary(file_systems=(fs,)), 730).items if i.category == "fsx"]
    assert fsx.usd_per_hour_desired == pytest.approx(1200 * 0.140 / 730)


def test_every_metrics_cost_is_an_estimate() -> None:
    """Every AMP line is marked as an estimate: the samples are a count of series per node, GPU and EFA device that
    the plan estimates, and the collector is priced with them."""
    items = cost.observability_items(summary(node_groups=(group(),)), 60)
    assert [i.name for i in items] == ["AMP managed collector", "AMP samples collected", "AMP samples ingested"]
    assert all(i.estimated for i in items)


def test_the_estimates_figures_are_rounded_for_reading_rates_to_4_places_months_to_cents() -> None:
    fleet = summary(node_groups=(group(desired=1, maximum=2), group("g5", "g5.xlarge", desired=2, maximum=3)))
    estimate = cost.estimate(fleet, 730)
    document = estimate.to_dict()
    shares = (estimate.gpu_share_desired, estimate.gpu_share_max)
    assert all(round(x, 4) != round(x, 5) for x in shares)  # a fifth place to lose: the rounding shows
    assert (document["gpuShareDesired"], document["gpuShareMax"]) == tuple(round(x, 4) for x in shares)
    assert document["usdPerHourMax"] == round(estimate.usd_per_hour_max, 4)
    assert document["usdPerMonthMax"] == round(estimate.usd_per_month_max, 2)

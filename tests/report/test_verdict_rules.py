"""The verdict's figures and risks, one rule at a time: each headline figure from the summary it reads, each risk
at its boundary (the value that raises it and the one just short of it), and the status each severity gives.
The reports are prod's and staging's own, with one summary field replaced per case."""

from __future__ import annotations

import dataclasses

import pytest

from stacks.catalog import CATALOG
from tests.report.helpers import report
from trainstack.journeys import Journey, Step
from trainstack.model import verdict
from trainstack.model.diff import Delta, PlanDiff
from trainstack.model.report import Report
from trainstack.model.summary import FileSystemSummary, HyperPodGroupSummary, NodeGroupSummary
from trainstack.recording_diff import InputChange, ResourceChange


def _summary(r: Report, **changes: object) -> Report:
    return dataclasses.replace(r, summary=dataclasses.replace(r.summary, **changes))


def _gpu(r: Report) -> NodeGroupSummary:
    return r.summary.gpu_groups[0]


def _groups(r: Report, *groups: NodeGroupSummary) -> Report:
    """`r` with these GPU groups in place of its own (its CPU groups kept)."""
    cpu = tuple(g for g in r.summary.node_groups if not g.gpu)
    return _summary(r, node_groups=cpu + groups)


def _clean(r: Report) -> Report:
    """`r` with no risk of its own: no policy findings, reserved and full GPU groups, storage at demand."""
    groups = tuple(
        dataclasses.replace(g, capacity="capacity-block cr-0", desired_size=g.max_size, efa_interfaces=g.efa_max)
        for g in r.summary.gpu_groups
    )
    quiet = _groups(r, *groups)
    quiet = _summary(quiet, file_systems=(), eks_clusters=(), gpu_budget=max(r.summary.accelerators_max, 1))
    items = tuple(dataclasses.replace(i, estimated=False) for i in r.cost.items)
    return dataclasses.replace(
        quiet, policy=None, contracts=(), journeys=(), cost=dataclasses.replace(r.cost, items=items)
    )


def _risks(r: Report, diff: PlanDiff | None = None) -> list[verdict.Risk]:
    return list(verdict.assess(r, diff).risks)


def _figure(r: Report, label: str) -> str:
    return next(f.value for f in verdict.figures(r) if f.label == label)


# ----------------------------------------------------------------------------------------------- figures


def test_accelerator_mix_sums_desired_and_max_per_model() -> None:
    r = report("prod")
    g = _gpu(r)
    two = _groups(r, dataclasses.replace(g, desired_size=3, max_size=5), dataclasses.replace(g, desired_size=1))
    per_node = g.gpus_per_node
    assert verdict.accelerator_mix(two) == f"{4 * per_node:,} / {(5 + g.max_size) * per_node:,} {g.accelerator_model}"


def test_accelerator_mix_lists_each_model_sorted_and_an_unknown_one_as_a_question_mark() -> None:
    r = report("prod")
    g = dataclasses.replace(_gpu(r), desired_size=1, max_size=2, gpus_per_node=8)
    mixed = _groups(
        r, dataclasses.replace(g, accelerator_model="Z100"), dataclasses.replace(g, accelerator_model="A10G")
    )
    assert verdict.accelerator_mix(mixed) == "8 / 16 A10G + 8 / 16 Z100"
    # a group whose model the summary could not name is still counted, not dropped
    unknown = _groups(r, dataclasses.replace(g, accelerator_model=""))
    assert verdict.accelerator_mix(unknown) == "8 / 16 ?"


def test_accelerator_mix_counts_hyperpod_nodes_at_their_count_for_both_figures() -> None:
    r = _groups(report("prod"))  # no EKS GPU groups
    row = next(t for t in CATALOG.values() if t.accelerator_count)
    pod = HyperPodGroupSummary("hp", "workers", f"ml.{row.name}", 3)
    mix = verdict.accelerator_mix(_summary(r, hyperpod=(pod,)))
    n = 3 * row.accelerator_count
    assert mix == f"{n:,} / {n:,} {row.accelerator_model}"
    unknown = HyperPodGroupSummary("hp", "workers", "ml.not-a-type", 3)
    assert verdict.accelerator_mix(_summary(r, hyperpod=(unknown,))) == "none"


def test_no_accelerators_is_none() -> None:
    assert verdict.accelerator_mix(_summary(_groups(report("prod")), hyperpod=())) == "none"


def _fs(throughput: float, demand: float) -> FileSystemSummary:
    return FileSystemSummary("fs", "urn:fs", "PERSISTENT_2", 1200, 250, False, throughput, demand)


def test_storage_coverage_is_the_least_covered_file_system() -> None:
    r = report("prod")
    shown = verdict.storage_coverage(_summary(r, file_systems=(_fs(300, 100), _fs(50, 100))))
    assert shown == "50% of demand"


def test_storage_coverage_without_file_system_or_without_demand() -> None:
    r = report("prod")
    assert verdict.storage_coverage(_summary(r, file_systems=())) == "no file system"
    assert verdict.storage_coverage(_summary(r, file_systems=(_fs(300, 0),))) == "no accelerators to serve"
    # one file system without demand does not hide another's coverage
    assert verdict.storage_coverage(_summary(r, file_systems=(_fs(300, 0), _fs(80, 100)))) == "80% of demand"


def test_fabric_figure_reads_no_efa_only_without_any() -> None:
    r = report("prod")
    assert _figure(r, "EFA fabric at desired") != "no EFA"
    flat = _groups(r, *(dataclasses.replace(g, fabric_gbps_per_node=0.0) for g in r.summary.gpu_groups))
    assert _figure(flat, "EFA fabric at desired") == "no EFA"


def test_policy_figure_only_with_a_policy_run_and_contracts_always() -> None:
    r = report("prod")
    assert r.policy is not None
    policy = f"{len(r.policy.mandatory)} mandatory, {len(r.policy.advisory)} advisory"
    assert _figure(r, "policy") == policy
    bare = dataclasses.replace(r, policy=None)
    assert "policy" not in [f.label for f in verdict.figures(bare)]
    assert _figure(bare, "contracts") == f"{len(r.contracts)} refused"


def _journey(holds: bool) -> Journey:
    return Journey("team-job", "team a: job", (Step("admitted", holds, "" if holds else "quota 0", "kueue"),))


def test_journeys_figure_counts_those_that_hold() -> None:
    r = report("prod")
    assert _figure(dataclasses.replace(r, journeys=(_journey(True), _journey(True))), "journeys") == "all 2 hold"
    assert _figure(dataclasses.replace(r, journeys=(_journey(True), _journey(False))), "journeys") == "1 of 2 hold"
    assert "journeys" not in [f.label for f in verdict.figures(dataclasses.replace(r, journeys=()))]


# ------------------------------------------------------------------------------------------------- risks


def test_a_clean_report_is_ok_and_a_low_risk_keeps_it_ok() -> None:
    clean = _clean(report("prod"))
    v = verdict.assess(clean)
    assert (v.status, v.risks, v.reason, v.headline) == (verdict.OK, (), None, verdict.OK)
    spot = _groups(clean, dataclasses.replace(_gpu(clean), capacity="spot"))
    v = verdict.assess(spot)
    assert [r.severity for r in v.risks] == ["low"] and v.status == verdict.OK and v.reason is None


def test_a_broken_journey_refuses_with_its_step() -> None:
    clean = _clean(report("prod"))
    v = verdict.assess(dataclasses.replace(clean, journeys=(_journey(True), _journey(False))))
    assert v.status == verdict.REFUSED
    assert [(r.title, r.why) for r in v.risks] == [("journey team-job: team a: job", "admitted: quota 0")]
    assert v.fixes == ("journey team-job: team a: job: admitted: quota 0",)


def test_over_budget_is_high_at_one_over_and_absent_at_the_budget() -> None:
    clean = _clean(report("prod"))
    n = clean.summary.accelerators_max
    assert n > 0
    assert not _risks(_summary(clean, gpu_budget=n))
    (risk,) = _risks(_summary(clean, gpu_budget=n - 1))
    assert risk.severity == "high" and risk.title == f"{n} accelerators at max over the budget of {n - 1}"
    assert verdict.assess(_summary(clean, gpu_budget=n - 1)).status == verdict.ATTENTION


def test_storage_below_demand_is_high_and_at_demand_is_not() -> None:
    clean = _clean(report("prod"))
    assert not _risks(_summary(clean, file_systems=(_fs(100, 100),)))
    (risk,) = _risks(_summary(clean, file_systems=(_fs(99, 100),)))
    assert risk.severity == "high" and risk.title == "storage covers 99% of demand"
    assert not _risks(_summary(clean, file_systems=(_fs(100, 0),)))  # nothing to serve: no shortfall


@pytest.mark.parametrize(("interfaces", "raised"), [(0, False), (1, True), ("max-1", True), ("max", False)])
def test_partial_efa_is_medium_only_between_none_and_all(interfaces: int | str, raised: bool) -> None:
    clean = _clean(report("prod"))
    g = _gpu(clean)
    assert g.efa_max > 1
    count = {"max": g.efa_max, "max-1": g.efa_max - 1}.get(str(interfaces), interfaces)
    assert isinstance(count, int)
    risks = _risks(_groups(clean, dataclasses.replace(g, efa_interfaces=count)))
    assert [r.severity for r in risks] == (["medium"] if raised else [])
    if raised:
        assert risks[0].title.endswith(f"{count} of {g.efa_max} EFA interfaces")
    # a type without EFA has nothing to be partial about
    assert not _risks(_groups(clean, dataclasses.replace(g, efa_interfaces=count, efa_max=0)))


def test_a_reservation_below_max_is_medium_and_at_max_is_not() -> None:
    clean = _clean(report("prod"))
    g = _gpu(clean)
    assert not _risks(_groups(clean, dataclasses.replace(g, capacity="reservation cr-1", desired_size=g.max_size)))
    (risk,) = _risks(_groups(clean, dataclasses.replace(g, capacity="reservation cr-1", desired_size=g.max_size - 1)))
    assert risk.severity == "medium" and "below max" in risk.title


@pytest.mark.parametrize(
    ("capacity", "max_size", "severity", "why"),
    [
        ("on-demand", 2, "medium", "InsufficientInstanceCapacity"),
        ("on-demand", 0, "low", "InsufficientInstanceCapacity"),  # nothing to launch: no surprise
        ("spot", 2, "low", "two minutes' notice"),
    ],
)
def test_unreserved_capacity(capacity: str, max_size: int, severity: str, why: str) -> None:
    clean = _clean(report("prod"))
    g = dataclasses.replace(_gpu(clean), capacity=capacity, max_size=max_size, desired_size=0)
    (risk,) = _risks(_groups(clean, g))
    assert risk.severity == severity and why in risk.why
    assert risk.title.endswith(f": {max_size} x {g.instance_type} with no reservation or Capacity Block")


def test_estimated_prices_are_one_low_risk_naming_each() -> None:
    clean = _clean(report("prod"))
    items = tuple(dataclasses.replace(i, estimated=True) for i in clean.cost.items[:2])
    r = dataclasses.replace(clean, cost=dataclasses.replace(clean.cost, items=items + clean.cost.items[2:]))
    (risk,) = _risks(r)
    assert risk.severity == "low" and risk.title == f"estimated prices: {items[0].name}, {items[1].name}"
    one = dataclasses.replace(clean, cost=dataclasses.replace(clean.cost, items=items[:1] + clean.cost.items[1:]))
    assert _risks(one)[0].title == f"estimated price: {items[0].name}"


# --------------------------------------------------------------------------------------------- the diff


def _diff(*changed: ResourceChange, removed: tuple[str, ...] = ()) -> PlanDiff:
    zero = Delta(0.0, 0.0)
    return PlanDiff(
        "baseline",
        added=(("urn:a", "aws:s3/bucket:Bucket"),),
        removed=tuple((urn, "aws:s3/bucket:Bucket") for urn in removed),
        changed=changed,
        accelerators_desired=zero,
        accelerators_max=zero,
        fabric_gbps_desired=zero,
        fabric_gbps_max=zero,
        usd_per_hour_desired=zero,
        usd_per_hour_max=zero,
        usd_per_month_desired=zero,
        usd_per_month_max=zero,
        protected_removals=removed,
    )


def _replaced(type_: str, protected: bool) -> ResourceChange:
    urn = f"urn:pulumi:prod::trainstack::{type_}::prod-thing"
    return ResourceChange(
        urn, type_, (InputChange("subnetIds", ["a"], ["b"]),), protected, replace_on_changes=("subnetIds",)
    )


def test_replacing_a_protected_resource_refuses_on_its_own() -> None:
    """No mandatory violation stands beside it: the replacement alone refuses."""
    clean = _clean(report("prod"))
    change = _replaced("aws:fsx/lustreFileSystem:LustreFileSystem", protected=True)
    v = verdict.assess(clean, _diff(change))
    assert v.status == verdict.REFUSED
    (risk,) = v.risks
    assert risk.title == "replaces protected prod-thing" and "subnetIds" in risk.why and risk.fix
    assert verdict.assess(clean, _diff(_replaced("aws:fsx/lustreFileSystem:LustreFileSystem", False))).status == "ok"


def test_deleting_a_protected_resource_refuses_on_its_own() -> None:
    clean = _clean(report("prod"))
    v = verdict.assess(clean, _diff(removed=("urn:pulumi:prod::trainstack::aws:s3/bucket:Bucket::prod-data",)))
    assert v.status == verdict.REFUSED and v.risks[0].title == "deletes protected prod-data"


def test_replacing_accelerator_nodes_is_high_unless_protected() -> None:
    clean = _clean(report("prod"))
    change = _replaced("aws:eks/nodeGroup:NodeGroup", protected=False)
    (risk,) = verdict.assess(clean, _diff(change)).risks
    assert risk.severity == "high" and risk.title == "replaces prod-thing"
    # an unprotected replacement of anything else is no risk
    assert not verdict.assess(clean, _diff(_replaced("aws:s3/bucket:Bucket", False))).risks


def test_diff_counts_split_changes_from_replacements() -> None:
    clean = _clean(report("prod"))
    update = ResourceChange("urn:u", "aws:s3/bucket:Bucket", (InputChange("tags", {}, {"a": "b"}),))
    diff = _diff(update, _replaced("aws:s3/bucket:Bucket", False), removed=("urn:r",))
    counts = verdict.assess(clean, diff).counts
    assert counts == {"add": 1, "change": 1, "replace": 1, "delete": 1}
    assert verdict.assess(clean).counts is None


def _moved(**deltas: tuple[float, float]) -> PlanDiff:
    return dataclasses.replace(_diff(), **{k: Delta(*v) for k, v in deltas.items()})


def test_diff_figures_without_a_baseline_report_come_from_the_deltas() -> None:
    """`plan --against` a recording only: the before side of each number is the diff's, with its signed change."""
    after = report("prod")
    diff = _moved(
        accelerators_desired=(8, 24),
        accelerators_max=(16, 32),
        usd_per_month_desired=(1000, 4000),
        usd_per_month_max=(2000, 2000),
        fabric_gbps_desired=(800, 3200),
    )
    shown = {f.label: f for f in verdict.diff_figures(None, after, diff)}
    acc = shown["accelerators desired / max"]
    assert (acc.value, acc.before, acc.change) == ("24 / 32", "8 / 16", "+16 / +16")
    cost = shown["cost at desired"]
    assert cost.before == "$1,000/month" and cost.change == "+$3,000/month"
    flat = shown["cost at max"]
    assert flat.before == "$2,000/month" and flat.change is None  # no move, no change shown
    fabric = shown["EFA fabric at desired"]
    assert (fabric.value, fabric.before, fabric.change) == ("3.2 Tbit/s", "0.8 Tbit/s", "+2.4 Tbit/s")
    # a figure the deltas do not carry has no before side without a baseline report
    assert shown["storage throughput"].before is None and not shown["storage throughput"].moved


def test_diff_figures_show_no_change_for_figures_that_did_not_move() -> None:
    after = report("prod")
    shown = verdict.diff_figures(after, after, _moved(usd_per_month_desired=(5, 5.4)))
    assert all(f.change is None and not f.moved for f in shown)
    assert verdict._count_change(0, 0) is None and verdict._count_change(0, 2) == "+0 / +2"
    assert verdict._usd_change(0.4) is None and verdict._usd_change(-0.6) == "-$0.60/month"


def test_advisories_are_one_low_risk_per_rule_with_the_first_message_and_the_count() -> None:
    from trainstack.review import Violation

    clean = _clean(report("prod"))
    base = report("prod").policy
    assert base is not None

    def advisory(policy: str, message: str) -> Violation:
        return Violation(policy, "advisory", "low", "", "", "", message)

    found = (advisory("a-rule", "first"), advisory("a-rule", "second"), advisory("b-rule", "only"))
    policy = dataclasses.replace(base, violations=found)
    risks = verdict.assess(dataclasses.replace(clean, policy=policy)).risks
    assert [(r.severity, r.title, r.why) for r in risks] == [
        ("low", "advisory a-rule: 2 finding(s)", "first (+1 more)"),
        ("low", "advisory b-rule: 1 finding(s)", "only"),
    ]
    assert verdict.assess(dataclasses.replace(clean, policy=policy)).status == verdict.OK

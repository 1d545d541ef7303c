"""Capacity that follows the work: how each group kind admits a gang job, the scale-from-zero tags, the autoscaler's
values and IAM policy, and a Capacity Block's window (components/k8s/autoscaling.py, stacks/schema/capacity.py)."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from pydantic import ValidationError

from components.gpu.gpu_nodes import node_labels, node_taint
from components.k8s.autoscaling import (
    CAPACITY_BLOCK_MAX_LEAD,
    PROVISIONING_CONTROLLER,
    SCALE_UP_RETRY,
    WINDOW_RETRY,
    Admission,
    RetryStrategy,
    admission,
    admission_check_name,
    admission_check_spec,
    autoscaler_policy,
    can_grow,
    cluster_autoscaler_values,
    needs_autoscaler,
    node_template_tags,
    provisioning_request_config_spec,
)
from components.k8s.scheduling import cluster_queue_spec, node_group_target
from stacks.catalog import CATALOG
from stacks.schema import CapacityType, ClusterAutoscalerSpec, GpuNodeGroupSpec, ReservationWindow, StackConfig
from tests.conftest import edited_config
from trainstack.model.capacity import GroupCapacity, capacity_plan, group_capacity
from trainstack.report.capacity import group_line

NT = "k8s.io/cluster-autoscaler/node-template"
START = "2026-10-01T11:30:00Z"
END = "2026-10-08T11:30:00Z"


def group(
    capacity: dict[str, Any] | None = None, *, sizes: tuple[int, int, int] = (0, 0, 2), **extra: Any
) -> GpuNodeGroupSpec:
    low, desired, high = sizes
    return GpuNodeGroupSpec.model_validate(
        {
            "name": "p5",
            "instance_type": "p5.48xlarge",
            "availability_zone": "us-east-1a",
            "capacity": capacity or {"type": "on_demand"},
            "min_size": low,
            "desired_size": desired,
            "max_size": high,
            **extra,
        }
    )


def odcr(sizes: tuple[int, int, int]) -> GpuNodeGroupSpec:
    return group(
        {
            "type": "reservation",
            "reservation_id": "cr-0a1b2c3d4e5f67890",
            "reservation_availability_zone": "us-east-1a",
        },
        sizes=sizes,
    )


def block(sizes: tuple[int, int, int] = (2, 2, 2), window: dict[str, str] | None = None) -> GpuNodeGroupSpec:
    capacity: dict[str, Any] = {
        "type": "capacity_block",
        "reservation_id": "cr-0a1b2c3d4e5f67890",
        "reservation_availability_zone": "us-east-1a",
    }
    if window is not None:
        capacity["window"] = window
    return group(capacity, sizes=sizes)


def spot() -> GpuNodeGroupSpec:
    return GpuNodeGroupSpec(
        name="g5",
        instance_type="g5.2xlarge",
        availability_zone="us-east-1a",
        capacity={"type": "spot"},  # pyright: ignore[reportArgumentType]
        efa_enabled=False,
        min_size=0,
        desired_size=0,
        max_size=2,
    )


# ------------------------------------------------------------------------------------- admission per kind


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (group(sizes=(0, 0, 2)), Admission.ATOMIC_SCALE_UP),  # on-demand from zero
        (group(sizes=(1, 1, 2)), Admission.ATOMIC_SCALE_UP),  # grows by one: min < max is the boundary
        (group(sizes=(2, 2, 2)), Admission.NODES_EXIST),  # on-demand, fixed
        (spot(), Admission.ATOMIC_SCALE_UP),
        (odcr((16, 16, 16)), Admission.NODES_EXIST),  # a fixed reservation: no check
        (odcr((8, 8, 16)), Admission.ATOMIC_SCALE_UP),  # a reservation that can grow past its nodes
        (block(), Admission.CHECK_CAPACITY),  # fixed, but its nodes exist only inside the window
        (block((0, 0, 2)), Admission.ATOMIC_SCALE_UP),
    ],
)
def test_admission_per_group_kind(spec: GpuNodeGroupSpec, expected: Admission) -> None:
    assert admission(spec) is expected
    assert can_grow(spec) is (spec.min_size < spec.max_size)


def test_a_fixed_group_has_no_admission_check_and_its_queue_none() -> None:
    fixed = odcr((16, 16, 16))
    assert Admission.NODES_EXIST.provisioning_class is None
    with pytest.raises(ValueError, match="admits against the nodes that exist"):
        provisioning_request_config_spec(fixed)
    target = node_group_target(fixed)
    assert target.admission_check is None
    assert "admissionChecks" not in cluster_queue_spec(target, "c")


@pytest.mark.parametrize("spec", [group(), spot(), block()])
def test_a_queue_that_must_provision_names_its_check(spec: GpuNodeGroupSpec) -> None:
    target = node_group_target(spec)
    assert target.admission_check == admission_check_name(spec) == f"{spec.name}-capacity"
    assert cluster_queue_spec(target, "c")["admissionChecks"] == [target.admission_check]
    # The quota stays the group at its maximum: the check, not the quota, waits for the nodes.
    assert target.quota[CATALOG[spec.instance_type].device_resource] == str(
        spec.max_size * CATALOG[spec.instance_type].accelerator_count
    )


@pytest.mark.parametrize(
    "spec", [group(), group(sizes=(2, 2, 2)), spot(), odcr((16, 16, 16)), odcr((8, 8, 16)), block(), block((0, 0, 2))]
)
def test_the_schema_and_the_components_agree_on_which_groups_the_autoscaler_serves(spec: GpuNodeGroupSpec) -> None:
    # StackConfig.autoscaled_groups (the schema's minor rule) restates `admission`: the schema imports no component.
    schema_says = spec.min_size < spec.max_size or spec.capacity.type is CapacityType.CAPACITY_BLOCK
    assert schema_says is needs_autoscaler([spec])


def test_needs_autoscaler_only_when_some_group_is_not_fixed_on_existing_nodes() -> None:
    assert not needs_autoscaler([])
    assert not needs_autoscaler([odcr((16, 16, 16)), group(sizes=(2, 2, 2))])
    assert needs_autoscaler([odcr((16, 16, 16)), spot()])
    assert needs_autoscaler([block()])


def test_provisioning_config_asks_for_the_class_and_manages_the_accelerator() -> None:
    config = provisioning_request_config_spec(group())
    assert config == {
        "provisioningClassName": "best-effort-atomic-scale-up.autoscaling.x-k8s.io",
        "managedResources": ["nvidia.com/gpu"],
        "retryStrategy": {"backoffLimitCount": 3, "backoffBaseSeconds": 60, "backoffMaxSeconds": 1800},
    }
    block_config = provisioning_request_config_spec(block())
    assert block_config["provisioningClassName"] == "check-capacity.autoscaling.x-k8s.io"
    assert block_config["retryStrategy"] == WINDOW_RETRY.spec()
    check = admission_check_spec(group())
    assert check["controllerName"] == PROVISIONING_CONTROLLER == "kueue.x-k8s.io/provisioning-request"
    assert check["parameters"] == {
        "apiGroup": "kueue.x-k8s.io",
        "kind": "ProvisioningRequestConfig",
        "name": "p5-capacity",
    }


def test_retry_spans() -> None:
    # Kueue's defaults: 1, 2 and 4 minutes.
    assert SCALE_UP_RETRY.span() == timedelta(minutes=7)
    assert RetryStrategy(limit=7, base_s=60, max_s=1800).span() == timedelta(minutes=1 + 2 + 4 + 8 + 16 + 30 + 30)
    assert RetryStrategy(limit=0, base_s=60, max_s=1800).span() == timedelta(0)
    # A job queued when a block is bought keeps retrying until the latest start EC2 sells, and barely longer.
    assert (
        CAPACITY_BLOCK_MAX_LEAD <= WINDOW_RETRY.span() < CAPACITY_BLOCK_MAX_LEAD + timedelta(seconds=WINDOW_RETRY.max_s)
    )


# ------------------------------------------------------------------------------------------ scale from zero


def tags_of(spec: GpuNodeGroupSpec) -> dict[str, str]:
    taint = node_taint(CATALOG[spec.instance_type])
    return node_template_tags(spec, node_labels(spec), (taint.key, taint.value, taint.effect))


def test_efa_group_tags_say_what_a_node_offers() -> None:
    tags = tags_of(group(labels={"team.example.com/pool": "a"}))
    assert tags[f"{NT}/resources/nvidia.com/gpu"] == "8"
    assert tags[f"{NT}/resources/vpc.amazonaws.com/efa"] == "32"
    assert tags[f"{NT}/resources/hugepages-2Mi"] == "10256Mi"  # 5128 pages x 2 MiB
    assert tags[f"{NT}/label/trainstack.io/node-group"] == "p5"
    assert tags[f"{NT}/label/vpc.amazonaws.com/efa.present"] == "true"
    assert tags[f"{NT}/label/team.example.com/pool"] == "a"
    assert tags[f"{NT}/taint/nvidia.com/gpu"] == "true:NoSchedule"


def test_a_group_without_efa_offers_no_efa_and_no_hugepages() -> None:
    tags = tags_of(spot())
    assert tags[f"{NT}/resources/nvidia.com/gpu"] == "1"
    assert not any(key.endswith(("/vpc.amazonaws.com/efa", "/hugepages-2Mi")) for key in tags)
    assert f"{NT}/label/vpc.amazonaws.com/efa.present" not in tags


def test_neuron_groups_tag_their_device_the_autoscaler_cannot_infer() -> None:
    trn = group(instance_type="trn1.32xlarge")
    tags = tags_of(trn)
    row = CATALOG["trn1.32xlarge"]
    assert tags[f"{NT}/resources/{row.device_resource}"] == str(row.accelerator_count)
    assert tags[f"{NT}/taint/{row.device_resource}"] == "true:NoSchedule"


def test_every_tag_fits_the_autoscaling_api() -> None:
    # CreateOrUpdateTags: keys 1-128, values at most 256 (botocore, recorded in trainstack/contracts/facts).
    longest = "a" * 53 + ".example.com/" + "b" * 0
    tags = tags_of(group(labels={longest[:63]: "v" * 63}))
    assert all(1 <= len(k) <= 128 and len(v) <= 256 for k, v in tags.items())


# --------------------------------------------------------------------------------- the autoscaler itself


def test_values_enable_provisioning_requests_and_pin_the_image() -> None:
    values = cluster_autoscaler_values(
        ClusterAutoscalerSpec(max_node_provision_time_s=600),
        kubernetes_version="1.36",
        cluster_name="c",
        region="us-east-1",
        system_node_group="sys",
    )
    assert values["extraArgs"]["enable-provisioning-requests"] == "true"
    assert values["extraArgs"]["max-node-provision-time"] == "600s"
    assert values["image"] == {"tag": "v1.36.1"}
    assert values["autoDiscovery"] == {"clusterName": "c"}
    assert values["nodeSelector"] == {"eks.amazonaws.com/nodegroup": "sys"}
    assert values["rbac"]["serviceAccount"]["name"] == "cluster-autoscaler"


def test_policy_scales_only_this_clusters_groups() -> None:
    policy = autoscaler_policy("trainstack-dev", nodegroup_arns="arn:aws:eks:us-east-1:1:nodegroup/trainstack-dev/*")
    by_sid = {s["Sid"]: s for s in policy["Statement"]}
    scale = by_sid["ScaleOwnGroups"]
    assert set(scale["Action"]) == {"autoscaling:SetDesiredCapacity", "autoscaling:TerminateInstanceInAutoScalingGroup"}
    assert scale["Condition"]["StringEquals"] == {
        "aws:ResourceTag/k8s.io/cluster-autoscaler/enabled": "true",
        "aws:ResourceTag/k8s.io/cluster-autoscaler/trainstack-dev": "owned",
    }
    assert by_sid["DescribeNodegroups"]["Resource"].endswith(":nodegroup/trainstack-dev/*")
    assert all(not a.startswith(("iam:", "ec2:Run", "ec2:Terminate")) for s in policy["Statement"] for a in s["Action"])


def test_autoscaler_spec_bounds_and_minor() -> None:
    assert ClusterAutoscalerSpec().minor is None
    assert ClusterAutoscalerSpec(image_tag="v1.35.2").minor == "1.35"
    # Left out, the image follows the cluster's minor; pinned, the pin wins.
    assert ClusterAutoscalerSpec().image_for("1.36") == "v1.36.1"
    assert ClusterAutoscalerSpec().image_for("1.34") == "v1.34.5"
    assert ClusterAutoscalerSpec(image_tag="v1.36.0").image_for("1.36") == "v1.36.0"
    with pytest.raises(ValidationError, match="image_tag"):
        ClusterAutoscalerSpec(image_tag="1.36.1")
    with pytest.raises(ValidationError, match="max_node_provision_time_s"):
        ClusterAutoscalerSpec(max_node_provision_time_s=59)
    ClusterAutoscalerSpec(max_node_provision_time_s=60)


# ------------------------------------------------------------------------------------ reservation windows


def test_a_window_is_only_for_a_capacity_block() -> None:
    assert block(window={"starts_at": START, "ends_at": END}).capacity.window is not None
    reservation = {"reservation_id": "cr-0a1b2c3d4e5f67890", "reservation_availability_zone": "us-east-1a"}
    with pytest.raises(ValidationError, match="reservation takes no window"):
        group({"type": "reservation", **reservation, "window": {"starts_at": START, "ends_at": END}})
    with pytest.raises(ValidationError, match="on_demand takes no window"):
        group({"type": "on_demand", "window": {"starts_at": START, "ends_at": END}})


@pytest.mark.parametrize(
    ("starts_at", "ends_at", "message"),
    [
        ("2026-10-01T11:00:00Z", END, "starts_at .* not at 11:30 UTC"),
        (START, "2026-10-08T12:30:00+01:00", None),  # 11:30 UTC written in another zone
        (START, "2026-10-01T11:30:00Z", "0 days"),
        (START, "2026-10-02T11:30:00Z", None),  # one day: the shortest block
        (START, "2026-10-15T11:30:00Z", None),  # 14 days
        (START, "2026-10-16T11:30:00Z", "weeks past 14 days"),  # 15 days
        (START, "2026-10-22T11:30:00Z", None),  # 21 days
        ("2026-01-01T11:30:00Z", "2026-07-02T11:30:00Z", None),  # 182 days
        ("2026-01-01T11:30:00Z", "2026-07-09T11:30:00Z", "1 to 182 days"),
    ],
)
def test_window_rules(starts_at: str, ends_at: str, message: str | None) -> None:
    if message is None:
        ReservationWindow.model_validate({"starts_at": starts_at, "ends_at": ends_at})
    else:
        with pytest.raises(ValidationError, match=message):
            ReservationWindow.model_validate({"starts_at": starts_at, "ends_at": ends_at})


def test_window_refuses_a_naive_time() -> None:
    with pytest.raises(ValidationError, match="timezone"):
        ReservationWindow.model_validate({"starts_at": "2026-10-01T11:30:00", "ends_at": END})


def test_window_state_and_last_instance() -> None:
    window = ReservationWindow.model_validate({"starts_at": START, "ends_at": END})
    start = datetime(2026, 10, 1, 11, 30, tzinfo=UTC)
    assert window.state(start - timedelta(seconds=1)) == "future"
    assert window.state(start) == "active"
    assert window.state(datetime(2026, 10, 8, 11, 29, tzinfo=UTC)) == "active"
    assert window.state(datetime(2026, 10, 8, 11, 30, tzinfo=UTC)) == "ended"
    assert window.last_instance_at == datetime(2026, 10, 8, 11, 0, tzinfo=UTC)


# ------------------------------------------------------------------- the policy, judged by an IAM evaluator


def test_the_autoscaler_policy_scales_its_own_groups_and_nothing_else() -> None:
    from trainstack.journeys import iam

    account = "123456789012"
    role = f"arn:aws:iam::{account}:role/cluster-autoscaler"
    policy = iam.Policy.of(
        "cluster-autoscaler",
        autoscaler_policy(
            "trainstack-dev", nodegroup_arns=f"arn:aws:eks:us-east-1:{account}:nodegroup/trainstack-dev/*"
        ),
    )
    asg = f"arn:aws:autoscaling:us-east-1:{account}:autoScalingGroup:uuid:autoScalingGroupName/eks-g5-1"
    own = {"aws:ResourceTag/k8s.io/cluster-autoscaler/enabled": "true"}
    own["aws:ResourceTag/k8s.io/cluster-autoscaler/trainstack-dev"] = "owned"
    other = {
        "aws:ResourceTag/k8s.io/cluster-autoscaler/enabled": "true",
        "aws:ResourceTag/k8s.io/cluster-autoscaler/trainstack-prod": "owned",
    }

    def may(action: str, resource: str, context: dict[str, str] | None = None) -> bool:
        req = iam.request(role, [policy], action, resource, resource_account=account, context=context or {})
        return iam.decide(req).allowed

    assert may("autoscaling:SetDesiredCapacity", asg, own)
    assert may("autoscaling:TerminateInstanceInAutoScalingGroup", asg, own)
    assert not may("autoscaling:SetDesiredCapacity", asg, other)  # another cluster's group
    assert not may("autoscaling:SetDesiredCapacity", asg)  # an untagged group
    assert may("autoscaling:DescribeAutoScalingGroups", asg)
    assert may("eks:DescribeNodegroup", f"arn:aws:eks:us-east-1:{account}:nodegroup/trainstack-dev/g5/abc")
    assert not may("eks:DescribeNodegroup", f"arn:aws:eks:us-east-1:{account}:nodegroup/trainstack-prod/p5/abc")
    assert not may("autoscaling:UpdateAutoScalingGroup", asg, own)  # min/max stay Pulumi's
    assert not may("ec2:RunInstances", f"arn:aws:ec2:us-east-1:{account}:instance/i-0123456789abcdef0")


# ------------------------------------------------------------------------ the capacity plan (trainstack/model)

PROVISION = timedelta(seconds=600)  # the stack below: --max-node-provision-time 600s
ATTEMPT = timedelta(seconds=10) + PROVISION  # one scan interval, then one provisioning attempt
P5_USD = CATALOG["p5.48xlarge"].on_demand_usd_per_hour
WINDOW = {"starts_at": START, "ends_at": END}
WINDOW_START = datetime(2026, 10, 1, 11, 30, tzinfo=UTC)


def plan_stack() -> StackConfig:
    def edit(raw: dict[str, Any]) -> None:
        raw["kubernetes"]["cluster_autoscaler"] = {"max_node_provision_time_s": 600}

    return edited_config("dev", edit)


def line(spec: GpuNodeGroupSpec, now: datetime = WINDOW_START) -> GroupCapacity:
    return group_capacity(plan_stack(), spec, now)


def test_a_group_from_zero_is_scaled_by_the_autoscaler_and_waits_one_attempt() -> None:
    plan = line(group(sizes=(0, 0, 2)))
    assert (plan.name, plan.scaler, plan.admission) == ("p5", "cluster-autoscaler", Admission.ATOMIC_SCALE_UP)
    assert (plan.min_size, plan.max_size) == (0, 2)
    assert plan.scale_up_needs == "2 x p5.48xlarge On-Demand in us-east-1a, one cluster placement group"
    assert plan.wait == ATTEMPT
    # Kueue gives up after the first attempt and its three retries, each an attempt after its backoff.
    assert plan.gives_up_after == 4 * ATTEMPT + SCALE_UP_RETRY.span()
    assert plan.window == ""
    assert (plan.usd_per_hour_min, plan.usd_per_hour_max) == (0, 2 * P5_USD)


def test_a_scale_up_needs_only_the_nodes_past_the_minimum() -> None:
    plan = line(group(sizes=(1, 1, 3)))
    assert plan.scale_up_needs.startswith("2 x p5.48xlarge On-Demand")
    assert (plan.usd_per_hour_min, plan.usd_per_hour_max) == (P5_USD, 3 * P5_USD)


def test_a_group_without_a_placement_group_says_only_its_zone_and_how_it_buys() -> None:
    plan = line(spot())
    assert plan.scale_up_needs == "2 x g5.2xlarge Spot in us-east-1a"
    assert line(odcr((8, 8, 16))).scale_up_needs == "8 x p5.48xlarge from reservation in us-east-1a"


def test_a_fixed_group_needs_nothing_and_never_waits_or_gives_up() -> None:
    plan = line(odcr((16, 16, 16)))
    assert (plan.scaler, plan.admission) == ("fixed", Admission.NODES_EXIST)
    assert plan.scale_up_needs == "nothing: the nodes exist"
    assert plan.wait == timedelta(0) and plan.gives_up_after is None and plan.window == ""
    assert plan.usd_per_hour_min == plan.usd_per_hour_max == 16 * P5_USD
    assert "a 16-node job starts without waiting for capacity;" in group_line(plan)


def test_a_block_before_its_window_waits_for_the_start_then_one_attempt_and_one_retry() -> None:
    plan = line(block(window=WINDOW), now=WINDOW_START - timedelta(days=1))
    assert (plan.scaler, plan.admission) == ("Capacity Block window", Admission.CHECK_CAPACITY)
    assert plan.scale_up_needs == "the block's start (2 nodes)"
    assert plan.wait == timedelta(days=1) + ATTEMPT + timedelta(seconds=WINDOW_RETRY.max_s)
    assert plan.gives_up_after == (WINDOW_RETRY.limit + 1) * ATTEMPT + WINDOW_RETRY.span()
    assert plan.window == "2026-10-01T11:30:00+00:00 to 2026-10-08T11:30:00+00:00 (future)"


def test_a_block_inside_its_window_waits_one_attempt_and_one_retry() -> None:
    plan = line(block(window=WINDOW), now=WINDOW_START + timedelta(hours=1))
    assert plan.wait == ATTEMPT + timedelta(seconds=WINDOW_RETRY.max_s)
    assert plan.window.endswith("(active)")


def test_a_block_past_its_window_or_without_one_has_no_wait() -> None:
    ended = line(block(window=WINDOW), now=WINDOW_START + timedelta(days=7))
    assert ended.wait is None and ended.window.endswith("(ended)")
    assert ended.gives_up_after is not None  # Kueue still asks, and still gives up
    unknown = line(block())
    assert unknown.wait is None
    assert unknown.window.startswith("window not recorded (capacity.window)")


def test_a_block_that_can_grow_scales_up_and_still_waits_for_its_start() -> None:
    plan = line(block((0, 0, 2), window=WINDOW), now=WINDOW_START - timedelta(hours=2))
    assert (plan.scaler, plan.admission) == ("cluster-autoscaler", Admission.ATOMIC_SCALE_UP)
    assert plan.scale_up_needs == "2 x p5.48xlarge from Capacity Block in us-east-1a"
    assert plan.wait == timedelta(hours=2) + ATTEMPT
    assert plan.gives_up_after == (WINDOW_RETRY.limit + 1) * ATTEMPT + WINDOW_RETRY.span()


def test_the_plan_has_one_line_per_group_in_the_stacks_order() -> None:
    stack = plan_stack()
    plan = capacity_plan(stack, WINDOW_START)
    assert [p.name for p in plan] == [g.name for g in stack.gpu_node_groups]
    assert plan == [group_capacity(stack, g, WINDOW_START) for g in stack.gpu_node_groups]


def test_the_json_line_gives_seconds_and_dollars_to_a_hundredth_of_a_cent() -> None:
    plan = dataclasses.replace(
        line(group(sizes=(0, 0, 2))),
        wait=timedelta(seconds=610, microseconds=900_000),
        usd_per_hour_min=1.234567,
        usd_per_hour_max=2.345678,
    )
    assert plan.to_dict() == {
        "name": "p5",
        "scaler": "cluster-autoscaler",
        "admission": Admission.ATOMIC_SCALE_UP.value,
        "minSize": 0,
        "maxSize": 2,
        "scaleUpNeeds": "2 x p5.48xlarge On-Demand in us-east-1a, one cluster placement group",
        "worstCaseWaitS": 610,
        "givesUpAfterS": int((4 * ATTEMPT + SCALE_UP_RETRY.span()).total_seconds()),
        "window": "",
        "usdPerHourMin": 1.2346,
        "usdPerHourMax": 2.3457,
    }
    unknown = line(block()).to_dict()
    assert unknown["worstCaseWaitS"] is None and unknown["givesUpAfterS"] is not None
    assert line(odcr((16, 16, 16))).to_dict()["givesUpAfterS"] is None

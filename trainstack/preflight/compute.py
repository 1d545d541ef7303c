"""Whether the nodes can launch (EC2, Service Quotas): each type offered in its AZ, the vCPU quotas at max size
with what already runs, and each reservation or Capacity Block (its type, AZ, state, free instances)."""

from __future__ import annotations

import datetime
from collections import defaultdict
from typing import Any

from botocore.exceptions import ClientError

from stacks.account_rules import (
    EKS_CLUSTER_TAG,
    QUOTA_CLASSES,
    QuotaClass,
    QuotaDemand,
    Reservation,
    offering_problem,
    quota_check_id,
    quota_class,
    quota_demands,
    quota_problem,
    reservation_problems,
)
from stacks.schema import CapacityType
from trainstack.preflight.aws import AskFailed, error_code
from trainstack.preflight.context import Context, attempt, verdict
from trainstack.preflight.model import Check, Status

FAMILY = "compute"
# Client scope of the reservation calls (Account.overrides): the tests answer them with botocore's Stubber, since
# moto's server has no capacity reservations, while the rest of the family's EC2 calls go to moto.
RESERVATIONS = "reservations"


def offered_zones(ctx: Context, instance_type: str) -> list[str]:
    answer = ctx.ask(
        FAMILY,
        "ec2",
        "DescribeInstanceTypeOfferings",
        LocationType="availability-zone",
        Filters=[{"Name": "instance-type", "Values": [instance_type]}],
    )
    return sorted({o["Location"] for o in answer["InstanceTypeOfferings"]})


def offering_checks(ctx: Context) -> list[Check]:
    checks: list[Check] = []
    zones: dict[str, list[str]] = {}
    for i, group in enumerate(ctx.stack.gpu_node_groups):
        key = f"gpu_node_groups[{i}].availability_zone"
        asked = f"ec2:DescribeInstanceTypeOfferings {group.instance_type}"
        title = f"{group.instance_type} is offered in {group.availability_zone} (group {group.name})"

        def judge(group: Any = group, key: str = key, asked: str = asked, title: str = title) -> Check:
            if group.instance_type not in zones:
                zones[group.instance_type] = offered_zones(ctx, group.instance_type)
            found = zones[group.instance_type]
            problem = offering_problem(key, group.instance_type, group.availability_zone, found)
            return Check(
                id=f"compute.offering.{group.name}",
                family=FAMILY,
                title=title,
                status=verdict(problem),
                asked=asked,
                answer=problem or f"offered in {', '.join(found)}",
                action="" if problem is None else "move the group or change its type (or search: preflight --capacity)",
                key=key,
            )

        checks.append(attempt(FAMILY, f"compute.offering.{group.name}", title, key, asked, judge))
    system = ctx.stack.eks.system_node_group.instance_type
    asked = f"ec2:DescribeInstanceTypeOfferings {system}"
    title = f"{system} (system nodes) is offered in every network AZ"

    def judge_system() -> Check:
        found = zones.get(system) or offered_zones(ctx, system)
        problems = [
            p
            for az in ctx.stack.network.availability_zones
            if (p := offering_problem("eks.system_node_group.instance_type", system, az, found))
        ]
        return Check(
            id="compute.offering.system",
            family=FAMILY,
            title=title,
            status=Status.FAILED if problems else Status.PASSED,
            asked=asked,
            answer=problems[0] if problems else f"offered in {', '.join(found)}",
            action="pick a system type offered in every AZ of network.availability_zones" if problems else "",
            key="eks.system_node_group.instance_type",
        )

    checks.append(
        attempt(FAMILY, "compute.offering.system", title, "eks.system_node_group.instance_type", asked, judge_system)
    )
    return checks


# ------------------------------------------------------------------------------------------------- quotas


def _classes() -> dict[str, QuotaClass]:
    return {c.label: c for _, c in QUOTA_CLASSES}


def vcpus_of(ctx: Context, instance_types: set[str]) -> dict[str, int]:
    """Each type's default vCPUs (DescribeInstanceTypes): what the vCPU quotas count."""
    if not instance_types:
        return {}
    answer = ctx.ask(FAMILY, "ec2", "DescribeInstanceTypes", InstanceTypes=sorted(instance_types))
    return {t["InstanceType"]: int(t["VCpuInfo"]["DefaultVCpus"]) for t in answer["InstanceTypes"]}


def running_elsewhere(ctx: Context) -> dict[tuple[str, bool], int]:
    """vCPUs of pending and running instances outside this stack's cluster, per (quota class, spot)."""
    answer = ctx.ask(
        FAMILY, "ec2", "DescribeInstances", Filters=[{"Name": "instance-state-name", "Values": ["pending", "running"]}]
    )
    counted: list[tuple[str, bool, str]] = []
    for reservation in answer.get("Reservations", []):
        for instance in reservation.get("Instances", []):
            tags = {t["Key"]: t["Value"] for t in instance.get("Tags", [])}
            lifecycle = instance.get("InstanceLifecycle", "")
            found_class = quota_class(instance.get("InstanceType", ""))
            if tags.get(EKS_CLUSTER_TAG) == ctx.stack.name or found_class is None or lifecycle not in ("", "spot"):
                continue
            counted.append((found_class.label, lifecycle == "spot", instance["InstanceType"]))
    vcpus = vcpus_of(ctx, {t for _, _, t in counted})
    used: dict[tuple[str, bool], int] = defaultdict(int)
    for label, spot, instance_type in counted:
        used[(label, spot)] += vcpus.get(instance_type, 0)
    return used


def quota_value(ctx: Context, code: str) -> tuple[float, str]:
    """(value, name) of an EC2 quota: the applied value, or AWS's default where none was ever applied."""
    try:
        quota = ctx.ask(FAMILY, "service-quotas", "GetServiceQuota", ServiceCode="ec2", QuotaCode=code)["Quota"]
    except ClientError as error:
        if error_code(error) != "NoSuchResourceException":
            raise
        quota = ctx.ask(FAMILY, "service-quotas", "GetAWSDefaultServiceQuota", ServiceCode="ec2", QuotaCode=code)[
            "Quota"
        ]
    return float(quota["Value"]), str(quota.get("QuotaName", ""))


def quota_checks(ctx: Context) -> list[Check]:
    system = ctx.stack.eks.system_node_group.instance_type
    title = "vCPU quotas cover every group at max size"
    try:
        wanted = quota_demands(ctx.stack, vcpus_of(ctx, {system}).get(system, 0))
        others = running_elsewhere(ctx)
    except Exception as error:
        return [_unchecked("compute.quota", title, "ec2:DescribeInstanceTypes, ec2:DescribeInstances", error)]
    classes = _classes()
    checks: list[Check] = []
    for (label, spot), demand in sorted(wanted.items()):
        found_class = classes[label]
        name, code = (
            (found_class.spot_name, found_class.spot_code)
            if spot
            else (found_class.on_demand_name, found_class.on_demand_code)
        )
        id_ = quota_check_id(label, spot)
        asked = f"service-quotas:GetServiceQuota ec2 {code}; ec2:DescribeInstances"
        title_ = f"'{name}' covers the stack"

        def judge(
            name: str = name,
            code: str = code,
            demand: list[QuotaDemand] = demand,
            label: str = label,
            spot: bool = spot,
            id_: str = id_,
            asked: str = asked,
            title_: str = title_,
        ) -> Check:
            value, returned = quota_value(ctx, code)
            if returned and returned != name:
                return Check(
                    id_,
                    FAMILY,
                    title_,
                    Status.ERROR,
                    asked,
                    f"quota {code} is '{returned}' in this account, not '{name}': trainstack's quota table "
                    "is wrong for it",
                    "report it; check the quota in the Service Quotas console",
                )
            problem = quota_problem(name, code, value, demand, others.get((label, spot), 0))
            need = sum(d.vcpus for d in demand)
            return Check(
                id=id_,
                family=FAMILY,
                title=title_,
                status=verdict(problem),
                asked=asked,
                answer=problem
                or f"{value:,.0f} vCPUs; the stack needs {need:,} at max size, {others.get((label, spot), 0):,} run "
                "outside it",
                action="" if problem is None else "request the increase (approval can take days)",
                key=demand[0].who,
            )

        checks.append(attempt(FAMILY, id_, title_, demand[0].who, asked, judge))
    return checks


def _unchecked(id_: str, title: str, asked: str, error: Exception) -> Check:
    if not isinstance(error, AskFailed):
        raise error
    return Check(
        id_,
        FAMILY,
        title,
        Status.ERROR,
        asked,
        str(error),
        "fix access and run preflight again; until then this is unchecked",
    )


# ----------------------------------------------------------------------------------------------- reservations


def reservation(raw: dict[str, Any]) -> Reservation:
    def when(value: Any) -> datetime.datetime | None:
        return value if isinstance(value, datetime.datetime) else None

    return Reservation(
        id=raw["CapacityReservationId"],
        instance_type=raw.get("InstanceType", ""),
        availability_zone=raw.get("AvailabilityZone", ""),
        state=raw.get("State", ""),
        reservation_type=raw.get("ReservationType", "default"),
        total=int(raw.get("TotalInstanceCount", 0)),
        available=int(raw.get("AvailableInstanceCount", 0)),
        tenancy=raw.get("Tenancy", "default"),
        platform=raw.get("InstancePlatform", ""),
        start=when(raw.get("StartDate")),
        end=when(raw.get("EndDate")),
        placement_group_arn=raw.get("PlacementGroupArn"),
    )


def find_reservation(ctx: Context, reservation_id: str) -> Reservation | None:
    try:
        found = ctx.ask(RESERVATIONS, "ec2", "DescribeCapacityReservations", CapacityReservationIds=[reservation_id])
    except ClientError as error:
        if error_code(error) in ("InvalidCapacityReservationId.NotFound", "InvalidCapacityReservationId.Malformed"):
            return None
        raise
    items = found.get("CapacityReservations", [])
    return reservation(items[0]) if items else None


def stack_nodes_in(ctx: Context, reservation_id: str) -> int:
    """This stack's pending and running nodes in the reservation: on a day-2 run they hold part of it for the
    group, so they count as the group's, not as taken."""
    answer = ctx.ask(
        FAMILY,
        "ec2",
        "DescribeInstances",
        Filters=[
            {"Name": f"tag:{EKS_CLUSTER_TAG}", "Values": [ctx.stack.name]},
            {"Name": "instance-state-name", "Values": ["pending", "running"]},
        ],
    )
    return sum(
        1
        for reservation in answer.get("Reservations", [])
        for instance in reservation.get("Instances", [])
        if instance.get("CapacityReservationId") == reservation_id
    )


def reservation_checks(ctx: Context) -> list[Check]:
    checks: list[Check] = []
    for i, group in enumerate(ctx.stack.gpu_node_groups):
        capacity = group.capacity
        if not capacity.reserved or capacity.reservation_id is None:
            continue
        key = f"gpu_node_groups[{i}].capacity"
        asked = f"ec2:DescribeCapacityReservations {capacity.reservation_id}"
        kind = "Capacity Block" if capacity.type is CapacityType.CAPACITY_BLOCK else "reservation"
        title = f"{kind} {capacity.reservation_id} can hold group {group.name}"

        def judge(group: Any = group, key: str = key, asked: str = asked, title: str = title) -> Check:
            rid = str(group.capacity.reservation_id)
            found = find_reservation(ctx, rid)
            running = stack_nodes_in(ctx, rid) if found is not None else 0
            problems = reservation_problems(
                key,
                group.instance_type,
                group.availability_zone,
                group.capacity.type is CapacityType.CAPACITY_BLOCK,
                group.capacity.reservation_placement_group,
                group.desired_size,
                found,
                rid,
                running,
            )
            status = Status.FAILED if problems else Status.PASSED
            answer = "; ".join(problems)
            action = "fix the reservation or the group's capacity settings" if problems else ""
            if found is not None and not problems:
                ends = f", ends {found.end:%Y-%m-%d %H:%M} UTC" if found.end else ""
                answer = (
                    f"{found.id}: {found.state} {found.reservation_type}, {found.instance_type} in "
                    f"{found.availability_zone}, {found.available} of {found.total} free{ends}"
                )
                if found.available + running < group.max_size:
                    status = Status.WARNING
                    action = (
                        f"scaling past {found.available + running} nodes (max_size {group.max_size}) will not launch"
                    )
                elif found.end is not None and found.end - ctx.now < datetime.timedelta(days=7):
                    status = Status.WARNING
                    action = "it ends within a week: its instances stop then"
            return Check(
                f"compute.reservation.{group.name}",
                FAMILY,
                title,
                status,
                asked,
                answer,
                action,
                f"{key}.reservation_id",
            )

        checks.append(
            attempt(FAMILY, f"compute.reservation.{group.name}", title, f"{key}.reservation_id", asked, judge)
        )
    return checks


def checks(ctx: Context) -> list[Check]:
    return [*offering_checks(ctx), *quota_checks(ctx), *reservation_checks(ctx)]

"""Capacity search: where and when one GPU group's type and count can be had, and the stack-file edit for each.

Three read-only questions (EC2): which AZs offer the type (DescribeInstanceTypeOfferings), which Capacity Blocks
are for sale for the count and length (DescribeCapacityBlockOfferings: dates, AZ, upfront price), and which
reservations the account already holds for the type (DescribeCapacityReservations, active or scheduled). Buying is
never done: an offering's edit says to purchase it first (`aws ec2 purchase-capacity-block`), by a person.
"""

from __future__ import annotations

import datetime
import json
from dataclasses import asdict, dataclass
from typing import Any

from botocore.exceptions import ClientError

from stacks.schema import GpuNodeGroupSpec, StackConfig
from trainstack.delivery import BadInput
from trainstack.preflight.aws import Account, AskFailed, error_code
from trainstack.preflight.compute import offered_zones, reservation

FAMILY = "capacity"
MAX_BLOCK_DAYS = 182  # EC2 User Guide, "Find and purchase Capacity Blocks": up to 182 days


@dataclass(frozen=True)
class Option:
    """One way to get the group's capacity, and the edit of its `gpu_node_groups` entry that uses it."""

    kind: str  # "on-demand" (an AZ that offers the type), "reservation" (held already), "capacity-block-offering"
    availability_zone: str
    what: str  # one line: dates, price, free instances
    edit: str  # YAML for the group's entry (or the steps before it)


@dataclass(frozen=True)
class Search:
    stack: str
    group: str
    key: str  # gpu_node_groups[i]
    instance_type: str
    count: int
    options: tuple[Option, ...]
    notes: tuple[str, ...]


def _edit(az: str, capacity: dict[str, str] | None = None) -> str:
    lines = [f"availability_zone: {az}"]
    if capacity is not None:
        lines.append("capacity: {" + ", ".join(f"{k}: {v}" for k, v in capacity.items()) + "}")
    return "\n".join(lines)


def search(
    stack: StackConfig, stack_name: str, account: Account, group_name: str, count: int | None, days: int, weeks: int
) -> Search:
    """Every way to get `count` (default: max_size) instances of one GPU group's type: the AZs that offer it, the
    reservations the account holds, and the Capacity Blocks for sale for `days` days within `weeks` weeks."""
    index, group = _group_named(stack, group_name)
    if not 1 <= days <= MAX_BLOCK_DAYS:
        raise BadInput(f"--days {days}: Capacity Blocks last 1 to {MAX_BLOCK_DAYS} days")
    if weeks < 1:
        raise BadInput(f"--weeks {weeks}: search at least 1 week ahead")
    wanted = count if count is not None else group.max_size
    if wanted < 1:
        raise BadInput(f"--count {wanted}: at least 1 instance")
    options: list[Option] = []
    notes: list[str] = []
    options += _on_demand_options(stack, account, group, notes)
    options += _reservation_options(account, group, wanted, notes)
    options += _capacity_block_options(account, group, wanted, days, weeks, notes)
    if not options:
        notes.append(f"nothing found for {wanted} x {group.instance_type}; try another count, length or type")
    return Search(
        stack_name, group.name, f"gpu_node_groups[{index}]", group.instance_type, wanted, tuple(options), tuple(notes)
    )


def _group_named(stack: StackConfig, group_name: str) -> tuple[int, GpuNodeGroupSpec]:
    """The `gpu_node_groups` entry of that name, and its index."""
    index, group = next(((i, g) for i, g in enumerate(stack.gpu_node_groups) if g.name == group_name), (-1, None))
    if group is None:
        names = ", ".join(g.name for g in stack.gpu_node_groups) or "none"
        raise BadInput(f"--group {group_name}: no such gpu_node_groups entry; groups: {names}")
    return index, group


def _on_demand_options(stack: StackConfig, account: Account, group: GpuNodeGroupSpec, notes: list[str]) -> list[Option]:
    """The AZs that offer the type On-Demand (DescribeInstanceTypeOfferings)."""

    class Ctx:  # the minimal context offered_zones needs
        def ask(self, family: str, service: str, operation: str, **params: Any) -> Any:
            return account.ask(family, service, operation, **params)

    in_network = set(stack.network.availability_zones)
    zones: list[str] = []
    try:
        zones = offered_zones(Ctx(), group.instance_type)  # type: ignore[arg-type]
    except AskFailed as error:
        notes.append(f"offerings not read: {error}")
    options: list[Option] = []
    for az in zones:
        outside = "" if az in in_network else f" (add {az} to network.availability_zones too)"
        options.append(
            Option(
                "on-demand",
                az,
                f"{group.instance_type} is offered On-Demand{outside}",
                _edit(az, {"type": "on_demand"}),
            )
        )
    return options


def _reservation_options(account: Account, group: GpuNodeGroupSpec, wanted: int, notes: list[str]) -> list[Option]:
    """The account's active or scheduled reservations of the type, ODCRs and Capacity Blocks alike."""
    held: list[dict[str, Any]] = []
    try:
        held = account.ask(
            FAMILY,
            "ec2",
            "DescribeCapacityReservations",
            Filters=[
                {"Name": "instance-type", "Values": [group.instance_type]},
                {"Name": "state", "Values": ["active", "scheduled"]},
            ],
        ).get("CapacityReservations", [])
    except AskFailed as error:
        notes.append(f"reservations not read: {error}")
    options: list[Option] = []
    for raw in held:
        found = reservation(raw)
        block = found.reservation_type == "capacity-block"
        starts = f", starts {found.start:%Y-%m-%d}" if found.state != "active" and found.start else ""
        ends = f", ends {found.end:%Y-%m-%d}" if found.end else ""
        enough = "" if found.available >= wanted else f" (fewer than the {wanted} wanted)"
        options.append(
            Option(
                "reservation",
                found.availability_zone,
                f"{found.id}: {found.state} {'Capacity Block' if block else 'ODCR'}, {found.available} of "
                f"{found.total} free{enough}{starts}{ends}",
                _edit(
                    found.availability_zone,
                    {
                        "type": "capacity_block" if block else "reservation",
                        "reservation_id": found.id,
                        "reservation_availability_zone": found.availability_zone,
                    },
                ),
            )
        )
    return options


def _capacity_block_options(
    account: Account, group: GpuNodeGroupSpec, wanted: int, days: int, weeks: int, notes: list[str]
) -> list[Option]:
    """The Capacity Blocks for sale for the count and length, each with the purchase to make before the edit."""
    now = datetime.datetime.now(datetime.UTC).replace(microsecond=0)
    offered: list[dict[str, Any]] = []
    try:
        offered = account.ask(
            FAMILY,
            "ec2",
            "DescribeCapacityBlockOfferings",
            InstanceType=group.instance_type,
            InstanceCount=wanted,
            CapacityDurationHours=days * 24,
            StartDateRange=now,
            EndDateRange=now + datetime.timedelta(weeks=weeks, days=days),
        ).get("CapacityBlockOfferings", [])
    except ClientError as error:
        notes.append(f"no Capacity Blocks for {group.instance_type}: {error_code(error)}")
    except AskFailed as error:
        notes.append(f"Capacity Block offerings not read: {error}")
    options: list[Option] = []
    for raw in offered:
        az = raw.get("AvailabilityZone", "")
        start, end = raw.get("StartDate"), raw.get("EndDate")
        price = f"{raw.get('UpfrontFee', '?')} {raw.get('CurrencyCode', 'USD')}"
        offer = raw.get("CapacityBlockOfferingId", "")
        options.append(
            Option(
                "capacity-block-offering",
                az,
                f"{offer}: {raw.get('InstanceCount', wanted)} x {group.instance_type}, {start:%Y-%m-%d %H:%M} to "
                f"{end:%Y-%m-%d %H:%M} UTC, {price} upfront",
                f"# buy it first (trainstack never buys): aws ec2 purchase-capacity-block --capacity-block-offering-id "
                f"{offer} --instance-platform Linux/UNIX\n"
                + _edit(
                    az,
                    {
                        "type": "capacity_block",
                        "reservation_id": "<the cr- id the purchase returns>",
                        "reservation_availability_zone": az,
                    },
                ),
            )
        )
    return options


def render(found: Search, format_: str) -> str:
    if format_ == "json":
        return json.dumps({**asdict(found), "options": [asdict(o) for o in found.options]}, indent=2) + "\n"
    head = f"capacity for {found.key} ({found.group}): {found.count} x {found.instance_type}, stack {found.stack}"
    if format_ == "markdown":
        lines = [f"### {head}", ""]
        for o in found.options:
            lines += [
                f"- **{o.kind}** {o.availability_zone}: {o.what}",
                "",
                "  ```yaml",
                *[f"  {e}" for e in o.edit.splitlines()],
                "  ```",
            ]
        lines += [f"_{n}_" for n in found.notes]
        lines += ["", "_Read-only: nothing was bought or changed._"]
        return "\n".join(lines) + "\n"
    lines = [head, ""]
    for o in found.options:
        lines.append(f"{o.kind:<24} {o.availability_zone:<12} {o.what}")
        lines += [f"    {e}" for e in o.edit.splitlines()]
    lines += [f"note: {n}" for n in found.notes]
    lines += ["", f"Edit {found.key} in the stack file as shown; read-only: nothing was bought or changed."]
    return "\n".join(lines) + "\n"

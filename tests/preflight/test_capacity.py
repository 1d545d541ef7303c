"""The capacity search one question at a time (`trainstack capacity`): its bounds, each kind of option and the edit
it proposes, what a question that cannot be answered leaves as a note, and the three renderings. EC2 answers through
botocore's Stubber (requests and answers checked against the EC2 model; no emulator, so these run in the gate)."""

from __future__ import annotations

import datetime
import json
from typing import Any

import pytest
from botocore.stub import ANY

from stacks.schema import StackConfig
from tests.conftest import stack_config
from tests.preflight import helpers as h
from trainstack.delivery import BadInput
from trainstack.preflight import capacity, compute
from trainstack.preflight.aws import Account
from trainstack.preflight.capacity import Option, Search

pytestmark = pytest.mark.usefixtures("aws_env")

HELD = {
    "Filters": [
        {"Name": "instance-type", "Values": ["p5.48xlarge"]},
        {"Name": "state", "Values": ["active", "scheduled"]},
    ]
}
BLOCKS = {
    "InstanceType": "p5.48xlarge",
    "InstanceCount": ANY,
    "CapacityDurationHours": ANY,
    "StartDateRange": ANY,
    "EndDateRange": ANY,
}


class _Account:
    """Stubbed EC2 for the search: offerings (asked as the compute family), reservations and blocks."""

    def __init__(self, stack: StackConfig) -> None:
        self.offerings_client, self.offerings = h.stubbed("ec2", stack.region)
        self.ec2, self.stub = h.stubbed("ec2", stack.region)
        self.asked: list[dict[str, Any]] = []
        self.ec2.meta.events.register(
            "before-parameter-build.ec2.DescribeCapacityBlockOfferings", lambda params, **_: self.asked.append(params)
        )
        self.account = Account(
            stack.region,
            session=h.session(),
            overrides={(compute.FAMILY, "ec2"): self.offerings_client, (capacity.FAMILY, "ec2"): self.ec2},
            max_attempts=1,
        )

    def offered(self, *zones: str) -> _Account:
        self.offerings.add_response(
            "describe_instance_type_offerings",
            {
                "InstanceTypeOfferings": [
                    {"InstanceType": "p5.48xlarge", "LocationType": "availability-zone", "Location": az} for az in zones
                ]
            },
        )
        return self

    def held(self, *reservations: dict[str, Any]) -> _Account:
        items = [r["CapacityReservations"][0] for r in reservations]
        self.stub.add_response("describe_capacity_reservations", {"CapacityReservations": items}, HELD)
        return self

    def blocks(self, *offerings: dict[str, Any]) -> _Account:
        self.stub.add_response("describe_capacity_block_offerings", {"CapacityBlockOfferings": list(offerings)}, BLOCKS)
        return self

    def denied(self, operation: str, params: dict[str, Any]) -> _Account:
        stub = self.offerings if operation == "describe_instance_type_offerings" else self.stub
        stub.add_client_error(operation, "UnauthorizedOperation", http_status_code=403, expected_params=params)
        return self

    def search(self, stack: StackConfig, group: str = "p5", count: int | None = None, days: int = 7) -> Search:
        found = capacity.search(stack, "staging", self.account, group, count, days, 4)
        self.offerings.assert_no_pending_responses()
        self.stub.assert_no_pending_responses()
        return found


def _block(**fields: Any) -> dict[str, Any]:
    """One CapacityBlockOffering (EC2 API Reference), as DescribeCapacityBlockOfferings lists it."""
    return {
        "CapacityBlockOfferingId": "cb-0123456789abcdef0",
        "InstanceType": "p5.48xlarge",
        "AvailabilityZone": "us-east-1d",
        "InstanceCount": 2,
        "StartDate": datetime.datetime(2026, 12, 10, 11, 30, tzinfo=datetime.UTC),
        "EndDate": datetime.datetime(2026, 12, 17, 11, 30, tzinfo=datetime.UTC),
        "CapacityBlockDurationHours": 168,
        "UpfrontFee": "7398.24",
        "CurrencyCode": "USD",
        "Tenancy": "default",
    } | fields


# --------------------------------------------------------------------------------------------------- bounds


@pytest.mark.parametrize("days", [0, capacity.MAX_BLOCK_DAYS + 1])
def test_a_block_length_ec2_does_not_sell_is_refused(days: int) -> None:
    with pytest.raises(BadInput, match=f"--days {days}: Capacity Blocks last 1 to 182 days"):
        capacity.search(stack_config("staging"), "staging", Account("us-east-1"), "p5", None, days, 4)


@pytest.mark.parametrize("days", [1, capacity.MAX_BLOCK_DAYS])
def test_the_shortest_and_longest_blocks_are_searched(days: int) -> None:
    account = _Account(stack_config("staging")).offered().held().blocks()
    found = account.search(stack_config("staging"), days=days)
    assert account.asked[0]["CapacityDurationHours"] == days * 24
    assert found.notes == ("nothing found for 2 x p5.48xlarge; try another count, length or type",)


def test_a_search_less_than_a_week_ahead_is_refused_and_one_week_is_searched() -> None:
    with pytest.raises(BadInput, match="--weeks 0: search at least 1 week ahead"):
        capacity.search(stack_config("staging"), "staging", Account("us-east-1"), "p5", None, 7, 0)
    account = _Account(stack_config("staging")).offered().held().blocks()
    capacity.search(stack_config("staging"), "staging", account.account, "p5", None, 7, 1)
    (asked,) = account.asked
    assert asked["EndDateRange"] - asked["StartDateRange"] == datetime.timedelta(weeks=1, days=7)


def test_a_count_below_one_is_refused_and_one_is_searched() -> None:
    with pytest.raises(BadInput, match="--count 0: at least 1 instance"):
        capacity.search(stack_config("staging"), "staging", Account("us-east-1"), "p5", 0, 7, 4)
    account = _Account(stack_config("staging")).offered().held().blocks()
    assert account.search(stack_config("staging"), count=1).count == 1
    assert account.asked[0]["InstanceCount"] == 1


def test_the_count_defaults_to_the_groups_max_size_and_the_window_to_weeks_plus_the_length() -> None:
    stack = stack_config("staging")  # p5: max_size 2
    account = _Account(stack).offered().held().blocks()
    found = account.search(stack, days=3)
    assert (found.count, found.group, found.key, found.instance_type, found.stack) == (
        2,
        "p5",
        "gpu_node_groups[0]",
        "p5.48xlarge",
        "staging",
    )
    (asked,) = account.asked
    assert asked["InstanceCount"] == 2 and asked["CapacityDurationHours"] == 72
    assert asked["EndDateRange"] - asked["StartDateRange"] == datetime.timedelta(weeks=4, days=3)
    assert abs(asked["StartDateRange"] - datetime.datetime.now(datetime.UTC)) < datetime.timedelta(minutes=1)
    assert asked["StartDateRange"].microsecond == 0  # from now, to the whole second


def _two_groups() -> StackConfig:
    """staging with a second p5 group of max_size 3 (copied, not validated: the search reads names and sizes)."""
    stack = stack_config("staging")
    first = stack.gpu_node_groups[0]
    return stack.model_copy(
        update={"gpu_node_groups": [first, first.model_copy(update={"name": "p5-b", "max_size": 3})]}
    )


def test_the_group_is_found_by_name_with_its_index() -> None:
    stack = _two_groups()
    found = _Account(stack).offered().held().blocks().search(stack, group="p5-b")
    assert (found.group, found.key, found.count) == ("p5-b", "gpu_node_groups[1]", 3)


def test_an_unknown_group_names_the_groups_there_are() -> None:
    with pytest.raises(BadInput, match=r"^--group p6: no such gpu_node_groups entry; groups: p5, p5-b$"):
        capacity.search(_two_groups(), "staging", Account("us-east-1"), "p6", None, 7, 4)
    bare = stack_config("staging").model_copy(update={"gpu_node_groups": []})
    with pytest.raises(BadInput, match=r"groups: none$"):
        capacity.search(bare, "staging", Account("us-east-1"), "p5", None, 7, 4)


# -------------------------------------------------------------------------------------------------- options


def test_each_az_offering_the_type_is_an_on_demand_option_naming_azs_outside_the_network() -> None:
    stack = stack_config("staging")  # network: us-east-1a, us-east-1b
    found = _Account(stack).offered("us-east-1b", "us-east-1d").held().blocks().search(stack)
    inside, outside = found.options
    assert inside == Option(
        "on-demand",
        "us-east-1b",
        "p5.48xlarge is offered On-Demand",
        "availability_zone: us-east-1b\ncapacity: {type: on_demand}",
    )
    assert outside.availability_zone == "us-east-1d"
    assert outside.what == "p5.48xlarge is offered On-Demand (add us-east-1d to network.availability_zones too)"
    assert found.notes == ()


def test_held_reservations_are_options_with_their_edit() -> None:
    stack = stack_config("staging")
    odcr = h.capacity_reservation("cr-1", "p5.48xlarge", "us-east-1a", count=4, available=2)
    block = h.capacity_reservation(
        "cr-2",
        "p5.48xlarge",
        "us-east-1c",
        count=2,
        state="scheduled",
        reservation_type="capacity-block",
        start=datetime.datetime(2027, 1, 4, tzinfo=datetime.UTC),
        end=datetime.datetime(2027, 1, 11, tzinfo=datetime.UTC),
    )
    found = _Account(stack).offered().held(odcr, block).blocks().search(stack)
    first, second = found.options
    assert (first.kind, first.availability_zone) == ("reservation", "us-east-1a")
    assert first.what == "cr-1: active ODCR, 2 of 4 free"
    assert first.edit == (
        "availability_zone: us-east-1a\n"
        "capacity: {type: reservation, reservation_id: cr-1, reservation_availability_zone: us-east-1a}"
    )
    assert second.what == "cr-2: scheduled Capacity Block, 2 of 2 free, starts 2027-01-04, ends 2027-01-11"
    assert "capacity: {type: capacity_block, reservation_id: cr-2, reservation_availability_zone: us-east-1c}" in (
        second.edit
    )


def test_a_reservation_with_fewer_free_than_wanted_says_so_and_one_with_exactly_enough_does_not() -> None:
    stack = stack_config("staging")  # wants 2
    short = h.capacity_reservation("cr-1", "p5.48xlarge", "us-east-1a", count=4, available=1)
    enough = h.capacity_reservation(
        "cr-2", "p5.48xlarge", "us-east-1a", count=2, start=datetime.datetime(2026, 11, 1, tzinfo=datetime.UTC)
    )
    first, second = _Account(stack).offered().held(short, enough).blocks().search(stack).options
    assert first.what == "cr-1: active ODCR, 1 of 4 free (fewer than the 2 wanted)"
    assert second.what == "cr-2: active ODCR, 2 of 2 free"  # active: its start is past, not said


def test_a_capacity_block_for_sale_is_an_option_to_buy_first() -> None:
    stack = stack_config("staging")
    (found,) = _Account(stack).offered().held().blocks(_block()).search(stack).options
    assert (found.kind, found.availability_zone) == ("capacity-block-offering", "us-east-1d")
    assert found.what == (
        "cb-0123456789abcdef0: 2 x p5.48xlarge, 2026-12-10 11:30 to 2026-12-17 11:30 UTC, 7398.24 USD upfront"
    )
    assert found.edit.splitlines() == [
        "# buy it first (trainstack never buys): aws ec2 purchase-capacity-block --capacity-block-offering-id "
        "cb-0123456789abcdef0 --instance-platform Linux/UNIX",
        "availability_zone: us-east-1d",
        "capacity: {type: capacity_block, reservation_id: <the cr- id the purchase returns>, "
        "reservation_availability_zone: us-east-1d}",
    ]


def test_a_block_offering_without_count_or_price_reads_as_the_wanted_count_and_an_unknown_fee() -> None:
    stack = stack_config("staging")
    offering = {k: v for k, v in _block().items() if k not in ("InstanceCount", "UpfrontFee", "CurrencyCode")}
    (found,) = _Account(stack).offered().held().blocks(offering).search(stack, count=1).options
    assert found.what.startswith("cb-0123456789abcdef0: 1 x p5.48xlarge,") and found.what.endswith("? USD upfront")


def test_questions_that_cannot_be_answered_are_notes_and_the_rest_still_searched() -> None:
    stack = stack_config("staging")
    account = _Account(stack).offered("us-east-1a")
    account.denied("describe_capacity_reservations", HELD).denied("describe_capacity_block_offerings", BLOCKS)
    found = account.search(stack)
    assert [o.kind for o in found.options] == ["on-demand"]
    assert found.notes == (
        "reservations not read: ec2:DescribeCapacityReservations was denied (UnauthorizedOperation); give the caller "
        "read access to it (AWS's ReadOnlyAccess policy covers every call preflight makes)",
        "Capacity Block offerings not read: ec2:DescribeCapacityBlockOfferings was denied (UnauthorizedOperation); "
        "give the caller read access to it (AWS's ReadOnlyAccess policy covers every call preflight makes)",
    )


def test_unread_offerings_are_a_note_and_a_type_without_blocks_says_so() -> None:
    stack = stack_config("staging")
    account = _Account(stack).denied("describe_instance_type_offerings", {"LocationType": ANY, "Filters": ANY})
    account.held(h.capacity_reservation("cr-1", "p5.48xlarge", "us-east-1a", count=2))
    account.stub.add_client_error("describe_capacity_block_offerings", "InvalidParameterValue", expected_params=BLOCKS)
    found = account.search(stack)
    assert [o.kind for o in found.options] == ["reservation"]
    assert found.notes[0].startswith("offerings not read: ec2:DescribeInstanceTypeOfferings was denied")
    assert found.notes[1] == "no Capacity Blocks for p5.48xlarge: InvalidParameterValue"
    assert len(found.notes) == 2  # something was found: no "nothing found"


# ------------------------------------------------------------------------------------------------- rendering


FOUND = Search(
    "staging",
    "p5",
    "gpu_node_groups[0]",
    "p5.48xlarge",
    2,
    (Option("on-demand", "us-east-1a", "offered", "availability_zone: us-east-1a\ncapacity: {type: on_demand}"),),
    ("a note",),
)


def test_the_text_rendering_lists_each_option_with_its_edit_indented() -> None:
    assert capacity.render(FOUND, "text").splitlines() == [
        "capacity for gpu_node_groups[0] (p5): 2 x p5.48xlarge, stack staging",
        "",
        f"{'on-demand':<24} {'us-east-1a':<12} offered",
        "    availability_zone: us-east-1a",
        "    capacity: {type: on_demand}",
        "note: a note",
        "",
        "Edit gpu_node_groups[0] in the stack file as shown; read-only: nothing was bought or changed.",
    ]


def test_the_markdown_rendering_puts_each_edit_in_a_yaml_block() -> None:
    assert capacity.render(FOUND, "markdown").splitlines() == [
        "### capacity for gpu_node_groups[0] (p5): 2 x p5.48xlarge, stack staging",
        "",
        "- **on-demand** us-east-1a: offered",
        "",
        "  ```yaml",
        "  availability_zone: us-east-1a",
        "  capacity: {type: on_demand}",
        "  ```",
        "_a note_",
        "",
        "_Read-only: nothing was bought or changed._",
    ]


def test_the_json_rendering_is_every_field() -> None:
    text = capacity.render(FOUND, "json")
    assert text.endswith("}\n") and text.splitlines()[1] == '  "stack": "staging",'  # indented by two
    assert json.loads(text) == {
        "stack": "staging",
        "group": "p5",
        "key": "gpu_node_groups[0]",
        "instance_type": "p5.48xlarge",
        "count": 2,
        "options": [
            {
                "kind": "on-demand",
                "availability_zone": "us-east-1a",
                "what": "offered",
                "edit": "availability_zone: us-east-1a\ncapacity: {type: on_demand}",
            }
        ],
        "notes": ["a note"],
    }

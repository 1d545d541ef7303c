"""A day-2 run: the stack's own nodes already in its reservation count as the group's, not as taken (Stubber only,
no emulator: moto 5.2 does not record an instance's capacity reservation)."""

from __future__ import annotations

import pytest

from tests.conftest import stack_config
from tests.preflight import helpers as h
from trainstack.preflight import compute
from trainstack.preflight.aws import Account
from trainstack.preflight.context import Context


@pytest.mark.usefixtures("aws_env")
def test_only_this_stacks_running_nodes_in_that_reservation_are_counted() -> None:
    stack = stack_config("prod")
    ec2, stub = h.stubbed("ec2", stack.region)

    def node(reservation: str | None) -> dict[str, object]:
        found: dict[str, object] = {"InstanceId": "i-0123456789abcdef0", "InstanceType": "p5.48xlarge"}
        return found | ({"CapacityReservationId": reservation} if reservation else {})

    stub.add_response(
        "describe_instances",
        {"Reservations": [{"Instances": [node("cr-0a1b2c3d4e5f67890"), node("cr-0ffff"), node(None)]}]},
        {
            "Filters": [
                {"Name": "tag:eks:cluster-name", "Values": [stack.name]},
                {"Name": "instance-state-name", "Values": ["pending", "running"]},
            ]
        },
    )
    account = Account(stack.region, session=h.session(), overrides={(compute.FAMILY, "ec2"): ec2})
    ctx = Context(stack, "prod", account, "444455556666", "arn:aws:sts::444455556666:x", None, h.NOW)
    assert compute.stack_nodes_in(ctx, "cr-0a1b2c3d4e5f67890") == 1
    stub.assert_no_pending_responses()

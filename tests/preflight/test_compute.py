"""The compute family one question at a time: offerings, vCPU quotas and reservations, each judged from a stubbed
account (botocore's Stubber checks every request and answer against the EC2 and Service Quotas models; no emulator,
so these run in the gate). An unexpected call fails: a family or service without a stubbed client has no
credentials to ask with (`aws_env`)."""

from __future__ import annotations

import datetime
from typing import Any

import pytest
from botocore.exceptions import ClientError
from botocore.stub import ANY

from stacks.schema import StackConfig
from tests.conftest import edited_config, stack_config
from tests.preflight import helpers as h
from trainstack.preflight import compute
from trainstack.preflight.aws import Account, AskFailed
from trainstack.preflight.context import Context
from trainstack.preflight.model import Check, Status

pytestmark = pytest.mark.usefixtures("aws_env")

STANDARD = "Running On-Demand Standard (A, C, D, H, I, M, R, T, Z) instances"
G_SPOT = "All G and VT Spot Instance Requests"


def _context(stack: StackConfig, **clients: Any) -> Context:
    """A context whose compute calls go to the stubbed clients given: `ec2`, `quotas`, `reservations`. (A stubbed
    answer of an operation that another answer of the same operation in the queue names parameters for must name
    its own: KeyedStubber takes one without parameters for any call.)"""
    names = {"ec2": (compute.FAMILY, "ec2"), "quotas": (compute.FAMILY, "service-quotas")}
    names["reservations"] = (compute.RESERVATIONS, "ec2")
    overrides = {names[k]: client for k, client in clients.items()}
    account = Account(stack.region, session=h.session(), overrides=overrides, max_attempts=1)
    return Context(stack, stack.name, account, "444455556666", "arn:aws:sts::444455556666:x", None, h.NOW)


def _by_id(found: list[Check], id_: str) -> Check:
    return next(c for c in found if c.id == id_)


def _offerings(instance_type: str, *zones: str) -> dict[str, Any]:
    """DescribeInstanceTypeOfferings (EC2 API Reference, InstanceTypeOffering)."""
    return {
        "InstanceTypeOfferings": [
            {"InstanceType": instance_type, "LocationType": "availability-zone", "Location": az} for az in zones
        ]
    }


def _offered(stub: h.KeyedStubber, instance_type: str, *zones: str) -> None:
    stub.add_response(
        "describe_instance_type_offerings",
        _offerings(instance_type, *zones),
        {"LocationType": "availability-zone", "Filters": [{"Name": "instance-type", "Values": [instance_type]}]},
    )


def _types(**vcpus: int) -> dict[str, Any]:
    """DescribeInstanceTypes (EC2 API Reference, InstanceTypeInfo / VCpuInfo); keys with `_` for `.`."""
    return {
        "InstanceTypes": [
            {"InstanceType": t.replace("_", "."), "VCpuInfo": {"DefaultVCpus": n}} for t, n in vcpus.items()
        ]
    }


def _instance(instance_type: str, *, cluster: str | None = None, lifecycle: str | None = None) -> dict[str, Any]:
    """One Instance as DescribeInstances lists it (EC2 API Reference, Instance)."""
    found: dict[str, Any] = {"InstanceId": "i-0123456789abcdef0", "InstanceType": instance_type}
    if cluster is not None:
        found["Tags"] = [{"Key": "eks:cluster-name", "Value": cluster}, {"Key": "team", "Value": "research"}]
    if lifecycle is not None:
        found["InstanceLifecycle"] = lifecycle
    return found


RUNNING = {"Filters": [{"Name": "instance-state-name", "Values": ["pending", "running"]}]}


# ------------------------------------------------------------------------------------------------ offerings


def test_offered_zones_are_each_az_once_in_order() -> None:
    stack = stack_config("dev")
    ec2, stub = h.stubbed("ec2", stack.region)
    _offered(stub, "g5.2xlarge", "us-east-1c", "us-east-1a", "us-east-1c")
    assert compute.offered_zones(_context(stack, ec2=ec2), "g5.2xlarge") == ["us-east-1a", "us-east-1c"]
    stub.assert_no_pending_responses()


def test_a_group_type_offered_in_its_az_passes_and_the_system_type_must_be_in_every_network_az() -> None:
    stack = stack_config("dev")  # g5 in us-east-1a; system m7i.large; network us-east-1a and us-east-1b
    ec2, stub = h.stubbed("ec2", stack.region)
    _offered(stub, "g5.2xlarge", "us-east-1a", "us-east-1d")
    _offered(stub, "m7i.large", "us-east-1a", "us-east-1c")
    found = compute.offering_checks(_context(stack, ec2=ec2))
    assert [c.id for c in found] == ["compute.offering.g5", "compute.offering.system"]
    group, system = found
    assert (group.status, group.answer, group.action) == (Status.PASSED, "offered in us-east-1a, us-east-1d", "")
    assert group.key == "gpu_node_groups[0].availability_zone" and group.family == "compute"
    assert group.asked == "ec2:DescribeInstanceTypeOfferings g5.2xlarge"
    assert system.status is Status.FAILED and system.key == "eks.system_node_group.instance_type"
    assert "m7i.large is not offered in us-east-1b" in system.answer and "us-east-1a, us-east-1c" in system.answer
    assert system.action == "pick a system type offered in every AZ of network.availability_zones"
    assert system.asked == "ec2:DescribeInstanceTypeOfferings m7i.large"
    stub.assert_no_pending_responses()


def test_the_system_type_offered_everywhere_passes() -> None:
    stack = stack_config("dev")
    ec2, stub = h.stubbed("ec2", stack.region)
    _offered(stub, "g5.2xlarge", "us-east-1a")
    _offered(stub, "m7i.large", "us-east-1a", "us-east-1b")
    system = compute.offering_checks(_context(stack, ec2=ec2))[1]
    assert (system.status, system.answer, system.action) == (Status.PASSED, "offered in us-east-1a, us-east-1b", "")


def test_a_group_type_not_in_its_az_fails_with_where_to_move_it() -> None:
    stack = stack_config("dev")
    ec2, stub = h.stubbed("ec2", stack.region)
    _offered(stub, "g5.2xlarge", "us-east-1b")
    _offered(stub, "m7i.large", "us-east-1a", "us-east-1b")
    group = compute.offering_checks(_context(stack, ec2=ec2))[0]
    assert group.status is Status.FAILED and "is not offered in us-east-1a" in group.answer
    assert group.action == "move the group or change its type (or search: preflight --capacity)"


def _two_groups(system: str = "m7i.large") -> StackConfig:
    def edit(c: dict[str, Any]) -> None:
        second = {**c["gpu_node_groups"][0], "name": "g5-b", "availability_zone": "us-east-1b"}
        c["gpu_node_groups"].append(second)
        c["eks"]["system_node_group"]["instance_type"] = system

    return edited_config("dev", edit)


def test_a_type_shared_by_two_groups_is_asked_once_and_judged_per_group() -> None:
    stack = _two_groups()
    ec2, stub = h.stubbed("ec2", stack.region)
    _offered(stub, "g5.2xlarge", "us-east-1b")  # one answer only: a second question would find the queue empty
    _offered(stub, "m7i.large", "us-east-1a", "us-east-1b")
    found = compute.offering_checks(_context(stack, ec2=ec2))
    assert [(c.id, c.status) for c in found] == [
        ("compute.offering.g5", Status.FAILED),
        ("compute.offering.g5-b", Status.PASSED),
        ("compute.offering.system", Status.PASSED),
    ]
    assert found[1].key == "gpu_node_groups[1].availability_zone"
    stub.assert_no_pending_responses()


def test_offerings_that_cannot_be_read_are_an_error_per_check() -> None:
    stack = stack_config("dev")
    ec2, stub = h.stubbed("ec2", stack.region)
    for _ in range(2):
        stub.add_client_error("describe_instance_type_offerings", "UnauthorizedOperation", http_status_code=403)
    found = compute.offering_checks(_context(stack, ec2=ec2))
    assert [c.status for c in found] == [Status.ERROR, Status.ERROR]
    assert all("DescribeInstanceTypeOfferings was denied" in c.answer for c in found)


# --------------------------------------------------------------------------------------------------- quotas


def test_vcpus_are_asked_only_for_types_there_are() -> None:
    stack = stack_config("dev")
    ec2, stub = h.stubbed("ec2", stack.region)
    assert compute.vcpus_of(_context(stack, ec2=ec2), set()) == {}  # nothing asked: the stub has no answer
    stub.add_response(
        "describe_instance_types", _types(m7i_large=2, g5_xlarge=4), {"InstanceTypes": ["g5.xlarge", "m7i.large"]}
    )
    assert compute.vcpus_of(_context(stack, ec2=ec2), {"m7i.large", "g5.xlarge"}) == {"m7i.large": 2, "g5.xlarge": 4}


def test_running_elsewhere_counts_other_tenants_by_quota_and_spot() -> None:
    stack = stack_config("dev")
    ec2, stub = h.stubbed("ec2", stack.region)
    instances = [
        _instance("m7i.xlarge"),  # On-Demand Standard
        _instance("m7i.xlarge", cluster="another-cluster"),  # another cluster's node: counted
        _instance("g5.xlarge", lifecycle="spot"),  # Spot G
        _instance("g5.2xlarge", cluster=stack.name),  # this stack's own node: not counted
        _instance("inf2.xlarge"),  # a quota trainstack does not judge
        _instance("p5.48xlarge", lifecycle="capacity-block"),  # in a block: no vCPU quota counted
        _instance("p4d.24xlarge", lifecycle="scheduled"),
    ]
    stub.add_response("describe_instances", {"Reservations": [{"Instances": instances[:3]}, {}]}, RUNNING)
    stub.add_response("describe_instances", {"Reservations": [{"Instances": instances[3:]}]}, RUNNING)
    # Two pages would be one answer to the paginator; two calls here, two answers: ask twice, sum by hand.
    stub.add_response(
        "describe_instance_types", _types(g5_xlarge=4, m7i_xlarge=4), {"InstanceTypes": ["g5.xlarge", "m7i.xlarge"]}
    )
    ctx = _context(stack, ec2=ec2)
    assert compute.running_elsewhere(ctx) == {("Standard", False): 8, ("G and VT", True): 4}
    assert compute.running_elsewhere(ctx) == {}  # only this stack's, unjudged and launched-into-capacity ones
    stub.assert_no_pending_responses()


def test_a_type_ec2_does_not_describe_counts_no_vcpus() -> None:
    stack = stack_config("dev")
    ec2, stub = h.stubbed("ec2", stack.region)
    stub.add_response("describe_instances", {"Reservations": [{"Instances": [_instance("m7i.xlarge")]}]}, RUNNING)
    stub.add_response("describe_instance_types", {"InstanceTypes": []}, {"InstanceTypes": ["m7i.xlarge"]})
    assert compute.running_elsewhere(_context(stack, ec2=ec2)) == {("Standard", False): 0}


def test_the_applied_quota_value_is_read_and_a_never_applied_one_is_the_default() -> None:
    stack = stack_config("dev")
    quotas, stub = h.stubbed("service-quotas", stack.region)
    stub.add_response(
        "get_service_quota", h.quota("L-1216C47A", STANDARD, 640), {"ServiceCode": "ec2", "QuotaCode": "L-1216C47A"}
    )
    stub.add_client_error(
        "get_service_quota",
        "NoSuchResourceException",
        http_status_code=404,
        expected_params={"ServiceCode": "ec2", "QuotaCode": "L-3819A6DF"},
    )
    stub.add_response(
        "get_aws_default_service_quota",
        h.quota("L-3819A6DF", G_SPOT, 0),
        {"ServiceCode": "ec2", "QuotaCode": "L-3819A6DF"},
    )
    ctx = _context(stack, quotas=quotas)
    assert compute.quota_value(ctx, "L-1216C47A") == (640.0, STANDARD)
    assert compute.quota_value(ctx, "L-3819A6DF") == (0.0, G_SPOT)
    stub.assert_no_pending_responses()


def test_any_other_quota_error_is_not_taken_for_a_default() -> None:
    stack = stack_config("dev")
    quotas, stub = h.stubbed("service-quotas", stack.region)
    stub.add_client_error("get_service_quota", "ServiceException", http_status_code=500)
    with pytest.raises(ClientError, match="ServiceException"):
        compute.quota_value(_context(stack, quotas=quotas), "L-1216C47A")


def _quota_account(stack: StackConfig, others: list[dict[str, Any]], quotas: dict[str, tuple[str, float]]) -> Context:
    """dev's account: the system type's vCPUs, `others` running, and each quota code's (name, value)."""
    ec2, stub = h.stubbed("ec2", stack.region)
    stub.add_response("describe_instance_types", _types(m7i_large=2), {"InstanceTypes": ["m7i.large"]})
    stub.add_response("describe_instances", {"Reservations": [{"Instances": others}]}, RUNNING)
    if others:
        stub.add_response(
            "describe_instance_types",
            _types(m7i_xlarge=4, g5_xlarge=4),
            {"InstanceTypes": sorted({i["InstanceType"] for i in others})},
        )
    client, quota_stub = h.stubbed("service-quotas", stack.region)
    for code, (name, value) in quotas.items():
        quota_stub.add_response(
            "get_service_quota", h.quota(code, name, value), {"ServiceCode": "ec2", "QuotaCode": code}
        )
    return _context(stack, ec2=ec2, quotas=client)


def test_each_quota_is_judged_with_the_on_demand_or_spot_quota_it_counts_against() -> None:
    stack = stack_config("dev")  # 2 x g5.2xlarge Spot (16 vCPUs of G Spot), 3 x m7i.large system (6 Standard)
    others = [_instance("m7i.xlarge"), _instance("g5.xlarge", lifecycle="spot")]
    ctx = _quota_account(stack, others, {"L-3819A6DF": (G_SPOT, 20), "L-1216C47A": (STANDARD, 9)})
    found = compute.quota_checks(ctx)
    assert [c.id for c in found] == ["compute.quota.g-and-vt-spot", "compute.quota.standard"]
    spot, standard = found
    assert spot.status is Status.PASSED and spot.title == f"'{G_SPOT}' covers the stack"
    assert spot.answer == "20 vCPUs; the stack needs 16 at max size, 4 run outside it" and spot.action == ""
    assert spot.key == "gpu_node_groups[0]" and spot.asked.startswith("service-quotas:GetServiceQuota ec2 L-3819A6DF")
    # 6 for the system nodes and 4 running elsewhere: 10 > 9.
    assert standard.status is Status.FAILED and "request 10" in standard.answer and "4 already run" in standard.answer
    assert standard.key == "eks.system_node_group" and standard.action.startswith("request the increase")


def test_a_quota_that_holds_exactly_what_is_needed_passes() -> None:
    stack = stack_config("dev")
    ctx = _quota_account(stack, [], {"L-3819A6DF": (G_SPOT, 16), "L-1216C47A": (STANDARD, 6)})
    found = compute.quota_checks(ctx)
    assert [c.status for c in found] == [Status.PASSED, Status.PASSED]
    assert found[1].answer == "6 vCPUs; the stack needs 6 at max size, 0 run outside it"


def test_an_on_demand_group_is_judged_by_the_on_demand_quota() -> None:
    stack = edited_config("dev", lambda c: c["gpu_node_groups"][0]["capacity"].update(type="on_demand"))
    ctx = _quota_account(
        stack, [], {"L-DB2E81BA": ("Running On-Demand G and VT instances", 16), "L-1216C47A": (STANDARD, 6)}
    )
    assert [(c.id, c.status) for c in compute.quota_checks(ctx)] == [
        ("compute.quota.g-and-vt", Status.PASSED),
        ("compute.quota.standard", Status.PASSED),
    ]


def test_a_system_type_ec2_does_not_describe_adds_no_vcpus_to_its_quota() -> None:
    stack = stack_config("dev")
    ec2, stub = h.stubbed("ec2", stack.region)
    stub.add_response("describe_instance_types", {"InstanceTypes": []}, {"InstanceTypes": ["m7i.large"]})
    stub.add_response("describe_instances", {"Reservations": []}, RUNNING)
    quotas, quota_stub = h.stubbed("service-quotas", stack.region)
    for code, name in (("L-3819A6DF", G_SPOT), ("L-1216C47A", STANDARD)):
        quota_stub.add_response("get_service_quota", h.quota(code, name, 16), {"ServiceCode": "ec2", "QuotaCode": code})
    standard = compute.quota_checks(_context(stack, ec2=ec2, quotas=quotas))[1]
    assert standard.answer == "16 vCPUs; the stack needs 0 at max size, 0 run outside it"


def test_a_quota_code_aws_names_differently_is_an_error_not_a_verdict() -> None:
    stack = stack_config("dev")
    ctx = _quota_account(stack, [], {"L-3819A6DF": ("All P Spot Instance Requests", 100_000), "L-1216C47A": ("", 6)})
    spot, standard = compute.quota_checks(ctx)
    assert spot.status is Status.ERROR and spot.id == "compute.quota.g-and-vt-spot"
    assert "is 'All P Spot Instance Requests' in this account, not 'All G and VT Spot" in spot.answer
    assert spot.action == "report it; check the quota in the Service Quotas console"
    assert standard.status is Status.PASSED  # a quota AWS returns without a name is judged by its value


def test_instances_that_cannot_be_read_leave_the_quotas_unchecked() -> None:
    stack = stack_config("dev")
    ec2, stub = h.stubbed("ec2", stack.region)
    stub.add_response("describe_instance_types", _types(m7i_large=2))
    stub.add_client_error("describe_instances", "UnauthorizedOperation", http_status_code=403)
    (found,) = compute.quota_checks(_context(stack, ec2=ec2))
    assert (found.id, found.status, found.family) == ("compute.quota", Status.ERROR, "compute")
    assert found.asked == "ec2:DescribeInstanceTypes, ec2:DescribeInstances"
    assert "DescribeInstances was denied" in found.answer and found.action.startswith("fix access")


def test_an_unexpected_failure_before_the_quotas_is_not_hidden() -> None:
    stack = stack_config("dev")
    ec2, stub = h.stubbed("ec2", stack.region)
    stub.add_client_error("describe_instance_types", "InvalidInstanceType", http_status_code=400)
    with pytest.raises(ClientError, match="InvalidInstanceType"):
        compute.quota_checks(_context(stack, ec2=ec2))


# ----------------------------------------------------------------------------------------------- reservations


def test_a_reservation_answer_missing_optional_fields_reads_as_ec2_defaults() -> None:
    found = compute.reservation({"CapacityReservationId": "cr-1", "StartDate": "2026-12-01", "EndDate": h.NOW})
    assert (found.id, found.instance_type, found.availability_zone, found.state) == ("cr-1", "", "", "")
    assert (found.reservation_type, found.tenancy, found.platform) == ("default", "default", "")
    assert (found.total, found.available, found.start, found.end) == (0, 0, None, h.NOW)
    assert found.placement_group_arn is None


def test_a_reservation_answer_is_read_field_by_field() -> None:
    raw = h.capacity_reservation(
        "cr-2",
        "p5.48xlarge",
        "us-east-1a",
        count=4,
        available=3,
        state="scheduled",
        reservation_type="capacity-block",
        end=h.NOW,
        placement_group="pg-1",
    )["CapacityReservations"][0]
    found = compute.reservation(raw)
    assert (found.instance_type, found.availability_zone, found.state) == ("p5.48xlarge", "us-east-1a", "scheduled")
    assert (found.reservation_type, found.total, found.available) == ("capacity-block", 4, 3)
    assert (found.tenancy, found.platform) == ("default", "Linux/UNIX")
    assert found.start == datetime.datetime(2026, 11, 1, tzinfo=datetime.UTC) and found.end == h.NOW
    assert found.placement_group_arn == "arn:aws:ec2:us-east-1:444455556666:placement-group/pg-1"


@pytest.mark.parametrize("code", ["InvalidCapacityReservationId.NotFound", "InvalidCapacityReservationId.Malformed"])
def test_an_unknown_or_malformed_reservation_id_is_none(code: str) -> None:
    stack = stack_config("prod")
    ec2, stub = h.stubbed("ec2", stack.region)
    stub.add_client_error("describe_capacity_reservations", code, expected_params={"CapacityReservationIds": ["cr-9"]})
    assert compute.find_reservation(_context(stack, reservations=ec2), "cr-9") is None


def test_an_empty_answer_is_no_reservation_and_other_errors_are_raised() -> None:
    stack = stack_config("prod")
    ec2, stub = h.stubbed("ec2", stack.region)
    stub.add_response("describe_capacity_reservations", {"CapacityReservations": []})
    stub.add_client_error("describe_capacity_reservations", "InternalError", http_status_code=500)
    ctx = _context(stack, reservations=ec2)
    assert compute.find_reservation(ctx, "cr-9") is None
    with pytest.raises(ClientError, match="InternalError"):
        compute.find_reservation(ctx, "cr-9")


def test_groups_without_a_reservation_ask_nothing() -> None:
    assert compute.reservation_checks(_context(stack_config("dev"))) == []  # spot
    assert compute.reservation_checks(_context(stack_config("staging"))) == []  # on-demand


def _judged(stack: StackConfig, held: dict[str, Any] | None, running: int = 0) -> Check:
    """prod's one reservation check, EC2 answering `held` (None: no such reservation) and `running` of the stack's
    own nodes in it."""
    group = stack.gpu_node_groups[0]
    rid = str(group.capacity.reservation_id)
    reservations, stub = h.stubbed("ec2", stack.region)
    ec2, nodes = h.stubbed("ec2", stack.region)
    if held is None:
        stub.add_client_error("describe_capacity_reservations", "InvalidCapacityReservationId.NotFound")
    else:
        stub.add_response("describe_capacity_reservations", held, {"CapacityReservationIds": [rid]})
        node = {"InstanceId": "i-0123456789abcdef0", "InstanceType": group.instance_type, "CapacityReservationId": rid}
        nodes.add_response("describe_instances", {"Reservations": [{"Instances": [node] * running}]})
    (found,) = compute.reservation_checks(_context(stack, ec2=ec2, reservations=reservations))
    stub.assert_no_pending_responses()
    nodes.assert_no_pending_responses()
    return found


def _held(stack: StackConfig, **kwargs: Any) -> dict[str, Any]:
    group = stack.gpu_node_groups[0]
    return h.capacity_reservation(
        str(group.capacity.reservation_id), group.instance_type, group.availability_zone, **kwargs
    )


def test_a_reservation_that_holds_the_group_at_max_size_passes_and_says_what_it_is() -> None:
    stack = stack_config("prod")  # p5-train: 16 x p5.48xlarge, min = desired = max = 16
    found = _judged(stack, _held(stack, count=16))
    assert (found.id, found.family, found.status, found.action) == (
        "compute.reservation.p5-train",
        "compute",
        Status.PASSED,
        "",
    )
    assert found.answer == "cr-0a1b2c3d4e5f67890: active default, p5.48xlarge in us-east-1a, 16 of 16 free"
    assert found.title == "reservation cr-0a1b2c3d4e5f67890 can hold group p5-train"
    assert found.key == "gpu_node_groups[0].capacity.reservation_id"
    assert found.asked == "ec2:DescribeCapacityReservations cr-0a1b2c3d4e5f67890"


def test_a_missing_reservation_fails_without_asking_for_its_nodes() -> None:
    found = _judged(stack_config("prod"), None)
    assert found.status is Status.FAILED and "no such reservation" in found.answer
    assert found.action == "fix the reservation or the group's capacity settings"


def test_the_stacks_own_nodes_in_the_reservation_count_as_the_groups() -> None:
    stack = stack_config("prod")
    found = _judged(stack, _held(stack, count=16, available=4), running=12)  # a day-2 run: 12 already in it
    assert found.status is Status.PASSED and "4 of 16 free" in found.answer


def test_room_for_desired_but_not_max_size_is_a_warning_and_exactly_max_is_not() -> None:
    stack = edited_config("prod", lambda c: c["gpu_node_groups"][0].update(min_size=0, desired_size=2, max_size=16))
    short = _judged(stack, _held(stack, count=16, available=14), running=1)
    assert short.status is Status.WARNING and short.action == "scaling past 15 nodes (max_size 16) will not launch"
    assert _judged(stack, _held(stack, count=16, available=14), running=2).status is Status.PASSED


def test_a_reservation_ending_within_a_week_is_a_warning() -> None:
    stack = stack_config("prod")
    ends = h.NOW + datetime.timedelta(days=7) - datetime.timedelta(seconds=1)
    soon = _judged(stack, _held(stack, count=16, end=ends))
    assert soon.status is Status.WARNING and soon.action == "it ends within a week: its instances stop then"
    assert soon.answer.endswith(", 16 of 16 free, ends 2026-12-08 11:59 UTC")
    later = _judged(stack, _held(stack, count=16, end=h.NOW + datetime.timedelta(days=7)))
    assert later.status is Status.PASSED and later.action == ""


def test_a_capacity_block_group_is_titled_as_one_and_judged_as_one() -> None:
    def edit(c: dict[str, Any]) -> None:
        c["gpu_node_groups"][0]["capacity"]["type"] = "capacity_block"

    stack = edited_config("prod", edit)
    block = _judged(stack, _held(stack, count=16, reservation_type="capacity-block"))
    assert block.title == "Capacity Block cr-0a1b2c3d4e5f67890 can hold group p5-train"
    assert block.status is Status.PASSED and "active capacity-block" in block.answer
    odcr = _judged(stack, _held(stack, count=16))
    assert odcr.status is Status.FAILED and "set capacity.type to reservation" in odcr.answer


def test_a_reservation_that_cannot_be_read_is_an_error() -> None:
    stack = stack_config("prod")
    reservations, stub = h.stubbed("ec2", stack.region)
    stub.add_client_error("describe_capacity_reservations", "UnauthorizedOperation", http_status_code=403)
    (found,) = compute.reservation_checks(_context(stack, reservations=reservations))
    assert found.status is Status.ERROR and found.key == "gpu_node_groups[0].capacity.reservation_id"


def test_every_family_question_is_asked_in_order() -> None:
    stack = stack_config("prod")
    ec2, stub = h.stubbed("ec2", stack.region)
    _offered(stub, "p5.48xlarge", "us-east-1a")
    _offered(stub, "m7i.2xlarge", "us-east-1a", "us-east-1b", "us-east-1c")
    stub.add_response("describe_instance_types", _types(m7i_2xlarge=8), {"InstanceTypes": ["m7i.2xlarge"]})
    stub.add_response("describe_instances", {"Reservations": []}, RUNNING)
    stub.add_response("describe_instances", {"Reservations": []}, {"Filters": ANY})
    quotas, quota_stub = h.stubbed("service-quotas", stack.region)
    quota_stub.add_response("get_service_quota", h.quota("L-1216C47A", STANDARD, 48))
    reservations, reservation_stub = h.stubbed("ec2", stack.region)
    reservation_stub.add_response("describe_capacity_reservations", _held(stack, count=16))
    found = compute.checks(_context(stack, ec2=ec2, quotas=quotas, reservations=reservations))
    assert [(c.id, c.status) for c in found] == [
        ("compute.offering.p5-train", Status.PASSED),
        ("compute.offering.system", Status.PASSED),
        ("compute.quota.standard", Status.PASSED),
        ("compute.reservation.p5-train", Status.PASSED),
    ]


def test_only_ask_failures_become_unchecked() -> None:
    unchecked = compute._unchecked("compute.quota", "t", "asked", AskFailed("denied"))
    assert (unchecked.status, unchecked.answer, unchecked.asked) == (Status.ERROR, "denied", "asked")
    with pytest.raises(KeyError):
        compute._unchecked("compute.quota", "t", "asked", KeyError("x"))

"""Preflight's network checks one at a time, against EC2 answers from botocore's Stubber (each request and answer
held to EC2's service model), no emulator: the existing VPC and its CIDRs, each private subnet, the S3 endpoint."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError

from stacks.account_rules import Subnet
from stacks.schema import StackConfig
from tests.conftest import edited_config, stack_config
from tests.preflight import helpers as h
from trainstack.preflight import network
from trainstack.preflight.aws import Account
from trainstack.preflight.context import Context
from trainstack.preflight.model import Status

pytestmark = pytest.mark.usefixtures("aws_env")

VPC = "vpc-0a1b2c3d4e5f67890"
SUBNETS = {"us-east-1a": "subnet-0a1b2c3d4e5f67890", "us-east-1b": "subnet-0b1c2d3e4f5a67890"}
ENDPOINT = "vpce-0a1b2c3d4e5f67890"
CIDR = "10.40.0.0/16"
# dev at max size: 5 nodes may land in us-east-1a and 3 in us-east-1b, each taking 1 + 110 pod addresses.
NEED = {"us-east-1a": 5 * 111, "us-east-1b": 3 * 111}


def on_existing(s3_endpoint: str | None = None) -> StackConfig:
    """dev in an existing VPC (network.existing_vpc), with or without its S3 gateway endpoint."""

    def edit(c: dict[str, Any]) -> None:
        net = c["network"]
        for key in ("nat_gateways", "flow_logs_traffic_type", "flow_logs_retention_days"):
            net.pop(key, None)
        existing: dict[str, Any] = {"vpc_id": VPC, "private_subnet_ids": dict(SUBNETS)}
        if s3_endpoint is not None:
            existing["s3_endpoint_id"] = s3_endpoint
        net.update(vpc_cidr=CIDR, existing_vpc=existing, private_subnet_prefix_length=20)

    return edited_config("dev", edit)


def context(stack: StackConfig, ec2: Any) -> Context:
    account = Account(stack.region, session=h.session(), overrides={(network.FAMILY, "ec2"): ec2})
    caller = "arn:aws:sts::111122223333:assumed-role/ml-platform-admin/preflight"
    return Context(stack, "dev", account, "111122223333", caller, None, h.NOW)


def vpc(*associations: tuple[str, str], primary: str = CIDR) -> dict[str, Any]:
    """DescribeVpcs' answer (EC2 API Reference, Vpc): the primary block and every association with its state."""
    return {
        "Vpcs": [
            {
                "VpcId": VPC,
                "CidrBlock": primary,
                "State": "available",
                "CidrBlockAssociationSet": [
                    {"AssociationId": f"vpc-cidr-assoc-{i}", "CidrBlock": block, "CidrBlockState": {"State": state}}
                    for i, (block, state) in enumerate(associations)
                ],
            }
        ]
    }


def subnet(az: str, free: int, *, vpc_id: str = VPC, public: bool = False, in_az: str | None = None) -> dict[str, Any]:
    """One Subnet as DescribeSubnets lists it (EC2 API Reference, Subnet)."""
    return {
        "SubnetId": SUBNETS[az],
        "VpcId": vpc_id,
        "AvailabilityZone": in_az or az,
        "AvailableIpAddressCount": free,
        "MapPublicIpOnLaunch": public,
        "CidrBlock": "10.40.0.0/20",
        "State": "available",
    }


def endpoint(
    *, vpc_id: str = VPC, service: str = "com.amazonaws.us-east-1.s3", kind: str = "Gateway", state: str = "available"
) -> dict[str, Any]:
    """DescribeVpcEndpoints' answer (EC2 API Reference, VpcEndpoint)."""
    return {
        "VpcEndpoints": [
            {
                "VpcEndpointId": ENDPOINT,
                "VpcId": vpc_id,
                "ServiceName": service,
                "VpcEndpointType": kind,
                "State": state,
            }
        ]
    }


def ask_vpc(answer: dict[str, Any]) -> Any:
    ec2, stub = h.stubbed("ec2", "us-east-1")
    stub.add_response("describe_vpcs", answer, {"VpcIds": [VPC]})
    return network._vpc_check(context(on_existing(), ec2), VPC)


def ask_subnets(*found: dict[str, Any]) -> dict[str, Any]:
    ec2, stub = h.stubbed("ec2", "us-east-1")
    wanted = {"Filters": [{"Name": "subnet-id", "Values": list(SUBNETS.values())}]}
    stub.add_response("describe_subnets", {"Subnets": list(found)}, wanted)
    return {c.id: c for c in network._subnet_checks(context(on_existing(), ec2), VPC, SUBNETS)}


def ask_endpoint(answer: dict[str, Any]) -> Any:
    ec2, stub = h.stubbed("ec2", "us-east-1")
    wanted = {"Filters": [{"Name": "vpc-endpoint-id", "Values": [ENDPOINT]}]}
    stub.add_response("describe_vpc_endpoints", answer, wanted)
    return network._endpoint_check(context(on_existing(ENDPOINT), ec2), VPC, ENDPOINT)


# ------------------------------------------------------------------------------------------------------- VPC


def test_a_vpc_holding_the_stacks_cidr_passes() -> None:
    found = ask_vpc(vpc((CIDR, "associated")))
    assert (found.id, found.status, found.action) == ("network.vpc", Status.PASSED, "")
    assert found.answer == f"{VPC} has {CIDR}" and found.key == "network.existing_vpc.vpc_id"
    assert found.asked == f"ec2:DescribeVpcs {VPC}"


def test_the_stacks_cidr_may_be_a_secondary_block() -> None:
    found = ask_vpc(vpc(("10.0.0.0/16", "associated"), (CIDR, "associated"), primary="10.0.0.0/16"))
    assert found.status is Status.PASSED and found.answer == f"{VPC} has 10.0.0.0/16, {CIDR}"


def test_a_cidr_block_no_longer_associated_does_not_count() -> None:
    found = ask_vpc(vpc(("10.0.0.0/16", "associated"), (CIDR, "disassociated"), primary="10.0.0.0/16"))
    assert found.status is Status.FAILED
    assert found.answer == f"{VPC} has 10.0.0.0/16: network.vpc_cidr {CIDR} is not one of them"
    assert found.action == "correct network.existing_vpc.vpc_id or network.vpc_cidr"


def test_an_answer_without_associations_falls_back_to_the_primary_block() -> None:
    assert ask_vpc({"Vpcs": [{"VpcId": VPC, "CidrBlock": CIDR}]}).status is Status.PASSED
    other = ask_vpc({"Vpcs": [{"VpcId": VPC, "CidrBlock": "10.0.0.0/16"}]})
    assert other.status is Status.FAILED and "10.0.0.0/16" in other.answer
    # An association whose state is left out is taken as associated.
    unstated = ask_vpc({"Vpcs": [{"VpcId": VPC, "CidrBlockAssociationSet": [{"CidrBlock": CIDR}]}]})
    assert unstated.status is Status.PASSED


def test_a_vpc_the_account_does_not_have_fails_however_ec2_says_so() -> None:
    assert (
        ask_vpc({"Vpcs": []}).answer == f"network.existing_vpc.vpc_id = {VPC}: no such VPC in this account and region"
    )
    ec2, stub = h.stubbed("ec2", "us-east-1")
    stub.add_client_error("describe_vpcs", "InvalidVpcID.NotFound", f"The vpc ID '{VPC}' does not exist", 400)
    missing = network._vpc_check(context(on_existing(), ec2), VPC)
    assert missing.status is Status.FAILED and "no such VPC" in missing.answer
    assert missing.action == "correct network.existing_vpc.vpc_id or network.vpc_cidr"


def test_an_ec2_error_other_than_not_found_is_not_read_as_a_missing_vpc() -> None:
    ec2, stub = h.stubbed("ec2", "us-east-1")
    stub.add_client_error("describe_vpcs", "InternalError", http_status_code=500)
    with pytest.raises(ClientError, match="InternalError"):
        network._vpc_check(context(on_existing(), ec2), VPC)
    ec2, stub = h.stubbed("ec2", "us-east-1")
    stub.add_client_error("describe_vpcs", "UnauthorizedOperation", http_status_code=403)
    denied = network._vpc_check(context(on_existing(), ec2), VPC)
    assert (denied.id, denied.status, denied.key) == ("network.vpc", Status.ERROR, "network.existing_vpc.vpc_id")


# --------------------------------------------------------------------------------------------------- subnets


def test_subnets_with_an_address_for_every_node_and_pod_pass() -> None:
    found = ask_subnets(subnet("us-east-1a", NEED["us-east-1a"]), subnet("us-east-1b", 4000))
    a, b = found["network.subnet.us-east-1a"], found["network.subnet.us-east-1b"]
    assert (a.status, a.action, b.status) == (Status.PASSED, "", Status.PASSED)
    assert a.answer == f"{SUBNETS['us-east-1a']} in us-east-1a: 555 free addresses for 5 nodes"
    assert b.answer == f"{SUBNETS['us-east-1b']} in us-east-1b: 4,000 free addresses for 3 nodes"
    assert a.key == "network.existing_vpc.private_subnet_ids.us-east-1a"
    assert a.asked == f"ec2:DescribeSubnets {SUBNETS['us-east-1a']}, {SUBNETS['us-east-1b']}"
    assert a.title == "the private subnet in us-east-1a is usable and has room"


def test_one_address_short_of_the_nodes_and_pods_fails_that_subnet_only() -> None:
    found = ask_subnets(subnet("us-east-1a", NEED["us-east-1a"] - 1), subnet("us-east-1b", NEED["us-east-1b"]))
    short = found["network.subnet.us-east-1a"]
    assert short.status is Status.FAILED and short.action == "fix the subnet or the stack file"
    assert "554 free addresses, but 5 nodes at max size need up to 555" in short.answer
    assert found["network.subnet.us-east-1b"].status is Status.PASSED


def test_a_subnet_elsewhere_or_public_fails_naming_why() -> None:
    found = ask_subnets(
        subnet("us-east-1a", 4000, vpc_id="vpc-0ffffffffffffffff", public=True),
        subnet("us-east-1b", 4000, in_az="us-east-1c"),
    )
    a, b = found["network.subnet.us-east-1a"].answer, found["network.subnet.us-east-1b"].answer
    assert "is in vpc-0ffffffffffffffff" in a and "maps public IPs" in a
    assert "is in us-east-1c, not us-east-1b" in b


def test_a_subnet_ec2_does_not_list_fails_as_missing() -> None:
    found = ask_subnets(subnet("us-east-1b", 4000))
    missing = found["network.subnet.us-east-1a"]
    assert missing.status is Status.FAILED and "no such subnet" in missing.answer
    assert found["network.subnet.us-east-1b"].status is Status.PASSED


def test_what_describe_subnets_leaves_out_is_read_as_unknown() -> None:
    """No VPC, AZ or free address is assumed, and a subnet is not taken as public, when the answer omits them."""
    assert network._subnet({"SubnetId": "subnet-1"}) == Subnet("subnet-1", "", "", 0, False)
    whole = network._subnet(subnet("us-east-1a", 7, public=True))
    assert whole == Subnet(SUBNETS["us-east-1a"], VPC, "us-east-1a", 7, True)


def test_subnets_preflight_may_not_read_are_each_an_error() -> None:
    ec2, stub = h.stubbed("ec2", "us-east-1")
    stub.add_client_error("describe_subnets", "UnauthorizedOperation", http_status_code=403)
    checks = network._subnet_checks(context(on_existing(), ec2), VPC, SUBNETS)
    assert [(c.id, c.status) for c in checks] == [
        ("network.subnet.us-east-1a", Status.ERROR),
        ("network.subnet.us-east-1b", Status.ERROR),
    ]
    assert [c.key for c in checks] == [f"network.existing_vpc.private_subnet_ids.{az}" for az in SUBNETS]
    assert all("ec2:DescribeSubnets was denied" in c.answer and c.action.startswith("fix access") for c in checks)
    assert checks[0].title == "the private subnet in us-east-1a is usable and has room"
    assert checks[0].asked == f"ec2:DescribeSubnets {SUBNETS['us-east-1a']}, {SUBNETS['us-east-1b']}"


# --------------------------------------------------------------------------------------------- S3 endpoint


def test_the_vpcs_available_s3_gateway_endpoint_passes() -> None:
    found = ask_endpoint(endpoint())
    assert (found.id, found.status, found.action) == ("network.s3-endpoint", Status.PASSED, "")
    assert found.answer.startswith(f"{ENDPOINT}: S3 gateway endpoint of {VPC}")
    assert found.key == "network.existing_vpc.s3_endpoint_id" and found.asked == f"ec2:DescribeVpcEndpoints {ENDPOINT}"


@pytest.mark.parametrize(
    ("answer", "says"),
    [
        ({"vpc_id": "vpc-0ffffffffffffffff"}, f"{ENDPOINT} is in vpc-0ffffffffffffffff, not {VPC}"),
        ({"kind": "Interface"}, "is a Interface endpoint for com.amazonaws.us-east-1.s3, not S3's gateway endpoint"),
        ({"service": "com.amazonaws.us-east-1.dynamodb"}, "is a Gateway endpoint for com.amazonaws.us-east-1.dynamodb"),
        ({"state": "pending"}, f"{ENDPOINT} is pending"),
        ({"state": "Deleted"}, f"{ENDPOINT} is Deleted"),
    ],
)
def test_an_endpoint_in_another_vpc_of_another_kind_or_not_available_fails(answer: dict[str, Any], says: str) -> None:
    found = ask_endpoint(endpoint(**answer))
    assert found.status is Status.FAILED and says in found.answer and ";" not in found.answer  # that problem alone
    assert found.action == "correct network.existing_vpc.s3_endpoint_id"


def test_an_endpoint_state_is_read_in_any_case() -> None:
    assert ask_endpoint(endpoint(state="Available")).status is Status.PASSED


def test_an_endpoint_ec2_does_not_list_fails_and_one_that_cannot_be_read_is_an_error() -> None:
    missing = ask_endpoint({"VpcEndpoints": []})
    assert missing.status is Status.FAILED
    assert (
        missing.answer
        == f"network.existing_vpc.s3_endpoint_id = {ENDPOINT}: no such endpoint in this account and region"
    )
    ec2, stub = h.stubbed("ec2", "us-east-1")
    stub.add_client_error("describe_vpc_endpoints", "UnauthorizedOperation", http_status_code=403)
    denied = network._endpoint_check(context(on_existing(ENDPOINT), ec2), VPC, ENDPOINT)
    assert (denied.id, denied.status, denied.key) == (
        "network.s3-endpoint",
        Status.ERROR,
        "network.existing_vpc.s3_endpoint_id",
    )


# ----------------------------------------------------------------------------------------------- the family


def test_a_vpc_trainstack_creates_is_not_asked() -> None:
    ec2, _ = h.stubbed("ec2", "us-east-1")  # no answers: any call fails the test
    [found] = network.checks(context(stack_config("dev"), ec2))
    assert (found.id, found.status, found.key, found.asked) == ("network.vpc", Status.SKIPPED, "network", "(not asked)")


def test_an_existing_vpc_is_asked_for_itself_its_subnets_and_its_endpoint_when_named() -> None:
    def answered(stack: StackConfig, with_endpoint: bool) -> list[str]:
        ec2, stub = h.stubbed("ec2", "us-east-1")
        stub.add_response("describe_vpcs", vpc((CIDR, "associated")))
        stub.add_response("describe_subnets", {"Subnets": [subnet(az, 4000) for az in SUBNETS]})
        if with_endpoint:
            stub.add_response("describe_vpc_endpoints", endpoint())
        checks = network.checks(context(stack, ec2))
        stub.assert_no_pending_responses()
        assert all(c.status is Status.PASSED for c in checks), [c.answer for c in checks]
        return [c.id for c in checks]

    subnets = ["network.subnet.us-east-1a", "network.subnet.us-east-1b"]
    assert answered(on_existing(), False) == ["network.vpc", *subnets]
    assert answered(on_existing(ENDPOINT), True) == ["network.vpc", *subnets, "network.s3-endpoint"]

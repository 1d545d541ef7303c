"""Tier 2: the Network component on an existing VPC (`network.existing_vpc`) under the recording mocks.

It creates nothing of the network itself, only trainstack's security groups in the given VPC, and it reads
each subnet back and refuses one that is not where the stack file says.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping

import pytest

from components.network.network import ExistingSubnet, Network, NetworkArgs, existing_subnet_problem
from stacks.schema import NetworkSpec
from tests.component.helpers import aws_opts
from trainstack.engine import Recording, run
from trainstack.mocks import ExistingSubnetFacts

VPC_ID = "vpc-0a1b2c3d4e5f67890"
SUBNETS = {"us-east-1a": "subnet-0a1b2c3d4e5f60001", "us-east-1b": "subnet-0a1b2c3d4e5f60002"}
SPEC = NetworkSpec.model_validate(
    {
        "vpc_cidr": "10.30.0.0/16",
        "availability_zones": list(SUBNETS),
        "private_subnet_prefix_length": 19,
        "existing_vpc": {"vpc_id": VPC_ID, "private_subnet_ids": SUBNETS, "s3_endpoint_id": "vpce-0a1b2c3d4e5f67890"},
    }
)
NETWORK_TYPES = (
    "aws:ec2/vpc:Vpc",
    "aws:ec2/subnet:Subnet",
    "aws:ec2/internetGateway:InternetGateway",
    "aws:ec2/natGateway:NatGateway",
    "aws:ec2/eip:Eip",
    "aws:ec2/routeTable:RouteTable",
    "aws:ec2/route:Route",
    "aws:ec2/routeTableAssociation:RouteTableAssociation",
    "aws:ec2/vpcEndpoint:VpcEndpoint",
    "aws:ec2/flowLog:FlowLog",
)


def _build(facts: Mapping[str, ExistingSubnetFacts]) -> Recording:
    return run(
        lambda: Network("byo-network", NetworkArgs(spec=SPEC, base_name="byo", region="us-east-1"), opts=aws_opts()),
        stack="test",
        region="us-east-1",
        existing_subnets=facts,
    )


@functools.cache
def recorded() -> Recording:
    return _build({sid: ExistingSubnetFacts(az, VPC_ID) for az, sid in SUBNETS.items()})


def test_creates_no_vpc_subnets_routes_nat_endpoints_or_flow_logs() -> None:
    recording = recorded()
    assert not [r.name for r in recording.resources if r.type in NETWORK_TYPES]


def test_security_groups_live_in_the_existing_vpc_and_efa_talks_to_itself() -> None:
    recording = recorded()
    groups = {r.name: r for r in recording.by_type("aws:ec2/securityGroup:SecurityGroup")}
    assert set(groups) == {"byo-network-efa-sg", "byo-network-workload-sg"}
    assert {g.inputs["vpcId"] for g in groups.values()} == {VPC_ID}
    efa_id = groups["byo-network-efa-sg"].id
    for rule_type in (
        "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule",
        "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule",
    ):
        [rule] = [r for r in recording.by_type(rule_type) if r.inputs["securityGroupId"] == efa_id]
        assert rule.inputs["referencedSecurityGroupId"] == efa_id and rule.inputs["ipProtocol"] == "-1"


@pytest.mark.parametrize(
    ("facts", "expected"),
    [
        (ExistingSubnetFacts("us-east-1b", VPC_ID), "is in us-east-1b, not in us-east-1a"),
        (ExistingSubnetFacts("us-east-1a", "vpc-0fffffffffffffff0"), "not in network.existing_vpc.vpc_id"),
    ],
)
def test_a_subnet_that_is_not_where_the_stack_file_says_stops_the_run(
    facts: ExistingSubnetFacts, expected: str
) -> None:
    wrong = {SUBNETS["us-east-1a"]: facts, SUBNETS["us-east-1b"]: ExistingSubnetFacts("us-east-1b", VPC_ID)}
    with pytest.raises(Exception, match=expected):
        _build(wrong)


def test_an_unknown_subnet_fails_as_aws_fails_it() -> None:
    with pytest.raises(Exception, match=r"InvalidSubnetID\.NotFound"):
        _build({SUBNETS["us-east-1a"]: ExistingSubnetFacts("us-east-1a", VPC_ID)})


def test_a_subnet_that_maps_public_ips_is_refused() -> None:
    public = ExistingSubnet(SUBNETS["us-east-1a"], "us-east-1a", VPC_ID, map_public_ip_on_launch=True)
    problem = existing_subnet_problem(public, "us-east-1a", VPC_ID)
    assert problem is not None and "network.existing_vpc.private_subnet_ids.us-east-1a" in problem
    assert "maps public IPs" in problem
    assert (
        existing_subnet_problem(public.__class__(public.id, "us-east-1a", VPC_ID, False), "us-east-1a", VPC_ID) is None
    )

"""Tier 1: subnet carving, NAT placement, endpoint naming and the network spec's rules."""

from __future__ import annotations

import ipaddress

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from components.network.network import (
    INTERNAL_ELB_TAG,
    PUBLIC_ELB_TAG,
    SubnetPlan,
    carve_subnets,
    endpoint_service_name,
    nat_gateway_azs,
    nat_gateway_for,
    subnet_tags,
)
from stacks.schema import NatGateways, NetworkSpec

AZS = ["us-east-1a", "us-east-1b", "us-east-1c", "us-east-1d"]


@st.composite
def layouts(draw: st.DrawFn) -> tuple[str, list[str], int, int]:
    """A VPC CIDR and subnet sizes that the schema accepts."""
    vpc_prefix = draw(st.integers(16, 20))
    second, third = draw(st.integers(0, 255)), draw(st.integers(0, 255))
    vpc = ipaddress.IPv4Network((f"10.{second}.{third}.0", vpc_prefix), strict=False)
    count = draw(st.integers(2, 4))
    private = draw(st.integers(max(16, vpc_prefix), 24))
    public = draw(st.integers(max(20, private), 28))
    return str(vpc), AZS[:count], private, public


def _fits(vpc: str, count: int, private: int, public: int) -> bool:
    return count * (2 ** (32 - private) + 2 ** (32 - public)) <= ipaddress.IPv4Network(vpc).num_addresses


@settings(max_examples=300, deadline=None)
@given(layouts())
def test_carved_subnets_are_disjoint_inside_the_vpc_one_per_tier_and_az(layout: tuple[str, list[str], int, int]):
    vpc_cidr, azs, private, public = layout
    if not _fits(vpc_cidr, len(azs), private, public):
        with pytest.raises(ValueError, match=r"do not fit|does not fit"):
            carve_subnets(vpc_cidr, azs, private, public)
        return
    plans = carve_subnets(vpc_cidr, azs, private, public)
    vpc = ipaddress.IPv4Network(vpc_cidr)
    networks = [ipaddress.IPv4Network(p.cidr) for p in plans]
    assert all(n.subnet_of(vpc) for n in networks)
    for i, a in enumerate(networks):
        for b in networks[i + 1 :]:
            assert not a.overlaps(b), (a, b)
    assert sorted((p.tier, p.availability_zone) for p in plans) == sorted(
        [("private", az) for az in azs] + [("public", az) for az in azs]
    )
    assert all(
        n.prefixlen == (private if p.tier == "private" else public) for p, n in zip(plans, networks, strict=True)
    )


@settings(max_examples=100, deadline=None)
@given(layouts())
def test_private_subnets_come_first_and_the_layout_has_no_gaps(layout: tuple[str, list[str], int, int]):
    vpc_cidr, azs, private, public = layout
    if not _fits(vpc_cidr, len(azs), private, public):
        return
    plans = carve_subnets(vpc_cidr, azs, private, public)
    assert [p.tier for p in plans] == ["private"] * len(azs) + ["public"] * len(azs)
    cursor = int(ipaddress.IPv4Network(vpc_cidr).network_address)
    for plan in plans:
        network = ipaddress.IPv4Network(plan.cidr)
        assert int(network.network_address) == cursor
        cursor += network.num_addresses


def test_prod_layout_is_the_documented_one():
    plans = carve_subnets("10.0.0.0/16", AZS[:3], 18, 24)
    assert [p.cidr for p in plans] == [
        "10.0.0.0/18",
        "10.0.64.0/18",
        "10.0.128.0/18",
        "10.0.192.0/24",
        "10.0.193.0/24",
        "10.0.194.0/24",
    ]


def test_carving_refuses_a_layout_that_does_not_fit():
    with pytest.raises(ValueError, match="do not fit"):
        carve_subnets("10.0.0.0/20", AZS[:2], 20, 24)


def _spec(**overrides: object) -> NetworkSpec:
    return NetworkSpec.model_validate({"vpc_cidr": "10.0.0.0/16", "availability_zones": AZS[:3], **overrides})


def test_single_nat_lives_in_the_first_az_and_serves_every_az():
    spec = _spec(nat_gateways="single")
    assert nat_gateway_azs(spec) == ["us-east-1a"]
    assert {nat_gateway_for(spec, az) for az in spec.availability_zones} == {"us-east-1a"}


def test_per_az_nat_serves_its_own_az():
    spec = _spec(nat_gateways=NatGateways.PER_AZ)
    assert nat_gateway_azs(spec) == AZS[:3]
    assert [nat_gateway_for(spec, az) for az in spec.availability_zones] == AZS[:3]


def test_endpoint_service_name():
    assert endpoint_service_name("eu-west-1", "ecr.dkr") == "com.amazonaws.eu-west-1.ecr.dkr"


def test_subnet_tags_carry_the_load_balancer_role_of_their_tier():
    private = subnet_tags("trainstack-dev", SubnetPlan("us-east-1a", "private", "10.0.0.0/18"))
    public = subnet_tags("trainstack-dev", SubnetPlan("us-east-1a", "public", "10.0.192.0/24"))
    assert private == {"Name": "trainstack-dev-private-us-east-1a", INTERNAL_ELB_TAG: "1"}
    assert public == {"Name": "trainstack-dev-public-us-east-1a", PUBLIC_ELB_TAG: "1"}


def test_spec_refuses_public_subnets_larger_than_private_ones():
    with pytest.raises(ValidationError, match="private subnets must be at least as large"):
        _spec(private_subnet_prefix_length=22, public_subnet_prefix_length=20)


def test_spec_refuses_subnets_that_overflow_the_vpc():
    with pytest.raises(ValidationError, match="need"):
        NetworkSpec.model_validate({"vpc_cidr": "10.0.0.0/20", "availability_zones": AZS[:2]})

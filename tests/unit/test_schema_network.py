"""The `network` section's own checks, each at its boundary and alone: repeated AZs, a created VPC's size and subnet
prefixes and whether its subnets fit, the pod network's secondary CIDR and pod subnets, and an existing VPC's
subnets, CIDR and the keys that only describe a VPC trainstack creates (VPC User Guide, "VPC CIDR blocks")."""

from __future__ import annotations

import re
from typing import Any

import pytest
from pydantic import ValidationError

from stacks.schema.network import CREATE_ONLY_KEYS, ExistingVpcSpec, NetworkSpec, PodNetworkSpec

AZS = ["us-east-1a", "us-east-1b", "us-east-1c"]


def _network(**fields: Any) -> NetworkSpec:
    return NetworkSpec.model_validate({"vpc_cidr": "10.0.0.0/16", "availability_zones": AZS} | fields)


def _refused(message: str, **fields: Any) -> None:
    with pytest.raises(ValidationError, match=re.escape(message)):
        _network(**fields)


def test_a_created_vpc_of_defaults_is_accepted_and_creates_its_vpc() -> None:
    spec = _network()
    assert (spec.vpc_cidr, spec.availability_zones, spec.creates_vpc) == ("10.0.0.0/16", AZS, True)


def test_an_az_named_twice_is_refused() -> None:
    _refused("availability_zones has duplicates: ['us-east-1a', 'us-east-1a']", availability_zones=AZS[:1] * 2)


# ------------------------------------------------------------------------------------------ a VPC trainstack creates


@pytest.mark.parametrize(("cidr", "private", "public"), [("10.0.0.0/16", 18, 24), ("10.0.0.0/20", 22, 24)])
def test_a_created_vpc_of_slash_16_to_slash_20_is_accepted(cidr: str, private: int, public: int) -> None:
    spec = _network(vpc_cidr=cidr, private_subnet_prefix_length=private, public_subnet_prefix_length=public)
    assert spec.vpc_cidr == cidr


@pytest.mark.parametrize("cidr", ["10.0.0.0/15", "10.0.0.0/21"])
def test_a_created_vpc_outside_slash_16_to_slash_20_is_refused(cidr: str) -> None:
    _refused(f"vpc_cidr {cidr} must be /16 to /20", vpc_cidr=cidr, private_subnet_prefix_length=24)


def test_created_private_subnets_may_be_slash_24_and_equal_to_the_public_ones_but_no_smaller() -> None:
    spec = _network(private_subnet_prefix_length=24, public_subnet_prefix_length=24)
    assert (spec.private_subnet_prefix_length, spec.public_subnet_prefix_length) == (24, 24)
    _refused(
        "private_subnet_prefix_length /25 is too small for a VPC trainstack creates",
        private_subnet_prefix_length=25,
        public_subnet_prefix_length=25,
    )
    _refused(
        "private_subnet_prefix_length /23 is smaller than public_subnet_prefix_length /22",
        private_subnet_prefix_length=23,
        public_subnet_prefix_length=22,
    )


def test_subnets_that_fill_the_vpc_exactly_fit_and_one_az_more_does_not() -> None:
    # A /20 holds 4096 addresses: two AZs of a private and a public /22 (1024 each) fill it exactly; two AZs of a
    # private /22 and a public /23 (512) need 3072, a third AZ 4608.
    exact = {"vpc_cidr": "10.0.0.0/20", "private_subnet_prefix_length": 22, "public_subnet_prefix_length": 22}
    assert _network(**exact, availability_zones=AZS[:2]).availability_zones == AZS[:2]
    fields = {"vpc_cidr": "10.0.0.0/20", "private_subnet_prefix_length": 22, "public_subnet_prefix_length": 23}
    assert _network(**fields, availability_zones=AZS[:2]).availability_zones == AZS[:2]
    _refused("3 private /22 and 3 public /23 subnets need 4608 addresses; vpc_cidr 10.0.0.0/20 has 4096", **fields)


# ------------------------------------------------------------------------------------------------ the pod network


def _pods(cidr: str, prefix: int, azs: list[str] = AZS) -> NetworkSpec:
    pods = {"cidr": cidr, "subnet_prefix_length": prefix}
    return _network(availability_zones=azs, private_subnet_prefix_length=20, pod_network=pods)


@pytest.mark.parametrize(("cidr", "prefix"), [("100.64.0.0/16", 18), ("100.64.0.0/20", 22)])
def test_a_pod_cidr_of_slash_16_to_slash_20_is_accepted(cidr: str, prefix: int) -> None:
    pods = _pods(cidr, prefix).pod_network
    assert pods is not None and (pods.cidr, pods.subnet_prefix_length) == (cidr, prefix)


@pytest.mark.parametrize(("cidr", "prefix"), [("100.64.0.0/15", 18), ("100.64.0.0/21", 24)])
def test_a_pod_cidr_outside_slash_16_to_slash_20_is_refused(cidr: str, prefix: int) -> None:
    with pytest.raises(ValidationError, match=re.escape(f"pod_network.cidr {cidr} must be /16 to /20")):
        _pods(cidr, prefix)


def test_a_pod_cidr_aws_would_not_associate_is_refused_with_the_reason() -> None:
    with pytest.raises(ValidationError, match=re.escape("pod_network.cidr 10.0.128.0/17 overlaps vpc_cidr")):
        _pods("10.0.128.0/17", 18)
    with pytest.raises(ValidationError, match=re.escape("pod_network.cidr 172.16.0.0/16 is in another private block")):
        _pods("172.16.0.0/16", 18)


def test_pod_subnets_that_fill_the_pod_cidr_exactly_fit_and_larger_ones_do_not() -> None:
    four = [*AZS, "us-east-1d"]
    pods = _pods("100.64.0.0/16", 18, four).pod_network  # four /18s are the /16
    assert pods is not None and pods.subnet_prefix_length == 18
    with pytest.raises(ValidationError, match=re.escape("4 pod subnets of /17 need 131072 addresses")):
        _pods("100.64.0.0/16", 17, four)
    with pytest.raises(ValidationError, match=re.escape("2 pod subnets of /16 need 131072 addresses")):
        _pods("100.64.0.0/16", 16, AZS[:2])


@pytest.mark.parametrize(("prefix", "addresses"), [(16, 65536), (18, 16384), (24, 256)])
def test_a_pod_subnet_holds_the_addresses_of_its_prefix(prefix: int, addresses: int) -> None:
    assert PodNetworkSpec(cidr="100.64.0.0/16", subnet_prefix_length=prefix).per_subnet_addresses == addresses


# -------------------------------------------------------------------------------------------------- an existing VPC

SUBNETS = {az: f"subnet-0123456789abcdef{i}" for i, az in enumerate(AZS)}


def _existing(cidr: str = "10.40.0.0/16", prefix: int = 18, subnets: dict[str, str] = SUBNETS, **fields: Any):
    existing = {"vpc_id": "vpc-0123456789abcdef0", "private_subnet_ids": subnets}
    return _network(vpc_cidr=cidr, private_subnet_prefix_length=prefix, existing_vpc=existing, **fields)


def test_an_existing_vpc_is_kept_and_trainstack_creates_none() -> None:
    spec = _existing()
    assert spec.existing_vpc is not None and spec.existing_vpc.private_subnet_ids == SUBNETS
    assert spec.creates_vpc is False


@pytest.mark.parametrize(("cidr", "prefix"), [("10.40.0.0/16", 16), ("10.40.0.0/24", 26), ("10.40.0.0/28", 28)])
def test_an_existing_vpc_of_slash_16_to_slash_28_is_accepted_even_where_a_created_one_could_not_be(
    cidr: str, prefix: int
) -> None:
    assert _existing(cidr, prefix).vpc_cidr == cidr


@pytest.mark.parametrize(("cidr", "prefix"), [("10.40.0.0/15", 18), ("10.40.0.0/29", 28)])
def test_an_existing_vpc_outside_slash_16_to_slash_28_is_refused(cidr: str, prefix: int) -> None:
    with pytest.raises(ValidationError, match=re.escape(f"vpc_cidr {cidr} is not a VPC CIDR: AWS allows /16 to /28")):
        _existing(cidr, prefix)


def test_existing_subnets_may_be_as_large_as_the_vpc_but_not_larger() -> None:
    assert _existing("10.40.0.0/20", 20).private_subnet_prefix_length == 20
    with pytest.raises(ValidationError, match=re.escape("private_subnet_prefix_length /19 is larger than vpc_cidr")):
        _existing("10.40.0.0/20", 19)


def test_existing_subnets_must_cover_exactly_the_azs_in_any_order() -> None:
    reordered = dict(reversed(SUBNETS.items()))
    assert _existing(subnets=reordered).availability_zones == AZS
    other = {"us-east-1a": SUBNETS["us-east-1a"], "us-east-1b": SUBNETS["us-east-1b"], "us-east-1d": "subnet-0aaaaaaaa"}
    with pytest.raises(ValidationError, match=re.escape("existing_vpc.private_subnet_ids has subnets for")):
        _existing(subnets=other)


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("public_subnet_prefix_length", 23),
        ("nat_gateways", "per_az"),
        ("interface_endpoints", True),
        ("flow_logs_traffic_type", "REJECT"),
        ("flow_logs_retention_days", 90),
    ],
)
def test_a_key_of_a_created_vpc_set_beside_an_existing_one_is_refused_by_name(key: str, value: object) -> None:
    assert key in CREATE_ONLY_KEYS
    with pytest.raises(ValidationError, match=re.escape(f"existing_vpc and {key} are exclusive")):
        _existing(**{key: value})


def test_a_key_of_a_created_vpc_left_at_its_default_is_accepted_beside_an_existing_one() -> None:
    assert _existing(nat_gateways="single", interface_endpoints=False).existing_vpc is not None


def test_a_pod_network_beside_an_existing_vpc_is_refused() -> None:
    with pytest.raises(ValidationError, match="pod_network with existing_vpc"):
        _existing(pod_network={"cidr": "100.64.0.0/16"})


def test_one_subnet_for_two_azs_is_refused_and_distinct_ones_kept() -> None:
    shared = {"us-east-1a": "subnet-0aaaaaaaa", "us-east-1b": "subnet-0aaaaaaaa"}
    with pytest.raises(ValidationError, match="private_subnet_ids names a subnet for two AZs"):
        ExistingVpcSpec.model_validate({"vpc_id": "vpc-0123456789abcdef0", "private_subnet_ids": shared})
    distinct = {"vpc_id": "vpc-0123456789abcdef0", "private_subnet_ids": SUBNETS}
    assert ExistingVpcSpec.model_validate(distinct).private_subnet_ids == SUBNETS

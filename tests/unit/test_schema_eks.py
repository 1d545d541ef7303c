"""The `eks` section's own checks, each at its boundary and alone: the system group's sizes, repeated admin roles,
the public endpoint's CIDRs (required when public, refused when private, at most a /8 of the internet together)
and repeated control-plane log types."""

from __future__ import annotations

import re
from typing import Any

import pytest
from pydantic import ValidationError

from stacks.schema.eks import MAX_PUBLIC_ENDPOINT_ADDRESSES, EksSpec, SystemNodeGroupSpec, cidr_union_addresses

ADMIN = "arn:aws:iam::111122223333:role/ml-platform-admin"
BREAKGLASS = "arn:aws:iam::111122223333:role/breakglass"
VERSION = "v1.22.4-eksbuild.3"


def _eks(**changes: Any) -> EksSpec:
    raw: dict[str, Any] = {
        "version": "1.35",
        "admin_role_arns": [ADMIN],
        "endpoint_public_access": True,
        "public_access_cidrs": ["203.0.113.0/24"],
        "addons": {
            key: VERSION
            for key in ("vpc_cni", "coredns", "kube_proxy", "pod_identity_agent", "ebs_csi_driver", "fsx_csi_driver")
        },
    }
    return EksSpec.model_validate(raw | changes)


@pytest.mark.parametrize(("low", "start", "high"), [(1, 1, 1), (2, 2, 4), (2, 4, 4), (1, 3, 5)])
def test_system_group_sizes_in_order_are_accepted_equal_ones_included(low: int, start: int, high: int) -> None:
    sizes = {"min_size": low, "desired_size": start, "max_size": high}
    group = SystemNodeGroupSpec.model_validate(sizes)
    assert (group.min_size, group.desired_size, group.max_size) == (low, start, high)
    assert _eks(system_node_group=sizes).system_node_group == group  # kept inside the section too


@pytest.mark.parametrize(("low", "start", "high"), [(3, 2, 4), (2, 5, 4), (3, 3, 2)])
def test_system_group_sizes_out_of_order_are_refused_with_the_three_values(low: int, start: int, high: int) -> None:
    message = f"need min_size <= desired_size <= max_size, got {low}, {start}, {high}"
    with pytest.raises(ValidationError, match=re.escape(message)):
        SystemNodeGroupSpec(min_size=low, desired_size=start, max_size=high)


def test_distinct_admin_roles_are_kept_in_order() -> None:
    assert _eks(admin_role_arns=[ADMIN, BREAKGLASS]).admin_role_arns == [ADMIN, BREAKGLASS]
    assert _eks().admin_role_arns == [ADMIN]


@pytest.mark.parametrize("repeat", [ADMIN, ADMIN.replace("ml-platform-admin", "ML-Platform-Admin")])
def test_an_admin_role_named_twice_is_refused_whatever_its_case(repeat: str) -> None:
    with pytest.raises(ValidationError, match="more than once") as caught:
        _eks(admin_role_arns=[ADMIN, BREAKGLASS, repeat])
    assert BREAKGLASS not in str(caught.value)  # only the repeated role is named


def test_cidr_union_counts_overlapping_ranges_once() -> None:
    assert cidr_union_addresses(["10.0.0.0/24"]) == 256
    assert cidr_union_addresses(["10.0.0.0/24", "10.0.0.0/25", "10.0.1.0/24"]) == 512
    assert cidr_union_addresses([]) == 0


def test_a_public_endpoint_needs_its_cidrs() -> None:
    with pytest.raises(ValidationError, match="public_access_cidrs is empty"):
        _eks(public_access_cidrs=[])


def test_a_public_endpoint_open_to_exactly_a_slash_8_is_accepted_and_one_address_more_is_refused() -> None:
    assert cidr_union_addresses(["10.0.0.0/8"]) == MAX_PUBLIC_ENDPOINT_ADDRESSES
    assert _eks(public_access_cidrs=["10.0.0.0/8"]).public_access_cidrs == ["10.0.0.0/8"]
    with pytest.raises(ValidationError, match="16,777,217 addresses"):
        _eks(public_access_cidrs=["10.0.0.0/8", "11.0.0.0/32"])


def test_the_internet_spelt_as_two_halves_is_refused() -> None:
    with pytest.raises(ValidationError, match="that is the internet"):
        _eks(public_access_cidrs=["0.0.0.0/1", "128.0.0.0/1"])


def test_a_private_endpoint_refuses_public_cidrs_and_accepts_none() -> None:
    with pytest.raises(ValidationError, match="public_access_cidrs is set but endpoint_public_access is false"):
        _eks(endpoint_public_access=False)
    spec = _eks(endpoint_public_access=False, public_access_cidrs=[])
    assert (spec.endpoint_public_access, spec.public_access_cidrs) == (False, [])


def test_repeated_control_plane_log_types_are_refused_and_distinct_ones_kept() -> None:
    with pytest.raises(ValidationError, match="control_plane_log_types has duplicates"):
        _eks(control_plane_log_types=["api", "audit", "api"])
    assert _eks(control_plane_log_types=["api", "scheduler"]).control_plane_log_types == ["api", "scheduler"]

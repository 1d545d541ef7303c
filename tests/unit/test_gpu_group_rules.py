"""The GPU node group's cross-field rules at their edges: what a reservation needs, and label key lengths."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from stacks.schema.gpu import CapacitySpec, CapacityType, GpuNodeGroupSpec

RESERVATION_ID = "cr-0123456789abcdef0"


@pytest.mark.parametrize("capacity_type", [CapacityType.RESERVATION, CapacityType.CAPACITY_BLOCK])
@pytest.mark.parametrize(
    "settings",
    [{}, {"reservation_id": RESERVATION_ID}, {"reservation_availability_zone": "us-east-1a"}],
    ids=["neither", "no-az", "no-id"],
)
def test_reserved_capacity_needs_both_the_id_and_the_az(capacity_type: CapacityType, settings: dict[str, Any]) -> None:
    # Without them the launch template would target nothing and the group would launch On-Demand elsewhere.
    with pytest.raises(ValidationError, match=f"capacity type {capacity_type.value} needs reservation_id and"):
        CapacitySpec(type=capacity_type, **settings)
    complete = CapacitySpec(
        type=capacity_type, reservation_id=RESERVATION_ID, reservation_availability_zone="us-east-1a"
    )
    assert complete.reserved


def _group(labels: dict[str, str]) -> GpuNodeGroupSpec:
    return GpuNodeGroupSpec.model_validate(
        {
            "name": "eval",
            "instance_type": "g6e.xlarge",
            "availability_zone": "us-east-1a",
            "efa_enabled": False,
            "min_size": 0,
            "desired_size": 0,
            "max_size": 1,
            "labels": labels,
        }
    )


@pytest.mark.parametrize("key", ["a", "k" * 63])
def test_label_keys_of_one_to_63_characters_are_accepted(key: str) -> None:
    # EKS CreateNodegroup labelsMap (botocore): keys 1-63 characters.
    assert _group({key: "v"}).labels == {key: "v"}


@pytest.mark.parametrize("key", ["", "k" * 64])
def test_label_keys_outside_one_to_63_characters_are_refused(key: str) -> None:
    with pytest.raises(ValidationError, match="63"):
        _group({key: "v"})

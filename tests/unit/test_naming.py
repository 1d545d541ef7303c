"""Naming and tagging rules (components/naming.py) at their edges: a physical name at, one over and far over its
length; each way a name is changed (case, characters, dashes) marking it with the hash; child names with empty
and zero parts; tags where the name and the caller's own tags win over the defaults."""

from __future__ import annotations

import re

import pytest

from components.naming import aws_partition, child_name, physical_name, resource_tags

HASHED = re.compile(r"-[0-9a-f]{8}\Z")


@pytest.mark.parametrize("length", [1, 20, 63])
def test_a_valid_name_that_fits_exactly_is_kept(length: int) -> None:
    assert physical_name("a" * length) == "a" * length


@pytest.mark.parametrize("max_length", [3, 32])
def test_parts_that_fit_a_shorter_limit_exactly_are_kept(max_length: int) -> None:
    asked = "b-" + "c" * (max_length - 2)
    assert physical_name("b", "c" * (max_length - 2), max_length=max_length) == asked


@pytest.mark.parametrize("over", [1, 2, 100])
def test_a_name_over_the_length_is_cut_to_exactly_the_length_and_hashed(over: int) -> None:
    name = physical_name("a" * (63 + over))
    assert len(name) == 63 and HASHED.search(name) and name.startswith("a" * 54)
    short = physical_name("trainstack", "x" * 30, max_length=32)
    assert len(short) == 32 and HASHED.search(short)


def test_a_cut_never_leaves_two_dashes_before_the_hash() -> None:
    name = physical_name("a" * 53, "b" * 20)  # the cut falls just after the dash between the parts
    assert "--" not in name and len(name) <= 63 and HASHED.search(name)


@pytest.mark.parametrize("asked", ["Upper", "a_b", "a--b", "-a", "a-", "a b"])
def test_a_name_that_had_to_change_is_marked_with_the_hash(asked: str) -> None:
    name = physical_name(asked)
    assert HASHED.search(name) and name == name.lower() and "--" not in name
    assert not name.startswith("-") and re.fullmatch(r"[a-z0-9-]+", name)


def test_a_name_that_already_looks_cut_is_hashed_again() -> None:
    looks_cut = "group-0123abcd"
    name = physical_name(looks_cut)
    assert name != looks_cut and name.startswith("group-0123abcd-") and HASHED.search(name)
    assert physical_name("group-0123abcz") == "group-0123abcz"  # not hex: reads as asked
    assert physical_name("group-0123abc") == "group-0123abc"  # seven digits: reads as asked


def test_different_requests_never_share_a_hashed_name() -> None:
    assert physical_name("A") != physical_name("a-") != physical_name("a")


def test_child_names_join_the_parts_and_skip_only_empty_ones() -> None:
    assert child_name("gpu", "lt") == "gpu-lt"
    assert child_name("gpu", "", "lt", 0) == "gpu-lt-0"
    assert child_name("gpu") == "gpu"


def test_resource_tags_put_the_name_and_the_callers_tags_over_the_defaults() -> None:
    default = {"Project": "trainstack", "Name": "default"}
    assert resource_tags(default, "node") == {"Project": "trainstack", "Name": "node"}
    assert resource_tags(default, "node", Project="other", Role="gpu") == {
        "Project": "other",
        "Name": "node",
        "Role": "gpu",
    }
    assert default == {"Project": "trainstack", "Name": "default"}  # the defaults are not changed


@pytest.mark.parametrize(
    ("region", "partition"),
    [("cn-north-1", "aws-cn"), ("us-gov-west-1", "aws-us-gov"), ("us-east-1", "aws"), ("eu-west-1", "aws")],
)
def test_partitions(region: str, partition: str) -> None:
    assert aws_partition(region) == partition

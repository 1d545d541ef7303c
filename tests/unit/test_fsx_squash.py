"""FSx for Lustre root squash values as the FSx API takes them (stacks/fsx_squash.py), each rule at its bounds:
RootSquash `UID:GID` up to 4294967294 with both or neither 0, and NoSquashNids as tcp addresses or ranges."""

from __future__ import annotations

import re

import pytest

from stacks.fsx_squash import MAX_ID, nid_addresses, nid_problem, root_squash_problem, squashes


@pytest.mark.parametrize("value", ["65534:65534", "1:1", f"{MAX_ID}:{MAX_ID}", "0:0", "0000000001:2"])
def test_root_squash_values_fsx_takes(value: str) -> None:
    assert root_squash_problem(value) is None


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        (f"{MAX_ID + 1}:65534", f"UID {MAX_ID + 1} is above {MAX_ID}, the largest UID or GID FSx takes"),
        (f"65534:{MAX_ID + 1}", f"GID {MAX_ID + 1} is above {MAX_ID}, the largest UID or GID FSx takes"),
        (f"{MAX_ID + 1}:{MAX_ID + 1}", f"UID {MAX_ID + 1} is above {MAX_ID}, the largest UID or GID FSx takes"),
        ("0:65534", "UID and GID must both be non-zero (squash) or both 0 (root: no squash)"),
        ("65534:0", "UID and GID must both be non-zero (squash) or both 0 (root: no squash)"),
        ("nobody", "'nobody' is not UID:GID (two numbers of up to 10 digits)"),
        ("1:2:3", "'1:2:3' is not UID:GID (two numbers of up to 10 digits)"),
        ("12345678901:1", "'12345678901:1' is not UID:GID (two numbers of up to 10 digits)"),
    ],
)
def test_root_squash_values_fsx_refuses_say_why(value: str, problem: str) -> None:
    assert root_squash_problem(value) == problem


@pytest.mark.parametrize(
    ("value", "on"),
    [(None, False), ("0:0", False), ("nobody", False), ("65534:65534", True), ("1000:2000", True)],
)
def test_root_squash_is_on_for_a_uid_gid_other_than_root(value: str | None, on: bool) -> None:
    assert squashes(value) is on


@pytest.mark.parametrize(
    "nid",
    [
        "10.0.1.6@tcp",
        "0.0.0.0@tcp",
        "255.255.255.255@tcp",
        "10.0.[2-10].[1-255]@tcp",
        "10.0.[5-5].1@tcp",
        "1.02.003.4@tcp",
    ],
)
def test_nids_fsx_takes(nid: str) -> None:
    assert nid_problem(nid) is None


@pytest.mark.parametrize(
    ("nid", "problem"),
    [
        ("10.0.1.256@tcp", "part 256 is not an address byte (0-255)"),
        ("10.0.[0-256].1@tcp", "part 256 is not an address byte (0-255)"),
        ("10.0.[256-300].1@tcp", "part 256 is not an address byte (0-255)"),
        ("10.0.[10-2].1@tcp", "range [10-2] runs backwards: write [low-high]"),
        ("10.0.0001.1@tcp", "part '0001' is neither a number nor a [low-high] range"),
        ("10.0.x.1@tcp", "part 'x' is neither a number nor a [low-high] range"),
        ("10.0.[1-2-3].1@tcp", "part '[1-2-3]' is neither a number nor a [low-high] range"),
    ],
)
def test_nids_fsx_refuses_say_why(nid: str, problem: str) -> None:
    assert nid_problem(nid) == problem


@pytest.mark.parametrize("nid", ["10.0.1.6@o2ib", "10.0.1@tcp", "10.0.1.6", "10.0.1.6.7@tcp"])
def test_a_nid_that_is_no_ipv4_on_tcp_is_refused_with_an_example(nid: str) -> None:
    assert nid_problem(nid) == (
        f"{nid!r} is not an IPv4 address or range followed by @tcp (e.g. 10.0.1.6@tcp, 10.0.[2-10].[1-255]@tcp)"
    )


@pytest.mark.parametrize(
    ("nid", "addresses"),
    [
        ("10.0.1.6@tcp", 1),
        ("10.0.[5-5].1@tcp", 1),
        ("10.0.1.[1-2]@tcp", 2),
        ("10.0.[2-10].[1-255]@tcp", 9 * 255),
        ("10.[0-1].[0-255].[0-255]@tcp", 2 * 256 * 256),
    ],
)
def test_a_nid_covers_the_product_of_its_ranges(nid: str, addresses: int) -> None:
    assert nid_addresses(nid) == addresses


@pytest.mark.parametrize("nid", ["10.0.1.256@tcp", "10.0.[9-2].1@tcp", "10.0.1.6@o2ib"])
def test_only_a_valid_nid_is_counted(nid: str) -> None:
    with pytest.raises(ValueError, match=re.escape(f"is not a NID: {nid_problem(nid)}")):
        nid_addresses(nid)

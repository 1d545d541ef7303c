"""What a list of CIDRs opens to the internet (policies/address_space.py): the union of the list, minus the private
ranges, counted in addresses, however the list is spelt."""

from __future__ import annotations

import ipaddress

import pytest

from policies.address_space import describe, networks, public_addresses, public_networks

_PRIVATE_V4 = 2**24 + 2**20 + 2**16 + 2**22  # 10/8, 172.16/12, 192.168/16, 100.64/10
_PUBLIC_V4 = 2**32 - _PRIVATE_V4
_PUBLIC_V6 = 2**128 - 2**121  # all but fc00::/7


def test_networks_reads_valid_cidrs_with_host_bits_and_skips_the_rest() -> None:
    assert networks([" 10.1.2.3/8 ", "not-a-cidr", "300.0.0.0/8", "2001:db8::1/32"]) == [
        ipaddress.ip_network("10.0.0.0/8"),
        ipaddress.ip_network("2001:db8::/32"),
    ]


@pytest.mark.parametrize(
    ("cidrs", "count"),
    [
        (["0.0.0.0/0"], _PUBLIC_V4),
        (["0.0.0.0/1", "128.0.0.0/1"], _PUBLIC_V4),  # the internet in halves
        (["0.0.0.0/0", "8.8.8.0/24"], _PUBLIC_V4),  # overlaps counted once
        (["10.0.0.0/8", "172.16.0.0/12", "192.168.1.0/24", "100.64.0.0/10"], 0),
        (["10.0.0.0/7"], 2**24),  # 10/8 private, 11/8 public
        (["172.0.0.0/8"], 2**24 - 2**20),  # a private range inside a public one is cut out
        (["203.0.113.0/24", "203.0.113.128/25"], 256),
        (["203.0.113.7"], 1),
        (["::/0"], _PUBLIC_V6),
        (["fd00::/8"], 0),
        (["0.0.0.0/0", "::/0"], _PUBLIC_V4 + _PUBLIC_V6),
        ([], 0),
        (["garbage"], 0),
    ],
)
def test_public_addresses_counts_the_public_part_of_the_union(cidrs: list[str], count: int) -> None:
    assert public_addresses(cidrs) == count


def test_public_networks_are_collapsed_and_exclude_private_space() -> None:
    assert public_networks(["11.0.0.0/9", "11.128.0.0/9", "10.0.0.0/8"]) == [ipaddress.ip_network("11.0.0.0/8")]
    found = public_networks(["172.0.0.0/8"])
    assert ipaddress.ip_network("172.16.0.0/12") not in found
    assert all(not n.overlaps(ipaddress.ip_network("172.16.0.0/12")) for n in found)


@pytest.mark.parametrize(
    ("count", "text"),
    [
        (256, "256 addresses (0.0000% of IPv4)"),
        (2**24, "16,777,216 addresses (0.3906% of IPv4)"),
        (2**32, "4,294,967,296 addresses (100.0000% of IPv4)"),
        (2**32 + 1, "4,294,967,297 addresses (more than all of IPv4: IPv6 space)"),
    ],
)
def test_describe_reads_as_a_share_of_ipv4_up_to_all_of_it(count: int, text: str) -> None:
    assert describe(count) == text

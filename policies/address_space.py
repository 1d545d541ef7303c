"""What a list of CIDRs means: the public address space it covers, not how it is spelt.

`0.0.0.0/0` is not the only way to write "the internet": `0.0.0.0/1` plus `128.0.0.0/1`, or `0.0.0.0/2` and
three friends, open exactly as much. Rules that guard public access judge the union of the list, minus the
private ranges no internet client can come from, by the number of addresses it covers.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Iterator
from typing import Protocol, Self, TypeVar

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
# One IP version at a time: ipaddress collapses and subtracts networks of one version only.
N = TypeVar("N", ipaddress.IPv4Network, ipaddress.IPv6Network)


class _Subtractable(Protocol):
    """What `_without` uses of a network. Typed as this and not as N because pyrefly 1.5 does not relate two
    values of a constrained TypeVar through a method that takes Self (facebook/pyrefly#4933)."""

    def subnet_of(self, other: Self, /) -> bool: ...
    def address_exclude(self, other: Self, /) -> Iterator[Self]: ...


S = TypeVar("S", bound=_Subtractable)

# Address space that is not reachable from the internet: RFC 1918 private ranges, RFC 6598 shared address
# space (a VPC may use 100.64.0.0/10, VPC User Guide "IPv4 VPC CIDR blocks"), and IPv6 unique local addresses
# (RFC 4193).
PRIVATE_V4 = (
    ipaddress.IPv4Network("10.0.0.0/8"),
    ipaddress.IPv4Network("172.16.0.0/12"),
    ipaddress.IPv4Network("192.168.0.0/16"),
    ipaddress.IPv4Network("100.64.0.0/10"),
)
PRIVATE_V6 = (ipaddress.IPv6Network("fc00::/7"),)


def networks(cidrs: Iterable[str]) -> list[Network]:
    """The valid CIDRs of `cidrs` as networks (host bits ignored; anything unparsable is skipped: the schema
    and the contract check name malformed values)."""
    out: list[Network] = []
    for cidr in cidrs:
        try:
            out.append(ipaddress.ip_network(cidr.strip(), strict=False))
        except ValueError:
            continue
    return out


def _without(network: S, private: Iterable[S]) -> list[S]:
    pieces = [network]
    for excluded in private:
        kept: list[S] = []
        for piece in pieces:
            if piece.subnet_of(excluded):
                continue
            if excluded.subnet_of(piece):
                kept.extend(piece.address_exclude(excluded))
            else:
                kept.append(piece)
        pieces = kept
    return pieces


def _public(same: list[N], private: Iterable[N]) -> list[N]:
    pieces = [piece for n in ipaddress.collapse_addresses(same) for piece in _without(n, private)]
    return list(ipaddress.collapse_addresses(pieces))


def public_networks(cidrs: Iterable[str]) -> list[Network]:
    """The public part of the union of `cidrs`, collapsed (overlaps counted once)."""
    found = networks(cidrs)
    v4 = [n for n in found if isinstance(n, ipaddress.IPv4Network)]
    v6 = [n for n in found if isinstance(n, ipaddress.IPv6Network)]
    return [*_public(v4, PRIVATE_V4), *_public(v6, PRIVATE_V6)]


def public_addresses(cidrs: Iterable[str]) -> int:
    """How many public (internet-routable) addresses the union of `cidrs` covers."""
    return sum(n.num_addresses for n in public_networks(cidrs))


def describe(count: int) -> str:
    """A count of addresses as a person reads it: '256 addresses (0.00001% of IPv4)'."""
    if count > 2**32:
        return f"{count:,} addresses (more than all of IPv4: IPv6 space)"
    return f"{count:,} addresses ({count / 2**32:.4%} of IPv4)"

"""What a list of CIDRs means: the public address space it covers, not how it is spelt.

`0.0.0.0/0` is not the only way to write "the internet": `0.0.0.0/1` plus `128.0.0.0/1`, or `0.0.0.0/2` and
three friends, open exactly as much. Rules that guard public access judge the union of the list, minus the
private ranges no internet client can come from, by the number of addresses it covers.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

Network = ipaddress.IPv4Network | ipaddress.IPv6Network

# Address space that is not reachable from the internet: RFC 1918 private ranges, RFC 6598 shared address
# space (a VPC may use 100.64.0.0/10, VPC User Guide "IPv4 VPC CIDR blocks"), and IPv6 unique local addresses
# (RFC 4193).
PRIVATE: tuple[Network, ...] = (
    ipaddress.IPv4Network("10.0.0.0/8"),
    ipaddress.IPv4Network("172.16.0.0/12"),
    ipaddress.IPv4Network("192.168.0.0/16"),
    ipaddress.IPv4Network("100.64.0.0/10"),
    ipaddress.IPv6Network("fc00::/7"),
)


def networks(cidrs: Iterable[str]) -> list[Network]:
    """The valid CIDRs of `cidrs` as networks (host bits ignored; anything unparsable is skipped: the schema
    and the contract check name malformed values)."""
    out: list[Network] = []
    for cidr in cidrs:
        try:
            out.append(ipaddress.ip_network(str(cidr).strip(), strict=False))
        except ValueError:
            continue
    return out


def _without_private(network: Network) -> list[Network]:
    pieces = [network]
    for private in PRIVATE:
        if private.version != network.version:
            continue
        kept: list[Network] = []
        for piece in pieces:
            if piece.subnet_of(private):  # type: ignore[arg-type]
                continue
            if private.subnet_of(piece):  # type: ignore[arg-type]
                kept.extend(piece.address_exclude(private))  # type: ignore[arg-type]
            else:
                kept.append(piece)
        pieces = kept
    return pieces


def public_networks(cidrs: Iterable[str]) -> list[Network]:
    """The public part of the union of `cidrs`, collapsed (overlaps counted once)."""
    found = networks(cidrs)
    out: list[Network] = []
    for version in (4, 6):
        same = [n for n in found if n.version == version]
        pieces = [piece for n in ipaddress.collapse_addresses(same) for piece in _without_private(n)]  # type: ignore[arg-type]
        out.extend(ipaddress.collapse_addresses(pieces))  # type: ignore[arg-type]
    return out


def public_addresses(cidrs: Iterable[str]) -> int:
    """How many public (internet-routable) addresses the union of `cidrs` covers."""
    return sum(n.num_addresses for n in public_networks(cidrs))


def describe(count: int) -> str:
    """A count of addresses as a person reads it: '256 addresses (0.00001% of IPv4)'."""
    if count > 2**32:
        return f"{count:,} addresses (more than all of IPv4: IPv6 space)"
    return f"{count:,} addresses ({count / 2**32:.4%} of IPv4)"

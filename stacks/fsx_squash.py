"""FSx for Lustre root squash values as the FSx API takes them: one source for the stack schema (which names the
key) and the contract tier (which holds the program's inputs to the same rules, trainstack/contracts/aws_rules.py).

botocore's model only bounds the text (`LustreRootSquash`: `^([0-9]{1,10}):([0-9]{1,10})$`; `LustreNoSquashNid`:
digits, brackets and dashes in four dot-separated parts, then `@tcp`); the API's own documentation says what
the values mean (botocore fsx `LustreRootSquashConfiguration`, and the FSx for Lustre User Guide, "Lustre root
squash"):

- RootSquash is `UID:GID`, each from 0 to 4294967294; each non-zero enables root squash, `0:0` is root itself
  and turns it off; a UID or GID of 0 beside a non-zero one is neither.
- NoSquashNids are client NIDs: an IPv4 address on the tcp network (`10.0.1.6@tcp`), or a range of addresses
  with a part written `[low-high]` (`10.0.[2-10].[1-255]@tcp`). A part outside 0-255, or a range whose low end is
  above its high end, is no address.

>>> root_squash_problem("65534:65534") is None
True
>>> root_squash_problem("4294967295:65534")
'UID 4294967295 is above 4294967294, the largest UID or GID FSx takes'
>>> nid_problem("10.0.[2-10].[1-255]@tcp") is None
True
>>> nid_problem("10.0.300.1@tcp")
'part 300 is not an address byte (0-255)'
>>> nid_addresses("10.0.[2-10].[1-255]@tcp")
2295
"""

from __future__ import annotations

import re

MAX_ID = 4294967294  # the largest UID or GID RootSquash takes (2^32 - 2; 2^32 - 1 is (uid_t) -1)
MAX_NO_SQUASH_NIDS = 64  # botocore fsx LustreNoSquashNids: at most 64 items
# The widest exemption that can name hosts of one VPC: a VPC's CIDR block is at most a /16 (VPC User Guide, "VPC
# CIDR blocks": block sizes from /16, 65,536 addresses, to /28). A wider NID range exempts addresses no client of
# this file system can have, and one as wide as 0.0.0.0/0 exempts every client: root squash would be for show.
MAX_NID_ADDRESSES = 65536
SOURCE = "FSx API LustreRootSquashConfiguration (botocore fsx model); FSx for Lustre User Guide, Lustre root squash"
_SQUASH = re.compile(r"(\d{1,10}):(\d{1,10})")
_NID = re.compile(r"([^.@]+)\.([^.@]+)\.([^.@]+)\.([^.@]+)@tcp")
_RANGE = re.compile(r"\[(\d{1,3})-(\d{1,3})\]")


def root_squash_problem(value: str) -> str | None:
    """What FSx refuses in a RootSquash `UID:GID` value, or None when it takes it."""
    match = _SQUASH.fullmatch(value)
    if match is None:
        return f"{value!r} is not UID:GID (two numbers of up to 10 digits)"
    for name, number in (("UID", int(match[1])), ("GID", int(match[2]))):
        if number > MAX_ID:
            return f"{name} {number} is above {MAX_ID}, the largest UID or GID FSx takes"
    if (int(match[1]) == 0) != (int(match[2]) == 0):
        return "UID and GID must both be non-zero (squash) or both 0 (root: no squash)"
    return None


def squashes(value: str | None) -> bool:
    """Whether a RootSquash value turns root squash on (`0:0` is root itself: off)."""
    return value is not None and _SQUASH.fullmatch(value) is not None and value != "0:0"


def nid_problem(nid: str) -> str | None:
    """What makes `nid` no client address or address range on the tcp network, or None."""
    match = _NID.fullmatch(nid)
    if match is None:
        return f"{nid!r} is not an IPv4 address or range followed by @tcp (e.g. 10.0.1.6@tcp, 10.0.[2-10].[1-255]@tcp)"
    for part in match.groups():
        if part.isdigit() and len(part) <= 3:
            ends = [int(part)]
        elif (span := _RANGE.fullmatch(part)) is not None:
            ends = [int(span[1]), int(span[2])]
            if ends[0] > ends[1]:
                return f"range {part} runs backwards: write [low-high]"
        else:
            return f"part {part!r} is neither a number nor a [low-high] range"
        for end in ends:
            if end > 255:
                return f"part {end} is not an address byte (0-255)"
    return None


def nid_addresses(nid: str) -> int:
    """How many client addresses a valid NID covers: 1 for an address, the product of each part's span for a
    range (`10.0.[2-10].[1-255]@tcp`: 9 x 255 = 2295)."""
    match = _NID.fullmatch(nid)
    if match is None or nid_problem(nid) is not None:
        raise ValueError(f"{nid!r} is not a NID: {nid_problem(nid)}")
    count = 1
    for part in match.groups():
        span = _RANGE.fullmatch(part)
        count *= int(span[2]) - int(span[1]) + 1 if span else 1
    return count

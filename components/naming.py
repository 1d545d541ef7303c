"""Pure naming and tagging rules, shared by every component.

Logical names are derived from the component's own name, so two components (or two stacks in one
account) never collide; physical names that AWS requires to be unique per account or region carry the
stack's base name. Tags: the global set (`StackConfig.default_tags`) goes on the AWS provider; `resource_tags` is what
launch templates add to instances, volumes and network interfaces, which default tags do not reach.
"""

from __future__ import annotations

import hashlib
import re

_INVALID = re.compile(r"[^a-z0-9-]+")
_DIGEST = 8  # hex digits of the hash that keeps cut or folded names distinct
_LOOKS_CUT = re.compile(rf"-[0-9a-f]{{{_DIGEST}}}\Z")  # how a cut or folded name ends


def aws_partition(region: str) -> str:
    """The ARN partition of a region: `aws-cn` for China, `aws-us-gov` for GovCloud, else `aws`.

    Every component derives the partition from the stack's region with this function, never from a data source
    and never as a literal, so ARNs are right in every partition and known while the program runs.
    """
    if region.startswith("cn-"):
        return "aws-cn"
    if region.startswith("us-gov-"):
        return "aws-us-gov"
    return "aws"


def child_name(parent: str, *parts: str | int) -> str:
    """The logical name of a component's child: the parent's name and the parts, joined by dashes."""
    return "-".join([parent, *(str(p) for p in parts if str(p) != "")])


def physical_name(base: str, *parts: str | int, max_length: int = 63) -> str:
    """A lower-case, dash-separated AWS name of at most `max_length` characters.

    A name that fits is kept as it reads. One that is too long, or that had to be changed to be valid
    (upper case, other characters, repeated dashes), ends in 8 hex digits of a hash of the name as asked
    for, so two different requests never end with the same physical name: cutting `...-p5-train-a` and
    `...-p5-train-b` to 63 characters, or folding `a--b` into `a-b`, would otherwise collide. A name that fits
    but already ends like a cut one (a dash and 8 hex digits) is hashed too: kept as it reads, a group named
    after another group's cut name would take that very name.

    >>> physical_name("trainstack-prod", "p5-train", "lt")
    'trainstack-prod-p5-train-lt'
    """
    asked = "-".join([base, *(str(p) for p in parts)])
    name = re.sub("-{2,}", "-", _INVALID.sub("-", asked.lower())).strip("-")
    if name == asked and len(name) <= max_length and not _LOOKS_CUT.search(name):
        return name
    digest = hashlib.sha256(asked.encode()).hexdigest()[:_DIGEST]
    return f"{name[: max_length - _DIGEST - 1].rstrip('-')}-{digest}"


def resource_tags(default: dict[str, str], name: str, **more: str) -> dict[str, str]:
    """Tags for things default_tags do not reach (launch-template instances, volumes, interfaces)."""
    return {**default, "Name": name, **more}

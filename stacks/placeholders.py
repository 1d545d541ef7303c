"""Example values a user must replace before a real deployment.

The shipped stack files use documentation values (AWS's example account IDs, RFC 5737 address ranges,
RFC 2606 example domains, trainstack's example reservation ID) so that the offline plan runs anywhere. The
offline plan lists them as advisories; under the real Pulumi CLI the program refuses to deploy while any
remains (components/deploy_guard.py), naming the key, the value and what to put there. The search walks the
whole validated config, so a new field is covered without a change here.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterator
from dataclasses import dataclass

from stacks.schema import StackConfig

# Account IDs the AWS documentation uses in examples (IAM User Guide and the EKS/KMS guides' policy examples).
DOCUMENTATION_ACCOUNTS = frozenset({"123456789012", "111122223333", "444455556666", "777788889999"})
# RFC 5737: TEST-NET-1/2/3, reserved for documentation; never routed on the internet.
DOCUMENTATION_NETWORKS = tuple(ipaddress.IPv4Network(n) for n in ("192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24"))
# RFC 2606: reserved example domains.
DOCUMENTATION_DOMAINS = ("example.com", "example.net", "example.org")
# The On-Demand Capacity Reservation ID in stacks/Pulumi.prod.yaml: well-formed, owned by nobody.
EXAMPLE_RESERVATIONS = frozenset({"cr-0a1b2c3d4e5f67890"})

_ACCOUNT = re.compile(r"^arn:aws[a-z-]*:[a-z0-9-]+:[a-z0-9-]*:(\d{12}):")


@dataclass(frozen=True)
class Placeholder:
    path: str  # key path in the stack config, e.g. eks.admin_role_arns[0]
    value: str
    put: str  # what belongs there instead

    def render(self) -> str:
        return f"{self.path} = {self.value!r} is an example value: put {self.put}"


def _kind(value: str) -> str | None:
    """What a documentation value stands for, or None for a real value."""
    match = _ACCOUNT.match(value)
    if match and match[1] in DOCUMENTATION_ACCOUNTS:
        return "an ARN in your own AWS account (the documentation account IDs exist for examples only)"
    if value in EXAMPLE_RESERVATIONS:
        return "your reservation's ID (`aws ec2 describe-capacity-reservations`)"
    domain = value.rsplit("@", 1)[1].lower() if "@" in value else None
    if domain is not None and any(domain == d or domain.endswith(f".{d}") for d in DOCUMENTATION_DOMAINS):
        return "a real, monitored address"
    try:
        network = ipaddress.ip_network(value, strict=False)
    except ValueError:
        return None
    if isinstance(network, ipaddress.IPv4Network) and any(network.subnet_of(d) for d in DOCUMENTATION_NETWORKS):
        return "the CIDRs that need the endpoint (office or VPN egress); RFC 5737 ranges are for documentation"
    return None


# A config as `model_dump(mode="json")` returns it.
Json = dict[str, "Json"] | list["Json"] | str | int | float | bool | None


def _walk(value: Json, path: str) -> Iterator[tuple[str, str]]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _walk(item, f"{path}.{key}" if path else str(key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _walk(item, f"{path}[{index}]")
    elif isinstance(value, str):
        yield path, value


def find(stack: StackConfig) -> list[Placeholder]:
    """Every example value left in a validated stack config, in key order."""
    found: list[Placeholder] = []
    for path, value in _walk(stack.model_dump(mode="json"), ""):
        put = _kind(value)
        if put is not None:
            found.append(Placeholder(path, value, put))
    return found

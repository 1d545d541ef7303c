"""Whether the NetworkPolicies of a cluster let one endpoint reach another, as the NetworkPolicy API defines it.

The rules (Kubernetes networking.k8s.io/v1 NetworkPolicy API reference and the "Network Policies" concept page;
the same semantics kubernetes test/e2e/network/netpol/network_policy.go probes):
- A pod is isolated for egress (ingress) when a policy in its namespace selects it (`podSelector`) and lists
  Egress (Ingress) in `policyTypes`; `policyTypes` left out means Ingress, plus Egress when the policy has egress
  rules. A pod no policy isolates allows everything in that direction.
- Policies are additive: an isolated pod allows a connection when any rule of any policy selecting it allows it.
- A rule allows a peer when any of its `to`/`from` peers matches (none: every peer) and a port when any of its
  `ports` matches (none: every port). A peer with both `namespaceSelector` and `podSelector` matches pods
  selected by both; `podSelector` alone means the policy's own namespace; `ipBlock` matches addresses in its
  CIDR outside `except` (cluster-external addresses: pod addresses are not matched here, which the API leaves to
  the implementation). A port is a protocol (TCP by default), a number or a container port name, and `endPort`
  makes it a range.
- A connection needs both the source's egress and the destination's ingress to allow it; an address outside
  the cluster has no ingress side.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

SOURCE = "Kubernetes networking.k8s.io/v1 NetworkPolicy (API reference; kubernetes test/e2e/network/netpol)"


@dataclass(frozen=True)
class Endpoint:
    """A pod (namespace, its labels, the pod's labels and named ports) or an address outside the cluster."""

    namespace: str = ""
    namespace_labels: Mapping[str, str] = field(default_factory=dict)
    labels: Mapping[str, str] = field(default_factory=dict)
    named_ports: Mapping[str, int] = field(default_factory=dict)
    address: str = ""  # set for an address outside the cluster

    @property
    def is_pod(self) -> bool:
        return not self.address


@dataclass(frozen=True)
class Policy:
    namespace: str
    name: str
    spec: Mapping[str, Any]


def selects(selector: Mapping[str, Any] | None, labels: Mapping[str, str]) -> bool:
    """A LabelSelector (matchLabels and matchExpressions; an empty one selects everything)."""
    selector = selector or {}
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    for expression in selector.get("matchExpressions") or []:
        key, operator, values = expression["key"], expression["operator"], expression.get("values") or []
        present = key in labels
        if operator == "In" and not (present and labels[key] in values):
            return False
        if operator == "NotIn" and present and labels[key] in values:
            return False
        if operator == "Exists" and not present:
            return False
        if operator == "DoesNotExist" and present:
            return False
    return True


def policy_types(spec: Mapping[str, Any]) -> set[str]:
    if "policyTypes" in spec:
        return set(spec["policyTypes"])
    return {"Ingress", *(("Egress",) if spec.get("egress") else ())}


def _peer_matches(peer: Mapping[str, Any], policy_namespace: str, other: Endpoint) -> bool:
    if "ipBlock" in peer:
        if other.is_pod:
            return False
        address = ipaddress.ip_address(other.address)
        block = peer["ipBlock"]
        if address not in ipaddress.ip_network(block["cidr"], strict=False):
            return False
        return not any(address in ipaddress.ip_network(e, strict=False) for e in block.get("except") or [])
    if not other.is_pod:
        return False
    if "namespaceSelector" in peer:
        in_namespace = selects(peer["namespaceSelector"], other.namespace_labels)
    else:
        in_namespace = other.namespace == policy_namespace
    return in_namespace and selects(peer.get("podSelector"), other.labels)


def _port_ranges(rule: Mapping[str, Any], protocol: str, server: Endpoint) -> list[tuple[int, int]]:
    """The port ranges of `protocol` a rule allows toward `server` (named ports resolved on the server pod)."""
    if not rule.get("ports"):
        return [(1, 65535)]
    ranges: list[tuple[int, int]] = []
    for port in rule["ports"]:
        if port.get("protocol", "TCP") != protocol:
            continue
        value = port.get("port")
        if value is None:
            ranges.append((1, 65535))
        elif isinstance(value, str) and not value.isdigit():
            if value in server.named_ports:
                ranges.append((server.named_ports[value], server.named_ports[value]))
        else:
            low = int(float(value))
            ranges.append((low, int(float(port.get("endPort", low)))))
    return ranges


def _covers(ranges: Iterable[tuple[int, int]], low: int, high: int) -> bool:
    """Whether the union of `ranges` covers every port from `low` to `high`."""
    reach = low
    for start, end in sorted(ranges):
        if start > reach:
            break
        reach = max(reach, end + 1)
        if reach > high:
            return True
    return reach > high


def _allowed(
    policies: Sequence[Policy], subject: Endpoint, direction: str, peer: Endpoint, server: Endpoint,
    protocol: str, ports: tuple[int, int],
) -> tuple[bool, list[str]]:  # fmt: skip
    """Whether `subject`'s policies for `direction` allow `peer` on `ports`, and the policies that did."""
    selecting = [
        p
        for p in policies
        if p.namespace == subject.namespace
        and selects(p.spec.get("podSelector"), subject.labels)
        and direction in policy_types(p.spec)
    ]
    if not selecting:
        return True, ["not isolated"]
    key, peers_key = ("egress", "to") if direction == "Egress" else ("ingress", "from")
    ranges: list[tuple[int, int]] = []
    names: list[str] = []
    for policy in selecting:
        for rule in policy.spec.get(key) or []:
            peers = rule.get(peers_key)
            if peers and not any(_peer_matches(p, policy.namespace, peer) for p in peers):
                continue
            found = _port_ranges(rule, protocol, server)
            if found:
                ranges += found
                names.append(policy.name)
    return _covers(ranges, *ports), sorted(set(names))


@dataclass(frozen=True)
class Verdict:
    allowed: bool
    egress: list[str]  # the policies that allowed the source's side (or "not isolated")
    ingress: list[str]


def connection(
    policies: Sequence[Policy], source: Endpoint, destination: Endpoint, protocol: str, ports: tuple[int, int]
) -> Verdict:
    """Whether `source` may open connections to `destination` on every port of `ports` over `protocol`."""
    egress_ok, egress = (
        _allowed(policies, source, "Egress", destination, destination, protocol, ports)
        if source.is_pod
        else (True, ["outside the cluster"])
    )
    ingress_ok, ingress = (
        _allowed(policies, destination, "Ingress", source, destination, protocol, ports)
        if destination.is_pod
        else (True, ["outside the cluster"])
    )
    return Verdict(egress_ok and ingress_ok, egress, ingress)

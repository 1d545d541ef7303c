"""Short names for a reviewer: `GpuNodeGroup p5e-burst: launch template, node group` instead of full URNs.

A logical name starts with the cluster's name (`trainstack-prod-...`) and a component's children start with
the component's name; both prefixes say nothing a reviewer needs. A resource is shown under its nearest
component, by its kind (the type's last part, in words).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable

from trainstack.engine import RecordedResource


def kind(type_token: str) -> str:
    """`aws:ec2/launchTemplate:LaunchTemplate` -> `launch template`; `kubernetes:core/v1:Namespace` -> `namespace`."""
    last = type_token.rsplit(":", 1)[-1]
    return " ".join(re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z0-9]+", last)).lower() or last


def component_kind(type_token: str) -> str:
    """`trainstack:gpu:GpuNodeGroup` -> `GpuNodeGroup`."""
    return type_token.rsplit(":", 1)[-1]


def short(name: str, prefix: str) -> str:
    """`trainstack-prod-gpu-p5-train` without `trainstack-prod-`; the name itself when nothing would be left."""
    if prefix and name.startswith(prefix + "-") and len(name) > len(prefix) + 1:
        return name[len(prefix) + 1 :]
    return name


def component_name(resource: RecordedResource, cluster: str) -> str:
    """A component's short name: without the cluster prefix and its module's word (`gpu-` of `trainstack:gpu:...`)."""
    name = short(resource.name, cluster)
    parts = resource.type.split(":")
    module = parts[1] if len(parts) == 3 else ""
    return short(name, module)


def urn_name(urn: str) -> str:
    return urn.rsplit("::", 1)[-1]


def urn_type(urn: str) -> str:
    """The resource's own type from a URN (`...::parent$child-type::name`)."""
    return urn.split("::")[-2].rsplit("$", 1)[-1] if urn.count("::") >= 3 else ""


def owner(resource: RecordedResource, by_urn: dict[str, RecordedResource]) -> RecordedResource | None:
    """The nearest component (non-custom resource) above `resource`, or None at the root."""
    parent = by_urn.get(resource.parent)
    while parent is not None and parent.custom:
        parent = by_urn.get(parent.parent)
    return parent


def grouped(urns: Iterable[str], resources: dict[str, RecordedResource], cluster: str) -> list[tuple[str, list[str]]]:
    """(component label, member labels) for the given URNs, in first-seen order.

    A component in `urns` stands for itself (its label, no member). A member is its kind; a kind that occurs
    two or three times lists their short names, more than three is counted (`8 x security group rule`).
    """
    members: dict[str, list[RecordedResource]] = defaultdict(list)
    labels: dict[str, str] = {}
    loose: list[str] = []
    for urn in urns:
        resource = resources.get(urn)
        if resource is None:
            loose.append(f"{kind(urn_type(urn))} {short(urn_name(urn), cluster)}")
            continue
        top = resource if not resource.custom else owner(resource, resources)
        key = top.urn if top is not None else ""
        if key not in labels:
            labels[key] = f"{component_kind(top.type)} {component_name(top, cluster)}" if top is not None else ""
            members[key] = []
        if resource.custom:
            members[key].append(resource)
    out: list[tuple[str, list[str]]] = []
    for key, items in members.items():
        if not key:
            out += [(f"{kind(r.type)} {short(r.name, cluster)}", []) for r in items]
            continue
        by_kind: dict[str, list[RecordedResource]] = defaultdict(list)
        for r in items:
            by_kind[kind(r.type)].append(r)
        names: list[str] = []
        for label, same in by_kind.items():
            if len(same) == 1:
                names.append(label)
            elif len(same) <= 3:
                names += [f"{label} {short(r.name, resources[key].name)}" for r in same]
            else:
                names.append(f"{len(same)} x {label}")
        out.append((labels[key], names))
    out += [(label, []) for label in loose]
    return out

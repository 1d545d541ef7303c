"""What a pod asks for once the API server and Kueue have filled it in, and whether a namespace's quota admits it.

Each function restates one upstream rule, named where it is defined, over pods as plain API dicts:

- LimitRange defaulting (kubernetes v1.36 plugin/pkg/admission/limitranger/admission.go `mergeContainerResources`):
  every container and init container gets the `default` limit and the `defaultRequest` request of each resource
  it does not name; what it names is kept.
- Kueue's view of the same pod (kubernetes-sigs/kueue v0.14.8 pkg/workload/resources.go `AdjustResources`): the
  LimitRange merged the same way, then a limit stands in for a missing request (`UseLimitsAsMissingRequestsInPod`).
- A pod's effective requests and limits (kubernetes v1.36 staging/src/k8s.io/component-helpers/resource/helpers.go
  `PodRequests`): the containers' sum, or an init container's value when larger (restartable sidecars run beside).
- ResourceQuota admission (kubernetes v1.36 pkg/quota/v1/evaluator/core/pods.go): a quota naming cpu or memory
  (requests.*, limits.* or plain) needs every container and init container to state it, and the pods' usage
  (requests.*, limits.*, extended `requests.<name>`, `pods`) must fit `hard`.
- The size of a memory-backed emptyDir (kubernetes v1.36 pkg/volume/emptydir/empty_dir.go
  `calculateEmptyDirMemorySize`): node allocatable memory, lowered to the pod's memory limit, lowered to the
  volume's `sizeLimit`.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from trainstack.journeys import quantity
from trainstack.journeys.quantity import Resources

Pod = dict[str, Any]  # a PodSpec as the API spells it


def containers(pod: Pod) -> list[dict[str, Any]]:
    """Init containers, then containers (the order the kubelet starts them)."""
    return [*pod.get("initContainers", []), *pod.get("containers", [])]


# ---------------------------------------------------------------------------------------------- LimitRange


def container_defaults(limit_ranges: Sequence[Mapping[str, Any]]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(defaultRequest, default) of the `Container` items of a namespace's LimitRanges, as written; the first
    range to name a resource wins, as the admission plugin applies the ranges one after another and never
    overwrites."""
    requests: dict[str, Any] = {}
    limits: dict[str, Any] = {}
    for limit_range in limit_ranges:
        for item in limit_range.get("spec", {}).get("limits", []):
            if item.get("type") != "Container":
                continue
            for name, value in (item.get("defaultRequest") or {}).items():
                requests.setdefault(name, value)
            for name, value in (item.get("default") or {}).items():
                limits.setdefault(name, value)
    return requests, limits


@dataclass(frozen=True)
class Defaulted:
    """One value a LimitRange supplied: the container, `requests` or `limits`, the resource."""

    container: str
    field: str
    resource: str


def apply_limit_range(pod: Pod, limit_ranges: Sequence[Mapping[str, Any]]) -> tuple[Pod, tuple[Defaulted, ...]]:
    """The pod as the LimitRanger admission plugin leaves it, and what it filled in."""
    default_requests, default_limits = container_defaults(limit_ranges)
    pod = copy.deepcopy(pod)
    filled: list[Defaulted] = []
    for container in containers(pod):
        resources = container.setdefault("resources", {})
        for field, defaults in (("limits", default_limits), ("requests", default_requests)):
            stated = resources.setdefault(field, {})
            for name, value in defaults.items():
                if name not in stated:
                    stated[name] = value
                    filled.append(Defaulted(container["name"], field, name))
    return pod, tuple(filled)


def kueue_view(pod: Pod, limit_ranges: Sequence[Mapping[str, Any]]) -> Pod:
    """The pod as Kueue counts it: LimitRange defaults merged, then limits standing in for missing requests."""
    pod, _ = apply_limit_range(pod, limit_ranges)
    for container in containers(pod):
        resources = container["resources"]
        for name, value in resources.get("limits", {}).items():
            resources["requests"].setdefault(name, value)
    return pod


# ----------------------------------------------------------------------------------------- pod totals


def _stated(container: Mapping[str, Any], field: str) -> Resources:
    return quantity.resources(container.get("resources", {}).get(field))


def pod_total(pod: Pod, field: str = "requests") -> Resources:
    """The pod's effective `requests` or `limits`: its containers and sidecars, or an init container that needs
    more while it runs before them (with the sidecars started before it)."""
    sidecars: Resources = {}
    init_peaks: list[Resources] = []
    for init in pod.get("initContainers", []):
        stated = _stated(init, field)
        if init.get("restartPolicy") == "Always":
            sidecars = quantity.add(sidecars, stated)
            init_peaks.append(dict(sidecars))
        else:
            init_peaks.append(quantity.add(sidecars, stated))
    running = quantity.add(sidecars, *(_stated(c, field) for c in pod.get("containers", [])))
    return quantity.maximum([running, *init_peaks])


def pod_memory_limit(pod: Pod) -> Fraction | None:
    """The pod cgroup's memory limit: set only when every container states one (kubelet ResourceConfigForPod)."""
    if any("memory" not in _stated(c, "limits") for c in containers(pod)):
        return None
    return pod_total(pod, "limits")["memory"]


def memory_volume_bytes(pod: Pod, volume: str, node_allocatable_memory: Fraction) -> Fraction:
    """What a memory-backed emptyDir `volume` of `pod` may hold on a node with that allocatable memory."""
    size = node_allocatable_memory
    limit = pod_memory_limit(pod)
    if limit is not None and 0 < limit <= size:
        size = limit
    for spec in pod.get("volumes", []):
        if spec.get("name") == volume and "sizeLimit" in spec.get("emptyDir", {}):
            cap = quantity.parse(spec["emptyDir"]["sizeLimit"])
            if 0 < cap <= size:
                size = cap
    return size


# ----------------------------------------------------------------------------------------- ResourceQuota

# Quota names that make every container state the resource (pods.go `validationSet`, the compatibility rule).
_MUST_STATE = {
    "cpu": ("requests", "cpu"),
    "memory": ("requests", "memory"),
    "requests.cpu": ("requests", "cpu"),
    "requests.memory": ("requests", "memory"),
    "limits.cpu": ("limits", "cpu"),
    "limits.memory": ("limits", "memory"),
}
_STANDARD = ("cpu", "memory", "ephemeral-storage")


def quota_missing(pod: Pod, hard: Mapping[str, Any]) -> list[str]:
    """What a quota's `hard` makes the pod state and some container does not ("must specify ..."), sorted."""
    missing: set[str] = set()
    for name, (field, resource) in _MUST_STATE.items():
        if name in hard and any(resource not in _stated(c, field) for c in containers(pod)):
            missing.add(name)
    return sorted(missing)


def quota_usage(pod: Pod) -> Resources:
    """What one pod counts against a ResourceQuota (pods.go PodUsageFunc)."""
    requests, limits = pod_total(pod, "requests"), pod_total(pod, "limits")
    usage: Resources = {"pods": Fraction(1)}
    for name, value in requests.items():
        usage[f"requests.{name}"] = value
        if name in _STANDARD or name.startswith(
            "hugepages-"
        ):  # hugepages count in both forms (requestedResourcePrefixes)
            usage[name] = value
    for name, value in limits.items():
        if name in _STANDARD or name.startswith("hugepages-"):
            usage[f"limits.{name}"] = value
    return usage


def quota_applies(pod: Pod, spec: Mapping[str, Any]) -> bool:
    """Whether a quota counts the pod: every requirement of its scopeSelector matches (pods.go
    `podMatchesScopeFunc`). PriorityClass matches the pod's priorityClassName as a label selector would (no class:
    no label, so In never matches and NotIn always does; Exists: a class is named); the other scopes a training
    pod may meet by the pod's fields. `scopes` (the older list form) is read the same way."""
    selector = (spec.get("scopeSelector") or {}).get("matchExpressions") or []
    requirements = [*selector, *({"scopeName": s, "operator": "Exists"} for s in spec.get("scopes") or [])]
    return all(_matches_scope(pod, r) for r in requirements)


def _matches_scope(pod: Pod, requirement: Mapping[str, Any]) -> bool:
    scope, operator = requirement.get("scopeName"), requirement.get("operator")
    values = list(requirement.get("values") or [])
    if scope == "PriorityClass":
        name = pod.get("priorityClassName") or ""
        if operator == "Exists":
            return bool(name)
        if operator == "DoesNotExist":
            return not name
        if operator == "In":
            return bool(name) and name in values
        if operator == "NotIn":
            return not name or name not in values
        raise ValueError(f"PriorityClass scope operator {operator!r} is not In, NotIn, Exists or DoesNotExist")
    terminating = pod.get("activeDeadlineSeconds") is not None and int(pod["activeDeadlineSeconds"]) >= 0
    best_effort = not any(c.get("resources", {}).get(f) for c in containers(pod) for f in ("requests", "limits"))
    known = {
        "Terminating": terminating,
        "NotTerminating": not terminating,
        "BestEffort": best_effort,
        "NotBestEffort": not best_effort,
    }
    if scope not in known:
        raise ValueError(f"quota scope {scope!r} is not modelled")
    return known[scope]


def quota_over(pods: Iterable[tuple[int, Pod]], hard: Mapping[str, Any]) -> dict[str, tuple[Fraction, Fraction]]:
    """The quota's resources that `count` copies of each pod together take more of than `hard` allows."""
    used = quantity.add(*(quantity.scale(quota_usage(pod), count) for count, pod in pods))
    limits = quantity.resources(hard)
    return quantity.over({name: value for name, value in used.items() if name in limits}, limits)

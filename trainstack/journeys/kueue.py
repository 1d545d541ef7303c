"""How Kueue v0.14.8 sees a workload: the resources it counts, the queue that must cover them, the quota it fits.

- The workload's pod sets are the JobSet's, adjusted as `pkg/workload/resources.go` `AdjustResources` does
  (`trainstack.journeys.resources.kueue_view`), totalled per pod (`resourcehelpers.PodRequests`), and stripped of
  the resources the configuration excludes (`resources.excludeResourcePrefixes`, `pkg/workload/workload.go`
  `dropExcludedResources`).
- Every resource left must be covered by a resource group of the ClusterQueue, or the workload is not admitted:
  "resource %s unavailable in ClusterQueue" (`pkg/scheduler/flavorassigner/flavorassigner.go`
  `findFlavorForPodSets`).
- Without borrowing, the workload fits when its total of each resource is at most the flavor's `nominalQuota`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from fractions import Fraction
from typing import Any

import yaml

from trainstack.journeys import quantity
from trainstack.journeys.network_policy import selects
from trainstack.journeys.quantity import Resources
from trainstack.journeys.resources import Pod, kueue_view, pod_total

SOURCE = "kubernetes-sigs/kueue v0.14.8 pkg/workload/resources.go, pkg/scheduler/flavorassigner/flavorassigner.go"


def excluded_prefixes(controller_config_yaml: str) -> tuple[str, ...]:
    """`resources.excludeResourcePrefixes` of Kueue's controller configuration (the chart's
    `managerConfig.controllerManagerConfigYaml`)."""
    config = yaml.safe_load(controller_config_yaml) or {}
    return tuple((config.get("resources") or {}).get("excludeResourcePrefixes") or ())


def pod_requests(pod: Pod, limit_ranges: Sequence[Mapping[str, Any]], excluded: Iterable[str]) -> Resources:
    """One pod's requests as Kueue counts them."""
    excluded = tuple(excluded)
    totals = pod_total(kueue_view(pod, limit_ranges), "requests")
    return {name: value for name, value in totals.items() if not name.startswith(excluded)}


def covered(cluster_queue: Mapping[str, Any]) -> set[str]:
    return {name for group in cluster_queue.get("resourceGroups", []) for name in group.get("coveredResources", [])}


def uncovered(requests: Mapping[str, Fraction], cluster_queue: Mapping[str, Any]) -> list[str]:
    """The requested resources no resource group of the ClusterQueue covers (each one refuses the workload)."""
    return sorted(set(requests) - covered(cluster_queue))


def nominal(cluster_queue: Mapping[str, Any]) -> Resources:
    """The nominal quota summed over the queue's flavors, per resource."""
    return quantity.add(
        *(
            {r["name"]: quantity.parse(r["nominalQuota"]) for r in flavor.get("resources", [])}
            for group in cluster_queue.get("resourceGroups", [])
            for flavor in group.get("flavors", [])
        )
    )


def selects_namespace(cluster_queue: Mapping[str, Any], namespace_labels: Mapping[str, str]) -> bool:
    """Whether the ClusterQueue's `namespaceSelector` admits workloads from a namespace with these labels (a nil
    selector admits none: Kueue ClusterQueue API, `namespaceSelector`)."""
    selector = cluster_queue.get("namespaceSelector")
    return selector is not None and selects(selector, namespace_labels)

"""Quantities and pod resources as the journeys read them, one rule at a time and at their edges: how a quantity is
written in a message, what a resource a capacity lacks is compared with, the pod cgroup's memory limit when one
container states none, a memory-backed emptyDir's size at each bound, and what a limit counts against a quota
(kubernetes pkg/quota/v1/evaluator/core/pods.go PodUsageFunc; kubelet ResourceConfigForPod)."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest

from trainstack.journeys import quantity
from trainstack.journeys import resources as res

GI = 2**30


@pytest.mark.parametrize(
    ("name", "value", "shown"),
    [
        ("cpu", Fraction(239, 10), "23.9 vCPU"),
        ("cpu", Fraction(254), "254 vCPU"),
        ("memory", Fraction(2 * GI), "2 GiB"),
        ("ephemeral-storage", Fraction(3 * GI, 2), "1.5 GiB"),
        ("hugepages-2Mi", Fraction(GI), "1 GiB"),
        ("nvidia.com/gpu", Fraction(8), "8"),
        ("pods", Fraction(1, 2), "0.5"),
    ],
)
def test_each_kind_of_quantity_reads_in_its_unit(name: str, value: Fraction, shown: str) -> None:
    assert quantity.text(name, value) == shown


def test_a_resource_the_capacity_lacks_has_none_of_it() -> None:
    assert quantity.over({"nvidia.com/gpu": Fraction(1)}, {}) == {"nvidia.com/gpu": (Fraction(1), Fraction(0))}
    assert quantity.over({"cpu": Fraction(1, 2)}, {"memory": Fraction(GI)}) == {"cpu": (Fraction(1, 2), Fraction(0))}
    assert quantity.over({"cpu": Fraction(2)}, {"cpu": Fraction(2)}) == {}  # equal is not over
    assert quantity.over({"cpu": Fraction(0)}, {}) == {}


@pytest.mark.parametrize(
    ("value", "exact"),
    [
        (2.0, Fraction(2)),
        (0.1, Fraction(1, 10)),
        (1e23, Fraction(10**23)),  # its decimal text, as the engine's JSON carries it, not the double's binary value
        ("500m", Fraction(1, 2)),
        ("1e3", Fraction(1000)),
        ("2Gi", 2 * GI),
    ],
)
def test_numbers_and_texts_parse_exactly(value: object, exact: Fraction) -> None:
    assert quantity.parse(value) == exact


def _container(name: str, **limits: str) -> dict[str, Any]:
    return {"name": name, "resources": {"limits": limits}} if limits else {"name": name}


def test_the_pod_memory_limit_needs_every_container_to_state_one() -> None:
    both = {"containers": [_container("a", memory="4Gi"), _container("b", memory="2Gi")]}
    assert res.pod_memory_limit(both) == 6 * GI
    one = {"containers": [_container("a", memory="4Gi"), _container("b", cpu="1")]}
    assert res.pod_memory_limit(one) is None


def _shm(size_limit: str | None = None, pod_limit: str | None = None) -> dict[str, Any]:
    empty_dir: dict[str, Any] = {"medium": "Memory"} | ({"sizeLimit": size_limit} if size_limit else {})
    container = _container("a", memory=pod_limit) if pod_limit else _container("a")
    return {"containers": [container], "volumes": [{"name": "dshm", "emptyDir": empty_dir}]}


NODE = Fraction(64 * GI)


@pytest.mark.parametrize(
    ("size_limit", "pod_limit", "size"),
    [
        ("0", None, 64 * GI),  # a zero size limit is no limit
        ("1Gi", None, GI),
        ("64Gi", None, 64 * GI),
        ("65Gi", None, 64 * GI),  # above what the node gives: the node's
        ("16Gi", "8Gi", 8 * GI),  # above the pod's limit: the pod's
        ("4Gi", "8Gi", 4 * GI),
        (None, "0", 64 * GI),  # a zero pod limit is no limit
        (None, "65Gi", 64 * GI),
    ],
)
def test_a_memory_emptydir_holds_the_least_of_its_bounds(
    size_limit: str | None, pod_limit: str | None, size: int
) -> None:
    assert res.memory_volume_bytes(_shm(size_limit, pod_limit), "dshm", NODE) == size


def test_another_volumes_size_limit_does_not_bound_this_one() -> None:
    pod = _shm("1Gi")
    pod["volumes"][0]["name"] = "scratch"
    pod["volumes"].append({"name": "dshm", "emptyDir": {"medium": "Memory"}})
    assert res.memory_volume_bytes(pod, "dshm", NODE) == NODE


def test_limits_count_against_a_quota_for_standard_resources_and_hugepages_only() -> None:
    limits = {"cpu": "2", "memory": "1Gi", "ephemeral-storage": "1Gi", "hugepages-2Mi": "1Gi", "nvidia.com/gpu": "8"}
    usage = res.quota_usage({"containers": [{"name": "a", "resources": {"limits": limits}}]})
    counted = {name for name in usage if name.startswith("limits.")}
    assert counted == {"limits.cpu", "limits.memory", "limits.ephemeral-storage", "limits.hugepages-2Mi"}


@pytest.mark.parametrize("text", ["", "Gi", "2 Gi", "2GiB", "1.5Zi", "0x10", "1e", "--1"])
def test_what_is_not_a_quantity_is_refused_by_name(text: str) -> None:
    with pytest.raises(ValueError, match="not a Kubernetes quantity"):
        quantity.parse(text)


def test_a_resource_list_reads_each_value_and_an_absent_list_is_empty() -> None:
    assert quantity.resources(None) == {}
    assert quantity.resources({}) == {}
    assert quantity.resources({"cpu": "500m", "memory": "1Gi"}) == {"cpu": Fraction(1, 2), "memory": Fraction(GI)}


def test_lists_add_per_resource_and_a_resource_only_one_list_has_is_kept() -> None:
    one, two = {"cpu": Fraction(1), "memory": Fraction(GI)}, {"cpu": Fraction(3, 2), "nvidia.com/gpu": Fraction(8)}
    assert quantity.add(one, two) == {"cpu": Fraction(5, 2), "memory": Fraction(GI), "nvidia.com/gpu": Fraction(8)}
    assert quantity.add() == {}


def test_a_list_scales_by_a_count_and_the_maximum_is_per_resource() -> None:
    pod = {"cpu": Fraction(1, 2), "nvidia.com/gpu": Fraction(8)}
    assert quantity.scale(pod, 4) == {"cpu": Fraction(2), "nvidia.com/gpu": Fraction(32)}
    assert quantity.scale(pod, 0) == {"cpu": Fraction(0), "nvidia.com/gpu": Fraction(0)}
    low, high = {"cpu": Fraction(1), "memory": Fraction(4)}, {"cpu": Fraction(3), "memory": Fraction(2)}
    assert quantity.maximum([low, high]) == {"cpu": Fraction(3), "memory": Fraction(4)}
    assert quantity.maximum([]) == {}


def test_only_container_items_of_a_limitrange_default_a_container() -> None:
    """kubernetes v1.36 plugin/pkg/admission/limitranger/admission.go defaultContainerResourceRequirements reads
    only `type: Container` items; a PersistentVolumeClaim item may carry `default` (validation forbids it only
    on `type: Pod`, pkg/apis/core/validation ValidateLimitRange) and defaults claims, not containers."""
    claims = {"type": "PersistentVolumeClaim", "default": {"storage": "1Gi"}, "defaultRequest": {"storage": "1Gi"}}
    ranges = [{"spec": {"limits": [claims, {"type": "Container", "defaultRequest": {"cpu": "1"}}]}}]
    assert res.container_defaults(ranges) == ({"cpu": "1"}, {})


def test_the_limitrange_reports_each_value_it_filled_and_only_those() -> None:
    ranges = [{"spec": {"limits": [{"type": "Container", "default": {"cpu": "1"}, "defaultRequest": {"cpu": "1"}}]}}]
    pod = {"initContainers": [{"name": "i", "resources": {"limits": {"cpu": "2"}}}], "containers": [{"name": "a"}]}
    _, filled = res.apply_limit_range(pod, ranges)
    assert filled == (
        res.Defaulted("i", "requests", "cpu"),
        res.Defaulted("a", "limits", "cpu"),
        res.Defaulted("a", "requests", "cpu"),
    )
    assert res.apply_limit_range(pod, [])[1] == ()


@pytest.mark.parametrize(("size_limit", "pod_limit"), [("1", None), (None, "1")])
def test_the_smallest_positive_bound_of_one_byte_still_bounds_a_memory_emptydir(
    size_limit: str | None, pod_limit: str | None
) -> None:
    assert res.memory_volume_bytes(_shm(size_limit, pod_limit), "dshm", NODE) == 1


def test_a_pods_quota_usage_counts_each_request_under_its_names() -> None:
    """pods.go PodUsageFunc: requests of cpu, memory and ephemeral-storage count as `requests.<name>` and as the
    plain name; any other request (an accelerator) only as `requests.<name>`; one pod is one `pods`."""
    requests = {"cpu": "2", "memory": "1Gi", "ephemeral-storage": "2Gi", "nvidia.com/gpu": "8"}
    usage = res.quota_usage({"containers": [{"name": "a", "resources": {"requests": requests}}]})
    assert usage == {
        "pods": 1,
        "requests.cpu": 2, "cpu": 2,
        "requests.memory": GI, "memory": GI,
        "requests.ephemeral-storage": 2 * GI, "ephemeral-storage": 2 * GI,
        "requests.nvidia.com/gpu": 8,
    }  # fmt: skip

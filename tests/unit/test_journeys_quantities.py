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

"""Where an admitted pod lands (trainstack/journeys/placement.py): Kubernetes' toleration matching, one branch at a
time, and Kueue's flavor merge."""

from __future__ import annotations

from typing import Any

import pytest

from trainstack.journeys import placement

TAINT = {"key": "example.com/dedicated", "value": "llm", "effect": "NoSchedule"}


@pytest.mark.parametrize(
    ("toleration", "expected"),
    [
        ({"key": "example.com/dedicated", "operator": "Equal", "value": "llm", "effect": "NoSchedule"}, True),
        ({"key": "example.com/dedicated", "value": "llm"}, True),  # no operator is Equal, no effect is every effect
        ({"key": "example.com/dedicated", "operator": "Exists"}, True),
        ({"operator": "Exists"}, True),  # empty key with Exists: every taint
        ({"key": "example.com/dedicated", "operator": "Equal", "value": "other"}, False),
        ({"key": "example.com/other", "operator": "Exists"}, False),
        ({"key": "example.com/dedicated", "operator": "Exists", "effect": "NoExecute"}, False),
        ({"operator": "Equal", "value": "llm"}, False),  # Equal needs the key
    ],
)
def test_tolerates_follows_kubernetes(toleration: dict[str, str], expected: bool) -> None:
    assert placement.tolerates(toleration, TAINT) is expected


def test_only_repelling_taints_need_a_toleration() -> None:
    soft = {"key": "example.com/soft", "value": "", "effect": "PreferNoSchedule"}
    hard = {"key": "example.com/drain", "value": "", "effect": "NoExecute"}
    assert placement.untolerated([], [soft]) == []
    assert placement.untolerated([], [TAINT, hard]) == [
        "example.com/dedicated=llm:NoSchedule",
        "example.com/drain=:NoExecute",
    ]
    assert placement.untolerated([{"key": "example.com/drain", "operator": "Exists"}], [hard]) == []


def test_eks_taints_become_node_taints() -> None:
    assert placement.node_taints(
        [{"key": "k", "effect": "NO_EXECUTE"}, {"key": "g", "value": "true", "effect": "NO_SCHEDULE"}]
    ) == [
        {"key": "k", "value": "", "effect": "NoExecute"},
        {"key": "g", "value": "true", "effect": "NoSchedule"},
    ]


def test_kueue_merges_the_flavor_into_the_pod() -> None:
    pod: dict[str, Any] = {"nodeSelector": {"a": "1"}, "tolerations": [{"key": "x", "operator": "Exists"}]}
    flavor = {
        "nodeLabels": {"b": "2", "a": "1"},
        "tolerations": [{"key": "x", "operator": "Exists"}, {"key": "y", "operator": "Exists"}],
    }
    selector, tolerations, conflict = placement.admitted(pod, flavor)
    assert (selector, conflict) == ({"a": "1", "b": "2"}, "")
    assert tolerations == [{"key": "x", "operator": "Exists"}, {"key": "y", "operator": "Exists"}]  # once each
    assert pod == {"nodeSelector": {"a": "1"}, "tolerations": [{"key": "x", "operator": "Exists"}]}  # not mutated


def test_the_pods_own_tolerations_stay_before_the_flavors() -> None:
    pod = {"tolerations": [{"key": "z", "operator": "Exists"}]}
    _, tolerations, _ = placement.admitted(pod, {"tolerations": [{"key": "x", "operator": "Exists"}]})
    assert tolerations == [{"key": "z", "operator": "Exists"}, {"key": "x", "operator": "Exists"}]


def test_a_flavor_that_contradicts_the_pods_selector_is_a_conflict() -> None:
    _, _, conflict = placement.admitted({"nodeSelector": {"a": "1"}}, {"nodeLabels": {"a": "2"}})
    assert conflict == "a: the pod selects '1', the flavor '2'"


def test_selects_needs_every_key() -> None:
    assert placement.selects({"a": "1"}, {"a": "1", "b": "2"})
    assert not placement.selects({"a": "1", "c": "3"}, {"a": "1"})
    assert placement.selects({}, {})

"""CRD transition rules (`oldSelf`): recorded apart at extraction, evaluated on an old and a new object with
cel-python as the API server evaluates them (trainstack/contracts/crds.py), and agreeing with upstream's own
tests of those rules at the pinned tags."""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from typing import Any

import pytest

from scripts.extract_contract_facts import flatten_schema
from trainstack.contracts import crds
from trainstack.contracts.facts import all_crd_facts, crd_facts
from trainstack.engine import UNKNOWN

TRAINER = "trainer.kubeflow.org/v1alpha1"
KUEUE = "kueue.x-k8s.io/v1beta1"


def fields(api_version: str, kind: str) -> dict[str, dict[str, Any]]:
    (found,) = crd_facts(api_version, kind)
    return found.fields


def test_no_validation_rule_names_old_self_and_the_transition_rules_are_kept() -> None:
    for facts in all_crd_facts():
        for path, fact in facts.fields.items():
            for rule in fact.get("rules", []):
                assert not re.search(r"\boldSelf\b", rule["rule"]), (facts.kind, path)
            for rule in fact.get("transition_rules", []):
                assert re.search(r"\boldSelf\b", rule["rule"]), (facts.kind, path)
    # kubeflow/trainer v2.1.0 manifests/base/crds/trainer.kubeflow.org_clustertrainingruntimes.yaml: JobSet's
    # spec, embedded with its `self == oldSelf` rules.
    assert set(crds.transition_paths(fields(TRAINER, "ClusterTrainingRuntime"))) == {
        "spec.template.spec.failurePolicy",
        "spec.template.spec.network",
        "spec.template.spec.replicatedJobs[].dependsOn",
        "spec.template.spec.startupPolicy",
        "spec.template.spec.successPolicy",
    }
    assert set(crds.transition_paths(fields(TRAINER, "TrainJob"))) == {"spec.managedBy", "spec.runtimeRef"}
    assert set(crds.transition_paths(fields(KUEUE, "LocalQueue"))) == {"spec.clusterQueue"}


def test_the_extractor_sorts_rules_by_whether_they_name_old_self() -> None:
    node = {
        "type": "object",
        "x-kubernetes-validations": [
            {"rule": "self.a > 0", "message": "positive"},
            {"rule": "self == oldSelf", "message": "immutable"},
            {"rule": "has(oldSelf.b) || true", "message": "m", "optionalOldSelf": True},
            {"rule": "self.oldSelfish == 1", "message": "a field that only starts with the name"},
        ],
    }
    out: dict[str, dict[str, Any]] = {}
    flatten_schema(node, "", out)
    assert [r["rule"] for r in out[""]["rules"]] == ["self.a > 0", "self.oldSelfish == 1"]
    assert out[""]["transition_rules"] == [
        {"rule": "self == oldSelf", "message": "immutable"},
        {"rule": "has(oldSelf.b) || true", "message": "m", "optional_old_self": True},
    ]


# ------------------------------------------------------------------------------------------ upstream's cases


def flavor(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": KUEUE, "kind": "ResourceFlavor", "metadata": {"name": "tas-flavor"}, "spec": spec}


TAS_FLAVOR = flavor(topologyName="default", nodeLabels={"node-group": "tas", "foo": "bar"})


def runtime(**template_spec: Any) -> dict[str, Any]:
    jobs = [{"name": "rjob-1", "template": {"spec": {}}}, {"name": "rjob-2", "template": {"spec": {}}}]
    return {
        "apiVersion": TRAINER,
        "kind": "ClusterTrainingRuntime",
        "metadata": {"name": "r"},
        "spec": {"template": {"spec": {"replicatedJobs": jobs, **template_spec}}},
    }


def trainjob(**spec: Any) -> dict[str, Any]:
    ref = {"apiGroup": "trainer.kubeflow.org", "kind": "TrainingRuntime", "name": "testing"}
    return {"apiVersion": TRAINER, "kind": "TrainJob", "metadata": {"name": "j"}, "spec": {"runtimeRef": ref, **spec}}


def edit(obj: dict[str, Any], change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    new = copy.deepcopy(obj)
    change(new)
    return new


def depends_on(status: str) -> Callable[[dict[str, Any]], None]:
    def change(obj: dict[str, Any]) -> None:
        obj["spec"]["template"]["spec"]["replicatedJobs"][1]["dependsOn"] = [{"name": "rjob-1", "status": status}]

    return change


WITH_DEPENDS_ON = edit(runtime(), depends_on("Ready"))

# (upstream test, kind, old, new, refused by a transition rule)
CASES: list[tuple[str, str, dict[str, Any], dict[str, Any], bool]] = [
    (
        "kueue v0.14.8 test/integration/singlecluster/tas/tas_test.go: should not allow to update topologyName",
        "ResourceFlavor",
        TAS_FLAVOR,
        edit(TAS_FLAVOR, lambda o: o["spec"].update(topologyName="invalid")),
        True,
    ),
    (
        "kueue v0.14.8 tas_test.go: should not allow to update nodeLabels",
        "ResourceFlavor",
        TAS_FLAVOR,
        edit(TAS_FLAVOR, lambda o: o["spec"].update(nodeLabels={"tas-node": "true"})),
        True,
    ),
    (
        "kueue v0.14.8 tas_test.go: should not allow to delete one of the nodeLabels",
        "ResourceFlavor",
        TAS_FLAVOR,
        edit(TAS_FLAVOR, lambda o: o["spec"].update(nodeLabels={"foo": "bar"})),
        True,
    ),
    (
        "the same rule without topologyName (`!has(oldSelf.topologyName) || ...`): node labels may change",
        "ResourceFlavor",
        flavor(nodeLabels={"node-group": "tas"}),
        flavor(nodeLabels={"node-group": "other"}),
        False,
    ),
    (
        "kueue v0.14.8 test/integration/singlecluster/webhook/core/localqueue_test.go: Should reject the change "
        "of spec.clusterQueue",
        "LocalQueue",
        {"apiVersion": KUEUE, "kind": "LocalQueue", "metadata": {"name": "q"}, "spec": {"clusterQueue": "foo"}},
        {"apiVersion": KUEUE, "kind": "LocalQueue", "metadata": {"name": "q"}, "spec": {"clusterQueue": "bar"}},
        True,
    ),
    (
        "kubeflow/trainer v2.1.0 test/integration/webhooks/trainjob_test.go: Should fail to update TrainJob managedBy",
        "TrainJob",
        trainjob(managedBy="trainer.kubeflow.org/trainjob-controller"),
        trainjob(managedBy="kueue.x-k8s.io/multikueue"),
        True,
    ),
    (
        "kubeflow/trainer v2.1.0 trainjob_test.go: Should fail to update runtimeRef",
        "TrainJob",
        trainjob(),
        edit(trainjob(), lambda o: o["spec"]["runtimeRef"].update(name="forbidden-update")),
        True,
    ),
    (
        "kubernetes-sigs/jobset v0.10.1 test/integration/webhook/jobset_webhook_test.go: FailurePolicy should be "
        "immutable (the rule Trainer's runtime CRD embeds)",
        "ClusterTrainingRuntime",
        runtime(failurePolicy={"maxRestarts": 3}),
        runtime(failurePolicy={"maxRestarts": 21}),
        True,
    ),
    (
        "jobset v0.10.1 jobset_webhook_test.go: SuccessPolicy should be immutable",
        "ClusterTrainingRuntime",
        runtime(successPolicy={"operator": "All"}),
        runtime(successPolicy={"operator": "All", "targetReplicatedJobs": ["test", "test2"]}),
        True,
    ),
    (
        "jobset v0.10.1 jobset_webhook_test.go: DependsOn must be immutable",
        "ClusterTrainingRuntime",
        WITH_DEPENDS_ON,
        edit(WITH_DEPENDS_ON, depends_on("Complete")),
        True,
    ),
]


@pytest.mark.parametrize(("case", "kind", "old", "new", "refused"), CASES, ids=[c[0][:70] for c in CASES])
def test_transition_rules_agree_with_upstreams_tests(
    case: str, kind: str, old: dict[str, Any], new: dict[str, Any], refused: bool
) -> None:
    api_version = old["apiVersion"]
    problems = crds.transition_problems(fields(api_version, kind), old, new)
    assert bool(problems) is refused, case
    assert crds.transition_problems(fields(api_version, kind), old, old) == []  # no change, no refusal


# ------------------------------------------------------------------------------------------ when a rule runs

RUNTIME = fields(TRAINER, "ClusterTrainingRuntime")


def test_a_rule_runs_only_where_old_and_new_both_have_a_value() -> None:
    # Adding or removing a frozen field is no transition: the rule needs both values (optionalOldSelf aside).
    assert crds.transitions(RUNTIME, runtime(), runtime(failurePolicy={"maxRestarts": 3})) == []
    assert crds.transitions(RUNTIME, runtime(failurePolicy={"maxRestarts": 3}), runtime()) == []
    (only,) = crds.transitions(RUNTIME, runtime(failurePolicy={"maxRestarts": 3}), runtime(failurePolicy={}))
    assert only.path == "spec.template.spec.failurePolicy" and only.holds is False


def test_list_map_items_correlate_by_their_keys_not_their_place() -> None:
    # replicatedJobs is x-kubernetes-list-type: map keyed on name: reordering the jobs changes no dependsOn.
    reordered = edit(WITH_DEPENDS_ON, lambda o: o["spec"]["template"]["spec"]["replicatedJobs"].reverse())
    found = crds.transitions(RUNTIME, WITH_DEPENDS_ON, reordered)
    assert [(t.path, t.holds) for t in found] == [("spec.template.spec.replicatedJobs[0].dependsOn", True)]
    # A job that is new has no old dependsOn to compare with.
    added = edit(
        runtime(),
        lambda o: o["spec"]["template"]["spec"]["replicatedJobs"].append(
            {"name": "rjob-3", "dependsOn": [{"name": "rjob-1", "status": "Ready"}]}
        ),
    )
    assert crds.transitions(RUNTIME, runtime(), added) == []


def test_a_change_outside_the_frozen_fields_passes() -> None:
    old = runtime(failurePolicy={"maxRestarts": 3})
    new = edit(old, lambda o: o["spec"]["template"]["spec"]["replicatedJobs"][0]["template"].update(spec={"x": 1}))
    assert crds.transition_problems(RUNTIME, old, new) == []
    assert crds.transitions(RUNTIME, old, new)  # the failurePolicy rule ran, and held


def test_numbers_compare_as_the_api_server_reads_them() -> None:
    # The engine's Struct carries 3 as 3.0; the provider sends an integer either way.
    old = runtime(failurePolicy={"maxRestarts": 3.0})
    assert crds.transition_problems(RUNTIME, old, runtime(failurePolicy={"maxRestarts": 3})) == []


def test_values_unknown_in_preview_are_never_judged() -> None:
    old = runtime(failurePolicy={"maxRestarts": 3})
    assert crds.transitions(RUNTIME, old, runtime(failurePolicy={"maxRestarts": UNKNOWN})) == []


# ------------------------------------------------------------------------------------------ what a rule freezes


def test_self_equals_old_self_guards_every_place_it_sits() -> None:
    found = crds.guards(RUNTIME, edit(runtime(failurePolicy={"maxRestarts": 3}), depends_on("Ready")))
    assert {(g.path, g.rules) for g in found} == {
        ("spec.template.spec.failurePolicy", ("self == oldSelf",)),
        ("spec.template.spec.replicatedJobs[1].dependsOn", ("self == oldSelf",)),
    }
    dependency = next(g for g in found if "dependsOn" in g.path)
    assert dependency.parts == ("spec", "template", "spec", "replicatedJobs", 1, "dependsOn")
    assert dependency.schema_path == "spec.template.spec.replicatedJobs[].dependsOn"


def test_a_conditional_rule_guards_only_while_its_condition_holds() -> None:
    kueue_flavor = fields(KUEUE, "ResourceFlavor")
    assert crds.guards(kueue_flavor, flavor(nodeLabels={"a": "b"})) == []
    (guard,) = crds.guards(kueue_flavor, TAS_FLAVOR)
    assert guard.path == "spec"


@pytest.mark.parametrize("value", [True, 3, 2.5, "x", "", [], [1], {}, {"a": {"b": 1}}])
def test_every_probe_differs_from_the_value(value: Any) -> None:
    changed = crds._changed_values(value)
    assert changed and all(c != value and type(c) is type(value) for c in changed)


def test_a_null_has_no_edit_of_its_own_and_a_field_holding_one_is_still_probed() -> None:
    assert crds._changed_values(None) == []
    assert crds._changed_values({"a": None}) == [{"a": None, crds._PROBE: True}]

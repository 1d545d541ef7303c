"""The day-2 journeys (trainstack/journeys/day2.py) on the committed stacks, and each broken by one edit of the
recording (made in memory, so the tests stay in the gate): the named step fails and says where."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from tests.conftest import STACKS, recording, stack_config
from trainstack.engine import RecordedResource, Recording
from trainstack.journeys import DAY2, Journey, walk
from trainstack.journeys.day2 import change_journey, plan_journeys

RUNTIME = "kubernetes:trainer.kubeflow.org/v1alpha1:ClusterTrainingRuntime"
LOCAL_QUEUE = "kubernetes:kueue.x-k8s.io/v1beta1:LocalQueue"
PVC = "kubernetes:core/v1:PersistentVolumeClaim"
LUSTRE = "aws:fsx/lustreFileSystem:LustreFileSystem"
REPLACES_RUNTIME = "pulumi replaces a ClusterTrainingRuntime whose frozen fields change"
DELETES_RUNTIME_FIRST = "the old ClusterTrainingRuntime is deleted before its replacement is created"
ACCEPTS_UPDATES = "the API server accepts every updated custom resource"
DELETED_FIRST = "every Kubernetes object replaced under its own name is deleted first"
AWS_IN_PLACE = "AWS makes every update in place"


def edited(rec: Recording, type_: str, change: Callable[[RecordedResource], RecordedResource]) -> Recording:
    return replace(rec, resources=tuple(change(r) if r.type == type_ else r for r in rec.resources))


def step(journeys: tuple[Journey, ...] | list[Journey], name: str) -> Any:
    (found,) = [s for j in journeys for s in j.steps if s.name == name]
    return found


def with_max_restarts(r: RecordedResource, value: int) -> RecordedResource:
    """The runtime as `max_restarts: <value>` writes it (the validation runtime sets no failure policy)."""
    spec = r.inputs["spec"]
    template = spec["template"]["spec"]
    if "failurePolicy" not in template:
        return r
    policy = {**template["failurePolicy"], "maxRestarts": value}
    inputs = {**r.inputs, "spec": {**spec, "template": {"spec": {**template, "failurePolicy": policy}}}}
    return replace(r, inputs=inputs)


@pytest.mark.slow
@pytest.mark.parametrize("stack", STACKS)
def test_every_day2_journey_holds_on_every_committed_stack(stack: str) -> None:
    (found,) = [j for j in walk(recording(stack), stack_config(stack)) if j.kind == DAY2]  # no baseline: no change
    names = {s.name for s in found.steps}
    assert "pulumi replaces a ClusterTrainingRuntime whose frozen fields change" in names
    assert "the old LocalQueue is deleted before its replacement is created" in names
    assert found.holds, found.broken_step


@pytest.mark.slow
def test_values_unknown_in_preview_break_no_step() -> None:
    assert all(j.holds for j in plan_journeys(recording("prod", preview=True)))


@pytest.mark.slow
def test_a_runtime_without_replace_on_changes_breaks_the_replacement_step() -> None:
    rec = edited(recording("prod"), RUNTIME, lambda r: replace(r, replace_on_changes=()))
    found = list(plan_journeys(rec))
    broken = step(found, REPLACES_RUNTIME)
    assert not broken.holds
    assert "trainstack-torch-p5-train spec.template.spec.failurePolicy" in broken.detail
    assert "kubeflow/trainer v2.1.0 manifests/base/crds/trainer.kubeflow.org_clustertrainingruntimes.yaml" in (
        broken.source
    )
    assert step(found, "pulumi replaces a LocalQueue whose frozen fields change").holds  # one kind at a time


@pytest.mark.slow
def test_one_frozen_path_left_out_is_found() -> None:
    def without_depends_on(r: RecordedResource) -> RecordedResource:
        return replace(r, replace_on_changes=tuple(p for p in r.replace_on_changes if "dependsOn" not in p))

    broken = step(list(plan_journeys(edited(recording("prod"), RUNTIME, without_depends_on))), REPLACES_RUNTIME)
    assert not broken.holds
    # The MPI runtimes order the launcher after the workers; the torch runtime has no dependsOn.
    assert "trainstack-mpi-p5-train spec.template.spec.replicatedJobs[1].dependsOn" in broken.detail
    assert "torch" not in broken.detail


@pytest.mark.slow
def test_a_runtime_replaced_without_deleting_first_breaks_the_next_step() -> None:
    rec = edited(recording("prod"), RUNTIME, lambda r: replace(r, delete_before_replace=None))
    found = list(plan_journeys(rec))
    assert step(found, REPLACES_RUNTIME).holds
    broken = step(found, DELETES_RUNTIME_FIRST)
    assert not broken.holds and "trainstack-torch-p5-train" in broken.detail and "already exists" in broken.detail


@pytest.mark.slow
def test_a_local_queue_without_replace_on_changes_is_found() -> None:
    rec = edited(recording("prod"), LOCAL_QUEUE, lambda r: replace(r, replace_on_changes=()))
    broken = step(list(plan_journeys(rec)), "pulumi replaces a LocalQueue whose frozen fields change")
    assert not broken.holds and "spec.clusterQueue" in broken.detail


# ------------------------------------------------------------------------------------------ the change


@pytest.mark.slow
def test_a_max_restarts_edit_replaces_the_runtimes_and_the_change_holds() -> None:
    before = recording("prod")
    after = edited(before, RUNTIME, lambda r: with_max_restarts(r, 7))
    journey = change_journey(before, after)
    assert journey.holds, journey.broken_step
    assert "0 updates" in journey.subject
    day2 = [j for j in walk(after, stack_config("prod"), baseline=before) if j.kind == DAY2]
    assert [j.subject.split(" (")[0] for j in day2] == [
        "an edit of frozen custom-resource fields",
        "the change from the deployed stack",
    ]


@pytest.mark.slow
def test_the_same_edit_as_an_update_is_refused_by_the_transition_rule() -> None:
    before = edited(recording("prod"), RUNTIME, lambda r: replace(r, replace_on_changes=()))
    after = edited(before, RUNTIME, lambda r: with_max_restarts(r, 7))
    broken = step([change_journey(before, after)], ACCEPTS_UPDATES)
    assert not broken.holds
    assert "ClusterTrainingRuntime trainstack-torch-p5-train spec.template.spec.failurePolicy" in broken.detail
    assert "`self == oldSelf` fails (Value is immutable)" in broken.detail


@pytest.mark.slow
def test_a_replacement_under_the_same_name_without_delete_first_is_refused() -> None:
    before = recording("prod")
    after = edited(before, RUNTIME, lambda r: replace(with_max_restarts(r, 7), delete_before_replace=None))
    journey = change_journey(before, after)
    assert step([journey], ACCEPTS_UPDATES).holds
    broken = step([journey], DELETED_FIRST)
    assert not broken.holds and "trainstack-torch-p5-train (spec.template.spec.failurePolicy.maxRestarts)" in (
        broken.detail
    )


@pytest.mark.slow
def test_a_replacement_the_provider_finds_needs_no_option() -> None:
    """pulumi-kubernetes deletes first itself when its own diff replaces (an immutable PVC field)."""

    def class_changed(r: RecordedResource) -> RecordedResource:
        return replace(r, inputs={**r.inputs, "spec": {**r.inputs["spec"], "storageClassName": "other"}})

    before = recording("prod")
    assert before.by_type(PVC)
    journey = change_journey(before, edited(before, PVC, class_changed))
    assert journey.holds and "0 updates" in journey.subject


@pytest.mark.slow
@pytest.mark.parametrize(("factor", "holds"), [(2, True), (0.5, False)])
def test_fsx_only_grows_in_place(factor: float, holds: bool) -> None:
    before = recording("prod")

    def resized(r: RecordedResource) -> RecordedResource:
        return replace(r, inputs={**r.inputs, "storageCapacity": r.inputs["storageCapacity"] * factor})

    found = step([change_journey(before, edited(before, LUSTRE, resized))], AWS_IN_PLACE)
    assert found.holds is holds
    if not holds:
        assert "storageCapacity 124800 -> 62400 GiB: FSx cannot shrink" in found.detail
        assert "UpdateFileSystem" in found.source

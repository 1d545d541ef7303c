"""`replace_on_changes` and `delete_before_replace` in the offline diff: a change under one of a resource's paths
is a replacement (Pulumi's `PropertyPath.Contains`, `*` for any key or index), the JSON shows it as the engine
would, and replacing a ClusterTrainingRuntime says what Trainer's in-use finalizer asks first."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from tests.recorded import recorded
from trainstack.engine import RecordedResource, Recording
from trainstack.model.diff import Delta, PlanDiff, ResourceChange, diff_recordings, path_contains, path_parts
from trainstack.recording_diff import InputChange
from trainstack.report.json_report import detailed_diff
from trainstack.tokens import CLUSTER_TRAINING_RUNTIME

FROZEN = ("spec.template.spec.failurePolicy", "spec.template.spec.replicatedJobs[*].dependsOn")


def runtime(max_restarts: int, status: str = "Ready", *, frozen: tuple[str, ...] = FROZEN) -> RecordedResource:
    jobs = [{"name": "launcher", "dependsOn": [{"name": "node", "status": status}]}]
    spec = {"template": {"spec": {"failurePolicy": {"maxRestarts": max_restarts}, "replicatedJobs": jobs}}}
    resource = recorded(CLUSTER_TRAINING_RUNTIME, "rt", {"metadata": {"name": "trainstack-torch-p5"}, "spec": spec})
    return replace(resource, replace_on_changes=frozen, delete_before_replace=True)


def one_change(before: RecordedResource, after: RecordedResource) -> ResourceChange:
    (change,) = diff_recordings(Recording("s", False, [before], {}), Recording("s", False, [after], {}))[2]
    return change


@pytest.mark.parametrize(
    ("outer", "inner", "contains"),
    [
        ("spec.a", "spec.a", True),
        ("spec.a", "spec.a.b[0]", True),
        ("spec.a", "spec.ab", False),
        ("spec.a.b", "spec.a", False),  # a path above the pattern is not under it
        ("spec.jobs[*].dependsOn", "spec.jobs[3].dependsOn[0].status", True),
        ("spec.jobs[*].dependsOn", "spec.jobs[3].template", False),
        ("spec.*", "spec.x", True),
        ("spec.jobs[1]", "spec.jobs[10]", False),
        ('tags["a.b"]', 'tags["a.b"].c', True),
        ('tags["a.b"]', "tags.a.b", False),
    ],
)
def test_path_contains_follows_pulumis_property_path_contains(outer: str, inner: str, contains: bool) -> None:
    assert path_contains(outer, inner) is contains


def test_a_wildcard_index_parses_as_a_star() -> None:
    assert path_parts("a[*].b") == ["a", "*", "b"]
    assert path_parts("a.*.b") == ["a", "*", "b"]


def test_a_change_under_replace_on_changes_is_a_replacement() -> None:
    change = one_change(runtime(3), runtime(5))
    assert change.op == "replace"
    assert change.replace_reasons == ("spec.template.spec.failurePolicy.maxRestarts",)
    assert change.delete_before_replace is True


def test_a_wildcard_reaches_every_item() -> None:
    assert one_change(runtime(3), runtime(3, "Complete")).replace_reasons == (
        "spec.template.spec.replicatedJobs[0].dependsOn[0].status",
    )


def test_the_same_change_without_the_option_is_an_update() -> None:
    assert one_change(runtime(3, frozen=()), runtime(5, frozen=())).op == "update"


def test_the_options_of_the_new_program_decide() -> None:
    """The engine reads `replace_on_changes` from the registration being planned, not from the old state."""
    assert one_change(runtime(3, frozen=()), runtime(5)).op == "replace"
    assert one_change(runtime(3), runtime(5, frozen=())).op == "update"


def test_json_marks_the_forcing_path_and_delete_before_replace() -> None:
    change = one_change(runtime(3), runtime(5))
    assert detailed_diff(change) == {
        "spec.template.spec.failurePolicy.maxRestarts": {"kind": "update-replace", "inputDiff": True}
    }
    zero = Delta(0, 0)
    diff = PlanDiff("b", (), (), (change,), zero, zero, zero, zero, zero, zero, zero, zero)
    (entry,) = diff.to_dict()["changed"]
    assert entry["op"] == "replace" and entry["deleteBeforeReplace"] is True
    update = one_change(runtime(3, frozen=()), runtime(5, frozen=()))
    (entry,) = replace(diff, changed=(update,)).to_dict()["changed"]
    assert entry["op"] == "update" and entry["deleteBeforeReplace"] is False  # only a replacement deletes


def test_a_replaced_runtime_says_what_trainers_finalizer_needs_first() -> None:
    (note,) = one_change(runtime(3), runtime(5)).notes
    assert "trainstack-torch-p5" in note and "spec.template.spec.failurePolicy.maxRestarts" in note
    assert "TrainJob" in note
    assert one_change(runtime(3, frozen=()), runtime(5, frozen=())).notes == ()  # an update needs nothing


def test_other_kinds_get_no_runtime_note() -> None:
    other = "kubernetes:kueue.x-k8s.io/v1beta1:LocalQueue"

    def queue(name: str) -> RecordedResource:
        inputs: dict[str, Any] = {"metadata": {"name": "q"}, "spec": {"clusterQueue": name}}
        return replace(recorded(other, "q", inputs), replace_on_changes=("spec.clusterQueue",))

    change = one_change(queue("a"), queue("b"))
    assert change.op == "replace" and change.notes == ()
    assert InputChange("spec.clusterQueue", "a", "b") in change.changes

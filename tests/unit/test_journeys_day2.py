"""The day-2 journey's rules on hand-made changes (trainstack/journeys/day2.py), one at a time: which replaced
Kubernetes objects are created over themselves, which AWS updates the API refuses (FSx only grows), where a change
replaces a resource, and how an object is named. The same rules on whole recordings:
tests/stack/test_day2_journey.py."""

from __future__ import annotations

from typing import Any

from trainstack.engine import UNKNOWN, RecordedResource, Recording
from trainstack.journeys.day2 import (
    Frozen,
    change_journey,
    created_over_themselves,
    object_name,
    refused_aws_updates,
    replaced_at,
)
from trainstack.recording_diff import InputChange, ResourceChange
from trainstack.tokens import FSX_LUSTRE, HELM_RELEASE, K8S_JOB

LOCAL_QUEUE = "kubernetes:kueue.x-k8s.io/v1beta1:LocalQueue"
CONFIG_MAP = "kubernetes:core/v1:ConfigMap"


def res(type_: str, name: str, inputs: dict[str, Any], **options: Any) -> RecordedResource:
    return RecordedResource(type_, name, f"urn:{type_}::{name}", "", True, inputs, (), {}, False, False, "", **options)


def meta(name: Any = "team-a", namespace: str = "team-a", **spec: Any) -> dict[str, Any]:
    metadata = {"namespace": namespace} if name is None else {"name": name, "namespace": namespace}
    return {"metadata": metadata, "spec": spec}


def replaced(type_: str, before: dict[str, Any], after: dict[str, Any], path: str, **options: Any) -> tuple[
    Recording, Recording, list[ResourceChange]
]:  # fmt: skip
    """The baseline and the new recording of one object, and its change at `path`."""
    old, new = res(type_, "q", before), res(type_, "q", after)
    change = ResourceChange(new.urn, type_, (InputChange(path, "a", "b"),), **options)
    return Recording("s", False, (old,), {}), Recording("s", False, (new,), {}), [change]


def collisions(*args: Any, **options: Any) -> list[str]:
    return created_over_themselves(*replaced(*args, **options))


def test_an_object_replaced_under_its_own_name_must_be_deleted_first() -> None:
    before, after = meta(clusterQueue="a"), meta(clusterQueue="b")
    roc = {"replace_on_changes": ("spec.clusterQueue",)}
    assert collisions(LOCAL_QUEUE, before, after, "spec.clusterQueue", **roc) == ["team-a/team-a (spec.clusterQueue)"]
    assert collisions(LOCAL_QUEUE, before, after, "spec.clusterQueue", **roc, delete_before_replace=True) == []
    assert collisions(LOCAL_QUEUE, before, after, "spec.clusterQueue") == []  # an update, not a replacement


def test_a_replacement_under_another_or_no_name_or_one_the_provider_finds_collides_with_nothing() -> None:
    roc = {"replace_on_changes": ("spec.clusterQueue",)}
    renamed = meta(name="team-b", clusterQueue="b")
    assert collisions(LOCAL_QUEUE, meta(clusterQueue="a"), renamed, "metadata.name", **roc) == []
    generated = meta(name=None, clusterQueue="b")
    assert collisions(LOCAL_QUEUE, meta(name=None, clusterQueue="a"), generated, "spec.clusterQueue", **roc) == []
    unknown = meta(name=UNKNOWN, clusterQueue="b")
    assert collisions(LOCAL_QUEUE, meta(name=UNKNOWN, clusterQueue="a"), unknown, "spec.clusterQueue", **roc) == []
    # a Job's template is immutable: pulumi-kubernetes' own diff replaces it, and deletes first itself
    assert collisions(K8S_JOB, meta(template={"a": 1}), meta(template={"a": 2}), "spec.template") == []
    # a Helm release is not an object the API server names
    release = {"name": "r", "namespace": "n", "metadata": {"name": "r", "namespace": "n"}}
    assert collisions(HELM_RELEASE, release, {**release, "chart": "x"}, "chart", replace_on_changes=("chart",)) == []


def test_a_new_object_collides_with_nothing() -> None:
    _, after, changes = replaced(LOCAL_QUEUE, meta(), meta(), "spec.x", replace_on_changes=("spec.x",))
    assert created_over_themselves(Recording("s", False, (), {}), after, changes) == []


def fsx(old: Any, new: Any, path: str = "storageCapacity", type_: str = FSX_LUSTRE, **options: Any) -> list[str]:
    return refused_aws_updates([ResourceChange(f"urn:{type_}::fs", type_, (InputChange(path, old, new),), **options)])


def test_fsx_for_lustre_storage_only_grows_in_place() -> None:
    """FSx UpdateFileSystem StorageCapacity: the new value must be greater than the current one."""
    assert fsx(2400, 1200) == [
        "fs storageCapacity 2400 -> 1200 GiB: FSx cannot shrink a file system; make a new one and copy the data"
    ]
    assert fsx(1200, 2400) == [] and fsx(2400.0, 2400) == []
    assert fsx(2400, UNKNOWN) == [] and fsx(UNKNOWN, 1200) == []  # unknown in preview: nothing to compare
    assert fsx(500, 250, path="perUnitStorageThroughput") == []  # another input
    assert fsx(2400, 1200, type_="aws:ebs/volume:Volume") == []  # another resource type
    # a replacement is a new file system of any size
    assert fsx(2400, 1200, replace_on_changes=("storageCapacity",)) == []


def test_a_change_replaces_under_a_replace_on_changes_pattern_or_a_create_only_input() -> None:
    queue = res(LOCAL_QUEUE, "q", meta(), replace_on_changes=("spec.clusterQueue", "spec.flavors[*].name"))
    assert replaced_at(queue, ["spec", "clusterQueue"]) and replaced_at(queue, ["spec", "clusterQueue", "x"])
    assert replaced_at(queue, ["spec", "flavors", 3, "name"])
    assert not replaced_at(queue, ["spec", "flavors", 3, "quota"])
    assert not replaced_at(queue, ["spec"])  # above the pattern: not every change of spec replaces
    assert replaced_at(queue, ["metadata", "name"])  # identity: pulumi-kubernetes replaces on its own
    assert not replaced_at(res(CONFIG_MAP, "c", meta()), ["data", "x"])


def test_an_object_is_named_as_kubectl_names_it() -> None:
    assert object_name(res(LOCAL_QUEUE, "q", meta("a", "team"))) == "team/a"
    assert object_name(res(LOCAL_QUEUE, "q", {"metadata": {"name": "cq"}})) == "cq"  # cluster-scoped
    assert object_name(res(LOCAL_QUEUE, "q", {"metadata": {"name": "a", "namespace": UNKNOWN}})) == "a"
    assert object_name(res(LOCAL_QUEUE, "logical", {})) == "logical"


def test_only_a_named_object_keeps_its_name_through_a_replacement() -> None:
    def keeps(metadata: dict[str, Any]) -> bool:
        return Frozen(res(LOCAL_QUEUE, "q", {"metadata": metadata}), None, ()).keeps_its_name  # type: ignore[arg-type]

    assert keeps({"name": "a"})
    assert not keeps({"generateName": "a-"}) and not keeps({"name": "a", "generateName": "a-"}) and not keeps({})


def test_the_change_journey_counts_custom_resources_updated_in_place_and_replacements() -> None:
    queue, config = meta(clusterQueue="a", stopPolicy="None"), meta(data="x")
    baseline = Recording("s", False, (
        res(LOCAL_QUEUE, "updated", queue), res(LOCAL_QUEUE, "held", queue), res(LOCAL_QUEUE, "replaced", queue),
        res(CONFIG_MAP, "cm", config),
    ), {})  # fmt: skip
    recording = Recording("s", False, (
        res(LOCAL_QUEUE, "updated", {**queue, "spec": {"clusterQueue": "a", "stopPolicy": "Hold"}}),
        res(LOCAL_QUEUE, "held", {**queue, "spec": {"clusterQueue": "a", "stopPolicy": "HoldAndDrain"}}),
        res(LOCAL_QUEUE, "replaced", {**queue, "spec": {"clusterQueue": "b", "stopPolicy": "None"}},
            replace_on_changes=("spec.clusterQueue",), delete_before_replace=True),
        res(CONFIG_MAP, "cm", {**config, "spec": {"data": "y"}}),
    ), {})  # fmt: skip
    journey = change_journey(baseline, recording)
    assert journey.subject == "the change from the deployed stack (3 updates, 1 replacements)"
    accepts, deleted_first, aws = journey.steps
    assert accepts.holds and accepts.detail.startswith("2 custom resource(s) updated in place")  # not the ConfigMap
    assert deleted_first.holds and deleted_first.detail.startswith("1 replacement(s)")
    assert aws.holds

"""The offline diff where an input's structure changes, not only a leaf: a resource that gains a nested input,
one whose value changes shape (scalar, list, mapping), and ignore_changes paths whose parents are missing."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from tests.recorded import recorded
from trainstack import recording_diff
from trainstack.engine import RecordedResource, Recording
from trainstack.model.diff import MISSING, apply_ignore_changes, diff_recordings, input_changes
from trainstack.recording_diff import path_parts

FSX = "aws:fsx/lustreFileSystem:LustreFileSystem"
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"


def resource(type_: str, inputs: dict[str, Any], ignore: tuple[str, ...] = ()) -> RecordedResource:
    return recorded(type_, "r", inputs, ignore=ignore)


def changed(type_: str, before: dict[str, Any], after: dict[str, Any]):
    (change,) = diff_recordings(
        Recording("s", False, [resource(type_, before)], {}), Recording("s", False, [resource(type_, after)], {})
    )[2]
    return change


def test_a_gained_nested_input_is_one_change_at_its_own_path() -> None:
    before = {"deploymentType": "PERSISTENT_2", "storageCapacity": 2400}
    after = {**before, "metadataConfiguration": {"mode": "USER_PROVISIONED", "iops": 12000}}
    change = changed(FSX, before, after)
    assert [(c.path, c.old, c.new) for c in change.changes] == [
        ("metadataConfiguration", MISSING, {"mode": "USER_PROVISIONED", "iops": 12000})
    ]
    assert change.op == "update"


def test_a_key_gained_inside_an_existing_mapping_names_the_leaf() -> None:
    before = {"scalingConfig": {"minSize": 0, "maxSize": 2}}
    after = {"scalingConfig": {"minSize": 0, "maxSize": 2, "desiredSize": 1}}
    assert [(c.path, c.new) for c in input_changes(before, after)] == [("scalingConfig.desiredSize", 1)]


def test_a_value_that_changes_shape_is_reported_whole() -> None:
    for old, new in [
        ("subnet-a", ["subnet-a"]),  # scalar -> list
        (["a", "b"], {"0": "a", "1": "b"}),  # list -> mapping
        ({"mode": "AUTOMATIC"}, "AUTOMATIC"),  # mapping -> scalar
        ([1, 2], [1, 2, 3]),  # a list that grows: one change, not per index
        (1, 1.5),
    ]:
        assert [(c.path, c.old, c.new) for c in input_changes({"x": old}, {"x": new})] == [("x", old, new)]


def test_a_shape_change_under_a_create_only_input_replaces() -> None:
    change = changed(FSX, {"subnetIds": "subnet-a"}, {"subnetIds": ["subnet-a"]})
    assert change.op == "replace" and change.replace_reasons == ("subnetIds",)


def test_ignore_changes_keeps_a_nested_value_and_leaves_missing_parents_alone() -> None:
    before = resource(NODE_GROUP, {"scalingConfig": {"desiredSize": 2, "maxSize": 4}}, ("scalingConfig.desiredSize",))
    after = replace(before, inputs={"scalingConfig": {"desiredSize": 3, "maxSize": 5}})
    applied, skipped = apply_ignore_changes(Recording("s", False, [before], {}), Recording("s", False, [after], {}))
    assert applied.resources[0].inputs == {"scalingConfig": {"desiredSize": 2, "maxSize": 5}}
    ((path, was, now),) = [(c.path, c.old, c.new) for c in skipped[0].changes]
    assert (path, was, now) == ("scalingConfig.desiredSize", 2, 3)
    # the deployment lacks the parent: a path error, so the engine sends the program's value and skips nothing
    bare = replace(before, inputs={"scalingConfig": {"maxSize": 4}, "tags": {}})
    dropped = replace(after, inputs={"tags": {}})
    applied, skipped = apply_ignore_changes(Recording("s", False, [bare], {}), Recording("s", False, [dropped], {}))
    assert applied.resources[0].inputs == {"tags": {}} and skipped == ()


def _ignored(before: dict[str, Any], after: dict[str, Any], path: str) -> tuple[dict[str, Any], tuple[Any, ...]]:
    """The inputs `pulumi up` would send for `after` over a deployed `before` with `path` under ignoreChanges, and
    the changes it reports as not applied."""
    old = resource(NODE_GROUP, before, (path,))
    applied, skipped = apply_ignore_changes(
        Recording("s", False, [old], {}), Recording("s", False, [replace(old, inputs=after)], {})
    )
    return applied.resources[0].inputs, tuple((c.path, c.old, c.new) for s in skipped for c in s.changes)


def test_an_ignored_list_item_is_kept_at_its_deployed_value() -> None:
    kept, skipped = _ignored({"subnetIds": ["a", "b"]}, {"subnetIds": ["a", "c"]}, "subnetIds[1]")
    assert kept == {"subnetIds": ["a", "b"]} and skipped == (("subnetIds[1]", "b", "c"),)


def test_an_ignored_index_the_deployed_list_lacks_keeps_nothing() -> None:
    """The index one past the deployed list's end: no deployed value to keep (the engine cannot add a location to
    a list either: properties_path.go Reset), so the program's list is sent as it is."""
    kept, skipped = _ignored({"subnetIds": ["a"]}, {"subnetIds": ["a", "b"]}, "subnetIds[1]")
    assert kept == {"subnetIds": ["a", "b"]} and skipped == ()


def test_an_ignored_index_the_new_list_lacks_leaves_the_new_list_as_it_is() -> None:
    """The program's list got shorter than the ignored index: no location to put the deployed value back into (the
    engine does not grow a list: pulumi/pulumi v3.259.0 sdk/go/common/resource/properties_path.go Reset)."""
    kept, _ = _ignored({"subnetIds": ["a", "b"]}, {"subnetIds": ["a"]}, "subnetIds[1]")
    assert kept == {"subnetIds": ["a"]}


def test_an_ignored_input_the_deployment_never_had_stays_absent() -> None:
    """ignoreChanges keeps the deployed value, and "absent" is a deployed value: `pulumi up` does not add it, and
    the plan says so (an ignored add)."""
    after = {"scalingConfig": {"desiredSize": 3, "maxSize": 5}}
    kept, skipped = _ignored({"scalingConfig": {"maxSize": 4}}, after, "scalingConfig.desiredSize")
    assert kept == {"scalingConfig": {"maxSize": 5}}
    assert skipped == (("scalingConfig.desiredSize", MISSING, 3),)


# pulumi/pulumi v3.259.0, pkg/resource/deploy/step_generator_test.go TestIgnoreChanges: deployed inputs, the
# program's, the path, and what the engine sends (None: a path error, so the program's inputs as they are).
ENGINE_CASES = [
    ({"a": {"b": "foo"}}, {"a": {"b": "bar"}, "c": 42}, "a.b", {"a": {"b": "foo"}, "c": 42}),
    ({"a": {"b": "foo"}}, {"a": {}, "c": 42}, "a.b", {"a": {"b": "foo"}, "c": 42}),
    ({"a": {"b": {"c": "foo"}}}, {"a": {"b": {"c": "bar"}}, "c": 42}, 'a.b["c"]', {"a": {"b": {"c": "foo"}}, "c": 42}),
    ({"a": {"b": {"c": "foo"}}}, {"a": {"b": {}}, "c": 42}, 'a.b["c"]', {"a": {"b": {"c": "foo"}}, "c": 42}),
    ({}, {"a": {"b": "foo"}, "c": 42}, "a.b", {"a": {}, "c": 42}),
    ({}, {}, "a", {}),
    ({}, {}, "a.b", {}),
    ({}, {}, "a.c[0]", {}),
    ({"a": {"b": "foo"}}, {}, "a.b", None),
]


@pytest.mark.parametrize(("deployed", "program", "path", "sent"), ENGINE_CASES)
def test_ignore_changes_sends_what_the_engine_sends(
    deployed: dict[str, Any], program: dict[str, Any], path: str, sent: dict[str, Any] | None
) -> None:
    kept, _ = _ignored(deployed, program, path)
    assert kept == (program if sent is None else sent)


# Each branch of the engine's Reset (pulumi/pulumi v3.259.0 sdk/go/common/resource/properties_path.go), one at a
# time: deployed, program, path, the program's inputs after it, and whether the path was valid.
RESET_BRANCHES = [
    # a list index at the leaf
    ({"l": ["a", "b"]}, {"l": ["a", "c"]}, "l[1]", {"l": ["a", "b"]}, True),
    ({"l": ["a"]}, {"l": ["a"]}, "l[3]", {"l": ["a"]}, True),  # neither list has the index: the same
    ({"l": ["a", "b"]}, {"l": ["a"]}, "l[1]", {"l": ["a"]}, False),  # only one has it: no item added
    ({"l": ["a"]}, {"l": ["a", "b"]}, "l[1]", {"l": ["a", "b"]}, False),  # nor removed
    ({"l": "x"}, {"l": "y"}, "l[0]", {"l": "y"}, True),  # neither is a list: nothing to reset
    ({"l": ["x"]}, {"l": "y"}, "l[0]", {"l": "y"}, False),  # one is a list, the other not
    # a list index on the way
    ({"l": [{"k": 1}]}, {"l": [{"k": 2}]}, "l[0].k", {"l": [{"k": 1}]}, True),
    ({"l": [{"k": 1}]}, {"l": []}, "l[0].k", {"l": []}, False),
    ({"l": []}, {"l": [{"k": 2}]}, "l[0].k", {"l": [{"k": 2}]}, False),
    ({"l": [{"k": 1}]}, {"l": [{}]}, "l[0].k", {"l": [{"k": 1}]}, True),
    ({"l": [{"m": {"k": 1}}]}, {"l": [{}]}, "l[0].m.k", {"l": [{}]}, False),  # the failure deeper down
    ({"l": [{"k": 1}]}, {"l": {"0": 1}}, "l[0].k", {"l": {"0": 1}}, False),  # one is a list, the other not
    ({"l": "x"}, {"l": "y"}, "l[0].k", {"l": "y"}, True),
    # a key at the leaf
    ({"m": {"k": 1}}, {"m": "flat"}, "m.k", {"m": "flat"}, False),  # deployed has it, the program's is no map
    ({"m": "flat"}, {"m": "flat2"}, "m.k", {"m": "flat2"}, True),  # neither is a map
    ({"m": "flat"}, {"m": {"k": 2, "j": 3}}, "m.k", {"m": {"j": 3}}, True),  # deployed is no map: deleted
    # a key on the way
    ({"m": {"n": {"k": 1}}}, {"m": "flat"}, "m.n.k", {"m": "flat"}, False),
    ({"m": {"n": {"k": 1}}}, {"m": ["n"]}, "m.n.k", {"m": ["n"]}, False),  # a list where the map was
    ({"m": ["n"]}, {"m": {"n": {"k": 2}}}, "m.n.k", {"m": {"n": {"k": 2}}}, False),
    ({"m": "flat"}, {"m": "flat2"}, "m.n.k", {"m": "flat2"}, True),
    ({"m": ["n"]}, {"m": ["n", "o"]}, "m.n.k", {"m": ["n", "o"]}, True),
    ({"m": {"n": {"k": 1}}}, {"m": {}}, "m.n.k", {"m": {}}, False),  # only the deployment has the parent
    ({"m": {}}, {"m": {}}, "m.n.k", {"m": {}}, True),  # nobody has it
]


@pytest.mark.parametrize(("deployed", "program", "path", "sent", "valid"), RESET_BRANCHES)
def test_each_branch_of_the_engines_reset(
    deployed: dict[str, Any], program: dict[str, Any], path: str, sent: dict[str, Any], valid: bool
) -> None:
    assert recording_diff._reset(deployed, program, path_parts(path)) == (sent, valid)
    kept, skipped = _ignored(deployed, program, path)
    assert kept == sent  # an invalid path sends the program's inputs as they are, and nothing is said ignored
    assert bool(skipped) == (valid and sent != program)

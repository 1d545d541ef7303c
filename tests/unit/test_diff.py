"""Tier 1: input diffs (pure, property-tested) and recording diffs over hand-built recordings."""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from tests.recorded import recorded
from trainstack.create_only import replaces
from trainstack.engine import RecordedResource, Recording
from trainstack.model.diff import diff_recordings, input_changes

leaves = st.one_of(st.integers(-5, 5), st.text(max_size=4), st.booleans(), st.none())
trees = st.recursive(
    leaves,
    lambda children: st.one_of(
        st.lists(children, max_size=3), st.dictionaries(st.text("abc", min_size=1, max_size=3), children, max_size=3)
    ),
    max_leaves=12,
)


@given(trees)
def test_a_tree_has_no_changes_against_itself(tree: Any) -> None:
    assert input_changes(tree, copy.deepcopy(tree)) == []


@given(st.dictionaries(st.text("xyz", min_size=1, max_size=3), leaves, min_size=1), st.data())
def test_changing_one_leaf_reports_exactly_that_path(tree: dict[str, Any], data: st.DataObject) -> None:
    key = data.draw(st.sampled_from(sorted(tree)))
    new = {**tree, "nested": {"deep": [1, {key: tree[key]}]}}
    changed = copy.deepcopy(new)
    changed["nested"]["deep"][1][key] = ("different", tree[key])
    (change,) = input_changes(new, changed)
    assert change.path == f"nested.deep[1].{key}"
    assert change.old == tree[key]


def test_added_and_removed_keys_and_resized_lists() -> None:
    changes = input_changes({"a": 1, "l": [1, 2]}, {"b": 2, "l": [1, 2, 3]})
    assert [(c.path, c.old, c.new) for c in changes] == [
        ("a", 1, "<absent>"),
        ("b", "<absent>", 2),
        ("l", [1, 2], [1, 2, 3]),
    ]


def resource(name: str, inputs: dict[str, Any], protect: bool = False) -> RecordedResource:
    return recorded("aws:ec2/subnet:Subnet", name, inputs, protect=protect)


def test_recordings_diff_by_urn() -> None:
    before = Recording("s", False, [resource("a", {"x": 1}), resource("b", {"x": 1}), resource("c", {})], {})
    protected = resource("b", {"x": 2}, protect=True)
    after = Recording("s", False, [resource("a", {"x": 1}), protected, resource("d", {})], {})
    added, removed, changed = diff_recordings(before, after)
    assert [urn.rsplit("::", 1)[1] for urn, _ in added] == ["d"]
    assert [urn.rsplit("::", 1)[1] for urn, _ in removed] == ["c"]
    (change,) = changed
    assert change.urn.endswith("::b")
    assert [(c.path, c.old, c.new) for c in change.changes] == [("x", 1, 2), ("(protect)", False, True)]


def test_create_only_inputs_make_a_replace_and_a_protected_one_is_flagged() -> None:
    fsx_type = "aws:fsx/lustreFileSystem:LustreFileSystem"

    def fsx(inputs: dict[str, Any], protect: bool) -> RecordedResource:
        return replace(resource("fs", inputs, protect), type=fsx_type, urn=f"urn:pulumi:s::trainstack::{fsx_type}::fs")

    base = {"deploymentType": "PERSISTENT_2", "subnetIds": ["subnet-a"], "storageCapacity": 2400, "tags": {"a": "1"}}
    moved = {**base, "subnetIds": ["subnet-b"], "storageCapacity": 4800}
    retagged = {**base, "tags": {"a": "2"}}
    (change,) = diff_recordings(
        Recording("s", False, [fsx(base, True)], {}), Recording("s", False, [fsx(moved, True)], {})
    )[2]
    assert change.op == "replace" and change.protected
    assert change.replace_reasons == ("subnetIds[0]",)  # the capacity grows in place; the subnet cannot move
    (change,) = diff_recordings(
        Recording("s", False, [fsx(base, False)], {}), Recording("s", False, [fsx(retagged, False)], {})
    )[2]
    assert change.op == "update" and change.replace_reasons == () and not change.protected


def test_replace_paths_match_whole_properties_only() -> None:
    assert replaces("aws:ec2/subnet:Subnet", "availabilityZone")
    assert replaces("aws:eks/cluster:Cluster", "kubernetesNetworkConfig.serviceIpv4Cidr")
    assert not replaces("aws:eks/cluster:Cluster", "kubernetesNetworkConfig.elasticLoadBalancing.enabled")
    assert not replaces("aws:ec2/subnet:Subnet", "availabilityZoneIdSuffix")
    assert not replaces("aws:ec2/subnet:Subnet", "tags.Name")
    assert not replaces("aws:not/a:Type", "name")


def test_a_key_that_is_not_a_plain_name_is_quoted_in_the_path_as_pulumi_writes_it() -> None:
    """Tags such as `kubernetes.io/role` name their change `tags["kubernetes.io/role"]`, a `"` escaped, as
    Pulumi's PropertyPath.String writes them; a plain key stays dotted."""
    old = {"tags": {"kubernetes.io/role": "a", 'say "hi"': "x", "Name_1": "n"}}
    new = {"tags": {"kubernetes.io/role": "b", 'say "hi"': "y", "Name_1": "m"}}
    assert [c.path for c in input_changes(old, new)] == [
        "tags.Name_1",
        'tags["kubernetes.io/role"]',
        'tags["say \\"hi\\""]',
    ]

"""Tier 1: the diff's rules one at a time, over hand-built inputs: what `pulumi up` or EKS refuses
(`diff_violations`), what `ignoreChanges` keeps (`apply_ignore_changes`), provider and protect changes, the
HyperPod rollout note, and the JSON shape of a `PlanDiff`."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from tests.recorded import recorded as resource
from trainstack.engine import RecordedResource, Recording
from trainstack.model.diff import (
    EKS_CLUSTER,
    EKS_UPGRADE,
    MISSING,
    PROTECTED_DELETE,
    PROTECTED_REPLACE,
    Delta,
    InputChange,
    PlanDiff,
    ResourceChange,
    apply_ignore_changes,
    diff_recordings,
    diff_violations,
    node_version_problems,
    resource_changes,
    rollout_notes,
)

HYPERPOD = "aws-native:sagemaker:Cluster"
FSX = "aws:fsx/lustreFileSystem:LustreFileSystem"
SUBNET = "aws:ec2/subnet:Subnet"
LIFECYCLE = "instanceGroups[0].lifeCycleConfig.sourceS3Uri"
ZERO = Delta(0, 0)


def recording(*resources: RecordedResource) -> Recording:
    return Recording("s", False, list(resources), {})


def plan_diff(
    changed: tuple[ResourceChange, ...] = (),
    removed: tuple[tuple[str, str], ...] = (),
    protected_removals: tuple[str, ...] = (),
    money: Delta = ZERO,
) -> PlanDiff:
    return PlanDiff(
        against="stacks/Pulumi.prod.yaml",
        added=(),
        removed=removed,
        changed=changed,
        accelerators_desired=ZERO,
        accelerators_max=ZERO,
        fabric_gbps_desired=ZERO,
        fabric_gbps_max=ZERO,
        usd_per_hour_desired=money,
        usd_per_hour_max=ZERO,
        usd_per_month_desired=ZERO,
        usd_per_month_max=ZERO,
        protected_removals=protected_removals,
    )


def eks_version(old: Any, new: Any, path: str = "version") -> tuple[str, ...]:
    """The messages `diff_violations` gives for one EKS cluster input going from `old` to `new`."""
    urn = f"urn:pulumi:s::trainstack::{EKS_CLUSTER}::eks"
    change = ResourceChange(urn, EKS_CLUSTER, (InputChange(path, old, new),))
    found = diff_violations(plan_diff(changed=(change,)))
    assert all(v.policy == EKS_UPGRADE and v.urn == urn and v.type == EKS_CLUSTER for v in found)
    return tuple(v.message for v in found)


# --- rollout notes ---------------------------------------------------------------------------------------------


def test_a_lifecycle_change_among_others_gets_the_update_cluster_software_note() -> None:
    """One lifecycle path is enough for the note, whatever else changed beside it."""
    changes = (InputChange("tags.team", "a", "b"), InputChange(LIFECYCLE, "s3://b/v1", "s3://b/v2"))
    (note,) = rollout_notes(HYPERPOD, changes, "train")
    assert "update-cluster-software --cluster-name train" in note


def test_no_rollout_note_for_other_types_or_other_paths() -> None:
    """The note is HyperPod's: the same path on another type, or a HyperPod tag change, needs nothing more."""
    changes = (InputChange(LIFECYCLE, "s3://b/v1", "s3://b/v2"),)
    assert rollout_notes(FSX, changes, "train") == ()
    assert rollout_notes(HYPERPOD, (InputChange("tags.team", "a", "b"),), "train") == ()


def test_diff_recordings_names_the_cluster_in_the_rollout_note() -> None:
    before = resource(HYPERPOD, "hp", {"clusterName": "train-prod", "instanceGroups": [{"lifeCycleConfig": {}}]})
    after = replace(before, inputs={"clusterName": "train-prod", "instanceGroups": [{"lifeCycleConfig": {"a": 1}}]})
    (change,) = diff_recordings(recording(before), recording(after))[2]
    assert len(change.notes) == 1 and "--cluster-name train-prod" in change.notes[0]


# --- changes, protect and providers ----------------------------------------------------------------------------


def test_input_change_kinds_follow_pulumi() -> None:
    """A key that is new is an add, one that is gone a delete, anything else an update."""
    assert InputChange("a", MISSING, 1).kind == "add"
    assert InputChange("a", 1, MISSING).kind == "delete"
    assert InputChange("a", 1, 2).kind == "update"


def test_a_resource_protected_only_in_the_baseline_is_still_protected() -> None:
    """Dropping protect=True in the same change as a replacement does not make the replacement safe."""
    before = resource(FSX, "fs", {"subnetIds": ["subnet-a"]}, protect=True)
    after = resource(FSX, "fs", {"subnetIds": ["subnet-b"]}, protect=False)
    (change,) = diff_recordings(recording(before), recording(after))[2]
    assert change.protected and change.op == "replace"


def test_a_provider_change_is_listed_as_an_input_change_unless_the_provider_moved_by_alias() -> None:
    """A resource moved to another provider (another region or account) is a change of its own; a provider only
    renamed (its old URN taken over by an alias) is none."""
    old_provider = "urn:pulumi:s::trainstack::pulumi:providers:aws::use1"
    new_provider = "urn:pulumi:s::trainstack::pulumi:providers:aws::usw2"
    before = replace(resource(SUBNET, "a", {"x": 1}), provider=f"{old_provider}::id-1")
    after = replace(before, provider=f"{new_provider}::id-2")
    assert [(c.path, c.old, c.new) for c in resource_changes(before, after)] == [
        ("(provider)", old_provider, new_provider)
    ]
    assert resource_changes(before, after, {old_provider: new_provider}) == ()


# --- ignoreChanges ---------------------------------------------------------------------------------------------


def test_ignore_changes_keeps_a_list_element_and_its_neighbours() -> None:
    """An ignored indexed path keeps the baseline's element; the elements around it are the proposal's."""
    before = resource(SUBNET, "a", {"ids": ["a", "b", "c"]}, ignore=("ids[1]",))
    after = replace(before, inputs={"ids": ["x", "y", "z"]})
    applied, (skipped,) = apply_ignore_changes(recording(before), recording(after))
    assert applied.resources[0].inputs == {"ids": ["x", "b", "z"]}
    assert [(c.path, c.old, c.new) for c in skipped.changes] == [("ids[1]", "b", "y")]


def test_ignore_changes_leaves_a_value_whose_shape_changed_as_proposed() -> None:
    """When the ignored path's parent is no longer a list (or mapping), the old value has nowhere to go: the
    proposal stands (it is still listed as ignored, since the path no longer holds the old value)."""
    for ignored, old, new in [
        ("ids[0]", {"ids": ["a"]}, {"ids": {"0": "a"}}),  # list -> mapping
        ("tags.team", {"tags": {"team": "a"}}, {"tags": ["team"]}),  # mapping -> list
        ("tags.team", {"tags": {"team": "a"}}, {"tags": None}),  # mapping -> null
    ]:
        before = resource(SUBNET, "a", old, ignore=(ignored,))
        applied, _ = apply_ignore_changes(recording(before), recording(replace(before, inputs=new)))
        assert applied.resources[0].inputs == new, ignored


def test_apply_ignore_changes_keeps_every_other_resource_once() -> None:
    """Resources without ignoreChanges, or new ones, pass through once each and in order."""
    plain = resource(SUBNET, "a", {"x": 1})
    ignoring = resource(SUBNET, "b", {"x": 1}, ignore=("x",))
    new = resource(SUBNET, "c", {"x": 1}, ignore=("x",))
    applied, ignored = apply_ignore_changes(
        recording(plain, ignoring), recording(replace(plain, inputs={"x": 2}), ignoring, new)
    )
    assert [(r.name, r.inputs) for r in applied.resources] == [("a", {"x": 2}), ("b", {"x": 1}), ("c", {"x": 1})]
    assert ignored == ()


# --- violations ------------------------------------------------------------------------------------------------


def test_eks_moves_one_minor_version_at_a_time() -> None:
    """A skip of one minor version is allowed; a skip of two is refused, naming the next version to go to."""
    assert eks_version("1.29", "1.30") == ()
    (message,) = eks_version("1.29", "1.31")
    assert "1.29 -> 1.31" in message and "go to 1.30 first" in message


def test_eks_is_never_downgraded_nor_moved_across_a_major_version() -> None:
    (message,) = eks_version("1.30", "1.29")
    assert "cannot be downgraded" in message
    (message,) = eks_version("1.30", "2.0")
    assert "one minor version at a time" in message and "go to 1.31 first" in message


def test_only_an_eks_version_with_two_numbers_is_checked() -> None:
    """Other paths, and values that are not `major.minor` (unknown, absent), are no version change."""
    assert eks_version("1.29", "1.31", path="tags.version") == ()
    assert eks_version(MISSING, "1.31") == ()
    assert eks_version("1.29", MISSING) == ()
    other = ResourceChange("urn:pulumi:s::trainstack::aws:eks/addon:Addon::a", "aws:eks/addon:Addon", ())
    other = replace(other, changes=(InputChange("version", "1.29", "1.31"),))
    assert diff_violations(plan_diff(changed=(other,))) == ()


def test_a_protected_deletion_and_a_protected_replacement_are_mandatory_violations() -> None:
    gone = f"urn:pulumi:s::trainstack::{FSX}::scratch"
    replaced = ResourceChange(
        f"urn:pulumi:s::trainstack::{FSX}::data", FSX, (InputChange("subnetIds[0]", "a", "b"),), protected=True
    )
    diff = plan_diff(changed=(replaced,), removed=((gone, FSX),), protected_removals=(gone,))
    assert diff.replaced == (replaced,)
    deleted, replacing = diff_violations(diff)
    assert (deleted.policy, deleted.urn, deleted.type, deleted.name) == (PROTECTED_DELETE, gone, FSX, "scratch")
    assert (replacing.policy, replacing.name, replacing.level, replacing.severity) == (
        PROTECTED_REPLACE,
        "data",
        "mandatory",
        "critical",
    )
    assert "subnetIds[0]" in replacing.message


# --- JSON ------------------------------------------------------------------------------------------------------


def test_to_dict_rounds_every_delta_to_four_digits() -> None:
    data = plan_diff(money=Delta(1.234567, 2.345678)).to_dict()
    assert data["usdPerHourDesired"] == {"before": 1.2346, "after": 2.3457, "change": 1.1111}
    assert data["acceleratorsMax"] == {"before": 0, "after": 0, "change": 0}
    assert data["against"] == "stacks/Pulumi.prod.yaml" and data["changed"] == []


def test_node_versions_are_judged_against_the_one_cluster_only() -> None:
    """No cluster (a HyperPod-only stack) or two: no control plane to judge a node group's kubelet against."""
    group = resource("aws:eks/nodeGroup:NodeGroup", "gpu", {"version": "1.36"})
    cluster = resource(EKS_CLUSTER, "eks", {"version": "1.33"})
    other = resource(EKS_CLUSTER, "eks2", {"version": "1.33"})
    assert node_version_problems(recording(group)) == ()
    assert node_version_problems(recording(cluster, other, group)) == ()
    [(urn, why)] = node_version_problems(recording(cluster, group))
    assert urn == group.urn and why.startswith("node group gpu: nodes on Kubernetes 1.36 under a control plane on 1.33")

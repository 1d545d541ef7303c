"""The offline diff agrees with what `pulumi up` would do: ignored inputs are not changes and not priced,
protected deletes and replacements refuse the plan (exit 1), and EKS moves one minor version at a time."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT, write_stack
from tests.recorded import recorded
from trainstack.cli import EXIT_OK, EXIT_POLICY, main
from trainstack.engine import RecordedResource, Recording
from trainstack.model.diff import (
    EKS_UPGRADE,
    PROTECTED_DELETE,
    PROTECTED_REPLACE,
    Delta,
    InputChange,
    PlanDiff,
    ResourceChange,
    apply_ignore_changes,
    diff_recordings,
    diff_violations,
    path_parts,
)

pytestmark = pytest.mark.usefixtures("shared_recordings")  # tests/conftest.py


def plan_json(capsys: pytest.CaptureFixture[str], path: Path, base: str) -> tuple[int, dict[str, Any]]:
    baseline = str(ROOT / "stacks" / f"Pulumi.{base}.yaml")
    code = main(["plan", "--config", str(path), "--against", baseline, "--format", "json"])
    return code, json.loads(capsys.readouterr().out)


def test_path_parts() -> None:
    assert path_parts("scalingConfig.desiredSize") == ["scalingConfig", "desiredSize"]
    assert path_parts("subnetIds[1]") == ["subnetIds", 1]
    assert path_parts("a[0].b") == ["a", 0, "b"]


def resource(urn: str, inputs: dict[str, Any], ignore: tuple[str, ...] = ()) -> RecordedResource:
    return replace(recorded("aws:eks/nodeGroup:NodeGroup", urn, inputs, ignore=ignore), urn=urn)


def test_ignored_inputs_keep_the_old_value_and_the_rest_changes() -> None:
    old = Recording("s", False, (resource("a", {"scalingConfig": {"desiredSize": 1, "maxSize": 2}}),), {})
    new = Recording(
        "s",
        False,
        (resource("a", {"scalingConfig": {"desiredSize": 4, "maxSize": 8}}, ("scalingConfig.desiredSize",)),),
        {},
    )
    effective, ignored = apply_ignore_changes(old, new)
    assert effective.resources[0].inputs == {"scalingConfig": {"desiredSize": 1, "maxSize": 8}}
    assert ignored == (
        ResourceChange("a", "aws:eks/nodeGroup:NodeGroup", (InputChange("scalingConfig.desiredSize", 1, 4),)),
    )
    added_only = Recording("s", False, (resource("b", {"x": 1}, ("x",)),), {})
    assert apply_ignore_changes(old, added_only) == (added_only, ())  # a new resource takes its inputs


@pytest.mark.e2e
def test_a_desired_size_edit_is_ignored_and_not_priced(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The g5 group's desired size belongs to the autoscaler after creation (ignoreChanges)."""

    def edit(c: dict[str, Any]) -> None:
        c["gpu_node_groups"][0]["desired_size"] = 2

    code, document = plan_json(capsys, write_stack(tmp_path, "dev", edit), "dev")
    diff = document["trainstack"]["diff"]
    assert code == EXIT_OK
    assert diff["changed"] == []
    assert diff["usdPerHourDesired"]["change"] == 0 and diff["acceleratorsDesired"]["change"] == 0
    (ignored,) = diff["ignored"]
    assert ignored["type"] == "aws:eks/nodeGroup:NodeGroup"
    assert ignored["changes"] == [{"path": "scalingConfig.desiredSize", "old": 0, "new": 2}]


@pytest.mark.e2e
def test_a_max_size_edit_is_a_change_and_is_priced(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    def edit(c: dict[str, Any]) -> None:
        c["gpu_node_groups"][0]["max_size"] = 4

    code, document = plan_json(capsys, write_stack(tmp_path, "dev", edit), "dev")
    diff = document["trainstack"]["diff"]
    assert code == EXIT_OK and diff["ignored"] == []
    assert [c["path"] for c in diff["changed"][0]["changes"]] == ["scalingConfig.maxSize"]
    assert diff["usdPerHourMax"]["change"] > 0


@pytest.mark.e2e
def test_renaming_the_stack_moves_no_urn_and_replaces_what_pulumi_would(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Logical names are fixed, so a new `name` deletes and creates nothing; physical names follow it, so resources
    whose name is a create-only input are replaced, and the protected EKS cluster among them refuses the plan."""

    def edit(c: dict[str, Any]) -> None:
        c["name"] = f"{c['name']}-b"

    code, document = plan_json(capsys, write_stack(tmp_path, "prod", edit), "prod")
    diff = document["trainstack"]["diff"]
    mandatory = {v["policy"] for v in document["trainstack"]["policy"]["violations"] if v["level"] == "mandatory"}
    assert code == EXIT_POLICY
    assert diff["added"] == [] and diff["removed"] == [] and diff["protectedDeletions"] == []
    assert PROTECTED_REPLACE in mandatory and PROTECTED_DELETE not in mandatory
    replaced = {(c["type"], tuple(c["replaceReasons"])) for c in diff["changed"] if c["op"] == "replace"}
    # Every name derived from the base name that is create-only (trainstack/create_only.py), and what follows it.
    assert replaced == {
        ("aws:eks/cluster:Cluster", ("name",)),
        ("aws:eks/addon:Addon", ("clusterName",)),
        ("aws:eks/nodeGroup:NodeGroup", ("clusterName",)),
        ("aws:eks/nodeGroup:NodeGroup", ("clusterName", "nodeGroupName")),
        ("aws:eks/accessEntry:AccessEntry", ("clusterName",)),
        ("aws:eks/accessPolicyAssociation:AccessPolicyAssociation", ("clusterName",)),
        ("aws:eks/podIdentityAssociation:PodIdentityAssociation", ("clusterName",)),
        ("aws:amp/scraper:Scraper", ("source.eks.clusterArn",)),
        ("aws:cloudwatch/logGroup:LogGroup", ("name",)),
        ("aws:ec2/flowLog:FlowLog", ("logDestination",)),  # the renamed log group's ARN
        ("aws:ec2/launchTemplate:LaunchTemplate", ("name",)),
        ("aws:ec2/securityGroup:SecurityGroup", ("description",)),  # GroupDescription is create-only
        ("aws:kms/alias:Alias", ("name",)),
        ("aws:sns/topic:Topic", ("name",)),
        ("aws:sns/topicPolicy:TopicPolicy", ("arn",)),  # the renamed topic's ARN
        ("aws:sns/topicSubscription:TopicSubscription", ("topic",)),  # and its subscription, on the new ARN
    }
    assert diff["protectedReplacements"] == [
        c["urn"] for c in diff["changed"] if c["type"] == "aws:eks/cluster:Cluster"
    ]
    # The rest of what carries the base name is an in-place update (tags, descriptions, policies).
    assert any(c["op"] == "update" and c["type"] == "aws:ec2/vpc:Vpc" for c in diff["changed"])


def test_an_aliased_move_is_no_change() -> None:
    """Matched by alias as `pulumi up` matches state: a resource (and its provider) renamed with an alias to the old
    URN is neither deleted nor created."""
    old_provider, new_provider = "urn:p::old-aws", "urn:p::aws"
    was = replace(resource("urn:x::old-ng", {"a": 1}), provider=f"{old_provider}::id")
    old = Recording("s", False, (replace(resource(old_provider, {}), type="pulumi:providers:aws"), was), {})
    now = replace(resource("urn:x::ng", {"a": 1}), provider=f"{new_provider}::id", aliases=("urn:x::old-ng",))
    provider = replace(resource(new_provider, {}), type="pulumi:providers:aws", aliases=(old_provider,))
    assert diff_recordings(old, Recording("s", False, (provider, now), {})) == ((), (), ())
    unaliased = replace(now, aliases=())
    added, removed, _ = diff_recordings(old, Recording("s", False, (provider, unaliased), {}))
    assert added == (("urn:x::ng", now.type),) and removed == (("urn:x::old-ng", now.type),)


def eks_diff(old: str, new: str) -> PlanDiff:
    zero = Delta(0, 0)
    change = ResourceChange("urn:eks", "aws:eks/cluster:Cluster", (InputChange("version", old, new),))
    return PlanDiff("base", (), (), (change,), *(zero,) * 8)


@pytest.mark.parametrize(
    ("old", "new", "refused"),
    [("1.35", "1.36", False), ("1.34", "1.36", True), ("1.36", "1.35", True), ("1.33", "1.34", False)],
)
def test_eks_moves_one_minor_version_at_a_time(old: str, new: str, refused: bool) -> None:
    found = diff_violations(eks_diff(old, new))
    assert [v.policy for v in found] == ([EKS_UPGRADE] if refused else [])
    assert all(v.level == "mandatory" for v in found)


@pytest.mark.e2e
def test_eks_two_minor_jump_refuses_the_plan(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = tmp_path / "base"
    base.mkdir()
    old = write_stack(
        base,
        "staging",
        lambda c: c["eks"].update(version="1.34", addons={**c["eks"]["addons"], "kube_proxy": "v1.34.0-eksbuild.1"}),
    )
    new = write_stack(tmp_path, "staging")  # the shipped config, as a file beside the old one
    code = main(["plan", "--config", str(new), "--against", str(old), "--format", "json"])
    document = json.loads(capsys.readouterr().out)
    messages = [v["message"] for v in document["trainstack"]["policy"]["violations"] if v["policy"] == EKS_UPGRADE]
    assert code == EXIT_POLICY
    assert messages and "go to 1.35 first" in messages[0]


def test_a_protected_resource_replaced_in_place_is_not_a_deletion() -> None:
    diff = replace(eks_diff("1.35", "1.36"), removed=(("urn:x", "aws:s3/bucket:Bucket"),))
    assert diff_violations(diff) == ()  # not protected in the baseline: an ordinary removal

"""Day-2 recipes (docs/day2.md), each backed by the diff it produces: what changes, what does not, and that
nothing is replaced or deleted that should not be."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT, program_recording, write_stack
from trainstack import cli
from trainstack.cli import EXIT_OK, main

NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"


pytestmark = pytest.mark.usefixtures("shared_recordings")  # tests/conftest.py


def diff_of(capsys: pytest.CaptureFixture[str], proposed: Path, baseline: Path) -> tuple[int, dict[str, Any]]:
    code = main(["plan", "--config", str(proposed), "--against", str(baseline), "--format", "json"])
    document = json.loads(capsys.readouterr().out)
    return code, document["trainstack"]["diff"]


def shipped(stack: str) -> Path:
    return ROOT / "stacks" / f"Pulumi.{stack}.yaml"


@pytest.mark.e2e
def test_scale_a_gpu_group(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    def edit(c: dict[str, Any]) -> None:
        c["gpu_node_groups"][0]["max_size"] = 4

    code, diff = diff_of(capsys, write_stack(tmp_path, "dev", edit), shipped("dev"))
    assert code == EXIT_OK
    assert not diff["added"] and not diff["removed"]
    changed_types = Counter(c["type"] for c in diff["changed"])
    assert changed_types[NODE_GROUP] == 1
    group = next(c for c in diff["changed"] if c["type"] == NODE_GROUP)
    assert group["op"] == "update" and [c["path"] for c in group["changes"]] == ["scalingConfig.maxSize"]
    assert diff["acceleratorsMax"]["change"] == 2 and diff["usdPerHourMax"]["change"] > 0


@pytest.mark.e2e
def test_add_a_team_with_namespace_scoped_access(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    role = "arn:aws:iam::210987654321:role/evaluation-team"

    def edit(c: dict[str, Any]) -> None:
        c["kubernetes"]["teams"].append({"name": "evaluation", "gpu_quota": 8, "member_role_arns": [role]})

    proposed = write_stack(tmp_path, "prod", edit)
    code, diff = diff_of(capsys, proposed, shipped("prod"))
    assert code == EXIT_OK
    assert not diff["removed"] and not [c for c in diff["changed"] if c["op"] == "replace"]
    added = Counter(a["type"] for a in diff["added"])
    assert added["kubernetes:core/v1:Namespace"] == 1
    assert added["kubernetes:core/v1:ResourceQuota"] >= 1
    assert added["aws:eks/accessEntry:AccessEntry"] == 1
    assert added["aws:eks/accessPolicyAssociation:AccessPolicyAssociation"] == 1
    recording = program_recording(cli.load_file(proposed), "prod", False)  # the run the plan above made
    scoped = [
        a
        for a in recording.by_type("aws:eks/accessPolicyAssociation:AccessPolicyAssociation")
        if a.inputs["principalArn"] == role
    ]
    assert len(scoped) == 1
    assert scoped[0].inputs["accessScope"] == {"type": "namespace", "namespaces": ["evaluation"]}
    assert scoped[0].inputs["policyArn"].endswith(":cluster-access-policy/AmazonEKSEditPolicy")


@pytest.mark.e2e
def test_rotate_the_ami_of_a_reserved_group(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A pinned release is a reviewed change: an in-place node group update (EKS replaces max_unavailable nodes
    at a time), not a replacement of the group."""

    def edit(c: dict[str, Any]) -> None:
        c["gpu_node_groups"][0]["ami_release_version"] = f"{c['eks']['version']}.0-20261115"

    code, diff = diff_of(capsys, write_stack(tmp_path, "prod", edit), shipped("prod"))
    assert code == EXIT_OK
    (group,) = diff["changed"]
    assert group["type"] == NODE_GROUP and group["op"] == "update"
    assert [c["path"] for c in group["changes"]] == ["releaseVersion"]


def test_an_ami_release_of_another_kubernetes_version_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def edit(c: dict[str, Any]) -> None:
        c["gpu_node_groups"][0]["ami_release_version"] = "1.30.4-20240917"

    code = main(["plan", "--config", str(write_stack(tmp_path, "prod", edit))])
    err = capsys.readouterr().err
    assert code == cli.EXIT_BAD_INPUT
    assert "gpu_node_groups.0.ami_release_version 1.30.4-20240917 is not a release for Kubernetes" in err


@pytest.mark.e2e
def test_upgrade_eks_one_minor_version(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = tmp_path / "base"
    base.mkdir()

    # The deployed 1.35 stack ran a 1.35 kube-proxy (a newer one than the API server is refused) and a 1.35
    # cluster-autoscaler (kubernetes/autoscaler tag cluster-autoscaler-1.35.2).
    def old_stack(c: dict[str, Any]) -> None:
        c["eks"].update(version="1.35", addons={**c["eks"]["addons"], "kube_proxy": "v1.35.0-eksbuild.1"})
        c["kubernetes"]["cluster_autoscaler"] = {"image_tag": "v1.35.2"}

    old = write_stack(base, "staging", old_stack)
    code, diff = diff_of(capsys, shipped("staging"), old)
    assert code == EXIT_OK
    cluster = next(c for c in diff["changed"] if c["type"] == "aws:eks/cluster:Cluster")
    assert cluster["op"] == "update" and {"path": "version", "old": "1.35", "new": "1.36"} in cluster["changes"]


@pytest.mark.e2e
def test_a_new_stack_collides_with_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Adding a stack: a copy of dev with its own base name plans on its own, every step a create."""

    def edit(c: dict[str, Any]) -> None:
        c["name"] = "trainstack-sandbox"
        c["network"]["vpc_cidr"] = "10.99.0.0/16"

    path = write_stack(tmp_path, "dev", edit)
    code = main(["plan", "--config", str(path), "--format", "json"])
    document = json.loads(capsys.readouterr().out)
    assert code == EXIT_OK
    assert {s["op"] for s in document["steps"]} == {"create"}
    names = json.dumps(document["steps"])
    assert "trainstack-sandbox" in names


def test_nothing_to_do_when_the_config_is_unchanged(capsys: pytest.CaptureFixture[str]) -> None:
    """Draining and replacing a failed node is an operation, not a config change: the plan stays empty."""
    code, diff = diff_of(capsys, shipped("prod"), shipped("prod"))
    assert code == EXIT_OK
    assert diff["added"] == diff["removed"] == diff["changed"] == diff["ignored"] == []


def test_dev_has_nothing_protected_so_it_destroys() -> None:
    recording = program_recording(cli.load_file(shipped("dev")), "dev", False)
    assert not [r.urn for r in recording.resources if r.protect or r.retain_on_delete]

"""Upgrading EKS in the documented order (docs/day2.md): control plane, add-ons, system nodes, GPU nodes, each
step one stack-file edit and one diff that moves that step's resources only.

Node groups keep their own Kubernetes version (`kubernetes_version`; the cluster's at creation when left out,
kept by `ignoreChanges` when eks.version moves), and the diff refuses a group newer than the control plane or
more than three minors older (Kubernetes version skew policy; stacks/compatibility.py `kubelet_problem`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT, write_stack
from trainstack.cli import EXIT_BAD_INPUT, EXIT_OK, EXIT_POLICY, main
from trainstack.model.diff import NODE_VERSION_SKEW

NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
CLUSTER = "aws:eks/cluster:Cluster"
ADDON = "aws:eks/addon:Addon"
RELEASE = "kubernetes:helm.sh/v3:Release"
CONFIG_FILE = "kubernetes:yaml/v2:ConfigFile"
# staging's p5 group grows, so it runs cluster-autoscaler, whose image follows the cluster's minor unless pinned
# (docs/capacity.md): its release's image and the ProvisioningRequest CRD of the same tag.
AUTOSCALER = {RELEASE: {"values.image.tag"}, CONFIG_FILE: {"file"}}
Edit = Callable[[dict[str, Any]], None]

pytestmark = pytest.mark.usefixtures("shared_recordings")  # tests/conftest.py


def diff_of(capsys: pytest.CaptureFixture[str], proposed: Path, baseline: Path) -> tuple[int, dict[str, Any]]:
    code = main(["plan", "--config", str(proposed), "--against", str(baseline), "--format", "json"])
    captured = capsys.readouterr()
    assert captured.out, captured.err
    document = json.loads(captured.out)
    return code, document | {"diff": document["trainstack"]["diff"]}


def stage(tmp_path: Path, name: str, *edits: Edit) -> Path:
    """Staging with `edits` applied in order, in a directory of its own (the file name decides the stack)."""
    directory = tmp_path / name
    directory.mkdir()

    def edit(cluster: dict[str, Any]) -> None:
        for one in edits:
            one(cluster)

    return write_stack(directory, "staging", edit)


def at_135(c: dict[str, Any]) -> None:
    """The deployed cluster one minor back: 1.35, with a 1.35 kube-proxy (a newer one is refused)."""
    c["eks"]["version"] = "1.35"
    c["eks"]["addons"]["kube_proxy"] = "v1.35.0-eksbuild.1"


def control_plane(c: dict[str, Any]) -> None:
    c["eks"]["version"] = "1.36"


def addons(c: dict[str, Any]) -> None:
    c["eks"]["addons"]["kube_proxy"] = "v1.36.0-eksbuild.21"
    c["kubernetes"]["cluster_autoscaler"] = {"image_tag": "v1.36.1"}  # written down in step 0: moved here


def system_nodes(c: dict[str, Any], version: str = "1.36") -> None:
    c["eks"].setdefault("system_node_group", {})["kubernetes_version"] = version


def gpu_nodes(c: dict[str, Any], version: str = "1.36") -> None:
    for group in c["gpu_node_groups"]:
        group["kubernetes_version"] = version


def written_down(c: dict[str, Any]) -> None:
    """Step 0: the versions the node groups and the autoscaler run, written down (an empty diff), so each later
    step moves them."""
    system_nodes(c, c["eks"]["version"])
    gpu_nodes(c, c["eks"]["version"])
    c["kubernetes"]["cluster_autoscaler"] = {"image_tag": "v1.35.2"}  # the 1.35 default, pinned


def changes(diff: dict[str, Any]) -> dict[str, set[str]]:
    """Changed resources by type, each with the input paths that change."""
    found: dict[str, set[str]] = {}
    for change in diff["changed"]:
        assert change["op"] == "update", change  # nothing in the recipe replaces anything
        found.setdefault(change["type"], set()).update(c["path"] for c in change["changes"])
    return found


@pytest.mark.e2e
def test_each_upgrade_step_is_a_diff_of_its_own(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    steps = [at_135, written_down, control_plane, addons, system_nodes, gpu_nodes]
    files = [stage(tmp_path, f"step{i}", *steps[: i + 1]) for i in range(len(steps))]
    files = files[1:]  # from the deployed 1.35 stack with its versions written down (an empty diff: tested below)

    # 1. The control plane alone: every node group stays on 1.35.
    code, plan = diff_of(capsys, files[1], files[0])
    assert code == EXIT_OK, plan["trainstack"]["policy"]
    assert changes(plan["diff"]) == {CLUSTER: {"version"}}
    assert not plan["diff"]["added"] and not plan["diff"]["removed"]

    # 2. The add-ons: kube-proxy to the cluster's minor.
    code, plan = diff_of(capsys, files[2], files[1])
    assert code == EXIT_OK and changes(plan["diff"]) == {ADDON: {"addonVersion"}, **AUTOSCALER}

    # 3. The system nodes, then 4. the GPU nodes: one node group update each, nothing else.
    code, plan = diff_of(capsys, files[3], files[2])
    assert code == EXIT_OK and changes(plan["diff"]) == {NODE_GROUP: {"version"}}
    assert [c["urn"].rsplit("::", 1)[-1] for c in plan["diff"]["changed"]] == ["eks-system"]
    code, plan = diff_of(capsys, files[4], files[3])
    assert code == EXIT_OK and changes(plan["diff"]) == {NODE_GROUP: {"version"}}
    assert all(c["urn"].rsplit("::", 1)[-1].startswith("gpu-") for c in plan["diff"]["changed"])


@pytest.mark.e2e
def test_without_versions_of_their_own_groups_keep_theirs_when_the_control_plane_moves(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Groups that never set kubernetes_version: moving eks.version updates the cluster; each group's version
    change is listed as ignored (the version it was created with stays), not applied."""
    code, plan = diff_of(capsys, stage(tmp_path, "next", at_135, control_plane), stage(tmp_path, "deployed", at_135))
    assert code == EXIT_OK
    # An unpinned autoscaler image follows the control plane in the same step.
    assert changes(plan["diff"]) == {CLUSTER: {"version"}, **AUTOSCALER}
    kept = [i for i in plan["diff"]["ignored"] if i["type"] == NODE_GROUP]
    assert {k["urn"].rsplit("::", 1)[-1] for k in kept} == {"eks-system", "gpu-p5-ng"}
    for item in kept:
        assert [(c["path"], c["old"], c["new"]) for c in item["changes"]] == [("version", "1.35", "1.36")]


@pytest.mark.e2e
def test_the_field_appearing_on_a_shipped_stack_changes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A deployed stack that writes down the versions its groups run gets an empty diff: no node group is
    updated, let alone replaced."""
    shipped = ROOT / "stacks" / "Pulumi.staging.yaml"
    code, plan = diff_of(capsys, stage(tmp_path, "pinned", system_nodes, gpu_nodes), shipped)
    assert code == EXIT_OK
    assert plan["diff"]["changed"] == plan["diff"]["added"] == plan["diff"]["removed"] == []


def test_a_group_newer_than_the_control_plane_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    def ahead(c: dict[str, Any]) -> None:
        c["gpu_node_groups"][0]["kubernetes_version"] = "1.36"

    code = main(["plan", "--config", str(stage(tmp_path, "ahead", at_135, ahead))])
    err = capsys.readouterr().err
    assert code == EXIT_BAD_INPUT
    assert "gpu_node_groups.0.kubernetes_version 1.36" in err and "never newer than the API server" in err


@pytest.mark.e2e
def test_a_group_left_too_far_behind_is_refused_by_the_diff(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A group pinned at 1.32 under 1.35, then unpinned while the control plane goes to 1.36: the schema sees
    no version of the group's own, but `pulumi up` would keep 1.32 (ignoreChanges), four minors behind."""

    def old_groups(c: dict[str, Any]) -> None:
        for group in c["gpu_node_groups"]:
            group["kubernetes_version"] = "1.32"

    baseline = stage(tmp_path, "old", at_135, old_groups)
    code, plan = diff_of(capsys, stage(tmp_path, "next", control_plane), baseline)
    assert code == EXIT_POLICY
    refused = [v for v in plan["trainstack"]["policy"]["violations"] if v["policy"] == NODE_VERSION_SKEW]
    assert refused and all("at most 3 minor versions older" in v["message"] for v in refused)
    assert {v["urn"].rsplit("::", 1)[-1] for v in refused} == {
        c["urn"].rsplit("::", 1)[-1] for c in plan["diff"]["ignored"] if c["type"] == NODE_GROUP
    } - {"eks-system"}


def test_kubelet_skew_rule() -> None:
    from stacks.compatibility import kubelet_problem

    assert kubelet_problem("1.36", "1.36") is None and kubelet_problem("1.36", "1.33") is None
    assert "never newer" in (kubelet_problem("1.35", "1.36") or "")
    assert "at most 3" in (kubelet_problem("1.36", "1.32") or "")

"""Day-2 recipes (docs/day2.md), each backed by the diff it produces: what changes, what does not, and that
nothing is replaced or deleted that should not be."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT, program_recording, write_stack
from trainstack import cli
from trainstack.cli import EXIT_OK, main
from trainstack.journeys import DAY2, walk

NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
RUNTIME = "kubernetes:trainer.kubeflow.org/v1alpha1:ClusterTrainingRuntime"
LUSTRE = "aws:fsx/lustreFileSystem:LustreFileSystem"
EXAMPLES = sorted((ROOT / "stacks" / "examples").glob("*.yaml"))


pytestmark = pytest.mark.usefixtures("shared_recordings")  # tests/conftest.py


def plan_against(capsys: pytest.CaptureFixture[str], proposed: Path, baseline: Path) -> tuple[int, dict[str, Any]]:
    code = main(["plan", "--config", str(proposed), "--against", str(baseline), "--format", "json"])
    return code, json.loads(capsys.readouterr().out)["trainstack"]


def day2_journeys(document: dict[str, Any]) -> list[dict[str, Any]]:
    return [j for j in document["journeys"] if j["kind"] == "day 2"]


def diff_of(capsys: pytest.CaptureFixture[str], proposed: Path, baseline: Path) -> tuple[int, dict[str, Any]]:
    """The diff of a recipe, which every day-2 journey must let through: the APIs take every update it plans
    (transition rules, delete-before-replace, AWS's in-place rules; trainstack/journeys/day2.py)."""
    code, document = plan_against(capsys, proposed, baseline)
    journeys = day2_journeys(document)
    assert any(j["subject"].startswith("the change from the deployed stack") for j in journeys)
    assert [j["broken_step"] for j in journeys if not j["holds"]] == []
    return code, document["diff"]


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
    # No EKS access policy: the team's own Role, bound to its group, in its namespace only (docs/security.md).
    assert not added["aws:eks/accessPolicyAssociation:AccessPolicyAssociation"]
    assert added["kubernetes:rbac.authorization.k8s.io/v1:Role"] == 1
    assert added["kubernetes:rbac.authorization.k8s.io/v1:RoleBinding"] == 1
    recording = program_recording(cli.load_file(proposed), "prod", False)  # the run the plan above made
    [entry] = [e for e in recording.by_type("aws:eks/accessEntry:AccessEntry") if e.inputs["principalArn"] == role]
    assert entry.inputs["kubernetesGroups"] == ["trainstack:team:evaluation"]


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

    # The deployed 1.35 stack ran a 1.35 kube-proxy (a newer one than the API server is refused).
    old = write_stack(
        base,
        "staging",
        lambda c: c["eks"].update(version="1.35", addons={**c["eks"]["addons"], "kube_proxy": "v1.35.0-eksbuild.1"}),
    )
    code, diff = diff_of(capsys, shipped("staging"), old)
    assert code == EXIT_OK
    cluster = next(c for c in diff["changed"] if c["type"] == "aws:eks/cluster:Cluster")
    assert cluster["op"] == "update" and {"path": "version", "old": "1.35", "new": "1.36"} in cluster["changes"]
    # The autoscaler follows the minor: its image moves from the 1.35 release to the 1.36 one, in place.
    autoscaler = next(c for c in diff["changed"] if c["urn"].endswith("::cluster-autoscaler-release"))
    assert autoscaler["op"] == "update"
    assert {"path": "values.image.tag", "old": "v1.35.2", "new": "v1.36.1"} in autoscaler["changes"]


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


def runtimes_edit(**values: Any) -> Callable[[dict[str, Any]], None]:
    def edit(c: dict[str, Any]) -> None:
        operator = c["kubernetes"]["training_operator"]
        operator["runtimes"] = {**operator.get("runtimes", {}), **values}

    return edit


@pytest.mark.e2e
def test_change_max_restarts_replaces_the_runtimes_old_ones_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """max_restarts lives in failurePolicy, which Trainer's ClusterTrainingRuntime CRD makes immutable: the torch
    and MPI runtimes of every group are replaced (deleted, then created under the same name), nothing else."""
    code, diff = diff_of(capsys, write_stack(tmp_path, "prod", runtimes_edit(max_restarts=5)), shipped("prod"))
    assert code == EXIT_OK
    assert not diff["added"] and not diff["removed"]
    assert {c["type"] for c in diff["changed"]} == {RUNTIME}
    assert len(diff["changed"]) == 2  # torch and MPI on prod's one GPU group; the NCCL runtime does not restart
    for change in diff["changed"]:
        assert change["op"] == "replace" and change["deleteBeforeReplace"] is True
        assert change["replaceReasons"] == ["spec.template.spec.failurePolicy.maxRestarts"]
        assert {"path": "spec.template.spec.failurePolicy.maxRestarts", "old": 3, "new": 5} in change["changes"]
        (note,) = change["notes"]
        assert "TrainJob" in note  # Trainer's in-use finalizer holds the delete while a TrainJob names the runtime


@pytest.mark.e2e
def test_change_fatal_exit_codes_updates_the_runtimes_in_place(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The Jobs' pod failure policy is not frozen: the runtimes are updated, and no TrainJob needs deleting."""
    edit = runtimes_edit(fatal_exit_codes=[2, 78])
    code, diff = diff_of(capsys, write_stack(tmp_path, "prod", edit), shipped("prod"))
    assert code == EXIT_OK
    assert {c["type"] for c in diff["changed"]} == {RUNTIME}
    assert {c["op"] for c in diff["changed"]} == {"update"}
    assert all(c["notes"] == [] and c["deleteBeforeReplace"] is False for c in diff["changed"])


def _fsx_capacity(c: dict[str, Any], change: int) -> None:
    c["storage"]["fsx"]["storage_capacity_gib"] += change


@pytest.mark.e2e
def test_grow_lustre_updates_the_file_system_in_place(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, diff = diff_of(capsys, write_stack(tmp_path, "prod", lambda c: _fsx_capacity(c, 24000)), shipped("prod"))
    assert code == EXIT_OK
    (fsx,) = [c for c in diff["changed"] if c["type"] == LUSTRE]
    assert fsx["op"] == "update" and {c["path"] for c in fsx["changes"]} == {"storageCapacity"}


@pytest.mark.e2e
def test_shrinking_lustre_is_refused_by_the_day2_journey(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The schema cannot know what is deployed; the diff can: FSx never shrinks a file system in place."""
    grown = tmp_path / "grown"
    grown.mkdir()
    deployed = write_stack(grown, "prod", lambda c: _fsx_capacity(c, 24000))
    code, document = plan_against(capsys, shipped("prod"), deployed)
    assert code == cli.EXIT_JOURNEY
    (broken,) = [j for j in day2_journeys(document) if not j["holds"]]
    assert broken["broken_step"]["name"] == "AWS makes every update in place"
    assert "storageCapacity 148800 -> 124800 GiB" in broken["broken_step"]["detail"]


@pytest.mark.e2e
@pytest.mark.parametrize("example", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_day2_journeys_hold_on_every_example(example: Path) -> None:
    config = cli.load_file(example)
    found = walk(program_recording(config, config.environment.value), config)
    day2 = [j for j in found if j.kind == DAY2]
    assert all(j.holds for j in day2), [(j.subject, j.broken_step) for j in day2 if not j.holds]

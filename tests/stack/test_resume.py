"""Resume in each committed stack (shared recordings): every training runtime carries the restart policy and
names a service account and ConfigMap that exist in every team namespace, the CRD contract tier accepts it, and
the plan's Health section says what happens when a pod fails."""

from __future__ import annotations

from components.health.checkpoints import CONFIG_MAP
from components.k8s.training_runtimes import RESTART_WAIT, runtime_names
from components.storage.team_storage import TEAM_SERVICE_ACCOUNT
from tests.conftest import recording, stack_config
from trainstack.contracts import crds
from trainstack.model.health import summarize_health
from trainstack.report.health import lines
from trainstack.tokens import CLUSTER_TRAINING_RUNTIME


def _pods(spec: dict) -> list[dict]:
    return [job["template"]["spec"]["template"]["spec"] for job in spec["template"]["spec"]["replicatedJobs"]]


def test_every_runtime_restarts_as_the_stack_says(stack_name: str) -> None:
    cluster = stack_config(stack_name)
    knobs = cluster.kubernetes.training_operator.runtimes
    runtimes = {
        r.inputs["metadata"]["name"]: r.inputs["spec"] for r in recording(stack_name).by_type(CLUSTER_TRAINING_RUNTIME)
    }
    names = [name for group in cluster.gpu_node_groups for name in runtime_names(group).values()]
    assert names and set(names) <= set(runtimes)
    for name in names:
        policy = runtimes[name]["template"]["spec"]["failurePolicy"]
        assert policy["maxRestarts"] == knobs.max_restarts
        assert [r["action"] for r in policy["rules"]] == [
            "RestartJobSetAndIgnoreMaxRestarts",
            "FailJobSet",
            "RestartJobSet",
        ]
        for job in runtimes[name]["template"]["spec"]["replicatedJobs"]:
            codes = job["template"]["spec"]["podFailurePolicy"]["rules"][1]["onExitCodes"]["values"]
            assert [int(c) for c in codes] == sorted(knobs.fatal_exit_codes)
        waits = [c for pod in _pods(runtimes[name]) for c in pod.get("initContainers", []) if c["name"] == RESTART_WAIT]
        assert waits and all(w["image"] == knobs.restart_wait_image for w in waits)


def test_runtime_pods_name_a_service_account_and_configmap_every_team_namespace_has(stack_name: str) -> None:
    rec = recording(stack_name)
    teams = {team.name for team in stack_config(stack_name).kubernetes.teams}
    accounts = {
        (r.inputs["metadata"]["namespace"], r.inputs["metadata"]["name"])
        for r in rec.by_type("kubernetes:core/v1:ServiceAccount")
    }
    config_maps = {
        (r.inputs["metadata"]["namespace"], r.inputs["metadata"]["name"])
        for r in rec.by_type("kubernetes:core/v1:ConfigMap")
    }
    for runtime in rec.by_type(CLUSTER_TRAINING_RUNTIME):
        if runtime.inputs["metadata"]["name"].startswith("trainstack-nccl-"):
            continue  # the validation job's runtime runs in trainstack-validation, as its own account
        for pod in _pods(runtime.inputs["spec"]):
            assert pod["serviceAccountName"] == TEAM_SERVICE_ACCOUNT
            assert pod["containers"][0]["envFrom"] == [{"configMapRef": {"name": CONFIG_MAP}}]
            assert {(team, TEAM_SERVICE_ACCOUNT) for team in teams} <= accounts
            assert {(team, CONFIG_MAP) for team in teams} <= config_maps


def test_the_crd_contract_tier_accepts_the_runtimes(stack_name: str) -> None:
    rec = recording(stack_name)
    runtime_urns = {r.urn for r in rec.by_type(CLUSTER_TRAINING_RUNTIME)}
    assert runtime_urns
    assert [v for v in crds.check(rec) if v.urn in runtime_urns] == []


def test_the_health_section_shows_the_restart_policy(stack_name: str) -> None:
    knobs = stack_config(stack_name).kubernetes.training_operator.runtimes
    text = "\n".join(lines(summarize_health(recording(stack_name))))
    assert f"up to {knobs.max_restarts} restarts after a crash" in text
    assert "DisruptionTarget) restarts without counting" in text
    assert f"exit codes {', '.join(map(str, sorted(knobs.fatal_exit_codes)))} fail it at once" in text

"""Resume, pure parts: the training runtimes' restart policy (Job podFailurePolicy, JobSet failure rules, the
restart wait), the team's service account and checkpoint ConfigMap on their pods, and the knobs' bounds."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from components.health.checkpoints import CONFIG_MAP
from components.k8s.training_runtimes import (
    DISRUPTION_MESSAGE,
    NODE,
    RESTART_WAIT,
    RESTART_WAIT_SCRIPT,
    LustreMount,
    jobset_failure_policy,
    mpi_runtime_spec,
    pod_failure_policy,
    restart_wait_init_container,
    restart_wait_seconds,
    torch_runtime_spec,
)
from components.storage.team_storage import TEAM_SERVICE_ACCOUNT
from stacks.load import FULL_KEY, ConfigError
from stacks.schema import TrainerRuntimesSpec
from stacks.schema.security import DEFAULT_ALLOWED_REGISTRIES
from tests.conftest import edited_config, stack_config, stack_document
from trainstack.cli import EXIT_BAD_INPUT, main

# JobSet v0.10.1 pkg/webhooks/jobset_webhook.go: rule names and the Job failure reasons its rules may name.
JOBSET_RULE_NAME = re.compile(r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$")
JOBSET_REASONS = {
    "BackoffLimitExceeded",
    "DeadlineExceeded",
    "FailedIndexes",
    "MaxFailedIndexesExceeded",
    "PodFailurePolicy",
}
# The Job controller's FailJob messages (kubernetes pkg/controller/job/pod_failure_policy.go), as a team sees them.
CONDITION_MESSAGE = "Pod team-a/llm-node-0-0-x7k2p has condition DisruptionTarget matching FailJob rule at index 0"
EXIT_CODE_MESSAGE = (
    "Container node for pod team-a/llm-node-0-0-x7k2p failed with exit code 78 matching FailJob rule at index 1"
)


def runtimes() -> list[dict[str, Any]]:
    cluster = stack_config("prod")
    group, spec = cluster.gpu_node_groups[0], cluster.kubernetes.training_operator.runtimes
    lustre = LustreMount("fsx-claim")
    return [torch_runtime_spec(group, spec, lustre), mpi_runtime_spec(group, spec, lustre)]


def jobs(runtime: dict[str, Any]) -> list[dict[str, Any]]:
    return runtime["template"]["spec"]["replicatedJobs"]


def first_matching_rule(rules: list[dict[str, Any]], reason: str, message: str) -> str | None:
    """JobSet's rule matching (failure_policy.go ruleIsApplicable): reason in the list, any pattern matches."""
    for rule in rules:
        reasons, patterns = rule.get("onJobFailureReasons", []), rule.get("onJobFailureMessagePatterns", [])
        if (not reasons or reason in reasons) and (not patterns or any(re.search(p, message) for p in patterns)):
            return rule["action"]
    return None


def test_every_job_fails_fast_with_a_pod_failure_policy_the_api_accepts() -> None:
    for runtime in runtimes():
        for job in jobs(runtime):
            spec = job["template"]["spec"]
            # podFailurePolicy is only valid with restartPolicy Never (batch/v1 JobSpec validation).
            assert spec["template"]["spec"]["restartPolicy"] == "Never"
            assert spec["backoffLimit"] == 0  # no lone rank retried: the JobSet restarts them all together
            condition, codes = spec["podFailurePolicy"]["rules"]
            assert condition == {
                "action": "FailJob",
                "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}],
            }
            values = codes["onExitCodes"]["values"]
            # batch/v1 PodFailurePolicyOnExitCodesRequirement: sorted, unique, no 0 with In, 1 to 255 values.
            assert values == sorted(set(values)) and 0 not in values and 1 <= len(values) <= 255
            assert codes["action"] == "FailJob" and codes["onExitCodes"]["containerName"] == NODE


def test_fatal_codes_leave_generic_errors_and_signals_retryable() -> None:
    codes = pod_failure_policy(TrainerRuntimesSpec().fatal_exit_codes)["rules"][1]["onExitCodes"]["values"]
    assert codes == [2, 78, 126, 127]
    # 1: Python's uncaught exception and torchrun's exit on any worker failure; 128+N: killed by signal N
    # (137 OOM kill, 134 NCCL watchdog abort, 135 SIGBUS on an ECC error, 143 SIGTERM on a drain).
    for retryable in (1, 134, 135, 137, 139, 143):
        assert retryable not in codes
    assert pod_failure_policy([])["rules"] == [pod_failure_policy([2])["rules"][0]]  # no codes: no empty rule


def test_jobset_restarts_a_lost_node_free_fails_a_fatal_code_and_counts_a_crash() -> None:
    policy = jobset_failure_policy(TrainerRuntimesSpec(max_restarts=5))
    assert policy["maxRestarts"] == 5 and policy["restartStrategy"] == "BlockingRecreate"
    rules = policy["rules"]
    assert len({r["name"] for r in rules}) == len(rules)
    for rule in rules:
        assert JOBSET_RULE_NAME.match(rule["name"]) and set(rule["onJobFailureReasons"]) <= JOBSET_REASONS
    assert re.search(DISRUPTION_MESSAGE, CONDITION_MESSAGE) and not re.search(DISRUPTION_MESSAGE, EXIT_CODE_MESSAGE)
    assert first_matching_rule(rules, "PodFailurePolicy", CONDITION_MESSAGE) == "RestartJobSetAndIgnoreMaxRestarts"
    assert first_matching_rule(rules, "PodFailurePolicy", EXIT_CODE_MESSAGE) == "FailJobSet"
    crash = "Job has reached the specified backoff limit"
    assert first_matching_rule(rules, "BackoffLimitExceeded", crash) == "RestartJobSet"


def test_every_pod_runs_as_the_team_service_account_with_the_checkpoint_env_and_lustre() -> None:
    for runtime in runtimes():
        assert runtime["template"]["spec"]["failurePolicy"]["rules"]
        for job in jobs(runtime):
            pod = job["template"]["spec"]["template"]["spec"]
            assert pod["serviceAccountName"] == TEAM_SERVICE_ACCOUNT == "training"
            (container,) = pod["containers"]
            assert container["envFrom"] == [{"configMapRef": {"name": CONFIG_MAP}}]
            assert {"name": "fsx", "mountPath": "/fsx"} in container["volumeMounts"]
            assert {"name": "fsx", "persistentVolumeClaim": {"claimName": "fsx-claim"}} in pod["volumes"]


def test_the_pods_that_hold_gpus_wait_before_a_restart_and_the_launcher_does_not() -> None:
    torch, mpi = runtimes()
    waits = {
        (kind, job["name"]): any(
            c["name"] == RESTART_WAIT for c in job["template"]["spec"]["template"]["spec"].get("initContainers", [])
        )
        for kind, runtime in (("torch", torch), ("mpi", mpi))
        for job in jobs(runtime)
    }
    assert waits == {("torch", "node"): True, ("mpi", "node"): True, ("mpi", "launcher"): False}
    init = restart_wait_init_container(TrainerRuntimesSpec())
    assert (
        init["env"][0]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.labels['jobset.sigs.k8s.io/restart-attempt']"
    )
    assert init["securityContext"]["runAsNonRoot"] is True


@pytest.mark.parametrize(("initial", "cap"), [(30, 300), (10, 360), (0, 0), (7, 7), (600, 3600)])
def test_the_restart_wait_script_sleeps_what_the_plan_says(initial: int, cap: int) -> None:
    """Runs the init container's script under /bin/sh with `sleep` replaced by an echo."""
    for attempt in range(8):
        done = subprocess.run(
            ["/bin/sh", "-c", 'sleep() { echo "slept $1"; }; ' + RESTART_WAIT_SCRIPT],
            env={
                "TRAINSTACK_RESTART_ATTEMPT": str(attempt),
                "TRAINSTACK_RESTART_BACKOFF_S": str(initial),
                "TRAINSTACK_RESTART_BACKOFF_MAX_S": str(cap),
            },
            capture_output=True,
            text=True,
            check=True,
        )
        assert done.stdout.splitlines()[-1] == f"slept {restart_wait_seconds(attempt, initial, cap)}"


@given(st.integers(0, 30), st.integers(0, 600), st.integers(0, 3600))
def test_restart_waits_double_and_never_pass_the_cap(attempt: int, initial: int, cap: int) -> None:
    wait = restart_wait_seconds(attempt, initial, cap)
    assert 0 <= wait <= cap or (attempt == 0 and wait == 0)
    if attempt > 1:
        assert wait == min(2 * restart_wait_seconds(attempt - 1, initial, cap), cap)


@pytest.mark.parametrize(
    ("knobs", "error"),
    [
        ({"fatal_exit_codes": [1]}, "greater than or equal to 2"),
        ({"fatal_exit_codes": [137]}, "less than or equal to 127"),
        ({"fatal_exit_codes": [78, 78]}, "[78] repeated"),
        ({"restart_backoff_s": 601}, "less than or equal to 600"),
        ({"restart_backoff_s": 60, "restart_backoff_max_s": 30}, "below restart_backoff_s 60"),
        ({"max_restarts": 21}, "less than or equal to 20"),
    ],
)
def test_bad_knobs_are_refused(knobs: dict[str, Any], error: str) -> None:
    with pytest.raises(ValidationError, match=re.escape(error)):
        TrainerRuntimesSpec(**knobs)


@pytest.mark.parametrize(
    ("knobs", "where", "says"),
    [
        ({"fatal_exit_codes": [2, 137]}, ".kubernetes.training_operator.runtimes.fatal_exit_codes.1 (got 137)", "127"),
        (
            {"restart_backoff_s": -5},
            ".kubernetes.training_operator.runtimes.restart_backoff_s (got -5)",
            "greater than or equal to 0",
        ),
        (
            {"restart_backoff_max_s": 900},
            ".kubernetes: training_operator.runtimes.restart_backoff_max_s 900",
            "below kueue.wait_for_pods_ready_timeout_s 600",
        ),
    ],
)
def test_the_plan_refuses_a_bad_knob_with_exit_2_naming_the_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], knobs: dict[str, Any], where: str, says: str
) -> None:
    document = stack_document("prod")
    operator = document["config"][FULL_KEY]["kubernetes"]["training_operator"]
    operator["runtimes"] = {**operator.get("runtimes", {}), **knobs}
    path = tmp_path / "Pulumi.prod.yaml"
    path.write_text(yaml.safe_dump(document))
    assert main(["plan", "--config", str(path)]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert FULL_KEY + where in err and says in err and "Traceback" not in err


@pytest.mark.parametrize("key", ["torch_image", "mpi_image", "restart_wait_image"])
def test_a_runtime_image_the_team_namespaces_would_refuse_is_refused(key: str) -> None:
    """Runtime pods run in the team namespaces: an unapproved default image would block every TrainJob keeping it."""

    def image(value: str) -> Callable[[dict[str, Any]], None]:
        def edit(cluster: dict[str, Any]) -> None:
            cluster["kubernetes"]["training_operator"].setdefault("runtimes", {})[key] = value

        return edit

    with pytest.raises(ConfigError) as caught:
        edited_config("prod", image("docker.io/library/busybox:1.37.0"))
    (problem,) = caught.value.problems
    assert f"training_operator.runtimes.{key} docker.io/library/busybox:1.37.0" in problem.message
    assert "security.allowed_image_registries" in problem.message
    region = stack_config("prod").region
    mirrored = f"111122223333.dkr.ecr.{region}.amazonaws.com/busybox:1.37.0"  # the account's private ECR: allowed
    runtimes = edited_config("prod", image(mirrored)).kubernetes.training_operator.runtimes
    assert getattr(runtimes, key) == mirrored


def test_the_default_runtime_images_come_from_the_default_approved_registries() -> None:
    runtimes = TrainerRuntimesSpec()
    for image in (runtimes.torch_image, runtimes.mpi_image, runtimes.restart_wait_image):
        assert image.startswith(DEFAULT_ALLOWED_REGISTRIES), image

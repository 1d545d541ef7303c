"""The NCCL and DCGM validation jobs' pure parts: target choice, requests, environment, pass criterion."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from pydantic import ValidationError

from components.k8s.training_runtimes import SSH_HOME, SSH_SECRET_DIR, SSH_SECRET_VOLUME
from components.k8s.validation_jobs import (
    dcgm_job_spec,
    mpijob_spec,
    nccl_launcher_script,
    nccl_plan,
    nccl_worker_resources,
    training_runtime_spec,
    trainjob_spec,
)
from components.k8s_common import EFA_RESOURCE, NODE_GROUP_LABEL
from components.nccl import nccl_env
from stacks.catalog import CATALOG
from stacks.schema import GpuNodeGroupSpec, ValidationSpec

IMAGE = "public.ecr.aws/hpc-cloud/nccl-tests:cuda12.8.1-efa1.43.2-ofiv1.16.3-ncclv2.27.7-1-testsv2.16.9"


def spec(**overrides: object) -> ValidationSpec:
    return ValidationSpec.model_validate({"enabled": True, "nccl_tests_image": IMAGE, **overrides})


def group(
    name: str = "p5", instance_type: str = "p5.48xlarge", max_size: int = 4, efa: bool = True
) -> GpuNodeGroupSpec:
    return GpuNodeGroupSpec(
        name=name,
        instance_type=instance_type,
        availability_zone="us-east-1a",
        min_size=0,
        desired_size=0,
        max_size=max_size,
        efa_enabled=efa,
    )


@pytest.mark.parametrize("image", ["repo/nccl:latest", "repo/nccl:latest-efa1.43.1", "repo/nccl"])
def test_images_must_be_pinned(image: str) -> None:
    with pytest.raises(ValidationError, match="image"):
        spec(nccl_tests_image=image)


def test_digest_pinned_image_is_accepted() -> None:
    assert spec(nccl_tests_image="repo/nccl@sha256:" + "a" * 64).nccl_tests_image.endswith("a" * 64)


@pytest.mark.parametrize("instance_type", ["p4d.24xlarge", "p5.48xlarge", "p5en.48xlarge", "p6-b200.48xlarge"])
def test_workers_request_every_efa_device_and_gpu_of_a_node(instance_type: str) -> None:
    row = CATALOG[instance_type]
    plan = nccl_plan(spec(), group(instance_type=instance_type))
    resources = nccl_worker_resources(plan)
    assert resources["requests"] == resources["limits"]  # hugepages need requests == limits
    assert resources["limits"][EFA_RESOURCE] == str(row.max_efa_interfaces)
    assert resources["limits"]["nvidia.com/gpu"] == str(row.accelerator_count)
    assert resources["limits"]["hugepages-2Mi"] == "10256Mi"  # 5128 pages of 2 MiB, the group default
    assert resources["limits"]["memory"] == f"{row.memory_gib // 2}Gi"


def test_environment_keeps_nccl_on_efa_and_off_pod_identity_link() -> None:
    env = nccl_env(nccl_plan(spec(), group()))
    assert env["FI_PROVIDER"] == "efa"
    assert env["FI_EFA_USE_DEVICE_RDMA"] == "1"
    assert env["NCCL_DEBUG"] == "INFO"
    excluded = env["NCCL_SOCKET_IFNAME"].removeprefix("^").split(",")
    assert env["NCCL_SOCKET_IFNAME"].startswith("^") and {"lo", "docker", "pod-id-link0"} <= set(excluded)
    # g6e has EFA but no RDMA read: the flag must not be set there.
    assert "FI_EFA_USE_DEVICE_RDMA" not in nccl_env(nccl_plan(spec(), group(instance_type="g6e.48xlarge")))


def test_mpijob_and_runtime_place_one_worker_per_node_on_the_group() -> None:
    plan = nccl_plan(spec(nodes=3), group())
    mpijob = mpijob_spec(plan, group(), IMAGE)
    assert mpijob["slotsPerWorker"] == 8 and mpijob["mpiReplicaSpecs"]["Worker"]["replicas"] == 3
    worker = mpijob["mpiReplicaSpecs"]["Worker"]["template"]["spec"]
    assert worker["nodeSelector"] == {NODE_GROUP_LABEL: "p5"}
    assert worker["tolerations"][0]["key"] == "nvidia.com/gpu"
    runtime = training_runtime_spec(plan, group(), IMAGE)
    assert runtime["mlPolicy"] == {
        "numNodes": 3,
        "mpi": {
            "numProcPerNode": 8,
            "mpiImplementation": "OpenMPI",
            "sshAuthMountPath": SSH_SECRET_DIR,
            "runLauncherAsNode": False,
        },
    }
    jobs = {j["name"]: j for j in runtime["template"]["spec"]["replicatedJobs"]}
    node = jobs["node"]["template"]["spec"]["template"]["spec"]["containers"][0]
    assert node["resources"]["limits"][EFA_RESOURCE] == "32"
    assert "-np 24" in nccl_launcher_script(plan) and "ppr:8:node" in nccl_launcher_script(plan)


def test_dcgm_job_runs_one_pod_per_node_at_the_configured_level() -> None:
    job = dcgm_job_spec(spec(nodes=4, dcgm_diag_level=3), group())
    assert (job["completionMode"], job["completions"], job["parallelism"]) == ("Indexed", 4, 4)
    container = job["template"]["spec"]["containers"][0]
    assert "dcgmi diag -r 3" in container["command"][-1]
    assert container["resources"]["limits"]["nvidia.com/gpu"] == "8"  # all GPUs: one pod per node
    # Pulumi owns the Job: a TTL would let Kubernetes delete it and `pulumi up --refresh` rerun the diagnostic.
    assert "ttlSecondsAfterFinished" not in job


def test_nccl_jobs_carry_no_ttl_either() -> None:
    plan = nccl_plan(spec(), group())
    mpijob = mpijob_spec(plan, group(), "img:1")
    assert "ttlSecondsAfterFinished" not in mpijob["runPolicy"]
    assert "ttlSecondsAfterFinished" not in json.dumps(training_runtime_spec(plan, group(), "img:1"))
    assert "ttlSecondsAfterFinished" not in json.dumps(trainjob_spec(plan, "runtime"))


# ---- the launcher's pass/fail logic, run for real against canned all_reduce_perf output --------------

_HEADER = """# nThread 1 nGpus 1 minBytes 8 maxBytes 17179869184 step: 2(factor) warmup iters: 5 iters: 50
NCCL INFO NET/OFI Selected Provider is efa (found 32 nics)
NCCL INFO Using network AWS Libfabric
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
"""


def _log(busbw_large: float, wrong: int = 0, extra: str = "", in_place: float | None = None) -> str:
    """all_reduce_perf output; the largest message's in-place bus bandwidth is 1 GB/s lower unless given."""
    in_place = busbw_large - 1 if in_place is None else in_place
    small = "           8             2     float     sum      -1    40.10    0.00    0.00      0    39.80    0.00"
    large = f" 17179869184    4294967296     float     sum      -1   70000    245.4  {busbw_large:.2f}  {wrong}   70100"
    rows = [small + "    0.00      0", large + f"   245.0  {in_place:.2f}      0"]
    return _HEADER + "\n".join(rows) + "\n# Avg bus bandwidth    : 180.51\n" + extra


@pytest.fixture
def run_launcher(tmp_path: Path):
    if shutil.which("bash") is None or shutil.which("awk") is None:
        pytest.skip("bash and awk are needed to run the launcher script")

    def run(log: str) -> subprocess.CompletedProcess[str]:
        plan = nccl_plan(spec(), group())  # p5: floor 320.0 GB/s
        fake_mpirun = tmp_path / "mpirun"
        fake_mpirun.write_text("#!/bin/bash\ncat " + str(tmp_path / "out.log") + "\n")
        fake_mpirun.chmod(0o755)
        (tmp_path / "out.log").write_text(log)
        # The script logs to /tmp/nccl.log (its own /tmp in a pod); tests running in parallel each get their own.
        script = (
            nccl_launcher_script(plan)
            .replace("/opt/amazon/openmpi/bin/mpirun", str(fake_mpirun))
            .replace("/tmp/nccl.log", str(tmp_path / "nccl.log"))
        )
        return subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=30)

    return run


def test_launcher_passes_at_or_above_the_floor(run_launcher) -> None:
    result = run_launcher(_log(350.0))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "trainstack-nccl: PASS busbw 349.00 GB/s >= floor 320.0 GB/s" in result.stdout  # the smaller one


def test_launcher_fails_below_the_floor(run_launcher) -> None:
    result = run_launcher(_log(300.0))
    assert result.returncode != 0 and "FAIL busbw 299.00 GB/s < floor 320.0" in result.stdout


@pytest.mark.parametrize(("out_of_place", "in_place"), [(350.0, 300.0), (300.0, 350.0)])
def test_launcher_fails_when_either_bandwidth_is_below_the_floor(run_launcher, out_of_place, in_place) -> None:
    # Regression: the parser took the larger of the two, so one good column hid a slow one.
    result = run_launcher(_log(out_of_place, in_place=in_place))
    assert result.returncode != 0 and "FAIL busbw 300.00 GB/s < floor 320.0" in result.stdout


def test_launcher_fails_on_wrong_results(run_launcher) -> None:
    result = run_launcher(_log(350.0, wrong=3))
    assert result.returncode != 0 and "wrong results" in result.stdout


def test_launcher_fails_when_nccl_fell_back_to_sockets(run_launcher) -> None:
    result = run_launcher(_log(350.0).replace("Using network AWS Libfabric", "Using network Socket"))
    assert result.returncode != 0 and "fell back to TCP sockets" in result.stdout


# ---- how the Trainer NCCL job starts MPI: keys with mode 0600, launcher after ready workers ------------


def _runtime_pods(runtime: dict) -> dict[str, dict]:
    return {j["name"]: j for j in runtime["template"]["spec"]["replicatedJobs"]}


def test_trainer_key_secret_is_mounted_away_from_ssh_home_and_copied_0600(tmp_path: Path) -> None:
    # Regression: Trainer 2.1.0 mounts its key Secret with mode 0644 at sshAuthMountPath; at /root/.ssh OpenSSH
    # refused the key ("UNPROTECTED PRIVATE KEY FILE") and mpirun failed (kubeflow/trainer #2716, #3262).
    runtime = training_runtime_spec(nccl_plan(spec(), group()), group(), IMAGE)
    assert runtime["mlPolicy"]["mpi"]["sshAuthMountPath"] == SSH_SECRET_DIR != SSH_HOME
    for job in _runtime_pods(runtime).values():
        pod = job["template"]["spec"]["template"]["spec"]
        (init,) = pod["initContainers"]
        mounts = {m["name"]: m["mountPath"] for m in init["volumeMounts"]}
        assert mounts == {SSH_SECRET_VOLUME: SSH_SECRET_DIR, "ssh-home": SSH_HOME}
        main_mounts = {m["name"]: m["mountPath"] for m in pod["containers"][0]["volumeMounts"]}
        assert main_mounts["ssh-home"] == SSH_HOME
        # Run the copy for real on files laid out as Trainer's Secret volume lays them out (mode 0644).
        secret, home = tmp_path / "secret", tmp_path / "home"
        secret.mkdir(exist_ok=True)
        home.mkdir(exist_ok=True)
        for name in ("id_rsa", "id_rsa.pub", "authorized_keys"):
            (secret / name).write_text(name)
            (secret / name).chmod(0o644)
        script = init["command"][-1].replace(SSH_SECRET_DIR, str(secret)).replace(SSH_HOME, str(home))
        subprocess.run(["/bin/sh", "-c", script], check=True)
        assert (home / "id_rsa").stat().st_mode & 0o777 == 0o600
        assert (home / "authorized_keys").stat().st_mode & 0o777 == 0o600
        assert home.stat().st_mode & 0o777 == 0o700


def test_launcher_starts_after_every_worker_is_ready() -> None:
    # Regression: nothing ordered the launcher after the workers, and backoffLimit 0 made one early ssh fatal.
    runtime = training_runtime_spec(nccl_plan(spec(), group()), group(), IMAGE)
    jobs = runtime["template"]["spec"]["replicatedJobs"]
    assert [j["name"] for j in jobs] == ["node", "launcher"]  # JobSet: the first job may not depend on another
    assert jobs[1]["dependsOn"] == [{"name": "node", "status": "Ready"}]
    worker = jobs[0]["template"]["spec"]["template"]["spec"]["containers"][0]
    assert worker["readinessProbe"]["tcpSocket"]["port"] == 22 and "-p 22" in worker["command"][-1]
    mpijob = mpijob_spec(nccl_plan(spec(), group()), group(), IMAGE)
    assert mpijob["launcherCreationPolicy"] == "WaitForWorkersReady"
    mpi_worker = mpijob["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    assert mpi_worker["readinessProbe"]["tcpSocket"]["port"] == 22


def test_mpirun_uses_the_copied_key_and_retries_ssh() -> None:
    script = nccl_launcher_script(nccl_plan(spec(), group()))
    assert f"plm_rsh_args '-i {SSH_HOME}/id_rsa" in script and "ConnectionAttempts=10" in script

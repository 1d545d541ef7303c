"""The Slurm NCCL validation job: which groups get one, what it asks Slurm for, and its verdict, run for real with a
stub `srun` that prints canned all_reduce_perf output."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from components.sagemaker.slurm_validation import (
    enroot_image,
    nccl_groups,
    nccl_sbatch,
    sbatch_name,
    validation_scripts,
)
from stacks.catalog import CATALOG
from stacks.schema import HyperPodSpec
from tests.unit.test_validation_jobs import _log

SHELLCHECK = Path(__file__).resolve().parents[2] / ".venv" / "bin" / "shellcheck"


def spec(*groups: dict[str, object], **slurm: object) -> HyperPodSpec:
    controller = {"name": "ctl", "instance_type": "ml.m5.2xlarge", "instance_count": 1, "role": "controller"}
    return HyperPodSpec.model_validate(
        {"enabled": True, "orchestrator": "slurm", "instance_groups": [controller, *groups], "slurm": slurm}
    )


P5 = {"name": "p5", "instance_type": "ml.p5.48xlarge", "instance_count": 4}


def test_every_nvidia_efa_group_of_two_or_more_nodes_gets_a_job() -> None:
    hyperpod = spec(
        P5,
        {"name": "single", "instance_type": "ml.p5.48xlarge", "instance_count": 1},  # nothing to all-reduce across
        {"name": "g5", "instance_type": "ml.g5.2xlarge", "instance_count": 2},  # no EFA on g5.2xlarge
        {"name": "trn", "instance_type": "ml.trn1.32xlarge", "instance_count": 2},  # Neuron, not NCCL
    )
    assert [g.name for g in nccl_groups(hyperpod)] == ["p5"]
    assert set(validation_scripts(hyperpod)) == {"nccl-all-reduce-p5.sbatch"}
    assert validation_scripts(spec(P5, nccl_validation=False)) == {}


def test_the_job_takes_whole_nodes_one_task_per_gpu_across_the_group() -> None:
    hyperpod = spec(P5)
    [group] = nccl_groups(hyperpod)
    job = nccl_sbatch(group, hyperpod.slurm)
    gpus = CATALOG["p5.48xlarge"].accelerator_count
    for line in ("--partition=p5", "--nodes=4", f"--ntasks-per-node={gpus}", "--exclusive"):
        assert f"#SBATCH {line}\n" in job
    assert "srun --mpi=pmix" in job and "all_reduce_perf -b 8 -e 16G" in job
    assert "export FI_PROVIDER=efa" in job and "export FI_EFA_USE_DEVICE_RDMA=1" in job
    # The reference Slurm job's NCCL settings: buffers, chunks and the OFI tuner for the node's architecture.
    assert "export NCCL_BUFFSIZE=8388608\n" in job and "export NCCL_P2P_NET_CHUNKSIZE=524288\n" in job
    tuner = "/opt/amazon/ofi-nccl/lib/${arch}-linux-gnu/libnccl-ofi-tuner.so"
    assert f'arch=$(uname -m)\nexport NCCL_TUNER_PLUGIN="{tuner}"\n' in job
    assert sbatch_name(group) == "nccl-all-reduce-p5.sbatch"


@pytest.mark.parametrize(
    ("image", "enroot"),
    [
        ("public.ecr.aws/hpc-cloud/nccl-tests:v1", "public.ecr.aws#hpc-cloud/nccl-tests:v1"),
        ("nvcr.io/nvidia/pytorch:25.01-py3", "nvcr.io#nvidia/pytorch:25.01-py3"),
        ("localhost:5000/nccl:v1", "localhost:5000#nccl:v1"),
        ("library/ubuntu:24.04", "library/ubuntu:24.04"),  # Docker Hub: no registry part
    ],
)
def test_images_take_the_pyxis_registry_form(image: str, enroot: str) -> None:
    assert enroot_image(image) == enroot


def test_the_generated_job_passes_shellcheck(tmp_path: Path) -> None:
    if not SHELLCHECK.exists():
        pytest.skip("shellcheck comes with the dev dependencies (make lint)")
    path = tmp_path / "job.sbatch"
    path.write_text(validation_scripts(spec(P5))["nccl-all-reduce-p5.sbatch"])
    result = subprocess.run([str(SHELLCHECK), "--shell=bash", str(path)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout


@pytest.fixture
def run_job(tmp_path: Path):
    def run(log: str, srun_status: int = 0) -> subprocess.CompletedProcess[str]:
        (tmp_path / "canned.log").write_text(log)
        srun = tmp_path / "bin" / "srun"
        srun.parent.mkdir(exist_ok=True)
        srun.write_text(f"#!/bin/bash\ncat {tmp_path / 'canned.log'}\nexit {srun_status}\n")
        srun.chmod(0o755)
        job = tmp_path / "job.sbatch"
        job.write_text(validation_scripts(spec(P5))["nccl-all-reduce-p5.sbatch"])
        env = {"PATH": f"{srun.parent}:/usr/bin:/bin", "SLURM_JOB_ID": "42"}
        return subprocess.run(["bash", str(job)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=30)

    return run


def test_the_job_passes_at_the_floor_and_keeps_its_log(run_job, tmp_path: Path) -> None:
    result = run_job(_log(350.0))
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.splitlines()[-1].startswith(
        "trainstack-nccl: PASS busbw 349.00 GB/s >= floor 320.0"
    )  # the in-place column
    assert (tmp_path / "trainstack-nccl-p5-42.log").read_text() == _log(350.0)


@pytest.mark.parametrize(
    ("log", "status", "verdict"),
    [
        (_log(300.0), 0, "trainstack-nccl: FAIL busbw 299.00 GB/s < floor 320.0 GB/s"),
        (_log(350.0, extra="NCCL INFO NET/Socket : Using [0]ens32\n"), 0, "FAIL NCCL fell back to TCP sockets"),
        (_log(350.0), 1, "trainstack-nccl: FAIL srun exited 1"),
    ],
)
def test_the_job_fails_below_the_floor_on_sockets_and_when_srun_fails(
    run_job, log: str, status: int, verdict: str
) -> None:
    result = run_job(log, status)
    assert result.returncode != 0
    assert verdict in result.stdout.splitlines()[-1]

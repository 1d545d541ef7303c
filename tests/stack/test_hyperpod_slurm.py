"""The committed Slurm example (stacks/examples/hyperpod-slurm.yaml): the whole program, the plan command with
its contract tier and policy review, and the diff a lifecycle change shows.

The example lives outside the Pulumi.*.yaml glob on purpose (it is not an environment), so it is named here.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from components.sagemaker.slurm_validation import VALIDATION_DIR
from stacks.load import load_file
from stacks.schema import StackConfig
from tests.conftest import ROOT, program_recording
from trainstack import cli
from trainstack.cli import EXIT_OK, main
from trainstack.engine import Recording
from trainstack.model.diff import diff_recordings

EXAMPLE = ROOT / "stacks" / "examples" / "hyperpod-slurm.yaml"
CLUSTER = "aws-native:sagemaker:Cluster"
OBJECT = "aws:s3/bucketObjectv2:BucketObjectv2"
STACK = "staging"  # the example's environment, which `plan --config` uses as the stack name


def example() -> StackConfig:
    return load_file(EXAMPLE)


def run(stack: StackConfig | None = None) -> Recording:
    return program_recording(stack or example(), STACK)


def lifecycle_object(recording: Recording, suffix: str) -> dict[str, Any]:
    [found] = [o.inputs for o in recording.by_type(OBJECT) if o.inputs["key"].endswith(suffix)]
    return found


def test_the_example_is_not_picked_up_as_a_stack() -> None:
    assert not EXAMPLE.name.startswith("Pulumi.") and EXAMPLE.parent != ROOT / "stacks"


@pytest.mark.usefixtures("shared_recordings")
@pytest.mark.e2e
def test_the_example_plans_clean_through_contracts_and_policies(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "--config", str(EXAMPLE), "--format", "json"]) == EXIT_OK
    report = json.loads(capsys.readouterr().out)["trainstack"]
    assert report["contracts"] == []
    assert not [v for v in report["policy"]["violations"] if v["level"] == "mandatory"]
    # How each group comes up: the controller runs accounting, every node mounts /fsx, prepared from the admin host.
    bringup = {g["group"]: g for g in report["hyperpodBringUp"]}
    assert {name: g["role"] for name, g in bringup.items()} == {
        "controller": "controller",
        "login": "login",
        "p5": "compute",
    }
    assert any(step.startswith("accounting: ") for step in bringup["controller"]["steps"])
    assert not any(step.startswith("accounting") for step in bringup["p5"]["steps"])
    assert any("10.20.0.10@tcp" in need for need in bringup["p5"]["needs"])


@pytest.mark.e2e
def test_slurm_cluster_on_the_shared_network_with_the_data_key() -> None:
    recording = run()
    cluster = recording.one(CLUSTER)
    assert "orchestrator" not in cluster.inputs  # Slurm: the API's default
    assert cluster.inputs["vpcConfig"]["securityGroupIds"] == [
        recording.outputs["efa_security_group_id"],
        recording.outputs["workload_security_group_id"],
    ]
    [data_key] = [k.outputs["arn"] for k in recording.by_type("aws:kms/key:Key") if k.name.endswith("data-key")]
    for group in cluster.inputs["instanceGroups"]:
        assert group["instanceStorageConfigs"][0]["ebsVolumeConfig"]["volumeKmsKeyId"] == data_key
    policy = json.loads(
        next(r for r in recording.by_type("aws:iam/rolePolicy:RolePolicy") if "hyperpod" in r.name).inputs["policy"]
    )
    actions = {a for s in policy["Statement"] for a in s["Action"]}
    assert "ec2:DetachNetworkInterface" in actions and "kms:CreateGrant" in actions


@pytest.mark.e2e
def test_the_lifecycle_bundle_sets_up_containers_accounting_homes_and_the_nccl_job() -> None:
    recording = run()
    params = json.loads(lifecycle_object(recording, "provisioning_parameters.json")["content"])
    settings = params["trainstack"]
    assert settings["containers"] == {"enroot_version": "3.4.1", "pyxis_version": "0.19.0"}
    assert settings["accounting"] and settings["homes_on_lustre"] and settings["hold_lustre_client"]
    assert [u["name"] for u in settings["users"]] == ["alice", "bob"]
    assert params["fsx_dns_name"] == recording.outputs["fsx_dns_name"]
    job = lifecycle_object(recording, "nccl-all-reduce-p5.sbatch")["content"]
    # No GRES on HyperPod's Slurm: whole nodes, one task per GPU, MPI ranks through PMIx, in the container.
    assert "#SBATCH --exclusive" in job and "#SBATCH --ntasks-per-node=8" in job and "#SBATCH --nodes=2" in job
    assert "srun --mpi=pmix" in job and "--container-image=public.ecr.aws#hpc-cloud/nccl-tests:" in job
    assert "NET/Socket" in job and "floor 320.0 GB/s" in job
    assert VALIDATION_DIR in (ROOT / "components/sagemaker/lifecycle/slurm/install_validation.sh").read_text()


@pytest.mark.e2e
def test_a_lifecycle_change_shows_in_the_diff_with_the_software_update_to_run() -> None:
    raw = example().model_dump(mode="json")
    raw["sagemaker"]["hyperpod"]["slurm"]["accounting"] = False
    changed = run(StackConfig.model_validate(raw))
    _, _, changes = diff_recordings(run(), changed)
    [cluster] = [c for c in changes if c.type == CLUSTER]
    assert any(c.path.endswith("lifeCycleConfig.sourceS3Uri") for c in cluster.changes)
    [note] = cluster.notes
    assert "aws sagemaker update-cluster-software --cluster-name trainstack-hpslurm-hyperpod" in note
    assert all(not c.notes for c in changes if c.type != CLUSTER)


def test_slurm_settings_on_an_eks_cluster_are_a_config_error(tmp_path: Path) -> None:
    text = (ROOT / "stacks" / "Pulumi.staging.yaml").read_text()
    bad = tmp_path / "Pulumi.bad.yaml"
    bad.write_text(
        text.replace("        orchestrator: eks\n", "        orchestrator: eks\n        slurm: {accounting: false}\n")
    )
    code = main(["plan", "--config", str(bad)])
    assert code == cli.EXIT_BAD_INPUT

"""SageMaker in the whole program: staging's HyperPod on the shared network, dev and prod without it, a Slurm
variation of staging, and the config errors for combinations HyperPod cannot run."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from pydantic import ValidationError

from stacks.load import FULL_KEY, ConfigError
from stacks.schema.sagemaker import HyperPodGroupRole, HyperPodSpec, SlurmSpec, SlurmUserSpec
from tests.conftest import edited_config, program_recording, recording, stack_config
from trainstack.engine import Recording

CLUSTER = "aws-native:sagemaker:Cluster"


def test_staging_plans_hyperpod_on_eks_with_the_shared_network() -> None:
    run = recording("staging")
    config = stack_config("staging")
    cluster = run.one(CLUSTER)
    eks = run.one("aws:eks/cluster:Cluster")
    assert cluster.inputs["orchestrator"] == {"eks": {"clusterArn": eks.outputs["arn"]}}
    assert cluster.inputs["nodeRecovery"] == "Automatic"
    gpu_subnet = run.outputs["private_subnet_ids"][config.gpu_availability_zone]
    assert cluster.inputs["vpcConfig"] == {
        "subnets": [gpu_subnet],
        "securityGroupIds": [eks.outputs["vpcConfig"]["clusterSecurityGroupId"], run.outputs["efa_security_group_id"]],
    }
    for group in cluster.inputs["instanceGroups"]:
        assert group["onStartDeepHealthChecks"] == ["InstanceStress", "InstanceConnectivity"]
        assert group["threadsPerCore"] == 1
    assert run.outputs["hyperpod_orchestrator"] == "eks"
    assert run.outputs["hyperpod_cluster_arn"] == cluster.outputs["clusterArn"]


def test_staging_eks_uses_access_entries() -> None:
    # HyperPod creates its own access entries, which needs authentication mode API or API_AND_CONFIG_MAP.
    eks = recording("staging").one("aws:eks/cluster:Cluster")
    assert eks.inputs["accessConfig"]["authenticationMode"] in ("API", "API_AND_CONFIG_MAP")


def test_staging_exports_training_job_role_and_vpc_settings() -> None:
    run = recording("staging")
    config = stack_config("staging")
    # One role per team, each writing only its own checkpoint prefix.
    roles = run.outputs["sagemaker_training_role_arns"]
    assert set(roles) == {team.name for team in config.kubernetes.teams}
    assert all(arn.startswith("arn:aws:iam::") for arn in roles.values())
    assert run.outputs["sagemaker_training_subnet_ids"] == [
        run.outputs["private_subnet_ids"][config.gpu_availability_zone]
    ]
    # The EFA group for peers, the workload group for egress (S3, endpoints, NAT, FSx).
    assert run.outputs["sagemaker_training_security_group_ids"] == [
        run.outputs["efa_security_group_id"],
        run.outputs["workload_security_group_id"],
    ]


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_stacks_without_hyperpod_register_no_sagemaker(stack: str) -> None:
    run = recording(stack)
    assert not run.by_type(CLUSTER)
    assert not run.by_type("pulumi:providers:aws-native")
    assert not [name for name in run.outputs if name.startswith("hyperpod_")]


def slurm(cluster: dict[str, Any]) -> None:
    cluster["sagemaker"]["hyperpod"] = {
        "enabled": True,
        "orchestrator": "slurm",
        "instance_groups": [
            {"name": "controller", "instance_type": "ml.m5.2xlarge", "instance_count": 1, "role": "controller"},
            {"name": "login", "instance_type": "ml.m5.xlarge", "instance_count": 1, "role": "login"},
            {"name": "p5", "instance_type": "ml.p5.48xlarge", "instance_count": 2},
        ],
    }
    cluster["storage"]["fsx"]["no_squash_nids"] = ["10.0.1.6@tcp"]  # the host that prepares /fsx under root squash


@pytest.mark.e2e
def test_slurm_variation_mounts_the_stacks_fsx() -> None:
    run: Recording = program_recording(edited_config("staging", slurm), "staging")
    cluster = run.one(CLUSTER)
    assert "orchestrator" not in cluster.inputs
    assert cluster.inputs["vpcConfig"]["securityGroupIds"] == [
        run.outputs["efa_security_group_id"],
        run.outputs["workload_security_group_id"],
    ]
    assert {g["instanceGroupName"] for g in cluster.inputs["instanceGroups"]} == {"controller", "login", "p5"}
    [params] = [
        o
        for o in run.by_type("aws:s3/bucketObjectv2:BucketObjectv2")
        if o.inputs["key"].endswith("provisioning_parameters.json")
    ]
    content = json.loads(params.inputs["content"])
    assert content["fsx_dns_name"] == run.outputs["fsx_dns_name"]
    assert content["fsx_mountname"] == run.outputs["fsx_mount_name"]
    assert content["fsx_root_squash"] == "65534:65534"  # the lifecycle's /fsx step runs as this identity
    assert run.outputs["hyperpod_orchestrator"] == "slurm"


def problems(edit: Any) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        edited_config("staging", edit)
    return [f"{p.key}: {p.message}" for p in caught.value.problems]


def groups_edit(*groups: dict[str, Any], **hyperpod: Any) -> Any:
    def edit(cluster: dict[str, Any]) -> None:
        cluster["sagemaker"]["hyperpod"] = {"enabled": True, "instance_groups": list(groups), **hyperpod}

    return edit


P5 = {"name": "p5", "instance_type": "ml.p5.48xlarge", "instance_count": 2}
CONTROLLER = {"name": "ctl", "instance_type": "ml.m5.2xlarge", "instance_count": 1, "role": "controller"}
PLAN = "arn:aws:sagemaker:us-east-1:123456789012:training-plan/p5-plan"
HYPERPOD = f"{FULL_KEY}.sagemaker.hyperpod"
LOGIN = {"name": "login", "instance_type": "ml.m5.xlarge", "instance_count": 1, "role": "login"}
ALICE = {"name": "alice", "uid": 2001}


@pytest.mark.parametrize(
    ("edit", "key", "fragment"),
    [
        (groups_edit(P5, CONTROLLER, orchestrator="eks"), HYPERPOD, "EKS HyperPod cluster takes compute"),
        (groups_edit(P5, orchestrator="slurm"), HYPERPOD, "exactly one controller"),
        (groups_edit(P5, dict(P5), orchestrator="eks"), HYPERPOD, "names must be unique"),
        (groups_edit(CONTROLLER, orchestrator="slurm"), HYPERPOD, "at least one compute"),
        (groups_edit({**P5, "capacity": "training_plan"}), HYPERPOD, "training_plan_arn is unset"),
        (groups_edit(P5, training_plan_arn=PLAN), HYPERPOD, "every instance group is on_demand"),
        (
            groups_edit(P5, {**CONTROLLER, "capacity": "training_plan"}, orchestrator="slurm", training_plan_arn=PLAN),
            f"{HYPERPOD}.instance_groups.1",
            "run controller and login groups on_demand",
        ),
        (
            groups_edit(P5, {**CONTROLLER, "instance_count": 2}, orchestrator="slurm"),
            f"{HYPERPOD}.instance_groups.1",
            "one slurmctld",
        ),
        (
            groups_edit({**P5, "instance_type": "ml.p3.16xlarge"}),
            f"{HYPERPOD}.instance_groups.0",
            "not in the catalog",
        ),
        (
            groups_edit(P5, CONTROLLER, orchestrator="slurm", slurm={"containers": False}),
            f"{HYPERPOD}.slurm",
            "set containers true or nccl_validation false",
        ),
        (
            groups_edit(P5, CONTROLLER, orchestrator="slurm", slurm={"users": [ALICE, {**ALICE, "name": "bob"}]}),
            f"{HYPERPOD}.slurm",
            "uids must be unique",
        ),
        (
            groups_edit(P5, CONTROLLER, orchestrator="slurm", slurm={"users": [ALICE, {**ALICE, "uid": 2002}]}),
            f"{HYPERPOD}.slurm",
            "users names must be unique, got ['alice', 'alice']",
        ),
        (
            groups_edit(P5, CONTROLLER, {**CONTROLLER, "name": "ctl2"}, orchestrator="slurm"),
            HYPERPOD,
            "exactly one controller instance group, got 2",
        ),
        (
            groups_edit(P5, CONTROLLER, {**LOGIN, "name": "a"}, {**LOGIN, "name": "b"}, orchestrator="slurm"),
            HYPERPOD,
            "at most one login instance group",
        ),
        (
            groups_edit(P5, {**CONTROLLER, "role": "login"}, orchestrator="eks"),
            HYPERPOD,
            "EKS HyperPod cluster takes compute",
        ),
        (
            groups_edit(P5, CONTROLLER, orchestrator="slurm", slurm={"users": [{**ALICE, "name": "ubuntu"}]}),
            f"{HYPERPOD}.slurm",
            "must not list ubuntu",
        ),
        (
            groups_edit(P5, CONTROLLER, orchestrator="slurm", slurm={"users": [{**ALICE, "uid": 1000}]}),
            f"{HYPERPOD}.slurm.users.0.uid",
            "greater than or equal to 2000",
        ),
        (
            groups_edit(
                P5, CONTROLLER, orchestrator="slurm", slurm={"users": [{**ALICE, "ssh_public_keys": ["AAAA no type"]}]}
            ),
            f"{HYPERPOD}.slurm.users.0",
            "not OpenSSH public keys",
        ),
        (groups_edit(P5, slurm={"accounting": False}), HYPERPOD, "slurm settings apply to orchestrator slurm only"),
        (
            groups_edit(P5, training_plan_arn="arn:aws:sagemaker:us-east-1:123456789012:cluster/abc"),
            f"{HYPERPOD}.training_plan_arn",
            "a SageMaker training plan ARN such as",
        ),
    ],
)
def test_impossible_hyperpod_combinations_are_config_errors(edit: Any, key: str, fragment: str) -> None:
    found = problems(edit)
    assert any(p.startswith(f"{key}:") and fragment in p for p in found), found


def slurm_edit(*, slurm: dict[str, Any] | None = None, **fsx: Any) -> Any:
    def edit(cluster: dict[str, Any]) -> None:
        groups_edit(P5, CONTROLLER, orchestrator="slurm", slurm=slurm or {})(cluster)
        cluster["storage"]["fsx"].update(fsx)

    return edit


def test_what_slurm_keeps_on_lustre_needs_fsx() -> None:
    found = problems(slurm_edit(slurm={"users": [ALICE]}, enabled=False))
    for setting in ("homes_on_lustre true", "users ['alice']", "accounting true"):
        assert any(f"sagemaker.hyperpod.slurm.{setting} needs storage.fsx.enabled" in p for p in found), found
    alone = problems(slurm_edit(slurm={"homes_on_lustre": False}, enabled=False))
    assert not any("slurm.homes_on_lustre" in p or "slurm.users" in p for p in alone), alone
    assert any("slurm.accounting true needs storage.fsx.enabled" in p for p in alone), alone


def test_root_squash_without_an_exempt_host_cannot_prepare_fsx_for_slurm() -> None:
    found = problems(slurm_edit(root_squash="65534:65534", no_squash_nids=[]))
    assert any(
        "storage.fsx.root_squash 65534:65534 with storage.fsx.no_squash_nids []" in p and "mode 1777" in p
        for p in found
    ), found
    edited_config("staging", slurm_edit(root_squash="65534:65534", no_squash_nids=["10.0.1.6@tcp"]))  # valid


def test_a_slurm_user_may_not_be_root_squashs_identity() -> None:
    found = problems(slurm_edit(slurm={"users": [ALICE]}, root_squash="2001:2001", no_squash_nids=["10.0.1.6@tcp"]))
    assert any("sagemaker.hyperpod.slurm.users.0.uid 2001 (alice) is storage.fsx.root_squash's UID" in p for p in found)
    edited_config(
        "staging", slurm_edit(slurm={"users": [ALICE]}, root_squash="2002:2002", no_squash_nids=["10.0.1.6@tcp"])
    )


def hyperpod(*groups: dict[str, Any], **settings: Any) -> HyperPodSpec:
    """An enabled HyperPod section, validated on its own (as the stack file's `sagemaker.hyperpod` reads)."""
    return HyperPodSpec.model_validate({"enabled": True, "instance_groups": list(groups), **settings})


def test_a_slurm_cluster_takes_one_controller_one_login_and_its_compute() -> None:
    spec = hyperpod(P5, CONTROLLER, LOGIN, orchestrator="slurm")
    assert [g.name for g in spec.groups(HyperPodGroupRole.COMPUTE)] == ["p5"]
    assert [g.name for g in spec.groups(HyperPodGroupRole.CONTROLLER)] == ["ctl"]
    assert [g.name for g in spec.groups(HyperPodGroupRole.LOGIN)] == ["login"]
    assert hyperpod(P5, CONTROLLER, orchestrator="slurm").groups(HyperPodGroupRole.LOGIN) == []


def test_accelerators_count_the_catalog_s_accelerators_of_every_compute_group() -> None:
    """ml.p5.48xlarge is p5.48xlarge (8 H100s); the CPU controller and login types are outside the catalog: 0."""
    spec = hyperpod(P5, {**P5, "name": "more", "instance_count": 3}, CONTROLLER, LOGIN, orchestrator="slurm")
    assert [g.ec2_instance_type for g in spec.instance_groups] == ["p5.48xlarge"] * 2 + ["m5.2xlarge", "m5.xlarge"]
    assert [g.accelerators for g in spec.instance_groups] == [16, 24, 0, 0]
    assert spec.accelerators == 40


def test_a_disabled_hyperpod_judges_no_group_roles() -> None:
    """Off, its groups are kept for later but not judged: no compute group, a controller on EKS are both fine."""
    spec = HyperPodSpec.model_validate({"enabled": False, "instance_groups": [CONTROLLER]})
    assert not spec.enabled and spec.accelerators == 0
    assert not HyperPodSpec.model_validate({}).enabled


def test_a_training_plan_reserves_compute_groups_beside_on_demand_controllers() -> None:
    spec = hyperpod({**P5, "capacity": "training_plan"}, CONTROLLER, orchestrator="slurm", training_plan_arn=PLAN)
    assert spec.training_plan_arn == PLAN


def test_nccl_validation_off_lets_containers_be_off() -> None:
    spec = hyperpod(P5, CONTROLLER, orchestrator="slurm", slurm={"containers": False, "nccl_validation": False})
    assert not spec.slurm.containers and not spec.slurm.nccl_validation


def test_eks_takes_the_slurm_defaults_written_out() -> None:
    """A dumped config carries slurm's defaults; on EKS they are not settings to refuse."""
    spec = hyperpod(P5, slurm=SlurmSpec().model_dump(mode="json"))
    assert spec.orchestrator.value == "eks"


def test_openssh_public_keys_are_taken_and_each_bad_one_named_by_its_place() -> None:
    ed25519 = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGq8 alice@laptop"
    rsa = "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQ=="
    user = SlurmUserSpec.model_validate({**ALICE, "ssh_public_keys": [ed25519, rsa]})
    assert user.ssh_public_keys == [ed25519, rsa]
    for keys, bad in (([ed25519, "ssh-dss AAAAB3NzaC1kc3M="], [1]), (["alice", rsa, "ssh-ed25519"], [0, 2])):
        with pytest.raises(ValidationError, match=re.escape(f"ssh_public_keys {bad} of user alice are not OpenSSH")):
            SlurmUserSpec.model_validate({**ALICE, "ssh_public_keys": keys})

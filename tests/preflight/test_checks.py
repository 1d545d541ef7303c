"""Each check, one passing and one failing account (moto where it implements the calls, the Stubber elsewhere)."""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

import pytest

from stacks.schema import StackConfig
from tests.conftest import edited_config, stack_config, write_stack
from tests.preflight import helpers as h
from trainstack.preflight import runner
from trainstack.preflight.model import Preflight, Status

pytestmark = pytest.mark.e2e  # every test asks moto's server (conftest.py: MOTO_COST)


def preflight(
    moto: h.Moto,
    stack: StackConfig,
    stack_name: str,
    caller: Any,
    replace: dict[tuple[str, str], Any] | None = None,
    stack_file: Path | None = None,
) -> Preflight:
    overrides, _ = h.answer_everything(stack)
    overrides.update(replace or {})
    return runner.run(stack, stack_name, h.account(moto, caller, stack.region, overrides), stack_file, now=h.NOW)


def check(result: Preflight, id_: str) -> Any:
    return next(c for c in result.checks if c.id == id_)


# ------------------------------------------------------------------------------------------------ identity


def test_the_wrong_account_fails_and_skips_everything_else(moto: h.Moto) -> None:
    stack = stack_config("dev")
    caller = h.assume(moto, "arn:aws:iam::777788889999:role/ml-platform-admin", stack.region)
    result = preflight(moto, stack, "dev", caller)
    assert check(result, "identity.account").status is Status.FAILED
    assert "777788889999" in check(result, "identity.account").answer
    assert not any(c.family == "compute" for c in result.checks)  # nothing asked in the wrong account
    assert result.notes and "another account" in result.notes[0]


def test_a_caller_who_is_not_an_admin_role_fails_with_why(moto: h.Moto) -> None:
    stack = stack_config("dev")
    caller = h.seed(moto, stack, "dev")
    other = h.assume(moto, "arn:aws:iam::111122223333:role/ci-readonly", stack.region)
    assert check(preflight(moto, stack, "dev", caller), "identity.caller-is-admin").status is Status.PASSED
    failed = check(preflight(moto, stack, "dev", other), "identity.caller-is-admin")
    assert failed.status is Status.FAILED and "Unauthorized" in failed.answer and "ci-readonly" in failed.answer


def test_a_principal_under_another_path_fails(moto: h.Moto) -> None:
    stack = edited_config(
        "dev", lambda c: c["eks"].update(admin_role_arns=["arn:aws:iam::111122223333:role/ops/admin"])
    )
    caller = h.assume(moto, "arn:aws:iam::111122223333:role/admin", stack.region)
    iam = caller.client("iam", endpoint_url=moto.url)
    iam.create_role(RoleName="admin", Path="/platform/", AssumeRolePolicyDocument="{}")
    found = check(preflight(moto, stack, "dev", caller), "identity.principal.eks.admin_role_arns[0]")
    assert found.status is Status.FAILED
    assert "arn:aws:iam::111122223333:role/platform/admin" in found.answer


# ------------------------------------------------------------------------------------------------- secrets


def test_the_declared_secrets_provider_is_asked_in_its_region(moto: h.Moto, tmp_path: Path) -> None:
    path = write_stack(
        tmp_path,
        "dev",
        edit_document=lambda d: d.update(secretsprovider="awskms://alias/pulumi-secrets?region=us-west-2"),
    )
    stack = stack_config("dev")
    caller = h.seed(moto, stack, "dev")  # creates alias/trainstack-dev in us-east-1 only
    missing = check(preflight(moto, stack, "dev", caller, stack_file=path), "secrets.provider-key")
    assert missing.status is Status.FAILED and "alias/pulumi-secrets" in missing.answer and "us-west-2" in missing.asked
    kms = caller.client("kms", endpoint_url=moto.url, region_name="us-west-2")
    key = kms.create_key()["KeyMetadata"]["KeyId"]
    kms.create_alias(AliasName="alias/pulumi-secrets", TargetKeyId=key)
    assert check(preflight(moto, stack, "dev", caller, stack_file=path), "secrets.provider-key").status is Status.PASSED
    kms.disable_key(KeyId=key)
    disabled = check(preflight(moto, stack, "dev", caller, stack_file=path), "secrets.provider-key")
    assert disabled.status is Status.FAILED and "Disabled" in disabled.answer


def test_a_secrets_provider_that_is_not_kms_is_not_asked(moto: h.Moto, tmp_path: Path) -> None:
    path = write_stack(tmp_path, "dev", edit_document=lambda d: d.update(secretsprovider="passphrase"))
    stack = stack_config("dev")
    found = check(preflight(moto, stack, "dev", h.seed(moto, stack, "dev"), stack_file=path), "secrets.provider-key")
    assert found.status is Status.SKIPPED


# ------------------------------------------------------------------------------------------------- network


def _existing_vpc(moto: h.Moto, caller: Any, *, prefix: int = 18) -> dict[str, Any]:
    ec2 = caller.client("ec2", endpoint_url=moto.url)
    vpc = ec2.create_vpc(CidrBlock="10.40.0.0/16")["Vpc"]["VpcId"]
    subnets = {}
    for i, az in enumerate(("us-east-1a", "us-east-1b")):
        subnet = ec2.create_subnet(VpcId=vpc, CidrBlock=f"10.40.{i * 64}.0/{prefix}", AvailabilityZone=az)["Subnet"]
        subnets[az] = subnet["SubnetId"]
    return {"vpc_id": vpc, "private_subnet_ids": subnets}


def _on_existing(existing: dict[str, Any], prefix: int = 18) -> StackConfig:
    def edit(c: dict[str, Any]) -> None:
        network = c["network"]
        for key in ("nat_gateways", "flow_logs_traffic_type", "flow_logs_retention_days"):
            network.pop(key, None)
        network.update(vpc_cidr="10.40.0.0/16", existing_vpc=existing, private_subnet_prefix_length=prefix)

    return edited_config("dev", edit)


def test_an_existing_vpc_with_room_passes_and_a_busy_or_public_subnet_fails(moto: h.Moto) -> None:
    caller = h.seed(moto, stack_config("dev"), "dev")
    existing = _existing_vpc(moto, caller, prefix=22)
    stack = _on_existing(existing, prefix=22)  # /22: 1,019 usable, dev needs up to 555 in us-east-1a
    result = preflight(moto, stack, "dev", caller)
    assert [check(result, i).status for i in ("network.vpc", "network.subnet.us-east-1a")] == [Status.PASSED] * 2
    # Other tenants' interfaces take 500 addresses: the subnet is big enough on paper, not in fact.
    ec2 = caller.client("ec2", endpoint_url=moto.url)
    subnet = existing["private_subnet_ids"]["us-east-1a"]
    ec2.create_network_interface(SubnetId=subnet, SecondaryPrivateIpAddressCount=500)
    ec2.modify_subnet_attribute(SubnetId=subnet, MapPublicIpOnLaunch={"Value": True})
    answer = check(preflight(moto, stack, "dev", caller), "network.subnet.us-east-1a").answer
    assert "free addresses" in answer and "555" in answer and "public" in answer
    wrong = _on_existing({**existing, "vpc_id": "vpc-0123456789abcdef0"}, prefix=22)
    result = preflight(moto, wrong, "dev", caller)
    assert check(result, "network.vpc").status is Status.FAILED
    assert "vpc-0123456789abcdef0" in check(result, "network.subnet.us-east-1b").answer


# ------------------------------------------------------------------------------------------------- compute


def test_a_type_not_offered_in_the_groups_az_fails_naming_where_it_is(moto: h.Moto) -> None:
    # moto's offerings are a snapshot of EC2's: p5en.48xlarge in us-east-1a and us-east-1c only.
    def edit(c: dict[str, Any]) -> None:
        c["gpu_node_groups"][0].update(instance_type="p5en.48xlarge", availability_zone="us-east-1b")

    stack = edited_config("staging", edit)
    found = check(preflight(moto, stack, "staging", h.seed(moto, stack, "staging")), "compute.offering.p5")
    assert found.status is Status.FAILED
    assert "us-east-1a, us-east-1c" in found.answer and "gpu_node_groups[0].availability_zone" in found.answer


def test_a_quota_below_max_size_plus_what_runs_elsewhere_fails(moto: h.Moto) -> None:
    stack = stack_config("staging")  # 2 x p5.48xlarge On-Demand: 384 vCPUs of P
    caller = h.seed(moto, stack, "staging")
    quotas, stub = h.stubbed("service-quotas", stack.region)
    stub.add_response(
        "get_service_quota",
        h.quota("L-417A185B", "Running On-Demand P instances", 400),
        {"ServiceCode": "ec2", "QuotaCode": "L-417A185B"},
    )
    stub.add_response(
        "get_service_quota",
        h.quota("L-1216C47A", "Running On-Demand Standard (A, C, D, H, I, M, R, T, Z) instances", 1000),
        {"ServiceCode": "ec2", "QuotaCode": "L-1216C47A"},
    )
    result = preflight(moto, stack, "staging", caller, {("compute", "service-quotas"): quotas})
    assert check(result, "compute.quota.p").status is Status.PASSED
    # Another team's p4d (96 vCPUs) now runs in the region: 384 + 96 > 400.
    ec2 = caller.client("ec2", endpoint_url=moto.url)
    ec2.run_instances(ImageId="ami-0123456789abcdef0", InstanceType="p4d.24xlarge", MinCount=1, MaxCount=1)
    quotas, stub = h.stubbed("service-quotas", stack.region)
    stub.add_response("get_service_quota", h.quota("L-417A185B", "Running On-Demand P instances", 400))
    stub.add_response(
        "get_service_quota",
        h.quota("L-1216C47A", "Running On-Demand Standard (A, C, D, H, I, M, R, T, Z) instances", 1000),
    )
    failed = check(
        preflight(moto, stack, "staging", caller, {("compute", "service-quotas"): quotas}), "compute.quota.p"
    )
    assert failed.status is Status.FAILED
    assert "400 vCPUs" in failed.answer and "96 already run" in failed.answer and "--desired-value 480" in failed.answer


def test_a_quota_never_applied_falls_back_to_the_default(moto: h.Moto) -> None:
    stack = stack_config("dev")
    quotas, stub = h.stubbed("service-quotas", stack.region)
    for code, name in (
        ("L-3819A6DF", "All G and VT Spot Instance Requests"),
        ("L-1216C47A", "Running On-Demand Standard (A, C, D, H, I, M, R, T, Z) instances"),
    ):
        stub.add_client_error(
            "get_service_quota", "NoSuchResourceException", expected_params={"ServiceCode": "ec2", "QuotaCode": code}
        )
        stub.add_response(
            "get_aws_default_service_quota",
            h.quota(code, name, 0 if "Spot" in name else 64),
            {"ServiceCode": "ec2", "QuotaCode": code},
        )
    result = preflight(moto, stack, "dev", h.seed(moto, stack, "dev"), {("compute", "service-quotas"): quotas})
    assert check(result, "compute.quota.g-and-vt-spot").status is Status.FAILED  # the default of 0 spot G vCPUs
    assert check(result, "compute.quota.standard").status is Status.PASSED


def _reservation(stack: StackConfig, **kwargs: Any) -> dict[tuple[str, str], Any]:
    group = stack.gpu_node_groups[0]
    ec2, stub = h.stubbed("ec2", stack.region)
    stub.add_response(
        "describe_capacity_reservations",
        h.capacity_reservation(
            str(group.capacity.reservation_id),
            kwargs.pop("instance_type", group.instance_type),
            kwargs.pop("az", group.availability_zone),
            **kwargs,
        ),
    )
    return {("reservations", "ec2"): ec2}


@pytest.mark.parametrize(
    ("answer", "status", "says"),
    [
        ({"count": 16}, Status.PASSED, "16 of 16 free"),
        ({"count": 16, "available": 12}, Status.FAILED, "12 of 16 instances free"),
        ({"count": 20, "available": 16, "end": h.NOW + datetime.timedelta(days=3)}, Status.WARNING, "ends"),
        ({"count": 16, "az": "us-east-1b"}, Status.FAILED, "is in us-east-1b"),
        ({"count": 16, "instance_type": "p5e.48xlarge"}, Status.FAILED, "reserves p5e.48xlarge"),
        (
            {"count": 16, "state": "scheduled", "start": h.NOW + datetime.timedelta(days=7)},
            Status.FAILED,
            "is scheduled (starts 2026-12-08",
        ),
        ({"count": 16, "reservation_type": "capacity-block"}, Status.FAILED, "set capacity.type to capacity_block"),
    ],
)
def test_the_reservation_is_judged_by_what_ec2_says(
    moto: h.Moto, answer: dict[str, Any], status: Status, says: str
) -> None:
    stack = stack_config("prod")
    found = check(
        preflight(moto, stack, "prod", h.seed(moto, stack, "prod"), _reservation(stack, **answer)),
        "compute.reservation.p5-train",
    )
    assert found.status is status and says in found.answer + found.action


# ----------------------------------------------------------------------------------------------------- eks


def test_an_addon_build_not_offered_fails_and_fails_the_plans_risk(moto: h.Moto) -> None:
    stack = stack_config("prod")
    client, stub = h.stubbed("eks", stack.region)
    stub.add_response("describe_cluster_versions", h.cluster_versions("1.36"))
    for addon, (_key, build) in h.installed_addons_of(stack).items():
        builds = ["v1.6.1-eksbuild.2", "v1.6.0-eksbuild.1"] if addon == "aws-fsx-csi-driver" else [build]
        stub.add_response(
            "describe_addon_versions",
            h.addon_versions(addon, "1.36", builds),
            {"addonName": addon, "kubernetesVersion": "1.36"},
        )
    result = preflight(moto, stack, "prod", h.seed(moto, stack, "prod"), {("eks", "eks"): client})
    fsx = check(result, "eks.addon.aws-fsx-csi-driver")
    assert fsx.status is Status.FAILED and "v1.6.1-eksbuild.2" in fsx.answer
    assert fsx.settles is not None and fsx.settles.outcome == "failed"
    assert fsx.settles.risk == "unconfirmed pin: aws-fsx-csi-driver v1.7.0-eksbuild.1 on Kubernetes 1.36"
    coredns = check(result, "eks.addon.coredns")
    assert coredns.status is Status.PASSED and coredns.settles is None  # a confirmed pin had no risk to settle


def test_a_kubernetes_version_eks_no_longer_creates_fails(moto: h.Moto) -> None:
    stack = stack_config("dev")
    client, stub = h.stubbed("eks", stack.region)
    stub.add_response("describe_cluster_versions", {"clusterVersions": []})
    for addon, (_key, build) in h.installed_addons_of(stack).items():
        stub.add_response("describe_addon_versions", h.addon_versions(addon, "1.36", [build]))
    found = check(preflight(moto, stack, "dev", h.seed(moto, stack, "dev"), {("eks", "eks"): client}), "eks.version")
    assert found.status is Status.FAILED and "not listed" in found.answer


def test_a_pinned_ami_release_is_looked_up_and_a_missing_one_fails(moto: h.Moto) -> None:
    stack = edited_config("prod", lambda c: c["gpu_node_groups"][0].update(ami_release_version="1.36.0-20260915"))
    name = (
        "/aws/service/eks/optimized-ami/1.36/amazon-linux-2023/x86_64/nvidia/"
        "amazon-eks-node-al2023-x86_64-nvidia-1.36-v20260915/image_id"
    )
    ssm, stub = h.stubbed("ssm", stack.region)
    stub.add_response(
        "get_parameter",
        {
            "Parameter": {
                "Name": name,
                "Type": "String",
                "Value": "ami-0123456789abcdef0",
                "Version": 1,
                "DataType": "aws:ec2:image",
            }
        },
        {"Name": name},
    )
    caller = h.seed(moto, stack, "prod")
    assert (
        check(preflight(moto, stack, "prod", caller, {("eks", "ssm"): ssm}), "eks.ami.p5-train").status is Status.PASSED
    )
    ssm, stub = h.stubbed("ssm", stack.region)
    stub.add_client_error("get_parameter", "ParameterNotFound", expected_params={"Name": name})
    missing = check(preflight(moto, stack, "prod", caller, {("eks", "ssm"): ssm}), "eks.ami.p5-train")
    assert missing.status is Status.FAILED and "1.36.0-20260915" in missing.answer and name in missing.answer


# ----------------------------------------------------------------------------------------------- sagemaker


PLAN_ARN = "arn:aws:sagemaker:us-east-1:111122223333:training-plan/p5-plan"


def _training_plan(status: str = "Active", available: int = 2) -> dict[str, Any]:
    """DescribeTrainingPlan (SageMaker API Reference)."""
    return {
        "TrainingPlanArn": PLAN_ARN,
        "TrainingPlanName": "p5-plan",
        "Status": status,
        "StartTime": h.NOW + datetime.timedelta(days=2),
        "TotalInstanceCount": 2,
        "AvailableInstanceCount": available,
        "InUseInstanceCount": 0,
        "TargetResources": ["hyperpod-cluster"],
        "ReservedCapacitySummaries": [],
    }


@pytest.mark.parametrize(
    ("status", "available", "passed"), [("Active", 2, True), ("Scheduled", 2, False), ("Active", 1, False)]
)
def test_the_training_plan_is_asked(moto: h.Moto, status: str, available: int, passed: bool) -> None:
    def edit(c: dict[str, Any]) -> None:
        c["sagemaker"]["hyperpod"]["training_plan_arn"] = PLAN_ARN
        c["sagemaker"]["hyperpod"]["instance_groups"][0]["capacity"] = "training_plan"

    stack = edited_config("staging", edit)
    client, stub = h.stubbed("sagemaker", stack.region)
    stub.add_response("describe_training_plan", _training_plan(status, available), {"TrainingPlanName": "p5-plan"})
    result = preflight(moto, stack, "staging", h.seed(moto, stack, "staging"), {("sagemaker", "sagemaker"): client})
    found = check(result, "sagemaker.training-plan")
    assert (found.status is Status.PASSED) is passed, found.answer
    assert check(result, "sagemaker.hyperpod-kubernetes").status is Status.SKIPPED  # 1.36: no API settles it

"""The eks family one question at a time: the Kubernetes version, each pinned add-on build (and the plan risk it
settles) and each pinned AMI release, judged from stubbed EKS and SSM (botocore's Stubber checks requests and
answers against the service models; no emulator, so these run in the gate)."""

from __future__ import annotations

import datetime
from typing import Any

import pytest
from botocore.exceptions import ClientError

from stacks.schema import StackConfig
from tests.conftest import edited_config, stack_config
from tests.preflight import helpers as h
from trainstack.preflight import eks
from trainstack.preflight.aws import Account
from trainstack.preflight.context import Context
from trainstack.preflight.model import Check, Settles, Status

pytestmark = pytest.mark.usefixtures("aws_env")

FSX_RISK = "unconfirmed pin: aws-fsx-csi-driver v1.7.0-eksbuild.1 on Kubernetes 1.36"  # trainstack/model/pins.py


def _context(stack: StackConfig, *, eks_client: Any = None, ssm: Any = None) -> Context:
    overrides = {k: v for k, v in (((eks.FAMILY, "eks"), eks_client), ((eks.FAMILY, "ssm"), ssm)) if v is not None}
    account = Account(stack.region, session=h.session(), overrides=overrides, max_attempts=1)
    return Context(stack, stack.name, account, "444455556666", "arn:aws:sts::444455556666:x", None, h.NOW)


# -------------------------------------------------------------------------------------------------- version


def _version(answer: dict[str, Any], stack: StackConfig | None = None) -> Check:
    stack = stack or stack_config("dev")
    client, stub = h.stubbed("eks", stack.region)
    stub.add_response("describe_cluster_versions", answer, {"clusterVersions": [stack.eks.version]})
    found = eks.version_check(_context(stack, eks_client=client))
    stub.assert_no_pending_responses()
    return found


@pytest.mark.parametrize(("status", "says"), [("STANDARD_SUPPORT", "standard"), ("EXTENDED_SUPPORT", "extended")])
def test_a_version_eks_creates_passes_with_its_support_window(status: str, says: str) -> None:
    found = _version(h.cluster_versions("1.36", status))
    assert (found.id, found.family, found.status, found.action, found.key) == (
        "eks.version",
        "eks",
        Status.PASSED,
        "",
        "eks.version",
    )
    assert found.answer == f"1.36: {says} support, standard support until 2027-08-02"
    assert found.asked == "eks:DescribeClusterVersions 1.36"
    assert found.title == "EKS creates clusters on Kubernetes 1.36 here"


def test_a_version_without_a_support_date_is_answered_without_one() -> None:
    answer = h.cluster_versions("1.36")
    del answer["clusterVersions"][0]["endOfStandardSupportDate"]
    assert _version(answer).answer == "1.36: standard support"


@pytest.mark.parametrize(
    ("answer", "says"),
    [
        ({"clusterVersions": []}, "(not listed)"),
        (h.cluster_versions("1.35"), "(not listed)"),  # only another version's row
        (h.cluster_versions("1.36", "UNSUPPORTED"), "(UNSUPPORTED)"),
    ],
)
def test_a_version_eks_does_not_create_fails(answer: dict[str, Any], says: str) -> None:
    found = _version(answer)
    assert found.status is Status.FAILED and says in found.answer and "us-east-1" in found.answer
    assert found.action == "pick a version `aws eks describe-cluster-versions` lists"


def test_a_version_that_cannot_be_asked_is_an_error() -> None:
    stack = stack_config("dev")
    client, stub = h.stubbed("eks", stack.region)
    stub.add_client_error("describe_cluster_versions", "AccessDeniedException", http_status_code=403)
    found = eks.version_check(_context(stack, eks_client=client))
    assert (found.id, found.status, found.key) == ("eks.version", Status.ERROR, "eks.version")


# -------------------------------------------------------------------------------------------------- add-ons


def test_the_installed_add_ons_are_every_pin_by_eks_name_in_order() -> None:
    stack = stack_config("dev")
    found = eks.installed_addons(_context(stack))
    assert list(found) == sorted(found)
    assert found == {
        "aws-ebs-csi-driver": ("eks.addons.ebs_csi_driver", "v1.63.1-eksbuild.1"),
        "aws-fsx-csi-driver": ("eks.addons.fsx_csi_driver", "v1.7.0-eksbuild.1"),
        "coredns": ("eks.addons.coredns", "v1.14.3-eksbuild.16"),
        "eks-pod-identity-agent": ("eks.addons.pod_identity_agent", "v1.3.10-eksbuild.3"),
        "kube-proxy": ("eks.addons.kube_proxy", "v1.36.0-eksbuild.21"),
        "vpc-cni": ("eks.addons.vpc_cni", "v1.22.4-eksbuild.3"),
    }


def _without_fsx() -> StackConfig:
    """dev with FSx off (copied, not validated: the add-on list reads only storage.fsx.enabled)."""
    stack = stack_config("dev")
    fsx = stack.storage.fsx.model_copy(update={"enabled": False})
    return stack.model_copy(update={"storage": stack.storage.model_copy(update={"fsx": fsx})})


def test_the_fsx_driver_is_installed_only_with_fsx() -> None:
    found = eks.installed_addons(_context(_without_fsx()))
    assert "aws-fsx-csi-driver" not in found and len(found) == 5


def _builds(addon: str, *rows: tuple[str, str]) -> dict[str, Any]:
    """DescribeAddonVersions with one AddonVersionInfo per (build, cluster version it is compatible with)."""
    answer = h.addon_versions(addon, "1.36", [b for b, _ in rows])
    for info, (_, version) in zip(answer["addons"][0]["addonVersions"], rows, strict=True):
        info["compatibilities"][0]["clusterVersion"] = version
    return answer


def test_offered_builds_are_this_add_ons_builds_for_this_version_in_eks_order() -> None:
    stack = stack_config("dev")
    client, stub = h.stubbed("eks", stack.region)
    answer = _builds("coredns", ("v1.14.3-eksbuild.16", "1.36"), ("v1.14.2-eksbuild.1", "1.35"), ("v1.13.0", "1.36"))
    answer["addons"].append(_builds("vpc-cni", ("v1.22.4-eksbuild.3", "1.36"))["addons"][0])
    # EKS lists one compatibility per cluster version: a build for 1.35 and 1.36 is offered for 1.36.
    both = {"clusterVersion": "1.35", "platformVersions": ["*"], "defaultVersion": False}
    answer["addons"][0]["addonVersions"][2]["compatibilities"].insert(0, both)
    params = {"addonName": "coredns", "kubernetesVersion": "1.36"}
    stub.add_response("describe_addon_versions", answer, params)
    stub.add_response("describe_addon_versions", {"addons": [{"addonName": "coredns"}]}, params)
    ctx = _context(stack, eks_client=client)
    assert eks.offered_builds(ctx, "coredns", "1.36") == ["v1.14.3-eksbuild.16", "v1.13.0"]
    assert eks.offered_builds(ctx, "coredns", "1.36") == []  # an add-on listed without versions


def _addons(stack: StackConfig, offered: dict[str, list[str]] | None = None, denied: str = "") -> list[Check]:
    """The add-on checks, EKS offering each installed build (or `offered[addon]`); `denied`'s question refused."""
    client, stub = h.stubbed("eks", stack.region)
    for addon, (_key, build) in eks.installed_addons(_context(stack)).items():
        params = {"addonName": addon, "kubernetesVersion": stack.eks.version}
        if addon == denied:
            stub.add_client_error("describe_addon_versions", "AccessDeniedException", expected_params=params)
            continue
        builds = (offered or {}).get(addon, [build])
        stub.add_response("describe_addon_versions", h.addon_versions(addon, stack.eks.version, builds), params)
    found = eks.addon_checks(_context(stack, eks_client=client))
    stub.assert_no_pending_responses()
    return found


def test_every_offered_pin_passes_and_settles_only_the_plans_open_risk() -> None:
    found = _addons(stack_config("dev"))
    assert [c.id for c in found] == [
        "eks.addon.aws-ebs-csi-driver",
        "eks.addon.aws-fsx-csi-driver",
        "eks.addon.coredns",
        "eks.addon.eks-pod-identity-agent",
        "eks.addon.kube-proxy",
        "eks.addon.vpc-cni",
    ]
    assert all(c.status is Status.PASSED and c.action == "" and c.family == "eks" for c in found)
    fsx = found[1]
    assert fsx.settles == Settles(FSX_RISK, "confirmed")
    assert fsx.answer == "v1.7.0-eksbuild.1 is one of 1 builds EKS offers for 1.36"
    assert fsx.key == "eks.addons.fsx_csi_driver" and fsx.asked == "eks:DescribeAddonVersions aws-fsx-csi-driver 1.36"
    assert fsx.title == "aws-fsx-csi-driver v1.7.0-eksbuild.1 is offered for Kubernetes 1.36"
    assert [c.settles for c in found if c is not fsx] == [None] * 5  # confirmed pins: no risk to settle


def test_a_pin_not_offered_fails_and_fails_its_risk() -> None:
    found = _addons(stack_config("dev"), {"aws-fsx-csi-driver": ["v1.6.1-eksbuild.2"], "coredns": []})
    fsx, coredns = found[1], found[2]
    assert fsx.status is Status.FAILED and "v1.6.1-eksbuild.2" in fsx.answer
    assert fsx.settles == Settles(FSX_RISK, "failed") and fsx.action == "pin an offered build in the stack file"
    assert coredns.status is Status.FAILED and coredns.settles is None
    assert [c.status for c in found].count(Status.PASSED) == 4


def test_an_add_on_that_cannot_be_asked_is_an_error_and_the_others_are_judged() -> None:
    found = _addons(stack_config("dev"), denied="coredns")
    assert [(c.id, c.status) for c in found if c.status is not Status.PASSED] == [("eks.addon.coredns", Status.ERROR)]
    assert found[2].key == "eks.addons.coredns"


# ----------------------------------------------------------------------------------------------------- AMIs


@pytest.mark.parametrize(
    ("ami_type", "release", "parameter"),
    [
        (
            "AL2023_x86_64_NVIDIA",
            "1.36.0-20260915",
            "/aws/service/eks/optimized-ami/1.36/amazon-linux-2023/x86_64/nvidia/"
            "amazon-eks-node-al2023-x86_64-nvidia-1.36-v20260915/image_id",
        ),
        (
            "AL2023_ARM_64_NVIDIA",
            "1.36.0-20260915",
            "/aws/service/eks/optimized-ami/1.36/amazon-linux-2023/arm64/nvidia/"
            "amazon-eks-node-al2023-arm64-nvidia-1.36-v20260915/image_id",
        ),
        (
            "AL2023_x86_64_STANDARD",
            "1.36.2-20261101",
            "/aws/service/eks/optimized-ami/1.36/amazon-linux-2023/x86_64/standard/"
            "amazon-eks-node-al2023-x86_64-standard-1.36-v20261101/image_id",
        ),
        (
            "BOTTLEROCKET_x86_64_NVIDIA",
            "1.44.0-0f2a6ffa",
            "/aws/service/bottlerocket/aws-k8s-1.36-nvidia/x86_64/1.44.0-0f2a6ffa/image_id",
        ),
        (
            "BOTTLEROCKET_ARM_64_NVIDIA",
            "1.44.0-0f2a6ffa",
            "/aws/service/bottlerocket/aws-k8s-1.36-nvidia/arm64/1.44.0-0f2a6ffa/image_id",
        ),
        (
            "BOTTLEROCKET_x86_64",
            "1.44.0-0f2a6ffa",
            "/aws/service/bottlerocket/aws-k8s-1.36/x86_64/1.44.0-0f2a6ffa/image_id",
        ),
    ],
)
def test_each_ami_family_has_its_public_parameter(ami_type: str, release: str, parameter: str) -> None:
    assert eks.ami_parameter(ami_type, "1.36", release) == parameter


def test_no_pinned_release_asks_nothing() -> None:
    assert eks.ami_checks(_context(stack_config("prod"))) == []


def _pinned(group: str | None = None, system: str | None = None, family: str | None = None) -> StackConfig:
    def edit(c: dict[str, Any]) -> None:
        if group is not None:
            c["gpu_node_groups"][0]["ami_release_version"] = group
        if family is not None:
            c["gpu_node_groups"][0]["ami_family"] = family
        if system is not None:
            c["eks"]["system_node_group"]["ami_release_version"] = system

    return edited_config("prod", edit)


def _image(name: str) -> dict[str, Any]:
    """GetParameter (SSM API Reference, Parameter) of a public AMI parameter."""
    return {
        "Parameter": {
            "Name": name,
            "Type": "String",
            "Value": "ami-0123456789abcdef0",
            "Version": 1,
            "DataType": "aws:ec2:image",
            "LastModifiedDate": datetime.datetime(2026, 9, 15, tzinfo=datetime.UTC),
        }
    }


GPU_PARAMETER = eks.ami_parameter("AL2023_x86_64_NVIDIA", "1.36", "1.36.0-20260915")
SYSTEM_PARAMETER = eks.ami_parameter("AL2023_x86_64_STANDARD", "1.36", "1.36.1-20261001")


def test_pinned_releases_that_exist_pass_for_the_groups_and_the_system_nodes() -> None:
    stack = _pinned("1.36.0-20260915", "1.36.1-20261001")
    ssm, stub = h.stubbed("ssm", stack.region)
    stub.add_response("get_parameter", _image(GPU_PARAMETER), {"Name": GPU_PARAMETER})
    stub.add_response("get_parameter", _image(SYSTEM_PARAMETER), {"Name": SYSTEM_PARAMETER})
    group, system = eks.ami_checks(_context(stack, ssm=ssm))
    stub.assert_no_pending_responses()
    assert (group.id, group.family, group.status, group.action) == ("eks.ami.p5-train", "eks", Status.PASSED, "")
    assert group.answer == "1.36.0-20260915 is ami-0123456789abcdef0"
    assert group.key == "gpu_node_groups[0].ami_release_version" and group.asked == f"ssm:GetParameter {GPU_PARAMETER}"
    assert group.title == "AMI release 1.36.0-20260915 (AL2023_x86_64_NVIDIA) exists for Kubernetes 1.36 (p5-train)"
    assert (system.id, system.status, system.key) == (
        "eks.ami.system",
        Status.PASSED,
        "eks.system_node_group.ami_release_version",
    )
    assert system.title == "AMI release 1.36.1-20261001 (AL2023_x86_64_STANDARD) exists for Kubernetes 1.36 (system)"


def test_a_release_ssm_does_not_know_fails_naming_the_parameter() -> None:
    stack = _pinned("1.36.0-20260915")
    ssm, stub = h.stubbed("ssm", stack.region)
    stub.add_client_error("get_parameter", "ParameterNotFound", expected_params={"Name": GPU_PARAMETER})
    (found,) = eks.ami_checks(_context(stack, ssm=ssm))
    assert found.status is Status.FAILED and found.answer == (
        "gpu_node_groups[0].ami_release_version = 1.36.0-20260915: no AL2023_x86_64_NVIDIA AMI of that release for "
        f"Kubernetes 1.36 in us-east-1 (SSM {GPU_PARAMETER}): the node group would fail to create"
    )
    assert found.action == "pin a release that exists (or leave it out for the newest)"


def _system_copy(release: str, kubernetes_version: str | None = None) -> StackConfig:
    """prod with the system nodes pinned (copied, not validated: the schema refuses a release of another version
    than the nodes run, and preflight holds the same line for a stack that did not come through it)."""
    stack = stack_config("prod")
    system = stack.eks.system_node_group.model_copy(
        update={"ami_release_version": release, "kubernetes_version": kubernetes_version}
    )
    return stack.model_copy(update={"eks": stack.eks.model_copy(update={"system_node_group": system})})


def test_an_al2023_release_for_another_kubernetes_fails_without_asking() -> None:
    (found,) = eks.ami_checks(_context(_system_copy("1.35.4-20260915")))  # no SSM client: asking would fail
    assert found.status is Status.FAILED and found.answer == (
        "eks.system_node_group.ami_release_version = 1.35.4-20260915 is a release for Kubernetes 1.35, the group "
        "runs 1.36"
    )


def test_a_group_kept_on_an_older_kubernetes_is_judged_by_its_own_version() -> None:
    stack = edited_config(
        "prod",
        lambda c: c["eks"]["system_node_group"].update(
            kubernetes_version="1.35", ami_release_version="1.35.4-20260915"
        ),
    )
    parameter = eks.ami_parameter("AL2023_x86_64_STANDARD", "1.35", "1.35.4-20260915")
    ssm, stub = h.stubbed("ssm", stack.region)
    stub.add_response("get_parameter", _image(parameter), {"Name": parameter})
    (found,) = eks.ami_checks(_context(stack, ssm=ssm))
    assert found.status is Status.PASSED and found.asked == f"ssm:GetParameter {parameter}"


def test_a_bottlerocket_release_is_asked_whatever_its_number() -> None:
    stack = _pinned("1.44.0-0f2a6ffa", family="BOTTLEROCKET_x86_64_NVIDIA")
    parameter = eks.ami_parameter("BOTTLEROCKET_x86_64_NVIDIA", "1.36", "1.44.0-0f2a6ffa")
    ssm, stub = h.stubbed("ssm", stack.region)
    stub.add_response("get_parameter", _image(parameter), {"Name": parameter})
    (found,) = eks.ami_checks(_context(stack, ssm=ssm))
    assert found.status is Status.PASSED and found.asked == f"ssm:GetParameter {parameter}"


def test_an_ssm_failure_other_than_not_found_is_not_taken_for_a_missing_release() -> None:
    stack = _pinned("1.36.0-20260915")
    ssm, stub = h.stubbed("ssm", stack.region)
    stub.add_client_error("get_parameter", "InternalServerError", http_status_code=500)
    with pytest.raises(ClientError, match="InternalServerError"):
        eks.ami_checks(_context(stack, ssm=ssm))
    ssm, stub = h.stubbed("ssm", stack.region)
    stub.add_client_error("get_parameter", "AccessDeniedException", http_status_code=400)
    (denied,) = eks.ami_checks(_context(stack, ssm=ssm))
    assert denied.status is Status.ERROR and denied.key == "gpu_node_groups[0].ami_release_version"


def test_the_family_asks_version_then_add_ons_then_amis() -> None:
    stack = _system_copy("1.35.4-20260915")
    client, stub = h.stubbed("eks", stack.region)
    stub.add_response("describe_cluster_versions", h.cluster_versions("1.36"))
    for addon, (_key, build) in eks.installed_addons(_context(stack)).items():
        params = {"addonName": addon, "kubernetesVersion": "1.36"}
        stub.add_response("describe_addon_versions", h.addon_versions(addon, "1.36", [build]), params)
    found = eks.checks(_context(stack, eks_client=client))
    assert [c.id for c in found][:2] == ["eks.version", "eks.addon.aws-ebs-csi-driver"]
    assert [c.id for c in found][-1] == "eks.ami.system" and len(found) == 8

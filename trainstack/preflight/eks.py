"""What EKS offers in the region today (EKS, SSM): the Kubernetes version, each pinned add-on build for it, and
each pinned AMI release. The add-on checks settle the plan's "unconfirmed pin" risks (trainstack/model/pins.py)."""

from __future__ import annotations

from botocore.exceptions import ClientError

from stacks.account_rules import addon_problem, eks_version_problem
from stacks.schema.eks import ADDON_NAMES
from trainstack.model.pins import risk_title, unconfirmed
from trainstack.preflight.aws import error_code
from trainstack.preflight.context import Context, attempt, verdict
from trainstack.preflight.model import Check, Settles

FAMILY = "eks"
SYSTEM_AMI = "AL2023_x86_64_STANDARD"  # components/eks/eks.py SYSTEM_AMI_TYPE


def version_check(ctx: Context) -> Check:
    version = ctx.stack.eks.version
    asked = f"eks:DescribeClusterVersions {version}"
    title = f"EKS creates clusters on Kubernetes {version} here"

    def judge() -> Check:
        found = ctx.ask(FAMILY, "eks", "DescribeClusterVersions", clusterVersions=[version])["clusterVersions"]
        row = next((v for v in found if v.get("clusterVersion") == version), None)
        status = str(row.get("versionStatus", "")) if row else ""
        problem = eks_version_problem(version, ctx.stack.region, status)
        answer = problem or f"{version}: {status.replace('_', ' ').lower()}" + (
            f", standard support until {row['endOfStandardSupportDate']:%Y-%m-%d}"
            if row and row.get("endOfStandardSupportDate")
            else ""
        )
        return Check(
            "eks.version",
            FAMILY,
            title,
            verdict(problem),
            asked,
            answer,
            "" if problem is None else "pick a version `aws eks describe-cluster-versions` lists",
            "eks.version",
        )

    return attempt(FAMILY, "eks.version", title, "eks.version", asked, judge)


def installed_addons(ctx: Context) -> dict[str, tuple[str, str]]:
    """EKS add-on name -> (stack-file key, pinned build), for the add-ons this stack installs."""
    pins = ctx.stack.eks.addons.model_dump()
    out = {
        ADDON_NAMES[field]: (f"eks.addons.{field}", str(build))
        for field, build in pins.items()
        if field != "fsx_csi_driver" or ctx.stack.storage.fsx.enabled
    }
    return dict(sorted(out.items()))


def offered_builds(ctx: Context, addon: str, version: str) -> list[str]:
    answer = ctx.ask(FAMILY, "eks", "DescribeAddonVersions", addonName=addon, kubernetesVersion=version)
    return [
        v["addonVersion"]
        for info in answer.get("addons", [])
        if info.get("addonName") == addon
        for v in info.get("addonVersions", [])
        if any(c.get("clusterVersion") == version for c in v.get("compatibilities", []))
    ]


def addon_checks(ctx: Context) -> list[Check]:
    version = ctx.stack.eks.version
    addons = installed_addons(ctx)
    open_risks = {name for name, _build, _why in unconfirmed(version, {n: b for n, (_, b) in addons.items()})}
    checks: list[Check] = []
    for addon, (key, build) in addons.items():
        asked = f"eks:DescribeAddonVersions {addon} {version}"
        title = f"{addon} {build} is offered for Kubernetes {version}"

        def judge(
            addon: str = addon, key: str = key, build: str = build, asked: str = asked, title: str = title
        ) -> Check:
            offered = offered_builds(ctx, addon, version)
            problem = addon_problem(addon, build, version, offered)
            settles = None
            if addon in open_risks:
                settles = Settles(risk_title(addon, build, version), "failed" if problem else "confirmed")
            return Check(
                id=f"eks.addon.{addon}",
                family=FAMILY,
                title=title,
                status=verdict(problem),
                asked=asked,
                answer=problem or f"{build} is one of {len(offered)} builds EKS offers for {version}",
                action="" if problem is None else "pin an offered build in the stack file",
                key=key,
                settles=settles,
            )

        checks.append(attempt(FAMILY, f"eks.addon.{addon}", title, key, asked, judge))
    return checks


def ami_parameter(ami_type: str, kubernetes_version: str, release: str) -> str:
    """The SSM public parameter of one EKS AMI release. AL2023: `/aws/service/eks/optimized-ami/<k8s>/
    amazon-linux-2023/<arch>/<variant>/amazon-eks-node-al2023-<arch>-<variant>-<k8s>-v<date>/image_id`, the form
    aws/karpenter-provider-aws documents for a pinned AL2023 image (pkg/providers/amifamily, al2023.go comments);
    Bottlerocket: `/aws/service/bottlerocket/aws-k8s-<k8s>[-nvidia]/<arch>/<version>/image_id`, the form
    Bottlerocket's QUICKSTART-EKS.md gives for a version (verify the version segment against your region)."""
    arch = "arm64" if "_ARM_64_" in ami_type else "x86_64"
    if ami_type.startswith("BOTTLEROCKET_"):
        variant = "-nvidia" if ami_type.endswith("_NVIDIA") else ""
        return f"/aws/service/bottlerocket/aws-k8s-{kubernetes_version}{variant}/{arch}/{release}/image_id"
    variant = ami_type.rsplit("_", 1)[-1].lower()  # NVIDIA, NEURON, STANDARD
    date = release.rsplit("-", 1)[-1]
    name = f"amazon-eks-node-al2023-{arch}-{variant}-{kubernetes_version}-v{date}"
    return f"/aws/service/eks/optimized-ami/{kubernetes_version}/amazon-linux-2023/{arch}/{variant}/{name}/image_id"


def ami_checks(ctx: Context) -> list[Check]:
    """Each pinned AMI release exists for the Kubernetes version its group runs: the group's own
    `kubernetes_version` when it stays behind the control plane (docs/day2.md), else the cluster's."""
    eks = ctx.stack.eks
    pinned: list[tuple[str, str, str, str, str]] = [
        (
            f"gpu_node_groups[{i}].ami_release_version",
            group.name,
            group.ami_family.value,
            group.ami_release_version,
            group.kubernetes_version or eks.version,
        )
        for i, group in enumerate(ctx.stack.gpu_node_groups)
        if group.ami_release_version is not None
    ]
    system = eks.system_node_group
    if system.ami_release_version is not None:
        pinned.append(
            (
                "eks.system_node_group.ami_release_version",
                "system",
                SYSTEM_AMI,
                system.ami_release_version,
                system.kubernetes_version or eks.version,
            )
        )
    checks: list[Check] = []
    for key, who, ami_type, release, version in pinned:
        parameter = ami_parameter(ami_type, version, release)
        asked = f"ssm:GetParameter {parameter}"
        title = f"AMI release {release} ({ami_type}) exists for Kubernetes {version} ({who})"

        def judge(
            key: str = key,
            who: str = who,
            ami_type: str = ami_type,
            release: str = release,
            version: str = version,
            parameter: str = parameter,
            asked: str = asked,
            title: str = title,
        ) -> Check:
            problem, image = None, ""
            if not ami_type.startswith("BOTTLEROCKET_") and not release.startswith(f"{version}."):
                built_for = release.rsplit(".", 1)[0]
                problem = f"{key} = {release} is a release for Kubernetes {built_for}, the group runs {version}"
            else:
                try:
                    image = ctx.ask(FAMILY, "ssm", "GetParameter", Name=parameter)["Parameter"]["Value"]
                except ClientError as error:
                    if error_code(error) != "ParameterNotFound":
                        raise
                    problem = (
                        f"{key} = {release}: no {ami_type} AMI of that release for Kubernetes {version} in "
                        f"{ctx.stack.region} (SSM {parameter}): the node group would fail to create"
                    )
            return Check(
                id=f"eks.ami.{who}",
                family=FAMILY,
                title=title,
                status=verdict(problem),
                asked=asked,
                answer=problem or f"{release} is {image}",
                action="" if problem is None else "pin a release that exists (or leave it out for the newest)",
                key=key,
            )

        checks.append(attempt(FAMILY, f"eks.ami.{who}", title, key, asked, judge))
    return checks


def checks(ctx: Context) -> list[Check]:
    return [version_check(ctx), *addon_checks(ctx), *ami_checks(ctx)]

"""HyperPod (SageMaker): its Kubernetes version on the EKS orchestrator, and the training plan its groups use."""

from __future__ import annotations

from botocore.exceptions import ClientError

from stacks.schema.sagemaker import (
    HYPERPOD_EKS_VERSIONS_DOCUMENTED,
    HYPERPOD_EKS_VERSIONS_SOURCE,
    HyperPodCapacity,
)
from trainstack.preflight.aws import error_code
from trainstack.preflight.context import Context, attempt
from trainstack.preflight.model import Check, Status

FAMILY = "sagemaker"
TRAINING_PLAN_KEY = "sagemaker.hyperpod.training_plan_arn"
HYPERPOD_TARGET = "hyperpod-cluster"  # SageMaker TrainingPlan TargetResources value for HyperPod


def version_check(ctx: Context) -> Check:
    """No AWS API lists the Kubernetes versions HyperPod supports (SageMaker's API has none; CreateCluster refuses
    an unsupported one): a documented version passes on the guide's word, any other stays unconfirmed."""
    version = ctx.stack.eks.version
    documented = version in HYPERPOD_EKS_VERSIONS_DOCUMENTED
    return Check(
        id="sagemaker.hyperpod-kubernetes",
        family=FAMILY,
        title=f"HyperPod supports Kubernetes {version}",
        status=Status.PASSED if documented else Status.SKIPPED,
        asked="(no AWS API lists HyperPod's Kubernetes versions)",
        answer=f"documented: {HYPERPOD_EKS_VERSIONS_SOURCE}"
        if documented
        else f"{version} is not documented ({HYPERPOD_EKS_VERSIONS_SOURCE}); no API can settle it",
        action="" if documented else "confirm in the SageMaker guide before deploying, or use a documented version",
        key="eks.version",
    )


def training_plan_check(ctx: Context, arn: str) -> Check:
    name = arn.rsplit("/", 1)[-1]
    hyperpod = ctx.stack.sagemaker.hyperpod
    groups = [g for g in hyperpod.instance_groups if g.capacity is HyperPodCapacity.TRAINING_PLAN]
    wanted = sum(g.instance_count for g in groups)
    asked = f"sagemaker:DescribeTrainingPlan {name}"
    title = f"training plan {name} can hold the training_plan groups"

    def judge() -> Check:
        try:
            plan = ctx.ask(FAMILY, "sagemaker", "DescribeTrainingPlan", TrainingPlanName=name)
        except ClientError as error:
            if error_code(error) not in ("ResourceNotFound", "ValidationException"):
                raise
            plan = None
        problems: list[str] = []
        if plan is None:
            problems.append(f"{TRAINING_PLAN_KEY} = {arn}: no such training plan in this account and region")
        else:
            if plan.get("Status") != "Active":
                start = plan.get("StartTime")
                when = f" (starts {start:%Y-%m-%d %H:%M} UTC)" if start is not None else ""
                problems.append(f"{name} is {plan.get('Status')}{when}: HyperPod cannot use it until it is Active")
            if HYPERPOD_TARGET not in plan.get("TargetResources", []):
                problems.append(f"{name} targets {plan.get('TargetResources')}, not {HYPERPOD_TARGET}")
            types = {s.get("InstanceType") for s in plan.get("ReservedCapacitySummaries", [])}
            for g in groups:
                if types and g.instance_type not in types:
                    problems.append(
                        f"group {g.name} runs {g.instance_type}, the plan reserves {', '.join(sorted(types))}"
                    )
            if int(plan.get("AvailableInstanceCount", 0)) < wanted:
                problems.append(
                    f"{name} has {plan.get('AvailableInstanceCount', 0)} free instances, the training_plan groups "
                    f"need {wanted}"
                )
        answer = "; ".join(problems) or (
            f"{name}: Active, {plan.get('AvailableInstanceCount')} of {plan.get('TotalInstanceCount')} free"
            if plan
            else ""
        )
        return Check(
            "sagemaker.training-plan",
            FAMILY,
            title,
            Status.FAILED if problems else Status.PASSED,
            asked,
            answer,
            "fix the plan or the groups" if problems else "",
            TRAINING_PLAN_KEY,
        )

    return attempt(FAMILY, "sagemaker.training-plan", title, TRAINING_PLAN_KEY, asked, judge)


def checks(ctx: Context) -> list[Check]:
    hyperpod = ctx.stack.sagemaker.hyperpod
    if not hyperpod.enabled:
        return []
    out: list[Check] = []
    if ctx.stack.hyperpod_on_eks:
        out.append(version_check(ctx))
    if hyperpod.training_plan_arn is not None:
        out.append(training_plan_check(ctx, hyperpod.training_plan_arn))
    return out

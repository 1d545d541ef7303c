"""Preflight's HyperPod checks one case at a time: the Kubernetes version on the EKS orchestrator (no API answers
it) and the training plan its training_plan groups run on (botocore's Stubber holds each DescribeTrainingPlan
request and answer to SageMaker's model)."""

from __future__ import annotations

import datetime
from typing import Any

import pytest
from botocore.exceptions import ClientError

from stacks.schema import StackConfig
from stacks.schema.sagemaker import HYPERPOD_EKS_VERSIONS_SOURCE
from tests.conftest import edited_config, stack_config
from tests.preflight import helpers as h
from trainstack.preflight import sagemaker
from trainstack.preflight.aws import Account
from trainstack.preflight.context import Context
from trainstack.preflight.model import Status

pytestmark = pytest.mark.usefixtures("aws_env")

PLAN = "arn:aws:sagemaker:us-east-1:111122223333:training-plan/p5-plan"
WORKERS = {"name": "workers", "instance_type": "ml.p5.48xlarge", "instance_count": 2, "capacity": "training_plan"}
SPARE = {"name": "spare", "instance_type": "ml.g5.12xlarge", "instance_count": 3}  # on demand: not the plan's


def on_plan(*groups: dict[str, Any], orchestrator: str = "eks") -> StackConfig:
    """staging's HyperPod with `groups` (workers on the plan by default) and the training plan PLAN."""

    def edit(c: dict[str, Any]) -> None:
        hyperpod = c["sagemaker"]["hyperpod"]
        hyperpod.update(training_plan_arn=PLAN, instance_groups=list(groups or [WORKERS]), orchestrator=orchestrator)
        c["cost"]["max_gpus"] = 64  # room for the spare group's accelerators beside the p5 group's
        if orchestrator == "slurm":
            controller = {"name": "controller", "instance_type": "ml.m5.2xlarge", "instance_count": 1}
            hyperpod["instance_groups"].insert(0, {**controller, "role": "controller"})
            c["storage"]["fsx"]["no_squash_nids"] = ["10.0.1.6@tcp"]

    return edited_config("staging", edit)


def context(stack: StackConfig, client: Any = None) -> Context:
    overrides = {} if client is None else {(sagemaker.FAMILY, "sagemaker"): client}
    account = Account(stack.region, session=h.session(), overrides=overrides)
    caller = "arn:aws:sts::111122223333:assumed-role/ml-platform-admin/preflight"
    return Context(stack, "staging", account, "111122223333", caller, None, h.NOW)


def plan(**fields: Any) -> dict[str, Any]:
    """DescribeTrainingPlan's answer (SageMaker API Reference) for an Active hyperpod-cluster plan of 2 p5s, free."""
    found = {
        "TrainingPlanArn": PLAN,
        "TrainingPlanName": "p5-plan",
        "Status": "Active",
        "StartTime": h.NOW - datetime.timedelta(days=1),
        "TotalInstanceCount": 2,
        "AvailableInstanceCount": 2,
        "InUseInstanceCount": 0,
        "TargetResources": ["hyperpod-cluster"],
        "ReservedCapacitySummaries": [],
    }
    return {k: v for k, v in (found | fields).items() if v is not None}


def reserved(instance_type: str) -> dict[str, Any]:
    """One ReservedCapacitySummary of a plan (SageMaker API Reference)."""
    return {
        "ReservedCapacityArn": f"arn:aws:sagemaker:us-east-1:111122223333:reserved-capacity/{instance_type}",
        "InstanceType": instance_type,
        "TotalInstanceCount": 2,
        "Status": "Active",
    }


def ask(answer: dict[str, Any], stack: StackConfig | None = None) -> Any:
    client, stub = h.stubbed("sagemaker", "us-east-1")
    stub.add_response("describe_training_plan", answer, {"TrainingPlanName": "p5-plan"})
    found = sagemaker.training_plan_check(context(stack or on_plan(), client), PLAN)
    stub.assert_no_pending_responses()
    return found


# ---------------------------------------------------------------------------------------- Kubernetes version


def test_a_documented_kubernetes_version_passes_on_the_guides_word() -> None:
    def edit(c: dict[str, Any]) -> None:
        c["eks"].update(version="1.34")
        c["eks"]["addons"]["kube_proxy"] = "v1.34.0-eksbuild.1"

    found = sagemaker.version_check(context(edited_config("staging", edit)))
    assert (found.id, found.status, found.action, found.key) == (
        "sagemaker.hyperpod-kubernetes",
        Status.PASSED,
        "",
        "eks.version",
    )
    assert (
        found.answer == f"documented: {HYPERPOD_EKS_VERSIONS_SOURCE}"
        and found.title == "HyperPod supports Kubernetes 1.34"
    )


def test_an_undocumented_kubernetes_version_stays_unconfirmed_not_passed() -> None:
    found = sagemaker.version_check(context(stack_config("staging")))  # 1.36: unconfirmed for HyperPod
    assert found.status is Status.SKIPPED and found.answer.startswith("1.36 is not documented")
    assert found.action == "confirm in the SageMaker guide before deploying, or use a documented version"


# --------------------------------------------------------------------------------------------- training plan


def test_an_active_plan_with_room_for_the_plans_groups_passes() -> None:
    found = ask(plan(ReservedCapacitySummaries=[reserved("ml.p5.48xlarge")]))
    assert (found.id, found.family, found.status, found.action) == (
        "sagemaker.training-plan",
        "sagemaker",
        Status.PASSED,
        "",
    )
    assert found.answer == "p5-plan: Active, 2 of 2 free" and found.key == "sagemaker.hyperpod.training_plan_arn"
    assert found.asked == "sagemaker:DescribeTrainingPlan p5-plan"
    assert found.title == "training plan p5-plan can hold the training_plan groups"


def test_only_the_training_plan_groups_count_against_the_plans_free_instances() -> None:
    stack = on_plan(WORKERS, SPARE)
    assert ask(plan(AvailableInstanceCount=2), stack).status is Status.PASSED  # exactly the 2 workers
    short = ask(plan(AvailableInstanceCount=1), stack)
    assert short.status is Status.FAILED and short.action == "fix the plan or the groups"
    assert short.answer == "p5-plan has 1 free instances, the training_plan groups need 2"


def test_a_plan_answer_without_free_instances_has_none() -> None:
    missing = plan(AvailableInstanceCount=None)
    assert ask(missing).answer == "p5-plan has 0 free instances, the training_plan groups need 2"
    one = ask(missing, on_plan({**WORKERS, "instance_count": 1}))
    assert one.status is Status.FAILED and one.answer.startswith("p5-plan has 0 free instances")


def test_a_plan_not_yet_active_fails_saying_when_it_starts() -> None:
    starts = h.NOW + datetime.timedelta(days=2)
    scheduled = ask(plan(Status="Scheduled", StartTime=starts))
    assert scheduled.status is Status.FAILED
    assert (
        scheduled.answer
        == "p5-plan is Scheduled (starts 2026-12-03 12:00 UTC): HyperPod cannot use it until it is Active"
    )
    pending = ask(plan(Status="Pending", StartTime=None))
    assert pending.answer == "p5-plan is Pending: HyperPod cannot use it until it is Active"


@pytest.mark.parametrize("targets", [["training-job"], None])
def test_a_plan_not_for_hyperpod_fails(targets: list[str] | None) -> None:
    found = ask(plan(TargetResources=targets))
    assert found.status is Status.FAILED and found.answer == f"p5-plan targets {targets}, not hyperpod-cluster"


def test_a_plan_reserving_another_type_fails_naming_the_group() -> None:
    found = ask(plan(ReservedCapacitySummaries=[reserved("ml.p4d.24xlarge"), reserved("ml.p5en.48xlarge")]))
    assert found.status is Status.FAILED
    assert found.answer == "group workers runs ml.p5.48xlarge, the plan reserves ml.p4d.24xlarge, ml.p5en.48xlarge"
    on_demand_elsewhere = ask(plan(ReservedCapacitySummaries=[reserved("ml.p5.48xlarge")]), on_plan(WORKERS, SPARE))
    assert on_demand_elsewhere.status is Status.PASSED  # the on-demand group's type is not the plan's business


@pytest.mark.parametrize("code", ["ResourceNotFound", "ValidationException"])
def test_a_plan_sagemaker_does_not_know_fails(code: str) -> None:
    client, stub = h.stubbed("sagemaker", "us-east-1")
    stub.add_client_error("describe_training_plan", code, http_status_code=400)
    found = sagemaker.training_plan_check(context(on_plan(), client), PLAN)
    assert found.status is Status.FAILED and found.action == "fix the plan or the groups"
    assert (
        found.answer
        == f"sagemaker.hyperpod.training_plan_arn = {PLAN}: no such training plan in this account and region"
    )


def test_a_sagemaker_error_other_than_not_found_is_not_read_as_a_missing_plan() -> None:
    client, stub = h.stubbed("sagemaker", "us-east-1")
    stub.add_client_error("describe_training_plan", "InternalFailure", http_status_code=500)
    with pytest.raises(ClientError, match="InternalFailure"):
        sagemaker.training_plan_check(context(on_plan(), client), PLAN)
    client, stub = h.stubbed("sagemaker", "us-east-1")
    stub.add_client_error("describe_training_plan", "AccessDeniedException", http_status_code=400)
    denied = sagemaker.training_plan_check(context(on_plan(), client), PLAN)
    assert (denied.id, denied.status, denied.key) == (
        "sagemaker.training-plan",
        Status.ERROR,
        "sagemaker.hyperpod.training_plan_arn",
    )


# ------------------------------------------------------------------------------------------------ the family


def test_a_stack_without_hyperpod_asks_nothing() -> None:
    assert sagemaker.checks(context(stack_config("dev"))) == []


def test_a_disabled_hyperpod_keeping_its_training_plan_asks_nothing() -> None:
    def edit(c: dict[str, Any]) -> None:
        c["sagemaker"] = {"hyperpod": {"enabled": False, "training_plan_arn": PLAN, "instance_groups": [WORKERS]}}

    client, _ = h.stubbed("sagemaker", "us-east-1")  # no answers: any call fails the test
    assert sagemaker.checks(context(edited_config("dev", edit), client)) == []


def test_hyperpod_on_eks_has_its_version_checked_and_its_plan_only_when_named() -> None:
    assert [c.id for c in sagemaker.checks(context(stack_config("staging")))] == ["sagemaker.hyperpod-kubernetes"]
    client, stub = h.stubbed("sagemaker", "us-east-1")
    stub.add_response("describe_training_plan", plan())
    checks = sagemaker.checks(context(on_plan(), client))
    assert [c.id for c in checks] == ["sagemaker.hyperpod-kubernetes", "sagemaker.training-plan"]


def test_hyperpod_on_slurm_has_no_kubernetes_version_to_check() -> None:
    client, stub = h.stubbed("sagemaker", "us-east-1")
    stub.add_response("describe_training_plan", plan())
    [found] = sagemaker.checks(context(on_plan(WORKERS, orchestrator="slurm"), client))
    assert (found.id, found.status) == ("sagemaker.training-plan", Status.PASSED)

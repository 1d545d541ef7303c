"""The account checks the program makes during a real preview or up (components/account_checks.py), under the mock
engine with answers of a chosen account: which invokes it makes and with what arguments, and that a failing answer
stops the program with preflight's line (stacks/account_rules.py) before anything else is registered."""

from __future__ import annotations

import datetime
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pytest

from components.account_checks import ODCR_NOT_ASKED, check_account
from components.providers import aws_provider
from stacks.account_rules import (
    AUTOSCALING_ROLE_NAME,
    AUTOSCALING_ROLE_PATH,
    NOT_CHECKED_OFFLINE,
    Reservation,
    autoscaling_role_problem,
    caller_admin_problem,
    eks_version_problem,
    offering_problem,
    principal_problem,
    principals,
    quota_demands,
    quota_problem,
    reservation_problems,
    stack_accounts,
)
from stacks.schema import StackConfig
from tests.conftest import edited_config, stack_config
from trainstack import engine
from trainstack.engine import Recording
from trainstack.mocks import QUOTA_NAMES, TrainstackMocks

IDENTITY = "aws:index/getCallerIdentity:getCallerIdentity"
ROLES = "aws:iam/getRoles:getRoles"
OFFERINGS = "aws:ec2/getInstanceTypeOfferings:getInstanceTypeOfferings"
QUOTA = "aws:servicequotas/getServiceQuota:getServiceQuota"
BLOCK = "aws:ec2/getCapacityBlockReservation:getCapacityBlockReservation"
VERSIONS = "aws:eks/getClusterVersions:getClusterVersions"
INSTANCES = "aws:ec2/getInstances:getInstances"
BLOCK_ID = "cr-0123456789abcdef0"
Answer = Callable[[dict[str, Any]], "dict[str, Any] | str"]  # a result, or the provider's failure reason


def on_a_capacity_block(raw: dict[str, Any]) -> None:
    raw["gpu_node_groups"][0]["capacity"] = {
        "type": "capacity_block",
        "reservation_id": BLOCK_ID,
        "reservation_availability_zone": "us-east-1a",
    }


PROD_BLOCK = edited_config("prod", on_a_capacity_block)


def matching(stack: StackConfig) -> dict[str, Answer]:
    """What an account that can take `cluster` answers, in pulumi-aws's shapes."""
    account = stack_accounts(stack)[0]
    admin = stack.eks.admin_role_arns[0].rsplit("/", 1)[-1]
    named = [arn for _, arn in principals(stack)]
    autoscaling = f"arn:aws:iam::{account}:role{AUTOSCALING_ROLE_PATH}{AUTOSCALING_ROLE_NAME}"
    group = stack.gpu_node_groups[0]
    return {
        IDENTITY: lambda a: {
            "accountId": account,
            "arn": f"arn:aws:sts::{account}:assumed-role/{admin}/deploy",
            "userId": "AROAEXAMPLE:deploy",
            "id": account,
        },
        ROLES: lambda a: {"arns": [*(n for n in named if ":role/" in n), autoscaling], "names": [], "id": "aws"},
        OFFERINGS: lambda a: {"locations": ["us-east-1a", "us-east-1b", "us-east-1c"], "id": stack.region},
        QUOTA: lambda a: {"quotaName": QUOTA_NAMES[a["quotaCode"]], "value": 4096.0, "id": a["quotaCode"]},
        BLOCK: lambda a: {
            "id": a["id"],
            "instanceType": group.instance_type,
            "availabilityZone": group.availability_zone,
            "state": "active",
            "reservationType": "capacity-block",
            "instanceCount": group.max_size,
            "availableInstanceCount": group.max_size,
            "tenancy": "default",
            "instancePlatform": "Linux/UNIX",
            "startDate": "2026-12-01T11:30:00Z",
            "endDate": "2026-12-29T11:30:00Z",
        },
        INSTANCES: lambda a: {"ids": [], "id": stack.region},
        VERSIONS: lambda a: {
            "clusterVersions": [
                {"clusterVersion": v, "versionStatus": "STANDARD_SUPPORT"} for v in a["clusterVersionsOnlies"]
            ],
            "id": stack.region,
        },
    }


@dataclass
class Asked:
    """Every account-check invoke the program made: (token, arguments, provider reference)."""

    calls: list[tuple[str, dict[str, Any], str]] = field(default_factory=list)

    def args(self, token: str) -> list[dict[str, Any]]:
        return [args for asked, args, _ in self.calls if asked == token]


def run_checks(
    monkeypatch: pytest.MonkeyPatch,
    stack: StackConfig,
    answers: dict[str, Answer],
    *,
    judge: bool = True,
    preview: bool = False,
) -> tuple[Recording, Asked]:
    asked = Asked()

    class Account(TrainstackMocks):
        def call(self, args: pulumi.runtime.MockCallArgs) -> tuple[dict[str, Any], list[tuple[str, str]]]:
            asked.calls.append((args.token, dict(args.args), args.provider or ""))
            answer = answers[args.token](dict(args.args))
            return ({}, [("", answer)]) if isinstance(answer, str) else (answer, [])

    monkeypatch.setattr(engine, "TrainstackMocks", Account)

    def program() -> None:
        provider = aws_provider("aws", stack.region, {})
        pulumi.export("account_checks", check_account(stack, provider, judge=judge))

    return engine.run(program, stack="test", region=stack.region, preview=preview), asked


def failing(monkeypatch: pytest.MonkeyPatch, stack: StackConfig, broken: dict[str, Answer]) -> str:
    """The RunError's message when `broken` replaces some of a matching account's answers."""
    answers = matching(stack) | broken
    with pytest.raises(pulumi.RunError) as refused:
        run_checks(monkeypatch, stack, answers)
    return str(refused.value)


def test_a_matching_account_passes_and_each_invoke_asks_the_stacks_own_values(monkeypatch: pytest.MonkeyPatch) -> None:
    recording, asked = run_checks(monkeypatch, PROD_BLOCK, matching(PROD_BLOCK))
    assert set(recording.outputs["account_checks"].values()) == {"passed"}
    assert set(recording.outputs["account_checks"]) >= {
        "identity.account",
        "identity.caller-is-admin",
        "identity.principal.eks.admin_role_arns[0]",
        "identity.autoscaling-role",
        "compute.offering.p5-train",
        "compute.offering.system",
        "compute.reservation.p5-train",
        "eks.version",
    }
    assert [token for token, _, _ in asked.calls] == [IDENTITY, ROLES, OFFERINGS, OFFERINGS, BLOCK, INSTANCES, VERSIONS]
    offered = [a["filters"] for a in asked.args(OFFERINGS)]
    assert offered == [
        [{"name": "instance-type", "values": ["p5.48xlarge"]}],
        [{"name": "instance-type", "values": [PROD_BLOCK.eks.system_node_group.instance_type]}],
    ]
    assert {a["locationType"] for a in asked.args(OFFERINGS)} == {"availability-zone"}
    assert asked.args(BLOCK) == [{"id": BLOCK_ID}]
    assert asked.args(INSTANCES) == [
        {
            "instanceTags": {"eks:cluster-name": PROD_BLOCK.name},
            "instanceStateNames": ["pending", "running"],
            "filters": [{"name": "capacity-reservation-id", "values": [BLOCK_ID]}],
        }
    ]
    assert asked.args(VERSIONS) == [{"clusterVersionsOnlies": [PROD_BLOCK.eks.version]}]
    # Every invoke goes through the stack's provider (its region), never a default provider.
    assert {provider.split("::")[3] for _, _, provider in asked.calls} == {"aws"}


def test_the_accelerator_quota_is_asked_by_its_code_and_judged_at_max_size(monkeypatch: pytest.MonkeyPatch) -> None:
    staging = stack_config("staging")
    recording, asked = run_checks(monkeypatch, staging, matching(staging))
    assert asked.args(QUOTA) == [{"serviceCode": "ec2", "quotaCode": "L-417A185B"}]
    assert recording.outputs["account_checks"]["compute.quota.p"] == "passed"
    demand = quota_demands(staging, None)[("P", False)]
    short = failing(monkeypatch, staging, {QUOTA: lambda a: {"quotaName": QUOTA_NAMES[a["quotaCode"]], "value": 0.0}})
    assert quota_problem("Running On-Demand P instances", "L-417A185B", 0.0, demand, None) in short
    assert "1 problem(s)" in short


def test_a_type_not_offered_in_the_groups_az_fails_with_preflights_line(monkeypatch: pytest.MonkeyPatch) -> None:
    message = failing(monkeypatch, PROD_BLOCK, {OFFERINGS: lambda a: {"locations": ["us-east-1c"], "id": "x"}})
    group = "gpu_node_groups[0].availability_zone"
    assert offering_problem(group, "p5.48xlarge", "us-east-1a", ["us-east-1c"]) in message
    system = PROD_BLOCK.eks.system_node_group.instance_type
    for az in ("us-east-1a", "us-east-1b"):
        assert str(offering_problem("eks.system_node_group.instance_type", system, az, ["us-east-1c"])) in message


def test_missing_principals_and_the_autoscaling_role_each_fail(monkeypatch: pytest.MonkeyPatch) -> None:
    message = failing(monkeypatch, PROD_BLOCK, {ROLES: lambda a: {"arns": [], "names": [], "id": "aws"}})
    first_key: dict[str, str] = {}
    for key, arn in principals(PROD_BLOCK):
        first_key.setdefault(arn, key)  # a principal named twice is reported once, at its first key (as preflight)
    assert len(first_key) < len(list(principals(PROD_BLOCK)))
    for arn, key in first_key.items():
        assert str(principal_problem(key, arn, None)) in message
    assert f"{len(first_key) + 1} problem(s)" in message
    assert str(autoscaling_role_problem(False)) in message


def test_a_capacity_block_is_judged_by_what_ec2_says(monkeypatch: pytest.MonkeyPatch) -> None:
    active = matching(PROD_BLOCK)[BLOCK]({"id": BLOCK_ID})
    assert isinstance(active, dict)
    scheduled = failing(monkeypatch, PROD_BLOCK, {BLOCK: lambda a: {**active, "state": "scheduled"}})
    found = Reservation(
        BLOCK_ID,
        "p5.48xlarge",
        "us-east-1a",
        "scheduled",
        "capacity-block",
        16,
        16,
        "default",
        "Linux/UNIX",
        datetime.datetime(2026, 12, 1, 11, 30, tzinfo=datetime.UTC),
        datetime.datetime(2026, 12, 29, 11, 30, tzinfo=datetime.UTC),
        None,
    )
    expected = reservation_problems(
        "gpu_node_groups[0].capacity", "p5.48xlarge", "us-east-1a", True, None, 16, found, BLOCK_ID
    )
    assert expected and all(p in scheduled for p in expected)
    assert "is scheduled (starts 2026-12-01 11:30 UTC)" in scheduled
    # The provider's own answer for an id EC2 does not know.
    missing = failing(monkeypatch, PROD_BLOCK, {BLOCK: lambda a: "InvalidCapacityReservationId.NotFound: no such id"})
    assert reservation_problems("gpu_node_groups[0].capacity", "", "", True, None, 16, None, BLOCK_ID)[0] in missing


def test_on_day_2_the_stacks_own_nodes_in_the_block_count_as_the_groups(monkeypatch: pytest.MonkeyPatch) -> None:
    active = matching(PROD_BLOCK)[BLOCK]({"id": BLOCK_ID})
    assert isinstance(active, dict)
    full = {BLOCK: lambda a: {**active, "availableInstanceCount": 0}}
    ours = {INSTANCES: lambda a: {"ids": [f"i-{n:017x}" for n in range(16)], "id": "x"}}
    recording, _ = run_checks(monkeypatch, PROD_BLOCK, matching(PROD_BLOCK) | full | ours)
    assert recording.outputs["account_checks"]["compute.reservation.p5-train"] == "passed"
    assert "has 0 of 16 instances free, the group starts 16" in failing(monkeypatch, PROD_BLOCK, full)


def test_an_on_demand_capacity_reservation_is_left_to_preflight(monkeypatch: pytest.MonkeyPatch) -> None:
    prod = stack_config("prod")
    recording, asked = run_checks(monkeypatch, prod, matching(prod))
    assert recording.outputs["account_checks"]["compute.reservation.p5-train"] == ODCR_NOT_ASKED
    assert asked.args(BLOCK) == []


def test_a_version_eks_does_not_create_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    unsupported = {"clusterVersions": [{"clusterVersion": PROD_BLOCK.eks.version, "versionStatus": "UNSUPPORTED"}]}
    message = failing(monkeypatch, PROD_BLOCK, {VERSIONS: lambda a: unsupported})
    assert str(eks_version_problem(PROD_BLOCK.eks.version, "us-east-1", "UNSUPPORTED")) in message
    unlisted = failing(monkeypatch, PROD_BLOCK, {VERSIONS: lambda a: {"clusterVersions": []}})
    assert "(not listed)" in unlisted


def test_the_wrong_account_stops_before_anything_else_is_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    other = {"accountId": "777788889999", "arn": "arn:aws:sts::777788889999:assumed-role/x/y", "id": "x"}
    answers = matching(PROD_BLOCK) | {IDENTITY: lambda a: other}
    with pytest.raises(pulumi.RunError, match=r"1 problem\(s\).*\n  - the credentials are for account 777788889999"):
        run_checks(monkeypatch, PROD_BLOCK, answers)


def test_a_caller_outside_the_admin_roles_fails_up_but_only_warns_a_preview(monkeypatch: pytest.MonkeyPatch) -> None:
    account = stack_accounts(PROD_BLOCK)[0]
    reader = {"accountId": account, "arn": f"arn:aws:sts::{account}:assumed-role/ci-preview/run", "id": account}
    answers = matching(PROD_BLOCK) | {IDENTITY: lambda a: reader}
    with pytest.raises(pulumi.RunError) as refused:
        run_checks(monkeypatch, PROD_BLOCK, answers)
    assert str(caller_admin_problem(reader["arn"], PROD_BLOCK.eks.admin_role_arns)) in str(refused.value)
    recording, _ = run_checks(monkeypatch, PROD_BLOCK, answers, preview=True)
    assert recording.outputs["account_checks"]["identity.caller-is-admin"] == "warning"


def test_a_check_that_cannot_be_asked_is_not_checked_and_the_others_go_on(monkeypatch: pytest.MonkeyPatch) -> None:
    denied = "AccessDeniedException: User is not authorized to perform: servicequotas:GetServiceQuota"
    staging = stack_config("staging")
    recording, _ = run_checks(monkeypatch, staging, matching(staging) | {QUOTA: lambda a: denied})
    statuses = recording.outputs["account_checks"]
    assert statuses["compute.quota.p"].startswith("not checked: invoke of " + QUOTA + " failed: " + denied)
    assert statuses["eks.version"] == "passed"
    # A quota table entry that names another quota here is not judged either.
    renamed = {QUOTA: lambda a: {"quotaName": "Running Dedicated p5 Hosts", "value": 0.0}}
    recording, _ = run_checks(monkeypatch, staging, matching(staging) | renamed)
    assert "is 'Running Dedicated p5 Hosts' in this account" in recording.outputs["account_checks"]["compute.quota.p"]


def test_under_the_offline_plan_the_invokes_are_made_and_nothing_is_judged(monkeypatch: pytest.MonkeyPatch) -> None:
    empty = matching(PROD_BLOCK) | {ROLES: lambda a: {"arns": []}, QUOTA: lambda a: {"value": 0.0}}
    recording, asked = run_checks(monkeypatch, PROD_BLOCK, empty, judge=False)
    assert set(recording.outputs["account_checks"].values()) == {NOT_CHECKED_OFFLINE}
    assert [token for token, _, _ in asked.calls] == [IDENTITY, ROLES, OFFERINGS, OFFERINGS, BLOCK, INSTANCES, VERSIONS]


def test_the_offline_mocks_answer_every_account_check(monkeypatch: pytest.MonkeyPatch) -> None:
    """The real mocks (no account): every invoke answered in the provider's shape, every check not checked."""

    def program() -> None:
        provider = aws_provider("aws", PROD_BLOCK.region, {})
        pulumi.export("account_checks", check_account(PROD_BLOCK, provider, judge=False))

    recording = engine.run(program, stack="test", region=PROD_BLOCK.region)
    assert set(recording.outputs["account_checks"].values()) == {NOT_CHECKED_OFFLINE}


def test_under_the_offline_plan_a_failed_invoke_is_a_gap_in_the_mocks_and_fails(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    broken = matching(PROD_BLOCK) | {VERSIONS: lambda a: "no answer for this data source"}
    with pytest.raises(Exception, match=r"invoke of aws:eks/getClusterVersions:getClusterVersions failed"):
        run_checks(monkeypatch, PROD_BLOCK, broken, judge=False)

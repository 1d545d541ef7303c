"""Preflight's identity checks one at a time, against IAM answers from botocore's Stubber (each request and answer
held to IAM's service model), no emulator: the account, the caller, each principal and the Auto Scaling role."""

from __future__ import annotations

import datetime
from typing import Any

import pytest
from botocore.exceptions import ClientError

from stacks.account_rules import AUTOSCALING_ROLE_NAME, AUTOSCALING_ROLE_PATH, CREATE_AUTOSCALING_ROLE, account_of
from stacks.schema import StackConfig
from tests.conftest import edited_config, stack_config
from tests.preflight import helpers as h
from trainstack.preflight import identity
from trainstack.preflight.aws import Account
from trainstack.preflight.context import Context
from trainstack.preflight.model import Status

pytestmark = pytest.mark.usefixtures("aws_env")

ADMIN = "arn:aws:iam::111122223333:role/ml-platform-admin"
ADMIN_SESSION = "arn:aws:sts::111122223333:assumed-role/ml-platform-admin/preflight"


def context(stack: StackConfig, iam: Any = None, caller: str = ADMIN_SESSION) -> Context:
    overrides = {} if iam is None else {(identity.FAMILY, "iam"): iam}
    account = Account(stack.region, session=h.session(), overrides=overrides)
    return Context(stack, "dev", account, str(account_of(caller)), caller, None, h.NOW)


def role(arn: str) -> dict[str, Any]:
    """GetRole's answer (IAM API Reference, Role): the path is the ARN's between `role/` and the name."""
    resource = arn.split(":role/", 1)[1]
    return {
        "Role": {
            "Path": "/" + resource.rpartition("/")[0] + "/" if "/" in resource else "/",
            "RoleName": arn.rsplit("/", 1)[-1],
            "RoleId": "AROAEXAMPLEROLEID0001",
            "Arn": arn,
            "CreateDate": datetime.datetime(2026, 1, 5, tzinfo=datetime.UTC),
        }
    }


def one_principal(arn: str = ADMIN) -> StackConfig:
    """dev with `arn` as its one admin and nobody else named."""
    return edited_config("dev", lambda c: c["eks"].update(admin_role_arns=[arn]))


# ------------------------------------------------------------------------------------------ account and caller


def test_credentials_for_the_stacks_account_pass_and_say_which() -> None:
    found = identity.account_check(context(stack_config("dev")))
    assert found.status is Status.PASSED and found.action == ""
    assert found.answer == "account 111122223333, as eks.admin_role_arns names"
    assert found.key == "eks.admin_role_arns" and found.asked == "sts:GetCallerIdentity"


def test_credentials_for_another_account_fail_naming_the_stacks_account() -> None:
    found = identity.account_check(context(stack_config("dev"), caller="arn:aws:sts::777788889999:assumed-role/x/y"))
    assert found.status is Status.FAILED
    assert "777788889999" in found.answer and found.action == "use credentials for account 111122223333"


def test_an_admin_role_session_is_the_caller_an_admin_needs() -> None:
    found = identity.caller_check(context(stack_config("dev")))
    assert found.status is Status.PASSED and found.action == ""
    assert found.answer == f"{ADMIN_SESSION} is one of eks.admin_role_arns"


def test_a_caller_outside_the_admin_roles_fails_with_what_to_assume() -> None:
    other = "arn:aws:sts::111122223333:assumed-role/ci-readonly/preflight"
    found = identity.caller_check(context(stack_config("dev"), caller=other))
    assert found.status is Status.FAILED and "ci-readonly" in found.answer
    assert found.action == "assume one of eks.admin_role_arns before `pulumi up`"


# ------------------------------------------------------------------------------------------------ principals


def test_a_principal_that_exists_under_its_arn_passes() -> None:
    iam, stub = h.stubbed("iam", "us-east-1")
    stub.add_response("get_role", role(ADMIN), {"RoleName": "ml-platform-admin"})
    [found] = identity.principal_checks(context(one_principal(), iam))
    assert (found.id, found.status, found.action) == ("identity.principal.eks.admin_role_arns[0]", Status.PASSED, "")
    assert found.asked == "iam:GetRole ml-platform-admin" and found.answer == f"{ADMIN} exists"
    assert found.key == "eks.admin_role_arns[0]" and found.title == "eks.admin_role_arns[0] exists"
    stub.assert_no_pending_responses()


def test_a_role_under_a_path_is_asked_by_its_name_and_passes_only_at_that_path() -> None:
    arn = "arn:aws:iam::111122223333:role/ops:east/platform/admin"  # IAM paths may hold any printable ASCII, ':' too
    iam, stub = h.stubbed("iam", "us-east-1")
    stub.add_response("get_role", role(arn), {"RoleName": "admin"})
    stub.add_response("get_role", role("arn:aws:iam::111122223333:role/admin"), {"RoleName": "admin"})
    ctx = context(one_principal(arn), iam)
    assert identity.principal_checks(ctx)[0].status is Status.PASSED
    moved = identity.principal_checks(ctx)[0]
    assert moved.status is Status.FAILED and "arn:aws:iam::111122223333:role/admin" in moved.answer
    assert moved.action == "create the principal or correct the ARN in the stack file"


def test_a_missing_principal_fails_with_what_to_do() -> None:
    iam, stub = h.stubbed("iam", "us-east-1")
    stub.add_client_error("get_role", "NoSuchEntity", "The role with name ml-platform-admin cannot be found.", 404)
    [found] = identity.principal_checks(context(one_principal(), iam))
    assert found.status is Status.FAILED and "no such principal in account 111122223333" in found.answer
    assert found.action == "create the principal or correct the ARN in the stack file"


def test_an_iam_user_is_looked_up_as_a_user() -> None:
    arn = "arn:aws:iam::111122223333:user/people/alice"
    iam, stub = h.stubbed("iam", "us-east-1")
    user = {"Path": "/people/", "UserName": "alice", "UserId": "AIDAEXAMPLEUSERID001", "Arn": arn}
    stub.add_response("get_user", {"User": {**user, "CreateDate": h.NOW}}, {"UserName": "alice"})
    stub.add_client_error("get_user", "NoSuchEntity", http_status_code=404, expected_params={"UserName": "alice"})
    ctx = context(stack_config("dev"), iam)
    assert identity._find(ctx, arn) == arn
    assert identity._find(ctx, arn) is None


def test_an_iam_error_other_than_no_such_entity_is_not_read_as_missing() -> None:
    iam, stub = h.stubbed("iam", "us-east-1")
    stub.add_client_error("get_role", "ServiceFailure", "Internal failure", 500)
    with pytest.raises(ClientError, match="ServiceFailure"):
        identity._find(context(stack_config("dev"), iam), ADMIN)


def test_a_principal_preflight_may_not_read_is_an_error_and_the_next_is_still_asked() -> None:
    stack = edited_config(
        "dev", lambda c: c["eks"].update(admin_role_arns=[ADMIN, "arn:aws:iam::111122223333:role/breakglass"])
    )
    iam, stub = h.stubbed("iam", "us-east-1")
    stub.add_client_error("get_role", "AccessDenied", "not authorized", 403, {"RoleName": "ml-platform-admin"})
    stub.add_response("get_role", role("arn:aws:iam::111122223333:role/breakglass"), {"RoleName": "breakglass"})
    denied, second = identity.principal_checks(context(stack, iam))
    assert denied.status is Status.ERROR and "iam:GetRole was denied" in denied.answer
    assert denied.key == "eks.admin_role_arns[0]" and denied.asked == "iam:GetRole ml-platform-admin"
    assert second.status is Status.PASSED


def test_a_principal_in_another_account_is_skipped_without_asking() -> None:
    elsewhere = "arn:aws:iam::999988887777:role/security-admins"
    stack = edited_config("dev", lambda c: c.setdefault("security", {}).update(key_administrator_arns=[elsewhere]))
    iam, stub = h.stubbed("iam", "us-east-1")
    stub.add_response("get_role", role(ADMIN), {"RoleName": "ml-platform-admin"})
    checks = identity.principal_checks(context(stack, iam))  # the stubber answers once: a second ask would fail
    assert [c.id for c in checks] == [
        "identity.principal.eks.admin_role_arns[0]",
        "identity.principal.security.key_administrator_arns[0]",
    ]
    skipped = checks[1]
    assert skipped.status is Status.SKIPPED and skipped.asked == "(not asked)"
    assert "is in account 999988887777" in skipped.answer and skipped.key == "security.key_administrator_arns[0]"
    assert skipped.title == "security.key_administrator_arns[0] exists"


def test_a_principal_named_twice_is_asked_once_at_its_first_key() -> None:
    breakglass = "arn:aws:iam::111122223333:role/breakglass"

    def edit(c: dict[str, Any]) -> None:
        c["eks"].update(admin_role_arns=[ADMIN, breakglass])
        c.setdefault("security", {}).update(key_administrator_arns=[breakglass, ADMIN])

    iam, stub = h.stubbed("iam", "us-east-1")
    stub.add_response("get_role", role(ADMIN), {"RoleName": "ml-platform-admin"})
    stub.add_response("get_role", role(breakglass), {"RoleName": "breakglass"})
    checks = identity.principal_checks(context(edited_config("dev", edit), iam))
    assert [c.key for c in checks] == ["eks.admin_role_arns[0]", "eks.admin_role_arns[1]"]
    stub.assert_no_pending_responses()


# ----------------------------------------------------------------------------------------- Auto Scaling role


def _autoscaling_role(path: str = AUTOSCALING_ROLE_PATH) -> dict[str, Any]:
    return role(f"arn:aws:iam::111122223333:role{path}{AUTOSCALING_ROLE_NAME}")


def test_the_autoscaling_service_linked_role_passes() -> None:
    iam, stub = h.stubbed("iam", "us-east-1")
    stub.add_response("get_role", _autoscaling_role(), {"RoleName": AUTOSCALING_ROLE_NAME})
    found = identity.autoscaling_role_check(context(stack_config("dev"), iam))
    assert (found.id, found.status, found.action) == ("identity.autoscaling-role", Status.PASSED, "")
    assert found.answer == f"{AUTOSCALING_ROLE_PATH}{AUTOSCALING_ROLE_NAME} exists"
    assert found.asked == f"iam:GetRole {AUTOSCALING_ROLE_NAME}"


def test_a_role_of_that_name_outside_the_service_path_is_not_the_service_linked_role() -> None:
    iam, stub = h.stubbed("iam", "us-east-1")
    stub.add_response("get_role", _autoscaling_role("/"))
    found = identity.autoscaling_role_check(context(stack_config("dev"), iam))
    assert found.status is Status.FAILED and found.action == CREATE_AUTOSCALING_ROLE


def test_no_autoscaling_role_fails_with_the_command_that_creates_it() -> None:
    iam, stub = h.stubbed("iam", "us-east-1")
    stub.add_client_error("get_role", "NoSuchEntity", http_status_code=404)
    found = identity.autoscaling_role_check(context(stack_config("dev"), iam))
    assert found.status is Status.FAILED and found.action == CREATE_AUTOSCALING_ROLE
    assert AUTOSCALING_ROLE_NAME in found.answer


def test_an_autoscaling_role_iam_cannot_look_up_is_not_called_missing() -> None:
    iam, stub = h.stubbed("iam", "us-east-1")
    stub.add_client_error("get_role", "ServiceFailure", http_status_code=500)
    with pytest.raises(ClientError, match="ServiceFailure"):
        identity.autoscaling_role_check(context(stack_config("dev"), iam))
    iam, stub = h.stubbed("iam", "us-east-1")
    stub.add_client_error("get_role", "AccessDenied", http_status_code=403)
    denied = identity.autoscaling_role_check(context(stack_config("dev"), iam))
    assert denied.status is Status.ERROR and denied.id == "identity.autoscaling-role"


# ----------------------------------------------------------------------------------------------------- order


def test_the_account_and_caller_come_first_and_the_autoscaling_role_last() -> None:
    iam, stub = h.stubbed("iam", "us-east-1")
    stub.add_response("get_role", role(ADMIN), {"RoleName": "ml-platform-admin"})
    stub.add_response("get_role", _autoscaling_role(), {"RoleName": AUTOSCALING_ROLE_NAME})
    checks = identity.checks(context(one_principal(), iam))
    assert [c.id for c in checks] == [
        "identity.account",
        "identity.caller-is-admin",
        "identity.principal.eks.admin_role_arns[0]",
        "identity.autoscaling-role",
    ]
    assert {c.family for c in checks} == {"identity"}
    assert all(c.status is Status.PASSED for c in checks)

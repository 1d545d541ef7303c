"""Who is asking, and whether every principal the stack names exists (STS, IAM).

- the credentials are for the stack's account (the account of eks.admin_role_arns);
- the caller is one of eks.admin_role_arns (else the first Kubernetes resource fails Unauthorized);
- every role or user ARN the stack names exists in the account under exactly that ARN (access entries, key and
  bucket policies refuse a missing principal);
- the EC2 Auto Scaling service-linked role exists (the node-volume key policy names it).
"""

from __future__ import annotations

from botocore.exceptions import ClientError

from stacks.account_rules import (
    AUTOSCALING_ROLE_NAME,
    AUTOSCALING_ROLE_PATH,
    CREATE_AUTOSCALING_ROLE,
    account_of,
    account_problem,
    autoscaling_role_problem,
    caller_admin_problem,
    principal_problem,
    principals,
    stack_accounts,
)
from trainstack.preflight.aws import error_code
from trainstack.preflight.context import Context, attempt, verdict
from trainstack.preflight.model import Check, Status

FAMILY = "identity"


def account_check(ctx: Context) -> Check:
    expected = stack_accounts(ctx.stack)
    problem = account_problem(ctx.caller_account, expected)
    return Check(
        id="identity.account",
        family=FAMILY,
        title="the credentials are for the stack's account",
        status=verdict(problem),
        asked="sts:GetCallerIdentity",
        answer=problem or f"account {ctx.caller_account}, as eks.admin_role_arns names",
        action="" if problem is None else f"use credentials for account {', '.join(expected)}",
        key="eks.admin_role_arns",
    )


def caller_check(ctx: Context) -> Check:
    problem = caller_admin_problem(ctx.caller_arn, ctx.stack.eks.admin_role_arns)
    return Check(
        id="identity.caller-is-admin",
        family=FAMILY,
        title="the caller is one of eks.admin_role_arns",
        status=verdict(problem),
        asked="sts:GetCallerIdentity",
        answer=problem or f"{ctx.caller_arn} is one of eks.admin_role_arns",
        action="" if problem is None else "assume one of eks.admin_role_arns before `pulumi up`",
        key="eks.admin_role_arns",
    )


def _find(ctx: Context, arn: str) -> str | None:
    """The ARN IAM knows the principal by, or None when it does not exist."""
    kind, _, rest = arn.split(":", 5)[5].partition("/")
    name = rest.rsplit("/", 1)[-1]
    operation, param, field = ("GetRole", "RoleName", "Role") if kind == "role" else ("GetUser", "UserName", "User")
    try:
        found = ctx.ask(FAMILY, "iam", operation, **{param: name})
    except ClientError as error:
        if error_code(error) == "NoSuchEntity":
            return None
        raise
    return str(found[field]["Arn"])


def principal_checks(ctx: Context) -> list[Check]:
    checks: list[Check] = []
    seen: set[str] = set()
    for key, arn in principals(ctx.stack):
        if arn in seen:
            continue
        seen.add(arn)
        kind = "role" if ":role/" in arn else "user"
        asked = f"iam:Get{kind.title()} {arn.rsplit('/', 1)[-1]}"
        title = f"{key} exists"
        if account_of(arn) != ctx.caller_account:
            checks.append(
                Check(
                    id=f"identity.principal.{key}",
                    family=FAMILY,
                    title=title,
                    status=Status.SKIPPED,
                    asked="(not asked)",
                    answer=f"{arn} is in account {account_of(arn)}; preflight reads only the caller's account",
                    key=key,
                )
            )
            continue

        def judge(key: str = key, arn: str = arn, asked: str = asked, title: str = title) -> Check:
            found = _find(ctx, arn)
            problem = principal_problem(key, arn, found)
            return Check(
                id=f"identity.principal.{key}",
                family=FAMILY,
                title=title,
                status=verdict(problem),
                asked=asked,
                answer=problem or f"{arn} exists",
                action="" if problem is None else "create the principal or correct the ARN in the stack file",
                key=key,
            )

        checks.append(attempt(FAMILY, f"identity.principal.{key}", title, key, asked, judge))
    return checks


def autoscaling_role_check(ctx: Context) -> Check:
    asked = f"iam:GetRole {AUTOSCALING_ROLE_NAME}"
    title = "the EC2 Auto Scaling service-linked role exists"

    def judge() -> Check:
        try:
            role = ctx.ask(FAMILY, "iam", "GetRole", RoleName=AUTOSCALING_ROLE_NAME)["Role"]
            found = role.get("Path") == AUTOSCALING_ROLE_PATH
        except ClientError as error:
            if error_code(error) != "NoSuchEntity":
                raise
            found = False
        problem = autoscaling_role_problem(found)
        return Check(
            id="identity.autoscaling-role",
            family=FAMILY,
            title=title,
            status=verdict(problem),
            asked=asked,
            answer=problem or f"{AUTOSCALING_ROLE_PATH}{AUTOSCALING_ROLE_NAME} exists",
            action="" if problem is None else CREATE_AUTOSCALING_ROLE,
        )

    return attempt(FAMILY, "identity.autoscaling-role", title, "", asked, judge)


def checks(ctx: Context) -> list[Check]:
    """The account and caller checks first; the rest only make sense in the right account (the runner skips
    every other family when the account is wrong)."""
    return [account_check(ctx), caller_check(ctx), *principal_checks(ctx), autoscaling_role_check(ctx)]

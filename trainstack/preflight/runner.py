"""Run every family of checks against one account, in order: identity first (who is asking decides the rest)."""

from __future__ import annotations

import datetime
from collections.abc import Callable
from pathlib import Path

from stacks.schema import StackConfig
from trainstack.preflight import compute, eks, identity, network, sagemaker, secrets
from trainstack.preflight.aws import Account, AskFailed, CannotAsk
from trainstack.preflight.context import Context
from trainstack.preflight.model import Check, Preflight, Status

# Families after identity, in the order a person fixes things: keys and network, then capacity, then versions.
FAMILIES: tuple[tuple[str, Callable[[Context], list[Check]]], ...] = (
    (secrets.FAMILY, secrets.checks),
    (network.FAMILY, network.checks),
    (compute.FAMILY, compute.checks),
    (eks.FAMILY, eks.checks),
    (sagemaker.FAMILY, sagemaker.checks),
)


def whoami(account: Account) -> tuple[str, str]:
    """(account, ARN) of the caller; CannotAsk when STS cannot answer (without it nothing else means anything)."""
    try:
        answer = account.ask(identity.FAMILY, "sts", "GetCallerIdentity")
    except AskFailed as error:
        raise CannotAsk(str(error)) from None
    return str(answer["Account"]), str(answer["Arn"])


def run(
    stack: StackConfig,
    stack_name: str,
    account: Account,
    stack_file: Path | None = None,
    now: datetime.datetime | None = None,
) -> Preflight:
    caller_account, caller_arn = whoami(account)
    ctx = Context(
        stack=stack,
        stack_name=stack_name,
        account=account,
        caller_account=caller_account,
        caller_arn=caller_arn,
        stack_file=stack_file,
        now=now or datetime.datetime.now(datetime.UTC),
    )
    checks = identity.checks(ctx)
    notes: list[str] = []
    if checks[0].status is Status.FAILED:  # the wrong account: everything else would only mislead
        notes.append("every other check was skipped: the credentials are for another account")
    else:
        for _family, family_checks in FAMILIES:
            checks.extend(family_checks(ctx))
    return Preflight(
        stack=stack_name,
        region=stack.region,
        account=caller_account,
        caller=caller_arn,
        checks=tuple(checks),
        notes=tuple(notes),
    )

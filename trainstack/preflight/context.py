"""What every family of checks is handed: the stack, the account's clients, the caller, the clock."""

from __future__ import annotations

import datetime
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stacks.schema import StackConfig
from trainstack.preflight.aws import Account, AskFailed
from trainstack.preflight.model import Check, Status


@dataclass(frozen=True)
class Context:
    stack: StackConfig
    stack_name: str
    account: Account
    caller_account: str
    caller_arn: str
    stack_file: Path | None
    now: datetime.datetime  # UTC; reservations and blocks are judged against it

    def ask(self, family: str, service: str, operation: str, **params: Any) -> Any:
        return self.account.ask(family, service, operation, **params)


def attempt(family: str, id_: str, title: str, key: str, asked: str, judge: Callable[[], Check]) -> Check:
    """`judge()`, or an `error` check saying why the account could not be asked."""
    try:
        return judge()
    except AskFailed as error:
        return Check(
            id=id_,
            family=family,
            title=title,
            status=Status.ERROR,
            asked=asked,
            answer=str(error),
            action="fix access and run preflight again; until then this is unchecked",
            key=key,
        )


def verdict(problem: str | None) -> Status:
    return Status.PASSED if problem is None else Status.FAILED

"""What preflight found: one `Check` per question asked of the account, and the `Preflight` they make up."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class Status(StrEnum):
    PASSED = "passed"  # the account holds what the stack needs
    FAILED = "failed"  # `pulumi up` would fail on it: fix the account or the stack file first
    WARNING = "warning"  # the deploy goes through, but something deserves a look (a block ending soon, ...)
    SKIPPED = "skipped"  # not asked: does not apply to this stack, or no API answers it, or the account is wrong
    ERROR = "error"  # could not be asked: access denied, throttled past the retries, the service unreachable


# Most serious first: the order of a report and of the summary line.
SEVERITY = (Status.FAILED, Status.ERROR, Status.WARNING, Status.PASSED, Status.SKIPPED)


@dataclass(frozen=True)
class Settles:
    """A risk the offline plan could only call unconfirmed, and what the account's answer made of it."""

    risk: str  # the plan's risk title, word for word (trainstack/model/verdict.py)
    outcome: str  # "confirmed" or "failed"


@dataclass(frozen=True)
class Check:
    """One question asked of the account: what was asked, what it answered, and what to do."""

    id: str  # stable: `<family>.<what>[.<which>]`, e.g. `compute.reservation.p5-train`
    family: str  # identity, secrets, network, compute, eks, sagemaker
    title: str
    status: Status
    asked: str  # the API calls, e.g. `ec2:DescribeCapacityReservations cr-0a1b...`
    answer: str  # what the account answered, in a line
    action: str = ""  # what to do (empty when nothing is to be done)
    key: str = ""  # the stack-file key it is about
    settles: Settles | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "family": self.family,
            "title": self.title,
            "status": self.status.value,
            "key": self.key,
            "asked": self.asked,
            "answer": self.answer,
            "action": self.action,
            "settles": None if self.settles is None else {"risk": self.settles.risk, "outcome": self.settles.outcome},
        }


@dataclass(frozen=True)
class Preflight:
    """Every check of one stack against one account, in the order they ran."""

    stack: str
    region: str
    account: str  # the caller's account ("" when it could not be read)
    caller: str  # the caller's ARN
    checks: tuple[Check, ...]
    notes: tuple[str, ...] = field(default=())

    def with_status(self, status: Status) -> tuple[Check, ...]:
        return tuple(c for c in self.checks if c.status is status)

    @property
    def counts(self) -> dict[str, int]:
        return {s.value: len(self.with_status(s)) for s in SEVERITY}

    @property
    def verdict(self) -> Status:
        """`failed` when a check failed, else `error` when one could not be asked, else `passed`."""
        for status in (Status.FAILED, Status.ERROR):
            if self.with_status(status):
                return status
        return Status.PASSED

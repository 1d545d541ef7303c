"""The account's state as the offline plan reports it: the checks the program makes through pulumi-aws during a real
`pulumi preview` or `up` (components/account_checks.py, exported as the `account_checks` stack output), none of
which the mock engine can answer, and the ones only `python -m trainstack preflight` makes."""

from __future__ import annotations

from stacks.account_rules import NOT_CHECKED_OFFLINE
from trainstack.engine import Recording

OUTPUT = "account_checks"


def lines(recording: Recording) -> list[str]:
    """What to tell a reviewer, one item a line (empty when the program made no checks)."""
    checks = recording.outputs.get(OUTPUT)
    if not isinstance(checks, dict) or not checks:
        return []
    offline = [str(check) for check, status in checks.items() if status == NOT_CHECKED_OFFLINE]
    others = [
        f"{check} ({str(status).removeprefix('not checked: ')})"
        for check, status in checks.items()
        if status != NOT_CHECKED_OFFLINE
    ]
    found = [
        f"{NOT_CHECKED_OFFLINE}: {len(offline)} checks pulumi-aws makes before `pulumi preview` or `up` creates "
        f"anything, and `trainstack preflight` makes now: {', '.join(offline)}"
    ]
    if others:
        found.append(f"preflight alone: {', '.join(others)}")
    return found

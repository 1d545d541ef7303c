"""The plan's Account state section: every check the program makes during a real preview or up
(components/account_checks.py) is shown as not checked (offline), since the mocks see no account, and the next steps
run preflight before `pulumi up`."""

from __future__ import annotations

import json

import pytest

from stacks.account_rules import NOT_CHECKED_OFFLINE
from tests.conftest import STACKS
from tests.report.helpers import report
from trainstack.report import json_report, markdown, text
from trainstack.report.account import OUTPUT, lines
from trainstack.report.fmt import Style

PLAIN = Style(color=False)


@pytest.mark.parametrize("stack", STACKS)
def test_every_account_check_is_not_checked_offline_and_none_passes(stack: str) -> None:
    checks = report(stack).recording.outputs[OUTPUT]
    assert {"identity.account", "identity.caller-is-admin", "compute.offering.system", "eks.version"} <= set(checks)
    assert "passed" not in checks.values() and "failed" not in checks.values()
    offline = [check for check, status in checks.items() if status == NOT_CHECKED_OFFLINE]
    shown = lines(report(stack).recording)
    assert shown[0].startswith(f"{NOT_CHECKED_OFFLINE}: {len(offline)} checks") and all(c in shown[0] for c in offline)
    # Only a check pulumi-aws cannot make at all is named apart, with why.
    assert len(shown) == (1 if len(offline) == len(checks) else 2)


def test_the_odcr_is_left_to_preflight_in_every_format() -> None:
    prod = report("prod")
    plain = text.render(prod, PLAIN, width=100)
    section = plain[plain.index("Account state") : plain.index("Next step")]
    assert "preflight alone: compute.reservation.p5-train (pulumi-aws has no data source for an On-Demand" in " ".join(
        section.split()
    )
    assert "trainstack preflight --stack prod\n" in plain[plain.index("Next step") :]
    comment = markdown.render(prod)
    assert "### Account state" in comment and "- preflight alone: compute.reservation.p5-train" in comment
    assert comment.index("trainstack preflight --stack prod") < comment.index("pulumi up --stack prod")
    root = json.loads(json_report.render(prod))["steps"][0]["newState"]
    assert root["outputs"][OUTPUT]["compute.offering.p5-train"] == NOT_CHECKED_OFFLINE

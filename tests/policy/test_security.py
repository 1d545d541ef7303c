"""Security rules at their edges, beyond the rule cases' "reports something" (tests/policy/test_rules.py): which
action a HyperPod execution role's missing deny leaves readable, a key policy that allows kms:* among other actions,
what counts as internet-wide egress, and which NoSquashNids entries the pack can count."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from policies.rules import BY_NAME
from policies.rules.security import _internet_wide, nid_addresses
from tests.policy.helpers import found, mutated, run, shipped
from tests.policy.test_rules import EXECUTION_INLINE, KEY, edit_policy
from trainstack.engine import Recording


def _findings(policy: str, source: Recording) -> list[str]:
    return [v.message for v in found(run(source, policies=[BY_NAME[policy]]), policy)]


def _without_statement(sid: str) -> Callable[[list[dict[str, Any]]], None]:
    def edit(statements: list[dict[str, Any]]) -> None:
        statements[:] = [s for s in statements if s.get("Sid") != sid]

    return edit


def _unconfined(action: str) -> str:
    return (
        f"hyperpod-execution-role: no inline deny of {action} outside its lifecycle bucket; "
        "AmazonSageMakerClusterInstanceRolePolicy lets it read any sagemaker-* bucket."
    )


@pytest.mark.parametrize(
    ("dropped", "readable"),
    [
        ("DenyReadOutsideLifecycle", ["s3:GetObject", "s3:GetObjectVersion"]),
        ("DenyListOtherBuckets", ["s3:ListBucket"]),
    ],
)
def test_a_deny_confines_only_the_actions_it_names(dropped: str, readable: list[str]) -> None:
    """A deny of ListBucket outside the lifecycle bucket does not keep GetObject there, nor the other way round."""
    source = mutated(shipped("staging"), EXECUTION_INLINE, edit_policy(_without_statement(dropped)))
    assert _findings("hyperpod-execution-role-confined", source) == [_unconfined(a) for a in readable]


def test_an_allow_of_kms_star_among_other_actions_mixes_administration_with_use() -> None:
    def allow(statements: list[dict[str, Any]]) -> None:
        statements[0].update(Effect="Allow", Action=["kms:Decrypt", "kms:*"])

    findings = _findings("kms-admin-separation", mutated(shipped("prod"), KEY, edit_policy(allow)))
    assert len(findings) == 1 and "allows kms:*: administration is not separated from use" in findings[0], findings


@pytest.mark.parametrize(
    ("cidr", "wide"),
    [
        ("0.0.0.0/0", True),
        ("0.0.0.0/7", True),
        ("10.0.0.0/8", False),  # the edge: a /8 is one network's, not most of the internet
        ("52.216.0.0/15", False),  # an S3 prefix
        ("10.0.0.0", False),  # no prefix length
        ("10.0.0.0/x", False),
        (None, False),
    ],
)
def test_internet_wide_is_a_block_of_slash_7_or_wider(cidr: object, wide: bool) -> None:
    assert _internet_wide(cidr) is wide


@pytest.mark.parametrize(
    "nid", ["10.0.1.5@o2ib", "10.0.1@tcp", "10.0.1.5.6@tcp", "10.0.x.5@tcp", "10.0.[2-x].1@tcp", "10.0.1.5"]
)
def test_a_nid_the_pack_cannot_read_counts_as_unknown(nid: str) -> None:
    """Only `<IPv4 address or ranges>@tcp` is counted (the schema refuses anything else, stacks/fsx_squash.py)."""
    assert nid_addresses(nid) is None

"""Example values: the shipped stacks use them so the offline plan runs anywhere; the offline plan lists
them as advisories and a real deployment refuses them, naming the key and what to put there."""

from __future__ import annotations

import pulumi
import pytest

from components import deploy_guard
from stacks.placeholders import _kind, find
from tests.conftest import STACKS, edited_config, stack_config
from trainstack.engine import run


@pytest.mark.parametrize("stack", STACKS)
def test_every_shipped_stack_carries_example_values_with_a_key_path(stack: str) -> None:
    found = find(stack_config(stack))
    assert {p.path for p in found} >= {"tags.owner", "eks.admin_role_arns[0]"}
    assert all(p.put and p.value for p in found)


def real_values(raw: dict) -> None:
    raw["tags"]["owner"] = "ml-platform@acme.io"
    raw["eks"]["admin_role_arns"] = ["arn:aws:iam::210987654321:role/ml-platform-admin"]
    if raw.get("security", {}).get("key_administrator_arns"):
        raw["security"]["key_administrator_arns"] = ["arn:aws:iam::210987654321:role/ml-platform-admin"]
    if raw["eks"].get("public_access_cidrs"):
        raw["eks"]["public_access_cidrs"] = ["198.18.0.0/24"]  # not RFC 5737 (RFC 2544 benchmarking)
    for group in raw.get("gpu_node_groups", []):
        if group["capacity"].get("reservation_id"):
            group["capacity"]["reservation_id"] = "cr-0123456789abcdef0"
    for waiver in raw.get("waivers", []):
        waiver["owner"] = "ml-platform@acme.io"
    if raw.get("health", {}).get("alert_emails"):
        raw["health"]["alert_emails"] = ["ml-oncall@acme.io"]


@pytest.mark.parametrize("stack", STACKS)
def test_real_values_are_not_placeholders(stack: str) -> None:
    assert find(edited_config(stack, real_values)) == []


@pytest.mark.parametrize(
    ("value", "kind"),
    [
        ("arn:aws:iam::123456789012:role/x", "ARN in your own AWS account"),
        ("192.0.2.128/25", "CIDRs"),
        ("198.51.100.7/32", "CIDRs"),
        ("someone@EXAMPLE.org", "address"),
    ],
)
def test_each_kind_of_documentation_value_is_found(value: str, kind: str) -> None:
    def edit(raw: dict) -> None:
        real_values(raw)
        raw["tags"]["extra"] = {"contact": value}

    (found,) = find(edited_config("prod", edit))
    assert found.path == "tags.extra.contact" and kind in found.put


def test_a_real_deployment_refuses_them_with_the_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(deploy_guard, "under_mock_engine", lambda: False)
    with pytest.raises(pulumi.RunError) as refused:
        deploy_guard.refuse_placeholders(stack_config("prod"), "prod")
    message = str(refused.value)
    assert "stacks/Pulumi.prod.yaml" in message
    assert "gpu_node_groups[0].capacity.reservation_id = 'cr-0a1b2c3d4e5f67890'" in message
    deploy_guard.refuse_placeholders(edited_config("prod", real_values), "prod")  # nothing left: no error


def test_the_offline_engine_is_recognised() -> None:
    seen: list[bool] = []
    run(lambda: seen.append(deploy_guard.under_mock_engine()), stack="dev", region="us-east-1")
    assert seen == [True]


@pytest.mark.parametrize(
    ("value", "placeholder"),
    [
        ("203.0.113.0/24", True),
        ("203.0.113.7/24", True),  # host bits set, as an address/prefix is often written: still RFC 5737's
        ("198.51.100.9/32", True),
        ("10.0.0.0/16", False),
        ("2001:db8::/32", False),  # IPv6 documentation space is not a CIDR the stack takes for endpoint access
        ("not-a-network", False),
    ],
)
def test_a_documentation_range_is_found_however_its_cidr_is_written(value: str, placeholder: bool) -> None:
    assert (_kind(value) is not None) is placeholder


@pytest.mark.parametrize(
    ("value", "placeholder"),
    [
        ('"ops@home"@example.com', True),  # a quoted local part may hold `@`: the domain follows the last one
        ("ops@example.com@acme.io", False),
        ("ops@EXAMPLE.NET", True),
        ("example.com", False),  # a domain alone is no address
    ],
)
def test_an_address_is_judged_by_the_domain_after_its_last_at_sign(value: str, placeholder: bool) -> None:
    assert (_kind(value) is not None) is placeholder


def test_a_real_domain_ending_in_the_letters_of_an_example_domain_is_not_a_placeholder() -> None:
    """RFC 2606 reserves example.com and its subdomains, not every name that ends in those letters."""
    assert _kind("ops@notexample.com") is None
    assert _kind("ops@team.example.com") == _kind("ops@EXAMPLE.org") == "a real, monitored address"


@pytest.mark.parametrize(
    ("value", "placeholder"),
    [
        ("arn:aws:iam::111122223333:role/x", True),
        ("arn:aws-us-gov:kms:us-gov-west-1:444455556666:key/k", True),
        ("arn:aws:iam::210987654321:role/x", False),
        ("cr-0a1b2c3d4e5f67890", True),
        ("cr-0123456789abcdef0", False),
    ],
)
def test_documentation_accounts_and_the_example_reservation_are_found_and_nothing_else(
    value: str, placeholder: bool
) -> None:
    assert (_kind(value) is not None) is placeholder


def test_a_placeholder_renders_its_key_value_and_what_to_put() -> None:
    (found,) = [p for p in find(stack_config("prod")) if p.path == "gpu_node_groups[0].capacity.reservation_id"]
    assert found.render() == (
        "gpu_node_groups[0].capacity.reservation_id = 'cr-0a1b2c3d4e5f67890' is an example value: put your "
        "reservation's ID (`aws ec2 describe-capacity-reservations`)"
    )

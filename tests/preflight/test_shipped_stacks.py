"""Every committed stack against a matching account passes; against an empty one it fails naming each missing
identity and reservation. moto's server answers STS, IAM, KMS and EC2; the Stubber the rest (helpers.py)."""

from __future__ import annotations

import json

import jsonschema
import pytest

from stacks.account_rules import principals
from stacks.load import load_file, stack_file
from tests.conftest import STACKS
from tests.preflight import helpers as h
from trainstack.preflight import render, runner
from trainstack.preflight.model import Status

pytestmark = pytest.mark.e2e  # every test asks moto's server (conftest.py: MOTO_COST)


def _run(moto: h.Moto, stack: str, caller: object):
    cluster = load_file(stack_file(stack))
    overrides, _ = h.answer_everything(cluster)
    return runner.run(cluster, stack, h.account(moto, caller, cluster.region, overrides), stack_file(stack), now=h.NOW)  # type: ignore[arg-type]


@pytest.mark.parametrize("stack", STACKS)
def test_a_matching_account_passes(moto: h.Moto, stack: str) -> None:
    cluster = load_file(stack_file(stack))
    caller = h.seed(moto, cluster, stack)
    result = _run(moto, stack, caller)
    assert result.verdict is Status.PASSED, render.text(result)
    assert result.account == h.account_of(cluster.eks.admin_role_arns[0])
    assert {c.id for c in result.checks} >= {
        "identity.account",
        "identity.caller-is-admin",
        "identity.autoscaling-role",
        "secrets.provider-key",
        "eks.version",
    }
    document = render.document(result)
    jsonschema.validate(document, json.loads(render.SCHEMA_PATH.read_text()))
    # Every reserved group's reservation was asked and passed.
    reserved = [g for g in cluster.gpu_node_groups if g.capacity.reserved]
    assert [c.status for c in result.checks if c.id.startswith("compute.reservation.")] == [Status.PASSED] * len(
        reserved
    )


@pytest.mark.parametrize("stack", STACKS)
def test_an_empty_account_fails_naming_each_missing_identity_and_reservation(moto: h.Moto, stack: str) -> None:
    cluster = load_file(stack_file(stack))
    caller = h.assume(moto, cluster.eks.admin_role_arns[0], cluster.region)  # a session, nothing else
    overrides, _ = h.answer_everything(cluster)
    ec2, reservations = h.stubbed("ec2", cluster.region)
    for group in cluster.gpu_node_groups:
        if group.capacity.reservation_id:
            reservations.add_client_error(
                "describe_capacity_reservations",
                service_error_code="InvalidCapacityReservationId.NotFound",
                service_message=f"The capacity reservation ID '{group.capacity.reservation_id}' does not exist",
            )
    overrides[("reservations", "ec2")] = ec2
    result = runner.run(
        cluster, stack, h.account(moto, caller, cluster.region, overrides), stack_file(stack), now=h.NOW
    )
    failed = {c.id: c for c in result.with_status(Status.FAILED)}
    assert result.verdict is Status.FAILED
    first_key = {}
    for key, arn in principals(cluster):
        first_key.setdefault(arn, key)  # a principal named twice is asked once, under its first key
    for arn, key in first_key.items():
        if h.account_of(arn) == result.account:
            assert arn in failed[f"identity.principal.{key}"].answer
    assert "AWSServiceRoleForAutoScaling" in failed["identity.autoscaling-role"].answer
    assert f"alias/trainstack-{stack}" in failed["secrets.provider-key"].answer
    for group in cluster.gpu_node_groups:
        if group.capacity.reservation_id:
            assert group.capacity.reservation_id in failed[f"compute.reservation.{group.name}"].answer
    text = render.text(result)
    assert all(c.title in text for c in failed.values())

"""AWS rules over one resource's inputs (trainstack/contracts/aws_rules.py), at their boundaries, on hand-built
recordings: the Lustre metadata configuration, launch-template interfaces and IMDS hop limit, SNS topic names.
Sources are the rules' own (METADATA, INTERFACES, HOP_LIMIT, SNS_TOPIC_NAME in the module)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import pytest

from stacks import fsx_sizing
from trainstack import tokens
from trainstack.contracts import ContractViolation, aws_rules
from trainstack.engine import UNKNOWN, RecordedResource, Recording


def _resource(type_: str, inputs: dict[str, Any]) -> RecordedResource:
    urn = f"urn:pulumi:prod::trainstack::{type_}::r"
    return RecordedResource(type_, "r", urn, "", True, inputs, (), {}, False, False, "")


def _paths(rule: Callable[[Recording], Iterable[ContractViolation]], type_: str, inputs: dict[str, Any]) -> list[str]:
    return [v.path for v in rule(Recording("prod", False, (_resource(type_, inputs),), {}))]


# ----------------------------------------------------------------------------------------- Lustre metadata


def _lustre(**inputs: Any) -> list[str]:
    base = {"deploymentType": "PERSISTENT_2", "storageCapacity": 2400, "metadataConfiguration": {"mode": "AUTOMATIC"}}
    return _paths(
        aws_rules.lustre_metadata, tokens.FSX_LUSTRE, {k: v for k, v in (base | inputs).items() if v is not None}
    )


@pytest.mark.parametrize("deployment", ["PERSISTENT_2", None, UNKNOWN])
def test_a_metadata_configuration_on_persistent_2_or_a_type_not_yet_known_passes(deployment: str | None) -> None:
    assert _lustre(deploymentType=deployment) == []


@pytest.mark.parametrize("deployment", ["PERSISTENT_1", "SCRATCH_2"])
def test_a_metadata_configuration_on_another_deployment_type_is_refused(deployment: str) -> None:
    assert _lustre(deploymentType=deployment) == ["metadataConfiguration"]


def test_no_metadata_configuration_has_nothing_to_check() -> None:
    assert _lustre(deploymentType="SCRATCH_2", metadataConfiguration=None) == []


def test_automatic_mode_takes_no_iops() -> None:
    assert _lustre(metadataConfiguration={"mode": "AUTOMATIC", "iops": 12000}) == ["metadataConfiguration.iops"]
    assert _lustre(metadataConfiguration={"mode": "AUTOMATIC", "iops": UNKNOWN}) == []


def test_user_provisioned_iops_at_and_below_what_automatic_gives() -> None:
    floor = fsx_sizing.minimum_metadata_iops(2400)
    ok = {"mode": "USER_PROVISIONED", "iops": floor}
    assert _lustre(metadataConfiguration=ok) == []
    assert fsx_sizing.metadata_iops_problem(floor - 1, 2400)  # the rule the contract applies
    low = {"mode": "USER_PROVISIONED", "iops": floor - 1}
    assert _lustre(metadataConfiguration=low) == ["metadataConfiguration.iops"]
    # unknown capacity or iops in a preview: nothing to compare
    assert _lustre(metadataConfiguration=low, storageCapacity=UNKNOWN) == []


# --------------------------------------------------------------------------------- launch-template interfaces


def _template(interfaces: list[dict[str, Any]] | None = None, **inputs: Any) -> list[str]:
    body = {"networkInterfaces": interfaces} if interfaces is not None else {}
    return _paths(aws_rules.launch_template_interfaces, tokens.LAUNCH_TEMPLATE, body | inputs)


def test_an_ena_primary_and_efa_only_on_other_cards_passes() -> None:
    assert (
        _template(
            [
                {"deviceIndex": 0},
                {"networkCardIndex": 0, "deviceIndex": 1, "interfaceType": "efa-only"},
                {"networkCardIndex": 1, "deviceIndex": 0, "interfaceType": "efa-only"},
            ]
        )
        == []
    )


def test_an_efa_only_primary_is_refused_and_an_efa_primary_is_not() -> None:
    assert _template([{"deviceIndex": 0, "interfaceType": "efa-only"}]) == ["networkInterfaces[0]"]
    assert _template([{"deviceIndex": 0, "interfaceType": "efa"}]) == []
    assert _template([{"networkCardIndex": 1, "deviceIndex": 0, "interfaceType": "efa-only"}]) == []


def test_a_device_index_unknown_in_preview_is_not_judged_as_the_primary() -> None:
    assert _template([{"deviceIndex": UNKNOWN, "interfaceType": "efa-only"}]) == []


def test_an_unknown_interface_type_is_refused() -> None:
    assert _template([{"deviceIndex": 0, "interfaceType": "ena"}]) == ["networkInterfaces[0].interfaceType"]


def test_two_interfaces_on_one_card_and_device_are_refused_at_the_second() -> None:
    same = [{"networkCardIndex": 1, "deviceIndex": 0}, {"networkCardIndex": 1, "deviceIndex": 0}]
    assert _template([{"deviceIndex": 0}, *same]) == ["networkInterfaces[2]"]


def test_security_groups_on_the_instance_and_on_interfaces_are_refused() -> None:
    assert _template([{"deviceIndex": 0}], vpcSecurityGroupIds=["sg-1"]) == ["vpcSecurityGroupIds"]
    assert _template(vpcSecurityGroupIds=["sg-1"]) == []  # no interfaces: the instance's groups are the only ones


@pytest.mark.parametrize(("hops", "refused"), [(0, True), (1, False), (64, False), (65, True), (UNKNOWN, False)])
def test_the_imds_hop_limit_is_1_to_64(hops: object, refused: bool) -> None:
    paths = _template(metadataOptions={"httpPutResponseHopLimit": hops})
    assert paths == (["metadataOptions.httpPutResponseHopLimit"] if refused else [])


# --------------------------------------------------------------------------------------------- SNS topics


def _topic(**inputs: Any) -> list[str]:
    return _paths(aws_rules.sns_topic_names, tokens.SNS_TOPIC, inputs)


@pytest.mark.parametrize("name", ["alerts", "a", "A_b-9", "x" * 256])
def test_a_standard_topic_name_passes(name: str) -> None:
    assert _topic(name=name) == []


@pytest.mark.parametrize("name", ["", "x" * 257, "alerts.fifo", "has space", "ümlaut"])
def test_a_standard_topic_name_outside_the_alphabet_or_length_is_refused(name: str) -> None:
    assert _topic(name=name) == ["name"]


def test_a_fifo_topic_ends_in_fifo_and_counts_the_suffix_in_its_length() -> None:
    assert _topic(name="alerts.fifo", fifoTopic=True) == []
    assert _topic(name="alerts", fifoTopic=True) == ["name"]
    assert _topic(name="x" * 251 + ".fifo", fifoTopic=True) == []
    assert _topic(name="x" * 252 + ".fifo", fifoTopic=True) == ["name"]


def test_a_topic_named_by_pulumi_or_unknown_is_not_checked() -> None:
    assert _topic() == [] and _topic(name=UNKNOWN) == []


# ------------------------------------------------------------------------------------ Object Lock retention


def _lock(rule: dict[str, Any] | None) -> list[str]:
    return _paths(
        aws_rules.object_lock_retention, tokens.BUCKET_OBJECT_LOCK, {"rule": rule} if rule is not None else {}
    )


def test_a_lock_without_default_retention_has_nothing_to_check() -> None:
    assert _lock(None) == [] and _lock({}) == [] and _lock({"defaultRetention": None}) == []


@pytest.mark.parametrize(
    ("period", "refused"),
    [
        ({"days": 1}, False),
        ({"days": 36500}, False),
        ({"days": 0}, True),
        ({"days": 36501}, True),
        ({"years": 1}, False),
        ({"years": 100}, False),
        ({"years": 0}, True),
        ({"years": 101}, True),
    ],
)
def test_a_period_of_days_or_years_within_its_bounds(period: dict[str, int], refused: bool) -> None:
    ((key, _),) = period.items()
    paths = _lock({"defaultRetention": {"mode": "GOVERNANCE", **period}})
    assert paths == ([f"rule.defaultRetention.{key}"] if refused else [])


def test_a_retention_needs_a_mode_and_exactly_one_period() -> None:
    assert _lock({"defaultRetention": {"days": 30}}) == ["rule.defaultRetention.mode"]
    assert _lock({"defaultRetention": {"mode": "COMPLIANCE"}}) == ["rule.defaultRetention"]
    assert _lock({"defaultRetention": {"mode": "COMPLIANCE", "days": 30, "years": 1}}) == ["rule.defaultRetention"]

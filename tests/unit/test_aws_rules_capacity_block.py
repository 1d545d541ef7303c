"""The Capacity Block contract (trainstack/contracts/aws_rules.py), one condition at a time on hand-built
recordings: a node group and its launch template, found by dependency or by id, each input present or absent.
Source of the rules: EKS User Guide, "Create a managed node group with Capacity Blocks for ML"; botocore eks
CreateNodegroup instanceTypes."""

from __future__ import annotations

from typing import Any

import pytest

from trainstack.contracts import aws_rules
from trainstack.engine import UNKNOWN, RecordedResource, Recording

NG_URN = "urn:pulumi:prod::trainstack::aws:eks/nodeGroup:NodeGroup::gpu"
LT_URN = "urn:pulumi:prod::trainstack::aws:ec2/launchTemplate:LaunchTemplate::gpu-lt"
BLOCK = "cr-0123456789abcdef0"


def _resource(type_: str, urn: str, inputs: dict[str, Any], **more: Any) -> RecordedResource:
    fields: dict[str, Any] = {
        "parent": "",
        "custom": True,
        "dependencies": (),
        "property_dependencies": {},
        "protect": False,
        "retain_on_delete": False,
        "provider": "",
    } | more
    return RecordedResource(type_, urn.rsplit("::", 1)[1], urn, inputs=inputs, **fields)


def _template(**inputs: Any) -> RecordedResource:
    base = {
        "instanceType": "p5.48xlarge",
        "instanceMarketOptions": {"marketType": "capacity-block"},
        "capacityReservationSpecification": {"capacityReservationTarget": {"capacityReservationId": BLOCK}},
    }
    return _resource(
        aws_rules.LAUNCH_TEMPLATE, LT_URN, {k: v for k, v in (base | inputs).items() if v is not None}, id="lt-1"
    )


def _group(by: str = "dependency", **inputs: Any) -> RecordedResource:
    base: dict[str, Any] = {"capacityType": "CAPACITY_BLOCK", "launchTemplate": {"id": "lt-1", "version": "1"}}
    wiring = {"property_dependencies": {"launchTemplate": (LT_URN,)}} if by == "dependency" else {}
    return _resource(
        aws_rules.NODE_GROUP, NG_URN, {k: v for k, v in (base | inputs).items() if v is not None}, **wiring
    )


def _found(*resources: RecordedResource) -> list[tuple[str, str, str]]:
    return sorted((v.urn, v.path, v.rule) for v in _violations(*resources))


def _violations(*resources: RecordedResource) -> list[aws_rules.ContractViolation]:
    return list(aws_rules.capacity_block_node_groups(Recording("prod", False, resources, {})))


@pytest.mark.parametrize("by", ["dependency", "id"])
def test_a_block_group_as_the_guide_builds_it_passes(by: str) -> None:
    """The template is found by the node group's dependency, and also by its id alone (an imported template)."""
    assert _found(_group(by), _template()) == []


def test_in_preview_the_template_is_found_by_the_dependency_alone() -> None:
    """In a preview the template's id is unknown, so only the node group's dependency finds it."""
    group = _group("dependency", launchTemplate={"id": UNKNOWN, "version": UNKNOWN})
    assert _found(group, _template()) == []
    bare = _resource(aws_rules.LAUNCH_TEMPLATE, LT_URN, {})  # no id yet, and no capacity-block pieces
    assert [p for _, p, _ in _found(group, bare)] == [
        "capacityReservationSpecification.capacityReservationTarget.capacityReservationId",
        "instanceMarketOptions.marketType",
        "instanceType",
    ]


def test_a_dependency_on_a_resource_outside_the_recording_falls_back_to_the_id() -> None:
    gone = "urn:pulumi:prod::trainstack::aws:ec2/launchTemplate:LaunchTemplate::elsewhere"
    group = _resource(aws_rules.NODE_GROUP, NG_URN, _group().inputs, property_dependencies={"launchTemplate": (gone,)})
    assert _found(group, _template()) == []


def test_a_template_is_not_found_by_an_id_it_does_not_have() -> None:
    group = _group("id", launchTemplate={"id": "lt-other"})
    ((urn, path, rule),) = _found(group, _template())
    assert (urn, path) == (NG_URN, "launchTemplate") and "needs a launch template" in rule


def test_a_dependency_on_something_else_is_not_the_template() -> None:
    other = "urn:pulumi:prod::trainstack::aws:ec2/securityGroup:SecurityGroup::sg"
    group = _group("none", launchTemplate={"id": "lt-none"})
    group = _resource(group.type, group.urn, group.inputs, property_dependencies={"launchTemplate": (other,)})
    sg = _resource("aws:ec2/securityGroup:SecurityGroup", other, {})
    assert [p for _, p, _ in _found(group, sg, _template())] == ["launchTemplate"]


def test_a_block_group_without_a_template_is_refused_once() -> None:
    assert _found(_group("none", launchTemplate=None)) == [
        (NG_URN, "launchTemplate", "a CAPACITY_BLOCK node group needs a launch template")
    ]


@pytest.mark.parametrize(
    ("edit", "path"),
    [
        ({"instanceType": None}, "instanceType"),
        ({"instanceMarketOptions": None}, "instanceMarketOptions.marketType"),
        ({"instanceMarketOptions": {"marketType": "spot"}}, "instanceMarketOptions.marketType"),
        (
            {"capacityReservationSpecification": None},
            "capacityReservationSpecification.capacityReservationTarget.capacityReservationId",
        ),
        (
            {"capacityReservationSpecification": {"capacityReservationTarget": {}}},
            "capacityReservationSpecification.capacityReservationTarget.capacityReservationId",
        ),
    ],
)
def test_each_missing_piece_of_the_template_is_refused_alone(edit: dict[str, Any], path: str) -> None:
    assert _found(_group(), _template(**edit)) == [
        (LT_URN, path, next(r for _, p, r in _all_template_rules() if p == path))
    ]


def _all_template_rules() -> list[tuple[str, str, str]]:
    bare = _resource(aws_rules.LAUNCH_TEMPLATE, LT_URN, {}, id="lt-1")
    return _found(_group(), bare)


def test_a_bare_template_is_refused_for_all_three_pieces() -> None:
    assert [p for _, p, _ in _all_template_rules()] == [
        "capacityReservationSpecification.capacityReservationTarget.capacityReservationId",
        "instanceMarketOptions.marketType",
        "instanceType",
    ]


def test_a_block_group_listing_its_type_is_refused_twice_and_a_list_alone_is_not_a_block_problem() -> None:
    paths = _found(_group(instanceTypes=["p5.48xlarge"]), _template())
    assert [(u, p) for u, p, _ in paths] == [(NG_URN, "instanceTypes"), (NG_URN, "instanceTypes")]
    rules = [r for _, _, r in paths]
    assert any("lists no instanceTypes" in r for r in rules) and any("one place only" in r for r in rules)
    # an on-demand group that lists its type, with a template that does not name one, is as EKS wants it
    plain = _template(instanceType=None, instanceMarketOptions=None, capacityReservationSpecification=None)
    assert _found(_group(capacityType="ON_DEMAND", instanceTypes=["p5.48xlarge"]), plain) == []
    # an empty list names nothing
    assert _found(_group(instanceTypes=[]), _template()) == []


@pytest.mark.parametrize(("capacity", "shown"), [("ON_DEMAND", "ON_DEMAND"), ("SPOT", "SPOT"), (None, "(absent)")])
def test_a_template_buying_from_a_block_needs_a_block_group(capacity: str | None, shown: str) -> None:
    (v,) = _violations(_group(capacityType=capacity), _template())
    assert (v.urn, v.path, v.value) == (NG_URN, "capacityType", shown) and "must be CAPACITY_BLOCK" in v.rule


@pytest.mark.parametrize(("options", "shown"), [(None, "(absent)"), ({"marketType": "spot"}, "spot")])
def test_the_market_refused_is_shown_as_it_is(options: dict[str, str] | None, shown: str) -> None:
    (v,) = _violations(_group(), _template(instanceMarketOptions=options))
    assert (v.path, v.value) == ("instanceMarketOptions.marketType", shown)


def test_an_on_demand_group_on_an_ordinary_template_passes() -> None:
    plain = _template(instanceMarketOptions=None, capacityReservationSpecification=None)
    assert _found(_group(capacityType="ON_DEMAND"), plain) == []

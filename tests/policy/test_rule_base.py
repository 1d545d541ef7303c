"""The readers every rule shares (policies/rules/base.py), called directly: the engine hands rules read-only proxies
whose values may be missing, null, a string where a number or boolean belongs, or a list too short, and a rule
must read each of these the same way."""

from __future__ import annotations

from datetime import date
from typing import Any

import pytest
from pulumi_policy import (
    PolicyCustomTimeouts,
    PolicyResource,
    PolicyResourceOptions,
    ResourceValidationArgs,
    Severity,
    StackValidationArgs,
)

from policies import enforcement, waivers
from policies.facts import EFA_PRESENT_LABEL, GIB_PER_TIB, SCRATCH_2_BASELINE_MB_S_PER_TIB
from policies.facts_generated import HYPERPOD_CLUSTER, LAUNCH_TEMPLATE, NODE_GROUP
from policies.rules.base import (
    RESOURCE_TYPES,
    Capacity,
    Graph,
    accelerated_node_groups,
    accelerator_capacity,
    as_list,
    availability_zone,
    condition_keys,
    efa_interfaces,
    efa_node_groups,
    environment_of_stack,
    get,
    graph,
    has,
    instance_types_of,
    items,
    json_document,
    label,
    launch_template_of,
    lustre_throughput_mb_s,
    number,
    policy_statements,
    resource_rule,
    stack_of,
    stack_rule,
    truthy,
)

_OPTIONS = PolicyResourceOptions(False, [], None, [], PolicyCustomTimeouts(0, 0, 0), [])


def _resource(
    type_: str, name: str, props: dict[str, Any] | None = None, deps: dict[str, list[PolicyResource]] | None = None
) -> PolicyResource:
    urn = f"urn:pulumi:prod::trainstack::{type_}::{name}"
    return PolicyResource(type_, props or {}, urn, name, _OPTIONS, None, None, [], deps or {})


def _group(name: str, props: dict[str, Any], template: PolicyResource | None = None) -> PolicyResource:
    return _resource(NODE_GROUP, name, props, {"launchTemplate": [template]} if template else {})


# ------------------------------------------------------------------------------------------------ get


def test_get_walks_mappings_and_list_indexes() -> None:
    props = {"a": {"b": [{"c": 1}, {"c": 2}]}}
    assert get(props, "a.b.1.c") == 2
    assert get(props, "a.b.0") == {"c": 1}


@pytest.mark.parametrize(
    "path",
    [
        "a.missing",  # a key the mapping lacks
        "a.b.2",  # one past the end of the list
        "a.b.9",  # far past it
        "a.b.first",  # a list read by a name
        "a.text.0",  # a string is not a list of characters
        "a.count.x",  # a scalar has no steps
        "a.none",  # set to null
        "a.none.x",  # null on the way
    ],
)
def test_get_gives_the_default_for_any_missing_step(path: str) -> None:
    props = {"a": {"b": [10, 20], "text": "abc", "count": 3, "none": None}}
    assert get(props, path, "fallback") == "fallback"


def test_get_keeps_falsy_values_that_are_set() -> None:
    props = {"zero": 0, "off": False, "empty": ""}
    assert [get(props, key, "fallback") for key in props] == [0, False, ""]


def test_has_tells_a_set_key_from_an_absent_one_and_a_non_mapping() -> None:
    assert has({"k": None}, "k") is True
    assert has({"k": 1}, "other") is False
    assert has(["k"], "k") is False
    assert has(None, "k") is False


# ------------------------------------------------------------------------------------ scalars and lists


def test_items_reads_sequences_only() -> None:
    assert items((1, 2)) == [1, 2]
    assert items([]) == []
    assert items("ab") == []
    assert items(None) == []
    assert items({"a": 1}) == []


@pytest.mark.parametrize(
    ("value", "expected"),
    [(True, True), ("true", True), (" TRUE ", True), (False, False), ("false", False), ("yes", False), (1, False)],
)
def test_truthy_reads_real_and_string_booleans_only(value: Any, expected: bool) -> None:
    assert truthy(value) is expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [(3, 3.0), (2.5, 2.5), ("7", 7.0), (" 1.5 ", 1.5), (0, 0.0)],
)
def test_number_reads_numbers_and_numeric_strings(value: Any, expected: float) -> None:
    result = number(value)
    assert isinstance(result, float) and result == expected


@pytest.mark.parametrize("value", [True, False, None, "many", "", [1], {"a": 1}])
def test_number_refuses_booleans_missing_values_and_non_numbers(value: Any) -> None:
    """A boolean is an int in Python, but `true` where a size belongs is not 1: it is no number."""
    assert number(value) is None


def test_json_document_parses_strings_and_passes_mappings_through() -> None:
    assert json_document('{"Version": "2012-10-17"}') == {"Version": "2012-10-17"}
    document = {"Statement": []}
    assert json_document(document) is document
    assert json_document("{not json") is None
    assert json_document(None) is None


def test_as_list_takes_one_value_or_a_list() -> None:
    assert as_list(None) == []
    assert as_list("s3:GetObject") == ["s3:GetObject"]
    assert as_list(["a", "b"]) == ["a", "b"]
    assert as_list(5) == []


def test_policy_statements_keeps_mapping_statements_of_a_document() -> None:
    assert policy_statements('{"Statement": [{"Effect": "Allow"}, "junk"]}') == [{"Effect": "Allow"}]
    assert policy_statements({"Statement": [{"Effect": "Deny"}]}) == [{"Effect": "Deny"}]
    assert policy_statements('["not", "a", "document"]') == []
    assert policy_statements("{broken") == []


def test_policy_statements_reads_a_single_statement_object() -> None:
    one = {"Effect": "Allow", "Action": "kms:*", "Resource": "*"}
    assert policy_statements({"Statement": one}) == [one]


def test_condition_keys_across_operators() -> None:
    statement = {"Condition": {"StringEquals": {"aws:SourceVpc": "v"}, "Bool": {"aws:SecureTransport": "false"}}}
    assert condition_keys(statement) == {"aws:SourceVpc", "aws:SecureTransport"}
    assert condition_keys({"Condition": "nonsense"}) == set()
    assert condition_keys({}) == set()


def test_availability_zone_by_name_else_by_id() -> None:
    assert availability_zone(_resource("aws:ec2/subnet:Subnet", "a", {"availabilityZone": "us-east-1a"})) == (
        "us-east-1a"
    )
    assert availability_zone(_resource("aws:ec2/subnet:Subnet", "b", {"availabilityZoneId": "use1-az4"})) == (
        "use1-az4"
    )


# ------------------------------------------------------------------------------- stacks and URNs


@pytest.mark.parametrize(
    ("stack", "environment"),
    [("prod", "prod"), ("prod-eu", "prod"), ("staging", "staging"), ("dev-alice", "dev"), ("production", None)],
)
def test_environment_of_stack(stack: str, environment: str | None) -> None:
    assert environment_of_stack(stack) == environment


def test_stack_of_reads_the_stack_segment_of_a_urn() -> None:
    urn = "urn:pulumi:prod-eu::trainstack::trainstack:network:Network$aws:ec2/vpc:Vpc::main"
    assert stack_of(urn) == "prod-eu"


# ----------------------------------------------------------------------------------- node groups


def test_a_node_groups_own_instance_types_come_first() -> None:
    template = _resource(LAUNCH_TEMPLATE, "lt", {"instanceType": "p5.48xlarge"})
    group = _group("ng", {"instanceTypes": ["p4d.24xlarge"]}, template)
    assert instance_types_of(group) == ["p4d.24xlarge"]


def test_a_node_group_without_its_own_types_launches_its_templates() -> None:
    template = _resource(LAUNCH_TEMPLATE, "lt", {"instanceType": "p5.48xlarge"})
    assert launch_template_of(_group("ng", {}, template)) is template
    assert instance_types_of(_group("ng", {"instanceTypes": []}, template)) == ["p5.48xlarge"]


def test_a_node_group_with_no_type_anywhere_has_none() -> None:
    assert instance_types_of(_group("ng", {})) == []
    assert instance_types_of(_group("ng", {}, _resource(LAUNCH_TEMPLATE, "lt", {}))) == []
    assert launch_template_of(_group("ng", {})) is None


def test_the_launch_template_is_joined_only_through_launch_template() -> None:
    template = _resource(LAUNCH_TEMPLATE, "lt", {"instanceType": "p5.48xlarge"})
    other = _resource(NODE_GROUP, "ng", {}, {"subnetIds": [template]})
    assert launch_template_of(other) is None


def test_accelerated_node_groups_count_each_group_once_with_its_first_known_type() -> None:
    g = Graph(
        [
            _group("gpu", {"instanceTypes": ["m5.large", "p5.48xlarge", "p4d.24xlarge"]}),
            _group("cpu", {"instanceTypes": ["m5.large"]}),
        ]
    )
    found = accelerated_node_groups(g)
    assert [(group.name, facts.accelerators) for group, facts in found] == [("gpu", 8)]


def test_accelerator_capacity_counts_max_size_and_hyperpod_instance_counts() -> None:
    cluster = _resource(
        HYPERPOD_CLUSTER,
        "hp",
        {
            "instanceGroups": [
                {"instanceGroupName": "workers", "instanceType": "ml.p5.48xlarge", "instanceCount": 3},
                {"instanceGroupName": "controller", "instanceType": "ml.m5.2xlarge", "instanceCount": 1},
                {"instanceGroupName": "unsized", "instanceType": "ml.p5.48xlarge"},
            ]
        },
    )
    g = Graph([_group("ng", {"instanceTypes": ["p5.48xlarge"], "scalingConfig": {"maxSize": 4}}), cluster])
    assert accelerator_capacity(g) == [Capacity("ng", 32), Capacity("hp/workers", 24), Capacity("hp/unsized", 0)]


def test_a_node_group_without_max_size_counts_no_accelerators() -> None:
    g = Graph([_group("ng", {"instanceTypes": ["p5.48xlarge"]})])
    assert accelerator_capacity(g) == [Capacity("ng", 0)]


def test_efa_node_groups_are_those_with_efa_interfaces_or_the_efa_label() -> None:
    efa_template = _resource(LAUNCH_TEMPLATE, "efa", {"networkInterfaces": [{"interfaceType": "efa"}]})
    plain_template = _resource(LAUNCH_TEMPLATE, "plain", {"networkInterfaces": [{"interfaceType": "interface"}]})
    by_interface = _group("by-interface", {}, efa_template)
    by_label = _group("by-label", {"labels": {EFA_PRESENT_LABEL: "true"}}, plain_template)
    not_efa = _group("not-efa", {"labels": {EFA_PRESENT_LABEL: "false"}}, plain_template)
    no_template = _group("no-template", {"labels": {EFA_PRESENT_LABEL: "true"}})
    g = Graph([by_interface, by_label, not_efa, no_template])
    assert [(group.name, template.name) for group, template in efa_node_groups(g)] == [
        ("by-interface", "efa"),
        ("by-label", "plain"),
    ]


def test_efa_interfaces_are_efa_and_efa_only() -> None:
    nics = [{"interfaceType": "efa"}, {"interfaceType": "efa-only"}, {"interfaceType": "interface"}, {}]
    assert efa_interfaces({"networkInterfaces": nics}) == nics[:2]
    assert efa_interfaces({}) == []


def test_label_reads_a_set_label_and_none_otherwise() -> None:
    assert label(_group("ng", {"labels": {"team": "a"}}), "team") == "a"
    assert label(_group("ng", {"labels": {"team": "a"}}), "other") is None
    assert label(_group("ng", {}), "team") is None


# -------------------------------------------------------------------------------------------- Lustre


def test_lustre_throughput_of_persistent_2_is_storage_times_provisioned_rate() -> None:
    props = {"deploymentType": "PERSISTENT_2", "storageCapacity": 4800, "perUnitStorageThroughput": 500}
    assert lustre_throughput_mb_s(props) == pytest.approx(4800 / GIB_PER_TIB * 500)


def test_lustre_throughput_of_scratch_2_is_its_fixed_baseline() -> None:
    props = {"deploymentType": "SCRATCH_2", "storageCapacity": 2400, "perUnitStorageThroughput": 1000}
    assert lustre_throughput_mb_s(props) == pytest.approx(2400 / GIB_PER_TIB * SCRATCH_2_BASELINE_MB_S_PER_TIB)


@pytest.mark.parametrize(
    "props",
    [
        {"deploymentType": "PERSISTENT_2", "perUnitStorageThroughput": 500},
        {"deploymentType": "PERSISTENT_2", "storageCapacity": 4800},
        {"deploymentType": "SCRATCH_2"},
    ],
)
def test_lustre_throughput_with_a_missing_figure_is_zero(props: dict[str, Any]) -> None:
    assert lustre_throughput_mb_s(props) == 0


# ------------------------------------------------------------------------------------------------ the graph


def test_graph_lists_resources_by_type_in_the_order_asked() -> None:
    vpc, subnet, other = (
        _resource("aws:ec2/vpc:Vpc", "vpc"),
        _resource("aws:ec2/subnet:Subnet", "a"),
        _resource("aws:ec2/subnet:Subnet", "b"),
    )
    g = graph(StackValidationArgs([subnet, vpc, other]))
    assert [r.name for r in g.of_type("aws:ec2/vpc:Vpc", "aws:ec2/subnet:Subnet")] == ["vpc", "a", "b"]
    assert g.of_type("aws:s3/bucket:Bucket") == []


def test_graph_deps_of_a_property_optionally_of_some_types() -> None:
    vpc, role = _resource("aws:ec2/vpc:Vpc", "vpc"), _resource("aws:iam/role:Role", "role")
    group = _resource(NODE_GROUP, "ng", {}, {"subnetIds": [vpc, role], "nodeRoleArn": [role]})
    assert Graph.deps(group, "subnetIds") == [vpc, role]
    assert Graph.deps(group, "subnetIds", "aws:iam/role:Role") == [role]
    assert Graph.deps(group, "labels") == []


def test_graph_referrers_by_property_and_type_each_once() -> None:
    role = _resource("aws:iam/role:Role", "role")
    group = _resource(NODE_GROUP, "ng", {}, {"nodeRoleArn": [role], "tags": [role]})
    profile = _resource("aws:iam/instanceProfile:InstanceProfile", "profile", {}, {"role": [role]})
    g = Graph([role, group, profile])
    assert g.referrers(role) == [group, profile]  # the group refers twice, and is listed once
    assert g.referrers(role, "role") == [profile]
    assert g.referrers(role, None, NODE_GROUP) == [group]
    assert g.referrers(role, "role", NODE_GROUP) == []
    assert g.referrers(group) == []


# ------------------------------------------------------------------------------------- rules and waivers


def _waiver(rule: str, resource: str) -> waivers.Waiver:
    return waivers.Waiver(rule, resource, "a reason", "owner@example.com", date(2999, 1, 1), "dev")


def _args(type_: str, name: str) -> ResourceValidationArgs:
    return ResourceValidationArgs(type_, {}, f"urn:pulumi:dev::trainstack::{type_}::{name}", name, _OPTIONS, None)


def test_a_resource_rule_judges_only_its_types_and_its_waived_resource_is_exempt(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(RESOURCE_TYPES, "x-resource-rule", frozenset())  # removed again after the test

    @resource_rule(name="x-resource-rule", description="-", severity=Severity.LOW, types=["aws:ec2/vpc:Vpc"])
    def rule(args: ResourceValidationArgs, report: Any) -> None:
        report(f"{args.name} is wrong")

    assert rule.tags == ["aws"]  # the providers of its types
    reported: list[tuple[str, str | None]] = []

    def report(message: str, urn: str | None = None) -> None:
        reported.append((message, urn))

    with enforcement.applying([_waiver("x-resource-rule", "waived")], "dev") as ledger:
        rule.validate(_args("aws:ec2/subnet:Subnet", "other-type"), report)
        rule.validate(_args("aws:ec2/vpc:Vpc", "waived"), report)
        rule.validate(_args("aws:ec2/vpc:Vpc", "kept"), report)
    assert reported == [("kept is wrong", None)]
    assert [(w.rule, w.resource) for w in ledger.waived] == [("x-resource-rule", "waived")]


def test_a_stack_rules_violation_is_exempt_only_on_the_waived_resource_it_names() -> None:
    @stack_rule(name="x-stack-rule", description="-", severity=Severity.LOW)
    def rule(args: StackValidationArgs, report: Any) -> None:
        for resource in args.resources:
            report(f"{resource.name} is wrong", resource.urn)
        report("the stack is wrong")

    reported: list[tuple[str, str | None]] = []

    def report(message: str, urn: str | None = None) -> None:
        reported.append((message, urn))

    waived, kept = _resource("aws:ec2/vpc:Vpc", "waived"), _resource("aws:ec2/vpc:Vpc", "kept")
    with enforcement.applying([_waiver("x-stack-rule", "waived")], "dev") as ledger:
        rule.validate(StackValidationArgs([waived, kept]), report)
    assert reported == [("kept is wrong", kept.urn), ("the stack is wrong", None)]
    assert [w.urn for w in ledger.waived] == [waived.urn]

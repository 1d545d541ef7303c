"""The botocore-model contract's parts (trainstack/contracts/aws_models.py) on hand-written shapes and inputs: each
constraint at its bound and one type at a time, how input paths reach list items and absent members, and how a
resource's inputs are held against a recorded operation (required members, provider-filled ones, unknowns).
The recorded facts themselves are tested against botocore in tests/unit/test_aws_api_facts.py."""

from __future__ import annotations

from typing import Any

import pytest

from trainstack.contracts import aws_models
from trainstack.contracts.aws_models import ApiCall, shape_problems, values_at
from trainstack.engine import UNKNOWN, RecordedResource, Recording
from trainstack.tokens import LOG_GROUP

S = {"shape": "S", "type": "string"}
I = {"shape": "I", "type": "integer"}  # noqa: E741 (the shape's own one-letter name)


def _problems(given: Any, /, **fact: Any) -> list[str]:
    return list(shape_problems(given, fact))


# ----------------------------------------------------------------------------------------- strings


def test_a_string_is_a_string() -> None:
    assert _problems(3, **S, min=5) == ["S is a string, got int"]  # and nothing else is judged
    assert _problems("3", **S) == []


def test_string_lengths_at_their_bounds() -> None:
    assert _problems("ab", **S, min=2, max=3) == [] and _problems("abc", **S, min=2, max=3) == []
    assert _problems("a", **S, min=2) == ["S needs at least 2 characters, got 1"]
    assert _problems("abcd", **S, max=3) == ["S takes at most 3 characters, got 4"]


def test_an_enum_lists_up_to_twelve_values_then_counts() -> None:
    twelve = [f"v{i}" for i in range(12)]
    assert _problems("v11", **S, enum=twelve) == []
    assert _problems("x", **S, enum=twelve) == [f"S must be one of: {', '.join(twelve)}"]
    thirteen = [*twelve, "v12"]
    assert _problems("x", **S, enum=thirteen) == [f"S must be one of: {', '.join(twelve)}, ... (13 values)"]
    assert _problems("anything", **S, enum=[]) == []  # an empty enum constrains nothing


def test_a_pattern_is_found_anywhere_unless_anchored() -> None:
    assert _problems("my group!", **S, pattern="[a-z]+") == []  # smithy patterns are not anchored
    assert _problems("!!", **S, pattern="[a-z]+") == ["S must match /[a-z]+/"]
    assert _problems("ab1", **S, pattern="^[a-z]+$") == ["S must match /^[a-z]+$/"]
    assert _problems("Été", **S, pattern=r"^\p{L}+$") == []  # a Java class only `regex` compiles
    assert _problems("1", **S, pattern=r"^\p{L}+$") == [r"S must match /^\p{L}+$/"]
    assert _problems("x", **S, pattern=r"\p{Nope}[") == []  # a pattern nothing compiles is not judged


# ----------------------------------------------------------------------------------------- numbers and booleans


@pytest.mark.parametrize(
    ("value", "read"),
    [(3, 3), (-2, -2), (4.0, 4), ("12", 12), ("-7", -7), (True, None), (2.5, None), ("1.5", None), ("x", None)],
)
def test_what_the_provider_reads_as_an_integer(value: Any, read: int | None) -> None:
    assert aws_models._as_integer(value) == read
    assert aws_models._as_integer(float("inf")) is None and aws_models._as_integer(float("nan")) is None


@pytest.mark.parametrize("kind", ["integer", "long"])
def test_integer_bounds_at_their_limits(kind: str) -> None:
    fact = {"shape": "I", "type": kind, "min": 1, "max": 10}
    assert _problems(1, **fact) == [] and _problems(10.0, **fact) == [] and _problems("10", **fact) == []
    assert _problems(0, **fact) == ["I must be at least 1"]
    assert _problems(11, **fact) == ["I must be at most 10"]
    assert _problems(False, **fact) == ["I is an integer, got false"]  # a boolean is no integer, and stops there


def test_a_boolean_is_a_boolean_or_its_text() -> None:
    fact = {"shape": "B", "type": "boolean"}
    for value in (True, False, "true", "false"):
        assert _problems(value, **fact) == []
    assert _problems(1, **fact) == ["B is a boolean, got 1"]
    assert _problems("True", **fact) == ["B is a boolean, got True"]


# ----------------------------------------------------------------------------------------- lists, maps, objects


def test_list_counts_at_their_bounds_and_each_item() -> None:
    fact = {"shape": "L", "type": "list", "min": 1, "max": 2, "member": I}
    assert _problems([1], **fact) == [] and _problems([1, 2], **fact) == []
    assert _problems([], **fact) == ["L needs at least 1 items, got 0"]
    assert _problems([1, 2, 3], **fact) == ["L takes at most 2 items, got 3"]
    assert _problems([1, "x"], **fact) == ["I is an integer, got x"]
    assert _problems("abc", **fact) == ["L is a list, got str"]  # and neither its length nor its items are judged


def test_map_counts_at_their_bounds_and_each_key_and_value() -> None:
    fact = {"shape": "M", "type": "map", "min": 1, "max": 2, "key": {**S, "max": 3}, "value": I}
    assert _problems({"a": 1}, **fact) == [] and _problems({"a": 1, "b": 2}, **fact) == []
    assert _problems({}, **fact) == ["M needs at least 1 entries, got 0"]
    assert _problems({"a": 1, "b": 2, "c": 3}, **fact) == ["M takes at most 2 entries, got 3"]
    assert _problems({"long": "x"}, **fact) == [
        "key 'long': S takes at most 3 characters, got 4",
        "value of 'long': I is an integer, got x",
    ]
    assert _problems([["a", 1]], **fact) == ["M is a map, got list"]


def test_a_structure_is_an_object() -> None:
    assert _problems({"a": 1}, shape="O", type="structure") == []
    assert _problems("a", shape="O", type="structure") == ["O is an object, got str"]
    assert _problems("anything", shape="D", type="blob") == []  # a type with no constraint here


# ----------------------------------------------------------------------------------------- input paths


def test_values_at_steps_into_every_list_item() -> None:
    inputs = {"a": {"b": [{"c": 1}, {"c": 2}, {"d": 3}, "x"]}}
    assert list(values_at(inputs, "a.b[].c")) == [
        ("a.b[0].c", 1, True),
        ("a.b[1].c", 2, True),
        ("a.b[2].c", None, False),  # the item exists, the member does not
    ]
    assert list(values_at({"tags": ["x", "y"]}, "tags[]")) == [("tags[0]", "x", True), ("tags[1]", "y", True)]


def test_values_at_reports_an_absent_leaf_only_under_a_present_parent() -> None:
    assert list(values_at({"a": {}}, "a.b")) == [("a.b", None, False)]
    assert list(values_at({}, "name")) == [("name", None, False)]
    assert list(values_at({}, "a.b")) == []  # no parent: nothing to say
    assert list(values_at({"a": "text"}, "a.b")) == []  # a parent that is no object
    assert list(values_at({"a": {"b": 1}}, "a.b")) == [("a.b", 1, True)]
    assert list(values_at({"a": {"b": {"c": 1}}}, "a.b")) == [("a.b", {"c": 1}, True)]


def test_a_list_path_over_a_value_that_is_not_a_list_reads_the_value() -> None:
    assert list(values_at({"ids": "subnet-1"}, "ids[]")) == [("ids", "subnet-1", True)]  # the shape then refuses it


# ----------------------------------------------------------------------------------------- one operation

LOGS = aws_models.API_MAP[LOG_GROUP][0]  # CreateLogGroup: logGroupName (the provider fills it), class, key
SUBSCRIBE = ApiCall("sns", "Subscribe", {"topic": "TopicArn", "protocol": "Protocol", "endpoint": "Endpoint"})


def _violations(inputs: dict[str, Any], call: ApiCall = LOGS) -> list[tuple[str, str, str]]:
    return [(v.path, v.value, v.rule) for v in aws_models.check_call("urn", inputs, call)]


def test_a_value_is_held_against_its_member_with_the_model_as_source() -> None:
    (violation,) = aws_models.check_call("urn", {"logGroupClass": "COLD"}, LOGS)
    assert (violation.urn, violation.path, violation.value) == ("urn", "logGroupClass", "COLD")
    assert violation.rule.startswith("LogGroupClass must be one of: STANDARD, INFREQUENT_ACCESS")
    version = aws_models.facts()["botocore"]
    assert violation.source == f"botocore {version} logs CreateLogGroup request: logGroupClass"


def test_unknown_and_null_values_are_not_judged() -> None:
    assert _violations({"logGroupClass": UNKNOWN, "kmsKeyId": None}) == []
    assert _violations({"name": ["x", UNKNOWN]}) == []


def test_a_required_member_is_reported_unless_the_provider_fills_it() -> None:
    assert _violations({}) == []  # logGroupName: the provider names the group itself
    assert _violations({"topic": "arn:aws:sns:us-east-1:1:t", "protocol": "email"}, SUBSCRIBE) == []
    assert _violations({"protocol": "email"}, SUBSCRIBE) == [("topic", "(absent)", "TopicArn is required")]
    assert _violations({"topic": UNKNOWN}, SUBSCRIBE) == [("protocol", "(absent)", "Protocol is required")]


def test_a_nested_required_member_is_reported_where_its_parent_is() -> None:
    pods = "podIdentityAssociations[]"
    call = ApiCall(
        "eks",
        "CreateAddon",
        {"cluster": "clusterName", "name": "addonName", f"{pods}.roleArn": f"{pods}.roleArn"},
    )
    base = {"cluster": "c", "name": "vpc-cni"}
    assert _violations(base, call) == []  # no association: nothing under it is required
    found = _violations({**base, "podIdentityAssociations": [{"roleArn": "arn:aws:iam::1:role/r"}, {}]}, call)
    assert found == [("podIdentityAssociations[1].roleArn", "(absent)", f"{pods}.roleArn is required")]


def test_a_required_member_no_input_maps_to_is_reported_on_the_resource() -> None:
    call = ApiCall("ec2", "CreateLaunchTemplate", {"name": "LaunchTemplateName"})
    assert _violations({"name": "lt"}, call) == [("", "(absent)", "LaunchTemplateData is required")]


def test_check_runs_every_operation_of_each_mapped_type() -> None:
    resources = (
        RecordedResource(LOG_GROUP, "g", "urn:g", "", True, {"logGroupClass": "COLD"}, (), {}, False, False, ""),
        RecordedResource("aws:x/y:Z", "z", "urn:z", "", True, {"logGroupClass": "COLD"}, (), {}, False, False, ""),
    )
    assert [(v.urn, v.path) for v in aws_models.check(Recording("s", False, resources, {}))] == [
        ("urn:g", "logGroupClass")
    ]


@pytest.mark.parametrize(
    ("value", "unknown"),
    [
        (UNKNOWN, True),
        ({"a": "known", "b": {"c": UNKNOWN}}, True),
        ([1, [UNKNOWN]], True),
        ({"a": "known"}, False),
        (["known", 1], False),
        (0, False),
    ],
)
def test_a_value_with_any_part_unknown_in_preview_is_unknown(value: Any, unknown: bool) -> None:
    assert aws_models._unknown(value) is unknown

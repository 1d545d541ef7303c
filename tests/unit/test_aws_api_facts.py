"""The botocore facts the contract tier reads are what the installed botocore says, for every mapped member."""

from __future__ import annotations

import pytest

from trainstack.contracts import aws_models, record_aws_api
from trainstack.contracts.aws_models import API_MAP, ApiCall, facts, member_key, shape_problems


def test_recorded_facts_equal_the_installed_botocore_models() -> None:
    # Fails after a botocore upgrade that moves a constraint: re-run `python -m trainstack.contracts.record_aws_api`.
    assert record_aws_api.render(record_aws_api.record()) == aws_models.FACTS_FILE.read_text(encoding="utf-8")


def test_every_mapped_member_is_recorded_and_every_operation_has_its_required_list() -> None:
    for calls in API_MAP.values():
        for call in calls:
            assert f"{call.service} {call.operation}" in facts()["required"]
            for member_path in call.members.values():
                assert member_key(call, member_path) in facts()["members"]


def test_a_member_the_model_lacks_is_refused_when_recording() -> None:
    call = ApiCall("eks", "CreateNodegroup", {"x": "scalingConfig.minimumSize"})
    with pytest.raises(KeyError, match="has no member minimumSize"):
        record_aws_api.resolve(record_aws_api.load_model("eks"), call, "scalingConfig.minimumSize")


@pytest.mark.parametrize(
    ("value", "fact", "expected"),
    [
        ("maybe", {"shape": "S", "type": "string", "enum": ["optional", "required"]}, "must be one of: optional"),
        ("", {"shape": "S", "type": "string", "min": 1}, "at least 1 characters"),
        ("a" * 70, {"shape": "S", "type": "string", "max": 63}, "at most 63 characters"),
        ("Bad Name", {"shape": "S", "type": "string", "pattern": "^[a-z-]+$"}, "must match"),
        (-1.0, {"shape": "I", "type": "integer", "min": 0}, "at least 0"),
        ("ten", {"shape": "I", "type": "integer"}, "is an integer"),
        ("yes", {"shape": "B", "type": "boolean"}, "is a boolean"),
        ([1, 2], {"shape": "L", "type": "list", "max": 1, "member": {"shape": "I", "type": "integer"}}, "at most 1"),
        (
            {"kubernetes.io/x": "1"},
            {
                "shape": "M",
                "type": "map",
                "key": {"shape": "K", "type": "string", "max": 5},
                "value": {"shape": "V", "type": "string"},
            },
            "key 'kubernetes.io/x'",
        ),
    ],
)
def test_shape_problems_name_what_is_valid(value: object, fact: dict, expected: str) -> None:
    assert any(expected in problem for problem in shape_problems(value, fact))


@pytest.mark.parametrize(
    ("value", "fact"),
    [
        (16.0, {"shape": "I", "type": "integer", "min": 0}),  # protobuf numbers are doubles
        ("true", {"shape": "B", "type": "boolean"}),  # the provider takes "true" for launch-template booleans
        ("Ünïcode tag", {"shape": "T", "type": "string", "pattern": r"^([\p{L}\p{Z}\p{N}_.:/=+\-@]*)$"}),
    ],
)
def test_values_the_provider_converts_are_accepted(value: object, fact: dict) -> None:
    assert list(shape_problems(value, fact)) == []

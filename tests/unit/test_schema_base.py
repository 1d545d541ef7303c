"""The schema's shared constrained types, each case alone: a principal ARN names exactly one role a person assumes
(no pattern, no IAM user, no service-linked role, judged on the ARN's resource, colons in its path included), and
an instance type is one the catalog knows."""

from __future__ import annotations

import pytest
from pydantic import TypeAdapter, ValidationError

from stacks.catalog import CATALOG
from stacks.schema.base import CatalogInstanceType, RoleArn

ROLE = TypeAdapter(RoleArn)
INSTANCE_TYPE = TypeAdapter(CatalogInstanceType)
ACCOUNT = "arn:aws:iam::123456789012"


def _refusal(adapter: TypeAdapter, value: object) -> str:
    with pytest.raises(ValidationError) as caught:
        adapter.validate_python(value)
    [error] = caught.value.errors()
    assert error["input"] == value  # the message shows what was given
    return error["msg"]


@pytest.mark.parametrize(
    "arn",
    [
        f"{ACCOUNT}:role/ml-platform-admin",
        f"{ACCOUNT}:role/teams/research-admin",
        f"{ACCOUNT}:role/ops:eu/admin",  # a path may hold a colon (IAM pathType is any printable ASCII)
        "arn:aws-cn:iam::123456789012:role/service-role-admin",
    ],
)
def test_one_role_a_person_assumes_is_accepted_as_written(arn: str) -> None:
    assert ROLE.validate_python(arn) == arn


@pytest.mark.parametrize(
    ("arn", "resource"),
    [
        (f"{ACCOUNT}:role/team*/admin", "role/team*/admin"),
        (f"{ACCOUNT}:role/team?/admin", "role/team?/admin"),
        (f"{ACCOUNT}:role/ops:eu*/admin", "role/ops:eu*/admin"),
    ],
)
def test_a_wildcard_in_either_spelling_is_refused_as_a_pattern_naming_the_resource(arn: str, resource: str) -> None:
    message = _refusal(ROLE, arn)
    assert f"{arn} is a pattern: it would match every role whose name fits {resource!r}" in message


@pytest.mark.parametrize("arn", [f"{ACCOUNT}:user/alice", f"{ACCOUNT}:user/ops:team/alice"])
def test_an_iam_user_is_refused_as_a_user(arn: str) -> None:
    assert f"{arn} is an IAM user" in _refusal(ROLE, arn)


@pytest.mark.parametrize(
    "arn",
    [
        f"{ACCOUNT}:role/aws-service-role/autoscaling.amazonaws.com/AWSServiceRoleForAutoScaling",
        f"{ACCOUNT}:role/aws-service-role/a:b/AWSServiceRoleForX",
    ],
)
def test_a_service_linked_role_is_refused_as_belonging_to_aws(arn: str) -> None:
    assert f"{arn} is an AWS service-linked role" in _refusal(ROLE, arn)


@pytest.mark.parametrize("value", [123, None, ["arn"], True])
def test_a_principal_that_is_not_text_is_refused_as_a_type_error_showing_the_value(value: object) -> None:
    assert _refusal(ROLE, value) == "Input should be a valid string"


def test_a_catalog_instance_type_is_accepted_and_an_unknown_one_lists_the_valid_types() -> None:
    assert INSTANCE_TYPE.validate_python("p5.48xlarge") == "p5.48xlarge"
    message = _refusal(INSTANCE_TYPE, "p5.49xlarge")
    assert message == f"Value error, unknown instance type; valid: {', '.join(sorted(CATALOG))}"

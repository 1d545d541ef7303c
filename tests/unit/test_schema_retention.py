"""Tier 1: every CloudWatch log-group retention in the schema accepts exactly CloudWatch's allowed values."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter, ValidationError

from stacks.load import ConfigError
from stacks.schema import LOG_RETENTION_DAYS, StackConfig
from stacks.schema.base import RetentionDays
from tests.conftest import edited_config

FIELDS: dict[str, Callable[[dict[str, Any], int], None]] = {
    "eks.log_retention_days": lambda raw, days: raw["eks"].update(log_retention_days=days),
    "network.flow_logs_retention_days": lambda raw, days: raw["network"].update(flow_logs_retention_days=days),
    "storage.fsx.log_retention_days": lambda raw, days: raw["storage"]["fsx"].update(log_retention_days=days),
}


def _config(field: str, days: int) -> StackConfig:
    return edited_config("dev", lambda raw: FIELDS[field](raw, days))


@pytest.mark.parametrize("field", sorted(FIELDS))
def test_45_days_is_refused_before_pulumi_up(field: str) -> None:
    # 45 is no CloudWatch retention: PutRetentionPolicy answers InvalidParameterException at `up`.
    with pytest.raises(ConfigError, match="not a CloudWatch retention period"):
        _config(field, 45)


@settings(max_examples=60, deadline=None)
@given(field=st.sampled_from(sorted(FIELDS)), days=st.integers(min_value=-5, max_value=4000))
def test_a_retention_is_valid_exactly_when_cloudwatch_allows_it(field: str, days: int) -> None:
    if days in LOG_RETENTION_DAYS:
        _config(field, days)
    else:
        with pytest.raises(ConfigError):
            _config(field, days)


def test_json_schema_lists_the_allowed_values_for_every_retention() -> None:
    schema = StackConfig.model_json_schema()
    defs = schema["$defs"]
    fields = [
        defs["EksSpec"]["properties"]["log_retention_days"],
        defs["NetworkSpec"]["properties"]["flow_logs_retention_days"],
        defs["FsxSpec"]["properties"]["log_retention_days"],
    ]
    assert all(f["enum"] == list(LOG_RETENTION_DAYS) for f in fields)


@pytest.mark.parametrize("days", [1, 90, 3653])
def test_a_cloudwatch_retention_is_kept_as_given(days: int) -> None:
    assert TypeAdapter(RetentionDays).validate_python(days) == days


@pytest.mark.parametrize("days", [0, 2, 45, 3654])
def test_a_retention_cloudwatch_refuses_is_named_with_the_valid_values(days: int) -> None:
    with pytest.raises(ValidationError, match=f"{days} is not a CloudWatch retention period: use one of \\[1, 3, 5,"):
        TypeAdapter(RetentionDays).validate_python(days)

"""docs/plan-json.md is generated from plan.schema.json and `json_fields.FIELDS`: it cannot drift from either."""

from __future__ import annotations

import json

import pytest

from scripts import plan_json_fields as json_fields
from tests.conftest import ROOT
from trainstack.report import json_report

PAGE = ROOT / "docs" / "plan-json.md"


def test_the_page_is_what_the_generator_writes() -> None:
    assert PAGE.read_text() == json_fields.render(), "docs/plan-json.md is stale: make docs"


def test_every_field_of_the_schema_is_described_and_no_other() -> None:
    rows = json_fields.rows()
    paths = [path for path, _, _ in rows]
    assert [path for path, _, description in rows if not description.strip()] == []
    assert sorted(set(json_fields.FIELDS) - set(paths)) == []  # a described field the schema does not have
    assert sorted(set(json_fields.SUMMARISED) - set(paths)) == []
    assert len(paths) == len(set(paths))


def test_a_field_added_to_the_schema_without_a_description_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    schema = json.loads(json_report.SCHEMA_PATH.read_text())
    schema["$defs"]["diagnostic"]["properties"]["prefix"] = {"type": "string"}
    monkeypatch.setattr(json_fields, "schema", lambda: schema)
    assert ("diagnostics[].prefix", "string", "") in json_fields.rows()


def test_the_page_types_come_from_the_schema() -> None:
    types = {path: type_ for path, type_, _ in json_fields.rows()}
    assert types["diagnostics[].severity"] == '"error" \\| "warning" \\| "info"'
    assert types["steps[].detailedDiff"] == "null \\| object"
    assert types["trainstack.summary.resourceCount"] == "integer"
    assert types["trainstack.formatVersion"] == str(json_report.FORMAT_VERSION)

"""docs/preflight-json.md is generated from preflight.schema.json and `json_fields.FIELDS`: it cannot drift."""

from __future__ import annotations

from scripts import preflight_json_fields as json_fields
from tests.conftest import ROOT

PAGE = ROOT / "docs" / "preflight-json.md"


def test_the_page_is_what_the_generator_writes() -> None:
    assert PAGE.read_text() == json_fields.render(), "docs/preflight-json.md is stale: make docs"


def test_every_field_of_the_schema_is_described_and_no_other() -> None:
    paths = [path for path, _, _ in json_fields.rows()]
    assert [path for path, _, description in json_fields.rows() if not description.strip()] == []
    assert sorted(set(json_fields.FIELDS) - set(paths)) == []
    assert len(paths) == len(set(paths))

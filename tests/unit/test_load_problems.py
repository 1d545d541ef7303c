"""Problems of a stack config said once each: an encrypted Pulumi secret (`secure:`) in the config the Pulumi CLI
hands the program (a JSON string) named by its key, inside lists too, without the schema's complaints about the same
values; a missing key; a null where text belongs, without a quoting hint."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stacks.load import FULL_KEY, ConfigError, load_file, validate_object
from tests.conftest import ROOT, stack_document

SECRET = "an encrypted Pulumi secret (`secure:`)"


def test_each_secret_is_named_once_and_nothing_else_is_said_of_it() -> None:
    raw = stack_document("dev")["config"][FULL_KEY]
    raw["eks"]["version"] = {"secure": "AAAB"}  # a literal the schema would refuse, were it read
    raw["kubernetes"]["teams"][0]["name"] = {"secure": "AAAC"}  # inside a list
    with pytest.raises(ConfigError) as refused:
        validate_object(json.dumps(raw), "Pulumi config")
    assert [(p.key, p.message.startswith(SECRET)) for p in refused.value.problems] == [
        (f"{FULL_KEY}.eks.version", True),
        (f"{FULL_KEY}.kubernetes.teams.0.name", True),
    ]


def _problems_of(tmp_path: Path, old: str, new: str) -> list[tuple[str, str]]:
    text = (ROOT / "stacks" / "Pulumi.dev.yaml").read_text()
    assert old in text
    path = tmp_path / "Pulumi.proposed.yaml"
    path.write_text(text.replace(old, new, 1))
    with pytest.raises(ConfigError) as refused:
        load_file(path, "--config")
    return [(p.key, p.message) for p in refused.value.problems]


def test_a_missing_key_is_one_problem(tmp_path: Path) -> None:
    assert _problems_of(tmp_path, "    region: us-east-1\n", "") == [(f"{FULL_KEY}.region", "required key is missing")]


def test_a_null_where_text_belongs_gets_no_quoting_hint(tmp_path: Path) -> None:
    """Quoting `~` would make it the text "~", not what was meant: only a number, a boolean or a date read where
    text belongs is told to quote it."""
    assert _problems_of(tmp_path, "    region: us-east-1\n", "    region: ~\n") == [
        (f"{FULL_KEY}.region", "Input should be a valid string")
    ]

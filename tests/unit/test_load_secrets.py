"""An encrypted Pulumi secret (`secure:`) in the config the Pulumi CLI hands the program (a JSON string): each one
is named once by its key, inside lists too, and the schema's complaints about the same values are not repeated."""

from __future__ import annotations

import json

import pytest

from stacks.load import FULL_KEY, ConfigError, validate_object
from tests.conftest import stack_document

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

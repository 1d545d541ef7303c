"""Shared test helpers.

- `stack_config(name)`: a committed stack file, validated.
- `edited_config(name, edit)`: a copy of a committed stack's config with one edit applied (for bad-input
  and policy tests), validated.
- `recording(name)`: the whole program run once per stack and preview flag under fresh mocks (cached:
  a Recording is plain data, and every run already gets its own mocks and event loop).
- `run_component(build, ...)`: one component under fresh recording mocks.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from stacks.load import FULL_KEY, load_file, validate_object
from stacks.schema import ClusterConfig
from trainstack.engine import Recording, run, run_program

ROOT = Path(__file__).resolve().parent.parent
STACKS = ("dev", "staging", "prod")


def stack_document(name: str) -> dict[str, Any]:
    return yaml.safe_load((ROOT / "stacks" / f"Pulumi.{name}.yaml").read_text())


@functools.cache
def stack_config(name: str) -> ClusterConfig:
    return load_file(ROOT / "stacks" / f"Pulumi.{name}.yaml")


def edited_config(name: str, edit: Callable[[dict[str, Any]], None]) -> ClusterConfig:
    """The named stack's `trainstack:cluster` object with `edit` applied in place, validated."""
    raw = copy.deepcopy(stack_document(name)["config"][FULL_KEY])
    edit(raw)
    return validate_object(raw, f"edited {name}")


@functools.cache
def recording(name: str, preview: bool = False) -> Recording:
    return run_program(stack_config(name), stack=name, preview=preview)


def run_component(
    build: Callable[[], Any], *, stack: str = "test", region: str = "us-east-1", preview: bool = False
) -> Recording:
    return run(build, stack=stack, region=region, preview=preview)


@pytest.fixture(params=STACKS)
def stack_name(request: pytest.FixtureRequest) -> str:
    return request.param

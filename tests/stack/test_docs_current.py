"""Every generated page is current, the plan examples in README.md and docs/plan.md included: those are cut from
what `trainstack plan --stack dev --output FILE` writes (the session's shared dev recording), so a change to the
plan's text that the docs do not show fails here, and `make docs` rewrites them."""

from __future__ import annotations

import pytest

from scripts import docs
from tests.conftest import ROOT

pytestmark = pytest.mark.usefixtures("shared_recordings")  # tests/conftest.py: the CLI reads the shared recording


def test_check_mode_finds_every_page_current() -> None:
    assert docs.main(["--check"]) == 0, "regenerate: make docs"


def test_the_readme_shows_the_dev_plans_head_and_its_compute_table() -> None:
    shown = docs.block((ROOT / "README.md").read_text(), docs.PLAN_EXAMPLE_BLOCK)
    plan = docs.dev_plan_text()
    head = plan.split("\n\n", 1)[0]
    compute = next(p for p in plan.split("\n\n") if p.startswith("Compute\n"))
    assert shown == f"```\n{head}\n...\n{compute}\n...\n```"

"""The examples in docstrings run: every module of the program, the pack and the tooling that shows one (`>>>`)."""

from __future__ import annotations

import doctest
import importlib
from pathlib import Path

import pytest

from tests.conftest import ROOT

PACKAGES = ("stacks", "components", "trainstack", "policies")


def _with_examples() -> list[Path]:
    paths = (p for package in PACKAGES for p in (ROOT / package).rglob("*.py") if ".venv" not in p.parts)
    return sorted(p.relative_to(ROOT) for p in paths if ">>> " in p.read_text())


@pytest.mark.parametrize("path", _with_examples(), ids=str)
def test_docstring_examples_hold(path: Path) -> None:
    module = importlib.import_module(".".join(path.with_suffix("").parts))
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, verbose=False)
    assert result.attempted > 0
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples in {path} fail (output above)"

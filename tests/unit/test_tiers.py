"""The fast tier's guard (tests/conftest.py): a test not marked slow that starts a new Python interpreter fails
with a message saying to mark it, and processes that are not Python pass."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import _starts_python

BIN = Path(sys.executable).parent


@pytest.mark.parametrize(
    "args",
    [
        [sys.executable, "-c", "pass"],
        ["bash", "-c", f"exec {sys.executable} -m trainstack schema >&-"],
        [str(BIN / "lint-imports"), "--no-cache"],  # a console script of this virtualenv
        sys.executable,
    ],
)
def test_a_new_interpreter_is_recognised(args: list[str] | str) -> None:
    assert _starts_python(args)


@pytest.mark.parametrize(
    "args",
    [["bash", "-n", "on_create.sh"], [str(BIN / "zizmor"), "--offline"], [str(BIN / "shellcheck")], "true"],
)
def test_other_processes_are_not(args: list[str] | str) -> None:
    assert not _starts_python(args)


def test_a_fast_test_that_starts_an_interpreter_fails_and_says_to_mark_it() -> None:
    with pytest.raises(pytest.fail.Exception, match=r"mark it @pytest\.mark\.slow"):
        subprocess.run([sys.executable, "-c", "pass"], check=False)
    assert subprocess.run(["true"], check=False).returncode == 0

"""The tier guard (tests/conftest.py): a test that costs more than its mark allows fails and names the mark it
needs; a new interpreter is recognised as one, and other processes are not."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import _starts_interpreter, edited_config, program_recording, recording
from trainstack.engine import run_program

BIN = Path(sys.executable).parent


@pytest.mark.parametrize(
    "args",
    [
        [sys.executable, "-c", "pass"],
        ["bash", "-c", f"exec {sys.executable} -m trainstack schema >&-"],
        [str(BIN / "lint-imports"), "--no-cache"],  # a console script of this virtualenv
        sys.executable,
        ["node", "render_mermaid.mjs"],  # starts the browser
    ],
)
def test_a_new_interpreter_is_recognised(args: list[str] | str) -> None:
    assert _starts_interpreter(args)


@pytest.mark.parametrize(
    "args",
    [["bash", "-n", "on_create.sh"], [str(BIN / "zizmor"), "--offline"], [str(BIN / "shellcheck")], "true"],
)
def test_other_processes_are_not(args: list[str] | str) -> None:
    assert not _starts_interpreter(args)


def test_a_fast_test_that_starts_an_interpreter_fails_and_says_to_mark_it_e2e() -> None:
    with pytest.raises(pytest.fail.Exception, match=r"mark it @pytest\.mark\.e2e"):
        subprocess.run([sys.executable, "-c", "pass"], check=False)
    assert subprocess.run(["true"], check=False).returncode == 0


def test_a_fast_test_that_reads_a_committed_stacks_recording_fails_and_says_to_mark_it_slow() -> None:
    with pytest.raises(pytest.fail.Exception, match=r"mark it @pytest\.mark\.slow"):
        recording("dev")


def _one_more_system_node(cluster: dict[str, Any]) -> None:
    cluster["eks"]["system_node_group"]["max_size"] += 1


@pytest.mark.slow
def test_a_slow_test_that_plans_its_own_stack_fails_and_says_to_mark_it_e2e() -> None:
    edited = edited_config("dev", _one_more_system_node)
    with pytest.raises(pytest.fail.Exception, match=r"mark it @pytest\.mark\.e2e"):
        program_recording(edited, "dev")
    with pytest.raises(pytest.fail.Exception, match=r"mark it @pytest\.mark\.e2e"):
        run_program(edited, stack="dev")


@pytest.mark.slow
def test_a_slow_test_that_starts_an_interpreter_fails_and_says_to_mark_it_e2e() -> None:
    with pytest.raises(pytest.fail.Exception, match=r"mark it @pytest\.mark\.e2e"):
        subprocess.run(["node", "--version"], check=False)

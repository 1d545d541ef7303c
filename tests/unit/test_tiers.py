"""The tier guard (tests/tiers.py): a test that costs more than its mark allows fails and names the mark it needs,
an e2e test that costs no more than a slow one fails too; a new interpreter is recognised as one, and other
processes are not."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT, edited_config, program_recording, recording
from tests.tiers import starts_interpreter
from trainstack.engine import run_program

BIN = Path(sys.executable).parent


@pytest.mark.parametrize(
    "args",
    [
        [sys.executable, "-c", "pass"],
        ["bash", "-c", f"exec {sys.executable} -m trainstack schema >&-"],
        [str(BIN / "lint-imports"), "--no-cache"],  # a console script of this virtualenv
        sys.executable,
        ["policies/.venv/bin/python", "-m", "pulumi.policy"],  # another virtualenv's Python (the served pack)
        ["node", "render_mermaid.mjs"],  # starts the browser
    ],
)
def test_a_new_interpreter_is_recognised(args: list[str] | str) -> None:
    assert starts_interpreter(args)


@pytest.mark.parametrize(
    "args",
    [["bash", "-n", "on_create.sh"], [str(BIN / "zizmor"), "--offline"], [str(BIN / "shellcheck")], "true"],
)
def test_other_processes_are_not(args: list[str] | str) -> None:
    assert not starts_interpreter(args)


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
        run_program(edited, stack_name="dev")


@pytest.mark.slow
def test_a_slow_test_that_starts_an_interpreter_fails_and_says_to_mark_it_e2e() -> None:
    with pytest.raises(pytest.fail.Exception, match=r"mark it @pytest\.mark\.e2e"):
        subprocess.run(["node", "--version"], check=False)


# What only a whole pytest session shows: fixtures set up before a test's own code, helpers answered from a cache,
# and e2e tests that cost nothing. A session of its own, in a new interpreter with the plugin loaded.
SESSION = {
    "test_module_fixture": """
        import pytest
        from tests.tiers import require

        @pytest.fixture(scope="module")
        def planned():
            require("e2e", "plans a stack of its own")

        def test_unmarked_uses_it(planned):
            pass
    """,
    "test_module_fixture_e2e": """
        import pytest
        from tests.tiers import require

        @pytest.fixture(scope="module")
        def planned():
            require("e2e", "plans a stack of its own")

        @pytest.mark.e2e
        def test_first_sets_it_up(planned):
            pass

        @pytest.mark.e2e
        def test_second_reuses_it(planned):
            pass
    """,
    "test_cached_helper": """
        import pytest
        from tests.tiers import cache, require

        @cache
        def planned():
            require("e2e", "plans a stack of its own")

        @pytest.mark.e2e
        def test_first_call(): planned()

        @pytest.mark.e2e
        def test_cached_call(): planned()

        def test_cached_call_unmarked(): planned()
    """,
    "test_costs_nothing": """
        import pytest

        @pytest.mark.e2e
        def test_marked_e2e_for_nothing():
            pass
    """,
}


@pytest.mark.e2e
def test_a_session_counts_fixtures_and_cached_helpers_and_sends_cheap_e2e_tests_to_the_gate(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(**{name: textwrap.dedent(source) for name, source in SESSION.items()})
    pytester.makeini("[pytest]\nmarkers =\n    slow\n    e2e\n")
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    result = pytester.runpytest_subprocess("-p", "tests.tiers", "-p", "no:cacheprovider", "-p", "no:xdist", "-rA")
    result.stdout.re_match_lines(
        [
            r"_+ ERROR at setup of test_unmarked_uses_it _+",
            r"this test plans a stack of its own: mark it @pytest\.mark\.e2e \(docs/testing\.md\)",
            r"_+ test_cached_call_unmarked _+",
            r"this test plans a stack of its own: mark it @pytest\.mark\.e2e \(docs/testing\.md\)",
            r"_+ test_marked_e2e_for_nothing _+",
            r"this test is marked e2e but neither plans a stack of its own nor starts an interpreter: mark it "
            r"@pytest\.mark\.slow \(or nothing\) so that `make test` runs it \(docs/testing\.md\)",
            r"PASSED test_cached_helper\.py::test_first_call",
            r"PASSED test_cached_helper\.py::test_cached_call",
            r"PASSED test_module_fixture_e2e\.py::test_first_sets_it_up",
            r"PASSED test_module_fixture_e2e\.py::test_second_reuses_it",
        ],
        consecutive=False,
    )
    result.assert_outcomes(passed=4, failed=2, errors=1)

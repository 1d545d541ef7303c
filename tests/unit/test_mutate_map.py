"""`make mutate`'s coverage map (scripts/mutate.py): which tests a mutated line runs. A line run while a shared
result was made (a program recording, a cached review) belongs to every test that read the result, also when
that result was made inside another one (a committed stack's cached review reads its recording)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from scripts import mutate
from scripts.mutate import PHASE_TESTS, CoverageMap, Mutant, phases_of

CONTEXTS = [
    "tests/unit/test_a.py::test_direct",
    "recording:prod",  # the program run for prod's recording
    "recording:cached:review('prod',)",  # the review of it, made once and cached
    "tests/policy/test_rules.py::test_broken",
]
READERS = {
    "prod": ["recording:cached:review('prod',)", "tests/stack/test_x.py::test_reads_the_recording"],
    "cached:review('prod',)": ["tests/policy/test_rules.py::test_ok", "tests/policy/test_rules.py::test_na"],
}


def _map(lines: dict[int, list[int]], at_import: list[int] | None = None) -> CoverageMap:
    durations = {
        "tests/unit/test_a.py::test_direct": 0.1,
        "tests/stack/test_x.py::test_reads_the_recording": 0.2,
        "tests/policy/test_rules.py::test_ok": 0.3,
        "tests/policy/test_rules.py::test_na": 0.3,
        "tests/policy/test_rules.py::test_broken": -1.0,  # failed unmutated: it cannot kill
    }
    return CoverageMap(CONTEXTS, {"m.py": lines}, {"m.py": at_import or []}, READERS, durations)


def test_a_line_run_by_a_test_is_that_tests() -> None:
    assert _map({1: [0]}).tests("m.py", 1, 1) == {"tests/unit/test_a.py::test_direct"}


def test_a_line_run_for_a_cached_review_belongs_to_each_test_that_read_it() -> None:
    assert _map({2: [2]}).tests("m.py", 2, 2) == {
        "tests/policy/test_rules.py::test_ok",
        "tests/policy/test_rules.py::test_na",
    }


def test_a_line_run_for_a_recording_reaches_the_readers_of_what_was_made_from_it() -> None:
    assert _map({3: [1]}).tests("m.py", 3, 3) == {
        "tests/stack/test_x.py::test_reads_the_recording",
        "tests/policy/test_rules.py::test_ok",
        "tests/policy/test_rules.py::test_na",
    }


def test_a_test_that_failed_unmutated_is_never_chosen() -> None:
    assert _map({4: [3]}).tests("m.py", 4, 4) == set()


def test_a_line_run_at_import_belongs_to_every_test_of_the_module() -> None:
    found = _map({1: [0], 5: [2]}, at_import=[6]).tests("m.py", 6, 6)
    assert found == {
        "tests/unit/test_a.py::test_direct",
        "tests/policy/test_rules.py::test_ok",
        "tests/policy/test_rules.py::test_na",
    }


def test_a_mutants_tests_run_focused_first_then_the_rest_in_bounded_phases() -> None:
    """The files that name the mutated function run first; every phase, a fresh child, holds at most PHASE_TESTS
    tests (one child running 1,500 grew to 17 GB), fastest first, with a time limit of its own."""
    mutant = Mutant("trainstack/x.py", "pick", "compare", "<", "<=", 1, 10, 10, 0, 1)
    focused = {f"tests/unit/test_mutate_map.py::test_{i}" for i in range(3)}  # this file names pick
    rest = {f"tests/unit/test_reader_edges.py::test_{i}" for i in range(PHASE_TESTS + 1)}
    durations = {t: 1.0 for t in focused | rest}
    phases = phases_of(mutant, focused | rest, durations, 4, 60)
    assert set(phases[0][0]) == focused
    assert [len(tests) for tests, _ in phases] == [3, PHASE_TESTS, 1]
    assert {t for tests, _ in phases[1:] for t in tests} == rest
    assert [limit for _, limit in phases] == [4 * 3 + 60, 4 * PHASE_TESTS + 60, 4 + 60]


def test_the_recording_probe_calls_run_program_as_it_is_declared() -> None:
    """recording_inputs runs the probe in another interpreter, where a renamed parameter would only show as a
    failed mutation run: its call binds to run_program's signature here."""
    import ast
    import inspect

    from scripts.mutate import RECORDING_PROBE
    from trainstack.engine import run_program

    (call,) = [
        node
        for node in ast.walk(ast.parse(RECORDING_PROBE))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "run_program"
    ]
    keywords = {k.arg: None for k in call.keywords if k.arg}
    inspect.signature(run_program).bind(*[None] * len(call.args), **keywords)
    assert keywords == {"stack_name": None}


def test_quick_partial_maps_never_push_out_the_whole_suites(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The whole suite's map costs half an hour on this machine; `--tests` runs make a map each, and must not
    evict it (the cache keeps the newest three of each kind)."""
    monkeypatch.setattr(mutate, "CACHE", tmp_path)
    monkeypatch.setattr(mutate, "ROOT", tmp_path)
    monkeypatch.setattr(mutate, "measurable", lambda sources: [])
    made: list[list[str]] = []

    def fake_map(modules: list[str], work: Path, tests: list[str], deselect: list[str]) -> CoverageMap:
        made.append(tests)
        return _map({1: [0]})

    monkeypatch.setattr(mutate, "coverage_map", fake_map)
    config = {"tests": ["tests"], "sources": ["stacks"]}
    for number in range(5):  # a whole map, then four partial ones, each of another tree
        monkeypatch.setattr(mutate, "tree_state", lambda tests, deselect, n=number: (f"{n:024x}", {}))
        mutate.cached_coverage_map(tmp_path, config, ["tests"] if number == 0 else [f"tests/unit/t{number}.py"])
    names = sorted(p.name for p in tmp_path.glob("*.json"))
    assert f"coverage-{0:024x}.json" in names  # the whole suite's survives
    assert f"coverage-partial-{1:024x}.json" not in names  # the oldest partial one went
    assert len([n for n in names if n.startswith("coverage-partial-")]) == 3
    monkeypatch.setattr(mutate, "tree_state", lambda tests, deselect: (f"{0:024x}", {}))
    mutate.cached_coverage_map(tmp_path, config, ["tests"])
    assert len(made) == 5  # the whole suite's map was reused, not made again


def test_a_mutant_written_in_the_same_second_as_another_of_its_size_is_compiled_afresh(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The import system trusts a .pyc whose source size and whole-second mtime match: each write drops it."""
    import importlib.machinery
    import sys

    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    module = tmp_path / "m.py"

    def value() -> int:
        os.utime(module, (1_700_000_000, 1_700_000_000))  # every write in one and the same second
        namespace: dict[str, int] = {}
        exec(importlib.machinery.SourceFileLoader("m", str(module)).get_code("m"), namespace)  # writes the .pyc
        return namespace["VALUE"]

    mutate.write_source(module, "VALUE = 1\n")
    assert value() == 1
    mutate.write_source(module, "VALUE = 2\n")  # the next mutant: the same size
    assert value() == 2

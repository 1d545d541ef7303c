"""The test tiers (docs/testing.md), checked rather than remembered; a pytest plugin that tests/conftest.py loads.

- fast (no mark): no whole-program run and no new interpreter; `make test-fast`.
- slow: reads the whole-program recording of a committed stack, run once per session for every test that asks.
  Every test under WHOLE_PROGRAM_DIRS is slow.
- e2e (also slow): plans a stack of its own (an edited config), or starts a new process that pays seconds of
  imports or runs dozens of others (Python, node and the browser, the lifecycle scripts), or asks moto's server
  (tests/preflight/conftest.py declares it with `require`); `make test-e2e`.

`make test` runs fast and slow; CI (.ci/run) runs e2e after it. A test that costs more than its mark allows
fails and names the mark it needs, and an e2e test that costs no more than a slow one fails too, so the gate
keeps every test it can afford. What a fixture costs while it is set up counts for every test that uses it.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

import pytest

from trainstack import engine

TIERS = ("fast", "slow", "e2e")
WHOLE_PROGRAM_DIRS = ("tests/stack", "tests/policy", "tests/redteam", "tests/report")


@dataclass
class _Running:
    """What the running test, from its setup to its teardown, is allowed and has needed so far."""

    tier: str | None = None  # None between tests
    paid_e2e: bool = False  # the test (or a fixture it set up) paid for something only e2e allows
    committed_stack_run: bool = False  # a shared recording of a committed stack is running the program
    fixtures: list[str] = field(default_factory=list)  # the fixtures being set up, innermost last
    e2e_fixtures: set[str] = field(default_factory=set)  # fixtures whose setup needed e2e: their tests are e2e
    first_calls: list[list[tuple[str, str]]] = field(default_factory=list)  # cached helpers' first calls, running


_running = _Running()


def require(tier: str, what: str) -> None:
    """The running test (or the fixture being set up) pays for `what`, which needs `tier`: fail the test,
    naming the mark it needs, when its own mark allows less."""
    for costs in _running.first_calls:
        costs.append((tier, what))
    if tier == "e2e":
        _running.paid_e2e = True
        _running.e2e_fixtures.update(_running.fixtures)
    if _running.tier is not None and TIERS.index(_running.tier) < TIERS.index(tier):
        pytest.fail(f"this test {what}: mark it @pytest.mark.{tier} (docs/testing.md)", pytrace=False)


@contextlib.contextmanager
def committed_stack_run() -> Iterator[None]:
    """The shared recording of a committed stack runs the program: a slow test may ask for it."""
    _running.committed_stack_run = True
    try:
        yield
    finally:
        _running.committed_stack_run = False


P = ParamSpec("P")
R = TypeVar("R")


def _not_traced(key: str) -> contextlib.AbstractContextManager[None]:
    return contextlib.nullcontext()


def _not_counted(key: str) -> None:
    return None


# `make mutate`'s coverage run (scripts/mutate.py) sets these two, so that what a cached first call runs is
# credited to every test that reads the result, not only to the test that happened to ask first: `computing(key)`
# is entered around a first call, `reading(key)` is told of every call.
computing: Callable[[str], contextlib.AbstractContextManager[None]] = _not_traced
reading: Callable[[str], None] = _not_counted


def cache(function: Callable[P, R]) -> Callable[P, R]:
    """`functools.cache` for a shared helper whose first call plans a stack: every later call, answered from the
    cache, still costs the running test what the first call needed."""
    name = f"{function.__module__}.{function.__qualname__}"

    @functools.cache
    def first_call(*args: P.args, **kwargs: P.kwargs) -> tuple[R, list[tuple[str, str]]]:
        costs: list[tuple[str, str]] = []
        _running.first_calls.append(costs)
        try:
            with computing(f"{name}{args!r}{kwargs!r}"):
                return function(*args, **kwargs), costs
        finally:
            _running.first_calls.pop()

    @functools.wraps(function)
    def cached(*args: P.args, **kwargs: P.kwargs) -> R:
        reading(f"{name}{args!r}{kwargs!r}")
        result, costs = first_call(*args, **kwargs)
        for tier, what in costs:
            require(tier, what)
        return result

    return cached


def starts_interpreter(args: Any) -> bool:
    """Whether a process started with `args` is a new interpreter that pays seconds of imports: a Python (also
    this one inside a shell's command line), a Python console script (lint-imports, check-jsonschema), or node
    (which starts the browser)."""
    argv = [args] if isinstance(args, str | bytes | os.PathLike) else list(args)
    if any(sys.executable in os.fsdecode(arg) for arg in argv):
        return True
    first = os.fsdecode(argv[0])
    name = Path(first).name
    if name == "node" or name.startswith("python"):
        return True
    program = shutil.which(first)
    if program is None:
        return False
    with open(program, "rb") as script:  # a script's first two lines (a long shebang becomes a sh trampoline)
        head = script.readline(512) + script.readline(512)
    return head.startswith(b"#!") and b"python" in head


class _GuardedRunpy:
    """Stands in for `runpy` in the engine: `run_program` calls `run_path`, which outside the e2e tier only a
    shared recording of a committed stack may reach."""

    def __init__(self, runpy: Any) -> None:
        self._runpy = runpy

    def run_path(self, *args: Any, **kwargs: Any) -> Any:
        if not _running.committed_stack_run:
            require("e2e", "runs the whole program outside the shared recordings (`recording`, `program_recording`)")
        return self._runpy.run_path(*args, **kwargs)


class _GuardedPopen(subprocess.Popen):  # type: ignore[type-arg]
    """Stands in for `subprocess.Popen`: a new interpreter is an e2e test's."""

    def __init__(self, args: Any, *rest: Any, **kwargs: Any) -> None:
        if starts_interpreter(args):
            require("e2e", "starts a new interpreter (seconds of CPU in imports), or call the code in this process")
        super().__init__(args, *rest, **kwargs)


def _tier_of(item: pytest.Item) -> str:
    return next((tier for tier in reversed(TIERS) if item.get_closest_marker(tier) is not None), "fast")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        directory = Path(item.path).resolve().parent
        if item.get_closest_marker("e2e") is not None or (
            directory.is_relative_to(config.rootpath)
            and directory.relative_to(config.rootpath).as_posix().startswith(WHOLE_PROGRAM_DIRS)
        ):
            item.add_marker(pytest.mark.slow)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Iterator[object]:
    """The guards stand for the whole of a test, its fixtures' setup and teardown included (a module's fixtures
    are set up in its first test's setup)."""
    _running.tier, _running.paid_e2e = _tier_of(item), False
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(engine, "runpy", _GuardedRunpy(engine.runpy))
        patch.setattr(subprocess, "Popen", _GuardedPopen)
        try:
            return (yield)
        finally:
            _running.tier = None


@pytest.hookimpl(wrapper=True)
def pytest_fixture_setup(fixturedef: pytest.FixtureDef[Any]) -> Iterator[object]:
    _running.fixtures.append(fixturedef.argname)
    try:
        return (yield)
    finally:
        _running.fixtures.pop()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[object]:
    """An e2e test that passed without planning a stack of its own or starting an interpreter belongs in the
    gate: fail it, saying so."""
    result = yield
    if (
        _running.tier == "e2e"
        and not _running.paid_e2e
        and _running.e2e_fixtures.isdisjoint(getattr(item, "fixturenames", ()))
    ):
        pytest.fail(
            "this test is marked e2e but neither plans a stack of its own nor starts an interpreter: mark it "
            "@pytest.mark.slow (or nothing) so that `make test` runs it (docs/testing.md)",
            pytrace=False,
        )
    return result

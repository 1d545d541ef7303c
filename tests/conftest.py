"""Shared test helpers.

- `stack_config(name)`: a committed stack file, validated.
- `edited_config(name, edit)`: a copy of a committed stack's config with one edit applied (for bad-input
  and policy tests), validated.
- `recording(name)`: the whole program run once per stack and preview flag under fresh mocks.
- `program_recording(stack, stack_name)`: the whole program for any validated config, run once per test session:
  a Recording is plain data, so it is pickled under the session's base temp directory (shared by every xdist
  worker, one run per key under a file lock) and each call unpickles a fresh copy, so no test can change what
  another one reads.
- `run_component(build, ...)`: one component under fresh recording mocks.
- `write_stack(directory, base, edit)`: a committed stack file with one edit, written as a new stack file (for
  tests that drive the CLI with `--config` / `--against`).
- `fresh_plan(stack)`: `python -m trainstack plan --stack <stack> --format json` in a new interpreter, run once
  per session across workers: the tests about the process itself (its output, what it imported) share it.

Tiers (docs/testing.md): fast (no mark), slow (a committed stack's shared recording) and e2e (a stack of its own,
or a new interpreter), checked by the plugin in tests/tiers.py.
"""

from __future__ import annotations

import copy
import fcntl
import functools
import gc
import hashlib
import json
import os
import pickle
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import settings

from stacks.load import FULL_KEY, load_file, validate_object
from stacks.schema import StackConfig
from tests.tiers import committed_stack_run, require
from trainstack import engine
from trainstack.engine import Recording, run, run_program

pytest_plugins = ("tests.tiers", "pytester")

ROOT = Path(__file__).resolve().parent.parent

# Speed is measured by bench/, not by timed tests: no per-example deadline, so a loaded machine cannot make a
# property test fail for being slow.
settings.register_profile("trainstack", deadline=None)
settings.load_profile("trainstack")
# The committed stacks, discovered: a new stack file is tested like the others without editing a list, and the
# tests over them assert what every valid stack must have, never one stack's current size.
STACKS = tuple(
    sorted(path.name.removeprefix("Pulumi.").removesuffix(".yaml") for path in (ROOT / "stacks").glob("Pulumi.*.yaml"))
)


@functools.cache
def _parsed_stack_file(name: str) -> dict[str, Any]:
    return yaml.safe_load((ROOT / "stacks" / f"Pulumi.{name}.yaml").read_text())


def stack_document(name: str) -> dict[str, Any]:
    """A committed stack file, parsed once per process; each call a fresh copy for the caller to edit."""
    return copy.deepcopy(_parsed_stack_file(name))


@functools.cache
def stack_config(name: str) -> StackConfig:
    return load_file(ROOT / "stacks" / f"Pulumi.{name}.yaml")


def edited_config(name: str, edit: Callable[[dict[str, Any]], None]) -> StackConfig:
    """The named stack's `trainstack:cluster` object with `edit` applied in place, validated."""
    raw = stack_document(name)["config"][FULL_KEY]
    edit(raw)
    return validate_object(raw, f"edited {name}")


_shared_dir: list[Path] = []  # set for the session by the fixture below
_blobs: dict[str, bytes] = {}  # this process's copy of each pickled recording


@pytest.fixture(scope="session", autouse=True)
def _shared_recordings(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Where recordings are shared: under xdist the workers' base temps are siblings in the run's own directory
    (which pytest rotates), so their parent is shared by this run only; without xdist, the base temp itself.
    `make mutate` names one directory for the sessions of mutants that cannot change a recording
    (TRAINSTACK_RECORDINGS_DIR), so they do not each run the program again."""
    base = tmp_path_factory.getbasetemp()
    run = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    root = Path(os.environ.get("TRAINSTACK_RECORDINGS_DIR") or run / "trainstack-recordings")
    # What the program under test renders (a fresh process's report) is this run's alone, never another session's.
    session = run / "trainstack-session"
    for directory in (root, session):
        directory.mkdir(exist_ok=True)
    _shared_dir[:] = [root, session]
    yield
    _shared_dir.clear()


def _load_or_run(key: str, run_it: Callable[[], object], this_session_only: bool = False) -> bytes:
    """`run_it()` pickled, made once per session by whichever worker asks first (recordings: once per
    TRAINSTACK_RECORDINGS_DIR when it is set; `this_session_only`: once per session regardless)."""
    if not _shared_dir:  # outside a test session (a script importing this module): this process only
        return pickle.dumps(run_it())
    directory = _shared_dir[1 if this_session_only else 0]
    path = directory / f"{key}.pickle"
    lock = os.open(directory / f"{key}.lock", os.O_CREAT | os.O_RDWR, 0o644)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)  # the first worker runs it; the others wait, then read
        if path.exists():
            return path.read_bytes()
        blob = pickle.dumps(run_it())
        partial = path.with_suffix(f".{os.getpid()}.tmp")
        partial.write_bytes(blob)
        os.replace(partial, path)
        return blob
    finally:
        fcntl.flock(lock, fcntl.LOCK_UN)
        os.close(lock)


def program_recording(stack: StackConfig, stack_name: str, preview: bool = False) -> Recording:
    """The real program's recording for `stack`, run once per session across workers; a fresh copy per call.
    A committed stack's own config is a slow test's; any other config an e2e test's (tests/tiers.py)."""
    if stack_name in STACKS and stack == stack_config(stack_name):
        require("slow", "runs the whole program (a CPU-second or more), or build only its component")
    else:
        require("e2e", "plans a stack of its own (a CPU-second or more per config)")
    identity = json.dumps([stack.model_dump(mode="json"), stack_name, preview], sort_keys=True)
    key = hashlib.sha256(identity.encode()).hexdigest()[:32]
    blob = _blobs.get(key)
    if blob is None:
        with committed_stack_run():
            blob = _blobs[key] = _load_or_run(key, lambda: run_program(stack, stack_name=stack_name, preview=preview))
    return pickle.loads(blob)


def recording(name: str, preview: bool = False) -> Recording:
    return program_recording(stack_config(name), name, preview)


def write_stack(
    directory: Path,
    base: str,
    edit: Callable[[dict[str, Any]], None] = lambda cluster: None,
    *,
    name: str | None = None,
    edit_document: Callable[[dict[str, Any]], None] = lambda document: None,
) -> Path:
    """`stacks/Pulumi.<base>.yaml` with `edit` applied to its `trainstack:cluster` object (and `edit_document` to
    the whole file), written as `<directory>/Pulumi.<name or base>.yaml`: the file name decides the stack."""
    document = stack_document(base)
    edit(document["config"][FULL_KEY])
    edit_document(document)
    path = directory / f"Pulumi.{name or base}.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


@dataclass(frozen=True)
class FreshPlan:
    """One `python -X importtime -m trainstack plan` process: its exit code, its report and the modules it
    imported (`-X importtime` names each module on stderr as it is first imported), and stderr without them."""

    returncode: int
    stdout: str
    stderr: str
    imported: frozenset[str]


def _fresh_plan(stack: str) -> tuple[int, str, str, frozenset[str]]:
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "trainstack", "plan", "--stack", stack, "--format", "json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
        env={**os.environ, "PYTHONHASHSEED": "12345"},  # not this process's seed: ordering cannot lean on it
    )
    lines = done.stderr.splitlines(keepends=True)
    names = {line.rsplit("|", 1)[1].strip() for line in lines if line.startswith("import time:")}
    stderr = "".join(line for line in lines if not line.startswith("import time:"))
    return done.returncode, done.stdout, stderr, frozenset(names - {"imported package"})  # less the header


def fresh_plan(stack: str) -> FreshPlan:
    """`python -m trainstack plan --stack <stack> --format json` in a new interpreter (its own hash seed), once
    per session across workers: a new interpreter costs seconds before it plans anything."""
    require("e2e", "starts a new interpreter (seconds of CPU in imports)")
    blob = _load_or_run(f"fresh-plan-{stack}", lambda: _fresh_plan(stack), this_session_only=True)
    return FreshPlan(*pickle.loads(blob))


def run_component(
    build: Callable[[], Any], *, stack: str = "test", region: str = "us-east-1", preview: bool = False
) -> Recording:
    return run(build, stack=stack, region=region, preview=preview)


@pytest.fixture(params=STACKS)
def stack_name(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def shared_recordings(monkeypatch: pytest.MonkeyPatch) -> None:
    """The plan command runs the real program once per config per session (`program_recording`), not once per
    test: modules that drive `trainstack.cli.main` use this fixture."""
    from trainstack import cli

    monkeypatch.setattr(
        cli,
        "run_program",
        lambda stack, *, stack_name, preview=False: program_recording(stack, stack_name, preview),
    )


# ------------------------------------------------------------------------------------------------ cost

# TRAINSTACK_TEST_COST=1: each process prints how many whole-program runs it made and the CPU seconds they and
# the session took, so a change to the suite's cost is measured (docs/testing.md "What it costs").
_cost = {"runs": 0, "run_cpu": 0.0}


class _CountedRunpy:
    """Stands in for `runpy` in the engine: counts every whole-program run, cached or not."""

    def __init__(self, runpy: Any) -> None:
        self._runpy = runpy

    def run_path(self, *args: Any, **kwargs: Any) -> Any:
        _cost["runs"] += 1
        return self._runpy.run_path(*args, **kwargs)


def _counted_run(run: Callable[..., Recording]) -> Callable[..., Recording]:
    """`engine.run`, timed when it runs the whole program: most of a run's CPU goes after `run_path` returns,
    while the SDK settles the registrations the program made."""

    @functools.wraps(run)
    def timed(*args: Any, **kwargs: Any) -> Recording:
        runs, started = _cost["runs"], time.process_time()
        try:
            return run(*args, **kwargs)
        finally:
            if _cost["runs"] > runs:
                _cost["run_cpu"] += time.process_time() - started

    return timed


if os.environ.get("TRAINSTACK_TEST_COST"):
    engine.runpy = _CountedRunpy(engine.runpy)  # type: ignore[assignment]
    engine.run = _counted_run(engine.run)


_test_cpu: dict[str, float] = {}


def pytest_collection_finish(session: pytest.Session) -> None:
    """Every module the suite needs is imported now (pulumi_aws alone is hundreds of thousands of objects):
    freeze them out of the collector's reach, and collect the young generation less often, so the garbage
    collector stops rescanning the SDKs during each program run and policy review. Measured on twelve
    red-team cases in one process: 20-21 CPU-s before, 15.5-17.5 after."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(10_000, 20, 20)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Iterator[None]:
    started = time.process_time()
    yield
    _test_cpu[item.nodeid] = time.process_time() - started


def pytest_sessionfinish(session: pytest.Session) -> None:
    if os.environ.get("TRAINSTACK_TEST_COST"):
        with open(os.environ["TRAINSTACK_TEST_COST"] + ".tests", "a") as out:
            out.writelines(f"{cpu:.3f} {nodeid}\n" for nodeid, cpu in _test_cpu.items())
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        line = (
            f"trainstack test cost [{worker}]: {_cost['runs']} program runs, {_cost['run_cpu']:.1f} CPU-s in them,"
            f" {time.process_time():.1f} CPU-s in the process\n"
        )
        with open(os.environ["TRAINSTACK_TEST_COST"], "a") as out:
            out.write(line)

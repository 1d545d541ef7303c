"""Mutation testing of the core modules (`make mutate`): how many small, realistic mistakes the tests catch.

mutmut skips every decorated function (pydantic validators, properties, policy rules), which is most of what
matters here, so this is a small AST-based driver of our own:

1. Mutants: every function body of each module in bench/mutation.toml is walked for the operators below; a
   mutant is a text edit at the node's exact position (comments, layout and line numbers stay), and its id is
   stable across moves: module::function::operator::original->replacement#n.
2. Sampling: a fixed number per module (`cap`), drawn with a fixed seed from the sorted ids.
3. Tests per mutant: the suite runs once under coverage with one dynamic context per test (and one per shared
   program recording, credited to every test that reads it), mapping each line to the tests that run it.
4. Each mutant is written into a temporary copy of the tree (never the working tree) and its tests run there
   with `-x`, fastest first, in a child forked from a process that has already imported the heavy SDKs: first
   the test files that name the mutated function (or its class, or its module), then, only if they all pass,
   the rest (collecting hundreds of tests costs more than running the one that fails).
   Killed: any failure, error or timeout. Survived: all pass, or no test reaches the line.
5. Per module: killed / (mutants - equivalents listed in bench/mutation-equivalents.toml) against the floor;
   the report goes to bench/mutation-report.{md,json} and the exit code is 1 if any module is below it.

Usage: python scripts/mutate.py [--module PATH ...] [--id ID ...] [--no-report] [--list]
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import datetime
import functools
import hashlib
import importlib.util
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import tomllib
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from typing_extensions import override

ROOT = Path(__file__).resolve().parent.parent
CONFIG = ROOT / "bench" / "mutation.toml"
EQUIVALENTS = ROOT / "bench" / "mutation-equivalents.toml"
REPORT_MD = ROOT / "bench" / "mutation-report.md"
REPORT_JSON = ROOT / "bench" / "mutation-report.json"
CACHE = ROOT / ".mutate-cache"  # coverage maps, keyed by the hash of the tree they were made from
PYTHON = ROOT / ".venv" / "bin" / "python"
WORKERS = 2
# The same examples in every run (a mutant's verdict must not depend on the draw), and no coverage warnings.
PYTEST_FIXED = ("--hypothesis-seed=0", "-W", "ignore::coverage.exceptions.CoverageWarning")

COMPARE_FLIPS: dict[type[ast.cmpop], tuple[str, str]] = {
    ast.Lt: ("<", "<="),
    ast.LtE: ("<=", "<"),
    ast.Gt: (">", ">="),
    ast.GtE: (">=", ">"),
    ast.Eq: ("==", "!="),
    ast.NotEq: ("!=", "=="),
    ast.In: ("in", "not in"),
    ast.NotIn: ("not in", "in"),
    ast.Is: ("is", "is not"),
    ast.IsNot: ("is not", "is"),
}
BINOP_FLIPS: dict[type[ast.operator], tuple[str, str]] = {
    ast.Add: ("+", "-"),
    ast.Sub: ("-", "+"),
    ast.Mult: ("*", "/"),
    ast.Div: ("/", "*"),
    ast.FloorDiv: ("//", "*"),
}
Located = ast.expr | ast.stmt  # the nodes a mutant replaces: those with a position in the source


@dataclass(frozen=True)
class Mutant:
    module: str  # repository-relative path
    function: str  # qualified name of the enclosing function
    operator: str
    original: str
    replacement: str
    occurrence: int
    line: int
    end_line: int
    start: int  # character offsets of the replaced text in the module's source
    end: int

    @property
    def id(self) -> str:
        return f"{self.module}::{self.function}::{self.operator}::{self.original}->{self.replacement}#{self.occurrence}"

    def apply(self, source: str) -> str:
        return source[: self.start] + self.replacement_text(source) + source[self.end :]

    def replacement_text(self, source: str) -> str:
        if self.operator != "delete-statement":
            return self.replacement
        # keep the line count, so line numbers (and the coverage map) still match
        return "pass" + "\n" * source[self.start : self.end].count("\n")


def _offsets(source: str) -> list[int]:
    starts: list[int] = []
    total = 0
    for line in source.splitlines(keepends=True):
        starts.append(total)
        total += len(line)
    starts.append(total)
    return starts


def _end(node: Located) -> tuple[int, int]:
    """The node's end line and column: ast.parse sets both (they are None only on nodes built by hand)."""
    if node.end_lineno is None or node.end_col_offset is None:
        raise ValueError(f"{type(node).__name__} at line {node.lineno} has no end position")
    return node.end_lineno, node.end_col_offset


class _Finder(ast.NodeVisitor):
    """Walks function bodies only: module-level tables are facts checked by their own tests, not logic."""

    def __init__(self, module: str, source: str) -> None:
        self.module, self.source, self.lines = module, source, _offsets(source)
        self.scope: list[str] = []
        self.functions = 0
        self.found: list[tuple[str, str, str, str, Located, int, int]] = []
        self.docstrings: set[int] = set()

    def pos(self, line: int, col: int) -> int:
        # ast columns are UTF-8 byte offsets
        text = self.source[self.lines[line - 1] : self.lines[line]]
        return self.lines[line - 1] + len(text.encode()[:col].decode())

    def span(self, node: Located) -> tuple[int, int]:
        end_line, end_col = _end(node)
        return self.pos(node.lineno, node.col_offset), self.pos(end_line, end_col)

    def add(self, op: str, original: str, replacement: str, node: Located, start: int, end: int) -> None:
        if self.functions:
            self.found.append((".".join(self.scope), op, original, replacement, node, start, end))

    @override
    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self._scoped(node)

    @override
    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.functions += 1
        body = node.body
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            self.docstrings.add(id(body[0].value))
        self._scoped(node)
        self.functions -= 1

    visit_AsyncFunctionDef = visit_FunctionDef

    def _scoped(self, node: ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.scope.append(node.name)
        for child in node.body:  # decorators and defaults are evaluated at import: not function logic
            self.visit(child)
        self.scope.pop()

    def _between(self, left: ast.expr, right: ast.expr, pattern: str) -> tuple[int, int] | None:
        """The one operator token between two operands, or None when the text there is ambiguous."""
        start, end = self.span(left)[1], self.span(right)[0]
        text = self.source[start:end]
        hits = [m for m in re.finditer(pattern, text)]
        if len(hits) != 1 or "#" in text:
            return None
        return start + hits[0].start(), start + hits[0].end()

    @override
    def visit_Compare(self, node: ast.Compare) -> None:
        operands = [node.left, *node.comparators]
        for i, op in enumerate(node.ops):
            flip = COMPARE_FLIPS.get(type(op))
            if flip is None:
                continue
            original, replacement = flip
            pattern = r"(?<![<>=!])" + r"\s+".join(map(re.escape, original.split())) + r"(?![<>=])"
            if original in ("in", "is"):
                pattern = rf"(?<!not )\b{original}\b(?! not\b)"
            span = self._between(operands[i], operands[i + 1], pattern)
            if span:
                self.add("compare", original, replacement, node, *span)
        self.generic_visit(node)

    @override
    def visit_BinOp(self, node: ast.BinOp) -> None:
        flip = BINOP_FLIPS.get(type(node.op))
        if flip:
            original, replacement = flip
            pattern = r"(?<![*/])" + re.escape(original) + r"(?![*/=])"
            span = self._between(node.left, node.right, pattern)
            if span:
                self.add("arithmetic", original, replacement, node, *span)
        self.generic_visit(node)

    @override
    def visit_BoolOp(self, node: ast.BoolOp) -> None:
        original, replacement = ("and", "or") if isinstance(node.op, ast.And) else ("or", "and")
        for left, right in zip(node.values, node.values[1:], strict=False):
            span = self._between(left, right, rf"\b{original}\b")
            if span:
                self.add("boolean", original, replacement, node, *span)
        self.generic_visit(node)

    @override
    def visit_UnaryOp(self, node: ast.UnaryOp) -> None:
        if isinstance(node.op, ast.Not):
            start, end = self.span(node)
            operand_start = self.span(node.operand)[0]
            self.add("negation", "not", "", node, start, operand_start)
            del end
        self.generic_visit(node)

    @override
    def visit_Call(self, node: ast.Call) -> None:
        if isinstance(node.func, ast.Name) and node.func.id in ("any", "all"):
            original = node.func.id
            self.add("any-all", original, "all" if original == "any" else "any", node, *self.span(node.func))
        self.generic_visit(node)

    @override
    def visit_Constant(self, node: ast.Constant) -> None:
        value, (start, end) = node.value, self.span(node)
        text = self.source[start:end]
        if isinstance(value, bool):
            self.add("boolean-constant", text, str(not value), node, start, end)
        elif isinstance(value, int | float) and not isinstance(value, bool):
            for delta in (1, -1):
                new = value + delta
                if isinstance(value, float):
                    new = round(new, 12)
                if new < 0 and value >= 0:
                    continue
                self.add("number", text, repr(new), node, start, end)

    @override
    def visit_Subscript(self, node: ast.Subscript) -> None:
        key = node.slice
        if isinstance(key, ast.Constant) and isinstance(key.value, str) and key.value:
            self.add("string", repr(key.value), repr(key.value + "_x"), key, *self.span(key))
            self.visit(node.value)
            return
        self.generic_visit(node)

    def _compared_strings(self, node: ast.Compare) -> None:
        for operand in [node.left, *node.comparators]:
            if isinstance(operand, ast.Constant) and isinstance(operand.value, str) and operand.value:
                self.add("string", repr(operand.value), repr(operand.value + "_x"), operand, *self.span(operand))

    @override
    def generic_visit(self, node: ast.AST) -> None:
        if isinstance(node, ast.Compare):
            self._compared_strings(node)
        if isinstance(node, ast.stmt) and self.functions and self._deletable(node):
            self._delete(node)
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Constant) and isinstance(child.value, str):
                continue  # strings: only as keys and comparands (above); messages are not logic
            if isinstance(child, ast.JoinedStr):
                continue
            self.visit(child)

    def _deletable(self, node: ast.stmt) -> bool:
        if isinstance(node, ast.Expr):
            return not (isinstance(node.value, ast.Constant))  # a call, a yield: not a docstring
        return isinstance(node, ast.Raise | ast.If | ast.Return | ast.AugAssign | ast.Continue | ast.Break)

    def _delete(self, node: ast.stmt) -> None:
        start, end = self.span(node)
        first = self.source[start:end].splitlines()[0].strip()
        label = first if len(first) <= 60 else first[:57] + "..."
        self.add("delete-statement", label, "pass", node, start, end)

    @override
    def visit(self, node: ast.AST) -> None:
        method = getattr(self, "visit_" + type(node).__name__, None)
        if method is not None:
            if isinstance(node, ast.stmt) and self.functions and self._deletable(node):
                self._delete(node)
            method(node)
        else:
            self.generic_visit(node)


def mutants_of(module: str) -> list[Mutant]:
    source = (ROOT / module).read_text()
    tree = ast.parse(source)
    finder = _Finder(module, source)
    finder.visit(tree)
    seen: Counter[tuple[str, str, str, str]] = Counter()
    found: list[Mutant] = []
    reference = ast.dump(tree)
    for function, op, original, replacement, node, start, end in finder.found:
        key = (function, op, original, replacement)
        seen[key] += 1
        mutant = Mutant(module, function, op, original, replacement, seen[key], node.lineno, _end(node)[0], start, end)
        try:
            changed = ast.dump(ast.parse(mutant.apply(source)))
        except SyntaxError:
            continue
        if changed != reference:
            found.append(mutant)
    return found


def mutants_of_entry(entry: str, groups: dict[str, list[str]] | None = None) -> list[Mutant]:
    """An entry of the measured set: a module, `module::function` for that function (and those nested in it:
    the pure helpers of a module that also builds resources), or a group of those (bench/mutation.toml)."""
    if groups and entry in groups:
        return [m for part in groups[entry] for m in mutants_of_entry(part)]
    module, _, prefix = entry.partition("::")
    found = mutants_of(module)
    if prefix:
        found = [m for m in found if m.function == prefix or m.function.startswith(prefix + ".")]
    return found


def sample(mutants: list[Mutant], cap: int, seed: int) -> list[Mutant]:
    ordered = sorted(mutants, key=lambda m: m.id)
    if len(ordered) <= cap:
        return ordered
    rng = random.Random(f"{seed}:{ordered[0].module}")
    return sorted(rng.sample(ordered, cap), key=lambda m: (m.line, m.id))


# --- the coverage map -------------------------------------------------------------------------------------

COVERAGE_PLUGIN = '''
"""Loaded by scripts/mutate.py into the coverage run: one coverage context per test, and one per shared
program recording (tests/conftest.py), whose readers are listed in readers.json."""
import json, os, pytest
import coverage

_current = [""]
_readers = {}
_durations = {}

# Started when pytest loads this plugin (`-p`), before any conftest imports the modules: code that runs at import
# (the catalog's table, validators run while building it) is measured too, in the empty context.
_cov = coverage.Coverage(data_file=os.environ["MUTATE_COVERAGE"], data_suffix=True,
                         include=os.environ["MUTATE_INCLUDE"].split(","), branch=False)
_cov.start()

def pytest_unconfigure(config):
    _cov.stop()
    _cov.save()
    out = os.path.join(os.path.dirname(os.environ["MUTATE_COVERAGE"]), "readers-" + str(os.getpid()) + ".json")
    with open(out, "w") as f:
        json.dump({"readers": {k: sorted(v) for k, v in _readers.items()}, "durations": _durations}, f)

def _switch(name):
    _current[0] = name
    _cov.switch_context(name)

@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    _install_recording_hook(item.config)
    _switch(item.nodeid)
    yield
    _switch("")

def pytest_runtest_logreport(report):
    if report.when == "call" or report.outcome != "passed":
        _durations[report.nodeid] = _durations.get(report.nodeid, 0.0) + report.duration
    if report.outcome == "failed":
        _durations[report.nodeid] = -1.0

_installed = [False]
def _install_recording_hook(config):
    if _installed[0]:
        return
    _installed[0] = True
    try:
        from tests import conftest
    except ImportError:
        return
    if not hasattr(conftest, "_blobs") or not hasattr(conftest, "_load_or_run"):
        return

    class Blobs(dict):
        def get(self, key, default=None):
            _readers.setdefault(key, set()).add(_current[0])
            return super().get(key, default)

    conftest._blobs = Blobs(conftest._blobs)
    original = conftest._load_or_run

    def load_or_run(key, run_it, *args, **kwargs):
        def traced():
            test = _current[0]
            _switch("recording:" + key)
            try:
                return run_it()
            finally:
                _switch(test)
        return original(key, traced, *args, **kwargs)

    conftest._load_or_run = load_or_run

    # The same for the cached shared helpers (tests/tiers.py `cache`: a committed stack's whole policy review, a
    # report): what the first call runs is credited to every test that reads its result.
    try:
        from tests import tiers
    except ImportError:
        return
    import contextlib

    @contextlib.contextmanager
    def computing(key):
        test = _current[0]
        _switch("recording:cached:" + key)
        try:
            yield
        finally:
            _switch(test)

    def reading(key):
        _readers.setdefault("cached:" + key, set()).add(_current[0])

    tiers.computing, tiers.reading = computing, reading
'''


def is_test_file(name: str) -> bool:
    """A test module: its tests can be mapped again alone. Any other file under tests/ (a conftest, a helper, a
    fixture) may change what every test runs, so it is part of the tree's hash, with the code."""
    return name.startswith("tests/") and Path(name).name.startswith("test_") and name.endswith(".py")


def tree_state(tests: list[str], deselect: list[str]) -> tuple[str, dict[str, str]]:
    """The identity of a coverage map: the hash of every file a test could read but the test modules (and prose:
    a Markdown edit does not move which tests run a line, and a map costs the whole suite under coverage; and
    this script's own files), and each test module's own hash, so that a session that adds tests maps only
    those."""
    digest = hashlib.sha256(json.dumps([tests, deselect, PYTEST_FIXED]).encode())
    test_files: dict[str, str] = {}
    for name in tracked_files():
        path = ROOT / name
        if path in (REPORT_JSON, EQUIVALENTS, CONFIG, Path(__file__).resolve()) or not path.is_file():
            continue
        if name.endswith(".md"):
            continue
        if is_test_file(name):
            test_files[name] = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
            continue
        digest.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:24], test_files


def tracked_files() -> list[str]:
    files = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, check=True, capture_output=True
    ).stdout.decode()
    return sorted(filter(None, files.split("\0")))


def measurable(sources: list[str]) -> list[str]:
    """Every Python module under the configured source folders: the map covers them all, so any of them can
    be mutated (`--module`) without mapping the suite again."""
    return [f for f in tracked_files() if f.endswith(".py") and f.startswith(tuple(f"{s}/" for s in sources))]


@dataclass
class CoverageMap:
    """Which tests run each line. A line run while a shared program recording was made is credited to every
    test that read the recording; a line run only while its module was imported, to every test of the module."""

    contexts: list[str]  # test ids, and "recording:<key>" for the shared recordings
    lines: dict[str, dict[int, list[int]]]  # module -> line -> indices into contexts
    at_import: dict[str, list[int]]  # module -> the lines run in the empty context (at import)
    readers: dict[str, list[str]]  # recording key -> the tests that read it
    durations: dict[str, float]  # test -> seconds (-1: it failed unmutated, so it cannot kill)

    def tests(self, module: str, first: int, last: int) -> set[str]:
        by_line = self.lines.get(module, {})
        found: set[str] = set()
        for line in range(first, last + 1):
            if line in self.at_import.get(module, ()):
                return self._expand({i for ids in by_line.values() for i in ids})
            found |= self._expand(set(by_line.get(line, ())))
        return found

    def _expand(self, indices: set[int]) -> set[str]:
        tests: set[str] = set()
        pending = [self.contexts[i] for i in indices]
        seen: set[str] = set()
        while pending:  # a shared result may be read while another is made (a cached review reads a recording)
            context = pending.pop()
            if context in seen:
                continue
            seen.add(context)
            if context.startswith("recording:"):
                pending.extend(self.readers.get(context.removeprefix("recording:"), ()))
            elif context:
                tests.add(context)
        return {t for t in tests if self.durations.get(t, 0.0) >= 0}


def cached_coverage_map(work: Path, config: dict[str, Any], tests: list[str], stale: bool = False) -> CoverageMap:
    """The map of an identical tree is reused (a module-by-module session maps the suite once). When only test
    modules changed, those alone are mapped again and merged in. With `stale`, the newest map whatever the tree
    (tests added since are not in it, so they kill nothing: a lower bound)."""
    deselect = config.get("deselect", [])
    source_hash, test_files = tree_state(tests, deselect)
    # A partial map (`--tests`) is named apart, so the quick runs that make them never push out the whole suite's.
    kind = "coverage-" if tests == config["tests"] else "coverage-partial-"
    path = CACHE / f"{kind}{source_hash}.json"
    if stale and not path.exists() and (older := sorted(CACHE.glob(f"{kind}[0-9a-f]*.json"), key=os.path.getmtime)):
        path = older[-1]
        print(f"coverage map: {path.name} is of another tree; tests added since kill nothing", flush=True)
        return _load_map(json.loads(path.read_text()))
    selected = {f: h for f, h in test_files.items() if any(f == t or f.startswith(t.rstrip("/") + "/") for t in tests)}
    if path.exists():
        data = json.loads(path.read_text())
        known: dict[str, str] = data.get("test_files", {})
        changed = sorted(f for f, h in selected.items() if known.get(f) != h)
        dropped = set(changed) | {f for f in known if f not in selected}
        found = _load_map(data)
        if not dropped:
            print(f"coverage map: reused {path.relative_to(ROOT)}", flush=True)
            return found
        print(f"coverage map: mapping {len(changed)} changed test module(s) again: {' '.join(changed)}", flush=True)
        fresh = coverage_map(measurable(config["sources"]), work, changed, deselect) if changed else None
        found = _merged(found, dropped, fresh)
    else:
        found = coverage_map(measurable(config["sources"]), work, tests, deselect)
    if not found.durations:
        raise SystemExit("coverage map: the suite recorded no tests (see the pytest output above)")
    CACHE.mkdir(exist_ok=True)
    for old in sorted(CACHE.glob(f"{kind}[0-9a-f]*.json"), key=os.path.getmtime)[
        :-2
    ]:  # with the new one, the newest three of its kind
        old.unlink()
    data = {
        "test_files": selected,
        "contexts": found.contexts,
        "lines": {m: {str(n): ids for n, ids in by_line.items()} for m, by_line in found.lines.items()},
        "at_import": found.at_import,
        "readers": found.readers,
        "durations": found.durations,
    }
    path.write_text(json.dumps(data))
    return found


def _load_map(data: dict[str, Any]) -> CoverageMap:
    lines = {m: {int(n): ids for n, ids in by_line.items()} for m, by_line in data["lines"].items()}
    return CoverageMap(data["contexts"], lines, data["at_import"], data["readers"], data["durations"])


def _merged(old: CoverageMap, dropped: set[str], fresh: CoverageMap | None) -> CoverageMap:
    """`old` without the tests of the `dropped` modules, plus `fresh` (a map of the changed modules' tests)."""

    def kept(name: str) -> bool:
        return name.startswith("recording:") or name.split("::")[0] not in dropped

    names: dict[str, dict[int, set[str]]] = defaultdict(lambda: defaultdict(set))
    for source in filter(None, (old, fresh)):
        for module, by_line in source.lines.items():
            for line, ids in by_line.items():
                names[module][line].update(n for n in (source.contexts[i] for i in ids) if source is fresh or kept(n))
    contexts: dict[str, int] = {}
    lines = {
        module: {line: sorted(contexts.setdefault(n, len(contexts)) for n in found) for line, found in by_line.items()}
        for module, by_line in names.items()
    }
    readers: dict[str, set[str]] = defaultdict(set)
    for key, tests in old.readers.items():
        readers[key].update(t for t in tests if kept(t))
    durations = {t: d for t, d in old.durations.items() if kept(t)}
    at_import = {m: sorted(set(ls)) for m, ls in old.at_import.items()}
    if fresh is not None:
        for key, tests in fresh.readers.items():
            readers[key].update(tests)
        durations.update(fresh.durations)
        for m, ls in fresh.at_import.items():
            at_import[m] = sorted(set(at_import.get(m, [])) | set(ls))
    return CoverageMap(list(contexts), lines, at_import, {k: sorted(v) for k, v in readers.items()}, durations)


def coverage_map(modules: list[str], work: Path, tests: list[str], deselect: list[str]) -> CoverageMap:
    """line -> tests that run it, per module, and each test's duration (from one run of the suite)."""
    plugin_dir = work / "plugin"
    plugin_dir.mkdir()
    (plugin_dir / "mutate_coverage.py").write_text(COVERAGE_PLUGIN)
    data = work / "coverage" / ".coverage"
    data.parent.mkdir()
    env = dict(os.environ)
    env.update(
        MUTATE_COVERAGE=str(data),
        MUTATE_INCLUDE=",".join(str(ROOT / m) for m in modules),
        PYTHONPATH=os.pathsep.join([str(plugin_dir), str(ROOT)]),
    )
    started = time.monotonic()
    skipped = [arg for test in deselect for arg in ("--deselect", test)]
    subprocess.run(
        [str(PYTHON), "-m", "pytest", "-n", str(WORKERS), "-p", "mutate_coverage", *PYTEST_FIXED, *skipped, *tests],
        cwd=ROOT,
        env=env,
        check=False,  # a failing test is left out of the map, not a reason to stop
        stdout=subprocess.DEVNULL,
    )
    print(f"coverage map: the suite ran in {time.monotonic() - started:.0f} s", flush=True)
    import coverage

    cov = coverage.Coverage(data_file=str(data))
    cov.combine([str(data.parent)], keep=False)
    covdata = cov.get_data()
    readers: dict[str, set[str]] = defaultdict(set)
    durations: dict[str, float] = {}
    for path in data.parent.glob("readers-*.json"):
        loaded = json.loads(path.read_text())
        for key, names in loaded["readers"].items():
            readers[key].update(names)
        for test, seconds in loaded["durations"].items():
            durations[test] = -1.0 if seconds < 0 or durations.get(test, 0) < 0 else durations.get(test, 0) + seconds
    contexts: dict[str, int] = {}
    lines: dict[str, dict[int, list[int]]] = {}
    at_import: dict[str, list[int]] = {}
    for module in modules:
        by_line: dict[int, list[int]] = {}
        for line, names in (covdata.contexts_by_lineno(str(ROOT / module)) or {}).items():
            if "" in names:
                at_import.setdefault(module, []).append(line)
            ids = sorted(contexts.setdefault(name, len(contexts)) for name in names if name)
            if ids:
                by_line[line] = ids
        if by_line:
            lines[module] = by_line
    return CoverageMap(list(contexts), lines, at_import, {k: sorted(v) for k, v in readers.items()}, durations)


# --- running the mutants ----------------------------------------------------------------------------------

PRELOAD = ("pydantic", "yaml", "pytest", "hypothesis", "pulumi", "pulumi_aws", "pulumi_aws_native", "pulumi_kubernetes")
PRELOAD += ("pulumi_policy", "botocore.session", "jsonschema", "xdist")
LINKED = (".venv", ".tools", "node_modules", "policies/.venv")


def copy_tree(target: Path) -> None:
    """The working tree as it is (tracked and untracked, not ignored), with the virtualenvs linked."""
    files = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, check=True, capture_output=True
    ).stdout.decode()
    for name in filter(None, files.split("\0")):
        source = ROOT / name
        if source.is_file() and not source.is_symlink():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)
    for name in LINKED:
        if (ROOT / name).exists() and not (target / name).exists():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            (target / name).symlink_to(ROOT / name)


@dataclass
class Outcome:
    mutant: Mutant
    status: str  # killed, survived, no-tests, timeout, equivalent
    tests: int
    seconds: float


# A whole-program run of prod in a fresh interpreter, printing the files it imported (tests/unit/test_mutate_map.py
# binds its call to run_program's signature, so a renamed parameter fails there, not in a mutation run).
RECORDING_PROBE = (
    "import sys; from stacks.load import load_file; from trainstack.engine import run_program; "
    "run_program(load_file('stacks/Pulumi.prod.yaml'), stack_name='prod'); "
    "print('\\n'.join(str(getattr(m, '__file__', None)) for m in list(sys.modules.values())))"
)


def recording_inputs() -> set[str]:
    """The repository files a whole-program run imports (prod's, in a fresh interpreter): a mutant of any other
    module cannot change a recording, so its sessions may share one recordings directory (tests/conftest.py)."""
    run = subprocess.run([str(PYTHON), "-c", RECORDING_PROBE], cwd=ROOT, check=True, capture_output=True, text=True)
    out = run.stdout
    files = {line.removeprefix(f"{ROOT}{os.sep}") for line in out.splitlines() if line.startswith(f"{ROOT}{os.sep}")}
    return {name for name in files if not name.startswith(LINKED)}


def shares_recordings(module: str, inputs: set[str]) -> bool:
    # stacks/ and components/ are the program even where prod does not import them (HyperPod, Neuron)
    return module not in inputs and not module.startswith(("stacks/", "components/"))


def _child(tree: Path, tests: list[str], log: Path, recordings: Path | None) -> None:
    """In the forked child: run the tests against the mutated copy, exit with pytest's code."""
    os.setpgid(0, 0)
    if recordings is not None:
        os.environ["TRAINSTACK_RECORDINGS_DIR"] = str(recordings)
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.chdir(tree)
    sys.path[:0] = [str(tree)]
    os.environ["PYTHONPATH"] = str(tree)
    import pytest

    code = pytest.main(["-x", "-q", "--no-header", "-p", "no:cacheprovider", *PYTEST_FIXED, *tests])
    sys.stdout.flush()
    os._exit(int(code))


Phase = tuple[list[str], float]  # the tests to run, and how long they may take
# Tests per phase (each phase is a fresh child): one child running the 1,500 tests that reach stacks/load.py grew
# to 17 GB in two minutes (every stack it planned stays cached), on a machine of 24 GiB shared with others.
PHASE_TESTS = 200


def write_source(path: Path, text: str) -> None:
    """`text` as the module at `path`, its cached bytecode dropped. Python trusts a .pyc whose recorded source
    size and mtime (whole seconds) match the file's, so two mutants of one size written within the same second
    would otherwise share the first one's bytecode, and the second's tests would run the first mutant."""
    path.write_text(text)
    Path(importlib.util.cache_from_source(str(path))).unlink(missing_ok=True)


def run_mutants(plan: list[tuple[Mutant, list[Phase]]], work: Path, equivalents: dict[str, str]) -> list[Outcome]:
    """Each mutant's phases run in turn in a forked child until one fails (killed) or all pass (survived)."""
    for name in PRELOAD:
        with contextlib.suppress(ImportError):
            __import__(name)
    slots: list[Path] = []
    for i in range(WORKERS):
        tree = work / f"tree{i}"
        tree.mkdir()
        copy_tree(tree)
        slots.append(tree)
    queue = list(plan)
    # pid -> slot, mutant, original text, remaining phases, mutant's start, phase's start, phase's limit
    running: dict[int, tuple[int, Mutant, str, list[Phase], float, float, float]] = {}
    free = list(range(WORKERS))
    outcomes: list[Outcome] = []
    total = len(plan)
    reached = {mutant.id: sum(len(tests) for tests, _ in phases) for mutant, phases in plan}

    inputs = recording_inputs()

    def start(slot: int, mutant: Mutant, phase: Phase) -> int:
        recordings = work / "recordings" if shares_recordings(mutant.module, inputs) else None
        pid = os.fork()
        if pid == 0:
            _child(slots[slot], phase[0], work / f"log{slot}.txt", recordings)
        return pid

    while queue or running:
        while queue and free:
            mutant, phases = queue.pop(0)
            if mutant.id in equivalents or not phases:
                outcomes.append(Outcome(mutant, "equivalent" if mutant.id in equivalents else "no-tests", 0, 0.0))
                print(f"[{len(outcomes)}/{total}] {outcomes[-1].status:8}  {mutant.id}", flush=True)
                continue
            slot = free.pop()
            target = slots[slot] / mutant.module
            original = target.read_text()
            write_source(target, mutant.apply(original))
            now = time.monotonic()
            running[start(slot, mutant, phases[0])] = (slot, mutant, original, phases[1:], now, now, phases[0][1])
        time.sleep(0.05)
        for pid, (slot, mutant, original, rest, began, phase_began, limit) in list(running.items()):
            done, status = os.waitpid(pid, os.WNOHANG)
            if done == 0 and time.monotonic() - phase_began < limit:
                continue
            del running[pid]
            if done == 0:
                os.killpg(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                verdict = "timeout"
            else:
                code = os.waitstatus_to_exitcode(status)
                # 4: the tests the unmutated tree ran cannot be loaded or found (a conftest import broken, a
                # parametrization changed): killed. 5, no tests collected: the run proves nothing.
                if code == 5:
                    log = (work / f"log{slot}.txt").read_text()
                    raise SystemExit(f"{mutant.id}: pytest collected no tests\n{log[-2000:]}")
                if code == 0 and rest:  # this phase's tests all passed: the next phase, on the same mutant
                    now = time.monotonic()
                    running[start(slot, mutant, rest[0])] = (slot, mutant, original, rest[1:], began, now, rest[0][1])
                    continue
                verdict = "survived" if code == 0 else "killed"
            write_source(slots[slot] / mutant.module, original)
            free.append(slot)
            elapsed = time.monotonic() - began
            count = reached[mutant.id]
            outcomes.append(Outcome(mutant, verdict, count, elapsed))
            print(f"[{len(outcomes)}/{total}] {verdict:8} {elapsed:5.1f}s {count:3} tests  {mutant.id}", flush=True)
    return outcomes


def phases_of(
    mutant: Mutant, tests: set[str], durations: dict[str, float], timeout_factor: float, timeout_base: float = 60
) -> list[Phase]:
    """The mutant's tests in two phases. Collecting hundreds of tests costs more than running the one that
    fails, so the first phase is the test files that name the mutated function (else its class, else its
    module): the tests written for that code. The rest runs only if those all pass, so the verdict is the same
    as one run of all of them. Each phase holds at most PHASE_TESTS tests (a fresh child each: bounded memory)."""
    if not tests:
        return []
    files = {test.split("::")[0] for test in tests}
    names = [*reversed(mutant.function.split(".")), Path(mutant.module).stem]
    focused: set[str] = set()
    for name in names:
        focused = {f for f in files if re.search(rf"\b{re.escape(name)}\b", _test_source(f))}
        if focused:
            break
    groups = [[t for t in tests if t.split("::")[0] in focused], [t for t in tests if t.split("::")[0] not in focused]]
    phases: list[Phase] = []
    for group in filter(None, groups):
        ordered = sorted(group, key=lambda t: (durations.get(t, 0.0), t))
        for i in range(0, len(ordered), PHASE_TESTS):
            chunk = ordered[i : i + PHASE_TESTS]
            phases.append((chunk, timeout_factor * sum(durations.get(t, 0.0) for t in chunk) + timeout_base))
    return phases


@functools.cache
def _test_source(path: str) -> str:
    return (ROOT / path).read_text()


# --- the report -------------------------------------------------------------------------------------------


def score_of(outcomes: list[Outcome]) -> dict[str, Any]:
    killed = sum(o.status in ("killed", "timeout") for o in outcomes)
    equivalent = sum(o.status == "equivalent" for o in outcomes)
    counted = len(outcomes) - equivalent
    return {
        "mutants": len(outcomes),
        "killed": killed,
        "survived": counted - killed,
        "equivalent": equivalent,
        "score": round(killed / counted, 4) if counted else 1.0,
    }


def commit() -> str:
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain"], cwd=ROOT, capture_output=True, text=True).stdout
    return head + ("+uncommitted" if dirty.strip() else "")


def record(
    results: dict[str, list[Outcome]],
    config: dict[str, Any],
    seed: int,
    seconds: float,
    tests: list[str],
    stale_map: bool = False,
) -> None:
    """Each measured entry's latest result replaces its row in bench/mutation-report.json (a module-by-module
    session records as it goes); the markdown is written from the whole file."""
    data = json.loads(REPORT_JSON.read_text()) if REPORT_JSON.exists() else {}
    rows: dict[str, Any] = data.get("modules", {}) if "seed" not in data else {}  # the old one-run format
    today = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d")
    for entry, outcomes in results.items():
        rows[entry] = {
            **score_of(outcomes),
            "date": today,
            "commit": commit(),
            "seed": seed,
            "cap": config["cap"],
            "tests": tests,
            "stale_map": stale_map,
            "seconds": round(sum(o.seconds for o in outcomes)),
            "survivors": sorted(o.mutant.id for o in outcomes if o.status in ("survived", "no-tests")),
            "unreached": sorted(o.mutant.id for o in outcomes if o.status == "no-tests"),
            "equivalents": sorted(o.mutant.id for o in outcomes if o.status == "equivalent"),
        }
    order = {entry: i for i, entry in enumerate(config["modules"])}
    rows = dict(sorted(rows.items(), key=lambda kv: (order.get(kv[0], len(order)), kv[0])))
    REPORT_JSON.write_text(json.dumps({"floor": config["floor"], "modules": rows}, indent=2) + "\n")
    REPORT_MD.write_text(markdown(rows, config))
    del seconds


def markdown(rows: dict[str, Any], config: dict[str, Any]) -> str:
    equivalents = tomllib.loads(EQUIVALENTS.read_text()) if EQUIVALENTS.exists() else {}
    measured = set(config["modules"])
    lines = [
        "# Mutation report",
        "",
        "Written by `make mutate` (scripts/mutate.py), one row per measured module, each from its latest run: a "
        "sample of the module's mutants drawn with the seed shown (chosen at run time unless `--seed` is given), "
        f"all of them where the module has no more than the cap. Floor: {config['floor']:.0%} of the "
        "non-equivalent mutants killed. Tests: the paths in the row's run (bench/mutation.toml `tests`: every "
        "tier, e2e included). Time: the mutants' own, summed over 2 workers. Method: docs/mutation-testing.md.",
        "",
        "| module | date | commit | seed | mutants | killed | survived | equivalent | score | s |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for entry, row in rows.items():
        mark = "" if row["score"] >= config["floor"] else " **LOW**"
        mark += " (stale map: a lower bound)" if row.get("stale_map") else ""
        name = f"`{entry}`" + ("" if entry in measured else " (not in the measured set)")
        lines.append(
            f"| {name} | {row['date']} | `{row['commit'][:10]}` | {row['seed']} | {row['mutants']} | {row['killed']} "
            f"| {row['survived']} | {row['equivalent']} | {row['score']:.0%}{mark} | {row['seconds']} |"
        )
    missing = [m for m in config["modules"] if m not in rows]
    if missing:
        lines += ["", "Not measured yet: " + ", ".join(f"`{m}`" for m in missing) + "."]
    survivors = [(entry, s) for entry, row in rows.items() for s in row["survivors"]]
    if survivors:
        lines += ["", "## Surviving mutants", ""]
        for entry, mutant in survivors:
            note = " (no test reaches the line)" if mutant in rows[entry].get("unreached", []) else ""
            lines.append(f"- `{mutant}`{note}")
    listed = [(s, equivalents.get(s, "")) for row in rows.values() for s in row["equivalents"]]
    if listed:
        lines += ["", "## Equivalent mutants drawn, and why they cannot change behaviour", ""]
        lines += [f"- `{mutant}`: {reason}" for mutant, reason in listed]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--module", action="append", help="only this module or module::function (repeatable)")
    parser.add_argument("--id", action="append", help="only this mutant id, sampled or not (repeatable)")
    parser.add_argument("--seed", type=int, help="the sample's seed (default: chosen at run time and printed)")
    parser.add_argument("--cap", type=int, help="mutants per module (default: bench/mutation.toml's cap)")
    parser.add_argument("--pick", type=int, help="only this many modules of the measured set, drawn with the seed")
    parser.add_argument("--list", action="store_true", help="list the sampled mutants and stop")
    parser.add_argument("--no-report", action="store_true", help="do not record the result in bench/mutation-report.*")
    parser.add_argument(
        "--tests", action="append", default=[], help="map coverage from these test paths only (a quick partial run)"
    )
    parser.add_argument(
        "--stale-map", action="store_true", help="use the newest coverage map even if the tree changed (a survey)"
    )
    args = parser.parse_args()
    config = tomllib.loads(CONFIG.read_text())
    if args.cap:
        config["cap"] = args.cap
    equivalents = tomllib.loads(EQUIVALENTS.read_text()) if EQUIVALENTS.exists() else {}
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1, 1_000_000)
    print(f"seed {seed} (again: --seed {seed})", flush=True)
    entries = args.module or config["modules"]
    if args.pick:
        entries = sorted(random.Random(seed).sample(entries, min(args.pick, len(entries))))
    if args.id:  # any mutant of the code, not only the sampled ones
        entries = sorted({i.split("::")[0] for i in args.id})
    chosen: dict[str, list[Mutant]] = {}
    for entry in entries:
        every = mutants_of_entry(entry, config.get("groups"))
        if args.id:
            chosen[entry] = [m for m in every if m.id in args.id]
        else:
            chosen[entry] = sample(every, config["cap"], seed)
        ids = {m.id for m in every}
        for key in equivalents:
            if key.split("::")[0] == entry and key not in ids:
                print(f"warning: {EQUIVALENTS.name} lists {key}, no longer a mutant of the code", file=sys.stderr)
    if args.id and (unknown := set(args.id) - {m.id for ms in chosen.values() for m in ms}):
        raise SystemExit("no such mutant: " + ", ".join(sorted(unknown)) + " (--list prints the ids)")
    if args.list:
        for mutants in chosen.values():
            for m in mutants:
                print(f"{m.line:4} {m.id}")
        return 0
    tests = args.tests or config["tests"]
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="trainstack-mutate-") as tmp:
        work = Path(tmp)
        covered = cached_coverage_map(work, config, tests, args.stale_map)
        plan: list[tuple[Mutant, list[Phase]]] = []
        for mutants in chosen.values():
            for m in mutants:
                reached = covered.tests(m.module, m.line, m.end_line)
                limits = config["timeout_factor"], config.get("timeout_base", 60)
                plan.append((m, phases_of(m, reached, covered.durations, *limits)))
        outcomes = run_mutants(plan, work, equivalents)
    seconds = time.monotonic() - started
    by_id = {o.mutant.id: o for o in outcomes}
    results = {entry: [by_id[m.id] for m in mutants] for entry, mutants in chosen.items()}
    print(f"\nmutation scores (seed {seed}, {seconds:.0f} s; floor {config['floor']:.0%}):")
    for entry, mine in results.items():
        row = score_of(mine)
        mark = "ok " if row["score"] >= config["floor"] else "LOW"
        print(
            f"  {mark} {row['score']:6.1%}  {entry}  (killed {row['killed']}, survived {row['survived']}, "
            f"equivalent {row['equivalent']} of {row['mutants']})"
        )
        for o in mine:
            if o.status in ("survived", "no-tests"):
                print(f"        {o.status}: {o.mutant.id} (line {o.mutant.line})")
    if not (args.no_report or args.id or args.tests):
        record(results, config, seed, seconds, tests, args.stale_map)
    return 0 if all(score_of(mine)["score"] >= config["floor"] for mine in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())

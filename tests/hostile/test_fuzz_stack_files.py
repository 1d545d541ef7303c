"""Generated stack files, mutated: the CLI answers exit 2 naming a key, or plans (0, 1 or 4); never 3, never a
traceback, within a time and memory bound.

Profiles (TRAINSTACK_FUZZ=nightly for the long one): `default` runs in a few seconds in the suite and stops a
mutation that validates at the door of the plan (the committed stacks' plans are tested elsewhere); `nightly`
runs many more examples and plans every config that validates under the mock engine."""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stacks.load import FULL_KEY
from tests.conftest import STACKS, stack_document
from trainstack import cli

settings.register_profile(
    "default", max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True
)
settings.register_profile("nightly", max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
PROFILE = os.environ.get("TRAINSTACK_FUZZ", "default")
PLANS = PROFILE == "nightly"
SECONDS_PER_EXAMPLE = 300 if PLANS else 30  # generous: a loaded CI machine is slow, a hang is not
PEAK_BYTES = 512 * 1024 * 1024


class _WouldPlan(cli.BadInput):
    """The config validated; the default profile stops here (the CLI reports it as bad input, and the test
    knows it by the flag)."""

    seen = False


def _paths(node: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [path]
    if isinstance(node, dict):
        for key, item in node.items():
            found += _paths(item, (*path, key))
    elif isinstance(node, list):
        for i, item in enumerate(node):
            found += _paths(item, (*path, i))
    return found


# The classes issue 35's fuzz run found: a trailing newline or tab, terminal escapes, NUL and bidi controls in a
# value or a key, denormal numbers (a ratio over one became infinite), values IAM's grammar refuses.
HOSTILE_TEXT = st.sampled_from(
    ["x\n", "a\tb", "\x1b[2J\x1b[31mred", "nul\x00byte", "ok\u202eevil", "line\nerror: forged", "role/ad min"]
)
ODD_VALUES = st.one_of(
    HOSTILE_TEXT,
    st.sampled_from([5e-324, 1e-300, -0.0]),
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**40), max_value=10**40),
    st.sampled_from([0, -1, 2**31, 2**63, 10**30]),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=40),
    st.text(alphabet="abc-.:/", min_size=300, max_size=400),
    st.dates(),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=2),
)

YAML_TRICKS = [
    "anchor: &a [1, 2]\nalias: *a\n",
    "merged:\n  <<: {a: 1}\n",
    "tagged: !!python/object/apply:os.system [true]\n",
    "binary: !!binary aGVsbG8=\n",
    "2024-01-01: date-key\n",
    "rate: .inf\n",
    "rate: .nan\n",
    "time: 7:03:00\n",
    "deep: " + "[" * 50 + "]" * 50 + "\n",
    "big: " + "9" * 6000 + "\n",
    "bell: a\x07b\n",
    "escape: \x1b[2Jcleared\n",
    "nul: a\x00b\n",
    "octal: 0777\n",
]


@st.composite
def mutated_stack(draw: st.DrawFn) -> str:
    """A committed stack file with one to three mutations, as YAML text (some mutations act on the text)."""
    document = stack_document(draw(st.sampled_from(STACKS)))
    cluster = document["config"][FULL_KEY]
    for _ in range(draw(st.integers(1, 3))):
        paths = _paths(cluster)[1:]
        path = draw(st.sampled_from(paths))
        parent: Any = cluster
        for part in path[:-1]:
            parent = parent[part]
        kind = draw(st.sampled_from(["replace", "delete", "unknown", "grow", "scale"]))
        if kind == "replace":
            parent[path[-1]] = draw(ODD_VALUES)
        elif kind == "delete":
            del parent[path[-1]]
        elif kind == "unknown" and isinstance(parent, dict):
            parent[draw(st.one_of(st.text(min_size=1, max_size=12), HOSTILE_TEXT))] = draw(ODD_VALUES)
        elif kind == "grow" and isinstance(parent[path[-1]], list) and parent[path[-1]]:
            parent[path[-1]] = parent[path[-1]] * draw(st.sampled_from([2, 50, 300]))
        elif kind == "scale" and isinstance(parent[path[-1]], int | float) and not isinstance(parent[path[-1]], bool):
            parent[path[-1]] = parent[path[-1]] * draw(st.sampled_from([-1, 0, 10**6, 10**30]))
    text = yaml.safe_dump(document, sort_keys=False, default_flow_style=None)
    if draw(st.booleans()):
        trick = draw(st.sampled_from(YAML_TRICKS))
        indent = "    "
        marker = "  trainstack:cluster:\n"
        text = text.replace(marker, marker + "".join(indent + line + "\n" for line in trick.splitlines()), 1)
    if draw(st.booleans()):  # a duplicated line, as a careless merge leaves one
        lines = text.splitlines(keepends=True)
        at = draw(st.integers(3, len(lines) - 1))
        lines.insert(at, lines[at])
        text = "".join(lines)
    return text


def _run(text: str) -> tuple[int, str, float, int]:
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "Pulumi.fuzz.yaml"
        path.write_text(text)
        err = _Capture()
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(sys, "stderr", err)
            if not PLANS:
                patch.setattr(cli, "run", _stop)
            tracemalloc.start()
            started = time.monotonic()
            _WouldPlan.seen = False
            code = cli.main(["plan", "--config", str(path), "--format", "json", "--output", str(path) + ".json"])
            if _WouldPlan.seen:
                code, err.parts = -1, []
            elapsed = time.monotonic() - started
            _, peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
        report = Path(str(path) + ".json")
        if report.exists():  # strict JSON: `Infinity` or `NaN` fails here (a denormal rate printed one on main)
            json.loads(report.read_text(), parse_constant=_not_json)
        return code, err.getvalue(), elapsed, peak


class _Capture:
    def __init__(self) -> None:
        self.parts: list[str] = []

    def write(self, text: str) -> int:
        self.parts.append(text)
        return len(text)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False

    def getvalue(self) -> str:
        return "".join(self.parts)


def _not_json(constant: str) -> None:
    raise AssertionError(f"the JSON report holds {constant}, which is not JSON")


def _stop(*args: object, **kwargs: object) -> None:
    _WouldPlan.seen = True
    raise _WouldPlan("validated")


@settings.get_profile(PROFILE)  # type: ignore[misc]
@given(text=mutated_stack())
def test_mutated_stack_files_never_crash(text: str) -> None:
    code, err, elapsed, peak = _run(text)
    assert "Traceback" not in err and "internal error" not in err, err
    # Whatever the file holds, what is printed holds no control character but line breaks (stacks/printable.py).
    assert all(c.isprintable() or c == "\n" for c in err), repr(err)
    assert code != cli.EXIT_PROGRAM_FAILED, err
    if code == cli.EXIT_BAD_INPUT:
        assert err.startswith("invalid stack config") or err.startswith("error: "), err
        assert any(key in err for key in (FULL_KEY, "config", "<yaml>", "--config")), err
    else:
        assert code in ((-1,) if not PLANS else (cli.EXIT_OK, cli.EXIT_POLICY, cli.EXIT_CONTRACT)), (code, err)
    assert elapsed < SECONDS_PER_EXAMPLE, elapsed
    assert peak < PEAK_BYTES, peak


def test_the_fuzz_reaches_both_outcomes() -> None:
    """The generator is not all noise: unmutated-looking files validate and tricks are refused."""
    plain = yaml.safe_dump(stack_document("dev"), sort_keys=False)
    assert _run(plain)[0] in (-1, cli.EXIT_OK)
    assert _run(plain.replace("  trainstack:cluster:\n", "  trainstack:cluster:\n    x: *nope\n"))[0] == 2

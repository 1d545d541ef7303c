"""The text report in a real terminal (issue 37): tmux (Debian's package, `.ci/run` installs it) at 80, 100 and
160 columns shows every line as written (no line the terminal has to wrap, so no clipped table), the header on
the first screen, and no spinner residue from a real `python -m trainstack plan` run in a pane that is narrower
than the progress line would otherwise be."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.report.helpers import SCENARIOS, scenario
from trainstack.report import text

HEIGHT = 50  # rows of the first screen
WIDTHS = (80, 100, 160)


@pytest.fixture
def tmux(tmp_path: Path) -> Iterator[tuple[str, ...]]:
    """A private tmux server (its own socket, no user config) whose panes stay after their command exits."""
    if shutil.which("tmux") is None:
        if os.environ.get("CI") or os.environ.get("TRAINSTACK_REQUIRE_BROWSER") == "1":
            pytest.fail("needs tmux: `bash .ci/run` installs it (apt-get install tmux)")
        pytest.skip("needs tmux: `bash .ci/run` installs it (apt-get install tmux)")
    base = ("tmux", "-S", str(tmp_path / f"tmux-{uuid.uuid4().hex[:8]}"), "-f", "/dev/null")
    try:
        yield base
    finally:
        subprocess.run([*base, "kill-server"], check=False, capture_output=True)


def run_in_pane(base: tuple[str, ...], name: str, width: int, command: str, timeout: float = 180) -> None:
    # The pane starts idle, is told to stay when its command exits, then runs the command in its place.
    start = ("new-session", "-d", "-s", name, "-x", str(width), "-y", str(HEIGHT), "sleep 600")
    stay = ("set-option", "-t", name, "remain-on-exit", "on")
    subprocess.run(
        # tmux may close a pane's terminal before it has read all of what an exited command wrote: the command
        # stays a second after its work, so every byte is on the screen before the pane is dead.
        [*base, *start, ";", *stay, ";", "respawn-pane", "-k", "-t", name, f"{command}; sleep 1"],
        check=True,
        env={**os.environ, "TERM": "xterm-256color"},
    )
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        dead = subprocess.run([*base, "display", "-p", "-t", name, "#{pane_dead}"], capture_output=True, text=True)
        if dead.stdout.strip() == "1":
            return
        time.sleep(0.2)
    pytest.fail(f"{command!r} still running after {timeout} s")


def capture(base: tuple[str, ...], name: str, joined: bool) -> list[str]:
    """Every row the pane ever showed, from the top of its history; `joined` puts the rows the terminal wrapped
    back together (tmux -J), so a joined line longer than the pane is one the terminal had to wrap."""
    args = [*base, "capture-pane", "-p", "-S", "-", "-t", name] + (["-J"] if joined else [])
    rows = subprocess.run(args, capture_output=True, text=True, check=True).stdout.splitlines()
    while rows and (not rows[-1].strip() or rows[-1].startswith("Pane is dead")):  # tmux's own last row
        rows.pop()
    return [row.rstrip() for row in rows]


@pytest.mark.e2e
def test_every_scenario_fits_80_100_and_160_columns_with_the_header_on_the_first_screen(
    tmux: tuple[str, ...], tmp_path: Path
) -> None:
    panes = {}
    for name in SCENARIOS:
        after, diff, before = scenario(name)
        for width in WIDTHS:
            coloured = tmp_path / f"{name}-{width}.txt"
            coloured.write_text(text.render(after, text.Style(color=True), diff, width=width, before=before))
            plain = text.render(after, text.Style(color=False), diff, width=width, before=before).splitlines()
            pane = f"{name}-{width}"
            run_in_pane(tmux, pane, width, f"cat {coloured}")
            panes[pane] = (width, [line.rstrip() for line in plain])
    for pane, (width, plain) in panes.items():
        rows, joined = capture(tmux, pane, joined=False), capture(tmux, pane, joined=True)
        assert rows == joined, f"{pane}: the terminal wrapped {len(rows) - len(joined)} line(s)"
        assert max(len(row) for row in rows) <= width, pane
        assert rows == plain, f"{pane}: what the terminal shows differs from the report"  # nothing clipped
        verdict = next(i for i, row in enumerate(rows) if row.startswith("Verdict: "))
        last = max(
            i for i, row in enumerate(rows[:HEIGHT]) if row.startswith(("  Unchanged:", "  new stack:", "  Fix:"))
        )
        assert verdict < 4 and last < HEIGHT, f"{pane}: the header runs to row {last}"
        if not pane.startswith("prod-"):
            assert any(row.startswith("Changes against ") for row in rows[:HEIGHT]), (
                f"{pane}: the diff block starts below the first screen"
            )


@pytest.mark.e2e
def test_the_progress_line_leaves_nothing_behind_in_a_narrow_terminal(tmux: tuple[str, ...], tmp_path: Path) -> None:
    """A real plan, its spinner on the pane's stderr: a stack file at a path far longer than the 80 columns."""
    deep = tmp_path / ("a-directory-whose-name-alone-is-longer-than-most-terminals-are-wide-" * 2)
    deep.mkdir()
    stack = deep / "Pulumi.prod.yaml"
    shutil.copy(ROOT / "stacks" / "Pulumi.prod.yaml", stack)
    command = f"cd {ROOT} && {sys.executable} -m trainstack plan --config {stack}"
    run_in_pane(tmux, "plan", 80, command)
    rows = capture(tmux, "plan", joined=True)
    assert rows[0].startswith("trainstack plan: stack prod"), rows[:3]  # the spinner's row was wiped
    assert not [row for row in rows if "under the mock engine" in row or re.match(r"^[|/\\-] planning", row)]
    assert max(len(row) for row in rows) <= 80
    assert any(row.startswith("Verdict: ") for row in rows[:HEIGHT])
    assert rows[-1].startswith("planned in ")

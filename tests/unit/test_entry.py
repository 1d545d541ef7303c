"""The process around the command line (trainstack/entry.py)."""

from __future__ import annotations

import gc
import signal
import sys

import pytest

import trainstack.cli
from trainstack import entry


def test_the_command_runs_without_cyclic_collection_and_exits_with_a_frozen_heap(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A plan's objects live until the process ends, so collection passes only re-scan them (docs/bench.md):
    the command runs with the collector off and exits with its code."""
    seen: list[str] = []

    def main() -> int:
        seen.append(f"main, collector {'on' if gc.isenabled() else 'off'}")
        return 3

    monkeypatch.setattr(trainstack.cli, "main", main)
    # and the heap is frozen before the exit, so the interpreter's last collection skips it (docs/bench.md)
    monkeypatch.setattr(gc, "freeze", lambda: seen.append("freeze"))
    monkeypatch.setattr(sys, "unraisablehook", sys.unraisablehook)  # run() takes these over, as a process may
    handler = signal.getsignal(signal.SIGINT)
    was = gc.isenabled()
    gc.enable()
    try:
        with pytest.raises(SystemExit) as exit_:
            entry.run()
    finally:
        (gc.enable if was else gc.disable)()
        signal.signal(signal.SIGINT, handler)
    assert seen == ["main, collector off", "freeze"]
    assert exit_.value.code == 3

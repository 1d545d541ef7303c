"""Ctrl-C for the command line: one line on stderr and exit 130, at any moment.

The first SIGINT sets a flag and raises KeyboardInterrupt in the main thread. Code that catches broadly (the
Pulumi SDK's runtime, the mock engine's event loop) may turn that exception into something else, so the CLI
asks `interrupted()` before it reports any failure: an interrupted run is reported as interrupted, never as a
failure of the program. A second Ctrl-C ends the process at once.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from types import FrameType

EXIT_INTERRUPTED = 130  # 128 + SIGINT, what shells report for a process ended by Ctrl-C
_interrupted = threading.Event()


def _handler(signum: int, frame: FrameType | None) -> None:
    if _interrupted.is_set():
        _say("interrupted")
        os._exit(EXIT_INTERRUPTED)
    _interrupted.set()
    raise KeyboardInterrupt


def install() -> None:
    """Take over SIGINT (main thread only; a no-op elsewhere, as in-process tests run)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, _handler)


def interrupted() -> bool:
    return _interrupted.is_set()


def report_interrupt() -> int:
    _say("interrupted")
    return EXIT_INTERRUPTED


def _say(text: str) -> None:
    try:
        if sys.stderr is not None:
            sys.stderr.write(text + "\n")
            sys.stderr.flush()
    except (OSError, ValueError):
        pass  # stderr itself is gone: the exit code still says it

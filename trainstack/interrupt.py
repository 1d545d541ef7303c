"""Ctrl-C for the command line: one line on stderr and exit 130, at any moment.

The first SIGINT sets a flag and raises KeyboardInterrupt in the main thread. Code that catches broadly (the
Pulumi SDK's runtime, the mock engine's event loop) may turn that exception into something else, so the CLI
asks `interrupted()` before it reports any failure: an interrupted run is reported as interrupted, never as a
failure of the program. The exception can also be swallowed whole: raised inside one of the SDK's asyncio tasks,
it leaves a future that never resolves and the event loop waiting on it forever. So the first Ctrl-C also arms a
watchdog that ends the process after a short grace period, and a second Ctrl-C ends it at once. When the
signal lands in a weakref or finaliser callback, Python cannot raise it and prints it as "Exception ignored";
the hook below keeps that traceback off the terminal (the flag is set, so the run still ends as interrupted).
asyncio also logs the tasks the interrupt leaves pending ("Task was destroyed but it is pending!") as they are
collected; its logger is silenced from the first Ctrl-C, since those tasks are the run being abandoned.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
from types import FrameType

EXIT_INTERRUPTED = 130  # 128 + SIGINT, what shells report for a process ended by Ctrl-C
GRACE_S = 2.0  # time for the main thread to unwind; a run reports an interrupt in milliseconds when it can
_interrupted = threading.Event()
_said = threading.Lock()  # held by whoever prints the one line: the main thread or the watchdog


def _handler(signum: int, frame: FrameType | None) -> None:
    if _interrupted.is_set():
        _leave()
    _interrupted.set()
    logging.getLogger("asyncio").disabled = True
    watchdog = threading.Timer(GRACE_S, _leave)
    watchdog.daemon = True  # never what keeps a finished process alive
    watchdog.start()
    raise KeyboardInterrupt


def _leave() -> None:
    report_interrupt()
    os._exit(EXIT_INTERRUPTED)


def install() -> None:
    """Take over SIGINT (main thread only; a no-op elsewhere, as in-process tests run)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, _handler)
        sys.unraisablehook = _unraisable


def _unraisable(unraisable: sys.UnraisableHookArgs) -> None:
    if isinstance(unraisable.exc_value, KeyboardInterrupt) and _interrupted.is_set():
        return  # our own Ctrl-C, lost in a callback: the flag already carries it
    sys.__unraisablehook__(unraisable)


def interrupted() -> bool:
    return _interrupted.is_set()


def report_interrupt() -> int:
    """Print the one line (once per process, whoever asks first) and return the exit code."""
    if _said.acquire(blocking=False):
        _say("interrupted")
    return EXIT_INTERRUPTED


def _say(text: str) -> None:
    try:
        if sys.stderr is not None:
            sys.stderr.write(text + "\n")
            sys.stderr.flush()
    except (OSError, ValueError):
        pass  # stderr itself is gone: the exit code still says it

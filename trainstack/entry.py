"""The process around the command line: `trainstack` (the console script) and `python -m trainstack` both run
`run()`.

Ctrl-C is taken over before anything heavy is imported, so an interrupt at any moment (even while pydantic or
the Pulumi SDK load) ends in one line and exit 130, never a traceback.
"""

import contextlib
import gc
import os
import signal
import sys
from typing import NoReturn

from trainstack.interrupt import EXIT_INTERRUPTED, install, report_interrupt


def run() -> NoReturn:
    # One short process whose objects nearly all live until it exits (the SDKs' type modules, the recording, the
    # report): cyclic collection frees next to nothing, yet each pass re-scans that heap: a quarter of a plan's
    # CPU, for 10 MiB more peak memory on the prod plan (docs/bench.md). So none for the command.
    gc.disable()
    install()
    try:
        from trainstack.cli import main

        code = main()
    except KeyboardInterrupt:
        code = report_interrupt()
    if code == EXIT_INTERRUPTED:
        # End now: an interrupted run leaves SDK tasks and threads behind whose shutdown would log their
        # KeyboardInterrupt ("Task exception was never retrieved") after our one line.
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(EXIT_INTERRUPTED)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the work is done: a late Ctrl-C changes nothing
    gc.freeze()  # so Python's last collection at exit does not walk the whole heap: 0.8 CPU-s of a prod plan
    sys.exit(code)

"""The command line the facts recorders share (`record_aws_api`, `record_iam_definitions`): write the recorded
file, or with `--check` exit 1 when it differs from what the installed package says."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path


def main(argv: Sequence[str] | None, doc: str, path: Path, text: Callable[[], str], module: str, origin: str) -> int:
    """`text()` written to `path`, or compared with it (`--check`); `module` is the recorder's `python -m` name,
    `origin` what the facts were recorded from (a package and its version)."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the recorded file differs")
    args = parser.parse_args(argv)
    recorded = text()
    if args.check:
        current = path.read_text(encoding="utf-8") if path.exists() else ""
        if current != recorded:
            print(f"{path} is stale: run python -m {module}", file=sys.stderr)
            return 1
        return 0
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(recorded, encoding="utf-8")
    print(f"wrote {path} ({len(recorded)} bytes, {origin})")
    return 0

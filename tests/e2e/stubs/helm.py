"""A stand-in for helm in the dry run: `helm dependency update CHART_DIR` only, and CHART_DIR must hold a
Chart.yaml (helm: "Error: could not find Chart.yaml"). Nothing is downloaded."""

from __future__ import annotations

import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    if argv[:2] not in (["dependency", "update"], ["dep", "update"]) or len(argv) != 3:
        print(f"Error: unknown command or arguments {argv}", file=sys.stderr)
        return 1
    if not (Path(argv[2]) / "Chart.yaml").is_file():
        print(f"Error: could not find Chart.yaml in {argv[2]}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

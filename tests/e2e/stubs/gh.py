"""A stand-in for the GitHub CLI in the workflow dry run: `gh pr comment NUMBER --body-file FILE [--edit-last]`
only, with a token, and a body GitHub would take (at most 65,536 characters: the API refuses a longer comment).
`--edit-last` fails while no comment exists, as on a pull request's first run; the workflow then creates one."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

LIMIT = 65536


def main(argv: list[str]) -> int:
    with open(os.environ["GH_STUB_LOG"], "a", encoding="utf-8") as log:
        log.write(json.dumps(argv) + "\n")
    if not os.environ.get("GH_TOKEN"):
        print(
            "gh: To use GitHub CLI in a GitHub Actions workflow, set the GH_TOKEN environment variable.",
            file=sys.stderr,
        )
        return 4
    if argv[:2] != ["pr", "comment"] or len(argv) < 3 or not argv[2].isdigit():
        print(f"unknown command or arguments: {argv}", file=sys.stderr)
        return 1
    flags = argv[3:]
    allowed = {"--body-file", "--edit-last"}
    if any(f.startswith("-") and f not in allowed for f in flags) or "--body-file" not in flags:
        print(f"unknown flag in {flags}", file=sys.stderr)
        return 1
    body = Path(flags[flags.index("--body-file") + 1]).read_text()
    if len(body) > LIMIT:
        print(f"GraphQL: Body is too long (maximum is {LIMIT} characters)", file=sys.stderr)
        return 1
    state = Path(os.environ["GH_STUB_LOG"]).with_suffix(".comments")
    if "--edit-last" in flags and not state.exists():
        print("no comments found for current user", file=sys.stderr)
        return 1
    state.write_text(body)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

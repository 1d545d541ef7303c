"""The dev plan shown in README.md and docs/plan.md, cut from the real `make plan` output (`make docs`).

A hand-copied example drifts: the README once showed 155 resources and 12 journeys when the plan had 181 and 15.
These blocks are rendered from the dev stack's text plan as the command line writes it to a file (no colour, 100
columns) and cut to the head (header, mode and verdict: everything before the first blank line), the sections a
page names, and the last paragraph (the one-line summary), with `...` where paragraphs are left out.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path

GAP = "..."


def excerpt(text: str, sections: Sequence[str], footer: bool = False) -> str:
    """`text` cut to its first paragraph, the paragraphs whose first line starts with one of `sections` (a title:
    "Compute", "Risks"), and with `footer` its last paragraph; a `...` line stands for each run of paragraphs left
    out. ValueError for a title that starts no paragraph, or more than one: a renamed section must not silently
    drop out of the docs."""
    paragraphs = text.rstrip("\n").split("\n\n")
    kept = {0, *([len(paragraphs) - 1] if footer else [])}
    for title in sections:
        found = [i for i, p in enumerate(paragraphs) if p.startswith(title)]
        if len(found) != 1:
            titles = ", ".join(p.split("\n", 1)[0] for p in paragraphs)
            raise ValueError(f"{len(found)} paragraphs of the plan start with {title!r}; its paragraphs: {titles}")
        kept.add(found[0])
    lines: list[str] = []
    for i, paragraph in enumerate(paragraphs):
        if i in kept:
            lines.append(paragraph)
        elif lines[-1] != GAP:
            lines.append(GAP)
    return "\n".join(lines)


def dev_plan_text() -> str:
    """The dev stack's text plan, as `trainstack plan --stack dev --output FILE` writes it."""
    from trainstack import cli

    with tempfile.TemporaryDirectory() as folder:
        target = Path(folder) / "dev.txt"
        code = cli.main(["plan", "--stack", "dev", "--output", str(target)])
        if code != cli.EXIT_OK:
            raise RuntimeError(f"trainstack plan --stack dev exited {code}: the docs show a plan that passes")
        return target.read_text(encoding="utf-8")


def fenced(body: str) -> str:
    return f"```\n{body}\n```"

"""Plain-text and Markdown tables, line fitting and value shortening shared by the renderers (the units of a
quantity are the model's: trainstack/model/units.py)."""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass


def table(headers: Sequence[str], rows: Sequence[Sequence[str]], indent: str = "  ") -> list[str]:
    """A plain left-aligned table with a header rule; numbers are pre-formatted strings."""
    widths = [len(h) for h in headers]
    for row in rows:
        widths = [max(w, len(cell)) for w, cell in zip(widths, row, strict=True)]
    lines = [indent + "  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip()]
    lines.append(indent + "  ".join("-" * w for w in widths))
    lines += [indent + "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows]
    return lines


def shared_start(a: str, b: str) -> int:
    """How many leading characters two strings share."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def shared_end(a: str, b: str) -> int:
    """How many trailing characters two strings share."""
    return shared_start(a[::-1], b[::-1])


def number(value: float) -> str:
    """An engine number as a reviewer writes it: 16, not 16.0 (the wire format has only doubles)."""
    return f"{int(value):,}" if float(value).is_integer() else f"{value:,g}"


def short(value: object, limit: int = 60) -> str:
    """An input value for a diff line: numbers as numbers, strings bare, the rest as JSON-like text, cut."""
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, int | float):
        text = number(value).replace(",", "")
    elif isinstance(value, str):
        text = value
    else:
        text = repr(_whole(value))
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _whole(value: object) -> object:
    """Whole floats inside lists and dicts as ints."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: _whole(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_whole(v) for v in value]
    return value


_BREAKS = "/:-.,=&?"  # where a token too long for a line may break: after a path, URL or list separator


def _cut(word: str, room: int) -> int:
    """Where to cut `word` to fit `room`: after the last break character that fits, else at `room`."""
    cut = max(word.rfind(sep, 1, room) for sep in _BREAKS)
    return cut + 1 if cut > 0 else room


def fit_command(command: str, width: int, indent: str = "    ") -> list[str]:
    """A shell command wrapped at spaces to `width` columns, every line but the last ending in ` \\`, so that the
    lines, copied whole, are still the one command. A word is never split (that would change the command): a word
    wider than a line gets a line of its own."""
    words = shlex.split(command, posix=False)  # a quoted word with spaces stays one word
    lines: list[str] = []
    line = command[: len(command) - len(command.lstrip())]  # the command's own leading spaces stay
    for i, word in enumerate(words):
        rest_fits = len(line) + 1 + len(" ".join(words[i:])) <= width  # then no continuation is needed
        if line.strip() and not rest_fits and len(line) + 1 + len(word) + 2 > width:
            lines.append(line + " \\")
            line = indent + word
        else:
            line = f"{line} {word}" if line.strip() else line + word
    return [*lines, line]


def fit(text: str, width: int, indent: str = "") -> list[str]:
    """`text` wrapped at spaces to `width` columns; continuation lines start with `indent`. A word is never split
    unless it is wider than a whole line; then it breaks after a `/`, `:`, `-`, `.` or `,` where it can (a path or
    an image reference), hard only where it has none, so no line is ever wider than `width`."""
    width = max(width, len(indent) + 8)
    lines: list[str] = []
    line = text[: len(text) - len(text.lstrip())]  # the text's own leading spaces stay
    # Each word with the spaces before it: a run of spaces inside a line stays as written (`FAIL  the role`).
    for gap, word in re.findall(r"(\s*)(\S+)", text.lstrip()):
        glue = (gap.replace("\n", " ").replace("\t", " ") or " ") if line.strip() else ""
        if len(line) + len(glue) + len(word) > width and line.strip():
            room = width - len(line) - len(glue)
            if len(word) > width - len(indent) and room >= 12:  # too long for any line: start it here
                cut = _cut(word, room)
                lines.append(line + glue + word[:cut])
                word = word[cut:]
            else:
                lines.append(line)
            line, glue = indent, ""
        while len(line) + len(word) > width:  # what is left still fills whole lines
            cut = _cut(word, width - len(line))
            lines.append(line + word[:cut])
            line, word = indent, word[cut:]
        line += glue + word
    lines.append(line)
    return [line.rstrip() for line in lines] if text.strip() else [""]


def fit_table(
    headers: Sequence[str], rows: Sequence[Sequence[str]], width: int, drop: Sequence[int] = (), indent: str = "  "
) -> list[str]:
    """A table no wider than `width`: whole, else without the columns in `drop` (dropped in that order), else one
    short block per row (`first cell` then `header: cell` pairs, wrapped): never a clipped cell."""
    keep = list(range(len(headers)))
    for column in (None, *drop):
        if column is not None:
            keep.remove(column)
        lines = table([headers[i] for i in keep], [[row[i] for i in keep] for row in rows], indent)
        if max(len(line) for line in lines) <= width:
            return lines
    out: list[str] = []
    for row in rows:
        pairs = "; ".join(f"{headers[i]} {row[i]}" for i in range(1, len(headers)) if row[i])
        out += fit(f"{indent}{row[0]}: {pairs}", width, indent + "    ")
    return out


def clip(lines: list[str], count: int) -> list[str]:
    """At most `count` lines; a cut shows as an ellipsis at the end of the last one kept."""
    if len(lines) <= count:
        return lines
    kept = lines[:count]
    kept[-1] = kept[-1][:-1].rstrip() + "…" if kept[-1] else "…"
    return kept


@dataclass(frozen=True)
class Style:
    """ANSI styling, or none."""

    color: bool

    def _wrap(self, code: str, text: str) -> str:
        return f"\033[{code}m{text}\033[0m" if self.color else text

    def bold(self, text: str) -> str:
        return self._wrap("1", text)

    def dim(self, text: str) -> str:
        return self._wrap("2", text)

    def ok(self, text: str) -> str:
        return self._wrap("32", text)

    def warn(self, text: str) -> str:
        return self._wrap("33", text)

    def bad(self, text: str) -> str:
        return self._wrap("31", text)

    def heading(self, text: str) -> str:
        return self._wrap("1;36", text)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


MAX_ROWS = 40  # rows of one table in the comment; the rest are counted (the JSON has them all)


def md_table(headers: tuple[str, ...] | list[str], rows: list[list[str]], limit: int = MAX_ROWS) -> list[str]:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows[:limit]]
    if len(rows) > limit:
        more = [f"… {len(rows) - limit} more rows: see `--format json`"] + [""] * (len(headers) - 1)
        lines.append("| " + " | ".join(more) + " |")
    return lines

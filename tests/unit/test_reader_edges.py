"""The stack-file reader (stacks/reader.py) at its edges, one rule at a time: the nesting and length limits at and
one past their bound, where a control character is, what is kept of a duplicated key, a file that is not UTF-8,
and reads that fail under the reader (tests/hostile/test_yaml_reader.py drives the same rules through the CLI)."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from stacks import reader


def _nested(levels: int) -> str:
    """A document whose top mapping holds lists nested `levels - 1` deep: `levels` levels in all."""
    inner = levels - 1
    return "a: " + "[" * inner + "]" * inner


def test_nesting_is_read_up_to_its_limit_and_refused_one_level_past_it() -> None:
    assert reader.parse(_nested(reader.MAX_DEPTH)).document is not None
    with pytest.raises(reader.YamlRefused, match=f"nested deeper than {reader.MAX_DEPTH} levels"):
        reader.parse(_nested(reader.MAX_DEPTH + 1))


def test_a_list_is_read_up_to_its_limit_and_refused_one_entry_past_it() -> None:
    assert len(reader.parse("a: [" + ", ".join(["1"] * reader.MAX_ENTRIES) + "]").document["a"]) == reader.MAX_ENTRIES
    with pytest.raises(reader.YamlRefused, match=f"more than {reader.MAX_ENTRIES} entries"):
        reader.parse("a: [" + ", ".join(["1"] * (reader.MAX_ENTRIES + 1)) + "]")


@pytest.mark.parametrize(
    ("text", "line", "column"),
    [("\x00a: 1\n", 1, 1), ("a: 1\nb: x\x00y\n", 2, 5), ("a: 1\n\nccc: \x07\n", 3, 6)],
)
def test_a_control_character_is_named_with_its_line_and_column(text: str, line: int, column: int) -> None:
    with pytest.raises(reader.YamlRefused) as refused:
        reader.parse(text)
    shown = repr(next(c for c in text if c in "\x00\x07"))
    assert str(refused.value).startswith(f"control character {shown} at line {line}, column {column}: ")
    assert refused.value.origin == reader.Origin(line, column)


def test_a_duplicated_key_keeps_its_first_value_and_names_both_lines() -> None:
    parsed = reader.parse("a: 1\nb: 2\na: {tagged: !custom x}\n")
    assert parsed.document == {"a": 1, "b": 2}  # the second value is not read, nor refused for its own tag
    assert [r.message for r in parsed.refusals] == [
        "duplicate key 'a' on lines 1 and 3: YAML would silently keep the last; keep one"
    ]


def test_a_file_that_is_not_utf8_names_the_byte(tmp_path: Path) -> None:
    path = tmp_path / "Pulumi.dev.yaml"
    path.write_bytes(b"a: 1\nb: caf\xe9\n")
    with pytest.raises(reader.UnreadableFile, match=r"^not UTF-8 text \(byte 11\)$"):
        reader.read_text(path)


@pytest.mark.parametrize(
    ("code", "says"), [(errno.EAGAIN, "not a regular file"), (errno.EIO, "cannot read: Input/output error")]
)
def test_a_read_that_fails_under_the_reader_is_refused_in_words(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: int, says: str
) -> None:
    """A read that would block (something other than a regular file behind the path) or a device error."""
    path = tmp_path / "Pulumi.dev.yaml"
    path.write_text("a: 1\n")

    def failing_read(fd: int, size: int) -> bytes:
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(reader.os, "read", failing_read)
    with pytest.raises(reader.UnreadableFile) as refused:
        reader.read_text(path)
    assert str(refused.value) == says

"""The stack-file reader (stacks/reader.py) at its edges, one rule at a time: the nesting and length limits at and
one past their bound, where a control character is, what is kept of a duplicated key, a file that is not UTF-8,
and reads that fail under the reader (tests/hostile/test_yaml_reader.py drives the same rules through the CLI)."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

import pytest
from ruamel.yaml.error import YAMLError

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


def _refused(text: str) -> reader.YamlRefused:
    with pytest.raises(reader.YamlRefused) as refused:
        reader.parse(text)
    return refused.value


def test_an_alias_is_refused_at_its_place_before_anything_is_expanded() -> None:
    refused = _refused("a: &x [1, 2]\nb: *x\n")
    assert refused.message == "alias *x: stack files do not use anchors and aliases; write the value out"
    assert refused.origin == reader.Origin(2, 4)


def test_a_mapping_is_read_up_to_its_limit_and_refused_at_the_first_key_past_it() -> None:
    keys = [f"k{i}: 1" for i in range(reader.MAX_ENTRIES + 1)]
    assert len(reader.parse("\n".join(keys[:-1])).document) == reader.MAX_ENTRIES
    refused = _refused("\n".join(keys))
    assert refused.message == f"more than {reader.MAX_ENTRIES} entries in one list or mapping"
    assert refused.origin == reader.Origin(reader.MAX_ENTRIES + 1, 1)


def test_a_syntax_error_names_its_place_and_the_parsers_reason() -> None:
    assert (
        _refused("a: [1\n").message
        == "YAML syntax error at line 2, column 1: expected ',' or ']', but got '<stream end>'"
    )
    assert _refused("a: 1\n---\nb: 2\n").message == "YAML syntax error at line 2, column 1: but found another document"


@pytest.mark.parametrize("text", ["", "# nothing but a comment\n"])
def test_an_empty_document_is_none_with_nothing_refused(text: str) -> None:
    parsed = reader.parse(text)
    assert parsed.document is None and parsed.refusals == [] and parsed.origins == {}


def test_each_value_has_its_line_and_column_and_a_plain_scalar_its_text() -> None:
    parsed = reader.parse('a: 1.30\nb: "1.30"\nc:\n  - x\nd: {e: on}\n')
    assert parsed.origins[("a",)] == reader.Origin(1, 4, "1.30")
    assert parsed.origins[("b",)] == reader.Origin(2, 4)  # quoted: no plain text
    assert parsed.origins[("c",)] == reader.Origin(4, 3)  # a list: no plain text
    assert parsed.origins[("c", 0)] == reader.Origin(4, 5, "x")
    assert parsed.origins[("d",)] == reader.Origin(5, 4)
    assert parsed.origins[("d", "e")] == reader.Origin(5, 8, "on")


@pytest.mark.parametrize(
    ("text", "document", "path", "message"),
    [
        ("a: !custom [x]\n", {"a": ["x"]}, ("a",), "tag !custom is not supported in a stack file: use a plain list"),
        (
            "a: !!omap {x: 1}\n",
            {"a": {"x": 1}},
            ("a",),
            "tag !!omap is not supported in a stack file: use a plain mapping",
        ),
        ("a: !custom 5\n", {"a": "5"}, ("a",), "tag !custom is not supported in a stack file: write a plain value"),
        (
            "a: !<tag:example.com,2000:x> 5\n",
            {"a": "5"},
            ("a",),
            "tag tag:example.com,2000:x is not supported in a stack file: write a plain value",
        ),
        (
            "a: {<<: {b: 1}, c: 2}\n",
            {"a": {"c": 2}},
            ("a",),
            "merge key `<<`: stack files do not merge mappings; write the keys out",
        ),
        ("? [x]\n: 1\nb: 2\n", {"b": 2}, (), "a list or mapping used as a key: keys are plain strings"),
        ("1: x\nb: 2\n", {"b": 2}, (), 'key 1 is read as a number: keys are strings; quote it ("1") or rename it'),
        (
            "a: !!int 0x\n",
            {"a": "0x"},
            ("a",),
            "cannot read this value as !!int: invalid literal for int() with base 16: ''",
        ),
    ],
    ids=[
        "tagged-list",
        "tagged-mapping",
        "tagged-scalar",
        "verbatim-tag",
        "merge",
        "list-key",
        "number-key",
        "bad-int",
    ],
)
def test_what_a_stack_file_may_not_use_is_refused_at_its_path_and_the_rest_is_read(
    text: str, document: object, path: tuple[str, ...], message: str
) -> None:
    parsed = reader.parse(text)
    assert parsed.document == document
    assert [(r.path, r.message) for r in parsed.refusals] == [(path, message)]
    assert all(r.origin is not None for r in parsed.refusals)


def test_only_a_mapping_of_one_secure_text_is_a_secret() -> None:
    parsed = reader.parse("a: {secure: x}\nb: {secure: 1}\nc: {secure: x, d: 1}\ne: [{secure: y}]\n")
    assert parsed.secrets == [("a",), ("e", 0)]


@pytest.mark.parametrize(
    ("scalar", "message"),
    [
        (
            "010",
            "010: Pulumi (Go yaml.v3) reads a number with a leading zero as octal (8), YAML 1.2 as 10: write it "
            "without the leading zero, or quote it",
        ),
        (
            "18446744073709551616",
            "18446744073709551616: Pulumi (Go yaml.v3) reads an integer this large as an approximate float: quote it",
        ),
        (
            "2024-1-2",
            "2024-1-2: Pulumi (Go yaml.v3) reads this as a date and passes on Go's text of it (such as "
            "'2024-01-01 00:00:00 +0000 UTC'), YAML 1.2 as the text itself: quote it",
        ),
        (
            "._5",
            "._5: Pulumi (Go yaml.v3) reads this as the text '._5', YAML 1.2 as the number 0.5: quote it, or write a "
            "plain number",
        ),
        (".inf", ".inf is not a finite number: give a finite value (`.inf` and `.nan` are not JSON)"),
    ],
)
def test_a_plain_scalar_pulumi_reads_otherwise_is_refused_with_both_readings(scalar: str, message: str) -> None:
    parsed = reader.parse(f"v: {scalar}\n")
    assert [r.message for r in parsed.refusals] == [message]
    assert reader.parse(f'v: "{scalar}"\n').refusals == []  # quoted, it is text to both


def test_the_largest_yaml_v3_integers_are_read_and_one_past_them_refused() -> None:
    assert reader.parse(f"a: {2**64 - 1}\nb: {-(2**63)}\n").refusals == []
    assert len(reader.parse(f"a: {2**64}\nb: {-(2**63) - 1}\n").refusals) == 2


def test_a_file_is_read_up_to_its_size_limit_and_refused_one_byte_past_it(tmp_path: Path) -> None:
    path = tmp_path / "Pulumi.dev.yaml"
    path.write_text("#" * reader.MAX_FILE_BYTES)
    assert len(reader.read_text(path)) == reader.MAX_FILE_BYTES
    path.write_text("#" * (reader.MAX_FILE_BYTES + 1))
    with pytest.raises(reader.UnreadableFile, match=r"^larger than 1024 KiB: not a stack file$"):
        reader.read_text(path)


def _open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_reading_leaves_no_descriptor_open(tmp_path: Path) -> None:
    path = tmp_path / "Pulumi.dev.yaml"
    path.write_text("a: 1\n")
    before = _open_descriptors()
    assert reader.read_text(path) == "a: 1\n"
    with pytest.raises(reader.UnreadableFile):
        reader.read_text(tmp_path)
    assert _open_descriptors() == before


@pytest.mark.parametrize(
    ("path", "says"),
    [
        ("absent", "file not found"),
        ("file/below", "cannot read: Not a directory"),
        (".", "not a regular file (a directory): give the path of a stack file"),
    ],
)
def test_a_path_that_is_not_a_readable_file_is_refused_in_words(tmp_path: Path, path: str, says: str) -> None:
    (tmp_path / "file").write_text("a: 1\n")
    with pytest.raises(reader.UnreadableFile) as refused:
        reader.read_text(tmp_path / path)
    assert str(refused.value) == says


@pytest.mark.parametrize(
    ("mode", "kind"),
    [
        (stat.S_IFDIR, "a directory"),
        (stat.S_IFIFO, "a FIFO"),
        (stat.S_IFCHR, "a character device"),
        (stat.S_IFBLK, "a block device"),
        (stat.S_IFSOCK, "a socket"),
        (0, "not a file"),
    ],
)
def test_each_kind_of_file_that_is_not_regular_is_named(mode: int, kind: str) -> None:
    assert reader._kind(mode) == kind


@pytest.mark.parametrize(
    ("text", "tag"), [("a: !!bool maybe\n", "!!bool"), ("a: !!int ''\n", "!!int"), ("a: !!float ''\n", "!!float")]
)
def test_an_explicit_core_tag_on_a_value_it_cannot_read_is_refused_with_its_line(text: str, tag: str) -> None:
    """ruamel.yaml's constructors raise KeyError (`!!bool maybe`) and IndexError (an empty `!!int`) too: each is a
    refusal naming the tag and the line, never a traceback."""
    (refusal,) = reader.parse(text).refusals
    assert refusal.message.startswith(f"cannot read this value as {tag}: ") and refusal.origin == reader.Origin(1, 4)


def test_any_other_yaml_error_is_a_refusal_not_a_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    """ruamel.yaml's errors without a place (its base YAMLError) end in a refusal too."""

    class Broken:
        def compose(self, text: str) -> None:
            raise YAMLError("the stream broke")

    monkeypatch.setattr(reader, "_yaml", Broken)
    refused = _refused("a: 1\n")
    assert (refused.message, refused.origin) == ("YAML error: the stream broke", None)

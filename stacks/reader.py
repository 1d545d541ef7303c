"""Reading a stack file strictly: a regular file of bounded size, parsed as plain YAML 1.2 data, as Pulumi reads it.

Pulumi reads stack files with Go's yaml.v3 (pulumi/pulumi sdk/go/common/encoding, gopkg.in/yaml.v3 v3.0.1): YAML
1.2, so `7:03:00`, `yes` and `on` are text, not the numbers and booleans YAML 1.1 makes of them. This reader
parses with ruamel.yaml's YAML 1.2 resolver, and refuses, with the value and how to write it, the few plain
scalars where yaml.v3 still reads the way YAML 1.1 did (`0777` is octal 511 there, 777 in YAML 1.2) or reads
text where YAML 1.2 reads a number (`._5`): the plan never reads a value other than `pulumi up` would.
tests/hostile/test_yaml_reader.py holds the reader to yaml.v3's own answers (a fixture made with yaml.v3).

A stack file is data: mappings with string keys, lists and plain scalars. YAML allows much more, and some of it
is dangerous or misleading in a config file:

- aliases (`*name`) expand nested anchors without bound (a few hundred bytes can ask for gigabytes); stack
  files do not need them, so they are refused, and with them merge keys (`<<`);
- duplicate keys are accepted and the last one wins (a second `environment:` silently turns prod into dev);
- non-string keys (`2024-01-01:`, `1:`, `true:`) and non-finite numbers (`.inf`, `.nan`) are accepted although
  no setting takes them (and `Infinity` is not JSON);
- control characters (NUL, ESC) have no place in a stack file and are refused with their line;
- a FIFO or a device passed as the file blocks the reader forever.

Everything here is refused with the line and column the YAML gives, and the whole file is read into bounded
memory: the limits below are far above any real stack file (the committed ones are under 10 KiB and their
longest list has a handful of entries) and are documented in docs/cli.md.
"""

from __future__ import annotations

import errno
import math
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.composer import Composer
from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.events import AliasEvent, Event
from ruamel.yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode
from ruamel.yaml.reader import ReaderError
from typing_extensions import override

MAX_FILE_BYTES = 1024 * 1024  # 1 MiB
MAX_ENTRIES = 1000  # entries in any one YAML list or mapping
MAX_DEPTH = 32  # nesting of mappings and lists (a stack file uses 6)

_CORE = "tag:yaml.org,2002:"
# The scalar types a stack file may hold; dates are read (and then refused by the schema with the key named).
_SCALAR_TAGS = {_CORE + name for name in ("str", "int", "float", "bool", "null", "timestamp")}
Path_ = tuple[str | int, ...]


@dataclass(frozen=True)
class Origin:
    """Where a value sits in the file, and its text as written when it was a plain (unquoted) scalar."""

    line: int
    column: int
    plain: str | None = None

    def __str__(self) -> str:
        return f"line {self.line}, column {self.column}"


@dataclass(frozen=True)
class Refusal:
    """One thing in the file's YAML that a stack file may not use."""

    path: Path_
    origin: Origin | None
    message: str


@dataclass
class Parsed:
    """A parsed stack file: the data, where each value came from, and what was refused."""

    document: Any
    origins: dict[Path_, Origin] = field(default_factory=dict[Path_, Origin])
    refusals: list[Refusal] = field(default_factory=list[Refusal])
    secrets: list[Path_] = field(default_factory=list[Path_])  # paths of `{secure: ...}` values


class UnreadableFile(Exception):
    """The path cannot be read as a stack file; the message says why in a few words."""


class YamlRefused(Exception):
    """YAML the loader stops at (syntax, aliases, nesting, size): one message and where."""

    def __init__(self, message: str, origin: Origin | None) -> None:
        self.message = message
        self.origin = origin
        super().__init__(message)


def read_text(path: Path) -> str:
    """The file's text, if it is a regular file of at most MAX_FILE_BYTES in UTF-8.

    The file is opened without blocking and checked on the open descriptor, so a FIFO, a device or a socket
    is refused at once, and a file swapped for one after a check is refused too."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise UnreadableFile("file not found") from None
    except OSError as error:
        raise UnreadableFile(f"cannot read: {error.strerror or error}") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise UnreadableFile(f"not a regular file ({_kind(mode)}): give the path of a stack file")
        chunks: list[bytes] = []
        size = 0
        while chunk := os.read(fd, 64 * 1024):
            size += len(chunk)
            if size > MAX_FILE_BYTES:
                raise UnreadableFile(f"larger than {MAX_FILE_BYTES // 1024} KiB: not a stack file")
            chunks.append(chunk)
    except OSError as error:
        if error.errno == errno.EAGAIN:  # a regular file never does this; something else behind the path
            raise UnreadableFile("not a regular file") from None
        raise UnreadableFile(f"cannot read: {error.strerror or error}") from None
    finally:
        os.close(fd)
    try:
        return b"".join(chunks).decode("utf-8")
    except UnicodeDecodeError as error:
        raise UnreadableFile(f"not UTF-8 text (byte {error.start})") from None


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return "not a file"


class _StrictComposer(Composer):
    """ruamel.yaml's composer, building nodes only, that stops at aliases, deep nesting and long collections while
    it reads (before anything is expanded or built)."""

    @override
    def compose_node(self, parent: Any, index: Any) -> Any:
        event: Event = self.parser.peek_event()
        if isinstance(event, AliasEvent):
            raise YamlRefused(
                f"alias *{event.anchor}: stack files do not use anchors and aliases; write the value out",
                _origin(event.start_mark),
            )
        if parent is not None and len(parent.value) >= MAX_ENTRIES:
            raise YamlRefused(f"more than {MAX_ENTRIES} entries in one list or mapping", _origin(event.start_mark))
        if self.depth >= MAX_DEPTH:
            raise YamlRefused(f"nested deeper than {MAX_DEPTH} levels", _origin(event.start_mark))
        return super().compose_node(parent, index)


def _yaml() -> YAML:
    """A YAML 1.2 reader (ruamel.yaml's pure-Python safe loader) with the strict composer; duplicate keys are
    kept, so the builder can name both lines."""
    loader = YAML(typ="safe", pure=True)
    loader.Composer = _StrictComposer
    loader.allow_duplicate_keys = True
    return loader


def _origin(mark: Any, plain: str | None = None) -> Origin | None:
    return Origin(mark.line + 1, mark.column + 1, plain) if mark is not None else None


def parse(text: str) -> Parsed:
    """Parse a stack file's text into plain data, refusing what a stack file may not use.

    Raises YamlRefused for what stops the reader (syntax errors, aliases, nesting, size); everything else
    (duplicate keys, non-string keys, non-finite numbers, tags) is listed in `Parsed.refusals`, all at once."""
    loader = _yaml()
    try:  # everything inside: ruamel.yaml checks the characters as it reads (a NUL is a ReaderError)
        node = loader.compose(text)
        parsed = Parsed(document=None)
        if node is not None:
            parsed.document = _Builder(loader, parsed).build(node, ())
        return parsed
    except ReaderError as error:
        line, column = _line_column(text, error.position)
        raise YamlRefused(
            f"control character {_character(error.character)} at line {line}, column {column}: a stack file is plain "
            "text; remove it",
            Origin(line, column),
        ) from None
    except MarkedYAMLError as error:
        reason = error.problem or str(error)
        where = f" at {_origin(error.problem_mark)}" if error.problem_mark is not None else ""
        raise YamlRefused(f"YAML syntax error{where}: {reason}", None) from None
    except YAMLError as error:
        raise YamlRefused(f"YAML error: {error}", None) from None


def _character(character: object) -> str:
    """The offending character as its escape (`'\\x00'`); ruamel.yaml gives its code point or the character."""
    return repr(chr(character) if isinstance(character, int) else str(character))


def _line_column(text: str, position: int) -> tuple[int, int]:
    """1-based line and column of a character offset."""
    before = text[:position]
    return before.count("\n") + 1, position - (before.rfind("\n") + 1) + 1


class _Builder:
    """Builds plain Python data from the composed nodes, recording origins and refusals."""

    def __init__(self, loader: YAML, parsed: Parsed) -> None:
        self.loader = loader
        self.parsed = parsed

    def refuse(self, path: Path_, node: Node, message: str) -> None:
        self.parsed.refusals.append(Refusal(path, _origin(node.start_mark), message))

    def build(self, node: Node, path: Path_) -> Any:
        plain = node.value if isinstance(node, ScalarNode) and node.style is None else None
        self.parsed.origins[path] = _origin(node.start_mark, plain)  # type: ignore[assignment]
        if isinstance(node, MappingNode):
            return self.mapping(node, path)
        if isinstance(node, SequenceNode):
            if node.tag != _CORE + "seq":
                self.refuse(path, node, f"tag {_tag(node.tag)} is not supported in a stack file: use a plain list")
            return [self.build(item, (*path, i)) for i, item in enumerate(node.value)]
        return self.scalar(node, path)

    def mapping(self, node: MappingNode, path: Path_) -> dict[str, Any]:
        if node.tag != _CORE + "map":
            self.refuse(path, node, f"tag {_tag(node.tag)} is not supported in a stack file: use a plain mapping")
        result: dict[str, Any] = {}
        lines: dict[str, int] = {}
        for key_node, value_node in node.value:
            if key_node.tag == _CORE + "merge":
                self.refuse(path, key_node, "merge key `<<`: stack files do not merge mappings; write the keys out")
                continue
            if not isinstance(key_node, ScalarNode):
                self.refuse(path, key_node, "a list or mapping used as a key: keys are plain strings")
                continue
            key = self.scalar(key_node, path)
            if not isinstance(key, str):
                self.refuse(
                    path,
                    key_node,
                    f"key {key_node.value} is read as {_type_name(key)}: keys are strings; quote it "
                    f'("{key_node.value}") or rename it',
                )
                continue
            line = key_node.start_mark.line + 1
            if key in lines:
                self.refuse(
                    (*path, key),
                    key_node,
                    f"duplicate key {key!r} on lines {lines[key]} and {line}: YAML would silently keep the last; "
                    "keep one",
                )
                continue
            lines[key] = line
            result[key] = self.build(value_node, (*path, key))
        if set(result) == {"secure"} and isinstance(result["secure"], str):
            self.parsed.secrets.append(path)
        return result

    def scalar(self, node: Node, path: Path_) -> Any:
        if node.tag not in _SCALAR_TAGS:
            self.refuse(path, node, f"tag {_tag(node.tag)} is not supported in a stack file: write a plain value")
            return node.value
        constructor = self.loader.constructor
        try:
            # The tag's constructor, as construct_object() picks it for a scalar.
            value = constructor.yaml_constructors[node.tag](constructor, node)
        except Exception as error:  # an integer of 5,000 digits; KeyError for `!!bool maybe`, IndexError for `!!int ''`
            why = str(error).splitlines()[0][:120] if str(error) else ""
            self.refuse(path, node, f"cannot read this value as {_tag(node.tag)}: {why or type(error).__name__}")
            return node.value
        if isinstance(value, float) and not math.isfinite(value):
            self.refuse(
                path, node, f"{node.value} is not a finite number: give a finite value (`.inf` and `.nan` are not JSON)"
            )
        elif (
            isinstance(node, ScalarNode)
            and node.style is None
            and (reason := pulumi_reads_otherwise(node.value, value))
        ):
            self.refuse(path, node, reason)
        return value


def _tag(tag: str) -> str:
    return "!!" + tag.removeprefix(_CORE) if tag.startswith(_CORE) else tag


def _type_name(value: object) -> str:
    names: dict[type[object], str] = {bool: "a boolean", int: "a number", float: "a number", type(None): "null"}
    return names.get(type(value), f"a {type(value).__name__}")


# ------------------------------------------------------------------------------------ yaml.v3's own readings
#
# Where Go's yaml.v3 (v3.0.1, resolve.go `resolve`), which Pulumi reads stack files with, reads a plain scalar
# differently from YAML 1.2: an integer with a leading zero is octal there ("Octals from the 1.1 spec, spelled as
# 0777, are still decoded by default in v3"), and a float is only what `yamlStyleFloat` matches, anything else
# (`._5`) staying text. The reader refuses both rather than guess.
_V3_FLOAT = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?")
_LEADING_ZERO = re.compile(r"[-+]?0[0-7_]+")
# yaml.v3's parseTimestamp layouts ("2006-1-2T15:4:5.999999999Z07:00", its lower-case `t` twin,
# "2006-1-2 15:4:5.999999999", "2006-1-2"): one- or two-digit fields, where YAML 1.2 readers want two.
_V3_TIMESTAMP = re.compile(
    r"[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}"
    r"([Tt][0-9]{1,2}:[0-9]{1,2}:[0-9]{1,2}(\.[0-9]+)?(Z|[-+][0-9]{2}:[0-9]{2})|"
    r" [0-9]{1,2}:[0-9]{1,2}:[0-9]{1,2}(\.[0-9]+)?)?"
)
# yaml.v3 reads an integer into int64 or uint64; a larger one becomes a float there.
_V3_INTEGERS = range(-(2**63), 2**64)


def pulumi_reads_otherwise(text: str, value: object) -> str | None:
    """Why Pulumi (yaml.v3) would read the plain scalar `text` as something other than `value`, or None."""
    if isinstance(value, str) and _V3_TIMESTAMP.fullmatch(text):
        return (
            f"{text}: Pulumi (Go yaml.v3) reads this as a date and passes on Go's text of it (such as "
            "'2024-01-01 00:00:00 +0000 UTC'), YAML 1.2 as the text itself: quote it"
        )
    if isinstance(value, int) and not isinstance(value, bool) and value not in _V3_INTEGERS:
        return f"{text}: Pulumi (Go yaml.v3) reads an integer this large as an approximate float: quote it"
    if isinstance(value, int) and not isinstance(value, bool) and _LEADING_ZERO.fullmatch(text):
        octal = int(text.replace("_", ""), 8)
        if octal != value:
            return (
                f"{text}: Pulumi (Go yaml.v3) reads a number with a leading zero as octal ({octal}), YAML 1.2 as "
                f"{value}: write it without the leading zero, or quote it"
            )
    # yaml.v3 drops underscores before matching a float that starts with a digit or a sign, never one that starts
    # with a dot (`._5` stays text there).
    if isinstance(value, float) and not _V3_FLOAT.fullmatch(text if text.startswith(".") else text.replace("_", "")):
        return (
            f"{text}: Pulumi (Go yaml.v3) reads this as the text {text!r}, YAML 1.2 as the number {value}: quote it, "
            "or write a plain number"
        )
    return None

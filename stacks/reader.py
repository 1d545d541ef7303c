"""Reading a stack file strictly: a regular file of bounded size, parsed as plain YAML data.

A stack file is data: mappings with string keys, lists and plain scalars. `yaml.safe_load` accepts much more
than that, and some of it is dangerous or misleading in a config file:

- aliases (`*name`) expand nested anchors without bound (a few hundred bytes can ask for gigabytes); stack
  files do not need them, so they are refused, and with them merge keys (`<<`);
- duplicate keys are accepted and the last one wins (a second `environment:` silently turns prod into dev);
- non-string keys (`2024-01-01:`, `1:`, `true:`) and non-finite numbers (`.inf`, `.nan`, `1e999`) are
  accepted although no setting takes them (and `Infinity` is not JSON);
- a FIFO or a device passed as the file blocks the reader forever.

Everything here is refused with the line and column the YAML gives, and the whole file is read into bounded
memory: the limits below are far above any real stack file (the committed ones are under 10 KiB and their
longest list has a handful of entries) and are documented in docs/cli.md.
"""

from __future__ import annotations

import errno
import math
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from typing_extensions import override
from yaml.events import AliasEvent, Event
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

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


class _StrictLoader(yaml.SafeLoader):
    """PyYAML's safe loader, used for composing nodes only, that stops at aliases, deep nesting and long
    collections while it reads (before anything is expanded or built)."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0

    @override
    def compose_node(self, parent: Node | None, index: Any) -> Node | None:
        # check_event() reads the next event into current_event, as peek_event() would (types-pyyaml leaves
        # peek_event untyped).
        self.check_event()
        event: Event = self.current_event
        if isinstance(event, AliasEvent):
            raise YamlRefused(
                f"alias *{event.anchor}: stack files do not use anchors and aliases; write the value out",
                _origin(event.start_mark),
            )
        if parent is not None and len(parent.value) >= MAX_ENTRIES:
            raise YamlRefused(f"more than {MAX_ENTRIES} entries in one list or mapping", _origin(event.start_mark))
        if self._depth >= MAX_DEPTH:
            raise YamlRefused(f"nested deeper than {MAX_DEPTH} levels", _origin(event.start_mark))
        self._depth += 1
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def _origin(mark: Any, plain: str | None = None) -> Origin | None:
    return Origin(mark.line + 1, mark.column + 1, plain) if mark is not None else None


def parse(text: str) -> Parsed:
    """Parse a stack file's text into plain data, refusing what a stack file may not use.

    Raises YamlRefused for what stops the reader (syntax errors, aliases, nesting, size); everything else
    (duplicate keys, non-string keys, non-finite numbers, tags) is listed in `Parsed.refusals`, all at once."""
    loader = _StrictLoader(text)
    try:
        node = loader.get_single_node()
        parsed = Parsed(document=None)
        if node is not None:
            parsed.document = _Builder(loader, parsed).build(node, ())
        return parsed
    except yaml.MarkedYAMLError as error:
        reason = error.problem or str(error)
        where = f" at {_origin(error.problem_mark)}" if error.problem_mark is not None else ""
        raise YamlRefused(f"YAML syntax error{where}: {reason}", None) from None
    except yaml.YAMLError as error:
        raise YamlRefused(f"YAML error: {error}", None) from None
    finally:
        loader.dispose()


class _Builder:
    """Builds plain Python data from the composed nodes, recording origins and refusals."""

    def __init__(self, loader: _StrictLoader, parsed: Parsed) -> None:
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
        try:
            # The tag's constructor, as construct_object() picks it for a scalar (types-pyyaml leaves that
            # method's node parameter untyped).
            value = self.loader.yaml_constructors[node.tag](self.loader, node)
        except (ValueError, OverflowError, yaml.YAMLError) as error:  # e.g. an integer of 5,000 digits
            self.refuse(path, node, f"cannot read this value: {str(error).splitlines()[0][:120]}")
            return node.value
        if isinstance(value, float) and not math.isfinite(value):
            self.refuse(
                path, node, f"{node.value} is not a finite number: give a finite value (`.inf` and `.nan` are not JSON)"
            )
        return value


def _tag(tag: str) -> str:
    return "!!" + tag.removeprefix(_CORE) if tag.startswith(_CORE) else tag


def _type_name(value: object) -> str:
    names: dict[type[object], str] = {bool: "a boolean", int: "a number", float: "a number", type(None): "null"}
    return names.get(type(value), f"a {type(value).__name__}")

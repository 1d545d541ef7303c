"""Where a command's output goes: stdout, or the file `--output` names, and never over a file trainstack did
not write.

`--output` replaces only a report of its own kind (a report of `plan`, `preflight` or `capacity`; the JSON schema
for `schema`) or
writes a new file: a stack file, `__main__.py`, `pyproject.toml` or any other file is refused before the plan
runs, as are directories, FIFOs, devices, sockets, read-only files (by their mode bits: root may write
anything, and must still not replace a file its owner made read-only) and directories where no file can be
created. The file is written atomically: a temporary file beside it, then a rename.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import stat
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Literal, TextIO

OutputKind = Literal["report", "schema"]
# A report or schema larger than this is not one trainstack wrote (prod's JSON report is about 1 MiB).
MAX_OWN_OUTPUT_BYTES = 64 * 1024 * 1024
# The first line of the text and Markdown reports: the plan's, preflight's and capacity's.
_REPORT_HEADS = (
    "trainstack plan:",
    "## trainstack plan",
    "trainstack preflight:",
    "### trainstack preflight:",
    "capacity for ",
    "### capacity for ",
)
SCHEMA_TITLE = "StackConfig"  # the title of `trainstack schema`'s JSON schema (stacks/schema)


class BadInput(Exception):
    """A problem with what the user asked for; the message is the one line we print."""


class OutputFailed(Exception):
    """The output was made but could not be delivered; the message is the one line we print."""


def output_target(
    path: Path, inputs: Sequence[tuple[str, Path]], kind: OutputKind = "report", option: str = "--output"
) -> Path:
    """The regular file the output will replace, checked before the (slower) work runs, without opening it for
    writing (a FIFO would block, a device would take the bytes). A symlink is followed: its target is replaced,
    the link stays. Refused: what `output_target`'s module docstring lists, and any of `inputs`."""
    target = Path(os.path.realpath(path))
    try:
        mode: int | None = os.stat(target).st_mode
    except FileNotFoundError:
        mode = None
    except OSError as error:
        raise BadInput(f"{option} {path}: cannot use it: {error.strerror or error}") from None
    if mode is not None:
        if stat.S_ISDIR(mode):
            raise BadInput(f"{option} {path}: is a directory")
        if not stat.S_ISREG(mode):
            raise BadInput(f"{option} {path}: is {kind_of(mode)}; {option} writes regular files only")
        for flag, source in inputs:
            with contextlib.suppress(OSError):
                if os.path.samefile(target, source):
                    raise BadInput(f"{option} {path}: is the stack file given to {flag}; write the report elsewhere")
        if not stat.S_IMODE(mode) & 0o222 or not os.access(target, os.W_OK):
            raise BadInput(f"{option} {path}: is read-only")
        if not written_by_trainstack(target, kind):
            what = "a plan report" if kind == "report" else "a schema"
            raise BadInput(
                f"{option} {path}: exists and is not {what} trainstack wrote; {option} only replaces a report "
                "trainstack wrote, never a stack file, a source file or any other file: choose a new path"
            )
    if not target.parent.is_dir():
        raise BadInput(f"{option} {path}: directory {target.parent} does not exist")
    try:  # the output is written beside the target and renamed over it: that needs a file created here
        fd, probe = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
        os.close(fd)
        os.unlink(probe)
    except OSError as error:
        raise BadInput(f"{option} {path}: not writable: {error.strerror or error}") from None
    return target


def written_by_trainstack(path: Path, kind: OutputKind) -> bool:
    """Whether the regular file at `path` is output of `kind` that trainstack wrote: a plan report (text,
    Markdown, or JSON with its `trainstack` block) or the config's JSON schema."""
    try:
        if os.path.getsize(path) > MAX_OWN_OUTPUT_BYTES:
            return False
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    if kind == "report" and text.startswith(_REPORT_HEADS):
        return True
    try:
        document = json.loads(text)
    except (ValueError, RecursionError):
        return False
    if not isinstance(document, dict):
        return False
    if kind == "report":  # the plan's JSON (the shape of `pulumi preview --json`), preflight's, capacity's
        plan = "steps" in document and isinstance(document.get("trainstack"), dict)
        preflight = {"formatVersion", "verdict", "checks"} <= document.keys()
        capacity = {"group", "instance_type", "options"} <= document.keys()
        return plan or preflight or capacity
    return document.get("title") == SCHEMA_TITLE and "$defs" in document


def kind_of(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def write(text: str, output: Path | None, stream: TextIO | None) -> None:
    """`text` to `stream`, or atomically to `output`: a temporary file beside it, then os.replace, so a reader
    never sees half a report and a failed write leaves the old file as it was."""
    if output is None:
        emit(text, stream)
        return
    temporary: Path | None = None
    try:
        fd, name = tempfile.mkstemp(dir=output.parent, prefix=f".{output.name}.", suffix=".tmp")
        temporary = Path(name)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        try:
            mode = os.stat(output).st_mode
        except FileNotFoundError:
            os.chmod(temporary, 0o666 & ~_umask())
        else:
            if not stat.S_ISREG(mode):  # swapped for a FIFO or a device while the plan ran
                raise BadInput(f"--output {output}: is {kind_of(mode)} now; --output writes regular files only")
            os.chmod(temporary, stat.S_IMODE(mode))
        os.replace(temporary, output)
        temporary = None
    except OSError as error:
        raise OutputFailed(f"--output {output}: cannot write: {error.strerror or error}") from None
    finally:
        if temporary is not None:
            temporary.unlink(missing_ok=True)


# Error handlers that never raise while encoding: with them the stream shows what it can and carries on.
_LOSSY_HANDLERS = ("replace", "backslashreplace", "xmlcharrefreplace", "namereplace", "ignore")


def emit(text: str, stream: TextIO | None) -> None:
    """The whole output to stdout, or OutputFailed with why not. The encoding is checked before the first
    byte, so a terminal that cannot show the report gets nothing rather than half of it. Checked under every
    handler that can fail, `surrogateescape` included: a C locale gives stdout ASCII with that handler, and
    a non-ASCII character still cannot be written."""
    if stream is None:
        raise OutputFailed("stdout is closed: nothing can be written there; use --output PATH")
    encoding = getattr(stream, "encoding", None) or "utf-8"
    if getattr(stream, "errors", None) not in _LOSSY_HANDLERS:
        try:
            text.encode(encoding)
        except UnicodeEncodeError as error:
            raise OutputFailed(_encoding_message(encoding, error)) from None
        except LookupError:
            pass
    try:
        stream.write(text)
        stream.flush()
    except BrokenPipeError:
        _discard(stream)
        raise OutputFailed("stdout's reader went away before the report was complete") from None
    except OSError as error:
        _discard(stream)
        reason = "the disk is full" if error.errno == errno.ENOSPC else (error.strerror or str(error))
        raise OutputFailed(f"cannot write the report to stdout: {reason}") from None
    except UnicodeEncodeError as error:  # a ValueError too: it must not read as "closed"
        raise OutputFailed(_encoding_message(encoding, error)) from None
    except ValueError:  # the stream object was closed
        raise OutputFailed("stdout is closed: nothing can be written there; use --output PATH") from None


def _encoding_message(encoding: str, error: UnicodeEncodeError) -> str:
    return (
        f"stdout's encoding {encoding} cannot show the report (it has {error.object[error.start]!r}): set "
        "PYTHONIOENCODING=utf-8 or a UTF-8 locale (LANG=C.UTF-8), or use --output PATH"
    )


def _discard(stream: TextIO) -> None:
    """Point a broken stdout at /dev/null so the interpreter's last flush at exit does not fail a second time."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())
        os.close(devnull)


def isatty(stream: TextIO | None) -> bool:
    try:
        return stream is not None and stream.isatty()
    except (OSError, ValueError):
        return False


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask

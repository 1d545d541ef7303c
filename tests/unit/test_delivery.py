"""trainstack/delivery.py on its own: which files `--output` may replace, what it refuses and why, and how a
report reaches a stream that cannot take it. The CLI's own tests (tests/hostile/test_cli_streams.py,
test_cli_promises.py) drive the same paths end to end; these pin each decision where it is made."""

from __future__ import annotations

import errno
import io
import json
import os
import re
import socket
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from trainstack import delivery
from trainstack.delivery import BadInput, OutputFailed, emit, kind_of, output_target, written_by_trainstack


def _file(tmp_path: Path, content: str | bytes, name: str = "out") -> Path:
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


# ------------------------------------------------------------------------------- what trainstack wrote


PLAN_JSON = {"steps": [], "trainstack": {"stack": "dev"}}
PREFLIGHT_JSON = {"formatVersion": 1, "verdict": "ready", "checks": []}
CAPACITY_JSON = {"group": "p5", "instance_type": "p5.48xlarge", "options": []}
SCHEMA_JSON = {"title": delivery.SCHEMA_TITLE, "$defs": {}}


@pytest.mark.parametrize(
    ("document", "kind", "ours"),
    [
        (PLAN_JSON, "report", True),
        # `pulumi preview --json` writes `steps` too: without the trainstack block it is the user's file.
        ({"steps": []}, "report", False),
        ({"steps": [], "trainstack": "dev"}, "report", False),
        ({"trainstack": {"stack": "dev"}}, "report", False),
        (PREFLIGHT_JSON, "report", True),  # exactly the keys preflight always writes
        ({**PREFLIGHT_JSON, "stack": "dev"}, "report", True),
        ({"formatVersion": 1, "verdict": "ready"}, "report", False),
        (CAPACITY_JSON, "report", True),
        ({"group": "p5", "instance_type": "p5.48xlarge"}, "report", False),
        (SCHEMA_JSON, "schema", True),
        (SCHEMA_JSON, "report", False),  # a schema is not a report: `plan --output` never replaces it
        (PLAN_JSON, "schema", False),
        ({"title": delivery.SCHEMA_TITLE}, "schema", False),
        ({"title": "Other", "$defs": {}}, "schema", False),
        ([PLAN_JSON], "report", False),  # a JSON array is nobody's report
        ("trainstack plan: dev", "report", False),  # a JSON string, not a text report's first line
    ],
)
def test_which_json_documents_are_trainstacks_own(tmp_path: Path, document: object, kind: str, ours: bool) -> None:
    path = _file(tmp_path, json.dumps(document))
    assert written_by_trainstack(path, kind) is ours  # type: ignore[arg-type]


@pytest.mark.parametrize("head", delivery._REPORT_HEADS)
def test_a_text_report_is_known_by_its_first_line_and_only_as_a_report(tmp_path: Path, head: str) -> None:
    path = _file(tmp_path, f"{head} dev\nmore\n")
    assert written_by_trainstack(path, "report")
    assert not written_by_trainstack(path, "schema")
    assert not written_by_trainstack(_file(tmp_path, f"# notes\n{head} dev\n", "later"), "report")


def test_unreadable_undecodable_unparsable_and_oversized_files_are_not_ours(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert not written_by_trainstack(tmp_path / "missing", "report")
    assert not written_by_trainstack(_file(tmp_path, b'{"steps": [], "trainstack": {"x": "\xff"}}'), "report")
    assert not written_by_trainstack(_file(tmp_path, "{not json"), "report")
    assert not written_by_trainstack(_file(tmp_path, "[" * 100_000), "report")  # RecursionError, not a crash
    plan = _file(tmp_path, json.dumps(PLAN_JSON), "plan.json")
    monkeypatch.setattr(delivery, "MAX_OWN_OUTPUT_BYTES", plan.stat().st_size)
    assert written_by_trainstack(plan, "report")  # at the limit
    monkeypatch.setattr(delivery, "MAX_OWN_OUTPUT_BYTES", plan.stat().st_size - 1)
    assert not written_by_trainstack(plan, "report")  # past it: not read at all


# ------------------------------------------------------------------------------------ the target file


def test_file_kinds_are_named() -> None:
    assert kind_of(stat.S_IFIFO) == "a FIFO"
    assert kind_of(stat.S_IFCHR) == "a device"
    assert kind_of(stat.S_IFBLK) == "a device"
    assert kind_of(stat.S_IFSOCK) == "a socket"
    assert kind_of(stat.S_IFDIR) == "not a regular file"


@pytest.fixture
def unix_socket(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "s"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as bound:
        bound.bind(str(path))
        yield path


def test_a_socket_is_refused_by_name(unix_socket: Path) -> None:
    with pytest.raises(BadInput, match=r"is a socket; --output writes regular files only"):
        output_target(unix_socket, [])


def test_a_missing_directory_is_named(tmp_path: Path) -> None:
    missing = tmp_path / "no"
    with pytest.raises(BadInput, match=re.escape(f"--output {missing}/r.json: directory {missing} does not exist")):
        output_target(missing / "r.json", [])


def test_a_path_the_system_cannot_stat_is_named_with_why(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match=r"^--output .*: cannot use it: File name too long$"):
        output_target(tmp_path / ("x" * 300), [])


@pytest.mark.parametrize("mode", [0o444, 0o555, 0o400])
def test_a_file_no_one_may_write_is_read_only_even_for_root(tmp_path: Path, mode: int) -> None:
    """As root os.access says every file is writable: the mode bits decide."""
    ours = _file(tmp_path, json.dumps(PLAN_JSON), "plan.json")
    ours.chmod(mode)
    with pytest.raises(BadInput, match=r"is read-only$"):
        output_target(ours, [])


def test_a_directory_is_named_as_one(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match=r"^--output .*: is a directory$"):
        output_target(tmp_path, [])


def test_a_new_file_and_a_report_of_our_own_are_targets_and_checking_leaves_nothing(tmp_path: Path) -> None:
    assert output_target(tmp_path / "new.json", []) == tmp_path / "new.json"
    ours = _file(tmp_path, json.dumps(PLAN_JSON), "plan.json")
    assert output_target(ours, [("--config", tmp_path / "Pulumi.dev.yaml")]) == ours
    assert [p.name for p in tmp_path.iterdir()] == ["plan.json"]  # the probe for a writable directory is gone


def test_another_file_is_refused_naming_the_option(tmp_path: Path) -> None:
    notes = _file(tmp_path, "notes\n", "notes.md")
    with pytest.raises(BadInput, match=r"^--schema-output .*notes.md: exists and is not a schema trainstack wrote"):
        output_target(notes, [], kind="schema", option="--schema-output")


# ------------------------------------------------------------------------------------------- writing


@pytest.fixture
def umask_022() -> Iterator[None]:
    previous = os.umask(0o022)
    yield
    os.umask(previous)


def test_a_new_report_gets_the_modes_a_new_file_gets(tmp_path: Path, umask_022: None) -> None:
    delivery.write("report\n", tmp_path / "new.txt", None)
    assert (tmp_path / "new.txt").read_text() == "report\n"
    assert stat.S_IMODE((tmp_path / "new.txt").stat().st_mode) == 0o644  # 0o666 less the umask, as open() makes it


def test_a_replaced_report_keeps_its_modes(tmp_path: Path, umask_022: None) -> None:
    old = _file(tmp_path, "trainstack plan: dev\n", "plan.txt")
    old.chmod(0o600)
    delivery.write("trainstack plan: prod\n", old, None)
    assert old.read_text() == "trainstack plan: prod\n" and stat.S_IMODE(old.stat().st_mode) == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["plan.txt"]  # no temporary file left beside it


def test_a_target_swapped_for_a_fifo_while_the_plan_ran_is_left_alone(tmp_path: Path) -> None:
    target = tmp_path / "plan.txt"
    os.mkfifo(target)
    with pytest.raises(BadInput, match=r"^--output .*plan.txt: is a FIFO now; --output writes regular files only$"):
        delivery.write("report", target, None)
    assert stat.S_ISFIFO(target.stat().st_mode)
    assert [p.name for p in tmp_path.iterdir()] == ["plan.txt"]  # the temporary file is removed


def test_a_directory_gone_before_the_write_is_one_line(tmp_path: Path) -> None:
    gone = tmp_path / "gone" / "plan.json"
    with pytest.raises(OutputFailed, match=rf"^--output {re.escape(str(gone))}: cannot write: No such file or dir"):
        delivery.write("report", gone, None)


# ----------------------------------------------------------------------------------------- streams


class _Stream(io.StringIO):
    """A text stream whose encoding, error handler, write and flush a test chooses."""

    def __init__(self, encoding: str = "utf-8", errors: str = "strict", fail: OSError | None = None) -> None:
        super().__init__()
        self._encoding, self._errors, self.fail, self.flushed = encoding, errors, fail, False

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return self._encoding

    @property
    def errors(self) -> str:  # type: ignore[override]
        return self._errors

    def flush(self) -> None:
        if self.fail is not None:
            raise self.fail
        self.flushed = True


def test_no_stream_is_a_closed_stdout() -> None:
    with pytest.raises(OutputFailed, match=r"^stdout is closed: nothing can be written there; use --output PATH$"):
        emit("report", None)


def test_the_whole_report_is_written_and_flushed() -> None:
    stream = _Stream()
    emit("report\n", stream)
    assert stream.getvalue() == "report\n" and stream.flushed


def test_an_encoding_that_cannot_show_the_report_gets_nothing() -> None:
    stream = _Stream(encoding="ascii")
    with pytest.raises(OutputFailed, match=r"^stdout's encoding ascii cannot show the report \(it has '→'\)"):
        emit("a → b", stream)
    assert stream.getvalue() == ""  # checked before the first byte


def test_a_stream_that_replaces_what_it_cannot_show_is_written_to() -> None:
    raw = io.BytesIO()
    stream = io.TextIOWrapper(raw, encoding="ascii", errors="replace")
    emit("a → b", stream)
    assert raw.getvalue() == b"a ? b"


@pytest.fixture
def stream_on_a_file(tmp_path: Path) -> Iterator[tuple[_Stream, int]]:
    """A stream whose fileno() is a real descriptor on a file, as stdout's is."""
    fd = os.open(tmp_path / "stdout", os.O_WRONLY | os.O_CREAT, 0o600)
    stream = _Stream(fail=BrokenPipeError(errno.EPIPE, "Broken pipe"))
    stream.fileno = lambda: fd  # type: ignore[method-assign]
    yield stream, fd
    os.close(fd)


def _open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_a_reader_gone_at_the_flush_is_one_line_and_stdout_is_pointed_at_dev_null(
    stream_on_a_file: tuple[_Stream, int],
) -> None:
    stream, fd = stream_on_a_file
    before = _open_descriptors()
    with pytest.raises(OutputFailed, match=r"^stdout's reader went away before the report was complete$"):
        emit("report", stream)
    assert os.path.samefile(f"/proc/self/fd/{fd}", os.devnull)  # the interpreter's last flush cannot fail again
    assert _open_descriptors() == before  # the /dev/null descriptor used for it is closed


def test_a_full_disk_is_named_and_stdout_is_pointed_at_dev_null(stream_on_a_file: tuple[_Stream, int]) -> None:
    stream, fd = stream_on_a_file
    stream.fail = OSError(errno.ENOSPC, "No space left on device")
    with pytest.raises(OutputFailed, match=r"^cannot write the report to stdout: the disk is full$"):
        emit("report", stream)
    assert os.path.samefile(f"/proc/self/fd/{fd}", os.devnull)
    stream.fail = OSError(errno.EIO, "Input/output error")
    with pytest.raises(OutputFailed, match=r"^cannot write the report to stdout: Input/output error$"):
        emit("report", stream)


def test_an_encoding_failure_while_writing_is_the_encoding_message() -> None:
    """A stream that says it replaces what it cannot show, and does not, fails like a strict one."""

    class Lying(_Stream):
        def write(self, text: str) -> int:
            raise UnicodeEncodeError("ascii", text, 2, 3, "ordinal not in range(128)")

    with pytest.raises(OutputFailed, match=r"^stdout's encoding ascii cannot show the report \(it has '→'\)"):
        emit("a → b", Lying(encoding="ascii", errors="replace"))


def test_only_a_terminal_is_a_tty() -> None:
    leader, follower = os.openpty()
    try:
        with open(follower, "w", closefd=False) as terminal:
            assert delivery.isatty(terminal) is True
    finally:
        os.close(leader)
        os.close(follower)
    assert delivery.isatty(io.StringIO()) is False
    assert delivery.isatty(None) is False
    closed = io.StringIO()
    closed.close()
    assert delivery.isatty(closed) is False  # a closed stream raises ValueError: not a terminal


def test_a_closed_stream_is_a_closed_stdout() -> None:
    stream = io.StringIO()
    stream.close()
    with pytest.raises(OutputFailed, match=r"^stdout is closed"):
        emit("report", stream)

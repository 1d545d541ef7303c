"""The CLI under hostile flags, files, signals and streams: one line, a documented exit code, no traceback.

Most cases run in-process (the program's recordings come from the session cache); signals and real streams
(a closed stdout, /dev/full, a reader that is gone) need real processes, which run `schema` where the stream
is the point, so they do not wait for a plan."""

from __future__ import annotations

import contextlib
import io
import os
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import ROOT
from trainstack import cli
from trainstack.cli import EXIT_BAD_INPUT, EXIT_INTERRUPTED, EXIT_OK, EXIT_OUTPUT, main

DEV = ROOT / "stacks" / "Pulumi.dev.yaml"


pytestmark = pytest.mark.usefixtures("shared_recordings")  # tests/conftest.py


@pytest.fixture
def no_plan(monkeypatch: pytest.MonkeyPatch) -> None:
    def must_not_run(*args: object, **kwargs: object) -> None:
        raise AssertionError("the plan ran although the input was refused")

    monkeypatch.setattr(cli, "run", must_not_run)


@pytest.fixture
def deadline() -> Iterator[None]:
    def expire(signum: int, frame: object) -> None:
        raise TimeoutError("blocked")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(10)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# ------------------------------------------------------------------------------------------------ stack names


@pytest.mark.parametrize("name", ["", "../stacks/Pulumi.dev", "dev prod", "$(id)"])
def test_unsafe_stack_names_are_refused(capsys: pytest.CaptureFixture[str], no_plan: None, name: str) -> None:
    """`--stack ''` planned dev on main."""
    code, out, err = run_cli(capsys, "plan", "--stack", name)
    assert code == EXIT_BAD_INPUT and out == ""
    assert "not a Pulumi stack name" in err and "dev, prod, staging" in err


@pytest.mark.parametrize("name", ["Pulumi.my stack.yaml", "Pulumi.$HOME.yaml", "Pulumi.a;b.yaml"])
def test_stack_files_pulumi_could_not_use_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], no_plan: None, name: str
) -> None:
    path = tmp_path / name
    path.write_text(DEV.read_text())
    code, _, err = run_cli(capsys, "plan", "--config", str(path))
    assert code == EXIT_BAD_INPUT and "is not a Pulumi stack name" in err


def test_next_step_commands_are_shell_quoted() -> None:
    from trainstack.report.text import next_steps

    lines = next_steps("a.b_c-1", "dev") + next_steps("x y", "dev")
    assert "pulumi up --stack a.b_c-1" in lines[3] and "pulumi up --stack 'x y'" in lines[7]
    assert "preflight --stack a.b_c-1" in lines[1] and "preflight --stack 'x y'" in lines[5]


# ------------------------------------------------------------------------------------------------ --output


def test_output_onto_the_stack_file_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], no_plan: None
) -> None:
    """`--config f.yaml --output f.yaml` replaced the stack file with the report on main."""
    path = tmp_path / "Pulumi.dev.yaml"
    path.write_text(DEV.read_text())
    (tmp_path / "link.yaml").symlink_to(path)
    for output in (path, tmp_path / "link.yaml"):
        code, _, err = run_cli(capsys, "plan", "--config", str(path), "--output", str(output))
        assert code == EXIT_BAD_INPUT and "is the stack file given to --config" in err
    code, _, err = run_cli(capsys, "plan", "--config", str(path), "--against", str(DEV), "--output", str(DEV))
    assert code == EXIT_BAD_INPUT and "is the stack file given to --against" in err
    assert path.read_text() == DEV.read_text()


@pytest.mark.parametrize(("target", "kind"), [("device", "a device"), ("fifo", "a FIFO")])
def test_output_onto_a_device_or_fifo_is_refused_without_blocking(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], no_plan: None, deadline: None, target: str, kind: str
) -> None:
    """A device node became a regular file, and a FIFO blocked forever, on main."""
    if target == "fifo":
        target = str(tmp_path / "fifo")
        os.mkfifo(target)
    else:  # a node of our own: the test must never touch /dev/null (main replaced it with a regular file)
        target = str(tmp_path / "null")
        try:
            os.mknod(target, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        except PermissionError:
            pytest.skip("cannot create a device node here (not root)")
    code, _, err = run_cli(capsys, "plan", "--stack", "dev", "--output", target)
    assert code == EXIT_BAD_INPUT and f"is {kind}; --output writes regular files only" in err
    assert Path(target).exists() and not Path(target).is_file()


@pytest.mark.parametrize("option", ["--config", "--against"])
def test_a_fifo_as_input_is_refused_without_blocking(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], no_plan: None, deadline: None, option: str
) -> None:
    fifo = tmp_path / "Pulumi.fifo.yaml"
    os.mkfifo(fifo)
    argv = ["plan", option, str(fifo)] + (["--config", str(DEV)] if option == "--against" else [])
    code, _, err = run_cli(capsys, *argv)
    assert code == EXIT_BAD_INPUT and "not a regular file (a FIFO)" in err


@pytest.mark.slow
def test_output_through_a_symlink_replaces_the_target_and_keeps_the_link(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    real = tmp_path / "reports" / "plan.json"
    real.parent.mkdir()
    real.write_text('{"steps": [], "trainstack": {"formatVersion": 1}}')  # an earlier report: replaced
    link = tmp_path / "plan.json"
    link.symlink_to(real)
    code, out, err = run_cli(capsys, "plan", "--stack", "dev", "--format", "json", "--output", str(link))
    assert code == EXIT_OK, err
    assert link.is_symlink() and real.read_text().startswith("{") and out == ""


def test_against_a_json_report_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str], no_plan: None) -> None:
    report = tmp_path / "plan.json"
    report.write_text('{"steps": [], "changeSummary": {"create": 1}, "trainstack": {"formatVersion": 1}}')
    code, _, err = run_cli(capsys, "plan", "--config", str(DEV), "--against", str(report))
    assert code == EXIT_BAD_INPUT
    assert "plan report, not a stack file" in err and "baseline" in err


# ------------------------------------------------------------------------------------------------ streams


class _Broken(io.StringIO):
    def __init__(self, error: OSError) -> None:
        super().__init__()
        self.error = error

    def write(self, text: str) -> int:
        raise self.error


@pytest.mark.slow
@pytest.mark.parametrize(
    ("stream", "says"),
    [
        (None, "stdout is closed"),
        (_Broken(BrokenPipeError(32, "Broken pipe")), "reader went away"),
        (_Broken(OSError(28, "No space left on device")), "the disk is full"),
        (io.TextIOWrapper(io.BytesIO(), encoding="ascii"), "encoding ascii cannot show the report"),
    ],
)
def test_stream_failures_exit_5_with_one_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, stream: object, says: str
) -> None:
    """Each was an internal error (exit 3) on main."""
    monkeypatch.setattr(sys, "stdout", stream)
    code = main(["plan", "--stack", "dev", "--no-tree"])
    err = capsys.readouterr().err
    assert code == EXIT_OUTPUT, err
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and says in lines[0] and "Traceback" not in err


def _process(*args: str, **kwargs: object) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "trainstack", *args], cwd=ROOT, stderr=subprocess.PIPE, **kwargs)  # type: ignore[call-overload]


@pytest.mark.e2e
def test_real_streams_closed_full_and_gone() -> None:
    """A real closed stdout, a full disk and a reader that left before the first byte."""
    closed = subprocess.run(
        ["bash", "-c", f"exec {sys.executable} -m trainstack schema >&-"], cwd=ROOT, capture_output=True, text=True
    )
    with open("/dev/full", "w") as full:
        filled = subprocess.run(
            [sys.executable, "-m", "trainstack", "schema"], cwd=ROOT, stdout=full, stderr=subprocess.PIPE, text=True
        )
    read, write = os.pipe()
    os.close(read)
    try:
        gone = subprocess.run(
            [sys.executable, "-m", "trainstack", "schema"], cwd=ROOT, stdout=write, stderr=subprocess.PIPE, text=True
        )
    finally:
        os.close(write)
    for done, says in ((closed, "stdout is closed"), (filled, "the disk is full"), (gone, "reader went away")):
        assert done.returncode == EXIT_OUTPUT, done.stderr
        assert done.stderr.count("\n") == 1 and says in done.stderr and "Traceback" not in done.stderr


def _wait_until_loaded(pid: int, library: str, timeout_s: float = 120) -> None:
    """Until the process has mapped `library` (a shared object it imports at a known stage)."""
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        with contextlib.suppress(OSError):
            if library in Path(f"/proc/{pid}/maps").read_text():
                return
        time.sleep(0.01)
    raise AssertionError(f"{library} never loaded")


@pytest.mark.parametrize(
    ("stage", "stack", "library", "extra_s"),
    [
        ("while trainstack imports pydantic", "dev", "_pydantic_core", 0.0),
        ("while the SDK's gRPC loads", "dev", "cygrpc", 0.0),
        # The SDK loads with the CLI; the prod program runs from about 0.4 to 1.7 s after it on a quiet machine (a
        # loaded one only stretches the run): the middle of it. (dev's whole plan takes 1.7 s now, so its run is
        # too short a target.)
        ("while the program runs under the mock engine", "prod", "cygrpc", 0.8),
    ],
)
@pytest.mark.e2e
def test_ctrl_c_at_any_moment_exits_130_with_one_line(stage: str, stack: str, library: str, extra_s: float) -> None:
    """On main: a traceback, or exit 3 when the interrupt landed in an import inside the program. (Before the
    interpreter runs trainstack's first line, Python's own handling applies; that window is not ours.)"""
    process = _process("plan", "--stack", stack, stdout=subprocess.DEVNULL)
    _wait_until_loaded(process.pid, library)
    time.sleep(extra_s)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=120)
    text = err.decode()
    assert process.returncode == EXIT_INTERRUPTED, (stage, text)
    assert text == "interrupted\n", (stage, text)


@pytest.mark.e2e
def test_a_ctrl_c_that_code_swallows_still_ends_the_process() -> None:
    """An interrupt raised inside one of the SDK's asyncio tasks can be swallowed whole, leaving the event loop
    waiting on a future that never resolves (seen about one run in two, Ctrl-C two to three seconds into a dev
    plan): the watchdog the first Ctrl-C arms ends the process anyway, with the same one line."""
    swallower = (
        "import sys, time\n"
        "from trainstack import interrupt\n"
        "interrupt.install()\n"
        "ready = False\n"
        "while True:\n"
        "    try:\n"
        "        if not ready:\n"  # inside the try: the interrupt may land while 'ready' is still being printed
        "            print('ready', flush=True)\n"
        "            ready = True\n"
        "        time.sleep(60)\n"
        "    except KeyboardInterrupt:\n"
        "        pass\n"
    )
    process = subprocess.Popen(
        [sys.executable, "-c", swallower], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert process.stdout is not None and process.stdout.readline() == b"ready\n"
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=30)
    assert process.returncode == EXIT_INTERRUPTED, err
    assert err.decode() == "interrupted\n"

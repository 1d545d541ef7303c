"""`trainstack` (also `python -m trainstack`): the offline plan, the config schema and shell completion.

    trainstack plan [--stack NAME | --config PATH] [--format text|json|markdown] [--output PATH]
                    [--preview] [--against PATH] [--max-chars N] [--no-color] [--tree]
    trainstack schema [--output PATH]
    trainstack preflight|capacity ... (trainstack/preflight/command.py: the account's state, read-only)
    trainstack completion bash|zsh|tcsh
    trainstack --version

Exit codes: `EXIT_CODES` in trainstack/console.py (printed by `--help`, tabled in docs/cli.md). Errors are one
clear line (or the config's list of problems) on stderr, never a traceback (TRAINSTACK_DEBUG=1 adds it for
internal errors), and every text they echo is escaped (stacks/printable.py).

A subcommand is one `add_<name>(commands)` function that adds its parser with `handler=<function>`, listed in
`SUBCOMMANDS`; the function takes the parsed arguments and returns an exit code.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.metadata
import json
import os
import shutil
import sys
import threading
import time
import tomllib
import traceback
from collections.abc import Callable, Generator, Sequence
from pathlib import Path
from typing import NoReturn, TextIO

from typing_extensions import override

from stacks.load import ConfigError, check_stack, load_file, stack_file
from stacks.printable import printable
from stacks.schema import StackConfig, json_schema
from trainstack.console import EXIT_ACCOUNT as EXIT_ACCOUNT  # re-exported beside the codes the plan uses
from trainstack.console import (
    EXIT_BAD_INPUT,
    EXIT_CODES,
    EXIT_CONTRACT,
    EXIT_JOURNEY,
    EXIT_OK,
    EXIT_OUTPUT,
    EXIT_POLICY,
    EXIT_PROGRAM_FAILED,
    say,
    stack_name_of,
)
from trainstack.delivery import BadInput as BadInput  # re-exported: the errors every command raises
from trainstack.delivery import OutputFailed as OutputFailed
from trainstack.delivery import isatty, output_target, write
from trainstack.engine import Recording, run_program
from trainstack.interrupt import EXIT_INTERRUPTED as EXIT_INTERRUPTED  # re-exported beside the other codes
from trainstack.interrupt import interrupted, report_interrupt

FORMATS = ("text", "json", "markdown")
ROOT = Path(__file__).resolve().parent.parent
SHELLS = ("bash", "zsh", "tcsh")


class _Parser(argparse.ArgumentParser):
    @override
    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        raise BadInput(f"{self.prog}: {message}")


def version() -> str:
    """trainstack's version, with the Pulumi SDK and the interpreter it runs on (`trainstack --version`)."""

    def of(package: str) -> str:
        try:
            return importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            return "not installed"

    try:
        own = of("trainstack") if of("trainstack") != "not installed" else _pyproject_version()
    except (OSError, tomllib.TOMLDecodeError, KeyError):
        own = "unknown"
    python = ".".join(map(str, sys.version_info[:3]))
    return f"trainstack {own} (pulumi {of('pulumi')}, pulumi-aws {of('pulumi-aws')}, Python {python})"


def _pyproject_version() -> str:
    """A checkout run without installing the project (`python -m trainstack` from the repository)."""
    return str(tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"])


def _epilog() -> str:
    codes = "\n".join(f"  {code:>3}  {meaning}" for code, meaning in EXIT_CODES)
    return f"exit codes:\n{codes}\n\nEvery option: docs/plan.md; the promises under hostile input: docs/cli.md."


Subcommand = Callable[["argparse._SubParsersAction[_Parser]"], None]


def add_plan(commands: argparse._SubParsersAction[_Parser]) -> None:
    plan_ = commands.add_parser(
        "plan",
        help="run the program under the mock engine and report what it would build",
        description="Run __main__.py under the Pulumi SDK's mock engine (no AWS, no Pulumi CLI) and report "
        "resources, GPUs, fabric, storage, cost and the policy review.",
        epilog=_epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    source = plan_.add_mutually_exclusive_group()
    source.add_argument("--stack", metavar="NAME", help="a stack in stacks/ (Pulumi.NAME.yaml); default dev")
    source.add_argument("--config", metavar="PATH", type=Path, help="any stack file, e.g. a proposed change")
    plan_.add_argument("--format", choices=FORMATS, default="text", help="output format (default text)")
    plan_.add_argument(
        "--output",
        metavar="PATH",
        type=Path,
        help="write the report here instead of stdout (a new file, or a "
        "report trainstack wrote: never a stack or source file)",
    )
    plan_.add_argument("--preview", action="store_true", help="leave computed outputs unknown, as `pulumi preview`")
    plan_.add_argument("--against", metavar="PATH", type=Path, help="diff against this stack file (the baseline)")
    plan_.add_argument(
        "--max-chars",
        metavar="N",
        type=int,
        help="markdown: cut the comment to N characters, sections giving way with a notice (default 65536, "
        "GitHub's comment limit; 0: no cut)",
    )
    plan_.add_argument("--no-color", action="store_true", help="no ANSI colour (also: NO_COLOR set, not a TTY)")
    tree = plan_.add_mutually_exclusive_group()
    tree.add_argument("--tree", action="store_true", help="text format: add the resource tree (off by default)")
    tree.add_argument(
        "--no-tree", action="store_true", help=argparse.SUPPRESS
    )  # the old default's switch, still accepted
    plan_.set_defaults(handler=plan)


def add_schema(commands: argparse._SubParsersAction[_Parser]) -> None:
    schema_ = commands.add_parser(
        "schema",
        help="write the JSON schema of the trainstack:cluster config",
        epilog=_epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    schema_.add_argument(
        "--output",
        metavar="PATH",
        type=Path,
        help="write here instead of stdout (a new file or a schema "
        "trainstack wrote, such as stacks/cluster.schema.json)",
    )
    schema_.set_defaults(handler=schema)


def add_completion(commands: argparse._SubParsersAction[_Parser]) -> None:
    completion_ = commands.add_parser(
        "completion",
        help="print the shell completion script (bash, zsh or tcsh)",
        description="Print a completion script for your shell, generated from this parser (shtab). Bash: "
        "`trainstack completion bash > ~/.local/share/bash-completion/completions/trainstack`; zsh: "
        '`trainstack completion zsh > "${fpath[1]}/_trainstack"`.',
    )
    completion_.add_argument("shell", choices=SHELLS, help="the shell to complete in")
    completion_.set_defaults(handler=completion)


def add_preflight(commands: argparse._SubParsersAction[_Parser]) -> None:
    """`preflight` and `capacity`: the account's state, read-only (trainstack/preflight/)."""
    from trainstack.preflight.command import add_parsers
    from trainstack.preflight.command import run as preflight

    add_parsers(commands)
    for name in ("preflight", "capacity"):
        commands.choices[name].set_defaults(handler=preflight)


SUBCOMMANDS: tuple[Subcommand, ...] = (add_plan, add_schema, add_preflight, add_completion)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="trainstack",
        description="trainstack tooling: the offline plan of a stack, the config schema, shell completion.",
        epilog=_epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=version())
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser, metavar="COMMAND")
    for add in SUBCOMMANDS:
        add(commands)
    return parser


# ------------------------------------------------------------------------------------------------ helpers


def comment_limit(max_chars: int | None, format_: str) -> int:
    """The Markdown comment's cap: `--max-chars`, else GitHub's comment limit; 0 for none."""
    from trainstack.report.markdown import GITHUB_COMMENT_LIMIT, MIN_LIMIT

    if max_chars is None:
        return GITHUB_COMMENT_LIMIT
    if format_ != "markdown":
        raise BadInput(f"--max-chars {max_chars}: applies to --format markdown only (this is --format {format_})")
    if max_chars != 0 and max_chars < MIN_LIMIT:
        raise BadInput(
            f"--max-chars {max_chars}: too small to hold the verdict; use 0 (no cut) or at least {MIN_LIMIT:,}"
            f" (GitHub's limit is {GITHUB_COMMENT_LIMIT:,})"
        )
    return max_chars


def shown_path(path: Path) -> str:
    """A path as the progress line names it: relative to the working directory when it is under it."""
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except (ValueError, OSError):
        return str(path)


def progress_line(frame: str, message: str, seconds: float, columns: int) -> str:
    """One spinner frame no wider than the terminal less one column: a line that wraps cannot be taken back by
    `\\r`, and each frame would leave its first rows behind. A long message loses its middle."""
    tail = f" {seconds:4.1f}s"
    room = max(columns - 1 - len(frame) - 1 - len(tail), 0)
    if len(message) > room:
        keep = max(room - 1, 0)
        message = message[: keep - keep // 2] + "…" + message[len(message) - keep // 2 :] if keep else ""
    return f"{frame} {message}{tail}"[: max(columns - 1, 0)]


def _columns(stream: TextIO) -> int:
    try:
        return os.get_terminal_size(stream.fileno()).columns
    except (OSError, ValueError, AttributeError):
        return shutil.get_terminal_size((80, 24)).columns


@contextlib.contextmanager
def progress(enabled: bool, message: str, stream: TextIO) -> Generator[None, None, None]:
    """A spinner with elapsed seconds on stderr while the program runs (terminals only), one line that fits the
    terminal's width (read at each frame: the window may be resized)."""
    if not enabled:
        yield
        return
    done = threading.Event()
    start = time.monotonic()

    def spin() -> None:
        frames = "|/-\\"
        i = 0
        while not done.wait(0.1):
            line = progress_line(frames[i % 4], message, time.monotonic() - start, _columns(stream))
            stream.write(f"\r{line}\033[K")
            stream.flush()
            i += 1

    thread = threading.Thread(target=spin, daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()
        stream.write("\r\033[K")
        stream.flush()


def run(stack: StackConfig, stack_name: str, preview: bool, show: bool, label: str) -> Recording:
    with progress(show, f"planning {label} under the mock engine", sys.stderr):
        try:
            return run_program(stack, stack_name=stack_name, preview=preview)
        except Exception as error:  # the program's own failure, reported in one line
            text = str(error).strip().splitlines()
            raise ProgramFailed(f"{type(error).__name__}: {text[0] if text else ''}".rstrip(": ")) from error


class ProgramFailed(Exception):
    """__main__.py raised under the mock engine."""


# ------------------------------------------------------------------------------------------------ commands


def plan(args: argparse.Namespace) -> int:
    from trainstack.model.plan import plan as assemble

    path = args.config if args.config is not None else stack_file(args.stack if args.stack is not None else "dev")
    inputs = [("--stack" if args.config is None else "--config", path)]
    if args.against is not None:
        inputs.append(("--against", args.against))
    output = output_target(args.output, inputs) if args.output is not None else None
    limit = comment_limit(args.max_chars, args.format)
    stack = load_file(path)
    baseline_stack = load_file(args.against, option="--against") if args.against is not None else None
    stack_name = stack_name_of(args.against if args.against is not None else path, stack)
    if args.stack is not None and args.against is None:
        stack_name = args.stack
    # The stack's name decides the environment (stacks/load.py): a file cannot talk itself out of prod's floors.
    check_stack(stack_name, stack, str(path))
    if baseline_stack is not None:
        check_stack(stack_name, baseline_stack, str(args.against))

    show = isatty(sys.stderr)
    started = time.perf_counter()
    recording = run(stack, stack_name, args.preview, show, shown_path(path))
    against = None
    if baseline_stack is not None and args.against is not None:
        baseline = run(baseline_stack, stack_name, args.preview, show, shown_path(args.against))
        against = (baseline_stack, baseline, str(args.against))
    planned = assemble(stack, recording, against)
    report, diff, before = planned.report, planned.diff, planned.before

    # Only the asked format's renderer is imported: each costs its own imports (Mermaid, tables, the JSON schema).
    if args.format == "json":
        from trainstack.report import json_report

        rendered = json_report.render(report, planned.baseline, diff, before)
    elif args.format == "markdown":
        from trainstack.report import markdown

        rendered = markdown.render(report, diff, before, limit=limit)
    else:
        from trainstack.report import text

        color = not args.no_color and "NO_COLOR" not in os.environ and output is None and isatty(sys.stdout)
        # The terminal's width (COLUMNS, else the tty's, else 100 for a pipe or a file).
        width = shutil.get_terminal_size((100, 50)).columns if output is None else 100
        rendered = text.render(report, text.Style(color=color), diff, tree=args.tree, width=width, before=before)
    write(rendered, output, sys.stdout)
    if args.format == "text":  # timing stays out of the report itself, which is byte-for-byte reproducible
        say(f"planned in {time.perf_counter() - started:.1f} s")
    if report.contracts:
        say(f"contract check: {len(report.contracts)} input(s) a real deployment would refuse")
        return EXIT_CONTRACT
    if broken := [j for j in report.journeys if not j.holds]:
        say(f"journeys: {len(broken)} broken: a user's path through what the plan builds fails")
        return EXIT_JOURNEY
    if report.policy is not None and not report.policy.passed:
        say(f"policy review: {len(report.policy.mandatory)} mandatory violation(s)")
        return EXIT_POLICY
    return EXIT_OK


def schema(args: argparse.Namespace) -> int:
    output = output_target(args.output, [], kind="schema") if args.output is not None else None
    write(json.dumps(json_schema(), indent=2) + "\n", output, sys.stdout)
    return EXIT_OK


def completion(args: argparse.Namespace) -> int:
    import shtab

    write(shtab.complete(build_parser(), shell=args.shell), None, sys.stdout)
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    """The command line, in-process: returns the exit code instead of exiting."""
    try:
        args = build_parser().parse_args(list(argv) if argv is not None else None)
        code = int(args.handler(args))
    except KeyboardInterrupt:
        return report_interrupt()
    except BaseException as error:  # every failure ends in one line and a documented code
        # An interrupt that the SDK's runtime turned into another exception is still an interrupt.
        return report_interrupt() if interrupted() else failure(error)
    return report_interrupt() if interrupted() else code


def failure(error: BaseException) -> int:
    """The one line (or the config's problems) for a failure, and its exit code."""
    from trainstack.review import PolicyConfigError, PolicyRunError

    if isinstance(error, ConfigError):
        say(error.render())
        return EXIT_BAD_INPUT
    # These messages are one line by contract: whatever a path or a value in them holds is escaped as one.
    if isinstance(error, BadInput | PolicyConfigError):
        say(f"error: {printable(str(error))}")
        return EXIT_BAD_INPUT
    if isinstance(error, OutputFailed):
        say(f"error: {printable(str(error))}")
        return EXIT_OUTPUT
    if isinstance(error, ProgramFailed):
        say(f"error: the program failed under the mock engine: {printable(str(error))}")
        return EXIT_PROGRAM_FAILED
    if isinstance(error, PolicyRunError):
        say(f"error: the policy review failed: {printable(str(error))}")
        return EXIT_PROGRAM_FAILED
    if isinstance(error, SystemExit):  # --help, --version
        return int(error.code or 0) if isinstance(error.code, int | None) else EXIT_BAD_INPUT
    if isinstance(error, MemoryError | RecursionError):
        say(f"error: out of resources: {type(error).__name__}; is the input far larger than a stack file?")
        return EXIT_PROGRAM_FAILED
    # A bug in trainstack itself: one line, not exit 1 (which means "policy violation"); the traceback only when
    # asked for.
    if os.environ.get("TRAINSTACK_DEBUG") == "1":
        traceback.print_exception(error, file=sys.stderr)
    first = (str(error).strip().splitlines() or [""])[0]
    say(f"error: internal error: {type(error).__name__}: {printable(first)}".rstrip(": "))
    if os.environ.get("TRAINSTACK_DEBUG") != "1":
        say("(set TRAINSTACK_DEBUG=1 for the traceback)")
    return EXIT_PROGRAM_FAILED

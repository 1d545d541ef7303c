"""`python -m trainstack`: the offline plan and the config schema.

    python -m trainstack plan [--stack NAME | --config PATH] [--format text|json|markdown] [--output PATH]
                              [--preview] [--against PATH] [--no-color] [--tree]
    python -m trainstack schema [--output PATH]

Exit codes: 0 ok; 1 the policy review found a mandatory violation; 4 the contract check found an input AWS or
Kubernetes would refuse (it wins over 1); 2 bad input (invalid config, bad
arguments, missing stack, unreadable path, unwritable --output); 3 the program itself failed under the mock
engine, the policy review failed, or an internal error. Errors are one clear line (or the config's list of
problems) on stderr, never a traceback (TRAINSTACK_DEBUG=1 adds it for internal errors).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import shutil
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TextIO

from stacks.load import ConfigError, check_stack, environment_of_stack, load_file, stack_file
from stacks.placeholders import find as find_placeholders
from stacks.schema import ClusterConfig, json_schema
from trainstack.engine import Recording, run_program
from trainstack.report.model import Report
from trainstack.review import Violation

EXIT_OK = 0
EXIT_POLICY = 1
EXIT_BAD_INPUT = 2
EXIT_PROGRAM_FAILED = 3
EXIT_CONTRACT = 4
FORMATS = ("text", "json", "markdown")


class BadInput(Exception):
    """A problem with what the user asked for; the message is the one line we print."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        raise BadInput(f"{self.prog}: {message}")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m trainstack", description="trainstack tooling: the offline plan and schema.")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    plan = commands.add_parser(
        "plan",
        help="run the program under the mock engine and report what it would build",
        description="Run __main__.py under the Pulumi SDK's mock engine (no AWS, no Pulumi CLI) and report "
        "resources, GPUs, fabric, storage, cost and the policy review.",
    )
    source = plan.add_mutually_exclusive_group()
    source.add_argument("--stack", metavar="NAME", help="a stack in stacks/ (Pulumi.NAME.yaml); default dev")
    source.add_argument("--config", metavar="PATH", type=Path, help="any stack file, e.g. a proposed change")
    plan.add_argument("--format", choices=FORMATS, default="text", help="output format (default text)")
    plan.add_argument("--output", metavar="PATH", type=Path, help="write the report here instead of stdout")
    plan.add_argument("--preview", action="store_true", help="leave computed outputs unknown, as `pulumi preview`")
    plan.add_argument("--against", metavar="PATH", type=Path, help="diff against this stack file (the baseline)")
    plan.add_argument("--no-color", action="store_true", help="no ANSI colour (also: NO_COLOR set, not a TTY)")
    tree = plan.add_mutually_exclusive_group()
    tree.add_argument("--tree", action="store_true", help="text format: add the resource tree (off by default)")
    tree.add_argument(
        "--no-tree", action="store_true", help=argparse.SUPPRESS
    )  # the old default's switch, still accepted

    schema = commands.add_parser("schema", help="write the JSON schema of the trainstack:cluster config")
    schema.add_argument("--output", metavar="PATH", type=Path, help="write here instead of stdout")
    return parser


# ------------------------------------------------------------------------------------------------ helpers


def check_writable(path: Path, option: str = "--output") -> None:
    """Fail before the (slower) plan when `path` cannot be written, by trying: open for append (nothing is
    truncated), then remove the file again if the probe created it. Permission bits alone (os.access) say yes
    to root even on a read-only mount."""
    if path.is_dir():
        raise BadInput(f"{option} {path}: is a directory")
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise BadInput(f"{option} {path}: directory {parent} does not exist")
    existed = path.exists()
    try:
        with path.open("a", encoding="utf-8"):
            pass
    except OSError as error:
        raise BadInput(f"{option} {path}: not writable: {error.strerror or error}") from None
    if not existed:
        path.unlink(missing_ok=True)


def write(text: str, output: Path | None, stream: TextIO) -> None:
    """The report to `stream`, or atomically to `output`: a temporary file beside it, then os.replace, so a
    reader never sees half a report and a failed write leaves the old file as it was."""
    if output is None:
        stream.write(text)
        stream.flush()
        return
    temporary: Path | None = None
    try:
        with tempfile.NamedTemporaryFile(
            "w",
            encoding="utf-8",
            dir=output.parent if str(output.parent) else ".",
            prefix=f".{output.name}.",
            suffix=".tmp",
            delete=False,
        ) as handle:
            temporary = Path(handle.name)
            handle.write(text)
        if output.exists():
            shutil.copymode(output, temporary)
        else:
            temporary.chmod(0o666 & ~_umask())
        os.replace(temporary, output)
    except OSError as error:
        if temporary is not None:
            temporary.unlink(missing_ok=True)
        raise BadInput(f"--output {output}: cannot write: {error.strerror or error}") from None


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def stack_name_of(path: Path, cluster: ClusterConfig) -> str:
    """The stack a file belongs to: NAME of Pulumi.NAME.yaml, else the config's environment (a proposed change
    in a file of another name; the plan then reviews it as that environment's stack)."""
    name = path.name
    if name.startswith("Pulumi.") and name.endswith((".yaml", ".yml")):
        stack = name.removeprefix("Pulumi.").rsplit(".", 1)[0]
        # A stack name that maps to an environment is a real stack and decides it (check_stack); another name
        # (Pulumi.proposed.yaml) is a proposal, reviewed as its environment's stack. `pulumi up` on a stack of
        # such a name is still refused by the program itself.
        if environment_of_stack(stack) is not None:
            return stack
    return cluster.environment.value


@contextlib.contextmanager
def progress(enabled: bool, message: str, stream: TextIO) -> Iterator[None]:
    """A spinner with elapsed seconds on stderr while the program runs (terminals only)."""
    if not enabled:
        yield
        return
    done = threading.Event()
    start = time.monotonic()

    def spin() -> None:
        frames = "|/-\\"
        i = 0
        while not done.wait(0.1):
            stream.write(f"\r{frames[i % 4]} {message} {time.monotonic() - start:4.1f}s")
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


def run(cluster: ClusterConfig, stack: str, preview: bool, show: bool, label: str) -> Recording:
    with progress(show, f"planning {label} under the mock engine", sys.stderr):
        try:
            return run_program(cluster, stack=stack, preview=preview)
        except Exception as error:  # the program's own failure, reported in one line
            text = str(error).strip().splitlines()
            raise ProgramFailed(f"{type(error).__name__}: {text[0] if text else ''}".rstrip(": ")) from error


class ProgramFailed(Exception):
    """__main__.py raised under the mock engine."""


def with_violations(report: Report, extra: tuple[Violation, ...]) -> Report:
    """The report with violations the pack cannot see (the diff's, the example values) added to its review."""
    if report.policy is None or not extra:
        return report
    return dataclasses.replace(
        report, policy=dataclasses.replace(report.policy, violations=report.policy.violations + extra)
    )


PLACEHOLDER_POLICY = "deploy-example-value"


def placeholder_advisories(cluster: ClusterConfig) -> tuple[Violation, ...]:
    """One advisory per example value: fine offline, refused by `pulumi up` (components/deploy_guard.py)."""
    return tuple(
        Violation(
            policy=PLACEHOLDER_POLICY,
            level="advisory",
            severity="high",
            urn="",
            type="",
            name=p.path,
            message=f"{p.render()} (`pulumi up` refuses example values)",
        )
        for p in find_placeholders(cluster)
    )


# ------------------------------------------------------------------------------------------------ commands


def plan(args: argparse.Namespace) -> int:
    from trainstack.diff import ResourceChange, apply_ignore_changes, diff_reports, diff_violations
    from trainstack.report import json_report, markdown, text
    from trainstack.report.model import build_report
    from trainstack.review import review

    if args.output is not None:
        check_writable(args.output)
    path = args.config if args.config is not None else stack_file(args.stack or "dev")
    cluster = load_file(path)
    baseline_cluster = load_file(args.against, option="--against") if args.against is not None else None
    stack = stack_name_of(args.against if args.against is not None else path, cluster)
    if args.stack and args.against is None:
        stack = args.stack
    # The stack's name decides the environment (stacks/load.py): a file cannot talk itself out of prod's floors.
    check_stack(stack, cluster, str(path))
    if baseline_cluster is not None:
        check_stack(stack, baseline_cluster, str(args.against))

    show = sys.stderr.isatty()
    started = time.perf_counter()
    recording = run(cluster, stack, args.preview, show, str(path))
    diff = None
    baseline = None
    before = None
    ignored: tuple[ResourceChange, ...] = ()
    if baseline_cluster is not None:  # the proposed config as `pulumi up` would apply it over the baseline
        baseline = run(baseline_cluster, stack, args.preview, show, str(args.against))
        recording, ignored = apply_ignore_changes(baseline, recording)
    report = with_violations(
        build_report(cluster, recording, review(recording, cluster.environment.value, waivers=cluster.waivers)),
        placeholder_advisories(cluster),
    )
    if baseline_cluster is not None and baseline is not None:
        before = build_report(baseline_cluster, baseline)
        diff = diff_reports(before, report, str(args.against), ignored)
        report = with_violations(report, diff_violations(diff))

    if args.format == "json":
        rendered = json_report.render(report, baseline, diff, before)
    elif args.format == "markdown":
        rendered = markdown.render(report, diff, before)
    else:
        color = not args.no_color and "NO_COLOR" not in os.environ and args.output is None and sys.stdout.isatty()
        # The terminal's width (COLUMNS, else the tty's, else 100 for a pipe or a file).
        width = shutil.get_terminal_size((100, 50)).columns if args.output is None else 100
        rendered = text.render(report, text.Style(color=color), diff, tree=args.tree, width=width, before=before)
    write(rendered, args.output, sys.stdout)
    if args.format == "text":  # timing stays out of the report itself, which is byte-for-byte reproducible
        print(f"planned in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    if report.contracts:
        print(f"contract check: {len(report.contracts)} input(s) a real deployment would refuse", file=sys.stderr)
        return EXIT_CONTRACT
    if report.policy is not None and not report.policy.passed:
        print(f"policy review: {len(report.policy.mandatory)} mandatory violation(s)", file=sys.stderr)
        return EXIT_POLICY
    return EXIT_OK


def schema(args: argparse.Namespace) -> int:
    if args.output is not None:
        check_writable(args.output)
    write(json.dumps(json_schema(), indent=2) + "\n", args.output, sys.stdout)
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    """The command line, in-process: returns the exit code instead of exiting."""
    try:
        args = build_parser().parse_args(list(argv) if argv is not None else None)
        return plan(args) if args.command == "plan" else schema(args)
    except ConfigError as error:
        print(error.render(), file=sys.stderr)
        return EXIT_BAD_INPUT
    except BadInput as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except ProgramFailed as error:
        print(f"error: the program failed under the mock engine: {error}", file=sys.stderr)
        return EXIT_PROGRAM_FAILED
    except Exception as error:  # the policy pack's config or run errors, named by type
        from trainstack.review import PolicyConfigError, PolicyRunError

        if isinstance(error, PolicyConfigError):
            print(f"error: {error}", file=sys.stderr)
            return EXIT_BAD_INPUT
        if isinstance(error, PolicyRunError):
            print(f"error: the policy review failed: {error}", file=sys.stderr)
            return EXIT_PROGRAM_FAILED
        # A bug in trainstack itself: one line, not exit 1 (which means "policy violation"); the traceback
        # only when asked for.
        if os.environ.get("TRAINSTACK_DEBUG") == "1":
            traceback.print_exc(file=sys.stderr)
        first = (str(error).strip().splitlines() or [""])[0]
        print(f"error: internal error: {type(error).__name__}: {first}".rstrip(": "), file=sys.stderr)
        if os.environ.get("TRAINSTACK_DEBUG") != "1":
            print("(set TRAINSTACK_DEBUG=1 for the traceback)", file=sys.stderr)
        return EXIT_PROGRAM_FAILED
    except SystemExit as exit_:  # --help
        return int(exit_.code or 0) if isinstance(exit_.code, int | None) else EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130

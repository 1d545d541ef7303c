"""`python -m trainstack preflight` and `python -m trainstack capacity`: their arguments and what they run.

    python -m trainstack preflight [--stack NAME | --config PATH] [--format text|json|markdown] [--output PATH]
    python -m trainstack capacity --group NAME [--stack NAME | --config PATH] [--count N] [--days D] [--weeks W]
                                  [--format text|json|markdown] [--output PATH]

Exit codes (docs/cli.md), as the plan's where they mean the same: 0 every check passed (warnings allowed); 1 a
check failed (`pulumi up` would fail on the account's state); 2 bad input; 3 internal error; 5 the report could not
be delivered; 7 AWS could not be asked: no credentials or refused ones (one line, no report), or a check could not be
asked (access denied, throttled past the retries, the service unreachable or not in the region: the report marks it
`error`); 130 interrupted. boto3 is imported only when one of them runs, so the plan's start-up pays nothing for it.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

EXIT_FAILED = 1  # a check failed: what the plan's 1 means for a policy, `pulumi up` would fail (docs/cli.md)
EXIT_CODES = (
    "exit codes: 0 every check passed (warnings allowed); 1 a check failed; 2 bad input; 3 internal error; "
    "5 the report could not be delivered; 7 AWS could not be asked (no or refused credentials, or a check denied, "
    "throttled past the retries, unreachable or not in the region); 130 interrupted (docs/cli.md)"
)
READ_ONLY_NOTE = (
    "Read-only: only Describe, Get and List calls (trainstack/preflight/aws.py READ_ONLY), refused in code before "
    "any other call leaves the process; nothing is created, changed, bought or deleted."
)
FORMATS = ("text", "json", "markdown")


def _source(parser: argparse.ArgumentParser) -> None:
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--stack", metavar="NAME", help="a stack in stacks/ (Pulumi.NAME.yaml); default dev")
    source.add_argument("--config", metavar="PATH", type=Path, help="any stack file")
    parser.add_argument("--format", choices=FORMATS, default="text", help="output format (default text)")
    parser.add_argument("--output", metavar="PATH", type=Path, help="write the report here instead of stdout")


def add_parsers(commands: Any) -> None:
    """Add both commands to `python -m trainstack`'s subparsers (argparse's private action type)."""
    preflight = commands.add_parser(
        "preflight",
        help="check the AWS account's state against a stack before `pulumi up` (read-only)",
        description="Ask the AWS account (the caller's credentials, standard chain; the stack's region) whether "
        "`pulumi up` of the stack would succeed: the caller and every principal, the secrets key, an existing "
        "VPC's subnets, instance offerings, vCPU quotas, reservations and Capacity Blocks, the EKS version, add-on "
        "builds and AMI releases, HyperPod's training plan. " + READ_ONLY_NOTE,
        epilog=EXIT_CODES,
    )
    _source(preflight)
    capacity = commands.add_parser(
        "capacity",
        help="where and when a GPU group's type and count can be had (read-only; never buys)",
        description="For one GPU group: the AZs that offer its type, the Capacity Block offerings (dates, price) "
        "for its count, and the reservations the account already holds that fit, each with the stack-file edit "
        "that would use it. " + READ_ONLY_NOTE,
        epilog=EXIT_CODES,
    )
    _source(capacity)
    capacity.add_argument("--group", metavar="NAME", required=True, help="the gpu_node_groups entry to place")
    capacity.add_argument("--count", metavar="N", type=int, help="instances (default: the group's max_size)")
    capacity.add_argument("--days", metavar="D", type=int, default=7, help="Capacity Block length in days (1-182)")
    capacity.add_argument(
        "--weeks", metavar="W", type=int, default=8, help="search Capacity Blocks starting within W weeks (default 8)"
    )


def run(args: argparse.Namespace) -> int:
    """Run `preflight` or `capacity`; trainstack.cli's failure() handles bad input and output errors."""
    import sys

    from stacks.load import check_stack, load_file, stack_file
    from trainstack.console import EXIT_ACCOUNT, EXIT_OK, say, stack_name_of
    from trainstack.delivery import output_target, write
    from trainstack.preflight.aws import Account, CannotAsk

    path = args.config if args.config is not None else stack_file(args.stack if args.stack is not None else "dev")
    output = (
        output_target(args.output, [("--stack" if args.config is None else "--config", path)]) if args.output else None
    )
    stack = load_file(path)
    stack_name = args.stack if args.stack is not None else stack_name_of(path, stack)
    check_stack(stack_name, stack, str(path))
    account = Account(stack.region)
    try:
        if args.command == "capacity":
            from trainstack.preflight import capacity

            found = capacity.search(stack, stack_name, account, args.group, args.count, args.days, args.weeks)
            write(capacity.render(found, args.format), output, sys.stdout)
            return EXIT_OK
        from trainstack.preflight import render, runner
        from trainstack.preflight.model import Status
        from trainstack.report.fmt import Style

        result = runner.run(stack, stack_name, account, stack_file=path)
    except CannotAsk as error:
        say(f"error: AWS could not be asked: {error}")
        return EXIT_ACCOUNT
    rendered = (
        render.as_json(result)
        if args.format == "json"
        else render.markdown(result)
        if args.format == "markdown"
        else render.text(result, Style(color=_color(args, output is not None)))
    )
    write(rendered, output, sys.stdout)
    say(f"preflight {render.summary(result)}")
    if result.verdict is Status.FAILED:
        return EXIT_FAILED
    return EXIT_ACCOUNT if result.verdict is Status.ERROR else EXIT_OK


def _color(args: argparse.Namespace, to_file: bool) -> bool:
    import os
    import sys

    return not to_file and "NO_COLOR" not in os.environ and args.format == "text" and sys.stdout.isatty()

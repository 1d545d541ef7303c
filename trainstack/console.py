"""What every command of `python -m trainstack` shares, beneath the command line itself (cli.py) and the commands
it hands to (preflight/command.py): the exit codes, a line on stderr, and which stack a file is."""

from __future__ import annotations

import sys
from pathlib import Path

from stacks.load import STACK_NAME, environment_of_stack
from stacks.printable import printable
from stacks.schema import StackConfig
from trainstack.delivery import BadInput
from trainstack.interrupt import EXIT_INTERRUPTED, interrupted

EXIT_OK = 0
EXIT_POLICY = 1
EXIT_BAD_INPUT = 2
EXIT_PROGRAM_FAILED = 3
EXIT_CONTRACT = 4
EXIT_OUTPUT = 5
EXIT_JOURNEY = 6
EXIT_ACCOUNT = 7  # preflight, capacity: AWS could not be asked (trainstack/preflight/command.py)
# Every exit code, for `--help` and docs/cli.md (tests/unit/test_cli_help.py keeps the two equal).
EXIT_CODES: tuple[tuple[int, str], ...] = (
    (EXIT_OK, "planned: no mandatory policy violation, no contract violation, no broken journey"),
    (EXIT_POLICY, "a mandatory policy violation (the review's, or the diff's with --against)"),
    (EXIT_BAD_INPUT, "bad input: the stack file (every problem listed), arguments, --stack, --output"),
    (EXIT_PROGRAM_FAILED, "the program or a policy raised under the mock engine, or an internal error"),
    (EXIT_CONTRACT, "an input AWS or Kubernetes would refuse (wins over 6 and 1)"),
    (EXIT_OUTPUT, "the output could not be delivered (stdout closed, disk full, an encoding that cannot show it)"),
    (EXIT_JOURNEY, "a journey is broken: a user's path through what the plan builds fails (wins over 1)"),
    (EXIT_ACCOUNT, "preflight, capacity: AWS could not be asked (no or refused credentials, a check denied)"),
    (EXIT_INTERRUPTED, "interrupted (Ctrl-C)"),
)


def say(text: str) -> None:
    """Lines on stderr, each escaped (a message that echoes a key or a path cannot send terminal escapes); when
    stderr itself is gone, the exit code still tells. After Ctrl-C the only line is "interrupted"."""
    if interrupted():
        return
    try:
        if sys.stderr is not None:
            print("\n".join(printable(line) for line in text.split("\n")), file=sys.stderr, flush=True)
    except (OSError, ValueError):
        pass


def stack_name_of(path: Path, stack: StackConfig) -> str:
    """The stack a file belongs to: NAME of Pulumi.NAME.yaml, else the config's environment (a proposed change
    in a file of another name; the plan then reviews it as that environment's stack)."""
    name = path.name
    if name.startswith("Pulumi.") and name.endswith((".yaml", ".yml")):
        stack_name = name.removeprefix("Pulumi.").rsplit(".", 1)[0]
        if not STACK_NAME.fullmatch(stack_name):
            raise BadInput(
                f"{path}: {stack_name!r} is not a Pulumi stack name (letters, digits, `-`, `_` and `.`, 1 to 100 "
                "characters), so Pulumi could never use this file; rename it"
            )
        # A stack name that maps to an environment is a real stack and decides it (check_stack); another name
        # (Pulumi.proposed.yaml) is a proposal, reviewed as its environment's stack. `pulumi up` on a stack of
        # such a name is still refused by the program itself.
        if environment_of_stack(stack_name) is not None:
            return stack_name
    return stack.environment.value

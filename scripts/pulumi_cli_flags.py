"""The Pulumi CLI's commands and flags that the README and CI use, read from pulumi/pulumi's source at a tag:
tests/e2e/fixtures/pulumi_cli_flags.json, which the `pulumi` stub of the day-one dry run refuses anything
outside of (tests/e2e/stubs/pulumi.py).

    python scripts/pulumi_cli_flags.py /path/to/pulumi/pulumi-git-checkout v3.259.0

Each file's cobra flag registrations (`Flags().XxxVarP(&v, "name", "s", ...)`) give the long names, the
shorthands and whether a flag takes a value; the root command's persistent flags (pkg/cmd/pulumi/pulumi.go)
apply to every command.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

FILES = {
    "": "pkg/cmd/pulumi/pulumi.go",
    "login": "pkg/cmd/pulumi/auth/login.go",
    "preview": "pkg/cmd/pulumi/operations/preview.go",
    "up": "pkg/cmd/pulumi/operations/up.go",
    "stack": "pkg/cmd/pulumi/stack/stack.go",
    "stack init": "pkg/cmd/pulumi/stack/stack_new.go",
    "stack output": "pkg/cmd/pulumi/stack/stack_output.go",
    "stack select": "pkg/cmd/pulumi/stack/stack_select.go",
    "version": "pkg/cmd/pulumi/version/version.go",
}
FLAG = re.compile(r'Flags\(\)\.(\w+)\(\s*(?:&[\w.\[\]]+,\s*)?"([a-z][a-z0-9-]*)"(?:,\s*"([a-z]?)")?')
NOT_A_DEFINITION = {"MarkHidden", "MarkDeprecated", "Lookup", "SetAnnotation", "MarkFlagsMutuallyExclusive"}
OUT = Path(__file__).resolve().parent.parent / "tests" / "e2e" / "fixtures" / "pulumi_cli_flags.json"


def flags(checkout: Path, tag: str, path: str) -> dict[str, dict[str, str | bool]]:
    """Each flag's shorthand ("" for none) and whether it is a boolean (takes no value)."""
    source = subprocess.run(
        ["git", "-C", str(checkout), "show", f"{tag}:{path}"], capture_output=True, text=True, check=True
    ).stdout
    return {
        m.group(2): {"short": m.group(3) or "", "boolean": m.group(1).startswith("Bool")}
        for m in FLAG.finditer(source)
        if m.group(1) not in NOT_A_DEFINITION
    }


def main(argv: list[str]) -> int:
    checkout, tag = Path(argv[0]), argv[1]
    document = {
        "source": f"pulumi/pulumi {tag}: " + ", ".join(sorted(set(FILES.values()))),
        "commands": {command: flags(checkout, tag, path) for command, path in FILES.items()},
    }
    OUT.write_text(json.dumps(document, indent=2, sort_keys=True) + "\n")
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

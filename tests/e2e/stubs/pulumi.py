"""A stand-in for the `pulumi` CLI in the day-one dry run: it deploys nothing, and refuses what the real CLI
refuses before any cloud call.

- commands and flags: only those of the CLI at the pinned release (tests/e2e/fixtures/pulumi_cli_flags.json, read
  from pulumi/pulumi's source by scripts/pulumi_cli_flags.py): an unknown flag is "unknown flag: --x" (cobra);
- state: `login` first (or PULUMI_BACKEND_URL, which the CLI reads as the backend), a stack must be
  `stack init`-ed (or exist in the backend) before `preview`, `up` or `stack output` name it ("no stack named");
- the project: Pulumi.yaml in the working directory; its uv toolchain finds `uv` on PATH, as pulumi's
  sdk/python/toolchain/uv.go does (LookPath "uv": "Could not find `uv` executable"), and runs the same
  `uv sync --inexact` into `.venv` before the program; the stack's config file must exist in `stackConfigDir`;
- `--policy-pack DIR` needs DIR/PulumiPolicy.yaml, `--policy-pack-config FILE` a JSON object in FILE, one per pack;
- `up` without `--yes` needs a terminal (the CLI's non-interactive refusal), which the dry run's person is
  (PULUMI_STUB_TERMINAL=1);
- `stack output NAME` works only after an `up` of that stack.

State lives in PULUMI_STUB_STATE (a JSON file). Every call is appended to PULUMI_STUB_LOG, one JSON line each.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

FLAGS = json.loads((Path(__file__).resolve().parent.parent / "fixtures" / "pulumi_cli_flags.json").read_text())
COMMANDS = FLAGS["commands"]
STACK_NAME = re.compile(r"[A-Za-z0-9_.-]{1,100}")  # pkg/backend stackNameAndProjectRegexp (project-less form)
BACKENDS = ("s3://", "file://", "https://", "azblob://", "gs://")
SECRETS_PROVIDERS = ("default", "passphrase", "awskms://", "azurekeyvault://", "gcpkms://", "hashivault://")


class Refused(Exception):
    pass


def parse(argv: list[str]) -> tuple[str, list[str], dict[str, list[str]]]:
    """(command, positional arguments, flags) as cobra parses them, refusing unknown commands and flags."""
    words: list[str] = []
    flags: dict[str, list[str]] = {}
    i = 0
    command = ""
    known_commands = set(COMMANDS)
    while i < len(argv):
        word = argv[i]
        if word.startswith("-"):
            name, _, inline = word.lstrip("-").partition("=")
            inherited = COMMANDS["stack"] if command.startswith("stack ") else {}
            allowed = {**COMMANDS[""], **inherited, **COMMANDS.get(command, {})}
            by_short = {flag["short"]: long for long, flag in allowed.items() if flag["short"]}
            if not word.startswith("--"):
                name = by_short.get(name, "")
            if name not in allowed:
                raise Refused(f"unknown flag: {word}")
            if inline or allowed[name]["boolean"]:
                flags.setdefault(name, []).append(inline or "true")
            else:
                if i + 1 >= len(argv):
                    raise Refused(f"flag needs an argument: {word}")
                flags.setdefault(name, []).append(argv[i + 1])
                i += 1
        elif not words and f"{command} {word}".strip() in known_commands and not (command and " " in command):
            command = f"{command} {word}".strip()
        else:
            words.append(word)
        i += 1
    if command in ("", "stack"):
        raise Refused(f'unknown command "{" ".join(argv[:1])}" for "pulumi"')
    return command, words, flags


def load_state(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text()) if path.exists() else {"backend": None, "stacks": {}}


def project(cwd: Path) -> dict[str, Any]:
    manifest = cwd / "Pulumi.yaml"
    if not manifest.is_file():
        raise Refused(f"no Pulumi.yaml project file found (searching upwards from {cwd})")
    text = manifest.read_text()
    config_dir = re.search(r"^stackConfigDir:\s*(\S+)", text, re.MULTILINE)
    return {
        "uv": re.search(r"toolchain:\s*uv", text) is not None,
        "config_dir": cwd / (config_dir.group(1) if config_dir else "."),
        "virtualenv": cwd / ".venv",
    }


def backend(state: dict[str, Any]) -> str:
    url = state.get("backend") or os.environ.get("PULUMI_BACKEND_URL")
    if not url:
        raise Refused("no credentials: run `pulumi login` (or set PULUMI_BACKEND_URL)")
    return str(url)


def stack_of(flags: dict[str, list[str]], state: dict[str, Any]) -> str:
    names = flags.get("stack", [])
    name = names[-1] if names else state.get("selected")
    if not name:
        raise Refused("no stack selected; please use `pulumi stack select`")
    if name not in state["stacks"]:
        raise Refused(f"no stack named '{name}' found")
    return str(name)


def run_program_toolchain(info: dict[str, Any]) -> None:
    """What the uv toolchain does before the program runs: `uv` by name on PATH, then `uv sync --inexact` into the
    project's virtualenv (pulumi sdk/python/toolchain/uv.go Command)."""
    if not info["uv"]:
        return
    uv = shutil.which("uv")
    if uv is None:
        raise Refused("Could not find `uv` executable.\nInstall uv and make sure it is in your PATH.")
    env = {**os.environ, "UV_PROJECT_ENVIRONMENT": str(info["virtualenv"])}
    done = subprocess.run([uv, "sync", "--inexact", "--quiet"], env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise Refused(f"error creating virtual environment: {done.stderr.strip()}")


def operation(command: str, flags: dict[str, list[str]], state: dict[str, Any], cwd: Path) -> str:
    backend(state)
    stack = stack_of(flags, state)
    info = project(cwd)
    config = info["config_dir"] / f"Pulumi.{stack}.yaml"
    if not config.is_file() or "trainstack:cluster" not in config.read_text():
        raise Refused(f"Missing required configuration variable 'trainstack:cluster' (stack config {config})")
    packs, configs = flags.get("policy-pack", []), flags.get("policy-pack-config", [])
    if configs and len(configs) != len(packs):
        raise Refused("the number of --policy-pack-config must match the number of --policy-pack")
    for pack in packs:
        if not (cwd / pack / "PulumiPolicy.yaml").is_file():
            raise Refused(f"failed to load Pulumi policy project located at {pack!r}")
    for file in configs:
        try:
            document = json.loads((cwd / file).read_text())
        except (OSError, ValueError) as error:
            raise Refused(f"loading policy pack config {file}: {error}") from None
        if not isinstance(document, dict):
            raise Refused(f"policy pack config {file} is not a JSON object")
    interactive = os.environ.get("PULUMI_STUB_TERMINAL") == "1" and "non-interactive" not in flags
    if command == "up" and "yes" not in flags and "skip-preview" not in flags and not interactive:
        raise Refused("--yes or --skip-preview must be passed in to proceed when running in non-interactive mode")
    run_program_toolchain(info)
    if command == "up":
        name = re.search(r"^\s*name:\s*(\S+)", config.read_text(), re.MULTILINE)
        state["stacks"][stack]["outputs"] = {"cluster_name": name.group(1) if name else stack}
    return f"{command} of stack {stack}: nothing deployed (stub)"


def main(argv: list[str]) -> int:
    state_path = Path(os.environ["PULUMI_STUB_STATE"])
    state = load_state(state_path)
    cwd = Path.cwd()
    with open(os.environ["PULUMI_STUB_LOG"], "a", encoding="utf-8") as log:
        log.write(json.dumps({"argv": argv, "cwd": str(cwd)}) + "\n")
    try:
        command, words, flags = parse(argv)
        if "cwd" in flags:
            cwd = cwd / flags["cwd"][-1]
        if command == "version":
            print("v3.272.0")
        elif command == "login":
            url = words[0] if words else "https://api.pulumi.com"
            if not url.startswith(BACKENDS):
                raise Refused(f"unsupported backend URL {url!r}")
            state["backend"] = url
        elif command == "stack init":
            backend(state)
            project(cwd)
            name = (words or flags.get("stack", [""]))[0] if (words or flags.get("stack")) else ""
            if not STACK_NAME.fullmatch(name):
                raise Refused(f"invalid stack name {name!r}")
            if name in state["stacks"]:
                raise Refused(f"stack '{name}' already exists")
            provider = flags.get("secrets-provider", ["default"])[-1]
            if not provider.startswith(SECRETS_PROVIDERS):
                raise Refused(f"unknown secrets provider {provider!r}")
            state["stacks"][name] = {"secrets_provider": provider, "outputs": {}}
            state["selected"] = name
        elif command == "stack select":
            backend(state)
            state["selected"] = stack_of({"stack": words[:1]} if words else flags, state)
        elif command == "stack output":
            backend(state)
            stack = stack_of(flags, state)
            outputs = state["stacks"][stack]["outputs"]
            if words and words[0] not in outputs:
                raise Refused(f"current stack does not have output property '{words[0]}'")
            print(outputs[words[0]] if words else json.dumps(outputs))
        elif command in ("preview", "up"):
            print(operation(command, flags, state, cwd))
        else:
            raise Refused(f'unknown command "{command}" for "pulumi"')
    except Refused as error:
        print(f"error: {error}", file=sys.stderr)
        return 255
    state_path.write_text(json.dumps(state))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

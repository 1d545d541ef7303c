"""The `trainstack` command: its version, the exit codes in `--help` (the same table as docs/cli.md), shell
completion, and the uv it ships in .venv (the Makefile's bootstrap version)."""

from __future__ import annotations

import re
import subprocess
import tomllib

import pytest

from tests.conftest import ROOT
from trainstack import cli


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_version_names_trainstack_the_sdk_and_python(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--version")
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert code == cli.EXIT_OK
    assert re.fullmatch(
        rf"trainstack {re.escape(version)} \(pulumi [0-9.]+, pulumi-aws [0-9.]+, Python 3\.1[1-3]\.\d+\)\n", out
    )


@pytest.mark.parametrize("argv", [["--help"], ["plan", "--help"], ["schema", "--help"]])
def test_help_lists_every_exit_code(capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    code, out, _ = run(capsys, *argv)
    assert code == cli.EXIT_OK
    listed = {int(m.group(1)) for m in re.finditer(r"^\s+(\d+)  \S", out, re.MULTILINE)}
    assert listed == {code for code, _ in cli.EXIT_CODES}


def test_docs_list_the_same_exit_codes() -> None:
    table = (ROOT / "docs" / "cli.md").read_text()
    documented = {int(m.group(1)) for m in re.finditer(r"^\| `(\d+)` \|", table, re.MULTILINE)}
    assert documented == {code for code, _ in cli.EXIT_CODES}
    readme = (ROOT / "README.md").read_text()
    assert all(f"`{code}`" in readme for code, _ in cli.EXIT_CODES if code not in (3, 5, 6, 7, 130))


@pytest.mark.parametrize("shell", cli.SHELLS)
def test_completion_scripts_cover_every_command_and_option(capsys: pytest.CaptureFixture[str], shell: str) -> None:
    code, out, _ = run(capsys, "completion", shell)
    assert code == cli.EXIT_OK
    options = ("--stack", "--config", "--against", "--format", "--output") if shell != "tcsh" else ()  # shtab: tcsh
    for word in ("plan", "schema", "completion", *options):  # completes commands and their positional choices
        assert word in out, (shell, word)


def test_a_new_subcommand_is_one_registration() -> None:
    """Every subcommand the parser knows comes from SUBCOMMANDS, each setting its handler."""
    parser = cli.build_parser()
    commands = next(a for a in parser._actions if a.dest == "command")
    assert sorted(commands.choices) == ["capacity", "completion", "plan", "preflight", "schema"]  # type: ignore[union-attr]
    for name, sub in commands.choices.items():  # type: ignore[union-attr]
        assert callable(sub.get_default("handler")), name


@pytest.mark.e2e
def test_the_bash_completion_script_parses() -> None:
    script = subprocess.run(
        [str(ROOT / ".venv" / "bin" / "trainstack"), "completion", "bash"], capture_output=True, text=True, check=True
    ).stdout
    assert subprocess.run(["bash", "-n"], input=script, text=True, check=False).returncode == 0


def test_the_uv_in_the_virtualenv_is_the_makefiles() -> None:
    """uv is a dev dependency so `source .venv/bin/activate` puts it on PATH for Pulumi's uv toolchain; it must
    be the version the Makefile bootstraps .venv with."""
    makefile = re.search(r"^UV_VERSION := (\S+)$", (ROOT / "Makefile").read_text(), re.MULTILINE)
    pins = tomllib.loads((ROOT / "pyproject.toml").read_text())["dependency-groups"]["dev"]
    assert makefile and f"uv=={makefile.group(1)}" in pins


def test_python_versions_agree() -> None:
    """pyproject's range, the Makefile's check and the CI matrix name the same three minors."""
    requires = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    assert requires == ">=3.11,<3.14"
    makefile = (ROOT / "Makefile").read_text()
    assert "(3, 11) <= sys.version_info[:2] <= (3, 13)" in makefile
    workflow = (ROOT / ".github" / "workflows" / "plan.yml").read_text()
    assert 'python: ["3.12", "3.13"]' in workflow and 'python-version: "3.11"' in workflow

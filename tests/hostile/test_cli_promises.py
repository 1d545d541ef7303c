"""The fuzz run's defects (issue 35), one test each: every one of them failed on main before its fix.

- a denormal `per_gpu_read_mb_s` printed `Infinity` in `--format json` with exit 0;
- `--output` replaced other stack files, `__main__.py` and (as root) read-only files; `schema --output` guarded
  nothing;
- a control character or NUL in a stack file was an internal error (exit 3);
- names, labels, tags and role ARNs passed with a trailing newline, a tab or characters IAM refuses; duplicate
  admin ARNs were an internal error;
- key paths were echoed raw, so a stack file could print terminal escapes and forge lines;
- under a C locale an encoding failure said "stdout is closed";
- two GPU groups could end with one physical node group name.
"""

from __future__ import annotations

import io
import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.naming import physical_name
from stacks.load import FULL_KEY, ConfigError, load_file
from tests.conftest import ROOT, stack_document
from tests.hostile.test_value_rules import refused, setting
from trainstack import cli
from trainstack.cli import EXIT_BAD_INPUT, EXIT_OK, EXIT_OUTPUT, main

DEV = ROOT / "stacks" / "Pulumi.dev.yaml"

pytestmark = pytest.mark.usefixtures("shared_recordings")  # tests/conftest.py: plans come from the session cache


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture
def no_plan(monkeypatch: pytest.MonkeyPatch) -> None:
    def must_not_run(*args: object, **kwargs: object) -> None:
        raise AssertionError("the plan ran although the input was refused")

    monkeypatch.setattr(cli, "run", must_not_run)


def write_dev(directory: Path, edit: Any = None, text_edit: Any = None, name: str = "Pulumi.dev.yaml") -> Path:
    document = stack_document("dev")
    if edit is not None:
        edit(document["config"][FULL_KEY])
    text = yaml.safe_dump(document, sort_keys=False)
    if text_edit is not None:
        text = text_edit(text)
    path = directory / name
    path.write_text(text)
    return path


# ------------------------------------------------------------------------------------------------ numbers


@pytest.mark.parametrize("value", [5e-324, 1e-300, 1e-9])
def test_a_vanishing_read_rate_is_refused_before_it_becomes_infinity(value: float) -> None:
    """main planned it and `--format json` printed `"coverage": Infinity` (not JSON) with exit 0."""
    found = refused(setting("storage.fsx.per_gpu_read_mb_s", value), base="dev")
    assert any("per_gpu_read_mb_s" in p and "greater than or equal to 1" in p for p in found), found


def test_the_json_report_never_holds_a_non_finite_number() -> None:
    from trainstack.report import json_report

    with pytest.raises(ValueError, match="Out of range float values are not JSON compliant"):
        json_report.dumps({"coverage": float("inf")})


# ------------------------------------------------------------------------------------------------ --output


@pytest.mark.parametrize("command", ["plan", "schema"])
@pytest.mark.parametrize(
    "victim", ["stacks/Pulumi.prod.yaml", "__main__.py", "pyproject.toml", "stacks/examples/existing-vpc.yaml"]
)
def test_output_never_replaces_a_project_file(
    capsys: pytest.CaptureFixture[str], no_plan: None, command: str, victim: str
) -> None:
    """`plan --stack dev --output stacks/Pulumi.prod.yaml` replaced prod's stack file on main, and `schema
    --output __main__.py` the program."""
    target = ROOT / victim
    before = target.read_bytes()
    argv = ["plan", "--stack", "dev"] if command == "plan" else ["schema"]
    try:
        code, out, err = run_cli(capsys, *argv, "--output", str(target))
        assert code == EXIT_BAD_INPUT, err
        assert "--output" in err and "only replaces a report trainstack wrote" in err
        assert target.read_bytes() == before and out == ""
    finally:  # a regression must not leave the checkout broken (main replaced these files)
        if target.read_bytes() != before:
            target.write_bytes(before)


def test_output_never_replaces_another_stack_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], no_plan: None
) -> None:
    other = write_dev(tmp_path, name="Pulumi.dev-other.yaml")
    before = other.read_bytes()
    code, _, err = run_cli(capsys, "plan", "--stack", "dev", "--output", str(other))
    assert code == EXIT_BAD_INPUT and "only replaces a report trainstack wrote" in err
    assert other.read_bytes() == before


def test_schema_output_replaces_its_own_schema(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`make schema` writes stacks/cluster.schema.json again and again; a report file is replaced too."""
    target = tmp_path / "cluster.schema.json"
    assert run_cli(capsys, "schema", "--output", str(target))[0] == EXIT_OK
    assert run_cli(capsys, "schema", "--output", str(target))[0] == EXIT_OK
    assert json.loads(target.read_text())["title"]


def test_a_read_only_output_is_refused_even_for_root(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], no_plan: None
) -> None:
    """As root `os.access` says every file is writable: main replaced a file its owner had made read-only."""
    target = tmp_path / "plan.json"
    target.write_text('{"steps": [], "changeSummary": {}, "trainstack": {"formatVersion": 1}}')
    target.chmod(0o444)
    code, _, err = run_cli(capsys, "plan", "--stack", "dev", "--output", str(target))
    assert code == EXIT_BAD_INPUT and "is read-only" in err
    assert stat.S_IMODE(target.stat().st_mode) == 0o444


# ------------------------------------------------------------------------------------------------ reading


@pytest.mark.parametrize("char", ["\x00", "\x07", "\x1b", "\x7f", "\x9b", "\ufffe"])
def test_a_control_character_is_bad_input_with_its_line(tmp_path: Path, char: str) -> None:
    """main built the YAML reader outside its `try`: the character was an internal error (exit 3)."""
    path = write_dev(tmp_path, text_edit=lambda text: text.replace("region: us-east-1", f"region: us-east-1{char}"))
    with pytest.raises(ConfigError) as caught:
        load_file(path)
    [problem] = caught.value.problems
    assert problem.key == "<yaml>" and "line" in str(problem) and "control character" in problem.message


def test_a_control_character_exits_2_from_the_cli(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], no_plan: None
) -> None:
    path = write_dev(tmp_path, text_edit=lambda text: "\x00" + text)
    code, _, err = run_cli(capsys, "plan", "--config", str(path))
    assert code == EXIT_BAD_INPUT and "internal error" not in err


# ------------------------------------------------------------------------------------------------ value grammars


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ("gpu_node_groups.0.labels", {"team\n": "x"}),
        ("gpu_node_groups.0.labels", {"team": "research\n"}),
        ("gpu_node_groups.0.labels", {"example.com\n/team": "x"}),
        ("tags.extra", {"team\n": "x"}),
        ("tags.extra", {"team": "a\tb"}),
        ("tags.extra", {"team": "line\nbreak"}),
        ("tags.owner", "ops\n"),
        ("eks.admin_role_arns", ["arn:aws:iam::111122223333:role/admin\n"]),
        ("eks.admin_role_arns", ["arn:aws:iam::111122223333:role/ad min"]),
        ("eks.admin_role_arns", ["arn:aws:iam::111122223333:role/admin#1"]),
        ("eks.admin_role_arns", ["arn:aws:iam::111122223333:role/" + "a" * 65]),
        ("name", "trainstack-dev\n"),
        ("gpu_node_groups.0.name", "g5\n"),
    ],
)
def test_values_the_services_refuse_are_refused(path: str, value: Any) -> None:
    """Each passed on main: `^...$` with `re.match` lets a trailing newline through, and `\\s` lets in tabs and
    line breaks that AWS tag rules do not allow."""
    found = refused(setting(path, value), base="dev")
    assert found and all(p.startswith(FULL_KEY) for p in found), found


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ("eks.admin_role_arns", ["arn:aws:iam::111122223333:role/team/ml+admin=1,a.b@c-d_e"]),
        ("tags.extra", {"team": "a b.c:d/e=f+g-h@i_j"}),
        ("gpu_node_groups.0.labels", {"example.com/team": "a.b_c-d"}),
    ],
)
def test_values_the_services_accept_still_pass(path: str, value: Any) -> None:
    from tests.conftest import edited_config

    edited_config("dev", setting(path, value))


def test_duplicate_admin_arns_are_bad_input_naming_the_key() -> None:
    """main reached the EKS component with them and failed there: an internal error (exit 3)."""
    arn = "arn:aws:iam::111122223333:role/ml-platform-admin"
    found = refused(setting("eks.admin_role_arns", [arn, arn]), base="dev")
    assert any("eks.admin_role_arns" in p and "more than once" in p for p in found), found


@pytest.mark.parametrize("name", ["dev\n", "dev\t", "dev\x00"])
def test_a_stack_name_with_a_trailing_control_character_is_refused(
    capsys: pytest.CaptureFixture[str], no_plan: None, name: str
) -> None:
    code, _, err = run_cli(capsys, "plan", "--stack", name)
    assert code == EXIT_BAD_INPUT and "not a Pulumi stack name" in err


# ------------------------------------------------------------------------------------------------ echoes


def test_a_key_cannot_print_terminal_escapes_or_forge_lines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], no_plan: None
) -> None:
    """An unknown key `\\x1b[2J...\\nerror: ...` cleared the screen and printed a line of its own on main."""
    evil = "\x1b[2J\x1b[31mx\nerror: everything is fine\r\u202e"

    def edit(cluster: dict[str, Any]) -> None:
        cluster[evil] = 1

    path = write_dev(tmp_path, edit)
    code, _, err = run_cli(capsys, "plan", "--config", str(path))
    assert code == EXIT_BAD_INPUT
    assert "\x1b" not in err and "\r" not in err and "\u202e" not in err
    assert not any(line.startswith("error: everything") for line in err.splitlines())
    assert "\\x1b[2J" in err


def test_a_path_cannot_print_terminal_escapes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], no_plan: None
) -> None:
    code, _, err = run_cli(capsys, "plan", "--config", str(tmp_path / "a\x1b[2J\nerror: fine.yaml"))
    assert code == EXIT_BAD_INPUT and "\x1b" not in err and len(err.strip().splitlines()) == 2, err


# ------------------------------------------------------------------------------------------------ streams


@pytest.mark.slow
def test_an_encoding_failure_under_a_c_locale_says_so(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under LANG=C stdout is ASCII with errors=surrogateescape: main skipped its encoding check for a
    non-strict stream, the write raised UnicodeEncodeError (a ValueError) and the message said stdout was closed."""
    stream = io.TextIOWrapper(io.BytesIO(), encoding="ascii", errors="surrogateescape")
    monkeypatch.setattr(sys, "stdout", stream)
    code = main(["plan", "--stack", "dev"])
    err = capsys.readouterr().err
    assert code == EXIT_OUTPUT, err
    assert "encoding ascii cannot show the report" in err and "closed" not in err


@pytest.mark.e2e
def test_a_real_c_locale_gets_the_encoding_message() -> None:
    env = {**os.environ, "LANG": "C", "LC_ALL": "C", "PYTHONCOERCECLOCALE": "0", "PYTHONUTF8": "0"}
    env.pop("PYTHONIOENCODING", None)
    done = subprocess.run(
        [sys.executable, "-m", "trainstack", "plan", "--stack", "dev"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        timeout=300,
        check=False,
    )
    err = done.stderr.decode("ascii", "replace")
    assert done.returncode == EXIT_OUTPUT, err
    assert "cannot show the report" in err and "closed" not in err and done.stdout == b""


# ------------------------------------------------------------------------------------------------ names


def test_a_group_named_like_another_groups_cut_name_gets_a_name_of_its_own() -> None:
    """A group named after the cut-and-hashed form of another group's name took that very name on main."""
    base = "a" * 32
    long_group = "b" * 32
    taken = physical_name(base, long_group)
    squatter = taken.removeprefix(base + "-")  # 21 b's, a dash, 8 hex digits: a valid group name
    assert physical_name(base, squatter) != taken
    folded = physical_name(base, "c--d")  # folded names carry a hash too
    assert physical_name(base, folded.removeprefix(base + "-")) != folded


def _resource(type_: str, logical: str, **inputs: Any) -> Any:
    from trainstack.engine import RecordedResource

    urn = f"urn:pulumi:dev::trainstack::{type_}::{logical}"
    return RecordedResource(type_, logical, urn, "", True, inputs, (), {}, False, False, "")


def test_the_plan_refuses_two_resources_of_one_type_with_one_physical_name() -> None:
    """Whatever made them (a cut, a fold, a future component), two node groups of one cluster, two launch
    templates or two Kubernetes objects of one kind, namespace and name never pass the contract tier."""
    from trainstack.contracts.aws_rules import unique_physical_names
    from trainstack.engine import Recording

    group = "aws:eks/nodeGroup:NodeGroup"
    template = "aws:ec2/launchTemplate:LaunchTemplate"
    queue = "kubernetes:kueue.x-k8s.io/v1beta1:LocalQueue"
    resources = [
        _resource(group, "a-ng", nodeGroupName="x", clusterName="c"),
        _resource(group, "b-ng", nodeGroupName="x", clusterName="c"),
        _resource(group, "c-ng", nodeGroupName="x", clusterName="other"),  # another cluster: fine
        _resource(template, "a-lt", name="t"),
        _resource(template, "b-lt", name="t"),
        _resource(queue, "q1", metadata={"name": "q", "namespace": "research"}),
        _resource(queue, "q2", metadata={"name": "q", "namespace": "vision"}),  # another namespace: fine
        _resource(queue, "q3", metadata={"name": "q", "namespace": "research"}),
        _resource("aws:iam/rolePolicy:RolePolicy", "p1", name="inline", role="r1"),
        _resource("aws:iam/rolePolicy:RolePolicy", "p2", name="inline", role="r2"),  # another role: fine
    ]
    found = list(unique_physical_names(Recording("dev", False, tuple(resources), {})))
    assert sorted(v.name for v in found) == ["b-lt", "b-ng", "q3"]
    by_name = {v.name: (v.path, v.value) for v in found}  # the duplicated name itself, at the input that sets it
    assert by_name == {"b-ng": ("nodeGroupName", "x"), "b-lt": ("name", "t"), "q3": ("metadata.name", "q")}
    assert all("already takes this name" in v.rule for v in found)

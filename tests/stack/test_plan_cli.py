"""The plan command end to end: `trainstack.cli.main(argv)` in-process, and once as `python -m trainstack`."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from stacks.catalog import CATALOG
from stacks.load import FULL_KEY
from stacks.schema import json_schema
from tests.conftest import ROOT, stack_document
from trainstack.cli import EXIT_BAD_INPUT, EXIT_OK, main


def write_stack(
    tmp_path: Path, edit: Callable[[dict[str, Any]], None], base: str = "dev", name: str = "Pulumi.proposed.yaml"
) -> Path:
    document = copy.deepcopy(stack_document(base))
    edit(document)
    path = tmp_path / name
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


def cluster(document: dict[str, Any]) -> dict[str, Any]:
    return document["config"][FULL_KEY]


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# ------------------------------------------------------------------------------------------------ the report


def test_dev_text_report_has_every_section(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "plan", "--stack", "dev", "--no-color")
    assert code == EXIT_OK, err
    for heading in ("Settings", "Compute", "Storage", "Cost (estimate", "Policy review", "Resources (", "Next step"):
        assert f"\n{heading}" in out, heading
    assert "trainstack plan: stack dev" in out
    assert "g5.2xlarge" in out and "pulumi up --stack dev" in out
    assert "\033[" not in out  # no colour when asked for none (and not a terminal)


def test_output_file_gets_the_report_and_stdout_stays_empty(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "plan.md"
    code, out, err = run_cli(capsys, "plan", "--stack", "dev", "--format", "markdown", "--output", str(target))
    assert code == EXIT_OK, err
    assert out == ""
    assert target.read_text().startswith("## trainstack plan: `dev`")


def test_preview_mode_is_reported(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "plan", "--stack", "dev", "--preview", "--format", "json")
    assert code == EXIT_OK
    document = json.loads(out)
    assert document["trainstack"]["summary"]["preview"] is True
    assert "unknown" in document["trainstack"]["summary"]["mode"]


def test_python_dash_m_trainstack_plan_runs_end_to_end() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "trainstack", "plan", "--stack", "dev"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "Compute" in result.stdout and "Cost (estimate" in result.stdout
    assert "Traceback" not in result.stderr


def test_committed_config_schema_is_up_to_date(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "schema")
    assert code == EXIT_OK
    committed = (ROOT / "stacks" / "cluster.schema.json").read_text()
    assert json.loads(out) == json_schema()
    assert out == committed, "stacks/cluster.schema.json is stale: run `make schema`"


# ----------------------------------------------------------------------------------------------- the diff


def add_p5_group(document: dict[str, Any]) -> None:
    cluster(document)["gpu_node_groups"].append(
        {
            "name": "p5-extra",
            "instance_type": "p5.48xlarge",
            "availability_zone": "us-east-1a",
            "capacity": {"type": "on_demand"},
            "min_size": 0,
            "desired_size": 16,
            "max_size": 16,
        }
    )


def test_diff_of_one_more_gpu_group_shows_exactly_its_resources_and_cost(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    proposed = write_stack(tmp_path, add_p5_group, base="prod")
    baseline = ROOT / "stacks" / "Pulumi.prod.yaml"
    code, out, err = run_cli(capsys, "plan", "--config", str(proposed), "--against", str(baseline), "--format", "json")
    assert code in (0, 1), err
    document = json.loads(out)
    diff = document["trainstack"]["diff"]
    added = {a["urn"] for a in diff["added"]}
    new_urns = {s["urn"] for s in document["steps"] if "p5-extra" in s["urn"]}
    assert added == new_urns and added
    added_types = {a["type"] for a in diff["added"]}
    assert {"aws:eks/nodeGroup:NodeGroup", "aws:ec2/launchTemplate:LaunchTemplate"} <= added_types
    assert diff["removed"] == []
    assert all("p5-extra" not in c["urn"] for c in diff["changed"])
    assert diff["gpusDesired"]["change"] == 16 * 8 and diff["gpusMax"]["change"] == 16 * 8
    assert diff["fabricGbpsDesired"]["change"] == 16 * 3200
    new_group = next(g for g in document["trainstack"]["summary"]["nodeGroups"] if "p5-extra" in g["urn"])
    hours = document["trainstack"]["cost"]["hoursPerMonth"]
    expected = 16 * CATALOG["p5.48xlarge"].on_demand_usd_per_hour + 16 * new_group["rootVolumeGib"] * 0.08 / hours
    assert diff["usdPerHourDesired"]["change"] == pytest.approx(expected, abs=0.01)
    ops = {s["urn"]: s["op"] for s in document["steps"]}
    assert all(ops[urn] == "create" for urn in added)
    assert {op for urn, op in ops.items() if urn not in added} <= {"same", "update"}


def test_text_diff_names_added_resources_and_the_cost_move(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    proposed = write_stack(tmp_path, add_p5_group, base="prod")
    code, out, err = run_cli(
        capsys,
        "plan",
        "--config",
        str(proposed),
        "--against",
        str(ROOT / "stacks" / "Pulumi.prod.yaml"),
        "--no-tree",
        "--no-color",
    )
    assert code in (0, 1), err
    assert "Diff against" in out and "0 to remove" in out
    assert "+ urn:pulumi:prod::trainstack::" in out and "p5-extra" in out
    assert "Cost at desired" in out and "+$" in out


# ------------------------------------------------------------------------------------------- bad input


def one_line_error(err: str) -> None:
    assert "Traceback" not in err
    assert err.strip(), "an error message is expected"


def test_missing_stack(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(capsys, "plan", "--stack", "qa")
    assert code == EXIT_BAD_INPUT
    one_line_error(err)
    assert "--stack" in err and "valid: dev, prod, staging" in err


def test_bad_path(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(capsys, "plan", "--config", str(tmp_path / "missing.yaml"))
    assert code == EXIT_BAD_INPUT
    one_line_error(err)
    assert "file not found" in err


def test_bad_against_path(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(capsys, "plan", "--stack", "dev", "--against", str(tmp_path / "nope.yaml"))
    assert code == EXIT_BAD_INPUT
    assert "file not found" in err


@pytest.mark.parametrize("where", ["missing-dir", "is-a-directory"])
def test_unwritable_output(where: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "no" / "such" / "dir" / "plan.txt" if where == "missing-dir" else tmp_path
    code, out, err = run_cli(capsys, "plan", "--stack", "dev", "--output", str(target))
    assert code == EXIT_BAD_INPUT
    assert out == ""
    assert len(err.strip().splitlines()) == 1 and err.startswith("error: --output")


def test_bad_arguments_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "--format", "xml"]) == EXIT_BAD_INPUT
    assert main(["plan", "--stack", "dev", "--config", "x.yaml"]) == EXIT_BAD_INPUT
    assert main(["deploy"]) == EXIT_BAD_INPUT
    assert "Traceback" not in capsys.readouterr().err


def test_yaml_syntax_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "Pulumi.broken.yaml"
    path.write_text("config:\n  trainstack:cluster:\n    environment: dev\n   region: [us-east-1\n")
    code, _, err = run_cli(capsys, "plan", "--config", str(path))
    assert code == EXIT_BAD_INPUT
    assert "YAML syntax error at line" in err


BAD_EDITS: dict[str, tuple[Callable[[dict[str, Any]], None], str]] = {
    "unknown key": (
        lambda d: cluster(d)["network"].update({"vpc_cidr_block": "10.0.0.0/16"}),
        "trainstack:cluster.network.vpc_cidr_block",
    ),
    "wrong type": (
        lambda d: cluster(d)["gpu_node_groups"][0].update({"max_size": "lots"}),
        "trainstack:cluster.gpu_node_groups.0.max_size",
    ),
    "min above max": (
        lambda d: cluster(d)["gpu_node_groups"][0].update({"min_size": 3, "desired_size": 3, "max_size": 2}),
        "trainstack:cluster.gpu_node_groups.0",
    ),
    "unknown instance type": (
        lambda d: cluster(d)["gpu_node_groups"][0].update({"instance_type": "p9.huge"}),
        "trainstack:cluster.gpu_node_groups.0.instance_type",
    ),
    "wrong namespace": (
        lambda d: d["config"].update({"trainstak:cluster": d["config"].pop(FULL_KEY)}),
        "trainstak:cluster",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_EDITS))
def test_invalid_config_exits_2_naming_the_key(case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    edit, key = BAD_EDITS[case]
    path = write_stack(tmp_path, edit)
    code, out, err = run_cli(capsys, "plan", "--config", str(path))
    assert code == EXIT_BAD_INPUT
    assert out == ""
    one_line_error(err)
    assert err.startswith(f"invalid stack config {path}")
    assert key in err, err
    if case == "unknown instance type":
        assert "p9.huge" in err and "p5.48xlarge" in err  # the value given and what is valid
    if case == "min above max":
        assert "min_size <= desired_size <= max_size" in err


def test_colour_only_when_the_style_asks_and_progress_clears_its_line() -> None:
    import io

    from tests.conftest import recording, stack_config
    from trainstack.cli import progress
    from trainstack.report import text
    from trainstack.report.model import build_report

    report = build_report(stack_config("dev"), recording("dev"))
    assert "\033[1;36mCompute" in text.render(report, text.Style(color=True))
    assert "\033[" not in text.render(report, text.Style(color=False))
    stream = io.StringIO()
    with progress(True, "planning", stream):
        import time

        time.sleep(0.25)
    assert "planning" in stream.getvalue() and stream.getvalue().endswith("\r\033[K")
    quiet = io.StringIO()
    with progress(False, "planning", quiet):
        pass
    assert quiet.getvalue() == ""

"""The plan command end to end: `trainstack.cli.main(argv)` in-process (the program's recordings come from the
session's shared cache), and once as a pair of `python -m trainstack` processes."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from stacks.catalog import CATALOG
from stacks.load import FULL_KEY
from stacks.schema import json_schema
from tests.conftest import ROOT, fresh_plan, recording, stack_config, write_stack
from trainstack import cli
from trainstack.cli import EXIT_BAD_INPUT, EXIT_OK, EXIT_POLICY, EXIT_PROGRAM_FAILED, main
from trainstack.engine import run_program
from trainstack.model import cost as cost_model
from trainstack.model.plan import plan
from trainstack.model.report import build_report
from trainstack.report import json_report, markdown, text
from trainstack.review import PolicyConfigError, load_config, review

pytestmark = pytest.mark.usefixtures("shared_recordings")  # tests/conftest.py


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# ------------------------------------------------------------------------------------------------ the report


def test_dev_text_report_has_every_section(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "plan", "--stack", "dev", "--no-color")
    assert code == EXIT_OK, err
    for heading in ("Verdict: ", "Risks", "Time to ready", "Compute", "Storage", "Cost (estimate", "Policy review"):
        assert f"\n{heading}" in out, heading
    assert "\nResources (" not in out  # the tree only with --tree
    _, with_tree, _ = run_cli(capsys, "plan", "--stack", "dev", "--no-color", "--tree")
    assert "\nResources (" in with_tree
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


@pytest.mark.e2e
def test_a_fresh_interpreter_plans_prod_byte_for_byte_like_this_one() -> None:
    """The one end-to-end test: `python -m trainstack` in a new interpreter (its own hash seed, its own thread
    pool order) prints the same JSON, which carries every recorded resource, input and dependency the other
    formats render, as this process renders from its own run."""
    result = fresh_plan("prod")  # shared with tests/stack/test_startup.py
    assert result.returncode == EXIT_OK, result.stderr
    assert "Traceback" not in result.stderr
    here = recording("prod")
    expected = json_report.render(plan(stack_config("prod"), here).report)
    assert result.stdout == expected


@pytest.mark.e2e
def test_a_fresh_run_records_and_renders_the_same_bytes() -> None:
    """In-process runs register in a different order each time too (the SDK's thread pool); the recording,
    dependencies included, and every rendered format do not change, and the reports carry no timing."""
    config = stack_config("prod")
    fresh = run_program(config, stack_name="prod")
    assert repr(fresh) == repr(recording("prod"))
    reports = [build_report(config, rec, review(rec, "prod")) for rec in (fresh, recording("prod"))]
    for render in (
        json_report.render,
        markdown.render,
        lambda report: text.render(report, text.Style(color=False)),
    ):
        first, second = (render(report) for report in reports)
        assert first == second
        assert "elapsed" not in first and "ran in" not in first


def test_committed_config_schema_is_up_to_date(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "schema")
    assert code == EXIT_OK
    committed = (ROOT / "stacks" / "cluster.schema.json").read_text()
    assert json.loads(out) == json_schema()
    assert out == committed, "stacks/cluster.schema.json is stale: run `make schema`"


# ----------------------------------------------------------------------------------------------- the diff


def add_p5_group(cluster: dict[str, Any]) -> None:
    cluster["gpu_node_groups"].append(
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


@pytest.mark.e2e
def test_diff_of_one_more_gpu_group_shows_exactly_its_resources_and_cost(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    proposed = write_stack(tmp_path, "prod", add_p5_group)
    baseline = ROOT / "stacks" / "Pulumi.prod.yaml"
    code, out, err = run_cli(capsys, "plan", "--config", str(proposed), "--against", str(baseline), "--format", "json")
    # 128 more GPUs read from the same Lustre: below prod's storage floor, so the plan is refused (issue 13)
    assert code == cli.EXIT_POLICY, err
    document = json.loads(out)
    diff = document["trainstack"]["diff"]
    added = {a["urn"] for a in diff["added"]}
    # The first group that can grow brings the cluster-autoscaler (docs/capacity.md) with it.
    new_urns = {s["urn"] for s in document["steps"] if "p5-extra" in s["urn"] or "cluster-autoscaler" in s["urn"]}
    assert added == new_urns and added
    added_types = {a["type"] for a in diff["added"]}
    assert {"aws:eks/nodeGroup:NodeGroup", "aws:ec2/launchTemplate:LaunchTemplate"} <= added_types
    assert diff["removed"] == []
    assert diff["changed"] == []  # a new group touches nothing that exists
    assert diff["acceleratorsDesired"]["change"] == 16 * 8 and diff["acceleratorsMax"]["change"] == 16 * 8
    assert diff["fabricGbpsDesired"]["change"] == 16 * 3200
    new_group = next(g for g in document["trainstack"]["summary"]["nodeGroups"] if "p5-extra" in g["urn"])
    hours = document["trainstack"]["cost"]["hoursPerMonth"]
    expected = 16 * CATALOG["p5.48xlarge"].on_demand_usd_per_hour + 16 * new_group["rootVolumeGib"] * 0.08 / hours
    # prod scrapes metrics: the new nodes' series are collected and ingested too (trainstack/model/cost.py).
    series = 16 * (cost_model.SERIES_PER_NODE + 8 * cost_model.SERIES_PER_GPU + 32 * cost_model.SERIES_PER_EFA_DEVICE)
    expected += series * 3600 / 30 * (cost_model.AMP_COLLECTED.usd + cost_model.AMP_INGESTION.usd)
    assert diff["usdPerHourDesired"]["change"] == pytest.approx(expected, abs=0.01)
    ops = {s["urn"]: s["op"] for s in document["steps"]}
    assert all(ops[urn] == "create" for urn in added)
    assert {urn for urn, op in ops.items() if op != "same"} == added


@pytest.mark.e2e
def test_text_diff_names_added_resources_and_the_cost_move(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    proposed = write_stack(tmp_path, "prod", add_p5_group)
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
    assert code == cli.EXIT_POLICY, err  # the storage floor refuses it; the diff still prints
    assert out.startswith("trainstack diff: stack prod against ") and "to add; applies in about" in out
    assert "+ GpuNodeGroup p5-extra: placement group, launch template" in out
    assert "urn:pulumi:" not in out  # short names only
    assert "cost at desired" in out and "+$" in out


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
    assert "--against" in err and "--config" not in err  # the flag the user actually passed


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs procfs")
def test_unwritable_output_fails_before_the_plan_even_for_root(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """/proc's permission bits allow root to write (os.access says yes), but no file can be created there."""

    def must_not_run(*args: object, **kwargs: object) -> None:
        raise AssertionError("the plan ran before --output was checked")

    monkeypatch.setattr(cli, "run", must_not_run)
    code, out, err = run_cli(capsys, "plan", "--stack", "dev", "--output", "/proc/trainstack-plan.md")
    assert code == EXIT_BAD_INPUT, err
    assert out == "" and err.startswith("error: --output /proc/trainstack-plan.md: not writable")


def test_the_output_probe_leaves_files_as_they_were(tmp_path: Path) -> None:
    new, existing = tmp_path / "new.md", tmp_path / "old.md"
    existing.write_text("## trainstack plan: `dev` (an earlier report)")
    cli.output_target(new, [])
    cli.output_target(existing, [])
    assert not new.exists() and existing.read_text() == "## trainstack plan: `dev` (an earlier report)"


def test_output_is_written_atomically(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "plan.md"
    target.write_text("previous report")
    target.chmod(0o640)
    cli.write("new report", target, sys.stdout)
    assert target.read_text() == "new report" and (target.stat().st_mode & 0o777) == 0o640

    def fail(*args: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(cli.os, "replace", fail)
    with pytest.raises(cli.OutputFailed, match="No space left on device"):
        cli.write("half a report", target, sys.stdout)
    assert target.read_text() == "new report"  # the old file is untouched
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plan.md"]  # and no temporary file is left


def test_an_internal_error_exits_3_in_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise KeyError("nodeGroups")

    monkeypatch.setattr(cli, "load_file", broken)
    monkeypatch.delenv("TRAINSTACK_DEBUG", raising=False)
    code, out, err = run_cli(capsys, "plan", "--stack", "dev")
    assert code == EXIT_PROGRAM_FAILED  # not 1, which means "a mandatory policy violation"
    assert out == "" and "Traceback" not in err
    assert err.splitlines()[0] == "error: internal error: KeyError: 'nodeGroups'"
    monkeypatch.setenv("TRAINSTACK_DEBUG", "1")
    code, _, err = run_cli(capsys, "plan", "--stack", "dev")
    assert code == EXIT_PROGRAM_FAILED and "Traceback" in err and "KeyError" in err


def test_an_unreadable_policy_config_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(PolicyConfigError, match="cannot read"):
        load_config("dev", tmp_path)  # a directory
    latin1 = tmp_path / "dev.json"
    latin1.write_bytes('{"all": "advisory", "note": "été"}'.encode("latin-1"))
    with pytest.raises(PolicyConfigError, match="cannot read"):
        load_config("dev", latin1)


@pytest.mark.e2e
def test_a_protected_replacement_is_flagged_in_every_format(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Turning on EFA for prod's FSx file system replaces it (efaEnabled is set at creation only)."""
    proposed = write_stack(
        tmp_path, "prod", lambda c: c["storage"]["fsx"].update(efa_enabled=True, storage_capacity_gib=134400)
    )
    baseline = str(ROOT / "stacks" / "Pulumi.prod.yaml")
    code, out, err = run_cli(capsys, "plan", "--config", str(proposed), "--against", baseline, "--format", "json")
    assert code == EXIT_POLICY, err  # `pulumi up` refuses it: a mandatory violation, not only a line
    document = json.loads(out)
    assert [v["policy"] for v in document["trainstack"]["policy"]["violations"] if v["level"] == "mandatory"] == [
        "protected-resource-replace"
    ]
    fs_urn = next(s["urn"] for s in document["steps"] if s["type"] == "aws:fsx/lustreFileSystem:LustreFileSystem")
    step = next(s for s in document["steps"] if s["urn"] == fs_urn)
    assert step["op"] == "replace" and "efaEnabled" in step["replaceReasons"]
    assert document["trainstack"]["diff"]["protectedReplacements"] == [fs_urn]
    assert {s["op"] for s in document["steps"] if s["urn"] != fs_urn} <= {"create", "same", "update"}
    code, out, _ = run_cli(capsys, "plan", "--config", str(proposed), "--against", baseline, "--no-tree", "--no-color")
    assert "Verdict: REFUSED (1 refused" in out and "replaces protected lustre-fs" in out and "1 to replace" in out
    assert "  +- lustre file system lustre-fs [PROTECTED]" in out  # first in the diff block
    assert "provider's own diff is not run" in out
    code, out, _ = run_cli(capsys, "plan", "--config", str(proposed), "--against", baseline, "--format", "markdown")
    assert "[!CAUTION]" in out and "Replaces protected `lustre-fs`" in out


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


Edit = Callable[[dict[str, Any]], None]
# Each case: how to break dev's stack file (write_stack's edits: of the cluster object, or of the whole file)
# and the key path the error must name.
BAD_EDITS: dict[str, tuple[dict[str, Edit], str]] = {
    "unknown key": (
        {"edit": lambda c: c["network"].update({"vpc_cidr_block": "10.0.0.0/16"})},
        "trainstack:cluster.network.vpc_cidr_block",
    ),
    "wrong type": (
        {"edit": lambda c: c["gpu_node_groups"][0].update({"max_size": "lots"})},
        "trainstack:cluster.gpu_node_groups.0.max_size",
    ),
    "min above max": (
        {"edit": lambda c: c["gpu_node_groups"][0].update({"min_size": 3, "desired_size": 3, "max_size": 2})},
        "trainstack:cluster.gpu_node_groups.0",
    ),
    "unknown instance type": (
        {"edit": lambda c: c["gpu_node_groups"][0].update({"instance_type": "p9.huge"})},
        "trainstack:cluster.gpu_node_groups.0.instance_type",
    ),
    "wrong namespace": (
        {"edit_document": lambda d: d["config"].update({"trainstak:cluster": d["config"].pop(FULL_KEY)})},
        "trainstak:cluster",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_EDITS))
def test_invalid_config_exits_2_naming_the_key(case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    edits, key = BAD_EDITS[case]
    path = write_stack(tmp_path, "dev", **edits)
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
    from trainstack.model.report import build_report
    from trainstack.report import text

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


@pytest.mark.e2e
def test_a_mandatory_violation_exits_1_and_says_how_many(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    def over_budget(cluster: dict[str, Any]) -> None:
        cluster["cost"]["max_gpus"] = 512
        cluster["gpu_node_groups"][0]["max_size"] = 40

    proposed = write_stack(tmp_path, "prod", over_budget)
    code, out, err = run_cli(capsys, "plan", "--config", str(proposed), "--format", "json")
    assert code == cli.EXIT_POLICY
    mandatory = json.loads(out)["trainstack"]["policy"]["mandatory"]
    assert mandatory >= 1
    assert err.strip().splitlines()[-1] == f"policy review: {mandatory} mandatory violation(s)"

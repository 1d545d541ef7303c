"""`--format markdown` as a pull-request comment: never over GitHub's 65,536-character limit (or the cap given),
long tables folded under <details>, and whatever is cut named in a notice that says how to see all of it."""

from __future__ import annotations

import dataclasses
import re
import subprocess
from pathlib import Path

import pytest

from tests.conftest import ROOT, stack_config
from tests.report.helpers import added_group_diff, report, with_cloned_gpu_groups
from trainstack.model.report import build_report
from trainstack.report import markdown

NOTICE = re.compile(
    r"^> ✂️ \*\*Cut: (?:\d+ of \d+ lines of )?(?P<what>[a-z ,]+)\*\*, to fit the comment's ([\d,]+)-char", re.M
)


def cut_sections(comment: str) -> list[str]:
    """The sections the notices name, in the order they appear."""
    names = [n for m in NOTICE.finditer(comment) for n in re.split(r", | and ", m["what"])]
    return [n.removeprefix("the ") for n in names]


def well_formed(comment: str) -> None:
    lines = comment.splitlines()
    assert sum(line.startswith("```") for line in lines) % 2 == 0  # every fence closed
    assert comment.count("<details>") == comment.count("</details>")


@pytest.fixture(scope="module")
def huge() -> markdown.Report:
    """prod with 400 more GPU groups: about 1,300 resources, a comment far over GitHub's limit."""
    return build_report(stack_config("prod"), with_cloned_gpu_groups(report("prod").recording, 400, aws_names=True))


def test_a_stack_over_the_limit_is_cut_to_it_with_a_notice(huge: markdown.Report) -> None:
    whole = markdown.render(huge, limit=0)
    assert markdown.size(whole) > markdown.GITHUB_COMMENT_LIMIT  # the test stack really is too big
    comment = markdown.render(huge)
    assert markdown.size(comment) <= markdown.GITHUB_COMMENT_LIMIT
    assert cut_sections(comment) == ["resource list"]  # the resource list gave way, nothing else had to
    assert "`--format markdown --max-chars 0`" in comment and "`--format json`" in comment
    assert "Verdict: " in comment and "### Architecture" in comment
    well_formed(comment)


@pytest.mark.parametrize("limit", [2_000, 5_000, 9_000, 16_000, 21_845])
@pytest.mark.e2e
def test_any_cap_holds_and_every_cut_is_named(limit: int) -> None:
    after, diff, before = added_group_diff()
    whole = markdown.render(after, diff, before, limit=0)
    comment = markdown.render(after, diff, before, limit=limit)
    assert markdown.size(comment) <= limit < markdown.size(whole)
    cut = cut_sections(comment)
    assert cut and all(name in (*markdown.GIVE_WAY, "rest of the plan") for name in cut)
    assert comment.startswith(whole.splitlines()[0])  # the title and the verdict come first, always
    if limit >= 5_000:
        assert "Verdict: " in comment
    well_formed(comment)


@pytest.mark.e2e
def test_sections_give_way_in_order() -> None:
    after, diff, before = added_group_diff()
    for limit in (5_000, 9_000, 16_000):
        cut = cut_sections(markdown.render(after, diff, before, limit=limit))
        assert "resource list" in cut  # always the first to go
        assert "risks" not in cut and "contract violations" not in cut


@pytest.mark.e2e
def test_the_notice_names_the_cap_given() -> None:
    after, diff, before = added_group_diff()
    comment = markdown.render(after, diff, before, limit=9_000)
    assert {m.group(2) for m in NOTICE.finditer(comment)} == {"9,000"}


def test_a_comment_under_the_limit_is_not_cut() -> None:
    r = report("prod")
    comment = markdown.render(r)
    assert comment == markdown.render(r, limit=0) and not cut_sections(comment)


def test_advisories_fold_by_rule_and_mandatory_violations_stay_open() -> None:
    r = report("prod")
    assert r.policy is not None and r.policy.advisory
    mandatory = dataclasses.replace(r.policy.advisory[0], level="mandatory", policy="a-floor", message="below it.")
    many = dataclasses.replace(r.policy, violations=(*r.policy.violations * 20, mandatory))
    comment = markdown.render(dataclasses.replace(r, policy=many))
    section = comment[comment.index("### Policy review") : comment.index("### Architecture")]
    rules = {v.policy for v in r.policy.advisory}
    folded = re.search(
        rf"<details><summary>{len(r.policy.advisory) * 20} advisory violation\(s\) in {len(rules)} rule", section
    )
    assert folded is not None
    assert section.index("| **a-floor** |") < folded.start()  # the mandatory one open, above the fold
    rows = [
        line for line in section[folded.start() :].splitlines() if line.startswith("| ") and "advisory rule" not in line
    ]
    assert sorted(row.split(" | ")[0].removeprefix("| ") for row in rows) == sorted(rules)  # one row per rule
    first = next(row for row in rows if row.startswith(f"| {r.policy.advisory[0].policy} |"))
    assert f"| {sum(v.policy == r.policy.advisory[0].policy for v in r.policy.advisory) * 20} |" in first
    none = markdown.render(dataclasses.replace(r, policy=dataclasses.replace(r.policy, violations=())))
    assert "<details><summary>" not in none[none.index("### Policy review") : none.index("### Architecture")]
    well_formed(comment)


def test_the_workflow_shares_the_limit_between_the_stacks_of_one_comment(tmp_path: Path) -> None:
    """Run the workflow's own plan step with five stacks and a stand-in plan that writes all it may."""
    import yaml

    document = yaml.safe_load((ROOT / ".github" / "workflows" / "plan.yml").read_text())
    (script,) = [
        s["run"] for s in document["jobs"]["offline"]["steps"] if s.get("name") == "Offline plan of every stack"
    ]
    (tmp_path / "stacks").mkdir()
    for name in ("a", "b", "c", "d", "e"):
        (tmp_path / "stacks" / f"Pulumi.{name}.yaml").write_text("config: {}\n")
    stand_in = tmp_path / ".venv" / "bin" / "trainstack"
    stand_in.parent.mkdir(parents=True)
    stand_in.write_text(
        "#!/bin/bash\n"
        'while [ $# -gt 0 ]; do case "$1" in --max-chars) n=$2;; --output) out=$2;; esac; shift; done\n'
        'head -c "$n" /dev/zero | tr "\\0" "x" > "$out"\n'
    )
    stand_in.chmod(0o755)
    subprocess.run(["bash", "-e", "-c", script], cwd=tmp_path, check=True, timeout=30)
    comment = (tmp_path / "plan-comment.md").read_bytes()
    assert len(list(tmp_path.glob("plan-*.md"))) == 6  # five plans and the comment
    assert markdown.GITHUB_COMMENT_LIMIT - 5 <= len(comment) <= markdown.GITHUB_COMMENT_LIMIT


# ------------------------------------------------------------------------------------------------ the CLI


@pytest.mark.usefixtures("shared_recordings")
def test_max_chars_caps_the_comment_the_cli_writes(capsys: pytest.CaptureFixture[str]) -> None:
    from trainstack import cli

    assert cli.main(["plan", "--stack", "prod", "--format", "markdown", "--max-chars", "6000"]) == cli.EXIT_OK
    out = capsys.readouterr().out
    assert markdown.size(out) <= 6_000 and "resource list" in cut_sections(out)
    assert cli.main(["plan", "--stack", "prod", "--format", "markdown", "--max-chars", "0"]) == cli.EXIT_OK
    assert not cut_sections(capsys.readouterr().out)


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--format", "markdown", "--max-chars", "100"], "--max-chars 100: too small to hold the verdict; use 0"),
        (["--format", "markdown", "--max-chars", "-1"], "--max-chars -1: too small"),
        (["--format", "json", "--max-chars", "9000"], "--max-chars 9000: applies to --format markdown only"),
        (["--format", "markdown", "--max-chars", "lots"], "argument --max-chars: invalid int value: 'lots'"),
    ],
)
def test_a_bad_max_chars_is_bad_input(argv: list[str], says: str, capsys: pytest.CaptureFixture[str]) -> None:
    from trainstack import cli

    assert cli.main(["plan", "--stack", "dev", *argv]) == cli.EXIT_BAD_INPUT
    assert says in capsys.readouterr().err

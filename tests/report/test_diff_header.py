"""The change a reviewer understands in ten seconds (issue 37): the header says what changed in the stack's terms
with every headline figure before and after, the diff block marks each resource's operation, and on a refusal the
next step is the fix. Each scenario is planned as `plan --config ... --against ...` plans it (tests/report/helpers)."""

from __future__ import annotations

import json
import re

import jsonschema
import pytest

from tests.report.helpers import scenario
from trainstack.model import verdict
from trainstack.report import header, json_report, markdown, text

PLAIN = text.Style(color=False)


def _header(name: str) -> header.Header:
    after, diff, before = scenario(name)
    return header.build(after, verdict.assess(after, diff, before), diff, before)


def _figure(name: str, label: str) -> verdict.Figure:
    after, diff, before = scenario(name)
    return next(f for f in verdict.assess(after, diff, before).figures if f.label == label)


@pytest.mark.e2e
def test_a_scale_up_names_the_group_and_the_team_and_every_figure_before_and_after() -> None:
    h = _header("scale-up-and-team")
    lines = h.lines()
    assert 3 <= len(lines) <= 5
    assert lines[0] == "Verdict: REFUSED (1 refused, 1 high, 1 medium): policy storage-throughput-floor on lustre-fs"
    assert lines[1] == (
        "Changes: p5-train max 16 → 24 nodes (+64 H100 at max); team inference-eval added (16 accelerators)"
    )
    # What moved, before → after, with the change where it is money or accelerators.
    assert "storage throughput 119% → 79% of demand" in lines[2]
    assert "policy 0 → 1 mandatory, 15 → 16 advisory" in lines[2]  # prod lists its example alert address
    at_max = _figure("scale-up-and-team", "cost at max")
    assert at_max.moved and at_max.change is not None and at_max.change.startswith("+$321,")
    assert f"cost at max {at_max.before.removesuffix('/month')} → {at_max.value} ({at_max.change})" in lines[2]
    # What did not move is said once, with the change's size and time.
    assert lines[3].startswith("Unchanged: EFA fabric at desired 51.2 Tbit/s · cost at desired $670,924/month")
    _, diff, _ = scenario("scale-up-and-team")
    # p5-train may now grow past its reservation: the cluster-autoscaler arrives with it (a Helm release).
    assert lines[3].endswith(f"{len(diff.added)} to add, 2 to change; applies in about 1-7 min (Helm release)")
    assert (
        lines[4].startswith("Fix: policy storage-throughput-floor on lustre-fs: ")
        and "storage_capacity_gib" in lines[4]
    )


@pytest.mark.e2e
def test_every_figure_has_its_value_before_in_a_diff() -> None:
    for name in ("scale-up-and-team", "rename", "eks-skip"):
        after, diff, before = scenario(name)
        shown = verdict.assess(after, diff, before).figures
        assert before is not None and [f.label for f in shown] == [f.label for f in verdict.figures(before)]
        assert all(f.before is not None for f in shown), name
        assert all((f.change is None) or f.moved for f in shown)  # a change only where the value moved


@pytest.mark.e2e
def test_a_rename_refuses_on_the_protected_cluster_and_its_fix_is_to_undo_it() -> None:
    h = _header("rename")
    assert h.lines()[0] == "Verdict: REFUSED (1 refused, 3 high): replaces protected eks-cluster"
    assert h.changes is not None and [c.text for c in h.changes] == [
        "base name trainstack-prod → trainstack-prod-b (physical names follow it)"
    ]
    assert h.fixes == (
        "replaces protected eks-cluster: undo the change that moves its name; to move it on purpose, "
        "follow docs/day2.md",
    )
    after, diff, before = scenario("rename")
    v = verdict.assess(after, diff, before)
    assert [r.title for r in v.risks if r.severity == verdict.REFUSED] == ["replaces protected eks-cluster"]  # once


@pytest.mark.e2e
def test_an_eks_skip_says_the_version_and_the_fix() -> None:
    h = _header("eks-skip")
    assert h.changes is not None
    assert [c.text for c in h.changes] == [
        "EKS version 1.34 → 1.36",
        "kube-proxy v1.34.0-eksbuild.1 → v1.36.0-eksbuild.21",
    ]
    assert h.fixes and "go to 1.35 first" in h.fixes[0]


@pytest.mark.parametrize("name", ["scale-up-and-team", "rename", "eks-skip"])
@pytest.mark.e2e
def test_a_refusals_next_step_is_the_fix_in_every_format(name: str) -> None:
    after, diff, before = scenario(name)
    v = verdict.assess(after, diff, before)
    assert v.status == verdict.REFUSED
    out = text.render(after, PLAIN, diff, before=before)
    step = out[out.index("\nNext step\n") :]
    assert "pulumi up" not in step and "Fix what refuses the plan" in step
    assert v.fixes[0].split(":")[0] in step
    comment = markdown.render(after, diff, before)
    md_step = comment[comment.index("### Next step") : comment.index("### Next step") + 2000]
    assert (
        md_step.startswith("### Next step: fix what refuses the plan")
        and "pulumi up" not in md_step.split("<details>")[0]
    )
    # The full build's time belongs to a new stack: a diff shows only what its change takes.
    assert "\nTime to ready" not in out and "### Time to ready" not in comment
    assert "Time to apply the change" in out and "### Time to apply the change" in comment


@pytest.mark.e2e
def test_the_header_comes_first_in_every_format_and_the_json_carries_it_for_bots() -> None:
    after, diff, before = scenario("scale-up-and-team")
    h = _header("scale-up-and-team")
    out = text.render(after, PLAIN, diff, width=100, before=before).splitlines()
    assert out[2].startswith("Verdict: REFUSED")  # under the title and the mode
    assert out.index("Changes against stacks/Pulumi.prod.yaml") < next(
        i for i, line in enumerate(out) if line.startswith("Risks")
    )
    comment = markdown.render(after, diff, before)
    first = comment.split("\n\n")[1]
    assert first.startswith("**⛔ Verdict: REFUSED") and "**Changes:** p5-train max 16 → 24 nodes" in first
    assert comment.index("### Changes against") < comment.index("### Risks")
    document = json.loads(json_report.render(after, before.recording if before else None, diff, before))
    jsonschema.Draft202012Validator(json.loads(json_report.SCHEMA_PATH.read_text())).validate(document)
    section = document["trainstack"]
    assert section["header"]["lines"] == h.lines()
    assert [c["text"] for c in section["header"]["changes"]] == [c.text for c in h.changes or ()]
    team = next(c for c in section["header"]["changes"] if c["subject"] == "team inference-eval")
    assert (team["what"], team["before"], team["after"], team["note"]) == ("added", None, None, "16 accelerators")
    by_label = {f["label"]: f for f in section["verdict"]["figures"]}
    assert (
        by_label["storage throughput"]["before"] == "119% of demand"
        and by_label["storage throughput"]["value"] == "79% of demand"
    )
    assert section["verdict"]["reason"]["title"] == "policy storage-throughput-floor on lustre-fs"
    assert section["verdict"]["fix"] == list(h.fixes)


@pytest.mark.e2e
def test_the_diff_block_marks_each_operation_so_github_colours_it() -> None:
    after, diff, before = scenario("scale-up-and-team")
    comment = markdown.render(after, diff, before)
    block = re.search(r"^```diff\n(.*?)^```$", comment, re.M | re.S)
    assert block is not None
    lines = block.group(1).splitlines()
    assert lines[0].startswith("@@ ") and lines[0].endswith(" @@")  # the legend, in GitHub's range colour
    assert all(line[0] in "+-!=@" for line in lines)  # every line starts with a character GitHub colours
    assert "! node group gpu-p5-train-ng: scalingConfig.maxSize: 16 → 24" in lines
    added = next(line for line in lines if line.startswith("+ "))
    # named for its team; four quotas: compute, the accelerators, services (issue 33: no LoadBalancer or NodePort),
    # system-priority (issue 33: no pod of a system priority class)
    assert added.startswith("+ team inference-eval: namespace, 4 x resource quota,")
    assert "!    resources[nvidia.com/gpu].nominalQuota: 128 → 192" in lines  # the quota's resource, not [0]


@pytest.mark.e2e
def test_a_rename_lists_replacements_first_folds_tags_and_cuts_values_where_they_differ() -> None:
    after, diff, before = scenario("rename")
    comment = markdown.render(after, diff, before)
    block = re.search(r"^```diff\n(.*?)^```$", comment, re.M | re.S)
    assert block is not None
    lines = block.group(1).splitlines()[1:]
    heads = [line for line in lines if not line[1:].startswith("   ")]
    assert heads[0] == "-/+ cluster eks-cluster [PROTECTED]: name: trainstack-prod → trainstack-prod-b"
    ops = [line.split(" ", 1)[0] for line in heads]
    assert ops == sorted(ops, key=lambda op: ["-/+", "-", "+", "!", "="].index(op))  # replacements first
    tags = [line for line in heads if "tags only" in line]
    assert len(tags) == 1 and re.match(r"! \d+ resource\(s\): tags only \(Name\)", tags[0])
    assert len(heads) < 60 and sum(c.op == "update" for c in diff.changed) > 50  # grouped, not one line each
    for line in lines:  # a cut value never hides the change: before and after read differently
        if " → " in line:
            old, new = line.split(": ", 2)[-1].split(" → ", 1)
            assert old != new, line
    # over 30: folded. 36: the telemetry key's alias is named after the stack, like the other keys' aliases
    assert re.search(r"<details><summary>[^<]*36 to replace[^<]*</summary>\n\n```diff", comment)


@pytest.mark.e2e
def test_the_diff_block_in_the_terminal_stops_at_30_lines_and_says_how_many_more() -> None:
    after, diff, before = scenario("rename")
    out = text.render(after, PLAIN, diff, width=100, before=before).splitlines()
    start = out.index("Changes against stacks/Pulumi.prod.yaml")
    end = next(i for i in range(start, len(out)) if out[i].startswith("  offline diff:"))
    assert end - start - 2 == text.DIFF_LINES  # the heading and the legend, then the block
    assert re.fullmatch(r"  … \d+ more lines: every change is in `--format json`", out[end - 1])
    assert out[start + 2].startswith("  +- cluster eks-cluster [PROTECTED]")

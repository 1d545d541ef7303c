"""The report a reviewer reads in thirty seconds: verdict and risks first, time to ready, tables that fit,
short names in diffs, integers as integers, a comment GitHub accepts, a diagram whose size stays bounded."""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import edited_config, program_recording, stack_config
from tests.report.helpers import added_group_diff, report, with_cloned_gpu_groups
from trainstack.model import units, verdict
from trainstack.model.diff import diff_reports
from trainstack.model.report import build_report
from trainstack.model.time_to_ready import (
    API_CALL,
    GPU_NODE_GROUP,
    change_estimate,
    critical_path,
    deploy_estimate,
    rolling_update,
)
from trainstack.report import fmt, json_report, markdown, text
from trainstack.report.mermaid import check, flowchart, node_count
from trainstack.review import review

PLAIN = text.Style(color=False)

# ------------------------------------------------------------------------------------------------ verdict


@pytest.mark.parametrize("stack", ["prod", "staging"])
def test_every_format_opens_with_the_verdict_and_the_risks(stack: str) -> None:
    r = report(stack)
    lines = text.render(r, PLAIN).splitlines()
    assert next(i for i, line in enumerate(lines) if line.startswith("Verdict: ")) <= 4  # under the title
    assert any(line.startswith("Risks") for line in lines[:20])
    comment = markdown.render(r)
    assert comment.splitlines()[2].startswith("**") and "Verdict: " in comment.splitlines()[2]
    assert comment.index("### Risks") < comment.index("### Compute")
    section = json.loads(json_report.render(r))["trainstack"]
    assert list(section)[:6] == ["formatVersion", "header", "verdict", "risks", "timeToReady", "changeTime"]
    assert next(line for line in lines if line.startswith("Verdict: ")) in section["header"]["lines"][0]


def test_staging_needs_attention_for_gpus_with_nothing_reserved() -> None:
    v = verdict.assess(report("staging"))
    assert v.status == verdict.ATTENTION
    risk = next(r for r in v.risks if "no reservation or Capacity Block" in r.title)
    assert risk.severity == "medium" and "InsufficientInstanceCapacity" in risk.why


@pytest.mark.e2e
def test_storage_below_demand_is_the_first_risk_and_moves_the_status() -> None:
    config = edited_config("prod", lambda raw: raw["storage"]["fsx"].update(storage_capacity_gib=98400))
    rec = program_recording(config, "prod")
    r = build_report(config, rec, review(rec, "prod"))
    v = verdict.assess(r)
    (fs,) = r.summary.file_systems
    assert fs.coverage is not None and fs.coverage < 1
    assert v.status == verdict.ATTENTION
    assert (
        v.risks[0].severity == "high" and v.risks[0].title == f"storage covers {units.percent(fs.coverage)} of demand"
    )


def test_a_contract_refusal_refuses() -> None:
    from trainstack.contracts import ContractViolation

    r = report("prod")
    refused = ContractViolation(r.recording.resources[0].urn, "cidrBlock", '"x"', "not a CIDR", "botocore ec2")
    v = verdict.assess(dataclasses.replace(r, contracts=(refused,)))
    assert v.status == verdict.REFUSED and v.risks[0].severity == verdict.REFUSED
    assert "not a CIDR" in v.risks[0].why


def test_risks_are_ranked_most_serious_first() -> None:
    for stack in ("prod", "staging"):
        ranks = [verdict.SEVERITIES.index(r.severity) for r in verdict.assess(report(stack)).risks]
        assert ranks == sorted(ranks)


def test_prod_pins_the_fsx_driver_unconfirmed_for_its_kubernetes_version() -> None:
    risks = verdict.assess(report("prod")).risks
    assert any(r.title.startswith("unconfirmed pin: aws-fsx-csi-driver") for r in risks)
    assert not any("vpc-cni" in r.title for r in risks)  # a pin a public source confirms is no risk


# ------------------------------------------------------------------------------------------ time to ready


def brute_force_longest(durations: dict[str, float], after: dict[str, set[str]]) -> float:
    """The longest path by walking every path (small graphs only)."""

    def longest(node: str) -> float:
        return durations[node] + max((longest(p) for p in after.get(node, ())), default=0.0)

    return max((longest(n) for n in durations), default=0.0)


@st.composite
def dags(draw: st.DrawFn) -> tuple[dict[str, tuple[float, float]], dict[str, set[str]]]:
    size = draw(st.integers(1, 7))
    nodes = [f"r{i}" for i in range(size)]
    durations = {}
    for n in nodes:
        low = draw(st.integers(0, 30))
        durations[n] = (float(low), float(low + draw(st.integers(0, 30))))
    after = {n: {p for p in nodes[:i] if draw(st.booleans())} for i, n in enumerate(nodes)}  # edges go back only
    return durations, after


@settings(max_examples=150, deadline=None)
@given(dags())
def test_the_critical_path_is_the_longest_path_and_a_real_chain(graph: tuple) -> None:
    durations, after = graph
    low, high, path = critical_path(durations, after)
    assert low == pytest.approx(brute_force_longest({n: d[0] for n, d in durations.items()}, after))
    assert high == pytest.approx(brute_force_longest({n: d[1] for n, d in durations.items()}, after))
    assert high == pytest.approx(sum(durations[n][1] for n in path))
    assert all(path[i] in after[path[i + 1]] for i in range(len(path) - 1))  # each step waits for the one before
    assert low <= high


@settings(max_examples=60, deadline=None)
@given(dags(), st.data())
def test_adding_a_dependency_never_shortens_the_deploy(graph: tuple, data: st.DataObject) -> None:
    durations, after = graph
    nodes = sorted(durations, key=lambda n: int(n[1:]))
    if len(nodes) < 2:
        return
    i, j = sorted(data.draw(st.sampled_from(list(itertools.combinations(range(len(nodes)), 2)))))
    more = {n: set(p) for n, p in after.items()}
    more[nodes[j]].add(nodes[i])
    assert critical_path(durations, more)[1] >= critical_path(durations, after)[1]


def test_a_cycle_does_not_hang_or_crash() -> None:
    low, high, path = critical_path({"a": (1, 2), "b": (3, 4)}, {"a": {"b"}, "b": {"a"}})
    assert high == 6 and low == 4 and set(path) == {"a", "b"}


def test_every_committed_stack_has_a_time_to_ready_with_sources(stack_name: str) -> None:
    estimate = deploy_estimate(report(stack_name).recording)
    assert 0 < estimate.low <= estimate.high
    assert estimate.path and all(step.time.source for step in estimate.path)
    assert estimate.long_pole is not None and estimate.long_pole.time.high == max(s.time.high for s in estimate.path)
    assert estimate.high >= 16  # nothing runs on EKS before its control plane exists (10-16 min)


def test_a_rolling_update_takes_one_batch_per_max_unavailable_nodes() -> None:
    node_group = next(
        r for r in report("prod").recording.resources if r.type == "aws:eks/nodeGroup:NodeGroup" and "p5" in r.name
    )
    desired = int(node_group.inputs["scalingConfig"]["desiredSize"])
    unavailable = int(node_group.inputs["updateConfig"]["maxUnavailable"])
    roll = rolling_update(node_group, GPU_NODE_GROUP)
    batches = math.ceil(desired / unavailable)
    assert (roll.low, roll.high) == (batches * GPU_NODE_GROUP.low, batches * GPU_NODE_GROUP.high)
    assert f"{desired} node(s), {unavailable} at a time ({batches} batches)" in roll.what


@pytest.mark.e2e
def test_a_diff_is_timed_by_what_it_changes() -> None:
    after, diff, _ = added_group_diff()
    estimate = change_estimate(after.recording, diff)
    assert estimate.long_pole is not None and estimate.long_pole.what == GPU_NODE_GROUP.what
    # The group grows from zero: its scale-from-zero ASG tags wait for the Auto Scaling group EKS creates with it.
    assert (estimate.low, estimate.high) == (
        pytest.approx(GPU_NODE_GROUP.low, abs=0.5),
        pytest.approx(GPU_NODE_GROUP.high + API_CALL.high, abs=1.0),
    )
    assert estimate.high < deploy_estimate(after.recording).high  # an added group is not a new cluster


# ------------------------------------------------------------------------------------------- the terminal


def test_prod_fits_a_100_by_50_screen_down_to_the_total_and_the_policy_result() -> None:
    lines = text.render(report("prod"), PLAIN, width=100).splitlines()
    assert max(len(line) for line in lines) <= 100
    total = next(i for i, line in enumerate(lines) if line.strip().startswith("Total $"))
    policy = next(i for i, line in enumerate(lines) if re.match(r"\s+\d+ mandatory, \d+ advisory violation", line))
    assert total < 50 and policy < 50
    assert lines[-1].startswith(("prod: ", "about", "pole")) or "prod: ok" in "\n".join(lines[-3:])


@pytest.mark.parametrize("width", [60, 80, 100, 160, 240])
@pytest.mark.e2e
def test_no_line_is_wider_than_the_terminal(width: int) -> None:
    after, diff, before = added_group_diff()
    for rendered in (
        text.render(report("staging"), PLAIN, width=width),
        text.render(after, PLAIN, diff, width=width, before=before),
    ):
        assert max(len(line) for line in rendered.splitlines()) <= width


def test_a_narrow_terminal_gets_one_block_per_group_and_a_wide_one_the_table() -> None:
    r = report("prod")
    narrow = text.render(r, PLAIN, width=80)
    wide = text.render(r, PLAIN, width=160)
    header = "  " + "  ".join(text.COMPUTE_HEADERS)
    assert re.search(r"^  group\s+type\s+nodes des/max\s+accelerators des/max\s+fabric\s+capacity\s+AZ", wide, re.M)
    assert "group  " not in narrow.split("\nCompute\n")[1].split("\n\n")[0] and header not in narrow
    assert "  p5-train: 16 x p5.48xlarge (min 16, max 16) in us-east-1a" in narrow
    assert "capacity reservation cr-" in narrow  # the reservation is never the column that scrolls away


# ------------------------------------------------------------------------------------------------ diffs


@pytest.mark.e2e
def test_a_diff_is_titled_as_a_diff_with_counts_and_short_names() -> None:
    after, diff, before = added_group_diff()
    out = text.render(after, PLAIN, diff, before=before)
    assert out.startswith("trainstack diff: stack prod against stacks/Pulumi.prod.yaml")
    joined = out.replace("\n    ", " ").replace("\n  ", " ")
    assert f"{len(diff.added)} to add; applies in about" in joined  # the counts that are not zero
    assert "Changes: GPU group p5-extra added (16 x p5.48xlarge, 128 H100)" in joined
    assert "  + GpuNodeGroup p5-extra: placement group, launch template, node group" in out
    assert "accelerators desired / max 128 / 128 → 256 / 256 H100 (+128 / +128)" in joined
    assert "EFA fabric at desired 51.2 → 102.4 Tbit/s (+51.2 Tbit/s)" in joined  # one unit on both sides
    comment = markdown.render(after, diff, before)
    assert comment.startswith("## trainstack diff: `prod` against `stacks/Pulumi.prod.yaml`")
    assert "\n+ GpuNodeGroup p5-extra: placement group, launch template, node group\n" in comment
    assert "EFA fabric at desired 51.2 → 102.4 Tbit/s (+51.2 Tbit/s)" in comment


@pytest.mark.e2e
def test_a_diff_verdict_counts_the_change_and_flags_the_unreserved_group() -> None:
    after, diff, before = added_group_diff()
    v = verdict.assess(after, diff, before)
    assert v.counts == {"add": len(diff.added), "change": 0, "replace": 0, "delete": 0}
    # Doubling the GPUs without more Lustre falls under prod's mandatory storage floor (60% of demand).
    assert v.status == verdict.REFUSED
    assert [p.policy for p in after.policy.mandatory] == ["storage-throughput-floor"]
    assert any(r.title.startswith("p5-extra: 16 x p5.48xlarge with no reservation") for r in v.risks)
    figure = next(f for f in v.figures if f.label == "accelerators desired / max")
    assert (figure.before, figure.value, figure.change) == ("128 / 128 H100", "256 / 256 H100", "+128 / +128")


@pytest.mark.parametrize(
    ("value", "shown"), [(16.0, "16"), (12.5, "12.5"), (True, "true"), ({"a": [1.0, 2.5]}, "{'a': [1, 2.5]}")]
)
def test_values_in_diff_lines_show_integers_as_integers(value: object, shown: str) -> None:
    assert fmt.short(value) == shown


def test_json_writes_whole_numbers_as_integers() -> None:
    document = json.loads(json_report.render(report("prod")))
    node_group = next(s for s in document["steps"] if s["type"] == "aws:eks/nodeGroup:NodeGroup")
    assert type(node_group["newState"]["inputs"]["scalingConfig"]["desiredSize"]) is int


# -------------------------------------------------------------------------------------------- markdown


def test_the_comment_stays_under_githubs_limit_however_many_resources() -> None:
    big = with_cloned_gpu_groups(report("prod").recording, 400, aws_names=True)
    r = build_report(stack_config("prod"), big)
    comment = markdown.render(r)
    assert len(comment) <= markdown.GITHUB_COMMENT_LIMIT
    assert "the resource list**" in comment  # the resource list gave way (in part or whole), not the verdict
    assert "Verdict: " in comment and "### Architecture" in comment


# ---------------------------------------------------------------------------------------------- diagram


@pytest.mark.parametrize("copies", [0, 1, 3, 10, 40])
def test_the_diagram_stays_bounded_as_gpu_groups_grow(copies: int) -> None:
    source = flowchart(with_cloned_gpu_groups(report("prod").recording, copies))
    assert check(source) == []
    assert node_count(source) <= 20
    if copies >= 3:
        assert re.search(r'"\d+ more GPU groups?: \d+ accelerators at desired"', source.replace("<br>", " "))


@pytest.mark.e2e
def test_a_diff_diagram_colours_what_changes() -> None:
    after, diff, before = added_group_diff()
    source = flowchart(after.recording, diff, before.recording)
    assert check(source) == []
    added = re.search(r"^  class (\S+) added$", source, re.M)
    assert added is not None and "n_ng_gpu_p5_extra_ng" in added.group(1).split(",")
    backwards = diff_reports(after, before, "proposed.yaml")
    reverse = flowchart(before.recording, backwards, after.recording)
    assert backwards.removed and re.search(r"^  class \S*n_ng_gpu_p5_extra_ng\S* removed$", reverse, re.M)


@pytest.mark.e2e
def test_a_diff_document_validates_and_carries_the_change_time() -> None:
    import jsonschema

    after, diff, before = added_group_diff()
    document = json.loads(json_report.render(after, before.recording, diff, before))
    schema = json.loads(json_report.SCHEMA_PATH.read_text())
    errors = list(jsonschema.Draft202012Validator(schema).iter_errors(document))
    assert not errors, errors[0].message
    section = document["trainstack"]
    assert section["verdict"]["counts"]["add"] == len(diff.added)
    assert section["changeTime"]["minutesHigh"] < section["timeToReady"]["minutesHigh"]
    assert all(step["source"] for step in section["changeTime"]["path"])

"""The report's pure helpers (issue 37): wrapping at word boundaries, tables that never clip, values cut where they
differ, paths named by their elements, figures written before → after, the progress line that fits."""

from __future__ import annotations

import dataclasses
import shlex
from typing import cast

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import stack_config
from trainstack.cli import progress_line
from trainstack.engine import Recording
from trainstack.model.cost import CostEstimate
from trainstack.model.diff import PlanDiff
from trainstack.model.report import Report
from trainstack.model.summary import (
    AddonSummary,
    FileSystemSummary,
    HyperPodGroupSummary,
    NodeGroupSummary,
    Summary,
    TeamSummary,
)
from trainstack.model.time_to_ready import Estimate, Step, Typical
from trainstack.model.verdict import ATTENTION, OK, REFUSED, Figure, Risk, Verdict
from trainstack.report import fmt, header
from trainstack.report.changes import cut_pair, readable_path
from trainstack.report.header import DomainChange, moved

WORDS = st.text(alphabet="ab/:-.,x", min_size=1, max_size=50)
GAPS = st.sampled_from([" ", "  ", "   "])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(GAPS, WORDS), max_size=12), st.integers(10, 120), st.integers(0, 6))
def test_fit_never_exceeds_the_width_and_keeps_every_character(
    words: list[tuple[str, str]], width: int, indent: int
) -> None:
    text = "".join(gap + word for gap, word in words).lstrip()
    lines = fmt.fit(text, width, " " * indent)
    assert all(len(line) <= max(width, indent + 8) for line in lines)
    assert "".join(lines).replace(" ", "") == text.replace(" ", "")


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(alphabet="abcdefgh", min_size=1, max_size=12), min_size=1, max_size=15), st.integers(14, 80))
def test_fit_never_splits_a_word_that_fits_a_line(words: list[str], width: int) -> None:
    lines = fmt.fit(" ".join(words), width, "  ")
    assert [w for line in lines for w in line.split()] == words  # every word whole, in order


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(alphabet="abc-/.=", min_size=1, max_size=30), min_size=1, max_size=12), st.integers(20, 100))
def test_a_wrapped_command_is_still_the_same_command(words: list[str], width: int) -> None:
    command = "  pulumi " + " ".join(words)
    lines = fmt.fit_command(command, width, "      ")
    assert all(line.endswith(" \\") for line in lines[:-1]) and not lines[-1].endswith("\\")
    several_words = [line for line in lines if len(line.removesuffix(" \\").split()) > 1]  # one word may not fit
    assert all(len(line) <= width for line in several_words)
    assert lines[0].startswith("  pulumi")  # its own indent stays
    # A shell removes each backslash-newline before it splits words (POSIX Shell Command Language, 2.2.1); shlex
    # does not, so the test does it first.
    assert shlex.split("\n".join(lines).replace("\\\n", "")) == shlex.split(command)


def test_a_quoted_word_is_never_broken_and_a_short_command_is_one_line() -> None:
    assert fmt.fit_command("trainstack preflight --stack prod", 100) == ["trainstack preflight --stack prod"]
    lines = fmt.fit_command("echo 'two words' 'and three more'", 24, "  ")
    assert lines == ["echo 'two words' \\", "  'and three more'"]


def test_fit_breaks_a_token_too_long_for_any_line_after_a_separator() -> None:
    image = "public.ecr.aws/hpc-cloud/nccl-tests:cuda12.8.1-efa1.43.2-ofiv1.16.3"
    lines = fmt.fit(f"container node uses '{image}' without a digest", 40, "  ")
    assert lines[0] == "container node uses 'public.ecr.aws/hpc-"  # filled up to a `-`, then broken
    assert all(len(line) <= 40 for line in lines) and lines[-1].endswith("without a digest")
    assert fmt.fit("  indented text", 40) == ["  indented text"]  # the text's own indent stays
    assert fmt.fit("FAIL  the role exists", 40) == ["FAIL  the role exists"]  # and its runs of spaces
    assert fmt.fit("", 40) == [""]


ROWS = [["p5-train: p5.48xlarge", "16 / 24 instance-hour", "$55.04", "$880.64", "$1,321", "2025-11-01"]]
HEADERS = ("item", "quantity des / max", "unit $", "$/h desired", "$/h max", "price date")


@pytest.mark.parametrize("width", [100, 80, 60, 40, 30])
def test_a_table_drops_columns_in_order_then_stacks_and_never_clips(width: int) -> None:
    lines = fmt.fit_table(HEADERS, ROWS, width, drop=(5, 2, 1))
    assert all(len(line) <= width for line in lines)
    joined = " ".join(lines)
    assert "$880.64" in joined and "$1,321" in joined and "p5-train: p5.48xlarge" in joined  # the money stays
    whole = len(fmt.table(HEADERS, ROWS)[0])
    if width >= whole:
        assert lines == fmt.table(HEADERS, ROWS)
    if "price date" not in lines[0] and lines[0].lstrip().startswith("item"):
        assert "2025-11-01" not in joined  # a dropped column is gone, not cut


def test_a_table_too_wide_for_any_column_set_becomes_one_block_per_row() -> None:
    lines = fmt.fit_table(HEADERS, ROWS, 30, drop=(5, 2, 1))
    assert lines[0].startswith("  p5-train: p5.48xlarge:") and not any(set(line.strip()) == {"-"} for line in lines)


@pytest.mark.parametrize(
    ("old", "new", "shown"),
    [
        (16.0, 24, ("16", "24")),
        (
            "arn:aws:eks:us-east-1:123456789012:cluster/trainstack-prod",
            "arn:aws:eks:us-east-1:123456789012:cluster/trainstack-prod-b",
            ("…trainstack-prod", "…trainstack-prod-b"),
        ),
        (
            "x" * 30 + "A" + "y" * 30,
            "x" * 30 + "B" + "y" * 30,
            ("…xxxxxxxxA" + "y" * 8 + "…", "…xxxxxxxxB" + "y" * 8 + "…"),
        ),
    ],
)
def test_cut_values_show_where_they_differ(old: object, new: object, shown: tuple[str, str]) -> None:
    assert cut_pair(old, new) == shown


def test_a_multi_line_value_stays_on_its_line() -> None:
    old, new = cut_pair("route:\n  receiver: a\n", "route:\n  receiver: b\n")
    assert (old, new) == ("route:\\n  receiver: a\\n", "route:\\n  receiver: b\\n")  # breaks written, not made


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="ab/: -\n", max_size=120), st.text(alphabet="ab/: -\n", max_size=120))
def test_cut_values_of_different_texts_never_read_the_same(old: str, new: str) -> None:
    a, b = cut_pair(old, new, 20)
    assert (a == b) == (old == new)
    assert "\n" not in a + b  # one line each, whatever the value holds
    assert len(a) <= 20 + 2 + 12 and len(b) <= 20 + 2 + 12  # the window, its ellipses, a word's start


def test_paths_name_list_elements_from_the_last_named_one() -> None:
    inputs = {
        "spec": {
            "resourceGroups": [
                {"flavors": [{"name": "p5-train", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 128}]}]}
            ]
        }
    }
    path = "spec.resourceGroups[0].flavors[0].resources[0].nominalQuota"
    assert readable_path(path, inputs) == "resources[nvidia.com/gpu].nominalQuota"
    assert readable_path("scalingConfig.maxSize", {"scalingConfig": {"maxSize": 2}}) == "scalingConfig.maxSize"
    assert readable_path('tags["kubernetes.io/role"]', {}) == 'tags["kubernetes.io/role"]'
    assert readable_path("subnetIds[1]", {"subnetIds": ["a", "b"]}) == "subnetIds[1]"


@pytest.mark.parametrize(
    ("before", "after", "shown"),
    [
        ("0 mandatory, 14 advisory", "1 mandatory, 15 advisory", "0 → 1 mandatory, 14 → 15 advisory"),
        ("0 mandatory, 14 advisory", "1 mandatory, 14 advisory", "0 → 1 mandatory, 14 advisory"),
        ("119% of demand", "79% of demand", "119% → 79% of demand"),
        ("$671,859/month", "$993,548/month", "$671,859 → $993,548/month"),
        ("128 / 128 H100", "128 / 192 H100", "128 / 128 → 128 / 192 H100"),
        ("128 / 128 H100", "256 / 256 H100", "128 / 128 → 256 / 256 H100"),  # a pair is read whole
        ("no file system", "79% of demand", "no file system → 79% of demand"),
        ("1.34", "1.36", "1.34 → 1.36"),
        # numbers with no word between them are a pair, read whole, wherever the pair stands
        ("10 / 10 GPUs, 1 mandatory", "10 / 20 GPUs, 2 mandatory", "10 / 10 GPUs, 1 → 10 / 20 GPUs, 2 mandatory"),
        ("1 of 2 hold, 128 / 128", "2 of 3 hold, 128 / 192", "1 of 2 hold, 128 / 128 → 2 of 3 hold, 128 / 192"),
        ("19 GiB", "29 GiB", "19 → 29 GiB"),  # the shared tail starts at the word, one character back
        ("p5.48xlarge", "p4d.24xlarge", "p5.48xlarge → p4d.24xlarge"),  # a word is never cut inside
    ],
)
def test_a_moved_figure_writes_what_both_values_share_once(before: str, after: str, shown: str) -> None:
    assert moved(before, after) == shown


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="abx /", max_size=12), st.text(alphabet="abx /", max_size=12))
def test_a_moved_text_writes_its_longest_shared_words_once_and_never_an_empty_before(before: str, after: str) -> None:
    """Without numbers: `before-head → after`, the head what is left of `before` once the longest tail both share
    from a word boundary (a space or a slash) is written once; all of `before` when that tail is all of it."""
    if before == after:
        return
    head, arrow, rest = moved(before, after).partition(" → ")
    assert arrow and rest == after and before.startswith(head)
    shared = [n for n in range(1, len(before) + 1) if after.endswith(before[-n:]) and before[-n] in " /"]
    longest = max(shared, default=0)
    assert head == (before if longest in (0, len(before)) else before[:-longest])


def test_a_domain_change_reads_as_a_sentence() -> None:
    assert DomainChange("p5-train", "max", "16", "24 nodes", "+64 H100 at max").text == (
        "p5-train max 16 → 24 nodes (+64 H100 at max)"
    )
    assert DomainChange("team inference-eval", "added", note="16 accelerators").text == (
        "team inference-eval added (16 accelerators)"
    )
    assert DomainChange("base name", "", "a", "b").text == "base name a → b"


@settings(max_examples=200, deadline=None)
@given(st.text(min_size=0, max_size=300), st.floats(0, 9999), st.integers(1, 300))
def test_the_progress_line_never_wraps(message: str, seconds: float, columns: int) -> None:
    line = progress_line("|", message, seconds, columns)
    assert len(line) <= max(columns - 1, 0)
    if len(f"| {message} {seconds:4.1f}s") < columns:
        assert line == f"| {message} {seconds:4.1f}s"  # room enough: nothing cut


# ------------------------------------------------------- the header: what a change does, in the stack's own terms

BASE = "trainstack-prod"


def _group(
    name: str = "p5-train",
    sizes: tuple[int, int, int] = (16, 16, 16),
    *,
    instance_type: str = "p5.48xlarge",
    model: str | None = "H100",
    gpus: int = 8,
    efa: int = 32,
    capacity: str = "on-demand",
    base: str = BASE,
) -> NodeGroupSummary:
    low, desired, high = sizes
    return NodeGroupSummary(
        name=f"{base}-{name}",
        urn=f"urn:pulumi:prod::trainstack::aws:eks/nodeGroup:NodeGroup::{base}-{name}",
        instance_type=instance_type,
        accelerator_model=model,
        min_size=low,
        desired_size=desired,
        max_size=high,
        gpus_per_node=gpus,
        gpu_memory_gib_per_node=640 if model else 0,
        efa_interfaces=efa,
        efa_max=32,
        fabric_gbps_per_node=3200.0 if efa else 0.0,
        placement_group=None,
        availability_zones=("us-east-1a",),
        subnets=1,
        taints=(),
        capacity=capacity,
        root_volume_gib=200,
    )


def _system(sizes: tuple[int, int, int] = (2, 2, 4), base: str = BASE) -> NodeGroupSummary:
    return _group("system", sizes, instance_type="m7i.2xlarge", model=None, gpus=0, efa=0, base=base)


def _fs(name: str = "lustre-fs", capacity: int = 4800, throughput: int = 250, base: str = BASE) -> FileSystemSummary:
    return FileSystemSummary(
        name=f"{base}-{name}",
        urn=f"urn:pulumi:prod::trainstack::aws:fsx/lustreFileSystem:LustreFileSystem::{base}-{name}",
        deployment_type="PERSISTENT_2",
        capacity_gib=capacity,
        throughput_mb_s_per_tib=throughput,
        efa_enabled=True,
        throughput_mb_s=capacity / 1024 * throughput,
        demand_mb_s=1000.0,
    )


def _summary(
    *,
    base: str = BASE,
    groups: tuple[NodeGroupSummary, ...] = (),
    teams: tuple[TeamSummary, ...] = (),
    file_systems: tuple[FileSystemSummary, ...] = (),
    eks: tuple[str, ...] = ("1.34",),
    addons: tuple[AddonSummary, ...] = (),
    hyperpod: tuple[HyperPodGroupSummary, ...] = (),
) -> Summary:
    return Summary(
        stack="prod",
        environment="prod",
        region="us-east-1",
        name=base,
        preview=True,
        resource_count=0,
        custom_count=0,
        component_count=0,
        node_groups=groups,
        file_systems=file_systems,
        bucket_count=0,
        nat_gateways=0,
        interface_endpoints=0,
        interface_endpoint_azs=0,
        eks_clusters=tuple((base, version, "STANDARD") for version in eks),
        addons=addons,
        hyperpod=hyperpod,
        accelerators_max=0,
        gpu_budget=0,
        per_gpu_read_mb_s=0.0,
        teams=teams,
    )


def _report(summary: Summary) -> Report:
    return Report(
        stack=stack_config("prod"),
        recording=Recording("prod", True, (), {}),
        summary=summary,
        cost=CostEstimate((), 730.0, "us-east-1", ()),
        policy=None,
        contracts=(),
    )


def _changes(before: Summary, after: Summary) -> list[str]:
    return [c.text for c in header.domain_changes(_report(before), _report(after))]


def test_a_group_that_grows_says_by_how_many_nodes_and_accelerators_at_each_size() -> None:
    before = _summary(groups=(_group(sizes=(8, 8, 16)),))
    after = _summary(groups=(_group(sizes=(4, 12, 24)),))
    assert _changes(before, after) == [
        "p5-train max 16 → 24 nodes (+64 H100 at max)",
        "p5-train desired 8 → 12 nodes (+32 H100 at desired)",
        "p5-train min 8 → 4 nodes",  # the floor moves no accelerator by itself
    ]
    assert _changes(after, before)[:2] == [
        "p5-train max 24 → 16 nodes (-64 H100 at max)",
        "p5-train desired 12 → 8 nodes (-32 H100 at desired)",
    ]
    assert _changes(before, before) == []


def test_a_system_groups_sizes_move_no_accelerators() -> None:
    assert _changes(_summary(groups=(_system((2, 2, 4)),)), _summary(groups=(_system((2, 3, 6)),))) == [
        "system max 4 → 6 nodes",
        "system desired 2 → 3 nodes",
    ]


def test_a_groups_type_capacity_and_efa_each_change_on_their_own() -> None:
    was = _group()
    cases = {
        "p5-train type p5.48xlarge → p5e.48xlarge": _group(instance_type="p5e.48xlarge"),
        "p5-train capacity on-demand → reservation cr-0a1b2c3d4e5f67890": _group(
            capacity="reservation cr-0a1b2c3d4e5f67890"
        ),
        "p5-train EFA interfaces 32 → 16": _group(efa=16),
    }
    for text, now in cases.items():
        assert _changes(_summary(groups=(was,)), _summary(groups=(now,))) == [text]


def test_added_and_removed_groups_say_what_they_bring_or_take() -> None:
    before = _summary(groups=(_group(), _system()))
    after = _summary(groups=(_group("p5-eval", (0, 2, 4)), _system((2, 2, 2), base=BASE)))
    assert _changes(before, after) == [
        "GPU group p5-eval added (2 x p5.48xlarge, 16 H100)",
        "system max 4 → 2 nodes",
        "GPU group p5-train removed (-128 H100 at max)",
    ]
    assert _changes(_summary(), _summary(groups=(_system(),))) == ["system group system added (2 x m7i.2xlarge)"]
    assert _changes(_summary(groups=(_system(),)), _summary()) == ["system group system removed"]


def test_teams_added_requoted_and_removed() -> None:
    before = _summary(teams=(TeamSummary("ml-research", 64), TeamSummary("old", 8), TeamSummary("same", 8)))
    after = _summary(teams=(TeamSummary("ml-research", 96), TeamSummary("inference-eval", 16), TeamSummary("same", 8)))
    assert _changes(before, after) == [
        "team ml-research quota 64 → 96 accelerators",
        "team inference-eval added (16 accelerators)",
        "team old removed",
    ]


def test_file_systems_added_resized_retuned_and_removed() -> None:
    before = _summary(file_systems=(_fs(), _fs("scratch"), _fs("same")))
    after = _summary(file_systems=(_fs(capacity=9600, throughput=500), _fs("datasets", 1200), _fs("same")))
    assert _changes(before, after) == [
        "lustre-fs capacity 4,800 → 9,600 GiB",
        "lustre-fs throughput 250 → 500 MB/s/TiB",
        "datasets added (1,200 GiB)",
        "scratch removed",
    ]


def test_a_new_base_name_is_one_change_and_what_it_names_follows_it() -> None:
    hp = HyperPodGroupSummary(f"{BASE}-hp", "workers", "ml.p5.48xlarge", 4)
    before = _summary(groups=(_group(),), file_systems=(_fs(),), hyperpod=(hp,))
    renamed = "trainstack-prod-b"
    moved_hp = HyperPodGroupSummary(f"{renamed}-hp", "workers", "ml.p5.48xlarge", 4)
    after = _summary(
        base=renamed, groups=(_group(base=renamed),), file_systems=(_fs(base=renamed),), hyperpod=(moved_hp,)
    )
    assert _changes(before, after) == ["base name trainstack-prod → trainstack-prod-b (physical names follow it)"]


def test_the_eks_version_moves_only_when_both_sides_have_a_cluster() -> None:
    assert _changes(_summary(eks=("1.34",)), _summary(eks=("1.35",))) == ["EKS version 1.34 → 1.35"]
    assert _changes(_summary(eks=("1.35",)), _summary(eks=("1.35",))) == []
    assert _changes(_summary(eks=()), _summary(eks=("1.35",))) == []  # HyperPod on an existing cluster
    assert _changes(_summary(eks=("1.35",)), _summary(eks=())) == []


def test_an_addon_upgrade_is_named_but_an_added_one_is_not_a_version_change() -> None:
    def addon(name: str, version: str) -> AddonSummary:
        return AddonSummary("helm", name, name, version, "kube-system")

    before = _summary(addons=(addon("kueue", "0.14.8"), addon("gpu-operator", "v25.3.4")))
    after = _summary(addons=(addon("kueue", "0.15.0"), addon("gpu-operator", "v25.3.4"), addon("new", "1.0.0")))
    assert _changes(before, after) == ["kueue 0.14.8 → 0.15.0"]


def test_hyperpod_groups_added_or_resized() -> None:
    def hp(name: str, count: int) -> HyperPodGroupSummary:
        return HyperPodGroupSummary(f"{BASE}-hp", name, "ml.p5.48xlarge", count)

    before = _summary(hyperpod=(hp("workers", 4), hp("same", 2)))
    after = _summary(hyperpod=(hp("workers", 8), hp("eval", 2), hp("same", 2)))
    assert _changes(before, after) == [
        "HyperPod workers instances 4 → 8",
        "HyperPod eval added (2 x ml.p5.48xlarge)",
    ]


def test_changes_come_groups_then_teams_then_storage_then_the_platform() -> None:
    before = _summary(groups=(_group(),), teams=(TeamSummary("a", 8),), file_systems=(_fs(),), eks=("1.34",))
    after = _summary(
        groups=(_group(sizes=(16, 16, 17)),),
        teams=(TeamSummary("a", 16),),
        file_systems=(_fs(capacity=9600),),
        eks=("1.35",),
    )
    assert [c.subject for c in header.domain_changes(_report(before), _report(after))] == [
        "p5-train",
        "team a",
        "lustre-fs",
        "EKS",
    ]


def test_the_changes_line_names_six_and_counts_the_rest() -> None:
    assert header.changes_line(()).startswith("no GPU group, team, file system, version or name changes")
    changes = tuple(header.DomainChange(f"team t{i}", "added") for i in range(8))
    six = header.changes_line(changes[:6])
    assert six == "; ".join(f"team t{i} added" for i in range(6))
    assert header.changes_line(changes[:7]) == six + "; and 1 more"
    assert header.changes_line(changes) == six + "; and 2 more"


def test_a_domain_change_as_json_carries_its_text() -> None:
    change = header.DomainChange("p5-train", "max", "16", "24 nodes", "+64 H100 at max")
    assert change.to_dict() == {
        "subject": "p5-train",
        "what": "max",
        "before": "16",
        "after": "24 nodes",
        "note": "+64 H100 at max",
        "text": "p5-train max 16 → 24 nodes (+64 H100 at max)",
    }
    assert header.DomainChange("team a", "removed", "x", "y").text == "team a removed"  # no before → after


@pytest.mark.parametrize(
    ("figure", "shown"),
    [
        (Figure("GPUs", "128 x H100"), "GPUs 128 x H100"),
        (Figure("GPUs", "128 x H100", before="128 x H100"), "GPUs 128 x H100"),  # in a diff, unmoved
        (
            Figure("cost", "$993,548/month", "$671,859/month", "+$321,689/month"),
            "cost $671,859 → $993,548/month (+$321,689/month)",
        ),
        (Figure("coverage", "79% of demand", "119% of demand"), "coverage 119% → 79% of demand"),
    ],
)
def test_a_figure_reads_its_value_or_how_it_moved(figure: Figure, shown: str) -> None:
    assert header.figure_text(figure) == shown


def _verdict(status: str, *risks: Risk, counts: dict[str, int] | None = None, change: bool = True) -> Verdict:
    pole = Step("urn", "eks", "aws:eks/cluster:Cluster", Typical("EKS control plane", 8, 12, "guide"))
    helm = Step("urn", "kueue", "kubernetes:helm.sh/v3:Release", Typical("Helm release", 1, 7, "guide"))
    return Verdict(
        status=status,
        figures=(Figure("GPUs", "128 x H100", "128 x H100"), Figure("cost", "$2/month", "$1/month", "+$1/month")),
        risks=risks,
        time=Estimate(35, 50, (pole,)),
        change=Estimate(1, 7, (helm,)) if change else None,
        counts=counts,
    )


def test_the_verdict_line_gives_the_deciding_risk_or_how_many_low_ones_stand() -> None:
    refused = Risk(REFUSED, "replaces protected eks-cluster", "why")
    high = Risk("high", "over budget", "why")
    low = Risk("low", "a low one", "why")
    assert header.verdict_line(_verdict(REFUSED, refused, high)) == (
        "Verdict: REFUSED (1 refused, 1 high): replaces protected eks-cluster"
    )
    assert header.verdict_line(_verdict(OK, low, low)) == "Verdict: OK: no high or medium risk; 2 low"
    assert header.verdict_line(_verdict(OK, low)) == "Verdict: OK: no high or medium risk; 1 low"
    assert header.verdict_line(_verdict(OK)) == "Verdict: OK: no risk found"


def test_a_new_stacks_header_gives_the_figures_and_its_time_to_ready() -> None:
    v = _verdict(OK)
    h = header.build(_report(_summary()), v)
    assert h.changes is None and h.status == OK
    assert h.size == "new stack: ready in about 35-50 min (long pole: EKS control plane)"
    assert h.lines() == [
        "Verdict: OK: no risk found",
        "GPUs 128 x H100 · cost $1 → $2/month (+$1/month)",
        "new stack: ready in about 35-50 min (long pole: EKS control plane)",
    ]
    assert h.to_dict() == {"lines": h.lines(), "changes": None, "fix": []}
    bare = dataclasses.replace(v, time=Estimate(0.5, 0.5, ()))
    assert header.build(_report(_summary()), bare).size == "new stack: ready in about under 1 min"


def test_a_diffs_header_counts_operations_and_says_how_long_they_apply() -> None:
    diff = cast(PlanDiff, object())  # build only asks whether there is a diff; the verdict carries its figures
    counts = {"add": 21, "change": 2, "replace": 0, "delete": 1}
    v = _verdict(ATTENTION, Risk("high", "over budget", "why"), counts=counts)
    before = _summary(teams=(TeamSummary("a", 8),))
    after = _summary(teams=(TeamSummary("a", 16),))
    h = header.build(_report(after), v, diff, _report(before))
    assert h.size == "21 to add, 2 to change, 1 to delete; applies in about 1-7 min (Helm release)"
    assert h.changes == (header.DomainChange("team a", "quota", "8", "16 accelerators"),)
    assert h.lines() == [
        "Verdict: NEEDS ATTENTION (1 high): over budget",
        "Changes: team a quota 8 → 16 accelerators",
        "cost $1 → $2/month (+$1/month)",
        "Unchanged: GPUs 128 x H100; " + h.size,
    ]
    assert h.to_dict()["changes"] == [c.to_dict() for c in h.changes]
    # without a baseline report there is nothing to compare in the stack's terms
    assert header.build(_report(after), v, diff).changes == ()
    # no operation: nothing applies, whatever the estimate says
    for none in (None, {}, {"add": 0}):
        assert header.build(_report(after), _verdict(OK, counts=none), diff).size == "no resource changes"
    assert header.build(_report(after), _verdict(OK, counts={"add": 1}, change=False), diff).size == "1 to add"
    no_pole = dataclasses.replace(v, change=Estimate(1, 7, ()))
    assert header.build(_report(after), no_pole, diff).size.endswith("1 to delete; applies in about 1-7 min")


def test_a_diffs_header_puts_moved_and_unchanged_figures_apart_and_the_fix_last() -> None:
    def lines(*figures: Figure, fixes: tuple[str, ...] = ()) -> list[str]:
        return header.Header(REFUSED, "Verdict: X", (), figures, "1 to add", fixes).lines()

    same = Figure("GPUs", "8", "8")
    up = Figure("cost", "$2", "$1")
    assert lines(same, up) == [
        "Verdict: X",
        "Changes: " + header.changes_line(()),
        "cost $1 → $2",
        "Unchanged: GPUs 8; 1 to add",
    ]
    assert lines(up)[2:] == ["cost $1 → $2", "1 to add"]
    assert lines(same)[2:] == ["Unchanged: GPUs 8; 1 to add"]
    assert lines(up, fixes=("undo it",))[-1] == "Fix: undo it"
    assert lines(up, fixes=("undo it", "shrink it"))[-1] == "Fix: undo it (and 1 more: see Next step)"
    assert lines(up, fixes=("a", "b", "c"))[-1] == "Fix: a (and 2 more: see Next step)"
    plan = header.Header(REFUSED, "Verdict: X", None, (same, up), "new stack", ("undo it", "b"))
    assert plan.lines() == [
        "Verdict: X",
        "GPUs 8 · cost $1 → $2",
        "new stack",
        "Fix: undo it (and 1 more: see Next step)",
    ]
    assert plan.to_dict()["fix"] == ["undo it", "b"]

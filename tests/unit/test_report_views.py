"""The report's pure helpers (issue 37): wrapping at word boundaries, tables that never clip, values cut where they
differ, paths named by their elements, figures written before → after, the progress line that fits."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trainstack.cli import progress_line
from trainstack.report import fmt
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
    ],
)
def test_a_moved_figure_writes_what_both_values_share_once(before: str, after: str, shown: str) -> None:
    assert moved(before, after) == shown


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

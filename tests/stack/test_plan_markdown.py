"""`--format markdown`: a pull-request comment with a well-formed Mermaid flowchart of the architecture."""

from __future__ import annotations

import functools
import re

import pytest

from tests.conftest import recording, stack_config
from trainstack.report import markdown
from trainstack.report.mermaid import check, flowchart
from trainstack.report.model import build_report


@functools.cache
def comment(stack: str) -> str:
    return markdown.render(build_report(stack_config(stack), recording(stack)))


def mermaid_blocks(text: str) -> list[str]:
    return re.findall(r"^```mermaid\n(.*?)^```$", text, re.MULTILINE | re.DOTALL)


def test_the_comment_has_a_single_well_formed_flowchart(stack_name: str) -> None:
    text = comment(stack_name)
    (block,) = mermaid_blocks(text)
    assert check(block) == []
    assert text.count("```") % 2 == 0  # every fence closed
    for heading in ("### Compute", "### Storage", "### Cost (estimate)", "### Architecture", "### Next step"):
        assert heading in text


def test_prod_diagram_draws_the_architecture_from_the_recording() -> None:
    block = flowchart(recording("prod"))
    labels = re.findall(r'"([^"]*)"', block)
    config = stack_config("prod")
    assert any(label == f"VPC {config.network.vpc_cidr}" for label in labels)
    for az in config.network.availability_zones:
        assert f'["{az}"]' in block
    assert sum(label.startswith("private subnet") for label in labels) == len(config.network.availability_zones)
    assert any(label.startswith("EKS ") for label in labels)
    assert any(label.startswith("node group") and "p5.48xlarge" in label for label in labels)
    assert any(label.startswith("FSx for Lustre PERSISTENT_2") for label in labels)
    assert any(label.startswith("S3 ") for label in labels)
    assert " --> " in block


def test_staging_diagram_shows_hyperpod() -> None:
    assert "SageMaker HyperPod" in flowchart(recording("staging"))


@pytest.mark.parametrize(
    "broken",
    [
        'graph LR\n  a["x"]',
        'flowchart LR\n  subgraph s["x"]\n  a["x"]',
        'flowchart LR\n  a["x"]\n  a --> b',
        'flowchart LR\n  a["say "hi""]',
        'flowchart LR\n  a["x"]\n  a["y"]',
    ],
)
def test_the_structural_check_catches_broken_sources(broken: str) -> None:
    assert check(broken)


def test_transitive_edges_are_dropped_but_reachability_is_kept() -> None:
    from trainstack.report.mermaid import transitive_reduction

    edges = {("a", "b"), ("b", "c"), ("a", "c"), ("a", "d")}
    assert transitive_reduction(edges) == {("a", "b"), ("b", "c"), ("a", "d")}

"""`--format markdown`: a pull-request comment with a well-formed Mermaid flowchart of the architecture."""

from __future__ import annotations

import re

import pytest

from tests import tiers
from tests.conftest import recording, stack_config
from trainstack.model.report import build_report
from trainstack.report import markdown
from trainstack.report.mermaid import check, flowchart


@tiers.cache
def comment(stack: str) -> str:
    return markdown.render(build_report(stack_config(stack), recording(stack)))


def mermaid_blocks(text: str) -> list[str]:
    return re.findall(r"^```mermaid\n(.*?)^```$", text, re.MULTILINE | re.DOTALL)


def test_the_comment_has_a_single_well_formed_flowchart(stack_name: str) -> None:
    text = comment(stack_name)
    (block,) = mermaid_blocks(text)
    assert check(block) == []
    assert text.count("```") % 2 == 0  # every fence closed
    for heading in (
        "### Risks",
        "### Time to ready",
        "### Compute",
        "### Storage",
        "### Cost (estimate)",
        "### Architecture",
        "### Next step",
    ):
        assert heading in text


def test_prod_diagram_draws_what_a_reviewer_looks_for() -> None:
    block = flowchart(recording("prod"))
    labels = [label.replace("<br>", " ") for label in re.findall(r'"([^"]*)"', block)]
    config = stack_config("prod")
    assert any(label == f"VPC {config.network.vpc_cidr}" for label in labels)
    gpu_zone = config.gpu_node_groups[0].availability_zone
    zones = re.findall(r'subgraph az_\w+\["([^"]+)"\]', block)
    assert zones == [gpu_zone]  # only the AZ with the GPUs and the file system is drawn as an AZ
    azs = len(config.network.availability_zones)
    assert sum(label.startswith(f"{azs * 2} subnets in {azs} AZs") for label in labels) == 1  # the network: one node
    assert any(label.startswith("control plane") for label in labels) and 'subgraph eks_cluster["EKS"]' in block
    assert any(label.startswith("p5-train 16 x p5.48xlarge") and "EFA 32/32" in label for label in labels)
    assert any(label.startswith("FSx for Lustre PERSISTENT_2") for label in labels)
    assert any(label.endswith("7 EKS add-ons") for label in labels)  # the rest of the platform: one node
    assert '-.->|"runs on"|' in block  # the GPU Operator and the EFA plugin on the GPU nodes
    # prod's association only imports (autoImportPolicy, batch import), from the datasets bucket alone.
    assert '-->|"Lustre"|' in block and '-->|"imports to /datasets"| n_fs_lustre_fs' in block
    assert re.search(r'n_s3_data_datasets\[\("S3 datasets"\)\]', block) and "export" not in block


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

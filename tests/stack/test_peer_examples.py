"""Issue 34, "Done when": each peer's cluster definition, expressed as a stack file (stacks/examples/peer-*.yaml,
each naming the peer file it mirrors), plans: exit 0, or only the refusal its header explains."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

PEERS = sorted((ROOT / "stacks" / "examples").glob("peer-*.yaml"))
# What each example's header says its plan refuses (docs/policies.md, docs/contracts.md): exit code, the mandatory
# policies, the refused contracts.
EXPECTED: dict[str, tuple[int, set[str], set[str]]] = {
    "peer-adt-p5-odcr-vpc.yaml": (1, {"gpu-budget"}, set()),
    "peer-adt-p4de-odcr.yaml": (1, {"gpu-budget"}, set()),
    "peer-adt-g5-autorepair.yaml": (0, set(), set()),
    "peer-adt-g4dn.yaml": (0, set(), set()),
    "peer-aioneks-training.yaml": (1, {"gpu-budget"}, set()),
    # The Neuron chart's missing facts (tests/unit/test_contract_facts.py): the contract tier refuses the release.
    "peer-tfeks-efa-trn1n.yaml": (4, set(), {"neuron-plugin-release"}),
}


def test_every_peer_example_is_listed_and_names_the_file_it_mirrors() -> None:
    assert {p.name for p in PEERS} == set(EXPECTED)
    for path in PEERS:
        assert re.match(r"# Mirrors [\w.-]+/[\w.-]+ \S+", path.read_text()), path.name


@pytest.mark.e2e
@pytest.mark.parametrize("path", PEERS, ids=[p.name for p in PEERS])
def test_every_peer_example_plans(path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "trainstack", "plan", "--config", str(path)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
        timeout=600,
    )
    code, policies, contracts = EXPECTED[path.name]
    assert done.returncode == code, done.stdout[-3000:] + done.stderr[-2000:]
    assert set(re.findall(r"^\s+MANDATORY ([\w-]+) on ", done.stdout, re.M)) == policies
    assert set(re.findall(r"^\s+REFUSED ([\w-]+) ", done.stdout, re.M)) == contracts

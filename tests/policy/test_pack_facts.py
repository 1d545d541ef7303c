"""What the standalone policy pack knows of the program is generated from each fact's one home
(`make pack-facts`, scripts/pack_facts.py): the generated files must be current, and must say what the
homes say when the pack reads them."""

from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest
import yaml

from policies import facts
from policies.rules.storage import floor_read_rate
from scripts import pack_facts
from stacks import fsx_sizing
from stacks.catalog import CATALOG
from stacks.load import FULL_KEY
from tests.conftest import ROOT, stack_document


@pytest.fixture(scope="module")
def outputs() -> dict:
    return pack_facts.outputs()


def test_generated_files_are_current(outputs: dict) -> None:
    stale = [str(path.relative_to(ROOT)) for path, text in outputs.items() if path.read_text() != text]
    assert not stale, f"stale: {stale}; run `make pack-facts` and commit the result"


def test_the_pack_reads_the_catalog_through_the_generated_facts() -> None:
    """The generated literals round-trip: what a rule reads is the catalog row, not a formatting accident."""
    assert set(facts.INSTANCES) == set(CATALOG)
    for name, row in CATALOG.items():
        assert facts.instance(f"ml.{name}") == (
            row.accelerator.value,
            row.accelerator_count,
            row.max_efa_interfaces,
            row.efa_cards,
        )
    assert facts.instance("m7i.xlarge") is None


def test_a_changed_home_makes_the_facts_stale(monkeypatch: pytest.MonkeyPatch) -> None:
    """The staleness test can fail: a moved home fact changes the generated text."""
    before = pack_facts.facts_module()
    monkeypatch.setattr(pack_facts.fsx_sizing, "SCRATCH_2_BASELINE_MB_S_PER_TIB", 201)
    assert pack_facts.facts_module() != before


@pytest.mark.parametrize(("rate", "floor"), [(20.0, 200), (199.5, 200), (200.0, 200), (250.5, 250.5)])
def test_a_stack_raises_its_storage_floor_but_never_lowers_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rate: float, floor: float
) -> None:
    """The floor's read rate is the committed fact or the stack's, whichever is larger; the advisory sizing rule
    keeps the stack's own assumption."""
    document = stack_document("prod")
    document["config"][FULL_KEY]["storage"]["fsx"]["per_gpu_read_mb_s"] = rate
    (tmp_path / "Pulumi.prod.yaml").write_text(yaml.safe_dump(document))
    monkeypatch.setattr(pack_facts, "STACKS_DIR", tmp_path)
    prod = pack_facts.thresholds()["prod"]
    assert fsx_sizing.READ_MB_S_PER_ACCELERATOR_FLOOR["prod"] == 200
    assert prod["storage-throughput-floor"]["perGpuReadMbPerS"] == floor
    assert prod["storage-throughput-feeds-gpus"]["perGpuReadMbPerS"] == rate


class _Args:
    """What `floor_read_rate` reads of a rule's arguments: its config and the resources' URNs."""

    def __init__(self, config: dict[str, float], stack: str) -> None:
        self.config = config
        self.resources = [
            SimpleNamespace(urn=f"urn:pulumi:{stack}::trainstack::aws:fsx/lustreFileSystem:LustreFileSystem::f")
        ]

    def get_config(self) -> dict[str, float]:
        return self.config


@pytest.mark.parametrize(
    ("config", "stack", "rate"),
    [
        ({"perGpuReadMbPerS": 1}, "prod", 200.0),  # a lowered config file does not move the floor
        ({}, "prod-eu-west-1", 200.0),
        ({"perGpuReadMbPerS": 300}, "prod", 300.0),  # a stricter one does
        ({"perGpuReadMbPerS": 1}, "dev", 100.0),
        ({"perGpuReadMbPerS": 1}, "qa", 200.0),  # no known environment: prod's fact
    ],
)
def test_the_storage_floor_never_judges_by_less_than_the_fact(
    config: dict[str, float], stack: str, rate: float
) -> None:
    assert floor_read_rate(cast(Any, _Args(config, stack))) == rate

"""What the standalone policy pack knows of the program is generated from each fact's one home
(`make pack-facts`, scripts/pack_facts.py): the generated files must be current, and must say what the
homes say when the pack reads them."""

import pytest

from policies import facts
from scripts import pack_facts
from stacks.catalog import CATALOG
from tests.conftest import ROOT


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

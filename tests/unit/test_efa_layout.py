"""EFA interface layouts over the whole catalog, under both layouts, and the schema rules that guard them."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from components.gpu.efa import (
    InterfaceType,
    NetworkInterfaceSlot,
    efa_interface_count,
    efa_interfaces,
)
from stacks.catalog import CATALOG, InstanceType, efa_capable
from stacks.schema import EfaLayout, GpuNodeGroupSpec, efa_layout_problem

EFA_TYPES = efa_capable()
# Types whose EFA cards do not include card 0 cannot carry a legacy `efa` primary.
CARD0_EFA_TYPES = [name for name in EFA_TYPES if CATALOG[name].efa_cards[0] == 0]


def _supports(row: InstanceType, layout: EfaLayout) -> bool:
    return efa_layout_problem(row, layout) is None


def _subnet_ips(slots: list[NetworkInterfaceSlot]) -> int:
    # efa-only interfaces take no private IP from the subnet; `interface` and `efa` take one each.
    return sum(s.interface_type is not InterfaceType.EFA_ONLY for s in slots)


def _check_common(row: InstanceType, layout: EfaLayout) -> None:
    slots = efa_interfaces(row, layout)
    assert efa_interface_count(slots) == row.max_efa_interfaces
    # One EFA device per EFA card, on exactly the catalog's cards.
    efa_cards = [s.network_card_index for s in slots if s.has_efa]
    assert sorted(efa_cards) == sorted(row.efa_cards)
    assert len(set(efa_cards)) == len(efa_cards)
    # (card, device) pairs are unique, every card is a real card, the primary comes first and is never efa-only.
    assert len({(s.network_card_index, s.device_index) for s in slots}) == len(slots)
    assert all(0 <= s.network_card_index < row.network_cards for s in slots)
    assert slots[0].is_primary
    assert sum(s.is_primary for s in slots) == 1
    assert slots[0].interface_type is not InterfaceType.EFA_ONLY
    assert all(s.interface_type is InterfaceType.EFA_ONLY for s in slots[1:])
    assert all(s.delete_on_termination for s in slots)


@pytest.mark.parametrize("instance_type", EFA_TYPES)
def test_ena_primary_layout(instance_type: str) -> None:
    row = CATALOG[instance_type]
    slots = efa_interfaces(row, EfaLayout.ENA_PRIMARY)
    _check_common(row, EfaLayout.ENA_PRIMARY)
    assert slots[0].interface_type is InterfaceType.ENA
    assert len(slots) == row.max_efa_interfaces + 1  # the ENA primary comes on top of the EFA devices
    assert _subnet_ips(slots) == 1  # efa-only interfaces take no subnet IP
    card0 = [s for s in slots if s.network_card_index == 0 and s.has_efa]
    # AWS: "If the network card index 0 supports EFA, create an EFA-only network interface for ... device index 1".
    assert [s.device_index for s in card0] == ([1] if 0 in row.efa_cards else [])
    assert all(s.device_index == 0 for s in slots if s.network_card_index != 0)


@pytest.mark.parametrize("instance_type", CARD0_EFA_TYPES)
def test_efa_primary_layout(instance_type: str) -> None:
    row = CATALOG[instance_type]
    slots = efa_interfaces(row, EfaLayout.EFA_PRIMARY)
    _check_common(row, EfaLayout.EFA_PRIMARY)
    assert slots[0].interface_type is InterfaceType.EFA
    assert len(slots) == row.max_efa_interfaces
    assert all(s.device_index == 0 for s in slots)
    assert _subnet_ips(slots) == 1


@pytest.mark.parametrize("instance_type", sorted(set(EFA_TYPES) - set(CARD0_EFA_TYPES)))
def test_efa_primary_refused_without_efa_on_card_0(instance_type: str) -> None:
    row = CATALOG[instance_type]
    assert not _supports(row, EfaLayout.EFA_PRIMARY)
    with pytest.raises(ValueError, match=r"\(card 0 is ENA-only\); use ena_primary"):
        efa_interfaces(row, EfaLayout.EFA_PRIMARY)


def test_p6_b300_puts_efa_on_cards_1_to_16_behind_an_ena_only_card_0() -> None:
    # AWS engineering in aws/aws-parallelcluster #7143: card 0 supports ENA only, EFA is on cards 1-16.
    row = CATALOG["p6-b300.48xlarge"]
    slots = efa_interfaces(row, EfaLayout.ENA_PRIMARY)
    assert [(s.network_card_index, s.device_index, s.interface_type) for s in slots[:2]] == [
        (0, 0, InterfaceType.ENA),
        (1, 0, InterfaceType.EFA_ONLY),
    ]
    assert sorted(s.network_card_index for s in slots if s.has_efa) == list(range(1, 17))
    with pytest.raises(ValidationError, match="card 0 is ENA-only"):
        _spec("p6-b300.48xlarge", EfaLayout.EFA_PRIMARY)


def test_the_catalog_has_a_type_with_sparse_efa_cards() -> None:
    # Keeps the sparse-card path (p6e-gb200: cards 1, 5, 9, 13) covered by the tests above.
    assert CARD0_EFA_TYPES != EFA_TYPES


@pytest.mark.parametrize(
    ("instance_type", "count"),
    [("p4d.24xlarge", 4), ("p5.48xlarge", 32), ("p5en.48xlarge", 16), ("p6-b200.48xlarge", 8), ("trn1n.32xlarge", 16)],
)
def test_known_counts(instance_type: str, count: int) -> None:
    for layout in EfaLayout:
        if _supports(CATALOG[instance_type], layout):
            assert efa_interface_count(efa_interfaces(CATALOG[instance_type], layout)) == count


def test_types_without_efa_are_refused() -> None:
    for row in CATALOG.values():
        if not row.supports_efa:
            for layout in EfaLayout:
                assert not _supports(row, layout)
                with pytest.raises(ValueError, match="has no EFA"):
                    efa_interfaces(row, layout)


def _spec(instance_type: str, layout: EfaLayout) -> GpuNodeGroupSpec:
    return GpuNodeGroupSpec.model_validate(
        {
            "name": "g",
            "instance_type": instance_type,
            "availability_zone": "us-east-1a",
            "min_size": 0,
            "desired_size": 0,
            "max_size": 2,
            "efa_layout": layout.value,
        }
    )


@given(instance_type=st.sampled_from(sorted(CATALOG)), layout=st.sampled_from(list(EfaLayout)))
def test_schema_and_layout_agree(instance_type: str, layout: EfaLayout) -> None:
    """Over the catalog: a spec the schema accepts always has a layout, and the schema refuses the rest."""
    row = CATALOG[instance_type]
    if _supports(row, layout):
        spec = _spec(instance_type, layout)
        slots = efa_interfaces(row, spec.efa_layout)
        assert efa_interface_count(slots) == row.max_efa_interfaces
        assert slots[0].is_primary and slots[0].interface_type is not InterfaceType.EFA_ONLY
    else:
        with pytest.raises(ValidationError):
            _spec(instance_type, layout)

"""Pure EFA interface layouts: which network interfaces a GPU launch template attaches, on which card.

Two layouts, both with one EFA device per EFA-capable network card, so the EFA count always equals the
catalog's `max_efa_interfaces`:

- ENA_PRIMARY (AWS's current guidance): an ENA `interface` as the primary (card 0, device 0); an `efa-only`
  interface at card 0 device 1 when card 0 supports EFA; then `efa-only` at device 0 of every further EFA
  card. Source: AWS EC2 User Guide, "Maximize network bandwidth on Amazon EC2 instances with multiple network
  cards" (efa-acc-inst-types): "If the network card index 0 supports EFA, create an EFA-only network
  interface for network card index 0, device index 1", and "You can't use an EFA-only network interface as
  the primary network interface".
- EFA_PRIMARY (legacy, as pulumi-eks and terraform-aws-eks build it): an `efa` interface (EFA with ENA) as the
  primary on card 0, `efa-only` at device 0 of every other EFA card. It needs EFA on card 0.

`efa-only` interfaces take no subnet IP; `interface` and `efa` take one each. ENA_PRIMARY therefore costs one
IP per node, while EFA_PRIMARY's single `efa` primary costs one too (its secondaries are `efa-only`); what
exhausts subnets is the older habit of making every interface `efa`, which trainstack never builds.

Card indices come from `InstanceType.efa_cards`, which is not always 0..n-1 (p6-b300: cards 1-16, card 0 is
ENA-only; p6e-gb200: 1, 5, 9, 13). Whether a layout fits a type is decided once, by
`stacks.schema.efa_layout_problem`. Interfaces are attached only at launch: changing the layout replaces the
nodes.

No Pulumi import: the schema's rules, the plan and the policy pack can all use these functions.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from stacks.catalog import InstanceType
from stacks.schema import EfaLayout, efa_layout_problem


class InterfaceType(StrEnum):
    """EC2 `InterfaceType` values for launch-template network interfaces."""

    ENA = "interface"  # ENA only: an IP, no EFA device
    EFA = "efa"  # EFA with ENA: an IP and an EFA device
    EFA_ONLY = "efa-only"  # EFA device only: no IP, cannot be the primary


@dataclass(frozen=True)
class NetworkInterfaceSlot:
    """One network interface of the launch template, before wiring (security groups come from the component)."""

    network_card_index: int
    device_index: int
    interface_type: InterfaceType
    delete_on_termination: bool = True

    @property
    def is_primary(self) -> bool:
        """Card 0, device 0: the interface the node's IP and the EKS cluster traffic use."""
        return self.network_card_index == 0 and self.device_index == 0

    @property
    def has_efa(self) -> bool:
        return self.interface_type in (InterfaceType.EFA, InterfaceType.EFA_ONLY)


def efa_interfaces(row: InstanceType, layout: EfaLayout) -> list[NetworkInterfaceSlot]:
    """The launch template's network interfaces for an EFA group of `row`, primary first.

    Raises ValueError with `efa_layout_problem`'s message when the layout does not fit the type.
    """
    if problem := efa_layout_problem(row, layout):
        raise ValueError(problem)
    cards = row.efa_cards  # distinct and within the type's network cards (checked by the catalog)
    if layout is EfaLayout.EFA_PRIMARY:
        slots = [NetworkInterfaceSlot(0, 0, InterfaceType.EFA)]
        slots += [NetworkInterfaceSlot(card, 0, InterfaceType.EFA_ONLY) for card in cards[1:]]
        return slots
    slots = [NetworkInterfaceSlot(0, 0, InterfaceType.ENA)]
    for card in cards:
        # Card 0's device 0 is the ENA primary, so its EFA device goes on device 1.
        slots.append(NetworkInterfaceSlot(card, 1 if card == 0 else 0, InterfaceType.EFA_ONLY))
    return slots


def efa_interface_count(slots: list[NetworkInterfaceSlot]) -> int:
    """EFA devices a node gets from these interfaces (what the EFA device plugin advertises)."""
    return sum(1 for slot in slots if slot.has_efa)

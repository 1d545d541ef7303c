"""The EFA and FSx layout rules one check at a time: each case breaks exactly one thing and asserts the message
of the check that must see it, so switching any one check off fails a test (the other checks of the same rule
cannot stand in for it). Cases start from the shared staging recording (p5.48xlarge, 32 EFA cards 0..31)."""

from __future__ import annotations

from typing import Any

import pytest

from stacks.catalog import lookup
from tests.conftest import recording
from tests.policy.helpers import messages, mutated, scenario
from trainstack.engine import Recording

GPU_LT = "-gpu-p5-lt"
GPU_NG = "-gpu-p5-ng"
FSX = "aws:fsx/lustreFileSystem:LustreFileSystem"


def efa_layout(cards: list[int], primary_type: str = "efa") -> list[dict[str, Any]]:
    """One EFA interface per card, the first at device 0 (the primary on card 0), the rest at device 1."""
    return [
        {
            "networkCardIndex": card,
            "deviceIndex": 0 if i == 0 else 1,
            "interfaceType": primary_type if i == 0 else "efa-only",
        }
        for i, card in enumerate(cards)
    ]


def with_layout(instance_type: str, nics: list[dict[str, Any]]) -> Recording:
    source = mutated(recording("staging"), GPU_NG, lambda i: i.update(instanceTypes=[instance_type]))
    return mutated(source, GPU_LT, lambda i: i.update(networkInterfaces=nics))


def test_the_shipped_layout_passes() -> None:
    assert messages("efa-interface-count", recording("staging")) == []


def test_efa_only_primary_is_reported_by_its_own_check() -> None:
    """The right count on the right cards, only the primary interface efa-only: only the primary check sees it."""
    cards = list(lookup("p5.48xlarge").efa_cards)
    found = messages("efa-interface-count", with_layout("p5.48xlarge", efa_layout(cards, primary_type="efa-only")))
    assert len(found) == 1 and "primary interface (card 0, device 0) is efa-only" in found[0]


def test_efa_only_on_a_secondary_device_of_card_0_is_fine() -> None:
    nics = efa_layout(list(lookup("p5.48xlarge").efa_cards))
    nics[0] = {"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "efa"}
    nics.append({"networkCardIndex": 0, "deviceIndex": 1, "interfaceType": "interface"})
    assert messages("efa-interface-count", with_layout("p5.48xlarge", nics)) == []


@pytest.mark.parametrize("instance_type", ["p6-b300.48xlarge", "p6e-gb200.36xlarge"])
def test_right_count_on_the_wrong_cards(instance_type: str) -> None:
    """p6-b300 and p6e-gb200 take EFA on cards other than 0..N-1: N interfaces on 0..N-1 is the wrong layout."""
    facts = lookup(instance_type)
    assert facts.efa_cards != tuple(range(facts.max_efa_interfaces))  # the case this test is about
    wrong = list(range(facts.max_efa_interfaces))
    found = messages("efa-interface-count", with_layout(instance_type, efa_layout(wrong)))
    assert len(found) == 1 and f"uses network cards {wrong}" in found[0], found
    # card 0 is ENA-only there: the primary carries IP (interface), the EFA cards take efa-only
    right = [{"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"}] + [
        {"networkCardIndex": c, "deviceIndex": 0, "interfaceType": "efa-only"} for c in facts.efa_cards
    ]
    assert messages("efa-interface-count", with_layout(instance_type, right)) == []


def test_p5_interfaces_shifted_off_card_0_are_the_wrong_cards() -> None:
    facts = lookup("p5.48xlarge")
    shifted = [c + 1 for c in facts.efa_cards]
    found = messages("efa-interface-count", with_layout("p5.48xlarge", efa_layout(shifted)))
    assert any("uses network cards" in m for m in found)
    assert not any("EFA interfaces;" in m for m in found)  # the count is right


def test_two_interfaces_on_one_card_is_its_own_finding() -> None:
    cards = list(lookup("p5.48xlarge").efa_cards)
    cards[-1] = cards[-2]
    found = messages("efa-interface-count", with_layout("p5.48xlarge", efa_layout(cards)))
    assert len(found) == 1 and "two EFA interfaces on one network card" in found[0]


def test_too_few_interfaces_report_the_count_only() -> None:
    cards = list(lookup("p5.48xlarge").efa_cards)[:-1]
    found = messages("efa-interface-count", with_layout("p5.48xlarge", efa_layout(cards)))
    assert len(found) == 1 and "has 31 EFA interfaces; p5.48xlarge supports 32" in found[0]


# --- FSx EFA prerequisites: the self-traffic rule needs both directions ------------------------------------


def _efa_sg_rule(direction: str) -> str:
    return f"-network-efa-self-{direction}"


@pytest.mark.parametrize("missing", ["ingress", "egress"])
@pytest.mark.e2e
def test_fsx_efa_needs_self_traffic_in_both_directions(missing: str) -> None:
    source = scenario("staging-fsx-efa")
    assert messages("fsx-efa-prereqs", source) == []
    fs = next(r for r in source.resources if r.type == FSX)
    groups = set(fs.property_dependencies.get("securityGroupIds", ()))
    # drop the one direction from every security group of the file system
    kept = [
        r
        for r in source.resources
        if not (
            r.type in ("aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule",)
            and missing == "egress"
            and set(r.property_dependencies.get("securityGroupId", ())) & groups
        )
        and not (
            r.type in ("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule",)
            and missing == "ingress"
            and set(r.property_dependencies.get("securityGroupId", ())) & groups
        )
    ]
    assert len(kept) < len(source.resources), "the file system's security groups have no such rules"
    broken = Recording(stack=source.stack, preview=source.preview, resources=kept, outputs=source.outputs)
    found = messages("fsx-efa-prereqs", broken)
    assert any("allows all traffic to and from itself" in m for m in found), found


def test_one_security_group_that_allows_all_self_traffic_is_enough() -> None:
    """The EFA interfaces may carry more groups (here the workload group, with no self rules): one group that
    allows all traffic to and from itself is what EFA needs, not every group."""
    workload = next(r.urn for r in recording("staging").resources if r.name.endswith("workload-sg"))

    def add_workload(deps: dict[str, tuple[str, ...]]) -> None:
        deps["networkInterfaces"] = (*deps["networkInterfaces"], workload)

    source = mutated(recording("staging"), GPU_LT, dependencies=add_workload)
    assert messages("efa-sg-self-all", source) == []
    without_efa_group = mutated(
        source,
        GPU_LT,
        dependencies=lambda deps: deps.update(
            networkInterfaces=tuple(d for d in deps["networkInterfaces"] if "efa-sg" not in d)
        ),
    )
    assert any("allows all traffic to and from itself" in m for m in messages("efa-sg-self-all", without_efa_group))


def test_a_group_with_two_types_is_reported_for_the_count_alone() -> None:
    """Two types, the first without EFA: one finding (exactly one type), not a second one about the first type."""
    source = mutated(recording("staging"), GPU_NG, lambda i: i.update(instanceTypes=["g5.2xlarge", "p5.48xlarge"]))
    found = messages("efa-instance-supported", source)
    assert len(found) == 1 and "an EFA group needs exactly one" in found[0], found


@pytest.mark.parametrize("types", [["g5.2xlarge", "p5.48xlarge"], ["p9.48xlarge"]], ids=["mixed", "unknown"])
def test_the_count_leaves_mixed_or_unknown_types_to_efa_instance_supported(types: list[str]) -> None:
    """No layout to count against: the interface count says nothing (and does not crash); the type rule reports."""
    source = mutated(recording("staging"), GPU_NG, lambda i: i.update(instanceTypes=types))
    assert messages("efa-interface-count", source) == []
    assert messages("efa-instance-supported", source)

"""The whole program on the prod stack, and on copies of it with only the GPU instance type swapped."""

from __future__ import annotations

from typing import Any

import pytest

from components.gpu.efa import efa_interfaces
from stacks.catalog import CATALOG, efa_capable
from tests import tiers
from tests.conftest import edited_config, program_recording, recording, stack_config
from trainstack.engine import Recording

LT = "aws:ec2/launchTemplate:LaunchTemplate"
NG = "aws:eks/nodeGroup:NodeGroup"
PG = "aws:ec2/placementGroup:PlacementGroup"
SUBNET = "aws:ec2/subnet:Subnet"
HELM_RELEASE = "kubernetes:helm.sh/v3:Release"

# Issue 3, "Done when": the interface count each swap must plan.
SWAPS = {"p4d.24xlarge": 4, "p5en.48xlarge": 16, "p6-b200.48xlarge": 8, "trn1n.32xlarge": 16}


@tiers.cache
def swapped(instance_type: str) -> Recording:
    def edit(raw: dict[str, Any]) -> None:
        raw["gpu_node_groups"][0]["instance_type"] = instance_type  # the only edit

    # Shared with the contract tier's catalog sweep (tests/stack/test_contracts_aws.py): one run per type.
    return program_recording(edited_config("prod", edit), "prod")


def gpu_launch_template(rec: Recording) -> dict[str, Any]:
    (template,) = [r for r in rec.by_type(LT) if r.name.startswith("gpu-")]
    return template.inputs


def gpu_node_group(rec: Recording) -> dict[str, Any]:
    (node_group,) = [r for r in rec.by_type(NG) if r.name.startswith("gpu-")]
    return node_group.inputs


def efa_count(template: dict[str, Any]) -> int:
    return sum(i["interfaceType"] in ("efa", "efa-only") for i in template["networkInterfaces"])


def test_prod_plans_every_p5_interface_in_one_subnet_with_the_gpu_taint() -> None:
    rec = recording("prod")
    group = stack_config("prod").gpu_node_groups[0]
    template = gpu_launch_template(rec)
    assert efa_count(template) == 32
    assert template["networkInterfaces"][0]["interfaceType"] == "interface"
    node_group = gpu_node_group(rec)
    (subnet_id,) = node_group["subnetIds"]
    (subnet,) = [s for s in rec.by_type(SUBNET) if s.id == subnet_id]
    assert subnet.inputs["availabilityZone"] == group.availability_zone
    assert {"key": "nvidia.com/gpu", "value": "true", "effect": "NO_SCHEDULE"} in node_group["taints"]
    # The prod ODCR was made without a placement group: none is created or referenced.
    assert rec.by_type(PG) == [] and "placement" not in template
    assert template["capacityReservationSpecification"]["capacityReservationTarget"] == {
        "capacityReservationId": group.capacity.reservation_id
    }
    assert rec.outputs["gpu_node_groups"][group.name]["efa_interfaces_per_node"] == 32


def test_staging_on_demand_efa_group_gets_a_cluster_placement_group() -> None:
    rec = recording("staging")
    (group,) = rec.by_type(PG)
    assert group.inputs["strategy"] == "cluster"
    assert gpu_launch_template(rec)["placement"] == {"groupName": group.inputs["name"]}


@pytest.mark.parametrize(("instance_type", "expected"), sorted(SWAPS.items()))
@pytest.mark.e2e
def test_swapping_only_the_instance_type_plans_its_full_interface_count(instance_type: str, expected: int) -> None:
    rec = swapped(instance_type)
    template = gpu_launch_template(rec)
    assert efa_count(template) == expected == CATALOG[instance_type].max_efa_interfaces
    cards = [i["networkCardIndex"] for i in template["networkInterfaces"] if i["interfaceType"] == "efa-only"]
    assert len(set(cards)) == len(cards) == expected
    layout = efa_interfaces(CATALOG[instance_type], stack_config("prod").gpu_node_groups[0].efa_layout)
    assert [i["networkCardIndex"] for i in template["networkInterfaces"]] == [s.network_card_index for s in layout]
    node_group = gpu_node_group(rec)
    assert node_group["instanceTypes"] == [instance_type]
    assert len(node_group["subnetIds"]) == 1
    neuron = CATALOG[instance_type].accelerator.value == "neuron"
    assert node_group["amiType"] == ("AL2023_x86_64_NEURON" if neuron else "AL2023_x86_64_NVIDIA")
    assert node_group["taints"][0]["key"] == ("aws.amazon.com/neuron" if neuron else "nvidia.com/gpu")


# Issue 34, "Done when": a prod swap to each catalog type plans (the four above also check their layouts; prod's own
# p5.48xlarge is the first test). A type without EFA is refused in an EFA group (tests/unit/test_config_errors.py).
@pytest.mark.parametrize("instance_type", sorted(set(efa_capable()) - set(SWAPS) - {"p5.48xlarge"}))
@pytest.mark.e2e
def test_prod_plans_with_every_catalog_type_swapped_in(instance_type: str) -> None:
    row = CATALOG[instance_type]
    rec = swapped(instance_type)
    node_group = gpu_node_group(rec)
    assert node_group["instanceTypes"] == [instance_type]
    template = gpu_launch_template(rec)
    assert efa_count(template) == row.max_efa_interfaces
    assert rec.outputs["gpu_node_groups"]["p5-train"]["efa_interfaces_per_node"] == row.max_efa_interfaces
    # The GPU taint stays, whatever the type.
    assert node_group["taints"][0]["key"] == row.device_resource


@pytest.mark.e2e
def test_swapping_to_grace_p6e_gb200_plans_the_arm_nvidia_ami_and_four_efa_cards() -> None:
    # p6e-gb200 runs on NVIDIA Grace (arm64): the x86_64 AMI would never boot it. The instance type is the
    # only edit, so the AMI must follow from the catalog's architecture.
    assert CATALOG["p6e-gb200.36xlarge"].architecture == "arm64"
    rec = swapped("p6e-gb200.36xlarge")
    node_group = gpu_node_group(rec)
    assert node_group["amiType"] == "AL2023_ARM_64_NVIDIA"
    assert node_group["instanceTypes"] == ["p6e-gb200.36xlarge"]
    template = gpu_launch_template(rec)
    assert efa_count(template) == 4
    efa_cards = [i["networkCardIndex"] for i in template["networkInterfaces"] if i["interfaceType"] == "efa-only"]
    assert efa_cards == [1, 5, 9, 13]
    primary = template["networkInterfaces"][0]
    assert (primary["interfaceType"], primary["networkCardIndex"]) == ("interface", 0)  # ENA primary on card 0
    assert template["blockDeviceMappings"][0]["deviceName"] == "/dev/xvda"
    # The ARM NVIDIA AMI ships the driver and toolkit too: the GPU Operator must not install its own.
    (release,) = [r for r in rec.by_type(HELM_RELEASE) if r.inputs["chart"] == "gpu-operator"]
    assert release.inputs["values"]["driver"]["enabled"] is False
    assert release.inputs["values"]["toolkit"]["enabled"] is False
    assert rec.outputs["gpu_node_groups"]["p5-train"]["efa_interfaces_per_node"] == 4

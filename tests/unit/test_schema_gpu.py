"""A GPU node group's own rules, each at its boundary and alone (the other rules satisfied): the AMI family and what
it implies, reserved capacity and its settings, sizes, EFA and its layout, hugepages, labels, custom AMI pins,
placement, extra instance types; and the facts the components read off a group (placement group, selector)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from pydantic import ValidationError

from stacks.catalog import CATALOG, Accelerator
from stacks.schema.gpu import (
    EFA_HUGEPAGES_2MI,
    AmiFamily,
    CapacitySpec,
    CapacityType,
    EfaLayout,
    GpuNodeGroupSpec,
    ami_families_for,
    default_ami_family,
    efa_layout_problem,
    effective_ami_family,
    eks_reserved_label_prefix,
)

RESERVATION = {"reservation_id": "cr-0123456789abcdef0", "reservation_availability_zone": "us-east-1a"}
ODCR = {"type": "reservation", **RESERVATION}
BLOCK = {"type": "capacity_block", **RESERVATION}
WINDOW = {"starts_at": "2026-12-01T11:30:00Z", "ends_at": "2026-12-08T11:30:00Z"}


def _group(**fields: Any) -> GpuNodeGroupSpec:
    """A valid EFA group of p5.48xlarge; `fields` change one thing."""
    base = {
        "name": "train",
        "instance_type": "p5.48xlarge",
        "availability_zone": "us-east-1a",
        "min_size": 0,
        "desired_size": 0,
        "max_size": 2,
    }
    return GpuNodeGroupSpec.model_validate(base | fields)


def _plain(**fields: Any) -> GpuNodeGroupSpec:
    """A valid group without EFA."""
    return _group(efa_enabled=False, **fields)


def _refused(message: str, make: Any = _group, **fields: Any) -> str:
    with pytest.raises(ValidationError, match=re.escape(message)) as caught:
        make(**fields)
    return str(caught.value)


# --------------------------------------------------------------------------------------------------- AMI families


@pytest.mark.parametrize(
    ("family", "architecture", "accelerator", "bottlerocket"),
    [
        (AmiFamily.AL2023_NVIDIA, "x86_64", Accelerator.NVIDIA, False),
        (AmiFamily.AL2023_ARM_NVIDIA, "arm64", Accelerator.NVIDIA, False),
        (AmiFamily.BOTTLEROCKET_NVIDIA, "x86_64", Accelerator.NVIDIA, True),
        (AmiFamily.BOTTLEROCKET_ARM_NVIDIA, "arm64", Accelerator.NVIDIA, True),
        (AmiFamily.AL2023_NEURON, "x86_64", Accelerator.NEURON, False),
    ],
)
def test_each_ami_family_names_its_cpu_accelerator_and_image(
    family: AmiFamily, architecture: str, accelerator: Accelerator, bottlerocket: bool
) -> None:
    assert (family.architecture, family.accelerator, family.bottlerocket) == (architecture, accelerator, bottlerocket)


@pytest.mark.parametrize(
    ("instance_type", "families"),
    [
        ("p5.48xlarge", [AmiFamily.AL2023_NVIDIA, AmiFamily.BOTTLEROCKET_NVIDIA]),
        ("p6e-gb200.36xlarge", [AmiFamily.AL2023_ARM_NVIDIA, AmiFamily.BOTTLEROCKET_ARM_NVIDIA]),
        ("trn1.32xlarge", [AmiFamily.AL2023_NEURON]),
    ],
)
def test_the_families_that_fit_a_type_come_al2023_first(instance_type: str, families: list[AmiFamily]) -> None:
    row = CATALOG[instance_type]
    assert ami_families_for(row) == families
    assert default_ami_family(row) == families[0]
    assert _group(instance_type=instance_type).ami_family == families[0]  # left out, it follows the type


def test_a_family_that_does_not_fit_the_type_is_refused_at_ami_family_with_the_valid_ones() -> None:
    with pytest.raises(ValidationError) as caught:
        _group(instance_type="trn1.32xlarge", ami_family="AL2023_x86_64_NVIDIA", hugepages_2mi=EFA_HUGEPAGES_2MI)
    [error] = caught.value.errors()
    assert error["loc"] == ("ami_family",)
    assert "does not fit trn1.32xlarge (neuron, x86_64); valid: AL2023_x86_64_NEURON" in error["msg"]
    assert _group(ami_family="BOTTLEROCKET_x86_64_NVIDIA").ami_family is AmiFamily.BOTTLEROCKET_NVIDIA


def test_an_unknown_type_is_refused_once_at_instance_type() -> None:
    with pytest.raises(ValidationError) as caught:
        _group(instance_type="p9.48xlarge", ami_family="AL2023_x86_64_NVIDIA", hugepages_2mi=EFA_HUGEPAGES_2MI)
    assert [e["loc"] for e in caught.value.errors()] == [("instance_type",)]


@pytest.mark.parametrize(
    ("families", "hyperpod", "effective"),
    [
        ([], False, None),
        ([AmiFamily.AL2023_NEURON], False, None),
        ([], True, AmiFamily.AL2023_NVIDIA),
        ([AmiFamily.BOTTLEROCKET_ARM_NVIDIA], False, AmiFamily.BOTTLEROCKET_ARM_NVIDIA),
        ([AmiFamily.BOTTLEROCKET_NVIDIA, AmiFamily.AL2023_NEURON], False, AmiFamily.BOTTLEROCKET_NVIDIA),
        ([AmiFamily.BOTTLEROCKET_NVIDIA, AmiFamily.BOTTLEROCKET_ARM_NVIDIA], False, AmiFamily.BOTTLEROCKET_NVIDIA),
        ([AmiFamily.BOTTLEROCKET_NVIDIA, AmiFamily.AL2023_ARM_NVIDIA], False, AmiFamily.AL2023_NVIDIA),
        ([AmiFamily.BOTTLEROCKET_NVIDIA], True, AmiFamily.AL2023_NVIDIA),
    ],
)
def test_the_gpu_operator_release_is_configured_for_one_family(
    families: list[AmiFamily], hyperpod: bool, effective: AmiFamily | None
) -> None:
    assert effective_ami_family(families, hyperpod_nvidia=hyperpod) is effective


# ------------------------------------------------------------------------------------------------------ capacity


@pytest.mark.parametrize("capacity", [{}, {"type": "spot"}, ODCR, BLOCK, {**ODCR, "reservation_placement_group": "pg"}])
def test_capacity_with_exactly_its_settings_is_accepted(capacity: dict[str, Any]) -> None:
    spec = CapacitySpec.model_validate(capacity)
    assert spec.reserved is (spec.type in (CapacityType.RESERVATION, CapacityType.CAPACITY_BLOCK))
    assert spec.reserved is (capacity.get("type") in ("reservation", "capacity_block"))


@pytest.mark.parametrize(
    "setting",
    [
        {"reservation_id": "cr-0123456789abcdef0"},
        {"reservation_availability_zone": "us-east-1a"},
        {"reservation_placement_group": "pg"},
    ],
)
@pytest.mark.parametrize("kind", ["on_demand", "spot"])
def test_unreserved_capacity_takes_no_reservation_setting_alone(kind: str, setting: dict[str, str]) -> None:
    with pytest.raises(ValidationError, match=f"capacity type {kind} takes no reservation_\\* settings"):
        CapacitySpec.model_validate({"type": kind, **setting})


def test_a_capacity_block_takes_no_placement_group_but_a_reservation_does() -> None:
    with pytest.raises(ValidationError, match="capacity_block takes no reservation_placement_group"):
        CapacitySpec.model_validate({**BLOCK, "reservation_placement_group": "pg"})
    reservation = CapacitySpec.model_validate({**ODCR, "reservation_placement_group": "pg"})
    assert reservation.reservation_placement_group == "pg"


def test_only_a_capacity_block_takes_a_window() -> None:
    assert CapacitySpec.model_validate({**BLOCK, "window": WINDOW}).window is not None
    for capacity in (ODCR, {"type": "on_demand"}):
        with pytest.raises(ValidationError, match=f"capacity type {capacity['type']} takes no window"):
            CapacitySpec.model_validate({**capacity, "window": WINDOW})


def test_a_capacity_kept_inside_its_group() -> None:
    assert _group(capacity=ODCR).capacity == CapacitySpec.model_validate(ODCR)


# ---------------------------------------------------------------------------------------------------------- sizes


@pytest.mark.parametrize(("low", "start", "high"), [(0, 0, 2), (2, 2, 2), (0, 2, 2), (1, 2, 3)])
def test_sizes_in_order_are_accepted_equal_ones_included(low: int, start: int, high: int) -> None:
    group = _group(min_size=low, desired_size=start, max_size=high)
    assert (group.min_size, group.desired_size, group.max_size) == (low, start, high)


@pytest.mark.parametrize(("low", "start", "high"), [(2, 1, 3), (0, 3, 2)])
def test_sizes_out_of_order_are_refused_with_the_three_values(low: int, start: int, high: int) -> None:
    _refused(
        f"need min_size <= desired_size <= max_size, got {low}, {start}, {high}",
        min_size=low,
        desired_size=start,
        max_size=high,
    )


# ------------------------------------------------------------------------------------------------------------ EFA


def test_efa_on_a_type_without_it_is_refused_and_the_type_is_fine_without_efa() -> None:
    _refused("efa_enabled but g6e.xlarge has no EFA; EFA-capable types:", instance_type="g6e.xlarge")
    assert _plain(instance_type="g6e.xlarge", efa_layout="efa_primary").efa_enabled is False


def test_efa_needs_two_nodes_at_most_and_a_one_node_group_without_efa_is_fine() -> None:
    _refused("efa_enabled with max_size 1: EFA is for multi-node jobs", max_size=1)
    assert _group(max_size=2).max_size == 2
    assert _plain(max_size=1).max_size == 1


def test_spot_is_refused_for_efa_and_accepted_without() -> None:
    _refused("spot capacity with efa_enabled", capacity={"type": "spot"})
    assert _plain(capacity={"type": "spot"}).capacity.type is CapacityType.SPOT


def test_an_efa_primary_needs_efa_on_card_0_only_when_efa_is_on() -> None:
    message = _refused("efa_layout efa_primary needs EFA on network card 0", instance_type="p6-b300.48xlarge",
                       efa_layout="efa_primary")  # fmt: skip
    assert "p6-b300.48xlarge has EFA on cards [1, 2, 3" in message
    assert _plain(instance_type="p6-b300.48xlarge", efa_layout="efa_primary").efa_layout is EfaLayout.EFA_PRIMARY
    assert _group(efa_layout="efa_primary").efa_layout is EfaLayout.EFA_PRIMARY  # p5: EFA on card 0


def test_efa_layout_problem_names_a_type_without_efa_first() -> None:
    why = efa_layout_problem(CATALOG["g6e.xlarge"], EfaLayout.ENA_PRIMARY)
    assert why is not None and why.startswith("g6e.xlarge has no EFA")
    assert efa_layout_problem(CATALOG["p6-b300.48xlarge"], EfaLayout.ENA_PRIMARY) is None


# ------------------------------------------------------------------------------------------------------ hugepages


def test_hugepages_default_to_efas_and_to_none_without_efa() -> None:
    assert _group().hugepages_2mi == EFA_HUGEPAGES_2MI
    assert _plain().hugepages_2mi == 0


def test_hugepages_without_efa_are_refused_and_zero_is_fine() -> None:
    _refused("hugepages_2mi 1 without EFA", _plain, hugepages_2mi=1)
    assert _plain(hugepages_2mi=0).hugepages_2mi == 0


def test_hugepages_up_to_a_quarter_of_memory_are_accepted_and_one_page_more_is_refused() -> None:
    # p5.4xlarge has 256 GiB: a quarter is 64 GiB, 32768 pages of 2 MiB.
    assert _group(instance_type="p5.4xlarge", hugepages_2mi=32768).hugepages_2mi == 32768
    _refused(
        "hugepages_2mi 32769 reserves 64.0 GiB, over 25% of p5.4xlarge's 256 GiB memory; use at most 32768",
        instance_type="p5.4xlarge",
        hugepages_2mi=32769,
    )


# --------------------------------------------------------------------------------------------------------- labels

STOP = "the GPU Operator runs the device plugin, and this label stops it"


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("nvidia.com/gpu.deploy.operands", "false"),
        ("nvidia.com/gpu.workload.config", "vm-passthrough"),
        ("nvidia.com/gpu.deploy.device-plugin", "false"),
    ],
)
def test_a_label_that_stops_the_device_plugin_is_refused_on_al2023_nvidia_only(key: str, value: str) -> None:
    _refused(f"labels {key}={value}: on an AL2023 NVIDIA AMI", labels={key: value})
    assert _group(ami_family="BOTTLEROCKET_x86_64_NVIDIA", labels={key: value}).labels == {key: value}
    assert _group(instance_type="trn1.32xlarge", labels={key: value}).labels == {key: value}


def test_the_device_plugin_label_set_to_true_is_accepted() -> None:
    labels = {"nvidia.com/gpu.deploy.device-plugin": "true", "nvidia.com/gpu.deploy.dcgm-exporter": "false"}
    assert _group(labels=labels).labels == labels


@pytest.mark.parametrize("key", ["trainstack.io/node-group", "nvidia.com/gpu.present", "vpc.amazonaws.com/efa.present"])
def test_a_label_trainstack_sets_itself_is_refused(key: str) -> None:
    _refused(f"labels may not set ['{key}']: trainstack sets these itself", labels={key: "x"})


def test_a_label_value_of_63_characters_is_accepted_and_64_refused() -> None:
    assert _group(labels={"example.com/team": "v" * 63}).labels["example.com/team"] == "v" * 63
    with pytest.raises(ValidationError, match="63"):
        _group(labels={"example.com/team": "v" * 64})


def test_a_prefixed_label_key_of_63_characters_in_all_is_accepted_and_64_refused() -> None:
    # Kubernetes takes a 253-character prefix and a 63-character name; EKS counts the whole key (botocore labelKey).
    key = "example.com/" + "k" * 51
    assert len(key) == 63 and _group(labels={key: "v"}).labels == {key: "v"}
    longer = key + "k"
    _refused(f"labels ['{longer}']: EKS takes label keys of 1-63 characters (prefix included)", labels={longer: "v"})


@pytest.mark.parametrize(
    ("key", "prefix"),
    [
        ("node-role.kubernetes.io/gpu", "kubernetes.io/"),
        ("example.k8s.io/tier", "k8s.io/"),
        ("eks.amazonaws.com/capacityType", "eks.amazonaws.com/"),
        ("example.com/team", None),
    ],
)
def test_a_label_under_an_eks_reserved_prefix_is_refused(key: str, prefix: str | None) -> None:
    assert eks_reserved_label_prefix(key) == prefix
    if prefix is None:
        assert _group(labels={key: "x"}).labels == {key: "x"}
    else:
        _refused(f"labels ['{key}']: EKS managed node groups refuse label keys containing", labels={key: "x"})


# ------------------------------------------------------------------------------------------------ custom AMI pins

AMI = "ami-0123456789abcdef0"


def test_a_custom_ami_alone_and_pins_without_one_are_accepted() -> None:
    assert _group(ami_id=AMI).ami_id == AMI
    pinned = _group(ami_release_version="1.35.0-20260915", kubernetes_version="1.35")
    assert (pinned.ami_release_version, pinned.kubernetes_version) == ("1.35.0-20260915", "1.35")


def test_a_custom_ami_refuses_each_pin_alone() -> None:
    release = "1.35.0-20260915"
    _refused(f"ami_release_version {release} with ami_id {AMI}", ami_id=AMI, ami_release_version=release)
    message = _refused(f"kubernetes_version 1.35 with ami_id {AMI}", ami_id=AMI, kubernetes_version="1.35")
    assert "ami_release_version" not in message


def test_a_reserved_group_sits_in_its_reservations_az() -> None:
    elsewhere = {**ODCR, "reservation_availability_zone": "us-east-1b"}
    _refused(
        "availability_zone us-east-1a differs from the reservation's us-east-1b: a reservation fixes the AZ",
        capacity=elsewhere,
    )
    assert _group(capacity=elsewhere, availability_zone="us-east-1b").availability_zone == "us-east-1b"
    assert _group(capacity=BLOCK).capacity.reservation_availability_zone == "us-east-1a"
    assert _plain(availability_zone="us-east-1b").capacity.reservation_availability_zone is None  # nothing reserved


# ------------------------------------------------------------------------------------------------------ placement


def test_cluster_placement_is_refused_on_a_block_and_on_a_reservation_made_without_one() -> None:
    message = _refused("placement cluster on a capacity_block: EC2 co-locates", placement="cluster", capacity=BLOCK)
    assert "made without a placement group" not in message
    _refused("placement cluster on a reservation made without a placement group", placement="cluster", capacity=ODCR)


@pytest.mark.parametrize(
    ("placement", "capacity"),
    [
        ("cluster", {"type": "on_demand"}),
        ("cluster", {**ODCR, "reservation_placement_group": "pg"}),
        ("auto", BLOCK),
        ("auto", ODCR),
        ("none", BLOCK),
    ],
)
def test_placement_that_fits_the_capacity_is_accepted(placement: str, capacity: dict[str, Any]) -> None:
    assert _group(placement=placement, capacity=capacity).placement.value == placement


@pytest.mark.parametrize(
    ("fields", "uses"),
    [
        ({"placement": "none"}, False),
        ({"placement": "cluster", "efa_enabled": False}, True),
        ({"capacity": ODCR}, False),
        ({"capacity": {**ODCR, "reservation_placement_group": "pg"}}, True),
        ({}, True),
        ({"efa_enabled": False}, False),
    ],
)
def test_a_group_uses_a_placement_group_as_its_mode_capacity_and_efa_say(fields: dict[str, Any], uses: bool) -> None:
    assert _group(**fields).uses_placement_group is uses


# ------------------------------------------------------------------------------------------ extra instance types


def test_extra_types_are_refused_with_efa_or_a_reservation_each_named() -> None:
    _refused("extra_instance_types with efa_enabled:", extra_instance_types=["p5e.48xlarge"])
    _refused(
        "extra_instance_types with capacity reservation:",
        _plain,
        capacity=ODCR,
        extra_instance_types=["p5e.48xlarge"],
    )


def test_an_extra_type_as_large_in_every_way_is_accepted_first_type_first() -> None:
    group = _plain(instance_type="g5.16xlarge", extra_instance_types=["g6.16xlarge", "g6e.16xlarge"])
    assert group.instance_types == ["g5.16xlarge", "g6.16xlarge", "g6e.16xlarge"]
    assert _plain().instance_types == ["p5.48xlarge"]


def test_a_repeated_type_is_refused() -> None:
    _refused("extra_instance_types repeat a type", _plain, extra_instance_types=["p5e.48xlarge", "p5e.48xlarge"])
    _refused("extra_instance_types repeat a type", _plain, extra_instance_types=["p5.48xlarge"])


@pytest.mark.parametrize(
    ("instance_type", "extra"),
    [
        ("g5.12xlarge", "g5.16xlarge"),  # 4 GPUs against 1
        ("trn1.32xlarge", "p5.48xlarge"),  # Trainium against NVIDIA
        ("p5.48xlarge", "trn2.48xlarge"),
    ],
)
def test_an_extra_type_of_another_accelerator_or_count_is_refused(instance_type: str, extra: str) -> None:
    _refused(f"extra_instance_types {extra} (", _plain, instance_type=instance_type, extra_instance_types=[extra])
    message = _refused("does not match", _plain, instance_type=instance_type, extra_instance_types=[extra])
    assert "is smaller than" not in message


@pytest.mark.parametrize(
    ("instance_type", "extra", "shown"),
    [
        ("g4dn.16xlarge", "g6e.8xlarge", "(32 vCPUs, 256 GiB, 48 GiB per accelerator)"),  # fewer vCPUs alone
        ("g6e.8xlarge", "g5.16xlarge", "(64 vCPUs, 256 GiB, 24 GiB per accelerator)"),  # less GPU memory alone
        ("g6e.12xlarge", "g6.12xlarge", "(48 vCPUs, 192 GiB, 24 GiB per accelerator)"),
    ],
)
def test_an_extra_type_smaller_in_one_way_is_refused(instance_type: str, extra: str, shown: str) -> None:
    _refused(
        f"extra_instance_types {extra} {shown} is smaller than {instance_type}",
        _plain,
        instance_type=instance_type,
        extra_instance_types=[extra],
    )


# ---------------------------------------------------------------------------------------- what components read


def test_a_group_is_selected_by_its_own_label_unless_it_names_a_selector() -> None:
    assert _group().node_selector == {"trainstack.io/node-group": "train"}
    selector = {"eks.amazonaws.com/nodegroup": "gpu"}
    assert _group(selector=selector).node_selector == selector


def test_max_gpus_is_max_size_times_the_types_accelerators() -> None:
    assert _group(max_size=3).max_gpus == 24
    assert _group(instance_type="trn1.32xlarge", max_size=2).max_gpus == 32


def test_every_rule_reports_in_one_error() -> None:
    message = _refused("need min_size <= desired_size <= max_size", min_size=3, desired_size=1, max_size=1)
    assert "efa_enabled with max_size 1" in message

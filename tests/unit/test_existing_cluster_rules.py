"""Platform-only mode's schema rules (issue 34): what an existing cluster needs described, and what trainstack will
not create beside it."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from stacks.load import ConfigError, load_file, validate_object
from tests.conftest import ROOT, edited_config

EXAMPLE = ROOT / "stacks" / "examples" / "existing-cluster.yaml"


def problems(edit: Any) -> str:
    raw = yaml.safe_load(EXAMPLE.read_text())["config"]["trainstack:cluster"]
    edit(raw)
    try:
        validate_object(raw, "edited example")
    except ConfigError as error:
        return str(error)
    return ""


def test_the_example_is_valid_and_selects_the_owners_labels() -> None:
    stack = load_file(EXAMPLE)
    assert stack.platform_only
    (group,) = stack.gpu_node_groups
    assert group.node_selector == {"eks.amazonaws.com/nodegroup": "p5-efa"}


def test_a_group_trainstack_creates_is_selected_by_its_own_label() -> None:
    (group,) = edited_config("prod", lambda raw: None).gpu_node_groups
    assert group.node_selector == {"trainstack.io/node-group": group.name}


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda raw: raw["network"].pop("existing_vpc"), "existing_cluster needs network.existing_vpc"),
        (lambda raw: raw["gpu_node_groups"][0].pop("selector"), "(p5) needs a selector on an existing cluster"),
        (lambda raw: raw["storage"]["fsx"].pop("existing"), "name the cluster's file system"),
        # One node fewer than the most: nothing trainstack runs would add it, so Kueue would wait on it for ever.
        (
            lambda raw: raw["gpu_node_groups"][0].update(min_size=1),
            "(p5) min_size 1 < max_size 2 on an existing cluster",
        ),
        (
            lambda raw: raw["gpu_node_groups"][0].update(
                capacity={
                    "type": "capacity_block",
                    "reservation_id": "cr-0a1b2c3d4e5f67890",
                    "reservation_availability_zone": "us-east-1a",
                }
            ),
            "(p5) capacity capacity_block on an existing cluster",
        ),
    ],
    ids=["no-vpc", "no-selector", "new-fsx", "growing-group", "capacity-block"],
)
def test_what_an_existing_cluster_refuses(edit: Any, message: str) -> None:
    assert message in problems(edit)


def test_the_examples_describe_groups_of_fixed_size() -> None:
    # The boundary: min_size = max_size plans (the example), one below does not (above).
    (group,) = load_file(EXAMPLE).gpu_node_groups
    assert group.min_size == group.desired_size == group.max_size == 2
    assert problems(lambda raw: None) == ""


def test_a_selector_is_refused_on_a_group_trainstack_creates() -> None:
    def edit(raw: dict[str, Any]) -> None:
        raw["gpu_node_groups"][0]["selector"] = {"example.com/pool": "gpu"}

    with pytest.raises(ConfigError, match=r"selector is for an existing cluster's groups"):
        edited_config("prod", edit)


@pytest.mark.parametrize(
    ("field", "value"),
    [("file_system_id", "fs-123"), ("dns_name", "fs-0123456789abcdef0.example.com"), ("mount_name", "ABCDEFGH")],
)
def test_an_existing_file_system_is_named_as_fsx_names_it(field: str, value: str) -> None:
    assert f"storage.fsx.existing.{field}" in problems(
        lambda raw: raw["storage"]["fsx"]["existing"].update({field: value})
    )

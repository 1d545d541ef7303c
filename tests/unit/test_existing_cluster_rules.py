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
    cluster = load_file(EXAMPLE)
    assert cluster.platform_only
    (group,) = cluster.gpu_node_groups
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
    ],
    ids=["no-vpc", "no-selector", "new-fsx"],
)
def test_what_an_existing_cluster_refuses(edit: Any, message: str) -> None:
    assert message in problems(edit)


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

"""Every committed stack file validates, and says what the issue asks of each environment."""

from pathlib import Path

import pytest

from stacks.schema import CapacityType, Environment, FsxDeploymentType
from tests.conftest import ROOT, STACKS, stack_config, stack_document


def test_the_committed_stacks_are_exactly_dev_staging_prod() -> None:
    files = sorted(p.name for p in (ROOT / "stacks").glob("Pulumi.*.yaml"))
    assert files == sorted(f"Pulumi.{name}.yaml" for name in STACKS)


@pytest.mark.parametrize("name", STACKS)
def test_stack_validates_and_names_its_environment(name: str) -> None:
    config = stack_config(name)
    assert config.environment is Environment(name)
    assert stack_document(name)["config"]["pulumi:disable-default-providers"] == ["*"]


def test_dev_is_small_and_scales_to_zero() -> None:
    dev = stack_config("dev")
    assert all(group.min_size == 0 and group.desired_size == 0 for group in dev.gpu_node_groups)
    assert dev.storage.fsx.deployment_type is FsxDeploymentType.SCRATCH_2
    assert not dev.protect_data


def test_staging_has_two_efa_nodes() -> None:
    staging = stack_config("staging")
    efa = [g for g in staging.gpu_node_groups if g.efa_enabled]
    assert sum(g.desired_size for g in efa) == 2


def test_prod_is_at_least_16_p5_on_a_reservation_with_persistent_2() -> None:
    prod = stack_config("prod")
    p5 = [g for g in prod.gpu_node_groups if g.instance_type == "p5.48xlarge"]
    assert sum(g.desired_size for g in p5) >= 16
    assert all(g.capacity.type is CapacityType.RESERVATION for g in p5)
    assert prod.storage.fsx.deployment_type is FsxDeploymentType.PERSISTENT_2
    assert prod.protect_data
    assert not prod.eks.endpoint_public_access


def test_project_file_points_at_the_stacks_dir() -> None:
    text = (ROOT / "Pulumi.yaml").read_text()
    assert "name: trainstack" in text and "stackConfigDir: stacks" in text
    assert Path(ROOT / "__main__.py").is_file()

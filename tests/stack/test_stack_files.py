"""Every committed stack file validates, and says what the issue asks of each environment."""

from pathlib import Path

import pytest

from stacks.load import environment_of_stack
from stacks.schema import Environment, FsxDeploymentType
from tests.conftest import ROOT, STACKS, stack_config, stack_document


def test_the_stacks_are_discovered_from_the_stack_files() -> None:
    files = sorted(p.name for p in (ROOT / "stacks").glob("Pulumi.*.yaml"))
    assert files == sorted(f"Pulumi.{name}.yaml" for name in STACKS)
    assert {"dev", "staging", "prod"} <= set(STACKS)  # the three the README promises; more may be added


@pytest.mark.parametrize("name", STACKS)
def test_stack_validates_and_names_its_environment(name: str) -> None:
    config = stack_config(name)
    assert config.environment is environment_of_stack(name)
    assert stack_document(name)["config"]["pulumi:disable-default-providers"] == ["*"]


def stacks_of(environment: Environment) -> list[str]:
    return [name for name in STACKS if stack_config(name).environment is environment]


def test_dev_stacks_scale_to_zero_and_protect_nothing() -> None:
    for name in stacks_of(Environment.DEV):
        dev = stack_config(name)
        assert all(group.min_size == 0 and group.desired_size == 0 for group in dev.gpu_node_groups), name
        assert not dev.protect_data, name


def test_prod_stacks_protect_their_data_behind_a_private_endpoint() -> None:
    for name in stacks_of(Environment.PROD):
        prod = stack_config(name)
        assert prod.storage.fsx.deployment_type is FsxDeploymentType.PERSISTENT_2, name
        assert prod.protect_data, name
        assert not prod.eks.endpoint_public_access, name


def test_project_file_points_at_the_stacks_dir() -> None:
    text = (ROOT / "Pulumi.yaml").read_text()
    assert "name: trainstack" in text and "stackConfigDir: stacks" in text
    assert Path(ROOT / "__main__.py").is_file()

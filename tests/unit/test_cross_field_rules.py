"""Rules that span several parts of a stack file: each is refused with the key, the value and what is valid."""

from pathlib import Path

import pytest
import yaml

from stacks.load import FULL_KEY, ConfigError, load_file
from tests.conftest import edited_config, stack_config, stack_document


def problems_of(tmp_path: Path, edit) -> list:
    document = stack_document("prod")
    edit(document["config"][FULL_KEY])
    path = tmp_path / "Pulumi.proposed.yaml"
    path.write_text(yaml.safe_dump(document))
    with pytest.raises(ConfigError) as caught:
        load_file(path)
    return caught.value.problems


def test_validation_nodes_above_the_target_groups_max_size_is_refused(tmp_path: Path) -> None:
    # prod's p5-train group has max_size 16: an NCCL job over 17 nodes would wait forever for a node.
    def edit(cluster: dict) -> None:
        cluster["kubernetes"]["validation"]["nodes"] = 17

    [problem] = problems_of(tmp_path, edit)
    assert problem.key == FULL_KEY
    assert "kubernetes.validation.nodes 17" in problem.message
    assert "max_size 16" in problem.message and "'p5-train'" in problem.message


def test_validation_nodes_are_checked_against_the_named_group(tmp_path: Path) -> None:
    def edit(cluster: dict) -> None:
        small = {**cluster["gpu_node_groups"][0], "name": "p5-small", "min_size": 0, "desired_size": 0}
        small.update(max_size=2, capacity={"type": "on_demand"})
        cluster["gpu_node_groups"].append(small)
        cluster["kubernetes"]["validation"].update(node_group="p5-small", nodes=4)

    [problem] = problems_of(tmp_path, edit)
    assert "kubernetes.validation.nodes 4" in problem.message and "max_size 2" in problem.message
    assert "'p5-small'" in problem.message


def test_validation_nodes_at_max_size_and_disabled_validation_are_accepted(tmp_path: Path) -> None:
    def at_max(cluster: dict) -> None:
        cluster["kubernetes"]["validation"]["nodes"] = cluster["gpu_node_groups"][0]["max_size"]

    def disabled(cluster: dict) -> None:
        cluster["kubernetes"]["validation"].update(enabled=False, nodes=64)

    for edit in (at_max, disabled):
        document = stack_document("prod")
        edit(document["config"][FULL_KEY])
        path = tmp_path / f"Pulumi.{edit.__name__}.yaml"
        path.write_text(yaml.safe_dump(document))
        load_file(path)  # no ConfigError


def test_ami_family_of_the_wrong_architecture_names_key_value_and_choices(tmp_path: Path) -> None:
    # p6e-gb200 is arm64 (NVIDIA Grace): the x86_64 NVIDIA AMI cannot boot it.
    def edit(cluster: dict) -> None:
        cluster["gpu_node_groups"][0].update(instance_type="p6e-gb200.36xlarge", ami_family="AL2023_x86_64_NVIDIA")

    [problem] = problems_of(tmp_path, edit)
    assert problem.key == f"{FULL_KEY}.gpu_node_groups.0.ami_family"
    assert problem.value == "AL2023_x86_64_NVIDIA"
    assert "arm64" in problem.message
    assert "valid: AL2023_ARM_64_NVIDIA, BOTTLEROCKET_ARM_64_NVIDIA" in problem.message


def test_ami_family_of_the_wrong_accelerator_names_the_valid_choice(tmp_path: Path) -> None:
    def edit(cluster: dict) -> None:
        cluster["gpu_node_groups"][0].update(instance_type="trn1n.32xlarge", ami_family="BOTTLEROCKET_x86_64_NVIDIA")

    [problem] = problems_of(tmp_path, edit)
    assert problem.key == f"{FULL_KEY}.gpu_node_groups.0.ami_family"
    assert "valid: AL2023_x86_64_NEURON" in problem.message


def test_validation_may_only_target_an_nvidia_efa_group(tmp_path: Path) -> None:
    def edit(cluster: dict) -> None:
        trn = {**cluster["gpu_node_groups"][0], "name": "trn", "instance_type": "trn1n.32xlarge"}
        trn.update(min_size=0, desired_size=0, max_size=2, capacity={"type": "on_demand"})
        cluster["cost"]["max_gpus"] = 512
        cluster["gpu_node_groups"].append(trn)
        cluster["kubernetes"]["validation"]["node_group"] = "trn"

    [problem] = problems_of(tmp_path, edit)
    assert "kubernetes.validation.node_group 'trn' must name an NVIDIA EFA GPU group" in problem.message
    assert "['p5-train']" in problem.message


def test_validation_targets_the_first_nvidia_efa_group_and_none_on_trainium_only() -> None:
    def trainium(cluster: dict) -> None:
        cluster["gpu_node_groups"][0]["instance_type"] = "trn1n.32xlarge"

    assert edited_config("prod", lambda cluster: None).validation_node_group.name == "p5-train"
    assert edited_config("prod", trainium).validation_node_group is None


def test_private_endpoint_without_interface_endpoints_is_refused_as_trainstack_policy() -> None:
    # Nodes reach a private endpoint inside the VPC with NAT too: the message must not claim EKS needs endpoints.
    with pytest.raises(ConfigError) as caught:
        edited_config("prod", lambda raw: raw["network"].update(interface_endpoints=False))
    text = str(caught.value.render())
    assert "network.interface_endpoints" in text and "trainstack policy" in text
    assert "off NAT" in text


def test_prod_without_checkpoint_lock_or_with_public_data_buckets_is_refused(tmp_path: Path) -> None:
    def edit(cluster: dict) -> None:
        cluster["security"].pop("checkpoint_lock")
        cluster["security"]["data_buckets_vpc_only"] = False

    messages = [p.message for p in problems_of(tmp_path, edit)]
    assert any("security.checkpoint_lock is unset" in m and "GOVERNANCE" in m for m in messages)
    assert any("security.data_buckets_vpc_only is false" in m for m in messages)


def test_root_squash_off_is_dev_only(tmp_path: Path) -> None:
    def edit(cluster: dict) -> None:
        cluster["storage"]["fsx"]["root_squash"] = None

    [problem] = problems_of(tmp_path, edit)
    assert "storage.fsx.root_squash is null" in problem.message and "prod" in problem.message


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("key_administrator_arns", ["arn:aws:iam::444455556666:role/*"]),  # a wildcard would widen who deletes keys
        ("allowed_image_registries", ["nvcr.io"]),  # without the slash nvcr.io.attacker.example would match
    ],
)
def test_security_values_are_checked(tmp_path: Path, key: str, value: list[str]) -> None:
    def edit(cluster: dict) -> None:
        cluster["security"][key] = value

    [problem] = problems_of(tmp_path, edit)
    assert problem.key.startswith(f"{FULL_KEY}.security.{key}")


def test_data_buckets_are_vpc_only_outside_dev_by_default() -> None:
    prod = edited_config("prod", lambda cluster: cluster["security"].pop("data_buckets_vpc_only", None))
    dev = edited_config("dev", lambda cluster: None)
    assert prod.data_buckets_vpc_only and not dev.data_buckets_vpc_only


def test_team_internet_egress_is_off_in_prod_by_default_and_refused_there(tmp_path: Path) -> None:
    assert not stack_config("prod").team_internet_egress
    assert stack_config("dev").team_internet_egress and stack_config("staging").team_internet_egress
    assert not edited_config("staging", lambda c: c["security"].update(team_internet_egress=False)).team_internet_egress

    def edit(cluster: dict) -> None:
        cluster["security"]["team_internet_egress"] = True

    [problem] = problems_of(tmp_path, edit)
    assert "security.team_internet_egress is true" in problem.message and "mirror" in problem.message


@pytest.mark.parametrize(
    ("tag", "refused"), [("v1.36.0", False), ("v1.35.2", False), ("v1.34.5", True), ("v1.37.0", True)]
)
def test_cluster_autoscaler_of_another_kubernetes_minor_is_refused_where_it_runs(
    tmp_path: Path, tag: str, refused: bool
) -> None:
    def edit(cluster: dict) -> None:
        cluster["kubernetes"]["cluster_autoscaler"] = {"image_tag": tag}
        # prod's reservation group is fixed (no autoscaler); let it grow past the reserved nodes.
        cluster["gpu_node_groups"][0] |= {"min_size": 8, "desired_size": 8}

    if not refused:  # the same minor, or one behind while the upgrade's later steps are pending
        document = stack_document("prod")
        edit(document["config"][FULL_KEY])
        path = tmp_path / "Pulumi.proposed.yaml"
        path.write_text(yaml.safe_dump(document))
        assert load_file(path).kubernetes.cluster_autoscaler.image_tag == tag
        return
    [problem] = problems_of(tmp_path, edit)
    assert f"kubernetes.cluster_autoscaler.image_tag {tag} is for Kubernetes 1.{tag.split('.')[1]}" in problem.message
    assert "eks.version is 1.36" in problem.message and "v1.36.x" in problem.message


def test_cluster_autoscaler_minor_is_not_judged_where_no_autoscaler_runs(tmp_path: Path) -> None:
    document = stack_document("prod")
    document["config"][FULL_KEY]["kubernetes"]["cluster_autoscaler"] = {"image_tag": "v1.33.6"}
    path = tmp_path / "Pulumi.proposed.yaml"
    path.write_text(yaml.safe_dump(document))
    assert load_file(path).kubernetes.cluster_autoscaler.image_tag == "v1.33.6"

"""A custom AMI per GPU group (the user data joins the cluster itself) and extra instance types for groups without
EFA (issue 34): the schema's rules and the pure user data."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from components.gpu.gpu_nodes import cluster_join, node_labels, user_data
from components.gpu.userdata import ClusterJoin, nodeadm_config
from stacks.schema.gpu import GpuNodeGroupSpec

AMI = "ami-0123456789abcdef0"


def group(**fields: Any) -> GpuNodeGroupSpec:
    base: dict[str, Any] = {
        "name": "eval",
        "instance_type": "g5.12xlarge",
        "availability_zone": "us-east-1a",
        "efa_enabled": False,
        "min_size": 0,
        "desired_size": 0,
        "max_size": 4,
    }
    return GpuNodeGroupSpec.model_validate(base | fields)


JOIN = ("demo", "https://ABC.gr7.us-east-1.eks.amazonaws.com", "Q0E=", "172.20.0.0/16")


def test_a_custom_ami_user_data_carries_the_cluster_labels_and_taints() -> None:
    spec = group(ami_id=AMI, taints=[{"key": "example.com/dedicated", "value": "eval"}])
    join = cluster_join(spec, node_labels(spec), *JOIN)
    config = nodeadm_config(instance_store=True, join=join)
    assert config["spec"]["cluster"] == {  # type: ignore[index]
        "name": "demo",
        "apiServerEndpoint": JOIN[1],
        "certificateAuthority": "Q0E=",
        "cidr": "172.20.0.0/16",
    }
    flags = config["spec"]["kubelet"]["flags"]  # type: ignore[index]
    assert "--register-with-taints=nvidia.com/gpu=true:NoSchedule,example.com/dedicated=eval:NoSchedule" in flags
    assert any(f.startswith("--node-labels=") and "trainstack.io/node-group=eval" in f for f in flags)
    document = user_data(spec, join)
    node_config = document.split("Content-Type: application/node.eks.aws\n\n", 1)[1].split("\n--", 1)[0]
    assert yaml.safe_load(node_config) == config


def test_without_a_join_eks_merges_the_cluster_in() -> None:
    assert "cluster" not in nodeadm_config(instance_store=False)["spec"]  # type: ignore[operator]
    assert "apiServerEndpoint" not in user_data(group())


def test_a_bottlerocket_custom_ami_gets_settings_kubernetes() -> None:
    spec = group(instance_type="g6e.12xlarge", ami_family="BOTTLEROCKET_x86_64_NVIDIA", ami_id=AMI)
    toml = user_data(spec, cluster_join(spec, {"a.example/x": "1"}, *JOIN))
    assert '[settings.kubernetes]\ncluster-name = "demo"\napi-server = "https://ABC' in toml
    assert '[settings.kubernetes.node-labels]\n"a.example/x" = "1"' in toml
    assert '[settings.kubernetes.node-taints]\n"nvidia.com/gpu" = ["true:NoSchedule"]' in toml


def test_the_kubelet_flags_are_left_out_when_there_is_nothing_to_say() -> None:
    assert ClusterJoin(*JOIN).kubelet_flags() == []


@pytest.mark.parametrize("ami", ["ami-0123abcd", AMI])
def test_ami_ids_of_eight_or_seventeen_hex_digits(ami: str) -> None:
    assert group(ami_id=ami).ami_id == ami


@pytest.mark.parametrize("ami", ["ami-0123", "ami-0123456789ABCDEF0", "0123456789abcdef0", "ami-0123456789abcdef01"])
def test_other_ami_ids_are_refused(ami: str) -> None:
    with pytest.raises(ValidationError, match="ami_id"):
        group(ami_id=ami)


def test_a_custom_ami_takes_no_release_version() -> None:
    with pytest.raises(ValidationError, match="EKS refuses a release version for a custom AMI"):
        group(ami_id=AMI, ami_release_version="1.33.0-20250101")


def test_extra_types_of_the_same_shape_are_launched_too() -> None:
    spec = group(extra_instance_types=["g6.12xlarge", "g5.24xlarge"])
    assert spec.instance_types == ["g5.12xlarge", "g6.12xlarge", "g5.24xlarge"]


@pytest.mark.parametrize(
    ("fields", "why"),
    [
        ({"efa_enabled": True, "extra_instance_types": ["g6.12xlarge"]}, "with efa_enabled: an EFA group launches one"),
        (
            {
                "extra_instance_types": ["g6.12xlarge"],
                "capacity": {
                    "type": "reservation",
                    "reservation_id": "cr-0123456789abcdef0",
                    "reservation_availability_zone": "us-east-1a",
                },
            },
            "with capacity reservation",
        ),
        ({"extra_instance_types": ["g5.48xlarge"]}, "does not match g5.12xlarge"),  # 8 GPUs, not 4
        ({"extra_instance_types": ["trn1.32xlarge"]}, "does not match"),
        ({"extra_instance_types": ["g6.24xlarge", "g6.24xlarge"]}, "repeat a type"),
        ({"extra_instance_types": ["g5.12xlarge"]}, "repeat a type"),
        ({"instance_type": "g6e.12xlarge", "extra_instance_types": ["g6.12xlarge"]}, "smaller than g6e.12xlarge"),
    ],
)
def test_extra_types_that_cannot_serve_the_group_are_refused(fields: dict[str, Any], why: str) -> None:
    with pytest.raises(ValidationError, match=why):
        group(**fields)


def test_at_most_twenty_types_in_all() -> None:
    with pytest.raises(ValidationError, match="at most 19"):
        group(extra_instance_types=["g6.12xlarge"] * 20)


def test_raid0_only_when_every_type_has_instance_store() -> None:
    assert "RAID0" in user_data(group(extra_instance_types=["g6.12xlarge"]))


def test_an_extra_type_with_less_accelerator_memory_is_refused() -> None:
    # g4dn.12xlarge: 4 x T4 (16 GB), 48 vCPUs, 192 GiB: the host fits, the models sized for A10G's 24 GB do not.
    with pytest.raises(ValidationError, match="16 GiB per accelerator"):
        group(extra_instance_types=["g4dn.12xlarge"])

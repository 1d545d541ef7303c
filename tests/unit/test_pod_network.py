"""VPC CNI custom networking (issue 34): the secondary CIDR's rules, the pod subnets the address check counts, and
the add-on configuration and ENIConfigs it needs."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from components.eks.eks import CUSTOM_NETWORKING_ENV, VPC_CNI_CONFIGURATION, eni_config, vpc_cni_configuration
from stacks.load import ConfigError
from stacks.schema.network import NetworkSpec, secondary_cidr_problem
from tests.conftest import edited_config

AZS = ["us-east-1a", "us-east-1b", "us-east-1c"]


def network(pods: dict[str, Any] | None, **fields: Any) -> NetworkSpec:
    return NetworkSpec.model_validate(
        {"vpc_cidr": "10.0.0.0/16", "availability_zones": AZS, "pod_network": pods} | fields
    )


@pytest.mark.parametrize(
    ("primary", "secondary", "refused"),
    [
        ("10.0.0.0/16", "100.64.0.0/16", None),
        ("172.31.0.0/16", "100.64.0.0/16", None),
        ("10.0.0.0/16", "10.1.0.0/16", None),  # the primary's own RFC 1918 block
        ("10.0.0.0/16", "10.0.128.0/17", "overlaps"),
        ("10.0.0.0/16", "172.16.0.0/16", "another private block"),
        ("192.168.0.0/16", "10.0.0.0/16", "another private block"),
        ("100.64.0.0/16", "100.65.0.0/16", None),
    ],
)
def test_secondary_cidrs_aws_associates(primary: str, secondary: str, refused: str | None) -> None:
    why = secondary_cidr_problem(primary, secondary)
    assert (why is None) if refused is None else (why is not None and refused in why)


def test_the_pod_subnets_must_fit_the_secondary_cidr() -> None:
    assert network({"cidr": "100.64.0.0/16", "subnet_prefix_length": 18}).pod_network is not None  # 3 of 4 /18s
    with pytest.raises(ValidationError, match="3 pod subnets of /17 need 98304 addresses"):
        network({"cidr": "100.64.0.0/16", "subnet_prefix_length": 17})
    with pytest.raises(ValidationError, match="must be /16 to /20"):
        network({"cidr": "100.64.0.0/22", "subnet_prefix_length": 24})


def test_pod_network_is_for_a_vpc_trainstack_creates() -> None:
    existing = {
        "vpc_id": "vpc-0123456789abcdef0",
        "private_subnet_ids": {az: f"subnet-0123456789abcdef{i}" for i, az in enumerate(AZS)},
    }
    with pytest.raises(ValidationError, match="pod_network with existing_vpc"):
        network({"cidr": "100.64.0.0/16"}, existing_vpc=existing)


def _prod(private: int, pods: dict[str, Any] | None) -> list[str]:
    def edit(raw: dict[str, Any]) -> None:
        raw["network"]["private_subnet_prefix_length"] = private
        raw["network"]["pod_network"] = pods

    try:
        edited_config("prod", edit)
    except ConfigError as error:  # names every problem
        return [str(error)]
    return []


def test_a_small_node_subnet_is_enough_once_pods_have_their_own() -> None:
    # prod at max size: 3 system + 6 + 16 GPU nodes can share one AZ: 25 x 111 addresses will not fit a /24.
    assert any("1 + 110 pods each" in p for p in _prod(24, None))
    assert _prod(24, {"cidr": "100.64.0.0/16", "subnet_prefix_length": 18}) == []


def test_the_pod_subnet_is_held_against_the_pods() -> None:
    (problem,) = _prod(24, {"cidr": "100.64.0.0/20", "subnet_prefix_length": 22})
    assert "pod_network.subnet_prefix_length /22 gives 1019 pod addresses" in problem


def test_the_vpc_cni_takes_custom_networking_in_its_env() -> None:
    assert vpc_cni_configuration(False) == dict(VPC_CNI_CONFIGURATION)
    on = vpc_cni_configuration(True)
    assert on["env"] == {
        "AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG": "true",
        "ENI_CONFIG_LABEL_DEF": "topology.kubernetes.io/zone",
    }
    assert on["enableNetworkPolicy"] == "true" and on["env"] == dict(CUSTOM_NETWORKING_ENV)


def test_an_eni_config_is_named_after_its_zone() -> None:
    assert eni_config("us-east-1a", "subnet-1") == {
        "apiVersion": "crd.k8s.amazonaws.com/v1alpha1",
        "kind": "ENIConfig",
        "metadata": {"name": "us-east-1a"},
        "spec": {"subnet": "subnet-1"},
    }

"""Custom networking planned whole (issue 34): prod on /24 node subnets with pods in 100.64.0.0/16."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.conftest import edited_config, program_recording
from trainstack.journeys import team_job


@pytest.mark.e2e
def test_prod_with_pod_subnets_plans_the_cidr_the_subnets_the_eni_configs_and_the_cni_settings() -> None:
    def edit(raw: dict[str, Any]) -> None:
        raw["network"] |= {"private_subnet_prefix_length": 24, "interface_endpoints": True}
        raw["network"]["pod_network"] = {"cidr": "100.64.0.0/16", "subnet_prefix_length": 18}

    cluster = edited_config("prod", edit)
    rec = program_recording(cluster, "prod")
    (association,) = rec.by_type("aws:ec2/vpcIpv4CidrBlockAssociation:VpcIpv4CidrBlockAssociation")
    assert association.inputs["cidrBlock"] == "100.64.0.0/16"
    pods = {s.inputs["availabilityZone"]: s for s in rec.by_type("aws:ec2/subnet:Subnet") if "-pods-" in s.name}
    assert {az: s.inputs["cidrBlock"] for az, s in pods.items()} == {
        "us-east-1a": "100.64.0.0/18",
        "us-east-1b": "100.64.64.0/18",
        "us-east-1c": "100.64.128.0/18",
    }
    configs = {r.inputs["metadata"]["name"]: r for r in rec.resources if r.type.endswith(":ENIConfig")}
    assert set(configs) == set(pods)
    for az, config in configs.items():
        assert config.inputs["spec"]["subnet"] == pods[az].id
    (cni,) = [r for r in rec.by_type("aws:eks/addon:Addon") if r.inputs["addonName"] == "vpc-cni"]
    assert json.loads(cni.inputs["configurationValues"])["env"]["AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG"] == "true"
    # Every node group waits for the ENIConfigs: a node that starts first keeps its pods in the node subnet.
    eni_urns = {r.urn for r in configs.values()}
    for group in rec.by_type("aws:eks/nodeGroup:NodeGroup"):
        assert eni_urns <= set(group.dependencies), group.name
    # Pods reach the interface endpoints from the secondary CIDR.
    rules = [r.inputs.get("cidrIpv4") for r in rec.by_type("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule")]
    assert "100.64.0.0/16" in rules
    found = list(team_job.walk(team_job.Trip(recording=rec, stack=cluster)))
    assert found and all(j.holds for j in found)

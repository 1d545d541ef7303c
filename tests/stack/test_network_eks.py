"""Tier 3: network and EKS in the whole program, for every committed stack."""

from __future__ import annotations

from tests.conftest import recording, stack_config


def test_network_and_cluster_exist_once_and_are_wired_together(stack_name: str):
    rec = recording(stack_name)
    cluster = stack_config(stack_name)
    vpc = rec.one("aws:ec2/vpc:Vpc")
    assert vpc.inputs["cidrBlock"] == cluster.network.vpc_cidr
    eks = rec.one("aws:eks/cluster:Cluster")
    private = {
        s.id for s in rec.by_type("aws:ec2/subnet:Subnet") if "kubernetes.io/role/internal-elb" in s.inputs["tags"]
    }
    assert set(eks.inputs["vpcConfig"]["subnetIds"]) == private
    assert len(private) == len(cluster.network.availability_zones)
    assert eks.inputs["name"] == cluster.name


def test_cluster_protection_follows_the_environment(stack_name: str):
    rec = recording(stack_name)
    protect = stack_config(stack_name).protect_data
    assert rec.one("aws:eks/cluster:Cluster").protect is protect
    secrets_key = next(k for k in rec.by_type("aws:kms/key:Key") if k.name.endswith("-eks-secrets-key"))
    assert secrets_key.protect is protect


def test_private_only_endpoint_comes_with_interface_endpoints(stack_name: str):
    rec = recording(stack_name)
    public = rec.one("aws:eks/cluster:Cluster").inputs["vpcConfig"]["endpointPublicAccess"]
    interface = [
        e for e in rec.by_type("aws:ec2/vpcEndpoint:VpcEndpoint") if e.inputs["vpcEndpointType"] == "Interface"
    ]
    assert public or len(interface) >= 6


def test_exports_for_operators(stack_name: str):
    outputs = recording(stack_name).outputs
    assert outputs["cluster_name"] == stack_config(stack_name).name
    assert outputs["cluster_endpoint"].startswith("https://")
    assert set(outputs["private_subnet_ids"]) == set(stack_config(stack_name).network.availability_zones)
    assert outputs["efa_security_group_id"].startswith("sg-")


def test_aws_resources_all_use_the_stack_provider(stack_name: str):
    rec = recording(stack_name)
    providers = {p.urn for p in rec.by_type("pulumi:providers:aws")}
    mine = [
        r
        for r in rec.resources
        if r.custom and r.type.startswith("aws:") and ("-network-" in r.name or "-eks-" in r.name)
    ]
    assert mine and all(r.provider_urn in providers for r in mine)

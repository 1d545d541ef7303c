"""Tier 3: network and EKS in the whole program, for every committed stack."""

from __future__ import annotations

from components.eks.eks import NODE_POLICIES
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
    keys = [k for k in rec.by_type("aws:kms/key:Key") if k.name.startswith("eks-")]
    assert sorted(k.name.removeprefix("eks-") for k in keys) == ["node-volume-key", "secrets-key"]
    assert all(k.protect is protect for k in keys)


def test_every_node_volume_uses_the_one_node_volume_key(stack_name: str):
    rec = recording(stack_name)
    (key,) = [k for k in rec.by_type("aws:kms/key:Key") if k.name.endswith("eks-node-volume-key")]
    templates = rec.by_type("aws:ec2/launchTemplate:LaunchTemplate")
    assert any(t.name.startswith("gpu-") for t in templates) and any(t.name.endswith("system-lt") for t in templates)
    volumes = [m["ebs"] for t in templates for m in t.inputs["blockDeviceMappings"]]
    assert volumes and all(v["encrypted"] == "true" and v["kmsKeyId"] == key.outputs["arn"] for v in volumes)


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
        if r.custom and r.type.startswith("aws:") and (r.name.startswith("network-") or r.name.startswith("eks-"))
    ]
    assert mine and all(r.provider_urn in providers for r in mine)


def test_gpu_node_groups_wait_for_the_node_role_policies_and_the_node_add_ons():
    # A GPU node group that starts before its role has AmazonEKSWorkerNodePolicy / ECR pull cannot join;
    # one that starts before vpc-cni, kube-proxy and the Pod Identity agent never becomes Ready.
    rec = recording("prod")
    node_role = next(r for r in rec.by_type("aws:iam/role:Role") if r.name.endswith("node-role"))
    attachments = [
        a
        for a in rec.by_type("aws:iam/rolePolicyAttachment:RolePolicyAttachment")
        if a.inputs["role"] == node_role.outputs["name"]
    ]
    assert sorted(a.inputs["policyArn"].rsplit("/", 1)[1] for a in attachments) == sorted(NODE_POLICIES)
    addons = {a.inputs["addonName"]: a.urn for a in rec.by_type("aws:eks/addon:Addon")}
    gpu_groups = [g for g in rec.by_type("aws:eks/nodeGroup:NodeGroup") if g.name.startswith("gpu-")]
    assert gpu_groups
    for group in gpu_groups:
        waits = set(group.dependencies)
        assert {a.urn for a in attachments} <= waits, group.name
        assert {addons["vpc-cni"], addons["kube-proxy"], addons["eks-pod-identity-agent"]} <= waits, group.name
        # Deployments-only add-ons come after the system nodes; GPU groups must not wait on them.
        assert addons["coredns"] not in waits

"""Tier 1: pure helpers of the EKS cluster and EKS Pod Identity (add-on order, access entries, kubeconfig,
key policy, trust policy, partitions)."""

from __future__ import annotations

import pytest

from components.eks.eks import NODE_POLICIES, access_entry_keys, addon_plan, kms_key_policy, kubeconfig
from components.naming import aws_partition
from components.pod_identity import managed_policy_arn, policy_short_name, trust_policy
from stacks.load import ConfigError
from tests.conftest import edited_config, stack_config


def test_addon_plan_puts_cni_proxy_and_identity_agent_before_compute():
    plan = addon_plan(stack_config("prod").eks)
    assert {p.name for p in plan if p.before_compute} == {"vpc-cni", "kube-proxy", "eks-pod-identity-agent"}
    assert {p.name for p in plan if not p.before_compute} == {"coredns", "aws-ebs-csi-driver"}
    names = [p.name for p in plan]
    assert names.index("eks-pod-identity-agent") < names.index("vpc-cni")  # vpc-cni needs its credentials


def test_addon_plan_takes_versions_from_config():
    versions = stack_config("dev").eks.addons
    by_name = {p.name: p.version for p in addon_plan(stack_config("dev").eks)}
    assert by_name == {
        "vpc-cni": versions.vpc_cni,
        "coredns": versions.coredns,
        "kube-proxy": versions.kube_proxy,
        "eks-pod-identity-agent": versions.pod_identity_agent,
        "aws-ebs-csi-driver": versions.ebs_csi_driver,
    }


def test_access_entry_keys_use_the_role_name_and_disambiguate_clashes():
    arns = [
        "arn:aws:iam::111122223333:role/ml-platform-admin",
        "arn:aws:iam::444455556666:role/ml-platform-admin",
        "arn:aws:iam::444455556666:role/teams/breakglass",
    ]
    assert access_entry_keys(arns) == [
        "111122223333-ml-platform-admin",
        "444455556666-ml-platform-admin",
        "teams-breakglass",
    ]


def test_access_entry_keys_refuse_duplicate_roles():
    arn = "arn:aws:iam::111122223333:role/admin"
    with pytest.raises(ValueError, match="duplicates"):
        access_entry_keys([arn, arn])


def test_kubeconfig_authenticates_through_aws_eks_get_token_for_the_cluster_and_region():
    config = kubeconfig("trainstack-dev", "https://example.eks.amazonaws.com", "Q0E=", "eu-west-1")
    user = config["users"][0]["user"]
    assert "token" not in user and "client-key-data" not in user
    assert user["exec"]["command"] == "aws"
    args = user["exec"]["args"]
    assert args[:2] == ["eks", "get-token"]
    assert args[args.index("--cluster-name") + 1] == "trainstack-dev"
    assert args[args.index("--region") + 1] == "eu-west-1"
    assert config["clusters"][0]["cluster"] == {
        "server": "https://example.eks.amazonaws.com",
        "certificate-authority-data": "Q0E=",
    }


def test_kms_key_policy_delegates_to_iam_and_lets_the_cluster_role_use_the_key():
    policy = kms_key_policy("aws", "123456789012", "arn:aws:iam::123456789012:role/cluster")
    root, cluster = policy["Statement"]
    assert root["Principal"] == {"AWS": "arn:aws:iam::123456789012:root"}
    assert cluster["Principal"] == {"AWS": "arn:aws:iam::123456789012:role/cluster"}
    assert {"kms:Encrypt", "kms:Decrypt", "kms:DescribeKey"} <= set(cluster["Action"])
    assert "kms:*" not in cluster["Action"]


def test_node_policies_are_exactly_the_three_nodes_need():
    assert set(NODE_POLICIES) == {
        "AmazonEKSWorkerNodePolicy",
        "AmazonEC2ContainerRegistryPullOnly",
        "AmazonSSMManagedInstanceCore",
    }


def test_pod_identity_trust_policy_pins_cluster_namespace_and_service_account():
    statement = trust_policy("trainstack-dev", "kube-system", "aws-node")["Statement"][0]
    assert statement["Principal"] == {"Service": "pods.eks.amazonaws.com"}
    assert statement["Action"] == ["sts:AssumeRole", "sts:TagSession"]
    assert statement["Condition"]["StringEquals"] == {
        "aws:RequestTag/eks-cluster-name": "trainstack-dev",
        "aws:RequestTag/kubernetes-namespace": "kube-system",
        "aws:RequestTag/kubernetes-service-account": "aws-node",
    }


@pytest.mark.parametrize(
    ("region", "partition"), [("us-east-1", "aws"), ("cn-north-1", "aws-cn"), ("us-gov-west-1", "aws-us-gov")]
)
def test_partition_of_region(region: str, partition: str):
    assert aws_partition(region) == partition


def test_managed_policy_arn_and_short_name():
    arn = managed_policy_arn("service-role/AmazonEBSCSIDriverPolicy", "aws-cn")
    assert arn == "arn:aws-cn:iam::aws:policy/service-role/AmazonEBSCSIDriverPolicy"
    assert policy_short_name(arn) == "amazonebscsidriverpolicy"


def test_a_cluster_without_admin_roles_is_refused():
    # The creator gets no implicit admin: with no access entry nobody could administer the cluster.
    with pytest.raises(ConfigError, match="admin_role_arns"):
        edited_config("prod", lambda raw: raw["eks"].update(admin_role_arns=[]))
    with pytest.raises(ConfigError, match="admin_role_arns"):
        edited_config("dev", lambda raw: raw["eks"].pop("admin_role_arns"))

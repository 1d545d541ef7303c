"""Tier 2: the EksCluster component (and the Pod Identity helper) under the recording mocks."""

from __future__ import annotations

import functools
import json

import pulumi

from components.eks.eks import EksCluster, EksClusterArgs, node_volume_key_policy
from components.pod_identity import pod_identity_role
from tests.component.helpers import aws_opts
from tests.conftest import edited_config, run_component, stack_config
from trainstack.engine import RecordedResource, Recording

CLUSTER = "aws:eks/cluster:Cluster"
ADDON = "aws:eks/addon:Addon"
ATTACHMENT = "aws:iam/rolePolicyAttachment:RolePolicyAttachment"
ASSOCIATION = "aws:eks/podIdentityAssociation:PodIdentityAssociation"
KEY = "aws:kms/key:Key"
SUBNETS = ["subnet-0a", "subnet-0b", "subnet-0c"]


def _build(stack: str, protect: bool) -> Recording:
    cluster = stack_config(stack)
    return run_component(
        lambda: EksCluster(
            f"{cluster.name}-eks",
            EksClusterArgs(
                spec=cluster.eks,
                base_name=cluster.name,
                region=cluster.region,
                vpc_id="vpc-0123",
                private_subnet_ids=SUBNETS,
                protect=protect,
                tags={"project": "trainstack", "env": stack},
            ),
            opts=aws_opts(),
        )
    )


@functools.cache
def recorded(stack: str) -> Recording:
    return _build(stack, protect=stack_config(stack).protect_data)


def _key(rec: Recording, suffix: str) -> RecordedResource:
    (key,) = [k for k in rec.by_type(KEY) if k.name.endswith(suffix)]
    return key


def _names(rec: Recording) -> dict[str, str]:
    return {r.urn: r.name for r in rec.resources}


def _deps(rec: Recording, resource_name: str) -> set[str]:
    names = _names(rec)
    resource = next(r for r in rec.resources if r.name == resource_name)
    return {names[d] for d in resource.dependencies}


def test_cluster_access_encryption_logging_and_upgrade_policy():
    rec = recorded("prod")
    cluster = rec.one(CLUSTER).inputs
    assert cluster["name"] == "trainstack-prod" and cluster["version"] == stack_config("prod").eks.version
    assert cluster["accessConfig"] == {"authenticationMode": "API", "bootstrapClusterCreatorAdminPermissions": False}
    key = _key(rec, "-secrets-key")
    assert cluster["encryptionConfig"] == {"resources": ["secrets"], "provider": {"keyArn": key.outputs["arn"]}}
    assert key.inputs["enableKeyRotation"] is True
    assert json.loads(key.inputs["policy"])["Statement"]  # explicit policy, not the implicit default
    assert cluster["enabledClusterLogTypes"] == ["api", "audit", "authenticator", "controllerManager", "scheduler"]
    assert cluster["upgradePolicy"] == {"supportType": "STANDARD"}
    assert cluster["bootstrapSelfManagedAddons"] is False


def test_control_plane_log_group_exists_first_with_config_retention():
    rec = recorded("dev")
    group = rec.one("aws:cloudwatch/logGroup:LogGroup")
    assert group.inputs["name"] == "/aws/eks/trainstack-dev/cluster"
    assert group.inputs["retentionInDays"] == 14
    assert group.name in _deps(rec, "trainstack-dev-eks-cluster")


def test_endpoint_access_per_environment():
    prod = recorded("prod").one(CLUSTER).inputs["vpcConfig"]
    assert prod["endpointPrivateAccess"] is True and prod["endpointPublicAccess"] is False
    assert "publicAccessCidrs" not in prod
    dev = recorded("dev").one(CLUSTER).inputs["vpcConfig"]
    assert dev["endpointPrivateAccess"] is True and dev["endpointPublicAccess"] is True
    assert dev["publicAccessCidrs"] == ["203.0.113.0/24"]
    assert dev["subnetIds"] == SUBNETS


def test_admin_roles_get_access_entries_with_cluster_admin_policy():
    rec = recorded("prod")
    admins = stack_config("prod").eks.admin_role_arns
    entries = rec.by_type("aws:eks/accessEntry:AccessEntry")
    assert sorted(e.inputs["principalArn"] for e in entries) == sorted(admins)
    policies = rec.by_type("aws:eks/accessPolicyAssociation:AccessPolicyAssociation")
    assert sorted(p.inputs["principalArn"] for p in policies) == sorted(admins)
    assert {p.inputs["policyArn"] for p in policies} == {
        "arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"
    }
    assert all(p.inputs["accessScope"] == {"type": "cluster"} for p in policies)


def test_addon_versions_come_from_config():
    for stack in ("dev", "prod"):
        versions = stack_config(stack).eks.addons
        recorded_versions = {a.inputs["addonName"]: a.inputs["addonVersion"] for a in recorded(stack).by_type(ADDON)}
        assert recorded_versions == {
            "vpc-cni": versions.vpc_cni,
            "coredns": versions.coredns,
            "kube-proxy": versions.kube_proxy,
            "eks-pod-identity-agent": versions.pod_identity_agent,
            "aws-ebs-csi-driver": versions.ebs_csi_driver,
        }


def test_addon_versions_follow_an_edited_config():
    edited = edited_config("dev", lambda raw: raw["eks"]["addons"].update(coredns="v1.13.2-eksbuild.11"))
    rec = run_component(
        lambda: EksCluster(
            "x-eks",
            EksClusterArgs(
                spec=edited.eks, base_name="x", region="us-east-1", vpc_id="vpc-1", private_subnet_ids=SUBNETS
            ),
            opts=aws_opts(),
        )
    )
    coredns = next(a for a in rec.by_type(ADDON) if a.inputs["addonName"] == "coredns")
    assert coredns.inputs["addonVersion"] == "v1.13.2-eksbuild.11"


def test_node_role_has_exactly_the_three_node_policies():
    rec = recorded("dev")
    node_role = next(r for r in rec.by_type("aws:iam/role:Role") if r.name.endswith("node-role"))
    attached = [a.inputs["policyArn"] for a in rec.by_type(ATTACHMENT) if a.inputs["role"] == node_role.outputs["name"]]
    assert sorted(attached) == sorted(
        f"arn:aws:iam::aws:policy/{p}"
        for p in ("AmazonEKSWorkerNodePolicy", "AmazonEC2ContainerRegistryPullOnly", "AmazonSSMManagedInstanceCore")
    )
    assert json.loads(node_role.inputs["assumeRolePolicy"])["Statement"][0]["Principal"] == {
        "Service": "ec2.amazonaws.com"
    }


def test_cni_and_ebs_csi_get_pod_identity_roles_not_the_node_role():
    rec = recorded("dev")
    associations = {(a.inputs["namespace"], a.inputs["serviceAccount"]): a for a in rec.by_type(ASSOCIATION)}
    assert set(associations) == {("kube-system", "aws-node"), ("kube-system", "ebs-csi-controller-sa")}
    roles = {r.outputs["arn"]: r for r in rec.by_type("aws:iam/role:Role")}
    policy_of = {
        (sa, a.inputs["policyArn"])
        for (_, sa), assoc in associations.items()
        for a in rec.by_type(ATTACHMENT)
        if a.inputs["role"] == roles[assoc.inputs["roleArn"]].outputs["name"]
    }
    assert policy_of == {
        ("aws-node", "arn:aws:iam::aws:policy/AmazonEKS_CNI_Policy"),
        ("ebs-csi-controller-sa", "arn:aws:iam::aws:policy/service-role/AmazonEBSCSIDriverPolicy"),
    }
    all_policies = {a.inputs["policyArn"] for a in rec.by_type(ATTACHMENT)}
    node_role = next(r for r in rec.by_type("aws:iam/role:Role") if r.name.endswith("node-role"))
    node_policies = {
        a.inputs["policyArn"] for a in rec.by_type(ATTACHMENT) if a.inputs["role"] == node_role.outputs["name"]
    }
    assert "arn:aws:iam::aws:policy/AmazonEKS_CNI_Policy" in all_policies - node_policies


def test_addon_ordering_around_the_system_node_group():
    rec = recorded("dev")
    prefix = "trainstack-dev-eks-"
    group_deps = _deps(rec, prefix + "system")
    assert {prefix + "vpc-cni", prefix + "kube-proxy", prefix + "eks-pod-identity-agent"} <= group_deps
    assert prefix + "system" in _deps(rec, prefix + "coredns")
    assert prefix + "system" in _deps(rec, prefix + "aws-ebs-csi-driver")
    assert {prefix + "eks-pod-identity-agent", prefix + "vpc-cni-pod-identity-association"} <= _deps(
        rec, prefix + "vpc-cni"
    )


def test_system_node_group_is_on_demand_al2023_with_imdsv2_and_encrypted_gp3():
    rec = recorded("prod")
    spec = stack_config("prod").eks.system_node_group
    group = rec.one("aws:eks/nodeGroup:NodeGroup").inputs
    assert group["capacityType"] == "ON_DEMAND" and group["amiType"] == "AL2023_x86_64_STANDARD"
    assert group["instanceTypes"] == [spec.instance_type]
    assert group["scalingConfig"] == {"minSize": 3, "desiredSize": 3, "maxSize": 6}
    assert group["subnetIds"] == SUBNETS
    template = rec.one("aws:ec2/launchTemplate:LaunchTemplate").inputs
    assert template["metadataOptions"]["httpTokens"] == "required"
    assert template["metadataOptions"]["httpPutResponseHopLimit"] == 1
    ebs = template["blockDeviceMappings"][0]["ebs"]
    assert ebs["volumeType"] == "gp3" and ebs["encrypted"] == "true" and ebs["volumeSize"] == spec.disk_size_gib
    assert ebs["kmsKeyId"] == _key(rec, "-node-volume-key").outputs["arn"]
    assert {t["resourceType"] for t in template["tagSpecifications"]} == {"instance", "volume", "network-interface"}
    assert all(t["tags"]["project"] == "trainstack" for t in template["tagSpecifications"])


def test_oidc_provider_uses_the_cluster_issuer():
    rec = recorded("dev")
    oidc = rec.one("aws:iam/openIdConnectProvider:OpenIdConnectProvider")
    issuer = rec.one(CLUSTER).outputs["identities"][0]["oidcs"][0]["issuer"]
    assert oidc.inputs["url"] == issuer
    assert oidc.inputs["clientIdLists"] == ["sts.amazonaws.com"]


def test_kubernetes_provider_uses_exec_auth_for_this_cluster():
    rec = recorded("staging")
    provider = rec.one("pulumi:providers:kubernetes")
    config = json.loads(provider.inputs["kubeconfig"])
    exec_args = config["users"][0]["user"]["exec"]["args"]
    assert exec_args[exec_args.index("--cluster-name") + 1] == "trainstack-staging"
    assert config["clusters"][0]["cluster"]["server"] == rec.one(CLUSTER).outputs["endpoint"]


def test_kubernetes_provider_waits_for_every_admin_access_entry_and_policy_association():
    # No creator bootstrap: until the associations exist the deployer gets Unauthorized from the API.
    rec = recorded("prod")
    provider = rec.one("pulumi:providers:kubernetes")
    access = rec.by_type("aws:eks/accessEntry:AccessEntry") + rec.by_type(
        "aws:eks/accessPolicyAssociation:AccessPolicyAssociation"
    )
    assert len(access) == 2 * len(stack_config("prod").eks.admin_role_arns)
    assert {a.urn for a in access} <= set(provider.dependencies)


def test_node_volume_key_lets_auto_scaling_launch_encrypted_volumes_in_every_environment():
    slr = "arn:aws:iam::123456789012:role/aws-service-role/autoscaling.amazonaws.com/AWSServiceRoleForAutoScaling"
    for stack in ("dev", "staging", "prod"):
        rec = recorded(stack)
        key = _key(rec, "-node-volume-key")
        assert key.inputs["enableKeyRotation"] is True and key.inputs["deletionWindowInDays"] == 30
        statements = {s["Sid"]: s for s in json.loads(key.inputs["policy"])["Statement"]}
        assert statements["AccountUsesKeyThroughIam"]["Principal"] == {"AWS": "arn:aws:iam::123456789012:root"}
        use = statements["AutoScalingUsesKeyForNodeVolumes"]
        assert use["Principal"] == {"AWS": slr} and "Condition" not in use
        assert sorted(use["Action"]) == sorted(
            ["kms:Encrypt", "kms:Decrypt", "kms:ReEncrypt*", "kms:GenerateDataKey*", "kms:DescribeKey"]
        )
        grant = statements["AutoScalingGrantsForAttachedVolumes"]
        assert grant["Principal"] == {"AWS": slr} and grant["Action"] == "kms:CreateGrant"
        assert grant["Condition"] == {"Bool": {"kms:GrantIsForAWSResource": True}}
        assert len(statements) == 5  # account use, administrators, the deny, and the two service statements
        alias = next(a for a in rec.by_type("aws:kms/alias:Alias") if a.inputs["targetKeyId"] == key.outputs["keyId"])
        assert alias.inputs["name"] == f"alias/trainstack-{stack}-eks-node-volumes"


def test_node_volume_key_policy_follows_the_partition():
    policy = node_volume_key_policy("aws-cn", "111122223333")
    principals = {s["Sid"]: s["Principal"]["AWS"] for s in policy["Statement"]}
    assert principals["AutoScalingGrantsForAttachedVolumes"] == (
        "arn:aws-cn:iam::111122223333:role/aws-service-role/autoscaling.amazonaws.com/AWSServiceRoleForAutoScaling"
    )
    assert principals["AccountUsesKeyThroughIam"] == "arn:aws-cn:iam::111122223333:root"


def test_prod_protects_kms_keys_and_cluster():
    rec = recorded("prod")
    assert [k.protect for k in rec.by_type(KEY)] == [True, True]
    cluster = rec.one(CLUSTER)
    assert cluster.protect is True and cluster.inputs["deletionProtection"] is True


def test_dev_protects_nothing():
    rec = recorded("dev")
    assert not any(r.protect for r in rec.resources)
    assert rec.one(CLUSTER).inputs["deletionProtection"] is False


def test_every_aws_child_inherits_the_explicit_provider():
    rec = recorded("dev")
    provider_urn = rec.one("pulumi:providers:aws").urn
    aws_children = [r for r in rec.resources if r.custom and r.type.startswith("aws:")]
    assert aws_children and all(r.provider_urn == provider_urn for r in aws_children)


def test_pod_identity_role_helper_with_inline_policy_waits_for_policies():
    def build() -> None:
        parent = pulumi.ComponentResource("trainstack:test:Parent", "owner", None, aws_opts())
        pod_identity_role(
            "owner-fsx-csi",
            cluster_name="trainstack-dev",
            namespace="kube-system",
            service_account="fsx-csi-controller-sa",
            policy_arns=["arn:aws:iam::aws:policy/AmazonFSxReadOnlyAccess"],
            inline_policy={
                "Version": "2012-10-17",
                "Statement": [{"Effect": "Allow", "Action": "fsx:DescribeFileSystems", "Resource": "*"}],
            },
            opts=pulumi.ResourceOptions(parent=parent),
        )

    rec = run_component(build)
    component = rec.one("trainstack:pod_identity:PodIdentityRole")
    role = rec.one("aws:iam/role:Role")
    assert role.parent == component.urn
    trust = json.loads(role.inputs["assumeRolePolicy"])["Statement"][0]
    assert trust["Condition"]["StringEquals"]["aws:RequestTag/kubernetes-service-account"] == "fsx-csi-controller-sa"
    inline = rec.one("aws:iam/rolePolicy:RolePolicy")
    assert json.loads(inline.inputs["policy"])["Statement"][0]["Action"] == "fsx:DescribeFileSystems"
    association = rec.one(ASSOCIATION)
    assert association.inputs["roleArn"] == role.outputs["arn"]
    names = _names(rec)
    assert {names[d] for d in association.dependencies} >= {
        "owner-fsx-csi-inline",
        "owner-fsx-csi-amazonfsxreadonlyaccess",
    }

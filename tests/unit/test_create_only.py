"""The create-only table is the CloudFormation schemas' `createOnlyProperties` through an explicit map, plus the
documented differences from terraform-provider-aws: each part is checked against its source."""

from __future__ import annotations

import importlib
import inspect

import pytest

from trainstack.create_only import (
    CFN_EQUIVALENT,
    FORCE_NEW_ONLY,
    IN_PLACE,
    NO_CFN_TYPE,
    REPLACE_ON_CHANGE,
    cfn_create_only,
    from_cloudformation,
    replaces,
)


def _sdk_inputs(type_token: str) -> set[str]:
    """The resource's inputs as the engine names them (`_internal_init` takes each as a keyword)."""
    module, cls = type_token.split(":")[1].split("/")[0], type_token.split(":")[2]
    init = getattr(importlib.import_module(f"pulumi_aws.{module}"), cls)._internal_init
    names = [n for n in inspect.signature(init).parameters if n not in ("self", "resource_name", "opts", "__props__")]
    return {head + "".join(p.title() for p in rest) for head, *rest in (n.split("_") for n in names)}


@pytest.mark.parametrize("type_token", sorted(t for t in REPLACE_ON_CHANGE if t.startswith("aws:")))
def test_every_create_only_input_is_an_input_of_the_installed_provider(type_token: str) -> None:
    """A CFN property mapped to a name pulumi-aws does not have (NodeRole -> nodeRole, not nodeRoleArn) would turn a
    replacement into a silent update: every entry must be a real input."""
    inputs = _sdk_inputs(type_token)
    for path in REPLACE_ON_CHANGE[type_token]:
        assert path.split(".")[0] in inputs, f"{type_token}: {path} is not a pulumi-aws input"


@pytest.mark.parametrize("type_token", sorted(CFN_EQUIVALENT))
def test_every_renamed_cfn_property_exists_in_the_schema(type_token: str) -> None:
    cfn_type, renames = CFN_EQUIVALENT[type_token]
    assert set(renames) <= set(cfn_create_only(cfn_type)), f"{type_token}: stale rename for {cfn_type}"


def test_the_differences_from_terraform_are_real_differences() -> None:
    """A FORCE_NEW_ONLY entry CloudFormation already lists, or an IN_PLACE entry it does not, is a wrong exception."""
    for type_token, extra in FORCE_NEW_ONLY.items():
        derived = from_cloudformation(type_token) if type_token in CFN_EQUIVALENT else NO_CFN_TYPE[type_token]
        assert not set(extra) & derived, f"{type_token}: {set(extra) & derived} is create-only in CloudFormation"
        assert set(extra) <= REPLACE_ON_CHANGE[type_token]
    for type_token, in_place in IN_PLACE.items():
        assert set(in_place) <= from_cloudformation(type_token), f"{type_token}: not create-only in CloudFormation"
        assert not set(in_place) & REPLACE_ON_CHANGE[type_token]
    assert not set(CFN_EQUIVALENT) & set(NO_CFN_TYPE)


# What CloudFormation says (cfn-lint 1.58.0 us-east-1 schemas) and Terraform agrees with, pinned so that an edit
# of the map or the exceptions that drops or adds one shows here.
EXPECTED = {
    "aws:eks/nodeGroup:NodeGroup": {
        "amiType",
        "capacityType",
        "clusterName",
        "diskSize",
        "instanceTypes",
        "launchTemplate.id",
        "launchTemplate.name",
        "nodeGroupName",
        "nodeGroupNamePrefix",
        "nodeRoleArn",
        "remoteAccess",
        "subnetIds",
    },
    "aws:eks/cluster:Cluster": {
        "accessConfig.bootstrapClusterCreatorAdminPermissions",
        "bootstrapSelfManagedAddons",
        "encryptionConfig",
        "kubernetesNetworkConfig.ipFamily",
        "kubernetesNetworkConfig.serviceIpv4Cidr",
        "name",
        "outpostConfig",
        "roleArn",
    },
    "aws:fsx/lustreFileSystem:LustreFileSystem": {
        "backupId",
        "deploymentType",
        "efaEnabled",
        "kmsKeyId",
        "securityGroupIds",
        "storageType",
        "subnetIds",
    },
    "aws:ec2/routeTableAssociation:RouteTableAssociation": {"subnetId"},
    "aws:ec2/placementGroup:PlacementGroup": {"name", "partitionCount", "spreadLevel", "strategy"},
    "aws:kms/key:Key": {"customerMasterKeySpec", "keyUsage"},
    "aws-native:sagemaker:Cluster": {"clusterName", "orchestrator.eks", "vpcConfig"},
}


@pytest.mark.parametrize("type_token", sorted(EXPECTED))
def test_pinned_create_only_inputs(type_token: str) -> None:
    assert REPLACE_ON_CHANGE[type_token] == EXPECTED[type_token]


@pytest.mark.parametrize(
    ("type_token", "path"),
    [
        # Renames the hand-kept table missed: each a create-only name in its CloudFormation schema.
        ("aws:cloudwatch/logGroup:LogGroup", "name"),  # AWS::Logs::LogGroup LogGroupName
        ("aws:ec2/launchTemplate:LaunchTemplate", "name"),  # AWS::EC2::LaunchTemplate LaunchTemplateName
        ("aws:kms/alias:Alias", "name"),  # AWS::KMS::Alias AliasName
        ("aws:sns/topic:Topic", "name"),  # AWS::SNS::Topic TopicName
        ("aws:eks/accessEntry:AccessEntry", "clusterName"),
        ("aws:eks/accessPolicyAssociation:AccessPolicyAssociation", "clusterName"),
        ("aws:eks/podIdentityAssociation:PodIdentityAssociation", "clusterName"),
        ("aws:amp/scraper:Scraper", "source.eks.clusterArn"),
        ("aws:ec2/securityGroup:SecurityGroup", "description"),  # GroupDescription
        ("kubernetes:core/v1:ConfigMap", "metadata.name"),
        ("kubernetes:batch/v1:Job", "spec.template.spec.containers[0].image"),
        ("kubernetes:core/v1:PersistentVolumeClaim", "spec.storageClassName"),
        ("kubernetes:helm.sh/v3:Release", "name"),
    ],
)
def test_create_only_changes_replace(type_token: str, path: str) -> None:
    assert replaces(type_token, path)


@pytest.mark.parametrize(
    ("type_token", "path"),
    [
        ("aws:ec2/routeTableAssociation:RouteTableAssociation", "routeTableId"),  # ReplaceRouteTableAssociation
        ("aws:ec2/placementGroup:PlacementGroup", "tags.Name"),
        ("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule", "fromPort"),
        ("kubernetes:core/v1:PersistentVolumeClaim", "spec.resources.requests.storage"),  # expansion
        ("kubernetes:helm.sh/v3:Release", "values.driver.enabled"),
        ("kubernetes:core/v1:ConfigMap", "data.x"),
        ("aws:cloudwatch/logGroup:LogGroup", "retentionInDays"),
    ],
)
def test_other_changes_update_in_place(type_token: str, path: str) -> None:
    assert not replaces(type_token, path)

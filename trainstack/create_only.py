"""Which inputs are create-only: changing one makes the provider replace the resource (delete and create).

The source is the AWS service's own statement, the CloudFormation registry schemas cfn-lint ships as package data
(`createOnlyProperties`, read through `stacks.cfn_data`; cfn-lint is pinned in pyproject.toml), mapped to
pulumi-aws inputs by the explicit table `CFN_EQUIVALENT` below. pulumi-aws bridges terraform-provider-aws, whose
`ForceNew` flags mostly agree with CloudFormation; where they differ, `pulumi up` follows Terraform, so the
difference is written down with both sources: `FORCE_NEW_ONLY` (Terraform replaces, CloudFormation updates or has
no such property) and `IN_PLACE` (CloudFormation replaces, Terraform updates in place). pulumi-aws types with no
CloudFormation equivalent carry their Terraform `ForceNew` inputs in `NO_CFN_TYPE`. aws-native types are
CloudFormation types, and pulumi-aws-native replaces on exactly the schema's create-only properties.

Terraform sources are terraform-provider-aws `internal/service/<svc>/<resource>.go` ("ForceNew: true"), the
version pulumi-aws 7.x bridges, read 2026-11-29/30 (not fetchable here: the repository is over 500 MB), and the
pulumi-aws 7.51.1 docstrings where they say so.

Kubernetes kinds: the API server refuses a change of an immutable field, and pulumi-kubernetes replaces the
object instead; those fields (Kubernetes API reference, v1.33) are `K8S_IMMUTABLE`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType

from stacks.cfn_data import read
from trainstack.tokens import (
    ACCESS_ENTRY,
    ACCESS_POLICY_ASSOCIATION,
    AMP_ALERT_MANAGER_DEFINITION,
    AMP_RULE_GROUP_NAMESPACE,
    AMP_SCRAPER,
    AMP_WORKSPACE,
    AUTOSCALING_TAG,
    BUCKET,
    BUCKET_ENCRYPTION,
    BUCKET_LIFECYCLE_CONFIGURATION,
    BUCKET_OBJECT,
    BUCKET_OBJECT_LOCK,
    BUCKET_POLICY,
    BUCKET_PUBLIC_ACCESS_BLOCK,
    BUCKET_VERSIONING,
    DEFAULT_SECURITY_GROUP,
    EIP,
    EKS_ADDON,
    EKS_CLUSTER,
    FLOW_LOG,
    FSX_DATA_REPOSITORY_ASSOCIATION,
    FSX_LUSTRE,
    HELM_RELEASE,
    HYPERPOD_CLUSTER,
    IAM_OIDC_PROVIDER,
    IAM_ROLE,
    IAM_ROLE_POLICY,
    IAM_ROLE_POLICY_ATTACHMENT,
    INTERNET_GATEWAY,
    K8S_JOB,
    KMS_ALIAS,
    KMS_KEY,
    LAUNCH_TEMPLATE,
    LOG_GROUP,
    NAT_GATEWAY,
    NODE_GROUP,
    PERSISTENT_VOLUME,
    PERSISTENT_VOLUME_CLAIM,
    PLACEMENT_GROUP,
    POD_IDENTITY_ASSOCIATION,
    ROUTE,
    ROUTE_TABLE,
    ROUTE_TABLE_ASSOCIATION,
    SECURITY_GROUP,
    SECURITY_GROUP_EGRESS_RULE,
    SECURITY_GROUP_INGRESS_RULE,
    SNS_TOPIC,
    SNS_TOPIC_POLICY,
    SNS_TOPIC_SUBSCRIPTION,
    SUBNET,
    VPC,
    VPC_ENDPOINT,
)

SCHEMA_REGION = "us-east-1"  # create-only is a property of the type, the same in every region's schema file

# pulumi-aws type -> (CloudFormation type, {CFN property path: pulumi input path, or None when pulumi-aws has no
# such input}). A CFN path not listed maps by case: `KubernetesNetworkConfig/IpFamily` ->
# `kubernetesNetworkConfig.ipFamily`. tests/unit/test_create_only.py checks that every mapped path is a real input.
CFN_EQUIVALENT: Mapping[str, tuple[str, Mapping[str, str | None]]] = {
    AMP_RULE_GROUP_NAMESPACE: ("AWS::APS::RuleGroupsNamespace", {"Workspace": "workspaceId"}),
    AMP_SCRAPER: ("AWS::APS::Scraper", {}),
    AMP_WORKSPACE: ("AWS::APS::Workspace", {}),
    LOG_GROUP: ("AWS::Logs::LogGroup", {"LogGroupName": "name"}),
    EIP: ("AWS::EC2::EIP", {"TransferAddress": None}),
    FLOW_LOG: (
        "AWS::EC2::FlowLog",
        {"DeliverLogsPermissionArn": "iamRoleArn", "LogGroupName": None, "ResourceId": "vpcId", "ResourceType": None},
    ),
    INTERNET_GATEWAY: ("AWS::EC2::InternetGateway", {}),
    LAUNCH_TEMPLATE: ("AWS::EC2::LaunchTemplate", {"LaunchTemplateName": "name"}),
    NAT_GATEWAY: ("AWS::EC2::NatGateway", {"PrivateIpAddress": "privateIp"}),
    PLACEMENT_GROUP: ("AWS::EC2::PlacementGroup", {"ParentGroupId": None}),
    ROUTE: ("AWS::EC2::Route", {}),
    ROUTE_TABLE: ("AWS::EC2::RouteTable", {}),
    ROUTE_TABLE_ASSOCIATION: ("AWS::EC2::SubnetRouteTableAssociation", {}),
    SECURITY_GROUP: (
        "AWS::EC2::SecurityGroup",
        {"GroupDescription": "description", "GroupName": "name"},
    ),
    SUBNET: ("AWS::EC2::Subnet", {}),
    VPC: ("AWS::EC2::VPC", {"VpcEncryptionControl": None}),
    VPC_ENDPOINT: (
        "AWS::EC2::VPCEndpoint",
        {"DnsOptions/PrivateDnsPreference": None, "DnsOptions/PrivateDnsSpecifiedDomains": None},
    ),
    ACCESS_ENTRY: ("AWS::EKS::AccessEntry", {}),
    EKS_ADDON: ("AWS::EKS::Addon", {}),
    EKS_CLUSTER: ("AWS::EKS::Cluster", {}),
    NODE_GROUP: (
        "AWS::EKS::Nodegroup",
        {"NodegroupName": "nodeGroupName", "NodeRole": "nodeRoleArn", "Subnets": "subnetIds"},
    ),
    POD_IDENTITY_ASSOCIATION: ("AWS::EKS::PodIdentityAssociation", {}),
    FSX_DATA_REPOSITORY_ASSOCIATION: ("AWS::FSx::DataRepositoryAssociation", {}),
    # FileSystemType is fixed by the pulumi type (LUSTRE).
    FSX_LUSTRE: ("AWS::FSx::FileSystem", {"FileSystemType": None}),
    IAM_OIDC_PROVIDER: ("AWS::IAM::OIDCProvider", {}),
    IAM_ROLE: ("AWS::IAM::Role", {"RoleName": "name"}),
    IAM_ROLE_POLICY: ("AWS::IAM::RolePolicy", {"PolicyName": "name", "RoleName": "role"}),
    KMS_ALIAS: ("AWS::KMS::Alias", {"AliasName": "name"}),
    KMS_KEY: ("AWS::KMS::Key", {}),
    BUCKET: ("AWS::S3::Bucket", {"BucketName": "bucket", "BucketNamePrefix": "bucketPrefix"}),
    BUCKET_POLICY: ("AWS::S3::BucketPolicy", {}),
    SNS_TOPIC: ("AWS::SNS::Topic", {"TopicName": "name"}),
    # CFN's TopicPolicy takes a list of topics (updatable); pulumi-aws's attaches to one `arn`.
    SNS_TOPIC_POLICY: ("AWS::SNS::TopicPolicy", {}),
    # pulumi-aws's `topic` is CFN's TopicArn (create-only there, as Endpoint and Protocol).
    SNS_TOPIC_SUBSCRIPTION: ("AWS::SNS::Subscription", {"TopicArn": "topic"}),
}

# pulumi-aws types CloudFormation models as a property of another type (S3 bucket sub-resources are properties of
# AWS::S3::Bucket, access policies of AWS::EKS::AccessEntry, managed policy ARNs of AWS::IAM::Role, the alert
# manager definition of AWS::APS::Workspace) or does not model (S3 objects; the rule-id security group rules of
# AuthorizeSecurityGroupIngress/ModifySecurityGroupRules, which AWS::EC2::SecurityGroupIngress predates: CFN makes
# every field of those create-only, Terraform updates all but the group in place). Terraform ForceNew inputs.
NO_CFN_TYPE: Mapping[str, frozenset[str]] = {
    # group_tag.go (aws_autoscaling_group_tag): both arguments ForceNew, no update; CloudFormation has tags only
    # as a property of its own AWS::AutoScaling::AutoScalingGroup, not of an EKS-created group.
    AUTOSCALING_TAG: frozenset({"autoscalingGroupName", "tag"}),
    AMP_ALERT_MANAGER_DEFINITION: frozenset({"workspaceId"}),
    # access_policy_association.go has no update: every argument is ForceNew.
    # default_security_group.go: the VPC is ForceNew; CloudFormation cannot adopt a VPC's default group at all.
    DEFAULT_SECURITY_GROUP: frozenset({"vpcId"}),
    ACCESS_POLICY_ASSOCIATION: frozenset({"clusterName", "principalArn", "policyArn", "accessScope"}),
    IAM_ROLE_POLICY_ATTACHMENT: frozenset({"role", "policyArn"}),
    BUCKET_LIFECYCLE_CONFIGURATION: frozenset({"bucket", "expectedBucketOwner"}),
    BUCKET_OBJECT_LOCK: frozenset({"bucket", "expectedBucketOwner"}),
    BUCKET_OBJECT: frozenset({"bucket", "key"}),
    BUCKET_PUBLIC_ACCESS_BLOCK: frozenset({"bucket"}),
    BUCKET_ENCRYPTION: frozenset({"bucket", "expectedBucketOwner"}),
    BUCKET_VERSIONING: frozenset({"bucket", "expectedBucketOwner"}),
    SECURITY_GROUP_EGRESS_RULE: frozenset({"securityGroupId"}),
    SECURITY_GROUP_INGRESS_RULE: frozenset({"securityGroupId"}),
}

# Terraform ForceNew, not create-only in the CloudFormation schema (or no CFN property): `pulumi up` replaces.
FORCE_NEW_ONLY: Mapping[str, Mapping[str, str]] = {
    FSX_LUSTRE: {
        # CFN nests these under LustreConfiguration and lists none as create-only; FSx has no API to change them.
        "deploymentType": "lustre_file_system.go ForceNew",
        "storageType": "lustre_file_system.go ForceNew",
        "efaEnabled": "lustre_file_system.go ForceNew; docstring: must be set at creation, cannot be changed",
    },
    NODE_GROUP: {
        "nodeGroupNamePrefix": "node_group.go ForceNew (no CFN property)",
        # CFN updates the node group to another launch template; Terraform replaces on a new id or name.
        "launchTemplate.id": "node_group.go launch_template.id ForceNew",
        "launchTemplate.name": "node_group.go launch_template.name ForceNew",
    },
    PLACEMENT_GROUP: {"name": "placement_group.go ForceNew (CFN generates the name)"},
    IAM_ROLE: {"namePrefix": "role.go ForceNew (no CFN property)"},
    KMS_ALIAS: {"namePrefix": "alias.go ForceNew (no CFN property)"},
    SNS_TOPIC: {"namePrefix": "topic.go ForceNew (no CFN property)"},
    # CFN's KMS handler schedules the old key for deletion and creates a new one itself (no createOnly entry).
    KMS_KEY: {"customerMasterKeySpec": "key.go ForceNew", "keyUsage": "key.go ForceNew"},
    SNS_TOPIC_POLICY: {"arn": "topic_policy.go ForceNew (CFN TopicPolicy.Topics is updatable)"},
}

# Create-only in the CloudFormation schema, updated in place by terraform-provider-aws (so by `pulumi up`).
IN_PLACE: Mapping[str, Mapping[str, str]] = {
    # tags_all is updated with CreateTags/DeleteTags like every EC2 resource (placement_group.go: no ForceNew).
    PLACEMENT_GROUP: {"tags": "placement_group.go: tags updatable"},
    # route_table_association.go: route_table_id is updated with ReplaceRouteTableAssociation.
    ROUTE_TABLE_ASSOCIATION: {"routeTableId": "ReplaceRouteTableAssociation"},
}

# Kubernetes: fields the API server refuses to change (Kubernetes API reference v1.33; pulumi-kubernetes replaces
# the object instead, "Replacements" in its docs). metadata.name and metadata.namespace identify every object.
# A Helm release's `name` (and `namespace`) is the release's identity: pulumi-kubernetes Release replaces on them.
K8S_IDENTITY = frozenset({"metadata.name", "metadata.namespace"})
K8S_IMMUTABLE: Mapping[str, frozenset[str]] = {
    # Job: spec.selector, spec.template are immutable (batch/v1 JobSpec; template only while not suspended).
    K8S_JOB: frozenset({"spec.selector", "spec.template", "spec.completionMode"}),
    # PersistentVolumeClaim: the spec is immutable once bound except resources.requests (expansion) and
    # volumeAttributesClassName (core/v1 PersistentVolumeClaimSpec).
    PERSISTENT_VOLUME_CLAIM: frozenset(
        {
            "spec.accessModes",
            "spec.selector",
            "spec.storageClassName",
            "spec.volumeMode",
            "spec.volumeName",
            "spec.dataSource",
            "spec.dataSourceRef",
            "spec.resources.limits",
        }
    ),
    # PersistentVolume: the volume source is immutable after creation (core/v1 PersistentVolumeSpec: "csi" and the
    # other sources), and so are volumeMode and the node affinity.
    PERSISTENT_VOLUME: frozenset({"spec.csi", "spec.volumeMode", "spec.nodeAffinity"}),
    HELM_RELEASE: frozenset({"name", "namespace"}),
    # ValidatingAdmissionPolicy(Binding), ConfigMap, ServiceAccount, Namespace, LimitRange, ResourceQuota and
    # NetworkPolicy change in place beyond their identity. Custom resources whose CRDs freeze fields (transition
    # rules `self == oldSelf`, recorded in trainstack/contracts/facts/crds) carry their own `replace_on_changes`
    # (components/k8s_common.py IMMUTABLE_FIELDS), which the engine records and the diff honours; the day-2
    # journey checks that every frozen field is covered.
}


def _input_path(cfn_path: str) -> str:
    """`KubernetesNetworkConfig/IpFamily` -> `kubernetesNetworkConfig.ipFamily` (the usual case mapping)."""
    return ".".join(part[:1].lower() + part[1:] for part in cfn_path.split("/"))


def cfn_create_only(cfn_type: str) -> tuple[str, ...]:
    """The type's `createOnlyProperties` as CFN property paths (`Name`, `KubernetesNetworkConfig/IpFamily`)."""
    schema = read(f"resources/{read(f'providers/{SCHEMA_REGION}.json')[cfn_type]}.json")
    return tuple(sorted(re.sub(r"^/properties/", "", p) for p in schema.get("createOnlyProperties", ())))


def from_cloudformation(type_token: str) -> frozenset[str]:
    """The pulumi-aws inputs of `type_token` that CloudFormation says are create-only, through `CFN_EQUIVALENT`."""
    cfn_type, renames = CFN_EQUIVALENT[type_token]
    paths = (renames[p] if p in renames else _input_path(p) for p in cfn_create_only(cfn_type))
    return frozenset(p for p in paths if p is not None)


def _aws_table() -> dict[str, frozenset[str]]:
    table = {token: set(from_cloudformation(token)) for token in CFN_EQUIVALENT}
    table |= {token: set(inputs) for token, inputs in NO_CFN_TYPE.items()}
    for token, extra in FORCE_NEW_ONLY.items():
        table[token] |= set(extra)
    for token, in_place in IN_PLACE.items():
        table[token] -= set(in_place)
    return {token: frozenset(inputs) for token, inputs in sorted(table.items()) if inputs}


# aws-native:sagemaker:Cluster and any other aws-native type trainstack creates: the CFN schema itself.
AWS_NATIVE_TYPES = {HYPERPOD_CLUSTER: "AWS::SageMaker::Cluster"}

# Inputs (engine names; an entry covers everything under it) whose change replaces the resource.
REPLACE_ON_CHANGE: Mapping[str, frozenset[str]] = MappingProxyType(
    {
        **_aws_table(),
        **{token: frozenset(map(_input_path, cfn_create_only(cfn))) for token, cfn in AWS_NATIVE_TYPES.items()},
        **K8S_IMMUTABLE,
    }
)


def replaces(type_token: str, path: str) -> bool:
    """True when changing the input at `path` (engine names, e.g. subnetIds[0]) replaces a `type_token`."""
    fields = REPLACE_ON_CHANGE.get(type_token, frozenset())
    if type_token.startswith("kubernetes:") and type_token != HELM_RELEASE:
        fields = fields | K8S_IDENTITY
    return any(path == f or path.startswith((f"{f}.", f"{f}[")) for f in fields)

"""pulumi-aws inputs against the AWS API models botocore ships (enums, required members, min/max, patterns).

The provider turns each resource's inputs into API calls; `API_MAP` says, for every resource type checked,
which operation each input path becomes and at which member of its request shape. The map is ours and small
on purpose: a path that is not listed is not judged, and a test proves that every listed member exists in the
model, so the map cannot rot silently when botocore moves. Paths use the engine's camelCase input names, `.`
between levels and `[]` for "each item of a list" (in the input) or "the list's member shape" (in the model).

What the models cannot say (cross-member rules, limits only the guides state) lives in `aws_rules.py`.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trainstack.contracts import ContractViolation, render_value
from trainstack.engine import UNKNOWN, Recording
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
    IAM_OIDC_PROVIDER,
    IAM_ROLE,
    IAM_ROLE_POLICY,
    IAM_ROLE_POLICY_ATTACHMENT,
    INTERNET_GATEWAY,
    KMS_ALIAS,
    KMS_KEY,
    LAUNCH_TEMPLATE,
    LOG_GROUP,
    NAT_GATEWAY,
    NODE_GROUP,
    PLACEMENT_GROUP,
    POD_IDENTITY_ASSOCIATION,
    ROUTE,
    ROUTE_TABLE,
    ROUTE_TABLE_ASSOCIATION,
    SECURITY_GROUP,
    SNS_TOPIC,
    SNS_TOPIC_POLICY,
    SNS_TOPIC_SUBSCRIPTION,
    SUBNET,
    VPC,
    VPC_ENDPOINT,
)


@dataclass(frozen=True)
class ApiCall:
    """One API operation a resource's inputs become, and where each input lands in its request."""

    service: str  # botocore service name (data directory)
    operation: str
    members: Mapping[str, str]  # input path -> member path in the operation's input shape
    provider_sets: tuple[str, ...] = field(default=())  # required members the provider fills itself


# Launch template data lives one level down in CreateLaunchTemplate's request.
_LT = "LaunchTemplateData"

API_MAP: dict[str, tuple[ApiCall, ...]] = {
    EKS_CLUSTER: (
        ApiCall(
            "eks",
            "CreateCluster",
            {
                "name": "name",
                "roleArn": "roleArn",
                "version": "version",
                "vpcConfig.subnetIds": "resourcesVpcConfig.subnetIds",
                "vpcConfig.endpointPrivateAccess": "resourcesVpcConfig.endpointPrivateAccess",
                "vpcConfig.endpointPublicAccess": "resourcesVpcConfig.endpointPublicAccess",
                "vpcConfig.publicAccessCidrs": "resourcesVpcConfig.publicAccessCidrs",
                "enabledClusterLogTypes": "logging.clusterLogging[].types",
                "encryptionConfig.resources": "encryptionConfig[].resources",
                "encryptionConfig.provider.keyArn": "encryptionConfig[].provider.keyArn",
                "accessConfig.authenticationMode": "accessConfig.authenticationMode",
                "accessConfig.bootstrapClusterCreatorAdminPermissions": (
                    "accessConfig.bootstrapClusterCreatorAdminPermissions"
                ),
                "bootstrapSelfManagedAddons": "bootstrapSelfManagedAddons",
                "upgradePolicy.supportType": "upgradePolicy.supportType",
                "deletionProtection": "deletionProtection",
            },
            # The VPC block is always sent (the provider builds it from vpcConfig).
            provider_sets=("resourcesVpcConfig",),
        ),
    ),
    NODE_GROUP: (
        ApiCall(
            "eks",
            "CreateNodegroup",
            {
                "clusterName": "clusterName",
                "nodeGroupName": "nodegroupName",
                "nodeRoleArn": "nodeRole",
                "subnetIds": "subnets",
                "version": "version",
                "amiType": "amiType",
                "capacityType": "capacityType",
                "instanceTypes": "instanceTypes",
                "diskSize": "diskSize",
                "scalingConfig.minSize": "scalingConfig.minSize",
                "scalingConfig.maxSize": "scalingConfig.maxSize",
                "scalingConfig.desiredSize": "scalingConfig.desiredSize",
                "updateConfig.maxUnavailable": "updateConfig.maxUnavailable",
                "updateConfig.maxUnavailablePercentage": "updateConfig.maxUnavailablePercentage",
                "updateConfig.updateStrategy": "updateConfig.updateStrategy",
                "launchTemplate.id": "launchTemplate.id",
                "launchTemplate.version": "launchTemplate.version",
                "labels": "labels",
                "taints[].key": "taints[].key",
                "taints[].value": "taints[].value",
                "taints[].effect": "taints[].effect",
                "nodeRepairConfig.enabled": "nodeRepairConfig.enabled",
                "nodeRepairConfig.maxParallelNodesRepairedCount": "nodeRepairConfig.maxParallelNodesRepairedCount",
                "nodeRepairConfig.maxParallelNodesRepairedPercentage": (
                    "nodeRepairConfig.maxParallelNodesRepairedPercentage"
                ),
                "nodeRepairConfig.maxUnhealthyNodeThresholdCount": "nodeRepairConfig.maxUnhealthyNodeThresholdCount",
                "nodeRepairConfig.maxUnhealthyNodeThresholdPercentage": (
                    "nodeRepairConfig.maxUnhealthyNodeThresholdPercentage"
                ),
                "tags": "tags",
            },
            provider_sets=("nodegroupName",),  # auto-named when `node_group_name` is left out
        ),
    ),
    # Scale-from-zero tags on a managed node group's Auto Scaling group (components/k8s/cluster_autoscaler.py): the
    # provider sends one Tags[] entry and fills ResourceType `auto-scaling-group` itself.
    AUTOSCALING_TAG: (
        ApiCall(
            "autoscaling",
            "CreateOrUpdateTags",
            {
                "autoscalingGroupName": "Tags[].ResourceId",
                "tag.key": "Tags[].Key",
                "tag.value": "Tags[].Value",
                "tag.propagateAtLaunch": "Tags[].PropagateAtLaunch",
            },
        ),
    ),
    EKS_ADDON: (
        ApiCall(
            "eks",
            "CreateAddon",
            {
                "clusterName": "clusterName",
                "addonName": "addonName",
                "addonVersion": "addonVersion",
                "serviceAccountRoleArn": "serviceAccountRoleArn",
                "resolveConflictsOnCreate": "resolveConflicts",
                "configurationValues": "configurationValues",
                "podIdentityAssociations[].roleArn": "podIdentityAssociations[].roleArn",
                "podIdentityAssociations[].serviceAccount": "podIdentityAssociations[].serviceAccount",
            },
        ),
        ApiCall("eks", "UpdateAddon", {"resolveConflictsOnUpdate": "resolveConflicts"}, ("clusterName", "addonName")),
    ),
    ACCESS_ENTRY: (
        ApiCall(
            "eks",
            "CreateAccessEntry",
            {
                "clusterName": "clusterName",
                "principalArn": "principalArn",
                "type": "type",
                "kubernetesGroups": "kubernetesGroups",
                "userName": "username",
            },
        ),
    ),
    ACCESS_POLICY_ASSOCIATION: (
        ApiCall(
            "eks",
            "AssociateAccessPolicy",
            {
                "clusterName": "clusterName",
                "principalArn": "principalArn",
                "policyArn": "policyArn",
                "accessScope": "accessScope",
                "accessScope.type": "accessScope.type",
                "accessScope.namespaces": "accessScope.namespaces",
            },
        ),
    ),
    POD_IDENTITY_ASSOCIATION: (
        ApiCall(
            "eks",
            "CreatePodIdentityAssociation",
            {
                "clusterName": "clusterName",
                "namespace": "namespace",
                "serviceAccount": "serviceAccount",
                "roleArn": "roleArn",
            },
        ),
    ),
    LAUNCH_TEMPLATE: (
        ApiCall(
            "ec2",
            "CreateLaunchTemplate",
            {
                "name": "LaunchTemplateName",
                "description": "VersionDescription",
                "instanceType": f"{_LT}.InstanceType",
                "imageId": f"{_LT}.ImageId",
                "userData": f"{_LT}.UserData",
                "vpcSecurityGroupIds": f"{_LT}.SecurityGroupIds",
                "networkInterfaces[].networkCardIndex": f"{_LT}.NetworkInterfaces[].NetworkCardIndex",
                "networkInterfaces[].deviceIndex": f"{_LT}.NetworkInterfaces[].DeviceIndex",
                "networkInterfaces[].interfaceType": f"{_LT}.NetworkInterfaces[].InterfaceType",
                "networkInterfaces[].deleteOnTermination": f"{_LT}.NetworkInterfaces[].DeleteOnTermination",
                "networkInterfaces[].securityGroups": f"{_LT}.NetworkInterfaces[].Groups",
                "networkInterfaces[].subnetId": f"{_LT}.NetworkInterfaces[].SubnetId",
                "metadataOptions.httpEndpoint": f"{_LT}.MetadataOptions.HttpEndpoint",
                "metadataOptions.httpTokens": f"{_LT}.MetadataOptions.HttpTokens",
                "metadataOptions.httpPutResponseHopLimit": f"{_LT}.MetadataOptions.HttpPutResponseHopLimit",
                "metadataOptions.instanceMetadataTags": f"{_LT}.MetadataOptions.InstanceMetadataTags",
                "blockDeviceMappings[].deviceName": f"{_LT}.BlockDeviceMappings[].DeviceName",
                "blockDeviceMappings[].ebs.volumeSize": f"{_LT}.BlockDeviceMappings[].Ebs.VolumeSize",
                "blockDeviceMappings[].ebs.volumeType": f"{_LT}.BlockDeviceMappings[].Ebs.VolumeType",
                "blockDeviceMappings[].ebs.encrypted": f"{_LT}.BlockDeviceMappings[].Ebs.Encrypted",
                "blockDeviceMappings[].ebs.kmsKeyId": f"{_LT}.BlockDeviceMappings[].Ebs.KmsKeyId",
                "blockDeviceMappings[].ebs.deleteOnTermination": f"{_LT}.BlockDeviceMappings[].Ebs.DeleteOnTermination",
                "blockDeviceMappings[].ebs.iops": f"{_LT}.BlockDeviceMappings[].Ebs.Iops",
                "blockDeviceMappings[].ebs.throughput": f"{_LT}.BlockDeviceMappings[].Ebs.Throughput",
                "capacityReservationSpecification.capacityReservationPreference": (
                    f"{_LT}.CapacityReservationSpecification.CapacityReservationPreference"
                ),
                "capacityReservationSpecification.capacityReservationTarget.capacityReservationId": (
                    f"{_LT}.CapacityReservationSpecification.CapacityReservationTarget.CapacityReservationId"
                ),
                "instanceMarketOptions.marketType": f"{_LT}.InstanceMarketOptions.MarketType",
                "placement.groupName": f"{_LT}.Placement.GroupName",
                "placement.availabilityZone": f"{_LT}.Placement.AvailabilityZone",
                "placement.tenancy": f"{_LT}.Placement.Tenancy",
                "tagSpecifications[].resourceType": f"{_LT}.TagSpecifications[].ResourceType",
            },
            # The provider always sends a LaunchTemplateData block, empty or not.
            provider_sets=(_LT, "LaunchTemplateName"),  # auto-named (name_prefix) when `name` is left out
        ),
    ),
    SUBNET: (
        ApiCall(
            "ec2",
            "CreateSubnet",
            {"vpcId": "VpcId", "cidrBlock": "CidrBlock", "availabilityZone": "AvailabilityZone"},
        ),
    ),
    VPC_ENDPOINT: (
        ApiCall(
            "ec2",
            "CreateVpcEndpoint",
            {
                "vpcId": "VpcId",
                "serviceName": "ServiceName",
                "vpcEndpointType": "VpcEndpointType",
                "privateDnsEnabled": "PrivateDnsEnabled",
                "routeTableIds": "RouteTableIds",
                "subnetIds": "SubnetIds",
                "securityGroupIds": "SecurityGroupIds",
                "ipAddressType": "IpAddressType",
                "policy": "PolicyDocument",
            },
        ),
    ),
    # Adopting a VPC's default group creates nothing: the provider finds it (DescribeSecurityGroups by vpc-id) and
    # revokes its rules; no input of ours lands in a request member the model constrains.
    DEFAULT_SECURITY_GROUP: (ApiCall("ec2", "DescribeSecurityGroups", {}),),
    SECURITY_GROUP: (
        ApiCall(
            "ec2",
            "CreateSecurityGroup",
            {"name": "GroupName", "description": "Description", "vpcId": "VpcId"},
            provider_sets=("GroupName",),  # auto-named by the engine when `name` is left out
        ),
    ),
    **{
        f"aws:vpc/securityGroup{direction}Rule:SecurityGroup{direction}Rule": (
            ApiCall(
                "ec2",
                f"AuthorizeSecurityGroup{direction}",
                {
                    "securityGroupId": "GroupId",
                    "ipProtocol": "IpPermissions[].IpProtocol",
                    "fromPort": "IpPermissions[].FromPort",
                    "toPort": "IpPermissions[].ToPort",
                    "cidrIpv4": "IpPermissions[].IpRanges[].CidrIp",
                    "cidrIpv6": "IpPermissions[].Ipv6Ranges[].CidrIpv6",
                    "referencedSecurityGroupId": "IpPermissions[].UserIdGroupPairs[].GroupId",
                    "prefixListId": "IpPermissions[].PrefixListIds[].PrefixListId",
                },
                provider_sets=("GroupId",),
            ),
        )
        for direction in ("Ingress", "Egress")
    },
    FSX_LUSTRE: (
        ApiCall(
            "fsx",
            "CreateFileSystem",
            {
                "storageCapacity": "StorageCapacity",
                "storageType": "StorageType",
                "subnetIds": "SubnetIds[]",  # one subnet id: the provider sends it as a one-item list
                "securityGroupIds": "SecurityGroupIds",
                "kmsKeyId": "KmsKeyId",
                "fileSystemTypeVersion": "FileSystemTypeVersion",
                "deploymentType": "LustreConfiguration.DeploymentType",
                "perUnitStorageThroughput": "LustreConfiguration.PerUnitStorageThroughput",
                "dataCompressionType": "LustreConfiguration.DataCompressionType",
                "automaticBackupRetentionDays": "LustreConfiguration.AutomaticBackupRetentionDays",
                "copyTagsToBackups": "LustreConfiguration.CopyTagsToBackups",
                "weeklyMaintenanceStartTime": "LustreConfiguration.WeeklyMaintenanceStartTime",
                "dailyAutomaticBackupStartTime": "LustreConfiguration.DailyAutomaticBackupStartTime",
                "efaEnabled": "LustreConfiguration.EfaEnabled",
                "logConfiguration": "LustreConfiguration.LogConfiguration",
                "logConfiguration.level": "LustreConfiguration.LogConfiguration.Level",
                "logConfiguration.destination": "LustreConfiguration.LogConfiguration.Destination",
                "metadataConfiguration": "LustreConfiguration.MetadataConfiguration",
                "metadataConfiguration.mode": "LustreConfiguration.MetadataConfiguration.Mode",
                "metadataConfiguration.iops": "LustreConfiguration.MetadataConfiguration.Iops",
                "throughputCapacity": "LustreConfiguration.ThroughputCapacity",
                "rootSquashConfiguration.rootSquash": "LustreConfiguration.RootSquashConfiguration.RootSquash",
                "rootSquashConfiguration.noSquashNids": "LustreConfiguration.RootSquashConfiguration.NoSquashNids",
            },
            provider_sets=("FileSystemType",),  # always LUSTRE for this resource
        ),
    ),
    FSX_DATA_REPOSITORY_ASSOCIATION: (
        ApiCall(
            "fsx",
            "CreateDataRepositoryAssociation",
            {
                "fileSystemId": "FileSystemId",
                "fileSystemPath": "FileSystemPath",
                "dataRepositoryPath": "DataRepositoryPath",
                "batchImportMetaDataOnCreate": "BatchImportMetaDataOnCreate",
                "importedFileChunkSize": "ImportedFileChunkSize",
                "s3.autoImportPolicy.events": "S3.AutoImportPolicy.Events",
                "s3.autoExportPolicy.events": "S3.AutoExportPolicy.Events",
            },
        ),
        ApiCall(
            "fsx",
            "DeleteDataRepositoryAssociation",
            {"deleteDataInFilesystem": "DeleteDataInFileSystem"},
            ("AssociationId",),
        ),
    ),
    KMS_KEY: (
        ApiCall(
            "kms",
            "CreateKey",
            {
                "policy": "Policy",
                "description": "Description",
                "keyUsage": "KeyUsage",
                "customerMasterKeySpec": "KeySpec",
                "multiRegion": "MultiRegion",
                "bypassPolicyLockoutSafetyCheck": "BypassPolicyLockoutSafetyCheck",
            },
        ),
        ApiCall("kms", "ScheduleKeyDeletion", {"deletionWindowInDays": "PendingWindowInDays"}, ("KeyId",)),
        ApiCall("kms", "EnableKeyRotation", {"rotationPeriodInDays": "RotationPeriodInDays"}, ("KeyId",)),
    ),
    KMS_ALIAS: (ApiCall("kms", "CreateAlias", {"name": "AliasName", "targetKeyId": "TargetKeyId"}),),
    BUCKET: (ApiCall("s3", "CreateBucket", {"bucket": "Bucket"}, ("Bucket",)),),
    BUCKET_ENCRYPTION: (
        ApiCall(
            "s3",
            "PutBucketEncryption",
            {
                "bucket": "Bucket",
                "rules[].applyServerSideEncryptionByDefault.sseAlgorithm": (
                    "ServerSideEncryptionConfiguration.Rules[].ApplyServerSideEncryptionByDefault.SSEAlgorithm"
                ),
                "rules[].applyServerSideEncryptionByDefault.kmsMasterKeyId": (
                    "ServerSideEncryptionConfiguration.Rules[].ApplyServerSideEncryptionByDefault.KMSMasterKeyID"
                ),
                "rules[].bucketKeyEnabled": "ServerSideEncryptionConfiguration.Rules[].BucketKeyEnabled",
            },
            provider_sets=("ServerSideEncryptionConfiguration",),
        ),
    ),
    BUCKET_VERSIONING: (
        ApiCall(
            "s3",
            "PutBucketVersioning",
            {
                "bucket": "Bucket",
                "versioningConfiguration": "VersioningConfiguration",
                "versioningConfiguration.status": "VersioningConfiguration.Status",
                "versioningConfiguration.mfaDelete": "VersioningConfiguration.MFADelete",
            },
        ),
    ),
    BUCKET_PUBLIC_ACCESS_BLOCK: (
        ApiCall(
            "s3",
            "PutPublicAccessBlock",
            {
                "bucket": "Bucket",
                "blockPublicAcls": "PublicAccessBlockConfiguration.BlockPublicAcls",
                "blockPublicPolicy": "PublicAccessBlockConfiguration.BlockPublicPolicy",
                "ignorePublicAcls": "PublicAccessBlockConfiguration.IgnorePublicAcls",
                "restrictPublicBuckets": "PublicAccessBlockConfiguration.RestrictPublicBuckets",
            },
            provider_sets=("PublicAccessBlockConfiguration",),
        ),
    ),
    BUCKET_POLICY: (ApiCall("s3", "PutBucketPolicy", {"bucket": "Bucket", "policy": "Policy"}),),
    BUCKET_OBJECT_LOCK: (
        ApiCall(
            "s3",
            "PutObjectLockConfiguration",
            {
                "bucket": "Bucket",
                "expectedBucketOwner": "ExpectedBucketOwner",
                "objectLockEnabled": "ObjectLockConfiguration.ObjectLockEnabled",
                "rule.defaultRetention.mode": "ObjectLockConfiguration.Rule.DefaultRetention.Mode",
                "rule.defaultRetention.days": "ObjectLockConfiguration.Rule.DefaultRetention.Days",
                "rule.defaultRetention.years": "ObjectLockConfiguration.Rule.DefaultRetention.Years",
            },
        ),
    ),
    BUCKET_LIFECYCLE_CONFIGURATION: (
        ApiCall(
            "s3",
            "PutBucketLifecycleConfiguration",
            {
                "bucket": "Bucket",
                "rules": "LifecycleConfiguration.Rules",
                "rules[].id": "LifecycleConfiguration.Rules[].ID",
                "rules[].status": "LifecycleConfiguration.Rules[].Status",
                "rules[].filter.prefix": "LifecycleConfiguration.Rules[].Filter.Prefix",
                "rules[].expiration.days": "LifecycleConfiguration.Rules[].Expiration.Days",
                "rules[].expiration.expiredObjectDeleteMarker": (
                    "LifecycleConfiguration.Rules[].Expiration.ExpiredObjectDeleteMarker"
                ),
                "rules[].noncurrentVersionExpiration.noncurrentDays": (
                    "LifecycleConfiguration.Rules[].NoncurrentVersionExpiration.NoncurrentDays"
                ),
                "rules[].noncurrentVersionExpiration.newerNoncurrentVersions": (
                    "LifecycleConfiguration.Rules[].NoncurrentVersionExpiration.NewerNoncurrentVersions"
                ),
                "rules[].abortIncompleteMultipartUpload.daysAfterInitiation": (
                    "LifecycleConfiguration.Rules[].AbortIncompleteMultipartUpload.DaysAfterInitiation"
                ),
            },
        ),
    ),
    BUCKET_OBJECT: (
        ApiCall(
            "s3",
            "PutObject",
            {
                "bucket": "Bucket",
                "key": "Key",
                "checksumAlgorithm": "ChecksumAlgorithm",
                "contentType": "ContentType",
                "serverSideEncryption": "ServerSideEncryption",
                "storageClass": "StorageClass",
            },
        ),
    ),
    IAM_ROLE: (
        ApiCall(
            "iam",
            "CreateRole",
            {
                "name": "RoleName",
                "path": "Path",
                "assumeRolePolicy": "AssumeRolePolicyDocument",
                "description": "Description",
                "maxSessionDuration": "MaxSessionDuration",
                "permissionsBoundary": "PermissionsBoundary",
            },
            provider_sets=("RoleName",),  # auto-named by the engine when `name` is left out
        ),
    ),
    IAM_ROLE_POLICY: (
        ApiCall(
            "iam",
            "PutRolePolicy",
            {"role": "RoleName", "name": "PolicyName", "policy": "PolicyDocument"},
            provider_sets=("PolicyName",),
        ),
    ),
    IAM_ROLE_POLICY_ATTACHMENT: (ApiCall("iam", "AttachRolePolicy", {"role": "RoleName", "policyArn": "PolicyArn"}),),
    # The network the stack builds (components/network/network.py): VPC, gateways, routes, flow log.
    VPC: (
        ApiCall("ec2", "CreateVpc", {"cidrBlock": "CidrBlock", "instanceTenancy": "InstanceTenancy"}),
        # One ModifyVpcAttribute call per attribute (the API takes one at a time).
        ApiCall("ec2", "ModifyVpcAttribute", {"enableDnsHostnames": "EnableDnsHostnames.Value"}, ("VpcId",)),
        ApiCall("ec2", "ModifyVpcAttribute", {"enableDnsSupport": "EnableDnsSupport.Value"}, ("VpcId",)),
    ),
    INTERNET_GATEWAY: (ApiCall("ec2", "AttachInternetGateway", {"vpcId": "VpcId"}, ("InternetGatewayId",)),),
    EIP: (
        ApiCall(
            "ec2",
            "AllocateAddress",
            {
                "domain": "Domain",
                "networkBorderGroup": "NetworkBorderGroup",
                "publicIpv4Pool": "PublicIpv4Pool",
                "address": "Address",
            },
        ),
    ),
    NAT_GATEWAY: (
        ApiCall(
            "ec2",
            "CreateNatGateway",
            {
                "subnetId": "SubnetId",
                "allocationId": "AllocationId",
                "connectivityType": "ConnectivityType",
                "privateIp": "PrivateIpAddress",
                "secondaryAllocationIds": "SecondaryAllocationIds",
                "secondaryPrivateIpAddressCount": "SecondaryPrivateIpAddressCount",
            },
        ),
    ),
    ROUTE_TABLE: (ApiCall("ec2", "CreateRouteTable", {"vpcId": "VpcId"}),),
    ROUTE: (
        ApiCall(
            "ec2",
            "CreateRoute",
            {
                "routeTableId": "RouteTableId",
                "destinationCidrBlock": "DestinationCidrBlock",
                "destinationIpv6CidrBlock": "DestinationIpv6CidrBlock",
                "gatewayId": "GatewayId",
                "natGatewayId": "NatGatewayId",
                "vpcEndpointId": "VpcEndpointId",
            },
        ),
    ),
    ROUTE_TABLE_ASSOCIATION: (
        ApiCall(
            "ec2",
            "AssociateRouteTable",
            {"routeTableId": "RouteTableId", "subnetId": "SubnetId", "gatewayId": "GatewayId"},
        ),
    ),
    FLOW_LOG: (
        ApiCall(
            "ec2",
            "CreateFlowLogs",
            {
                "vpcId": "ResourceIds[]",  # one VPC id: the provider sends it as a one-item list
                "subnetId": "ResourceIds[]",
                "trafficType": "TrafficType",
                "logDestinationType": "LogDestinationType",
                "logDestination": "LogDestination",
                "iamRoleArn": "DeliverLogsPermissionArn",
                "maxAggregationInterval": "MaxAggregationInterval",
                "logFormat": "LogFormat",
            },
            provider_sets=("ResourceType",),  # VPC, Subnet, ... from which id is set
        ),
    ),
    # EFA node groups' cluster placement groups (components/gpu/gpu_nodes.py).
    PLACEMENT_GROUP: (
        ApiCall(
            "ec2",
            "CreatePlacementGroup",
            {
                "name": "GroupName",
                "strategy": "Strategy",
                "partitionCount": "PartitionCount",
                "spreadLevel": "SpreadLevel",
            },
        ),
    ),
    IAM_OIDC_PROVIDER: (
        ApiCall(
            "iam",
            "CreateOpenIDConnectProvider",
            {"url": "Url", "clientIdLists": "ClientIDList", "thumbprintLists": "ThumbprintList"},
        ),
    ),
    # Fleet health (components/health/observability.py): the AMP workspace, its rules and alert manager, the managed
    # scraper, the SNS topic alerts go to and the topic's policy.
    AMP_WORKSPACE: (ApiCall("amp", "CreateWorkspace", {"alias": "alias", "kmsKeyArn": "kmsKeyArn"}),),
    AMP_RULE_GROUP_NAMESPACE: (
        ApiCall("amp", "CreateRuleGroupsNamespace", {"workspaceId": "workspaceId", "name": "name", "data": "data"}),
    ),
    AMP_ALERT_MANAGER_DEFINITION: (
        ApiCall("amp", "CreateAlertManagerDefinition", {"workspaceId": "workspaceId", "definition": "data"}),
    ),
    AMP_SCRAPER: (
        ApiCall(
            "amp",
            "CreateScraper",
            {
                "alias": "alias",
                "scrapeConfiguration": "scrapeConfiguration.configurationBlob",
                "source.eks.clusterArn": "source.eksConfiguration.clusterArn",
                "source.eks.subnetIds": "source.eksConfiguration.subnetIds",
                "source.eks.securityGroupIds": "source.eksConfiguration.securityGroupIds",
                "destination.amp.workspaceArn": "destination.ampConfiguration.workspaceArn",
                "roleConfiguration.sourceRoleArn": "roleConfiguration.sourceRoleArn",
                "roleConfiguration.targetRoleArn": "roleConfiguration.targetRoleArn",
            },
        ),
    ),
    SNS_TOPIC: (ApiCall("sns", "CreateTopic", {"name": "Name"}, ("Name",)),),
    SNS_TOPIC_POLICY: (
        # pulumi-aws sets the topic's `Policy` attribute (SetTopicAttributes, AttributeName Policy).
        ApiCall("sns", "SetTopicAttributes", {"arn": "TopicArn", "policy": "AttributeValue"}, ("AttributeName",)),
    ),
    SNS_TOPIC_SUBSCRIPTION: (
        ApiCall("sns", "Subscribe", {"topic": "TopicArn", "protocol": "Protocol", "endpoint": "Endpoint"}),
    ),
    LOG_GROUP: (
        ApiCall(
            "logs",
            "CreateLogGroup",
            {"name": "logGroupName", "kmsKeyId": "kmsKeyId", "logGroupClass": "logGroupClass"},
            provider_sets=("logGroupName",),
        ),
    ),
}


# ------------------------------------------------------------------------------------------ the facts

# The constraints of every mapped member, recorded from botocore's models by `record_aws_api.py` (botocore's
# own loader and shape objects). The plan reads this small file instead of importing botocore, whose import
# and EC2 model alone cost more than a second per plan; a test proves the file equal to what the installed
# botocore says, so a botocore upgrade that moves a constraint fails the suite until the file is re-recorded.
FACTS_FILE = Path(__file__).resolve().parent / "facts" / "aws_api.json"

Fact = Mapping[str, Any]  # {"shape", "type", "required", "enum", "min", "max", "pattern", "member", "key", "value"}


def member_key(call: ApiCall, member_path: str) -> str:
    return f"{call.service} {call.operation} {member_path}"


def operation_key(call: ApiCall) -> str:
    return f"{call.service} {call.operation}"


@functools.cache
def facts() -> dict[str, Any]:
    """The recorded facts: `botocore` (the version they came from), `members` and `required` (per operation)."""
    return json.loads(FACTS_FILE.read_text(encoding="utf-8"))


def _split(path: str) -> list[tuple[str, bool]]:
    """`a.b[].c` -> [("a", False), ("b", True), ("c", False)]: each name and whether it steps into a list."""
    return [(part.removesuffix("[]"), part.endswith("[]")) for part in path.split(".")]


# ------------------------------------------------------------------------------------------ the inputs


def values_at(inputs: Mapping[str, Any], path: str) -> Iterator[tuple[str, Any, bool]]:
    """Every (concrete path, value, present) at `path` in a resource's inputs. A leaf whose parent object exists
    but which is absent is yielded with present=False (so a required member's absence can be reported)."""

    def walk(node: Any, steps: list[tuple[str, bool]], where: str) -> Iterator[tuple[str, Any, bool]]:
        (name, into_list), rest = steps[0], steps[1:]
        here = f"{where}.{name}" if where else name
        if not isinstance(node, Mapping):
            return
        if name not in node:
            if not rest:
                yield here, None, False
            return
        value = node[name]
        if into_list and isinstance(value, list):
            for index, item in enumerate(value):
                item_path = f"{here}[{index}]"
                if rest:
                    yield from walk(item, rest, item_path)
                else:
                    yield item_path, item, True
        elif rest:
            yield from walk(value, rest, here)
        else:
            yield here, value, True

    yield from walk(inputs, _split(path), "")


def _unknown(value: Any) -> bool:
    if isinstance(value, str):
        return value == UNKNOWN
    if isinstance(value, Mapping):
        return any(_unknown(v) for v in value.values())
    if isinstance(value, list):
        return any(_unknown(v) for v in value)
    return False


def _as_integer(value: Any) -> int | None:
    """Protobuf carries every number as a double; the provider also takes decimal strings for integers."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.lstrip("-").isdigit():
        return int(value)
    return None


@functools.cache
def _pattern(text: str) -> re.Pattern[str] | Any | None:
    """The compiled pattern; `regex` (a cfn-lint dependency, imported only when needed) for the Java classes
    such as \\p{L} that `re` lacks; None for a pattern neither can compile (then it is not judged)."""
    try:
        return re.compile(text)
    except re.error:
        import regex  # (about 0.2 s to import: only for the few patterns that need it)

        try:
            return regex.compile(text)
        except regex.error:
            return None


def shape_problems(value: Any, fact: Fact) -> Iterator[str]:
    """What is wrong with `value` for the recorded shape `fact`, as short phrases naming what would be valid."""
    kind, name = fact["type"], fact["shape"]
    if kind == "string":
        if not isinstance(value, str):
            yield f"{name} is a string, got {type(value).__name__}"
            return
        enum = fact.get("enum")
        if enum and value not in enum:
            listed = ", ".join(enum) if len(enum) <= 12 else f"{', '.join(enum[:12])}, ... ({len(enum)} values)"
            yield f"{name} must be one of: {listed}"
        if "min" in fact and len(value) < fact["min"]:
            yield f"{name} needs at least {fact['min']} characters, got {len(value)}"
        if "max" in fact and len(value) > fact["max"]:
            yield f"{name} takes at most {fact['max']} characters, got {len(value)}"
        compiled = _pattern(fact["pattern"]) if "pattern" in fact else None
        # Smithy patterns are not anchored: a value matches when the pattern is found anywhere in it.
        if compiled is not None and compiled.search(value) is None:
            yield f"{name} must match /{fact['pattern']}/"
    elif kind in ("integer", "long"):
        number = _as_integer(value)
        if number is None:
            yield f"{name} is an integer, got {render_value(value)}"
            return
        if "min" in fact and number < fact["min"]:
            yield f"{name} must be at least {fact['min']}"
        if "max" in fact and number > fact["max"]:
            yield f"{name} must be at most {fact['max']}"
    elif kind == "boolean":
        if not isinstance(value, bool) and value not in ("true", "false"):
            yield f"{name} is a boolean, got {render_value(value)}"
    elif kind == "list":
        if not isinstance(value, list):
            yield f"{name} is a list, got {type(value).__name__}"
            return
        if "min" in fact and len(value) < fact["min"]:
            yield f"{name} needs at least {fact['min']} items, got {len(value)}"
        if "max" in fact and len(value) > fact["max"]:
            yield f"{name} takes at most {fact['max']} items, got {len(value)}"
        for item in value:
            yield from shape_problems(item, fact["member"])
    elif kind == "map":
        if not isinstance(value, Mapping):
            yield f"{name} is a map, got {type(value).__name__}"
            return
        if "min" in fact and len(value) < fact["min"]:
            yield f"{name} needs at least {fact['min']} entries, got {len(value)}"
        if "max" in fact and len(value) > fact["max"]:
            yield f"{name} takes at most {fact['max']} entries, got {len(value)}"
        for key, item in value.items():
            yield from (f"key {key!r}: {p}" for p in shape_problems(key, fact["key"]))
            yield from (f"value of {key!r}: {p}" for p in shape_problems(item, fact["value"]))
    elif kind == "structure" and not isinstance(value, Mapping):
        yield f"{name} is an object, got {type(value).__name__}"


def source_of(call: ApiCall, member_path: str) -> str:
    return f"botocore {facts()['botocore']} {call.service} {call.operation} request: {member_path}"


def _root(member_path: str) -> str:
    return _split(member_path)[0][0]


def check_call(urn: str, inputs: Mapping[str, Any], call: ApiCall) -> Iterator[ContractViolation]:
    """One resource's inputs against one operation of its API."""
    members = facts()["members"]
    for input_path, member_path in call.members.items():
        fact = members[member_key(call, member_path)]
        # A nested member its parent requires: absent while the parent is present. Top-level ones are below.
        nested_required = fact["required"] and "." in member_path
        for where, value, present in values_at(inputs, input_path):
            if not present:
                if nested_required:
                    yield ContractViolation(
                        urn, where, "(absent)", f"{member_path} is required", source_of(call, member_path)
                    )
                continue
            if value is None or _unknown(value):
                continue
            for problem in shape_problems(value, fact):
                yield ContractViolation(urn, where, render_value(value), problem, source_of(call, member_path))
    for name in facts()["required"][operation_key(call)]:
        if name in call.provider_sets:
            continue
        paths = [p for p, m in call.members.items() if _root(m) == name]
        if not any(present for p in paths for _, _, present in values_at(inputs, p)):
            yield ContractViolation(
                urn, paths[0] if paths else "", "(absent)", f"{name} is required", source_of(call, name)
            )


def check(recording: Recording) -> Iterable[ContractViolation]:
    """Every resource of a mapped type against every operation it becomes."""
    for resource in recording.resources:
        for call in API_MAP.get(resource.type, ()):
            yield from check_call(resource.urn, resource.inputs, call)

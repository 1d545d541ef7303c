"""The one launch-template builder of every EKS managed node group, system and GPU alike.

What every node gets from it: IMDSv2 only with a hop limit the caller picks (1 keeps pods off the host network
away from the node role), one encrypted gp3 volume with the cluster's node-volume KMS key (never aws/ebs), and
the stack's tags on the instances, volumes and network interfaces launched from it (provider default tags
reach only the template itself). A GPU group adds what only it has: EFA interfaces, placement, capacity
targeting, user data.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pulumi
import pulumi_aws as aws

# Resources the launch template tags at launch (EC2 CreateLaunchTemplate TagSpecifications resource types).
TAGGED_AT_LAUNCH: tuple[str, ...] = ("instance", "volume", "network-interface")


@dataclass(frozen=True)
class NodeVolume:
    """The node's one EBS volume: the AL2023 root volume, or Bottlerocket's data volume."""

    device_name: str
    size_gib: int
    kms_key_arn: pulumi.Input[str]


@dataclass(frozen=True)
class GpuLaunchOptions:
    """What only a GPU group's template carries; each field is None (or empty) when the group does not use it."""

    name: str
    instance_type: str | None
    user_data: pulumi.Input[str]
    network_interfaces: Sequence[aws.ec2.LaunchTemplateNetworkInterfaceArgs]
    """Explicit EFA interfaces; with them, the security groups go on each interface (EC2 refuses both)."""
    security_group_ids: pulumi.Input[Sequence[pulumi.Input[str]]] | None
    placement: aws.ec2.LaunchTemplatePlacementArgs | None
    capacity_reservation: aws.ec2.LaunchTemplateCapacityReservationSpecificationArgs | None
    market: aws.ec2.LaunchTemplateInstanceMarketOptionsArgs | None
    tags: Mapping[str, str]
    image_id: str | None = None
    """A custom AMI (`gpu_node_groups[].ami_id`); None lets EKS pick the accelerated AMI from `ami_type`."""


def node_launch_template(
    resource_name: str,
    *,
    description: str,
    volume: NodeVolume,
    hop_limit: int,
    launch_tags: Mapping[str, str],
    parent: pulumi.Resource,
    instance_metadata_tags: str | None = None,
    gpu: GpuLaunchOptions | None = None,
) -> aws.ec2.LaunchTemplate:
    """A node group's launch template. No AMI unless the group names a custom one: EKS picks it from the node
    group's `ami_type` and merges its bootstrap with the user data here (with a custom AMI it merges nothing, and
    the user data carries the join); `update_default_version` lets the node group follow the latest version."""
    return aws.ec2.LaunchTemplate(
        resource_name,
        aws.ec2.LaunchTemplateArgs(
            name=gpu.name if gpu else None,
            description=description,
            update_default_version=True,
            instance_type=gpu.instance_type if gpu else None,
            image_id=gpu.image_id if gpu else None,
            user_data=gpu.user_data if gpu else None,
            metadata_options=aws.ec2.LaunchTemplateMetadataOptionsArgs(
                http_endpoint="enabled",
                http_tokens="required",  # IMDSv2 only
                http_put_response_hop_limit=hop_limit,
                instance_metadata_tags=instance_metadata_tags,
            ),
            block_device_mappings=[
                aws.ec2.LaunchTemplateBlockDeviceMappingArgs(
                    device_name=volume.device_name,
                    ebs=aws.ec2.LaunchTemplateBlockDeviceMappingEbsArgs(
                        volume_size=volume.size_gib,
                        volume_type="gp3",
                        encrypted="true",
                        kms_key_id=volume.kms_key_arn,
                        delete_on_termination="true",
                    ),
                )
            ],
            network_interfaces=(list(gpu.network_interfaces) or None) if gpu else None,
            vpc_security_group_ids=None if gpu is None or gpu.network_interfaces else gpu.security_group_ids,
            placement=gpu.placement if gpu else None,
            capacity_reservation_specification=gpu.capacity_reservation if gpu else None,
            instance_market_options=gpu.market if gpu else None,
            tag_specifications=[
                aws.ec2.LaunchTemplateTagSpecificationArgs(resource_type=kind, tags=dict(launch_tags))
                for kind in TAGGED_AT_LAUNCH
            ],
            tags=dict(gpu.tags) if gpu else None,
        ),
        opts=pulumi.ResourceOptions(parent=parent),
    )

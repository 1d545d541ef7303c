"""`ClusterAutoscaler`: cluster-autoscaler on the system nodes, its Pod Identity role, the ProvisioningRequest CRD,
and the scale-from-zero tags on each growing GPU group's Auto Scaling group.

The rules (which group scales, how a gang job is admitted, which tags, which values, which policy) live in
`components/k8s/autoscaling.py`; this component only creates the resources.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from components.k8s.autoscaling import (
    CLUSTER_AUTOSCALER_CHART,
    CLUSTER_AUTOSCALER_NAMESPACE,
    CLUSTER_AUTOSCALER_REPO,
    CLUSTER_AUTOSCALER_SERVICE_ACCOUNT,
    NODE_TEMPLATE,
    PROVISIONING_REQUEST_CRD,
    autoscaler_policy,
    can_grow,
    cluster_autoscaler_values,
    node_template_tags,
)
from components.naming import child_name
from components.pod_identity import pod_identity_role
from stacks.schema import ClusterAutoscalerSpec, GpuNodeGroupSpec


@dataclass(frozen=True)
class ScaledGroup:
    """A GPU node group as the autoscaler sees it: the spec, its node labels and taint, and the EKS node group."""

    spec: GpuNodeGroupSpec
    labels: Mapping[str, str]
    taint: tuple[str, str, str]  # key, value, EKS effect
    node_group: aws.eks.NodeGroup


@dataclass
class ClusterAutoscalerArgs:
    spec: ClusterAutoscalerSpec
    kubernetes_version: str
    """eks.version: picks the image when the spec pins none."""
    cluster_name: str
    """The EKS cluster's name (the stack's base name): the tag auto-discovery and the IAM policy match."""
    region: str
    partition: pulumi.Input[str]
    account_id: pulumi.Input[str]
    system_node_group: pulumi.Input[str]
    """Name of the system managed node group the autoscaler runs on."""
    groups: Sequence[ScaledGroup]
    after: Sequence[pulumi.Resource] = ()


def asg_name(node_group: aws.eks.NodeGroup) -> pulumi.Output[str]:
    """The managed node group's Auto Scaling group (EKS creates exactly one per group)."""
    return node_group.resources.apply(lambda r: r[0].autoscaling_groups[0].name)  # type: ignore[index]


def tag_slug(key: str) -> str:
    """A node-template tag key as a resource name part: `resources/nvidia.com/gpu` -> `resources-nvidia.com-gpu`."""
    return key.removeprefix(f"{NODE_TEMPLATE}/").replace("/", "-")


class ClusterAutoscaler(pulumi.ComponentResource):
    """cluster-autoscaler with ProvisioningRequest support, and what it needs to scale GPU groups from zero."""

    release: k8s.helm.v3.Release
    provisioning_request_crd: k8s.yaml.v2.ConfigFile
    """Install before Kueue: Kueue enables its provisioning admission check only when the CRD exists."""
    role_arn: pulumi.Output[str]
    asg_tags: dict[str, dict[str, str]]
    """Scale-from-zero tags per GPU group name (plain data)."""

    def __init__(self, name: str, args: ClusterAutoscalerArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("trainstack:k8s:ClusterAutoscaler", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        version = args.spec.image_for(args.kubernetes_version).removeprefix("v")
        self.provisioning_request_crd = k8s.yaml.v2.ConfigFile(
            child_name(name, "provisioning-request-crd"),
            file=PROVISIONING_REQUEST_CRD.format(version=version),
            opts=pulumi.ResourceOptions(parent=self, depends_on=list(args.after)),
        )

        nodegroups = pulumi.Output.format(
            "arn:{0}:eks:{1}:{2}:nodegroup/{3}/*", args.partition, args.region, args.account_id, args.cluster_name
        )
        identity = pod_identity_role(
            child_name(name, "identity"),
            cluster_name=args.cluster_name,
            namespace=CLUSTER_AUTOSCALER_NAMESPACE,
            service_account=CLUSTER_AUTOSCALER_SERVICE_ACCOUNT,
            inline_policy=autoscaler_policy(args.cluster_name, nodegroup_arns=nodegroups),
            opts=child,
        )
        self.role_arn = identity.role_arn

        self.asg_tags = {}
        for group in args.groups:
            if not can_grow(group.spec):
                continue
            tags = node_template_tags(group.spec, group.labels, group.taint)
            self.asg_tags[group.spec.name] = tags
            asg = asg_name(group.node_group)
            for key, value in tags.items():
                aws.autoscaling.Tag(
                    # Named by the key, not its position: adding a label never renames the other tags.
                    child_name(name, group.spec.name, tag_slug(key)),
                    aws.autoscaling.TagArgs(
                        autoscaling_group_name=asg,
                        # Not propagated: a label or taint tag on the instance itself means nothing.
                        tag=aws.autoscaling.TagTagArgs(key=key, value=value, propagate_at_launch=False),
                    ),
                    opts=child,
                )

        self.release = k8s.helm.v3.Release(
            child_name(name, "release"),
            k8s.helm.v3.ReleaseArgs(
                chart=CLUSTER_AUTOSCALER_CHART,
                version=args.spec.chart_version,
                repository_opts=k8s.helm.v3.RepositoryOptsArgs(repo=CLUSTER_AUTOSCALER_REPO),
                namespace=CLUSTER_AUTOSCALER_NAMESPACE,
                values=cluster_autoscaler_values(
                    args.spec,
                    kubernetes_version=args.kubernetes_version,
                    cluster_name=args.cluster_name,
                    region=args.region,
                    system_node_group=args.system_node_group,
                ),
                atomic=True,
                cleanup_on_fail=True,
            ),
            # Credentials before the pods, the CRD before the autoscaler watches it.
            opts=pulumi.ResourceOptions(parent=self, depends_on=[identity, self.provisioning_request_crd, *args.after]),
        )
        self.register_outputs({"release": self.release.name, "role_arn": self.role_arn, "asg_tags": self.asg_tags})

"""Cost and safety rules: cost-allocation tags, the GPU budget, scale-to-zero, deletion protection."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pulumi_policy import ResourceValidationArgs, Severity, StackValidationArgs

from ..facts import REQUIRED_TAGS
from .base import (
    EKS_CLUSTER,
    FSX_LUSTRE,
    HYPERPOD_CLUSTER,
    KMS_KEY,
    LAUNCH_TEMPLATE,
    S3_BUCKETS,
    Report,
    accelerated_node_groups,
    accelerator_capacity,
    get,
    graph,
    items,
    json_document,
    number,
    resource_rule,
    stack_rule,
)

# AWS resources trainstack creates that take tags (each has a `tags` argument in pulumi-aws; a test checks
# this list against the SDK and against what the program registers).
TAGGABLE_TYPES = (
    "aws:amp/ruleGroupNamespace:RuleGroupNamespace",
    "aws:amp/scraper:Scraper",
    "aws:amp/workspace:Workspace",
    "aws:cloudwatch/logGroup:LogGroup",
    "aws:ec2/defaultSecurityGroup:DefaultSecurityGroup",
    "aws:ec2/eip:Eip",
    "aws:ec2/flowLog:FlowLog",
    "aws:ec2/internetGateway:InternetGateway",
    "aws:ec2/launchTemplate:LaunchTemplate",
    "aws:ec2/natGateway:NatGateway",
    "aws:ec2/placementGroup:PlacementGroup",
    "aws:ec2/routeTable:RouteTable",
    "aws:ec2/securityGroup:SecurityGroup",
    "aws:ec2/subnet:Subnet",
    "aws:ec2/vpc:Vpc",
    "aws:ec2/vpcEndpoint:VpcEndpoint",
    "aws:eks/accessEntry:AccessEntry",
    "aws:eks/addon:Addon",
    "aws:eks/cluster:Cluster",
    "aws:eks/nodeGroup:NodeGroup",
    "aws:eks/podIdentityAssociation:PodIdentityAssociation",
    "aws:fsx/dataRepositoryAssociation:DataRepositoryAssociation",
    "aws:fsx/lustreFileSystem:LustreFileSystem",
    "aws:iam/instanceProfile:InstanceProfile",
    "aws:iam/openIdConnectProvider:OpenIdConnectProvider",
    "aws:iam/policy:Policy",
    "aws:iam/role:Role",
    "aws:kms/key:Key",
    "aws:s3/bucket:Bucket",
    "aws:s3/bucketObjectv2:BucketObjectv2",
    "aws:s3/bucketV2:BucketV2",
    "aws:sns/topic:Topic",
    "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule",
    "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule",
    # aws-native resources take default tags from their provider as well.
    HYPERPOD_CLUSTER,
)

_TAG_CONFIG = {
    "requiredTags": {
        "type": "array",
        "items": {"type": "string"},
        "uniqueItems": True,
        "default": list(REQUIRED_TAGS),
        "description": "Tag keys every taggable resource carries.",
    },
    "environment": {"type": "string", "description": "The value the `env` tag must have (the stack's environment)."},
}


def _tags(value: Any) -> dict[str, str]:
    """Tags as a mapping: pulumi-aws uses a map, aws-native (Cloud Control) a list of {key, value}."""
    if isinstance(value, Mapping):
        return {str(k): str(v) for k, v in value.items()}
    return {str(get(t, "key")): str(get(t, "value")) for t in items(value) if get(t, "key") is not None}


def _missing(tags: Mapping[str, str], args: ResourceValidationArgs) -> list[str]:
    problems = [f"'{k}'" for k in args.get_config().get("requiredTags", REQUIRED_TAGS) if not tags.get(k)]
    environment = args.get_config().get("environment")
    if environment and tags.get("env") and tags["env"] != environment:
        problems.append(f"env={tags['env']!r} (expected {environment!r})")
    return problems


@resource_rule(
    name="cost-tags",
    description="Every taggable AWS resource (pulumi-aws and aws-native) carries project, env, cost-center "
    "and owner (its own tags plus the provider's default tags), and env names the stack's environment: GPU "
    "spend that cannot be attributed cannot be controlled (AWS tagging best practices).",
    severity=Severity.MEDIUM,
    types=TAGGABLE_TYPES,
    config=_TAG_CONFIG,
)
def cost_tags(args: ResourceValidationArgs, report: Report) -> None:
    defaults: dict[str, str] = {}
    if args.provider is not None:
        defaults = _tags(get(json_document(get(args.provider.props, "defaultTags")), "tags"))
    effective = {**defaults, **_tags(get(args.props, "tags"))}
    problems = _missing(effective, args)
    if problems:
        report(f"tags (with the provider's default tags) lack or mis-set {', '.join(problems)}.")


_PROPAGATED = ("instance", "volume", "network-interface")


@resource_rule(
    name="lt-instance-tags",
    description="Launch templates tag the instances, volumes and network interfaces they create with the "
    "cost tags: the provider's default tags do not reach them, and GPU instances are the bill.",
    severity=Severity.MEDIUM,
    types=[LAUNCH_TEMPLATE],
    config=_TAG_CONFIG,
)
def lt_instance_tags(args: ResourceValidationArgs, report: Report) -> None:
    specs = {str(get(s, "resourceType")): _tags(get(s, "tags")) for s in items(get(args.props, "tagSpecifications"))}
    for kind in _PROPAGATED:
        if kind not in specs:
            report(f"tagSpecifications has no '{kind}' entry.")
            continue
        problems = _missing(specs[kind], args)
        if problems:
            report(f"tagSpecifications '{kind}' lacks or mis-sets {', '.join(problems)}.")


@stack_rule(
    name="gpu-budget",
    description="The accelerators the stack can reach at maximum size (node groups' maxSize and HyperPod "
    "instance counts, times accelerators per instance) stay within the environment's budget.",
    severity=Severity.HIGH,
    config={"maxGpus": {"type": "integer", "minimum": 0, "description": "Accelerator budget of the environment."}},
)
def gpu_budget(args: StackValidationArgs, report: Report) -> None:
    capacity = accelerator_capacity(graph(args))
    if not capacity:
        args.not_applicable("no accelerated capacity in the stack")
    total = sum(c.accelerators for c in capacity)
    parts = [f"{c.name} {c.accelerators}" for c in capacity]
    budget = args.get_config().get("maxGpus")
    if budget is None:
        report("no maxGpus budget is configured for this environment (policies/config/<env>.json).")
    elif total > int(budget):
        report(f"the stack can reach {total} accelerators ({', '.join(parts)}), over the budget of {budget}.")


@stack_rule(
    name="dev-scale-to-zero",
    description="Accelerated node groups can scale to zero (minSize 0, and desiredSize 0 at creation where "
    "required), so an idle development cluster costs nothing for GPUs.",
    severity=Severity.LOW,
    config={"requireDesiredZero": {"type": "boolean", "default": True, "description": "Also require desiredSize 0."}},
)
def dev_scale_to_zero(args: StackValidationArgs, report: Report) -> None:
    groups = accelerated_node_groups(graph(args))
    if not groups:
        args.not_applicable("no GPU node group")
    for group, _ in groups:
        minimum = number(get(group.props, "scalingConfig.minSize"))
        desired = number(get(group.props, "scalingConfig.desiredSize"))
        if minimum != 0:
            report(f"node group {group.name} has minSize {minimum}; it cannot scale to zero.", group.urn)
        elif args.get_config().get("requireDesiredZero", True) and desired != 0:
            report(f"node group {group.name} starts with desiredSize {desired}; start at 0.", group.urn)


@resource_rule(
    name="prod-protect",
    description="Data and the cluster (FSx, S3 buckets, KMS keys, EKS) are protected from deletion "
    "(`protect`), so a refactor that renames a resource cannot destroy checkpoints or the key that "
    "decrypts them.",
    severity=Severity.HIGH,
    types=[FSX_LUSTRE, KMS_KEY, EKS_CLUSTER, *S3_BUCKETS],
)
def prod_protect(args: ResourceValidationArgs, report: Report) -> None:
    if not args.opts.protect:
        report("the resource is not protected (ResourceOptions protect=True).")

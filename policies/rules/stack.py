"""Rules of the stack as a whole, of no one area: its tie to an environment, its waivers (`stack-waivers` runs
last: it judges what every other rule reported), cost-allocation tags, the GPU budget, and deletion protection."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pulumi_policy import ResourceValidationArgs, Severity, StackValidationArgs

from .. import waivers
from ..facts import ENVIRONMENTS, REQUIRED_TAGS
from ..facts_generated import (
    ACCESS_ENTRY,
    AMP_RULE_GROUP_NAMESPACE,
    AMP_SCRAPER,
    AMP_WORKSPACE,
    BUCKET,
    BUCKET_OBJECT,
    BUCKET_V2,
    DEFAULT_SECURITY_GROUP,
    EIP,
    EKS_ADDON,
    EKS_CLUSTER,
    FLOW_LOG,
    FSX_DATA_REPOSITORY_ASSOCIATION,
    FSX_LUSTRE,
    HYPERPOD_CLUSTER,
    IAM_OIDC_PROVIDER,
    IAM_POLICY,
    IAM_ROLE,
    INSTANCE_PROFILE,
    INTERNET_GATEWAY,
    KMS_KEY,
    LAUNCH_TEMPLATE,
    LOG_GROUP,
    NAT_GATEWAY,
    NODE_GROUP,
    PLACEMENT_GROUP,
    POD_IDENTITY_ASSOCIATION,
    ROUTE_TABLE,
    S3_BUCKETS,
    SECURITY_GROUP,
    SECURITY_GROUP_EGRESS_RULE,
    SECURITY_GROUP_INGRESS_RULE,
    SNS_TOPIC,
    SUBNET,
    VPC,
    VPC_ENDPOINT,
)
from .base import (
    Report,
    accelerator_capacity,
    environment_of_stack,
    get,
    graph,
    int_config,
    items,
    json_document,
    number,
    resource_rule,
    stack_of,
    stack_rule,
    truthy,
)
from .storage import data_buckets

# AWS resources trainstack creates that take tags (each has a `tags` argument in pulumi-aws; a test checks
# this list against the SDK and against what the program registers).
TAGGABLE_TYPES = (
    AMP_RULE_GROUP_NAMESPACE,
    AMP_SCRAPER,
    AMP_WORKSPACE,
    LOG_GROUP,
    DEFAULT_SECURITY_GROUP,
    EIP,
    FLOW_LOG,
    INTERNET_GATEWAY,
    LAUNCH_TEMPLATE,
    NAT_GATEWAY,
    PLACEMENT_GROUP,
    ROUTE_TABLE,
    SECURITY_GROUP,
    SUBNET,
    VPC,
    VPC_ENDPOINT,
    ACCESS_ENTRY,
    EKS_ADDON,
    EKS_CLUSTER,
    NODE_GROUP,
    POD_IDENTITY_ASSOCIATION,
    FSX_DATA_REPOSITORY_ASSOCIATION,
    FSX_LUSTRE,
    INSTANCE_PROFILE,
    IAM_OIDC_PROVIDER,
    IAM_POLICY,
    IAM_ROLE,
    KMS_KEY,
    BUCKET,
    BUCKET_OBJECT,
    BUCKET_V2,
    SNS_TOPIC,
    SECURITY_GROUP_EGRESS_RULE,
    SECURITY_GROUP_INGRESS_RULE,
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


@stack_rule(
    name="stack-environment",
    floor="dev",
    description="The stack's name maps to the environment whose policy config runs (a stack named `prod` or "
    "`prod-<suffix>` is a prod stack), and resources are tagged with that environment: deletion protection and "
    "every floor key off the environment, so it cannot be a free choice inside one stack file.",
    severity=Severity.CRITICAL,
    config={
        "environment": {
            "type": "string",
            "enum": list(ENVIRONMENTS),
            "description": "The environment this config file is for; the stack's name must map to it.",
        }
    },
)
def stack_environment(args: StackValidationArgs, report: Report) -> None:
    if not args.resources:
        args.not_applicable("no resources")
    expected = args.get_config().get("environment")
    if expected is None:
        report("no environment is configured for this policy config (policies/config/<env>.json).")
        return
    stacks = sorted({stack_of(r.urn) for r in args.resources})
    for stack in stacks:
        mapped = environment_of_stack(stack)
        if mapped != expected:
            what = f"is a {mapped} stack" if mapped else "maps to no environment (name it <env> or <env>-<suffix>)"
            report(
                f"stack {stack!r} {what}, but this policy config is {expected!r}: run it with "
                f"policies/config/{mapped or '<env>'}.json, and keep the stack file's environment equal to its name."
            )


@stack_rule(
    name="deletion-safeguards",
    floor="prod",  # from prod: a staging cluster is not kept
    description="Beyond `protect`, the cloud side refuses to lose data by accident: the EKS cluster has "
    "deletion protection, data buckets are not force-destroyed with their objects, and KMS keys wait the longest "
    "deletion window (EKS User Guide 'Protect EKS clusters from accidental deletion'; S3 forceDestroy in the "
    "pulumi-aws docs; KMS Developer Guide 'Deleting keys', CKV_AWS_33 family).",
    severity=Severity.HIGH,
    config={
        "minKeyDeletionWindowDays": {
            "type": "integer",
            "minimum": 7,
            "maximum": 30,
            "default": 30,
            "description": "Fewest days between scheduling a KMS key's deletion and the deletion (7-30). Why: "
            "every checkpoint and secret encrypted with the key is lost with it. Source: KMS ScheduleKeyDeletion "
            "PendingWindowInDays.",
        }
    },
)
def deletion_safeguards(args: StackValidationArgs, report: Report) -> None:
    g = graph(args)
    clusters, buckets, keys = g.of_type(EKS_CLUSTER), data_buckets(g), g.of_type(KMS_KEY)
    if not clusters and not buckets and not keys:
        args.not_applicable("no EKS cluster, bucket or KMS key")
    for cluster in clusters:
        if get(cluster.props, "deletionProtection") is not True:
            report(f"EKS cluster {cluster.name} has no deletionProtection.", cluster.urn)
    for bucket in buckets:
        if truthy(get(bucket.props, "forceDestroy")):
            report(f"bucket {bucket.name} sets forceDestroy: deleting it deletes every object.", bucket.urn)
    floor = int_config(args, "minKeyDeletionWindowDays", 30)
    for key in keys:
        window = number(get(key.props, "deletionWindowInDays"))
        if window is None or window < floor:  # KMS's default window is 30 days; the program always sets it
            shown = "unset" if window is None else f"{int(window)} days"
            report(f"KMS key {key.name}: deletionWindowInDays is {shown}; the floor here is {floor}.", key.urn)


# ------------------------------------------------------------------------------------------------ waivers


@stack_rule(
    name="waiver-expired",
    description="A waiver whose expiry day is over exempts nothing any more: the violation it covered stands at its "
    "rule's level (so prod refuses it where that rule is mandatory), and this rule names the lapsed waiver and its "
    "owner, to be "
    "renewed or removed (docs/defence-in-depth.md, Waivers).",
    severity=Severity.MEDIUM,
)
def waiver_expired(args: StackValidationArgs, report: Report) -> None:
    ledger = waivers.active()
    if not ledger.own():
        args.not_applicable("the stack has no waiver of its environment")
    lapsed = ledger.expired()
    for index, waiver in lapsed:
        report(
            f"{waivers.STACK_CONFIG_KEY}.waivers.{index}.expires ({waiver.expires.isoformat()!r}): the waiver of "
            f"{waiver.rule} on {waiver.resource} (owner {waiver.owner}) expired; it exempts nothing now. Fix the "
            "resource, or have its owner renew the waiver with a new expiry.",
        )


@stack_rule(
    name="stack-waivers",
    floor="dev",
    description="Every waiver in the stack file (`waivers:`) names a rule of the pack that is not critical, was "
    "granted for this stack's environment, expires within a year, and exempts a violation that rule reports on the "
    "named resource; prod waives no floor and no high-severity rule. A waiver of a rule that does not exist, of a "
    "critical rule, of a floor or a high-severity rule in prod, of another environment, without a near expiry, or "
    "that waives nothing is refused, so waivers cannot "
    "pile up unseen, follow a file into prod, or outlive what they excuse (cdk-nag's suppressions; "
    "docs/defence-in-depth.md, Waivers). Runs last: it judges what the others reported.",
    severity=Severity.CRITICAL,
)
def stack_waivers(args: StackValidationArgs, report: Report) -> None:
    from . import BY_NAME  # here: the rules package imports this module

    ledger = waivers.active()
    if not ledger.waivers:
        args.not_applicable("the stack waives nothing")
    severity = {name: policy.severity.value if policy.severity else "" for name, policy in BY_NAME.items()}
    for problem in ledger.problems(severity):
        report(str(problem))

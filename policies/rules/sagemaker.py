"""SageMaker HyperPod rules (the `trainstack:sagemaker` area; `aws-native:sagemaker:Cluster`, pulumi-aws has no
HyperPod resource): deep health checks, node recovery, the VPC and EFA security group, and what the SageMaker
managed policies reach (the lifecycle bucket, full access, the execution role)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pulumi_policy import ResourceValidationArgs, Severity, StackValidationArgs
from pulumi_policy.proxy import UnknownValueError

from ..facts import (
    PROVISIONING_PARAMETERS,
    instance,
)
from ..facts_generated import (
    BUCKET_OBJECT,
    HYPERPOD_CLUSTER,
    IAM_ROLE,
    IAM_ROLE_POLICY,
    IAM_ROLE_POLICY_ATTACHMENT,
    S3_BUCKETS,
    SECURITY_GROUP,
)
from .base import (
    Graph,
    Report,
    as_list,
    condition_keys,
    get,
    graph,
    has,
    items,
    policy_statements,
    resource_rule,
    stack_rule,
)
from .network import allows_all_self
from .storage import denies, known_policies

STRESS = "InstanceStress"
CONNECTIVITY = "InstanceConnectivity"


def required_deep_health_checks(instance_type: str) -> list[str]:
    """The checks an accelerated group must run: InstanceStress on every accelerated type, and
    InstanceConnectivity (NCCL/NCCOM over EFA) only on types with EFA: without EFA there is no fabric to
    test, and the program plans only InstanceStress there (components/sagemaker/hyperpod.py `deep_health_checks`)."""
    facts = instance(instance_type)
    if facts is None:
        return []
    return [STRESS, CONNECTIVITY] if facts.max_efa_interfaces else [STRESS]


@resource_rule(
    name="hyperpod-deep-health-checks",
    description="Accelerated HyperPod instance groups run the deep health checks when nodes start: "
    "InstanceStress everywhere, and InstanceConnectivity where the type has EFA (a type without EFA has no "
    "fabric to test), so a bad GPU or EFA link is caught before a job lands on it (SageMaker HyperPod 'deep "
    "health checks').",
    severity=Severity.MEDIUM,
    types=[HYPERPOD_CLUSTER],
)
def hyperpod_deep_health_checks(args: ResourceValidationArgs, report: Report) -> None:
    groups = [g for g in items(get(args.props, "instanceGroups")) if instance(str(get(g, "instanceType", "")))]
    if not groups:
        args.not_applicable("no accelerated instance group")
    for group in groups:
        instance_type = str(get(group, "instanceType"))
        checks = {str(c) for c in items(get(group, "onStartDeepHealthChecks"))}
        missing = [c for c in required_deep_health_checks(instance_type) if c not in checks]
        if missing:
            report(
                f"instance group {get(group, 'instanceGroupName')} ({instance_type}) lacks "
                f"onStartDeepHealthChecks {missing}."
            )


@resource_rule(
    name="hyperpod-node-recovery",
    description="HyperPod replaces or reboots faulty nodes automatically (nodeRecovery Automatic); with "
    "None, a failed GPU only gets a label and the job keeps crashing on it.",
    severity=Severity.MEDIUM,
    types=[HYPERPOD_CLUSTER],
)
def hyperpod_node_recovery(args: ResourceValidationArgs, report: Report) -> None:
    recovery = get(args.props, "nodeRecovery")
    if recovery != "Automatic":
        report(f"nodeRecovery is {recovery!r}; set 'Automatic'.")


@stack_rule(
    name="hyperpod-vpc-efa-sg",
    description="A HyperPod cluster runs in the stack's VPC with an EFA-enabled security group (all "
    "traffic to and from itself): without vpcConfig it runs in a service VPC, out of reach of FSx and EKS, "
    "and without the self rule EFA between its nodes fails.",
    severity=Severity.HIGH,
)
def hyperpod_vpc_efa_sg(args: StackValidationArgs, report: Report) -> None:
    g = graph(args)
    clusters = g.of_type(HYPERPOD_CLUSTER)
    if not clusters:
        args.not_applicable("no HyperPod cluster")
    for cluster in clusters:
        if not has(cluster.props, "vpcConfig"):
            report(f"HyperPod cluster {cluster.name} has no vpcConfig.", cluster.urn)
            continue
        groups = Graph.deps(cluster, "vpcConfig", SECURITY_GROUP)
        if not any(all(allows_all_self(g, sg)) for sg in groups):
            report(
                f"HyperPod cluster {cluster.name}: none of its security groups "
                f"({', '.join(sg.name for sg in groups) or 'none of this stack'}) allows all traffic to and "
                "from itself.",
                cluster.urn,
            )


SAGEMAKER_FULL_ACCESS = "AmazonSageMakerFullAccess"
HYPERPOD_INSTANCE_POLICY = "AmazonSageMakerClusterInstanceRolePolicy"  # reads every sagemaker-* bucket


@stack_rule(
    name="hyperpod-lifecycle-locked",
    description="The HyperPod lifecycle bucket (`sagemaker-*`, which AmazonSageMakerFullAccess reaches) denies "
    "writing its scripts to every principal but the deployer, reading them to all but the deployer and the "
    "execution role, and uploads not encrypted with the stack's key: on_create.sh runs as root on every node.",
    severity=Severity.CRITICAL,
)
def hyperpod_lifecycle_locked(args: StackValidationArgs, report: Report) -> None:
    g = graph(args)
    buckets = [
        b
        for b in g.of_type(*S3_BUCKETS)
        if str(get(b.props, "bucketPrefix") or get(b.props, "bucket") or "").startswith("sagemaker-")
    ]
    if not buckets:
        args.not_applicable("no sagemaker-* bucket")
    for bucket, statements in known_policies(args, g, buckets):
        for action in ("s3:PutObject", "s3:ReplicateObject", "s3:GetObject"):
            if not any(denies(s, action) and "aws:PrincipalArn" in condition_keys(s) for s in statements):
                report(f"{bucket.name}: no deny of {action} for principals other than the allowed ones.", bucket.urn)
        key_id = "s3:x-amz-server-side-encryption-aws-kms-key-id"
        if not any(denies(s, "s3:PutObject") and key_id in condition_keys(s) for s in statements):
            report(f"{bucket.name}: uploads without the stack's KMS key are not denied.", bucket.urn)


@resource_rule(
    name="iam-no-sagemaker-full-access",
    description="No role gets AmazonSageMakerFullAccess: it grants object access to every `sagemaker-*` bucket, "
    "HyperPod's lifecycle bucket included, whose scripts run as root on every node.",
    severity=Severity.HIGH,
    types=[IAM_ROLE_POLICY_ATTACHMENT, IAM_ROLE],
)
def iam_no_sagemaker_full_access(args: ResourceValidationArgs, report: Report) -> None:
    arns = [str(get(args.props, "policyArn", ""))] + [str(a) for a in items(get(args.props, "managedPolicyArns"))]
    if any(arn.endswith(f"/{SAGEMAKER_FULL_ACCESS}") for arn in arns):
        report(f"{SAGEMAKER_FULL_ACCESS} is attached: every holder can rewrite HyperPod lifecycle scripts.")


def _confines(statement: Mapping[str, Any], action: str) -> bool:
    """A deny of `action` on everything but named resources of named buckets (no wildcard in a bucket name)."""
    if not denies(statement, action) or "Resource" in statement or statement.get("Condition"):
        return False
    kept = [str(r) for r in as_list(statement.get("NotResource"))]
    return bool(kept) and all(r.startswith("arn:") and "*" not in r.split(":::", 1)[-1].split("/", 1)[0] for r in kept)


@stack_rule(
    name="hyperpod-execution-role-confined",
    description="A role holding AmazonSageMakerClusterInstanceRolePolicy (which reads every `sagemaker-*` bucket), "
    "the execution role and the Slurm login nodes' role alike, has an explicit deny on reading and listing any S3 "
    "object or bucket but its lifecycle scripts: whoever may update the cluster's lifecycle source could otherwise "
    "point it at a bucket of their own and run a script as root on every new node. A Slurm login group runs as a "
    "role no other group of its cluster uses: users work on login nodes, and root there must not hold the "
    "workers' rights.",
    severity=Severity.CRITICAL,
)
def hyperpod_execution_role_confined(args: StackValidationArgs, report: Report) -> None:
    g = graph(args)
    roles = [
        role
        for role in g.of_type(IAM_ROLE)
        if any(
            str(get(a.props, "policyArn", "")).endswith(f"/{HYPERPOD_INSTANCE_POLICY}")
            for a in g.referrers(role, "role", IAM_ROLE_POLICY_ATTACHMENT)
        )
    ]
    if not roles:
        args.not_applicable(f"no role holds {HYPERPOD_INSTANCE_POLICY}")
    for role in roles:
        try:
            statements = [
                s for p in g.referrers(role, "role", IAM_ROLE_POLICY) for s in policy_statements(get(p.props, "policy"))
            ]
        except UnknownValueError:
            continue  # computed at the first preview; judged at pulumi up
        for action in ("s3:GetObject", "s3:GetObjectVersion", "s3:ListBucket"):
            if not any(_confines(s, action) for s in statements):
                report(
                    f"{role.name}: no inline deny of {action} outside its lifecycle bucket; "
                    f"{HYPERPOD_INSTANCE_POLICY} lets it read any sagemaker-* bucket.",
                    role.urn,
                )
    logins = _login_groups(g)
    for cluster in g.of_type(HYPERPOD_CLUSTER):
        try:
            runs_as = {
                str(get(ig, "instanceGroupName")): get(ig, "executionRole")
                for ig in items(get(cluster.props, "instanceGroups"))
            }
        except UnknownValueError:
            continue  # the roles' ARNs are computed at the first preview; judged at pulumi up
        for login in sorted(logins & runs_as.keys()):
            shared = sorted(n for n, arn in runs_as.items() if n != login and arn == runs_as[login])
            if shared:
                report(
                    f"{cluster.name}: login group {login} runs as {runs_as[login]}, the role of {', '.join(shared)}: "
                    "root on a login node, where users work, would hold the workers' rights; give it its own role.",
                    cluster.urn,
                )


def _login_groups(g: Graph) -> set[str]:
    """The login groups the Slurm lifecycle's provisioning_parameters.json names (`login_group`); none while its
    content is unknown (it carries the file system's outputs) or unreadable."""
    found: set[str] = set()
    for obj in g.of_type(BUCKET_OBJECT):
        try:
            if not str(get(obj.props, "key", "")).endswith(f"/{PROVISIONING_PARAMETERS}"):
                continue
            params = json.loads(str(get(obj.props, "content", "")))
        except (UnknownValueError, ValueError):
            continue
        login = params.get("login_group") if isinstance(params, dict) else None
        if isinstance(login, str):
            found.add(login)
    return found

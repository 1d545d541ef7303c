"""SageMaker HyperPod rules (`aws-native:sagemaker:Cluster`; pulumi-aws has no HyperPod resource)."""

from __future__ import annotations

from pulumi_policy import ResourceValidationArgs, Severity, StackValidationArgs

from ..facts import instance
from .base import HYPERPOD_CLUSTER, SECURITY_GROUP, Graph, Report, get, graph, has, items, resource_rule, stack_rule
from .network import allows_all_self

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

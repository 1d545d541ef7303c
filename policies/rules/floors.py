"""Floors: the least each environment keeps of what protects data, the audit trail, availability and fabric
performance, and the tie between a stack and its environment.

Each floor is a threshold in `policies/config/<env>.json`; its config property says why and where the number
comes from (CIS EKS benchmark, EKS best practices, AWS guides, checkov), and docs/policies.md's floors table is
generated from those descriptions and the three config files. A one-line edit of a stack file that lowers
one of these values below the floor fails the plan with the key's meaning, the value, the floor and why.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pulumi_policy import PolicyResource, Severity, StackValidationArgs

from .. import waivers
from ..facts import ACCELERATED_AMI_TYPES, ENVIRONMENTS, READ_MB_S_PER_ACCELERATOR_FLOOR
from .base import (
    EKS_CLUSTER,
    EKS_NODE_GROUP,
    FLOW_LOG,
    FSX_DRA,
    FSX_LUSTRE,
    HELM_TYPES,
    HYPERPOD_CLUSTER,
    KMS_KEY,
    S3_BUCKETS,
    SUBNET,
    Graph,
    Report,
    accelerated_node_groups,
    accelerator_capacity,
    efa_interfaces,
    environment_of_stack,
    get,
    graph,
    has,
    instance_types_of,
    items,
    launch_template_of,
    lustre_throughput_mb_s,
    number,
    stack_of,
    stack_rule,
    truthy,
)

LOG_GROUP = "aws:cloudwatch/logGroup:LogGroup"
NAT_GATEWAY = "aws:ec2/natGateway:NatGateway"
S3_LIFECYCLE = (
    "aws:s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration",
    "aws:s3/bucketLifecycleConfigurationV2:BucketLifecycleConfigurationV2",
)
NCCL_WORKLOADS = (
    "kubernetes:trainer.kubeflow.org/v1alpha1:TrainJob",
    "kubernetes:kubeflow.org/v2beta1:MPIJob",
)


BUCKET_OBJECT = "aws:s3/bucketObjectv2:BucketObjectv2"


def data_buckets(g: Graph) -> list[PolicyResource]:
    """Buckets that hold data: not those whose objects the stack writes itself (the HyperPod lifecycle scripts),
    which are generated copies of files in the repository and are rewritten on the next `pulumi up`."""
    return [b for b in g.of_type(*S3_BUCKETS) if not g.referrers(b, "bucket", BUCKET_OBJECT)]


def _int(args: StackValidationArgs, key: str, default: int) -> int:
    return int(args.get_config().get(key, default))


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


# ------------------------------------------------------------------------------------------------ data


@stack_rule(
    name="fsx-backup-floor",
    floor="staging",
    description="A persistent Lustre file system not linked to S3 keeps daily automatic backups for at least the "
    "environment's floor and takes a final backup when deleted; one linked to S3 (a data repository association) "
    "asks for no backup at all, which FSx does not take of a linked file system: its durable copy is the bucket "
    "(FSx for Lustre User Guide, 'Working with backups': backups of persistent file systems not linked to an S3 "
    "data repository; AWS Well-Architected REL09-BP01).",
    severity=Severity.HIGH,
    config={
        "minBackupRetentionDays": {
            "type": "integer",
            "minimum": 0,
            "maximum": 90,
            "default": 7,
            "description": "Fewest daily automatic backups kept (automaticBackupRetentionDays) by a file system not "
            "linked to S3. Why: a corruption or deletion found after a long weekend must still have a backup from "
            "before it. Source: FSx for Lustre User Guide, automatic daily backups (0-90 days kept).",
        },
        "requireFinalBackup": {
            "type": "boolean",
            "default": True,
            "description": "skipFinalBackup must be false on a file system not linked to S3, so deleting it leaves "
            "a backup. Source: FSx DeleteFileSystem LustreConfiguration.SkipFinalBackup.",
        },
    },
)
def fsx_backup_floor(args: StackValidationArgs, report: Report) -> None:
    g = graph(args)
    systems = [fs for fs in g.of_type(FSX_LUSTRE) if str(get(fs.props, "deploymentType", "")).startswith("PERSISTENT")]
    if not systems:
        args.not_applicable("no persistent Lustre file system (SCRATCH file systems take no backups)")
    floor = _int(args, "minBackupRetentionDays", 7)
    for fs in systems:
        days = int(number(get(fs.props, "automaticBackupRetentionDays")) or 0)
        final = has(fs.props, "skipFinalBackup") and not truthy(get(fs.props, "skipFinalBackup"))
        if g.referrers(fs, "fileSystemId", FSX_DRA):
            if days or final:
                report(
                    f"{fs.name}: linked to S3 by a data repository association, yet asks for "
                    f"{f'{days} days of automatic backups' if days else 'a final backup'}; FSx takes no backups "
                    "of a linked file system: set storage.fsx.automatic_backup_retention_days to 0 and keep what "
                    "must outlive the file system in S3.",
                    fs.urn,
                )
            continue
        if days < floor:
            report(
                f"{fs.name}: storage.fsx.automatic_backup_retention_days is {days} (automaticBackupRetentionDays); "
                f"the floor here is {floor} daily backups, so a corrupted or deleted file system can be restored.",
                fs.urn,
            )
        if args.get_config().get("requireFinalBackup", True) and not final:
            report(f"{fs.name}: skipFinalBackup is not false; deleting it would leave no backup.", fs.urn)


@stack_rule(
    name="s3-noncurrent-version-floor",
    floor="staging",
    description="Data buckets' lifecycle rules keep an overwritten or deleted object's old version for at least "
    "the environment's floor: versioning only protects a checkpoint for as long as its noncurrent versions live "
    "(S3 User Guide, 'Lifecycle configuration elements: NoncurrentVersionExpiration'; CKV_AWS_21 needs "
    "versioning, this keeps it meaningful).",
    severity=Severity.HIGH,
    config={
        "minNoncurrentDays": {
            "type": "integer",
            "minimum": 1,
            "default": 30,
            "description": "Fewest days a noncurrent object version lives (noncurrentVersionExpiration."
            "noncurrentDays). Why: an overwrite of a checkpoint is often noticed only at the next evaluation or "
            "restart, weeks later. Source: S3 User Guide, NoncurrentVersionExpiration.",
        }
    },
)
def s3_noncurrent_version_floor(args: StackValidationArgs, report: Report) -> None:
    g = graph(args)
    buckets = data_buckets(g)
    if not buckets:
        args.not_applicable("no S3 buckets that hold data")
    floor = _int(args, "minNoncurrentDays", 30)
    for bucket in buckets:
        for config in g.referrers(bucket, "bucket", *S3_LIFECYCLE):
            for rule in items(get(config.props, "rules")):
                if get(rule, "status") != "Enabled":
                    continue
                days = number(get(rule, "noncurrentVersionExpiration.noncurrentDays"))
                if days is not None and days < floor:
                    report(
                        f"bucket {bucket.name}: lifecycle rule {get(rule, 'id')!r} deletes noncurrent versions after "
                        f"{int(days)} days (storage.buckets.noncurrent_version_expiration_days); the floor here is "
                        f"{floor} days, so an overwritten checkpoint can still be restored.",
                        bucket.urn,
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
    floor = _int(args, "minKeyDeletionWindowDays", 30)
    for key in keys:
        window = number(get(key.props, "deletionWindowInDays"))
        if window is None or window < floor:  # KMS's default window is 30 days; the program always sets it
            shown = "unset" if window is None else f"{int(window)} days"
            report(f"KMS key {key.name}: deletionWindowInDays is {shown}; the floor here is {floor}.", key.urn)


# ----------------------------------------------------------------------------------------- audit trail


def _log_kind(g: Graph, log_group: PolicyResource) -> str:
    name = str(get(log_group.props, "name", ""))
    if name.startswith("/aws/eks/") and name.endswith("/cluster"):
        return "controlPlane"
    if g.referrers(log_group, "logDestination", FLOW_LOG):
        return "flowLogs"
    return "other"


_LOG_KEYS = {
    "controlPlane": ("controlPlaneMinDays", "eks.log_retention_days", "EKS control-plane (audit) logs"),
    "flowLogs": ("flowLogsMinDays", "network.flow_logs_retention_days", "VPC flow logs"),
    "other": ("otherMinDays", "the log group's retention (for example storage.fsx.log_retention_days)", "logs"),
}


@stack_rule(
    name="log-retention-floor",
    floor="staging",
    description="CloudWatch log groups keep the audit trail (control-plane audit and authenticator logs, VPC "
    "flow logs) and operational logs for at least the environment's floor: an incident is often found months "
    "after it happened, and expired logs cannot answer who did what (CKV_AWS_338: at least one year; CIS EKS "
    "2.1.1; EKS best practices, detective controls).",
    severity=Severity.MEDIUM,
    config={
        "controlPlaneMinDays": {
            "type": "integer",
            "minimum": 1,
            "default": 90,
            "description": "Fewest days EKS control-plane logs are kept. Why: the audit log is the record of who "
            "did what through the API server. Source: CKV_AWS_338 (365 days); EKS best practices, auditing.",
        },
        "flowLogsMinDays": {
            "type": "integer",
            "minimum": 1,
            "default": 30,
            "description": "Fewest days VPC flow logs are kept. Why: a compromised node's connections are traced "
            "from them after the fact. Source: CKV_AWS_338; CIS AWS Foundations 3.7 (flow logs).",
        },
        "otherMinDays": {
            "type": "integer",
            "minimum": 1,
            "default": 14,
            "description": "Fewest days any other log group (FSx data repository events) is kept. Why: failed "
            "imports and exports are debugged from them. Source: CKV_AWS_338.",
        },
    },
)
def log_retention_floor(args: StackValidationArgs, report: Report) -> None:
    g = graph(args)
    groups = g.of_type(LOG_GROUP)
    if not groups:
        args.not_applicable("no CloudWatch log groups")
    for log_group in groups:
        kind = _log_kind(g, log_group)
        key, stack_key, what = _LOG_KEYS[kind]
        floor = _int(args, key, 1)
        days = number(get(log_group.props, "retentionInDays"))
        if days is not None and 0 < days < floor:  # unset or 0: never expire
            report(
                f"{what} {get(log_group.props, 'name')} are kept {int(days)} days ({stack_key}); the floor here is "
                f"{floor} days.",
                log_group.urn,
            )


# ---------------------------------------------------------------------------------------- availability


def _az(subnet: PolicyResource) -> str:
    return str(get(subnet.props, "availabilityZone") or get(subnet.props, "availabilityZoneId"))


def system_node_groups(g: Graph) -> list[PolicyResource]:
    """Managed node groups of non-accelerated instances: where CoreDNS, Kueue and the operators run."""
    accelerated = {group.urn for group, _ in accelerated_node_groups(g)}
    return [group for group in g.of_type(EKS_NODE_GROUP) if group.urn not in accelerated]


def _subnets_outside_stack(groups: list[PolicyResource]) -> set[str]:
    """Subnet ids of node groups whose subnets no subnet resource of this stack produced (an existing VPC's)."""
    return {
        str(subnet)
        for group in groups
        if not Graph.deps(group, "subnetIds", SUBNET)
        for subnet in items(get(group.props, "subnetIds"))
    }


@stack_rule(
    name="system-nodes-floor",
    floor="staging",
    description="The cluster's controllers (CoreDNS, Kueue, the training and GPU operators, the CSI "
    "controllers) run on at least the floor of system nodes across at least the floor of AZs: with one node, "
    "a node replacement or an AZ event stops DNS and job admission for every GPU in the cluster (EKS best "
    "practices, reliability: run CoreDNS and critical add-ons on multiple nodes across AZs).",
    severity=Severity.HIGH,
    config={
        "minNodes": {
            "type": "integer",
            "minimum": 1,
            "default": 2,
            "description": "Fewest system nodes (minSize summed over non-accelerated node groups). Why: CoreDNS "
            "runs two replicas with anti-affinity, and a rolling update takes one node away. Source: EKS best "
            "practices, reliability (CoreDNS); EKS managed node group update behaviour.",
        },
        "minAvailabilityZones": {
            "type": "integer",
            "minimum": 1,
            "default": 2,
            "description": "Fewest AZs the system node groups' subnets span. Why: a single-AZ controller plane "
            "fails with its AZ. Source: EKS best practices, reliability (spread across AZs).",
        },
    },
)
def system_nodes_floor(args: StackValidationArgs, report: Report) -> None:
    g = graph(args)
    groups = system_node_groups(g)
    if not g.of_type(EKS_CLUSTER):
        args.not_applicable("no EKS cluster")
    nodes = sum(int(number(get(group.props, "scalingConfig.minSize")) or 0) for group in groups)
    azs = sorted({_az(s) for group in groups for s in Graph.deps(group, "subnetIds", SUBNET)})
    # Subnets of an existing VPC carry no AZ in the stack: each counts as one AZ of its own (trainstack's stack
    # file names one subnet per AZ, and `pulumi up` checks each subnet's AZ against it before using it).
    outside = sorted(_subnets_outside_stack(groups))
    azs += [f"{subnet} (outside the stack)" for subnet in outside]
    min_nodes, min_azs = _int(args, "minNodes", 2), _int(args, "minAvailabilityZones", 2)
    names = ", ".join(group.name for group in groups) or "none"
    urn = groups[0].urn if groups else g.of_type(EKS_CLUSTER)[0].urn
    if nodes < min_nodes:
        report(
            f"system node groups ({names}) keep at least {nodes} node(s) (eks.system_node_group.min_size); the floor "
            f"here is {min_nodes}, so DNS and job admission survive the loss of a node.",
            urn,
        )
    if len(azs) < min_azs:
        report(f"system node groups ({names}) span {len(azs)} AZ(s) {azs}; the floor here is {min_azs}.", urn)


@stack_rule(
    name="nat-per-az",
    floor="prod",  # from prod: in staging one NAT gateway is the cost
    description="Every AZ with node subnets has its own NAT gateway: with one shared NAT gateway, losing its "
    "AZ cuts every other AZ's nodes off image pulls, package mirrors and AWS APIs not on endpoints (VPC User "
    "Guide, NAT gateways: 'create a NAT gateway in each Availability Zone').",
    severity=Severity.MEDIUM,
)
def nat_per_az(args: StackValidationArgs, report: Report) -> None:
    g = graph(args)
    # The subnets that carry nodes and the control plane's interfaces: the node groups' and the cluster's.
    private: list[PolicyResource] = []
    for holder in g.of_type(EKS_NODE_GROUP, EKS_CLUSTER):
        prop = "subnetIds" if holder.resource_type == EKS_NODE_GROUP else "vpcConfig"
        private += [s for s in Graph.deps(holder, prop, SUBNET) if s not in private]
    nats = g.of_type(NAT_GATEWAY)
    if not private or not nats:
        args.not_applicable("no node subnets behind NAT")
    nat_azs = {_az(s) for nat in nats for s in Graph.deps(nat, "subnetId", SUBNET)}
    for subnet in private:
        if _az(subnet) not in nat_azs:
            report(
                f"private subnet {subnet.name} in {_az(subnet)} has no NAT gateway in its AZ (NAT gateways in "
                f"{sorted(nat_azs)}); set network.nat_gateways per_az, so one AZ's outage does not take the others' "
                "egress with it.",
                subnet.urn,
            )


@stack_rule(
    name="node-update-budget",
    floor="staging",
    description="An accelerated node group replaces at most the floor's share of its nodes at a time during "
    "updates: a managed node group update drains maxUnavailable nodes at once, and every drained node kills "
    "the multi-node jobs that span it (EKS User Guide, managed node group update behaviour).",
    severity=Severity.MEDIUM,
    config={
        "maxUnavailablePercent": {
            "type": "number",
            "minimum": 1,
            "maximum": 100,
            "default": 25,
            "description": "Largest share of a GPU node group's maxSize an update may take down at once (one node "
            "is always allowed). Why: a fleet-wide update must not stop every training job at once. Source: EKS "
            "UpdateConfig maxUnavailable / maxUnavailablePercentage.",
        }
    },
)
def node_update_budget(args: StackValidationArgs, report: Report) -> None:
    groups = accelerated_node_groups(graph(args))
    if not groups:
        args.not_applicable("no GPU or Trainium node group")
    limit = float(args.get_config().get("maxUnavailablePercent", 25))
    for group, _ in groups:
        size = number(get(group.props, "scalingConfig.maxSize")) or 0
        count = number(get(group.props, "updateConfig.maxUnavailable"))
        percent = number(get(group.props, "updateConfig.maxUnavailablePercentage"))
        share = percent if percent is not None else (100 * count / size if count and size else 0)
        if share > limit and not (percent is None and count == 1):
            report(
                f"node group {group.name} may replace {share:.0f}% of its {int(size)} nodes at once "
                f"(gpu_node_groups[].max_unavailable {int(count or 0)}); the floor here allows {limit:g}%.",
                group.urn,
            )


# -------------------------------------------------------------------------------------- fabric performance


@stack_rule(
    name="efa-on-capable-groups",
    floor="staging",
    description="An accelerated node group whose instance type has EFA and that spans nodes (maxSize of at least "
    "the floor) runs with EFA: without it NCCL sends every all-reduce over TCP sockets at a fraction of the "
    "fabric's bandwidth, the job still runs, and nobody is told (EC2 User Guide, EFA; aws-ofi-nccl).",
    severity=Severity.HIGH,
    config={
        "minNodes": {
            "type": "integer",
            "minimum": 2,
            "default": 2,
            "description": "maxSize from which an EFA-capable group must use EFA. Why: a single-node job needs no "
            "fabric, two nodes already all-reduce across it. Source: EC2 User Guide, EFA supported instance types.",
        }
    },
)
def efa_on_capable_groups(args: StackValidationArgs, report: Report) -> None:
    capable: list[PolicyResource] = []
    for group, facts in accelerated_node_groups(graph(args)):
        if facts.max_efa_interfaces:
            capable.append(group)
    if not capable:
        args.not_applicable("no node group of an EFA-capable instance type")
    floor = _int(args, "minNodes", 2)
    for group in capable:
        size = int(number(get(group.props, "scalingConfig.maxSize")) or 0)
        template = launch_template_of(group)
        has_efa = template is not None and bool(efa_interfaces(template.props))
        if size >= floor and not has_efa:
            types = ", ".join(instance_types_of(group))
            report(
                f"node group {group.name} runs up to {size} {types} nodes without EFA (gpu_node_groups[].efa_enabled "
                "false): multi-node jobs would fall back to TCP sockets. Enable EFA, or keep the group to one node.",
                group.urn,
            )


def _nvidia_efa_groups(g: Graph) -> list[PolicyResource]:
    out: list[PolicyResource] = []
    for group, facts in accelerated_node_groups(g):
        template = launch_template_of(group)
        if facts.accelerator == "nvidia" and template is not None and efa_interfaces(template.props):
            out.append(group)
    return out


@stack_rule(
    name="fabric-validation",
    floor="staging",
    description="A cluster with NVIDIA EFA node groups plans the multi-node NCCL all-reduce validation job "
    "(kubernetes.validation): it is the only check that proves traffic goes over EFA and not TCP sockets before "
    "a long run starts (AWS EFA on EKS guide, 'Run an NCCL test'; NVIDIA/nvcf #1349 'prove traffic actually "
    "goes over EFA').",
    severity=Severity.MEDIUM,
)
def fabric_validation(args: StackValidationArgs, report: Report) -> None:
    g = graph(args)
    groups = _nvidia_efa_groups(g)
    if not groups:
        args.not_applicable("no NVIDIA node group with EFA")
    if not g.of_type(*NCCL_WORKLOADS):
        for group in groups:
            report(
                f"no NCCL validation job proves node group {group.name}'s EFA fabric: set "
                "kubernetes.validation.enabled true.",
                group.urn,
            )


def floor_read_rate(args: StackValidationArgs) -> float:
    """The read rate per accelerator the storage floor judges by: the configured one, never below the committed
    fact of the stack's environment (policies/facts_generated.py READ_MB_S_PER_ACCELERATOR_FLOOR; prod's for a
    stack of no known environment), so neither the stack file nor a lowered config moves the floor down."""
    configured = float(args.get_config().get("perGpuReadMbPerS", 0))
    stacks = {environment_of_stack(stack_of(r.urn)) for r in args.resources}
    environments = {e or "prod" for e in stacks} or {"prod"}
    return max(configured, *(READ_MB_S_PER_ACCELERATOR_FLOOR[e] for e in environments))


def _demand(args: StackValidationArgs, g: Graph) -> tuple[float, float, list[Any]]:
    per_gpu = floor_read_rate(args)
    capacity = accelerator_capacity(g)
    supply = sum(lustre_throughput_mb_s(fs.props) for fs in g.of_type(FSX_LUSTRE))
    return supply, per_gpu * sum(c.accelerators for c in capacity), capacity


@stack_rule(
    name="storage-throughput-floor",
    floor="staging",
    description="Lustre's baseline throughput may fall below what the accelerators read at full scale only "
    "down to the environment's floor: above it the shortfall is the advisory storage-throughput-feeds-gpus, "
    "below it GPUs that cost the same per hour sit waiting on storage and the plan is refused (FSx for Lustre "
    "User Guide, performance; trainstack's sizing in stacks/fsx_sizing.py).",
    severity=Severity.HIGH,
    config={
        "minCoverage": {
            "type": "number",
            "minimum": 0,
            "maximum": 1,
            "default": 0.75,
            "description": "Least share of the GPUs' read demand Lustre's baseline must cover (no Lustre at all is "
            "0). Why: below it an epoch is storage-bound. Source: FSx for Lustre User Guide, 'Amazon FSx for "
            "Lustre performance' (throughput scales with storage capacity x per-unit throughput).",
        },
        "perGpuReadMbPerS": {
            "type": "number",
            "exclusiveMinimum": 0,
            "default": 200,
            "description": "Read throughput one GPU needs, MB/s: the committed fact of the environment "
            "(stacks/fsx_sizing.py READ_MB_S_PER_ACCELERATOR_FLOOR, trainstack's sizing assumption) or the stack "
            "file's per_gpu_read_mb_s where that is higher; `make pack-facts` writes it, and the rule never judges "
            "by less than the fact, whatever the config says.",
        },
    },
)
def storage_throughput_floor(args: StackValidationArgs, report: Report) -> None:
    g = graph(args)
    supply, demand, capacity = _demand(args, g)
    if not capacity:
        args.not_applicable("no accelerated capacity")
    floor = float(args.get_config().get("minCoverage", 0.75))
    coverage = supply / demand if demand else 1.0
    if coverage < floor:
        systems = g.of_type(FSX_LUSTRE)
        what = f"Lustre gives {supply:,.0f} MB/s" if systems else "there is no Lustre file system (storage.fsx)"
        report(
            f"{what} for {demand:,.0f} MB/s of GPU read demand: {coverage:.0%} coverage, below the floor of "
            f"{floor:.0%}. Raise storage.fsx.storage_capacity_gib or throughput_mb_s_per_tib.",
            systems[0].urn if systems else _first_accelerated(g),
        )


def _first_accelerated(g: Graph) -> str | None:
    groups = accelerated_node_groups(g)
    return groups[0][0].urn if groups else None


RESOURCE_QUOTA = "kubernetes:core/v1:ResourceQuota"
ACCELERATOR_REQUESTS = ("requests.nvidia.com/gpu", "requests.aws.amazon.com/neuron")


@stack_rule(
    name="team-quota-fits-capacity",
    floor="staging",
    description="A team's accelerator quota is judged against what the cluster can hold: a quota above every "
    "accelerator the node groups (at maxSize) and HyperPod can ever run limits nothing, and jobs admitted up to "
    "it wait for nodes that never come (kubernetes-sigs/kueue#2665: Kueue does not check quotas against "
    "physical capacity).",
    severity=Severity.MEDIUM,
)
def team_quota_fits_capacity(args: StackValidationArgs, report: Report) -> None:
    g = graph(args)
    quotas = g.of_type(RESOURCE_QUOTA)
    if not quotas:
        args.not_applicable("no ResourceQuota")
    if not g.of_type(EKS_CLUSTER) and not g.of_type(HYPERPOD_CLUSTER):
        # Platform-only mode: the cluster and its node groups are someone else's, so the plan holds no capacity.
        args.not_applicable("the cluster is not in the stack (platform-only): its node groups are not either")
    capacity = sum(c.accelerators for c in accelerator_capacity(g))
    for quota in quotas:
        for key in ACCELERATOR_REQUESTS:
            hard = get(quota.props, "spec.hard")
            amount = number(hard[key]) if isinstance(hard, Mapping) and key in iter(hard) else None
            if amount is not None and amount > capacity:
                namespace = get(quota.props, "metadata.namespace")
                report(
                    f"team {namespace!r} may request {int(amount)} accelerators ({key}; kubernetes.teams[].gpu_quota), "
                    f"more than the {capacity} the cluster can hold: a quota above capacity limits nothing; use at "
                    f"most {capacity}.",
                    quota.urn,
                )


# ------------------------------------------------------------------------------------------------ object lock

OBJECT_LOCK = (
    "aws:s3/bucketObjectLockConfiguration:BucketObjectLockConfiguration",
    "aws:s3/bucketObjectLockConfigurationV2:BucketObjectLockConfigurationV2",
)


@stack_rule(
    name="object-lock-retention-floor",
    floor="staging",
    description="The checkpoints bucket's Object Lock keeps each new version at least the environment's floor: "
    "a lock of a day protects a checkpoint only until the deletion is noticed, which takes longer than that "
    "(S3 User Guide, Object Lock default retention).",
    severity=Severity.HIGH,
    config={
        "minRetentionDays": {
            "type": "integer",
            "minimum": 1,
            "default": 7,
            "description": "Least default retention of the checkpoints bucket's Object Lock, days "
            "(security.checkpoint_lock.retention_days). Why: a deleted or overwritten checkpoint is often noticed "
            "only at the next restore, after a weekend; below a week the lock may lapse first. Source: S3 User "
            "Guide, 'Locking objects with Object Lock' (default retention).",
        }
    },
)
def object_lock_retention_floor(args: StackValidationArgs, report: Report) -> None:
    g = graph(args)
    locks = [lock for lock in g.of_type(*OBJECT_LOCK) if get(lock.props, "rule.defaultRetention") is not None]
    if not locks:
        args.not_applicable("no Object Lock default retention (s3-checkpoints-object-lock judges its absence)")
    floor = _int(args, "minRetentionDays", 7)
    for lock in locks:
        days = number(get(lock.props, "rule.defaultRetention.days")) or 0.0
        years = number(get(lock.props, "rule.defaultRetention.years")) or 0.0
        total = days + 365 * years
        if total < floor:
            report(
                f"Object Lock on {lock.name} keeps each checkpoint version {total:g} days "
                f"(security.checkpoint_lock.retention_days); the floor here is {floor} days.",
                lock.urn,
            )


# ------------------------------------------------------------------------------------------------ fleet health

AMP_WORKSPACE = "aws:amp/workspace:Workspace"
AMP_SCRAPER = "aws:amp/scraper:Scraper"
AMP_RULES = "aws:amp/ruleGroupNamespace:RuleGroupNamespace"
SNS_TOPIC = "aws:sns/topic:Topic"
SNS_SUBSCRIPTION = "aws:sns/topicSubscription:TopicSubscription"
TRAINING_RUNTIME = "kubernetes:trainer.kubeflow.org/v1alpha1:ClusterTrainingRuntime"
FRAMEWORK_LABEL = "trainer.kubeflow.org/framework"  # the training runtimes carry it; validation's does not
RESTART_BACKOFF_ENV = "TRAINSTACK_RESTART_BACKOFF_S"  # components/training_runtime.py's restart-wait init container


def _chart(release: PolicyResource) -> str:
    return str(get(release.props, "chart", "")).rstrip("/").rsplit("/", 1)[-1]


def _yaml_block(text: str, key: str) -> dict[str, str]:
    """The scalar children of top-level `key:` in block YAML as yaml.safe_dump writes it (the pack has no YAML
    library): `{"enable": "true", "timeout": "600s"}` for Kueue's waitForPodsReady; {} when the key is absent."""
    lines = text.splitlines()
    if f"{key}:" not in lines:
        return {}
    found: dict[str, str] = {}
    for line in lines[lines.index(f"{key}:") + 1 :]:
        if not line.startswith("  "):
            break
        name, _, value = line.strip().partition(":")
        if not line.startswith("   ") and value.strip():
            found[name] = value.strip()
    return found


def _seconds(text: str | None) -> float | None:
    """A Go duration of whole seconds, minutes or hours as Kueue's config takes it ("600s", "10m", "1h")."""
    if not text:
        return None
    units = {"s": 1, "m": 60, "h": 3600}
    number_part, unit = text[:-1], text[-1:]
    return float(number_part) * units[unit] if unit in units and number_part.isdigit() else None


def _restart_backoff(runtime: PolicyResource) -> float | None:
    """The first restart's wait a training runtime's restart-wait init container gets (None without one)."""
    for job in items(get(runtime.props, "spec.template.spec.replicatedJobs")):
        for container in items(get(job, "template.spec.template.spec.initContainers")):
            for env in items(get(container, "env")):
                if get(env, "name") == RESTART_BACKOFF_ENV:
                    return number(get(env, "value"))
    return None


@stack_rule(
    name="fleet-health-floor",
    floor="prod",  # from prod: a staging fleet is a rehearsal
    description="A fleet that runs for weeks heals itself and says when it cannot: auto repair on every "
    "accelerated node group and bounded (a few nodes at a time, stopping when many fail at once: a fabric or AMI "
    "fault, not a bad GPU); metrics with dcgm-exporter, so the GPU alerts can fire; a job restarts after a crash "
    "a bounded number of times, after a wait that lets the node monitoring agent take a bad node out; Kueue "
    "evicts a job whose pods are not all ready in time (all-or-nothing admission); and the alerts reach someone "
    "(an SNS subscription, not an empty topic). EKS User Guide, node auto repair (NodeRepairConfig); Kueue "
    "waitForPodsReady; JobSet failurePolicy.maxRestarts.",
    severity=Severity.HIGH,
    config={
        "requireNodeRepair": {
            "type": "boolean",
            "default": True,
            "description": "Every accelerated node group has auto repair on. Why: a GPU with an Xid or ECC "
            "error otherwise keeps failing every job placed on it. Source: EKS User Guide, node health and auto "
            "repair.",
        },
        "maxParallelNodesRepaired": {
            "type": "integer",
            "minimum": 1,
            "default": 2,
            "description": "Most nodes one group repairs at once (maxParallelNodesRepairedCount; a percentage "
            "is refused here). Why: a replacement on a reservation needs the slot the old node frees, and each "
            "repaired node stops the job on it.",
        },
        "maxUnhealthyNodePercentage": {
            "type": "integer",
            "minimum": 1,
            "maximum": 100,
            "default": 50,
            "description": "Highest share of unhealthy nodes at which repair still acts "
            "(maxUnhealthyNodeThresholdPercentage). Why: many failing at once is a fabric, AMI or driver "
            "fault that replacing nodes does not fix.",
        },
        "requireMetrics": {
            "type": "boolean",
            "default": True,
            "description": "The metrics stack exists: an AMP workspace, its collector and the alert rules "
            "(health.metrics). Why: without it no alert fires.",
        },
        "requireGpuMetrics": {
            "type": "boolean",
            "default": True,
            "description": "dcgm-exporter runs on NVIDIA groups (kubernetes.gpu_operator.dcgm_exporter). Why: "
            "the Xid, ECC and fallen-off-the-bus alerts read its series; without it they are not listed at all.",
        },
        "minRestartBackoffS": {
            "type": "integer",
            "minimum": 0,
            "default": 10,
            "description": "Least wait before a job's first restart "
            "(kubernetes.training_operator.runtimes.restart_backoff_s). Why: an immediate restart lands on the "
            "same bad node before the node monitoring agent marks it.",
        },
        "restartsBetween": {
            "type": "array",
            "items": {"type": "integer", "minimum": 0},
            "minItems": 2,
            "maxItems": 2,
            "default": [1, 10],
            "description": "Least and most restarts of a failed job (runtimes.max_restarts, JobSet "
            "failurePolicy.maxRestarts). Why: none loses a week's run to one Xid; too many burns a reservation on "
            "a crash loop.",
        },
        "maxPodsReadyTimeoutS": {
            "type": "integer",
            "minimum": 60,
            "default": 1800,
            "description": "Kueue's waitForPodsReady is on, with at most this timeout "
            "(kubernetes.kueue.wait_for_pods_ready_timeout_s). Why: a half-scheduled multi-node job otherwise "
            "holds its GPUs for as long as it waits.",
        },
        "requireAlertSubscription": {
            "type": "boolean",
            "default": True,
            "description": "The alerts' SNS topic has at least one subscription (health.alert_emails). Why: an "
            "alert to an empty topic reaches no one.",
        },
    },
)
def fleet_health_floor(args: StackValidationArgs, report: Report) -> None:
    g = graph(args)
    groups = accelerated_node_groups(g)
    if not groups:
        args.not_applicable("no accelerated node group")
    config = args.get_config()
    if config.get("requireNodeRepair", True):
        most = int(config.get("maxParallelNodesRepaired", 2))
        unhealthy = int(config.get("maxUnhealthyNodePercentage", 50))
        for group, _ in groups:
            repair = get(group.props, "nodeRepairConfig", {})
            if not truthy(get(repair, "enabled")):
                report(f"node group {group.name} has no auto repair (health.node_repair.enabled).", group.urn)
                continue
            parallel = number(get(repair, "maxParallelNodesRepairedCount"))
            if parallel is None or parallel > most:
                report(
                    f"node group {group.name} repairs {_shown(parallel)} nodes at once "
                    f"(health.node_repair.max_parallel_nodes_repaired_count); the floor here is at most {most}.",
                    group.urn,
                )
            threshold = number(get(repair, "maxUnhealthyNodeThresholdPercentage"))
            if threshold is None or threshold > unhealthy:
                report(
                    f"node group {group.name} keeps repairing until {_shown(threshold)}% of it is unhealthy "
                    f"(health.node_repair.max_unhealthy_node_threshold_percentage); the floor here stops at "
                    f"{unhealthy}%.",
                    group.urn,
                )
    if config.get("requireMetrics", True) and not all(g.of_type(t) for t in (AMP_WORKSPACE, AMP_SCRAPER, AMP_RULES)):
        report("no metrics stack (workspace, collector, alert rules): no alert can fire; set health.metrics true.")
    nvidia = [group for group, _ in groups if str(get(group.props, "amiType", "")) in ACCELERATED_AMI_TYPES["nvidia"]]
    if config.get("requireGpuMetrics", True) and nvidia:
        for release in [r for r in g.of_type(*HELM_TYPES) if _chart(r) == "gpu-operator"]:
            if get(release.props, "values.dcgmExporter.enabled") is not True:
                report(
                    f"{release.name} runs no dcgm-exporter (kubernetes.gpu_operator.dcgm_exporter): the GPU "
                    "alerts (Xid, ECC, fallen off the bus) cannot fire.",
                    release.urn,
                )
    least, most_restarts = (int(n) for n in config.get("restartsBetween", [1, 10]))
    min_backoff = float(config.get("minRestartBackoffS", 10))
    for runtime in g.of_type(TRAINING_RUNTIME):
        labels = get(runtime.props, "metadata.labels", {})
        if not isinstance(labels, Mapping) or FRAMEWORK_LABEL not in iter(labels):
            continue
        restarts = number(get(runtime.props, "spec.template.spec.failurePolicy.maxRestarts"))
        if restarts is None or not least <= restarts <= most_restarts:
            report(
                f"training runtime {runtime.name} restarts a failed job {_shown(restarts)} times "
                f"(kubernetes.training_operator.runtimes.max_restarts); the floor here is {least} to "
                f"{most_restarts}.",
                runtime.urn,
            )
        backoff = _restart_backoff(runtime)
        if backoff is None or backoff < min_backoff:
            report(
                f"training runtime {runtime.name} waits {_shown(backoff)} s before a restart "
                f"(kubernetes.training_operator.runtimes.restart_backoff_s); the floor here is {min_backoff:g} s.",
                runtime.urn,
            )
    timeout_floor = float(config.get("maxPodsReadyTimeoutS", 1800))
    for release in [r for r in g.of_type(*HELM_TYPES) if _chart(r) == "kueue"]:
        text = get(release.props, "values.managerConfig.controllerManagerConfigYaml", "")
        ready = _yaml_block(str(text), "waitForPodsReady")
        timeout = _seconds(ready.get("timeout"))
        if ready.get("enable") != "true" or timeout is None or timeout > timeout_floor:
            report(
                f"{release.name}: Kueue's waitForPodsReady is {ready or 'off'} "
                f"(kubernetes.kueue.wait_for_pods_ready_timeout_s); the floor here is on, with a timeout of at "
                f"most {timeout_floor:g} s.",
                release.urn,
            )
    if config.get("requireAlertSubscription", True):
        for topic in g.of_type(SNS_TOPIC):
            if not g.referrers(topic, None, SNS_SUBSCRIPTION):
                report(
                    f"alert topic {topic.name} has no subscription: alerts reach no one; list who receives them in "
                    "health.alert_emails.",
                    topic.urn,
                )


def _shown(value: float | None) -> str:
    return "an unset number of" if value is None else f"{value:g}"


# ------------------------------------------------------------------------------------------------ waivers


@stack_rule(
    name="waiver-expired",
    description="A waiver whose expiry day is over exempts nothing any more: the violation it covered stands at its "
    "rule's level (so prod refuses it by that rule), and this rule names the lapsed waiver and its owner, to be "
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
    "named resource; prod waives no floor. A waiver of a rule that does not exist, of a critical rule, of a floor in "
    "prod, of another environment, without a near expiry, or that waives nothing is refused, so waivers cannot "
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

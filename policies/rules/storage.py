"""Storage rules: S3 buckets for datasets and checkpoints, FSx for Lustre."""

from __future__ import annotations

from pulumi_policy import PolicyResource, ResourceValidationArgs, Severity, StackValidationArgs

from .base import (
    FSX_LUSTRE,
    S3_BUCKETS,
    S3_PUBLIC_ACCESS_BLOCK,
    S3_SSE,
    S3_VERSIONING,
    SECURITY_GROUP,
    SUBNET,
    Graph,
    Report,
    accelerated_node_groups,
    accelerator_capacity,
    get,
    graph,
    has,
    items,
    lustre_throughput_mb_s,
    resource_rule,
    stack_rule,
)
from .network import allows_all_self, sg_rules

_PAB_FLAGS = ("blockPublicAcls", "blockPublicPolicy", "ignorePublicAcls", "restrictPublicBuckets")


def _buckets(args: StackValidationArgs) -> tuple[Graph, list[PolicyResource]]:
    g = graph(args)
    buckets = g.of_type(*S3_BUCKETS)
    if not buckets:
        args.not_applicable("no S3 buckets in the stack")
    return g, buckets


@stack_rule(
    name="s3-public-access-block",
    description="Every bucket has a public access block with all four flags on: training data and "
    "checkpoints are never meant to be public (CKV2_AWS_6, CKV_AWS_53-56).",
    severity=Severity.CRITICAL,
)
def s3_public_access_block(args: StackValidationArgs, report: Report) -> None:
    g, buckets = _buckets(args)
    for bucket in buckets:
        blocks = g.referrers(bucket, "bucket", S3_PUBLIC_ACCESS_BLOCK)
        if not blocks:
            report(f"bucket {bucket.name} has no BucketPublicAccessBlock.", bucket.urn)
        for block in blocks:
            off = [flag for flag in _PAB_FLAGS if get(block.props, flag) is not True]
            if off:
                report(f"bucket {bucket.name}: {block.name} leaves {off} off.", bucket.urn)


@stack_rule(
    name="s3-sse-kms",
    description="Buckets encrypt with SSE-KMS and S3 Bucket Keys: SSE-S3 is already the AWS default, KMS "
    "adds key policies and CloudTrail on every use, and Bucket Keys cut the KMS request cost (CKV_AWS_145).",
    severity=Severity.HIGH,
)
def s3_sse_kms(args: StackValidationArgs, report: Report) -> None:
    g, buckets = _buckets(args)
    for bucket in buckets:
        configs = g.referrers(bucket, "bucket", *S3_SSE)
        rules = [rule for c in configs for rule in items(get(c.props, "rules"))]
        kms = [
            r for r in rules if str(get(r, "applyServerSideEncryptionByDefault.sseAlgorithm", "")).startswith("aws:kms")
        ]
        if not kms:
            report(f"bucket {bucket.name} has no SSE-KMS default encryption.", bucket.urn)
        elif not any(get(r, "bucketKeyEnabled") is True for r in kms):
            report(f"bucket {bucket.name} uses SSE-KMS without bucketKeyEnabled.", bucket.urn)


@stack_rule(
    name="s3-versioning",
    description="Buckets keep object versions, so an overwritten or deleted checkpoint can be restored (CKV_AWS_21).",
    severity=Severity.MEDIUM,
)
def s3_versioning(args: StackValidationArgs, report: Report) -> None:
    g, buckets = _buckets(args)
    for bucket in buckets:
        configs = g.referrers(bucket, "bucket", *S3_VERSIONING)
        if not any(get(c.props, "versioningConfiguration.status") == "Enabled" for c in configs):
            report(f"bucket {bucket.name} has no BucketVersioning with status Enabled.", bucket.urn)


@resource_rule(
    name="fsx-persistent2-kms",
    description="Lustre is PERSISTENT_2 with a customer KMS key where required: SCRATCH file systems are "
    "not replicated and lose data when a server fails (FSx Lustre deployment options, CKV_AWS_190).",
    severity=Severity.HIGH,
    types=[FSX_LUSTRE],
    config={
        "requirePersistent2": {"type": "boolean", "default": True, "description": "Require PERSISTENT_2."},
        "requireCustomerKey": {"type": "boolean", "default": True, "description": "Require kmsKeyId."},
    },
)
def fsx_persistent2_kms(args: ResourceValidationArgs, report: Report) -> None:
    deployment = get(args.props, "deploymentType", "SCRATCH_1")  # the FSx API default
    if args.get_config().get("requirePersistent2", True) and deployment != "PERSISTENT_2":
        report(f"deploymentType is {deployment}; PERSISTENT_2 is required here.")
    if args.get_config().get("requireCustomerKey", True) and not has(args.props, "kmsKeyId"):
        report("kmsKeyId is not set: the file system would use the AWS managed key.")


@stack_rule(
    name="fsx-efa-prereqs",
    description="An EFA-enabled Lustre file system is PERSISTENT_2 with a metadata configuration and an "
    "EFA-enabled security group (all traffic to and from itself); all three are fixed at creation "
    "(pulumi-aws fsx.LustreFileSystem efa_enabled docs).",
    severity=Severity.MEDIUM,
)
def fsx_efa_prereqs(args: StackValidationArgs, report: Report) -> None:
    g = graph(args)
    efa = [fs for fs in g.of_type(FSX_LUSTRE) if get(fs.props, "efaEnabled") is True]
    if not efa:
        args.not_applicable("no EFA-enabled Lustre file system")
    for fs in efa:
        if get(fs.props, "deploymentType") != "PERSISTENT_2":
            report(f"{fs.name}: efaEnabled needs deploymentType PERSISTENT_2.", fs.urn)
        if not has(fs.props, "metadataConfiguration"):
            report(f"{fs.name}: efaEnabled needs metadataConfiguration.", fs.urn)
        groups = Graph.deps(fs, "securityGroupIds", SECURITY_GROUP)
        if not any(all(allows_all_self(g, sg)) for sg in groups):
            report(f"{fs.name}: none of its security groups allows all traffic to and from itself.", fs.urn)


# FSx for Lustre: TCP 988 and 1018-1023 between clients and file servers (FSx Lustre User Guide, "File
# system access control with Amazon VPC").
LUSTRE_PORTS = (988, *range(1018, 1024))


@stack_rule(
    name="fsx-lustre-ports",
    description="The file system's security groups admit TCP 988 and 1018-1023, which Lustre clients and "
    "servers use; without them every mount hangs (FSx Lustre User Guide, VPC access control).",
    severity=Severity.HIGH,
)
def fsx_lustre_ports(args: StackValidationArgs, report: Report) -> None:
    g = graph(args)
    systems = g.of_type(FSX_LUSTRE)
    if not systems:
        args.not_applicable("no Lustre file system")
    for fs in systems:
        groups = Graph.deps(fs, "securityGroupIds", SECURITY_GROUP)
        if not groups:
            report(f"{fs.name}: no security group of the stack is attached (securityGroupIds).", fs.urn)
            continue
        ingress = [r for sg in groups for r in sg_rules(g, sg) if r.direction == "ingress"]
        closed = [p for p in LUSTRE_PORTS if not any(r.covers_tcp(p) for r in ingress)]
        if closed:
            report(f"{fs.name}: its security groups do not admit TCP {closed}.", fs.urn)


def _az(subnet: PolicyResource) -> str:
    """A subnet's AZ by name, or by AZ id when that is what the subnet was given."""
    return str(get(subnet.props, "availabilityZone") or get(subnet.props, "availabilityZoneId"))


@stack_rule(
    name="fsx-same-az-as-gpu",
    description="Lustre sits in the GPU node groups' AZ: a file system serves one subnet, and reading "
    "across AZs adds latency and cross-AZ transfer charges on every epoch (FSx Lustre availability). Advisory "
    "in every environment: EFA groups may sit in several AZs where their reservations are, and the plan prices "
    "the cross-AZ reads ($0.01/GB each way).",
    severity=Severity.MEDIUM,
)
def fsx_same_az_as_gpu(args: StackValidationArgs, report: Report) -> None:
    g = graph(args)
    systems = g.of_type(FSX_LUSTRE)
    groups = accelerated_node_groups(g)
    if not systems or not groups:
        args.not_applicable("needs a Lustre file system and a GPU node group")
    gpu_azs = {_az(s): group.name for group, _ in groups for s in Graph.deps(group, "subnetIds", SUBNET)}
    for fs in systems:
        fs_azs = {_az(s) for s in Graph.deps(fs, "subnetIds", SUBNET)}
        if not fs_azs:
            # A subnet of an existing VPC: its AZ is not in the stack, but a subnet lies in one AZ (VPC User
            # Guide, "Subnets for your VPC"), so GPU groups in the very same subnet are in the file system's AZ.
            value = get(fs.props, "subnetIds")  # pulumi-aws 7 types it as one string; older SDKs as a list
            fs_subnets = {value} if isinstance(value, str) else {str(s) for s in items(value)}
            elsewhere = sorted(
                group.name
                for group, _ in groups
                if not {str(s) for s in items(get(group.props, "subnetIds"))} <= fs_subnets
            )
            if elsewhere:
                report(
                    f"{fs.name}: its subnet is not a subnet of this stack and GPU node groups {', '.join(elsewhere)} "
                    "use other subnets; cannot check that they share its AZ.",
                    fs.urn,
                )
            continue
        far = {az: name for az, name in gpu_azs.items() if az not in fs_azs}
        if far:
            report(
                f"{fs.name} is in {sorted(fs_azs)} but GPU node groups run in "
                f"{', '.join(f'{az} ({name})' for az, name in sorted(far.items()))}.",
                fs.urn,
            )


@stack_rule(
    name="storage-throughput-feeds-gpus",
    description="Lustre's baseline throughput covers what the accelerators read at full scale (EKS node "
    "groups at maxSize and HyperPod instance groups, which mount the same file system, x MB/s per GPU: the "
    "sizing the plan prints): starved GPUs cost the same per hour as busy ones. Advisory, because the "
    "per-GPU read rate is a workload assumption.",
    severity=Severity.MEDIUM,
    config={
        "perGpuReadMbPerS": {
            "type": "number",
            "exclusiveMinimum": 0,
            "default": 200,
            "description": "Read throughput one GPU needs, MB/s (trainstack's sizing default).",
        }
    },
)
def storage_throughput_feeds_gpus(args: StackValidationArgs, report: Report) -> None:
    g = graph(args)
    systems = g.of_type(FSX_LUSTRE)
    capacity = accelerator_capacity(g)
    if not systems or not capacity:
        args.not_applicable("needs a Lustre file system and accelerated capacity (node groups or HyperPod)")
    per_gpu = float(args.get_config().get("perGpuReadMbPerS", 200))
    gpus = sum(c.accelerators for c in capacity)
    supply = sum(lustre_throughput_mb_s(fs.props) for fs in systems)
    if supply < gpus * per_gpu:
        report(
            f"Lustre gives {supply:,.0f} MB/s baseline; {gpus} GPUs "
            f"({', '.join(f'{c.name} {c.accelerators}' for c in capacity)}) at {per_gpu:g} MB/s need "
            f"{gpus * per_gpu:,.0f} MB/s. Raise storage capacity or per-unit throughput.",
            systems[0].urn,
        )

"""Storage rules (the `trainstack:storage` area): S3 buckets for datasets and checkpoints (public access,
encryption, versions, the bucket policies that keep data in the VPC and per team, Object Lock), FSx for Lustre
(encryption, EFA, ports, AZ, root squash, the teams' volumes), the throughput that feeds the GPUs, and the data
floors (backups, old versions, lock retention, throughput)."""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping, Sequence
from typing import Any

from pulumi_policy import PolicyResource, ResourceValidationArgs, Severity, StackValidationArgs
from pulumi_policy.proxy import UnknownValueError

from ..facts import (
    DATA_CLASS_TAG,
    DATA_EMPTYING_ACTIONS,
    DATA_READ_WRITE_ACTIONS,
    DATASETS_CLAIM,
    FSX_CSI_DRIVER,
    LUSTRE_PORT_RANGES,
    READ_MB_S_PER_ACCELERATOR_FLOOR,
    READ_ONLY_MOUNT_OPTION,
)
from ..facts_generated import (
    BUCKET_LIFECYCLE_CONFIGURATION,
    BUCKET_OBJECT,
    BUCKET_OBJECT_LOCK,
    BUCKET_POLICY,
    BUCKET_PUBLIC_ACCESS_BLOCK,
    FSX_DATA_REPOSITORY_ASSOCIATION,
    FSX_LUSTRE,
    IAM_POLICY,
    IAM_ROLE,
    IAM_ROLE_POLICY,
    KMS_KEY,
    PERSISTENT_VOLUME,
    S3_BUCKETS,
    SECURITY_GROUP,
    SUBNET,
)
from .base import (
    S3_SSE,
    S3_VERSIONING,
    Graph,
    Report,
    accelerated_node_groups,
    accelerator_capacity,
    as_list,
    availability_zone,
    condition_keys,
    environment_of_stack,
    get,
    graph,
    has,
    int_config,
    items,
    lustre_throughput_mb_s,
    number,
    policy_statements,
    resource_rule,
    stack_of,
    stack_rule,
    truthy,
)
from .k8s import team_namespaces
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
        blocks = g.referrers(bucket, "bucket", BUCKET_PUBLIC_ACCESS_BLOCK)
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
LUSTRE_PORTS = tuple(port for low, high in LUSTRE_PORT_RANGES for port in range(low, high + 1))


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
    gpu_azs = {availability_zone(s): group.name for group, _ in groups for s in Graph.deps(group, "subnetIds", SUBNET)}
    for fs in systems:
        fs_azs = {availability_zone(s) for s in Graph.deps(fs, "subnetIds", SUBNET)}
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
            "description": "Read throughput one GPU needs, MB/s (trainstack's sizing default), as the environment's "
            "config file says: `make pack-facts` writes the committed stack file's storage.fsx.per_gpu_read_mb_s "
            "there. The pack reads no stack file, so a stack whose file differs from the committed one (an edit "
            "under review, a `<env>-<suffix>` stack) is judged by the config's rate; the plan's storage line uses "
            "the file's own.",
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


OBJECT_LOCK = (
    BUCKET_OBJECT_LOCK,
    "aws:s3/bucketObjectLockConfigurationV2:BucketObjectLockConfigurationV2",
)


# ----------------------------------------------------------------------------------------------- storage


@resource_rule(
    name="fsx-root-squash",
    description="Lustre squashes root to an unprivileged UID:GID, so root in a container or on a node cannot "
    "read or change other teams' files (FSx for Lustre User Guide, Lustre root squash).",
    severity=Severity.HIGH,
    types=[FSX_LUSTRE],
)
def fsx_root_squash(args: ResourceValidationArgs, report: Report) -> None:
    squash = str(get(args.props, "rootSquashConfiguration.rootSquash", ""))
    if not squash or squash.split(":")[0] == "0":
        report(f"root squash is off (rootSquash {squash or 'unset'}): root on any client owns every file.")


def nid_addresses(nid: str) -> int | None:
    """Client addresses a NoSquashNids entry covers (`10.0.[2-10].[1-255]@tcp`: 9 x 255), None when unreadable."""
    address, _, network = nid.partition("@")
    parts = address.split(".")
    if network != "tcp" or len(parts) != 4:
        return None
    count = 1
    for part in parts:
        low, _, high = part.strip("[]").partition("-")
        if not low.isdigit() or (high and not high.isdigit()):
            return None
        count *= int(high) - int(low) + 1 if high else 1
    return count


@resource_rule(
    name="fsx-no-squash-breadth",
    description="The clients exempt from root squash (storage.fsx.no_squash_nids) are a few administration hosts, "
    "not a range: root on any exempt client owns every team's files, so a wide range is root squash in name only.",
    severity=Severity.HIGH,
    types=[FSX_LUSTRE],
    config={
        "maxExemptAddresses": {
            "type": "integer",
            "minimum": 0,
            "default": 16,
            "description": "Most client addresses all NoSquashNids together may cover. Why: each is a host whose "
            "root reads and changes every team's files. Source: FSx for Lustre User Guide, Lustre root squash.",
        }
    },
)
def fsx_no_squash_breadth(args: ResourceValidationArgs, report: Report) -> None:
    nids = [str(n) for n in items(get(args.props, "rootSquashConfiguration.noSquashNids"))]
    if not nids:
        args.not_applicable("no client is exempt from root squash")
        return
    limit = int(args.get_config().get("maxExemptAddresses", 16))
    counts = {nid: nid_addresses(nid) for nid in nids}
    unreadable = [nid for nid, count in counts.items() if count is None]
    total = sum(count or 0 for count in counts.values())
    if unreadable or total > limit:
        widest = max(nids, key=lambda n: counts[n] or 0)
        report(
            f"root squash exempts {total:,} client addresses (storage.fsx.no_squash_nids, widest {widest})"
            + (f" and unreadable NIDs {unreadable}" if unreadable else "")
            + f"; the most allowed here is {limit:,}: list the administration hosts themselves."
        )


@resource_rule(
    name="fsx-dra-no-delete-export",
    description="The data repository association does not export deletions: with DELETED exported, removing a "
    "file on Lustre deletes it from the datasets bucket, the source of truth.",
    severity=Severity.HIGH,
    types=[FSX_DATA_REPOSITORY_ASSOCIATION],
)
def fsx_dra_no_delete_export(args: ResourceValidationArgs, report: Report) -> None:
    events = [str(e) for e in items(get(args.props, "s3.autoExportPolicy.events"))]
    if "DELETED" in events:
        report(f"autoExportPolicy exports {events}: deletions on Lustre reach the bucket.")


@resource_rule(
    name="fsx-team-isolation",
    description="Each team's writable FSx volume mounts its own directory (`.../<its namespace>`), never the file "
    "system's root nor another team's directory, and no volume, read-only ones included, mounts the root, so one "
    "team cannot read or overwrite another's checkpoints.",
    severity=Severity.HIGH,
    types=[PERSISTENT_VOLUME],
)
def fsx_team_isolation(args: ResourceValidationArgs, report: Report) -> None:
    # A resource rule: the mount name comes from the file system's output, unknown until it exists, so preview
    # reports it as not checkable rather than a stack rule going blind.
    if get(args.props, "spec.csi.driver") != FSX_CSI_DRIVER:
        args.not_applicable("not an FSx for Lustre volume")
        return
    team = str(get(args.props, "spec.claimRef.namespace", ""))
    mount = str(get(args.props, "spec.csi.volumeAttributes.mountname", "")).strip("/")
    # A read-only volume (the shared datasets) is judged too: the root read-only shows every team's files.
    read_only = get(args.props, "spec.csi.readOnly") is True
    if "/" not in mount:
        access = "read-only" if read_only else "read-write"
        report(f"the volume gives {team or 'its claim'} the file system root {access} (mountname {mount!r}).")
    elif read_only:
        return  # a shared directory: fsx-views-disjoint judges whether it holds a team's
    elif not team or not mount.endswith(f"/{team}"):
        report(f"the volume of {team or 'an unbound claim'} mounts {mount!r}, not a directory named after the team.")


@resource_rule(
    name="fsx-datasets-read-only",
    description="The datasets volume (and any FSx volume that says it is read-only) mounts with the `ro` option: "
    "the FSx CSI driver mounts read-only only when the pod asks (its volume's or mount's readOnly) and then adds "
    "the volume's mount options, so `spec.csi.readOnly` and ReadOnlyMany alone let a pod write the datasets "
    "(kubernetes#69843; kubernetes-sigs/aws-fsx-csi-driver pkg/driver/node.go NodePublishVolume).",
    severity=Severity.MEDIUM,
    types=[PERSISTENT_VOLUME],
)
def fsx_datasets_read_only(args: ResourceValidationArgs, report: Report) -> None:
    if get(args.props, "spec.csi.driver") != FSX_CSI_DRIVER:
        args.not_applicable("not an FSx for Lustre volume")
        return
    claim = get(args.props, "spec.claimRef.name")
    says_read_only = get(args.props, "spec.csi.readOnly") is True or "ReadOnlyMany" in items(
        get(args.props, "spec.accessModes")
    )
    if claim != DATASETS_CLAIM and not says_read_only:
        args.not_applicable("a writable volume other than the datasets")
        return
    if claim == DATASETS_CLAIM and not says_read_only:
        report(f"the datasets volume of {get(args.props, 'spec.claimRef.namespace')} is writable.")
    if READ_ONLY_MOUNT_OPTION not in items(get(args.props, "spec.mountOptions")):
        report(
            f"{get(args.props, 'metadata.name', 'the volume')} is read-only in its spec only: without the "
            f"`{READ_ONLY_MOUNT_OPTION}` mount option a pod that mounts it read-write writes the datasets."
        )


def _lustre_directory(volume: PolicyResource) -> tuple[str, str]:
    """(file system, directory) an FSx volume mounts: its dnsname, and `mountname`'s path after the mount name
    ("8aaec4e1/teams/research" -> "/teams/research"; the bare mount name is the root, "/")."""
    attributes = get(volume.props, "spec.csi.volumeAttributes", {})
    mount = str(get(attributes, "mountname", "")).strip("/")
    return str(get(attributes, "dnsname", "")), "/" + (mount.split("/", 1)[1] if "/" in mount else "")


def _holds(outer: str, inner: str) -> bool:
    return (inner.rstrip("/") + "/").startswith(outer.rstrip("/") + "/")


@stack_rule(
    name="fsx-in-stack",
    description="The FSx file system the teams' volumes mount is this stack's: on one it does not create "
    "(storage.fsx.existing) the pack cannot see its encryption key, root squash, backups, logging or security "
    "group, so every FSx rule is silently not applicable. Advisory by default; prod requires its own file system "
    "(storage-throughput-floor, a floor, also sees no Lustre to feed prod's GPUs there).",
    severity=Severity.MEDIUM,
)
def fsx_in_stack(args: StackValidationArgs, report: Report) -> None:
    g = graph(args)
    volumes = [v for v in g.of_type(PERSISTENT_VOLUME) if get(v.props, "spec.csi.driver") == FSX_CSI_DRIVER]
    if not volumes:
        args.not_applicable("no FSx volumes in the stack")
    if not g.of_type(FSX_LUSTRE):
        report(
            f"{len(volumes)} FSx volume(s) mount a file system this stack does not create (storage.fsx.existing): "
            "its encryption, root squash, backups, logging and security group cannot be checked here; review it "
            "with its owner.",
            min(volumes, key=lambda v: v.name).urn,  # one stable resource for a waiver to name
        )


@stack_rule(
    name="fsx-views-disjoint",
    description="The directories the FSx volumes mount never hold one another: a read-only shared view (the "
    "datasets) that holds a team's directory shows that team's checkpoints to every team, and a team's writable "
    "directory that holds the shared data lets that team change what every team reads. Two volumes may share a "
    "directory only when both are read-only (the datasets, one volume per team namespace).",
    severity=Severity.HIGH,
)
def fsx_views_disjoint(args: StackValidationArgs, report: Report) -> None:
    g = graph(args)
    volumes = [v for v in g.of_type(PERSISTENT_VOLUME) if get(v.props, "spec.csi.driver") == FSX_CSI_DRIVER]
    if len(volumes) < 2:
        args.not_applicable("fewer than two FSx volumes")
    try:
        views = [(v, *_lustre_directory(v), get(v.props, "spec.csi.readOnly") is True) for v in volumes]
    except UnknownValueError:
        # `mountname` joins the file system's mount name (an output): known once it exists. The schema refuses
        # overlapping storage.fsx paths before any preview; this rule catches a component that nests them.
        args.not_applicable("the volumes' directories are known once the file system exists (mountname)")
        return
    for volume, system, directory, read_only in views:
        for other, other_system, other_directory, other_read_only in views:
            if other is volume or other_system != system or not _holds(directory, other_directory):
                continue
            # The same directory: fine when both are read-only (the shared data); otherwise reported once, by the
            # writable volume (by the first name when both are).
            if directory == other_directory and (read_only or (not other_read_only and volume.name > other.name)):
                continue
            team = get(other.props, "spec.claimRef.namespace")
            report(
                f"{volume.name} ({'read-only' if read_only else 'read-write'}) mounts {directory}, which holds "
                f"{other_directory}, the directory of {other.name} (team {team}): keep storage.fsx.file_system_path "
                "and storage.fsx.team_directory apart.",
                volume.urn,
            )


# -------------------------------------------------------------------------------------------------- S3


def bucket_statements(g: Graph, bucket: PolicyResource) -> list[Mapping[str, Any]] | None:
    """The statements of the bucket's policies; None while a policy is unknown. A bucket policy names its
    bucket's ARN, so on a stack's first preview it is unknown; the pack checks it again at `pulumi up`, when
    stack policies see every value, and on every later preview."""
    try:
        return [
            s for p in g.referrers(bucket, "bucket", BUCKET_POLICY) for s in policy_statements(get(p.props, "policy"))
        ]
    except UnknownValueError:
        return None


def known_policies(
    args: StackValidationArgs, g: Graph, buckets: list[PolicyResource]
) -> list[tuple[PolicyResource, list[Mapping[str, Any]]]]:
    """Each bucket with its policy statements, skipping policies not known yet (not applicable when none is)."""
    known = [(b, statements) for b in buckets if (statements := bucket_statements(g, b)) is not None]
    if buckets and not known:
        args.not_applicable("the bucket policies are computed when the buckets are created; checked at pulumi up")
    return known


def denies(statement: Mapping[str, Any], action: str) -> bool:
    actions = [str(a) for a in as_list(statement.get("Action"))]
    return statement.get("Effect") == "Deny" and any(a in (action, "s3:*", "*") for a in actions)


def _data_buckets(g: Graph, *classes: str) -> list[PolicyResource]:
    return [b for b in g.of_type(*S3_BUCKETS) if get(b.props, f"tags.{DATA_CLASS_TAG}") in classes]


S3_LIFECYCLE = (
    BUCKET_LIFECYCLE_CONFIGURATION,
    "aws:s3/bucketLifecycleConfigurationV2:BucketLifecycleConfigurationV2",
)


def _aborts_stale_uploads(rule: Any) -> bool:
    """An enabled lifecycle rule on the whole bucket (no filter, or an empty prefix and nothing else) that aborts
    incomplete multipart uploads after some days."""
    days = get(rule, "abortIncompleteMultipartUpload.daysAfterInitiation")
    whole = all(get(rule, f"filter.{k}") in (None, "") for k in ("prefix", "tag", "and"))
    return get(rule, "status") == "Enabled" and isinstance(days, int | float) and days >= 1 and whole


@stack_rule(
    name="s3-abort-incomplete-uploads",
    description="Every bucket the stack creates aborts incomplete multipart uploads (an enabled lifecycle rule on "
    "the whole bucket): their parts are stored and billed, invisible to listings, until aborted (S3 User Guide, "
    "lifecycle configuration for incomplete multipart uploads).",
    severity=Severity.LOW,
)
def s3_abort_incomplete_uploads(args: StackValidationArgs, report: Report) -> None:
    g = graph(args)
    buckets = g.of_type(*S3_BUCKETS)
    if not buckets:
        args.not_applicable("no bucket")
    for bucket in buckets:
        try:
            rules = [r for c in g.referrers(bucket, "bucket", *S3_LIFECYCLE) for r in items(get(c.props, "rules"))]
            if not any(_aborts_stale_uploads(r) for r in rules):
                report(f"{bucket.name}: no enabled lifecycle rule aborts incomplete multipart uploads.", bucket.urn)
        except UnknownValueError:
            continue


CHECKPOINT_WRITE_ACTIONS = ("s3:PutObject", "s3:DeleteObject")
ENCRYPTION_HEADERS = ("s3:x-amz-server-side-encryption-aws-kms-key-id", "s3:x-amz-server-side-encryption")


def _allows_pattern(statement: Mapping[str, Any], action: str) -> bool:
    """An Allow whose Action (wildcards as IAM reads them, case-insensitive) covers `action`."""
    return statement.get("Effect") == "Allow" and any(
        fnmatch.fnmatchcase(action.lower(), str(a).lower()) for a in as_list(statement.get("Action"))
    )


def _whole_bucket_writes(statement: Mapping[str, Any], bucket_arn: str, teams: Sequence[str]) -> list[str]:
    """The statement's resources that reach objects under two different top-level prefixes of the bucket (`*`,
    the bucket's `/*`, a wildcard in the first segment that covers two teams): more than one team's checkpoints."""
    prefixes = {*teams, "team-a-probe", "team-b-probe", "shared"}
    return [
        str(r)
        for r in as_list(statement.get("Resource"))
        if sum(fnmatch.fnmatchcase(f"{bucket_arn}/{p}/x", str(r)) for p in prefixes) >= 2
    ]


def _identity_documents(g: Graph) -> list[tuple[PolicyResource, str, Any]]:
    """Every identity policy document the stack creates, with its resource and where in it: role policies,
    managed policies and a role's inline policies alike (each can grant a role the same writes)."""
    found: list[tuple[PolicyResource, str, Any]] = [
        (p, "", get(p.props, "policy")) for p in [*g.of_type(IAM_ROLE_POLICY), *g.of_type(IAM_POLICY)]
    ]
    for role in g.of_type(IAM_ROLE):
        found += [
            (role, f" inlinePolicies[{get(p, 'name', i)}]", get(p, "policy"))
            for i, p in enumerate(items(get(role.props, "inlinePolicies")))
        ]
    return found


@stack_rule(
    name="s3-checkpoints-per-prefix",
    description="No role the stack creates writes or deletes across the whole checkpoints bucket (role policies, "
    "managed policies and roles' inline policies alike): each team's "
    "roles (Pod Identity, SageMaker training) write only under `<team>/`, so one team's job cannot overwrite "
    "another's checkpoints; and the bucket refuses uploads that name another encryption than its own key, so "
    "every checkpoint is readable with that key and under its policy.",
    severity=Severity.MEDIUM,
)
def s3_checkpoints_per_prefix(args: StackValidationArgs, report: Report) -> None:
    g = graph(args)
    buckets = _data_buckets(g, "checkpoints")
    if not buckets:
        args.not_applicable("no checkpoints bucket")
    teams = [str(get(ns.props, "metadata.name")) for ns in team_namespaces(g)]
    for bucket, statements in known_policies(args, g, buckets):
        for header in ENCRYPTION_HEADERS:
            if not any(denies(s, "s3:PutObject") and header in condition_keys(s) for s in statements):
                report(f"{bucket.name}: uploads naming another {header} are not denied.", bucket.urn)
        # The bucket's ARN as its own policy names it (bucket-level resources): the plan's inputs carry no ARN.
        arns = {str(r) for s in statements for r in as_list(s.get("Resource")) if "/" not in str(r)}
        for policy, where, document in _identity_documents(g):
            try:
                found = policy_statements(document)
            except UnknownValueError:
                continue
            for statement in found:
                actions = [a for a in CHECKPOINT_WRITE_ACTIONS if _allows_pattern(statement, a)]
                wide = (
                    sorted({r for arn in arns for r in _whole_bucket_writes(statement, arn, teams)}) if actions else []
                )
                if wide:
                    report(
                        f"{policy.name}{where} allows {', '.join(actions)} on {', '.join(wide)}: every team's "
                        "checkpoints, not one team's prefix.",
                        policy.urn,
                    )


@stack_rule(
    name="s3-data-vpc-only",
    description="The datasets and checkpoints buckets deny object access that does not come through the VPC's "
    "S3 endpoint (aws:SourceVpce), so leaked credentials cannot read or wipe training data from elsewhere.",
    severity=Severity.HIGH,
)
def s3_data_vpc_only(args: StackValidationArgs, report: Report) -> None:
    g = graph(args)
    buckets = _data_buckets(g, "datasets", "checkpoints")
    if not buckets:
        args.not_applicable("no data buckets")
    for bucket, statements in known_policies(args, g, buckets):
        open_actions = [
            action
            for action in (*DATA_READ_WRITE_ACTIONS, *DATA_EMPTYING_ACTIONS)
            if not any(denies(s, action) and "aws:SourceVpce" in condition_keys(s) for s in statements)
        ]
        if open_actions:
            report(
                f"{bucket.name}: {', '.join(open_actions)} from outside the VPC's S3 endpoint is not denied.",
                bucket.urn,
            )


def _exempt_principals(statement: Mapping[str, Any]) -> list[str]:
    """The aws:PrincipalArn patterns a deny statement leaves out (ArnNotLike / ArnNotEquals)."""
    condition = statement.get("Condition")
    if not isinstance(condition, Mapping):
        return []
    return [
        str(arn)
        for operator in ("ArnNotLike", "ArnNotEquals", "ArnNotLikeIfExists", "ArnNotEqualsIfExists")
        for arn in as_list((condition.get(operator) or {}).get("aws:PrincipalArn"))
    ]


def _key_administrators(g: Graph) -> tuple[set[str], bool]:
    """The principals of every key policy's KeyAdministrators statement (components/kms.py), and whether every
    key policy was known."""
    found: set[str] = set()
    known = True
    for key in g.of_type(KMS_KEY):
        try:
            statements = policy_statements(get(key.props, "policy"))
        except UnknownValueError:
            known = False
            continue
        for statement in statements:
            if statement.get("Sid") == "KeyAdministrators":
                who = statement.get("Principal")
                found.update(str(a) for a in as_list(who.get("AWS") if isinstance(who, Mapping) else who))
    return found, known


@stack_rule(
    name="s3-data-destroyers-empty-only",
    description="The principals that administer the stack's keys (the deployer, security.key_administrator_arns) "
    "are exempt from a data bucket's VPC-only deny for the calls that empty it (pulumi destroy of a force-destroy "
    "bucket) and never for object reads or writes: administering keys and reading data from anywhere stay apart.",
    severity=Severity.HIGH,
)
def s3_data_destroyers_empty_only(args: StackValidationArgs, report: Report) -> None:
    g = graph(args)
    buckets = _data_buckets(g, "datasets", "checkpoints")
    if not buckets:
        args.not_applicable("no data buckets")
    administrators, known = _key_administrators(g)
    if not known:
        args.not_applicable("the key policies name the deployer, known at pulumi up")
    for bucket, statements in known_policies(args, g, buckets):
        for statement in statements:
            if "aws:SourceVpce" not in condition_keys(statement):
                continue
            reads = [a for a in DATA_READ_WRITE_ACTIONS if denies(statement, a)]
            exempt = [
                admin
                for admin in sorted(administrators)
                if any(fnmatch.fnmatchcase(admin, pattern) for pattern in _exempt_principals(statement))
            ]
            if reads and exempt:
                report(
                    f"{bucket.name}: statement {statement.get('Sid', '?')} lets key administrator(s) "
                    f"{', '.join(exempt)} {', '.join(reads)} from outside the VPC; only the emptying calls "
                    f"({', '.join(DATA_EMPTYING_ACTIONS)}) may exempt them.",
                    bucket.urn,
                )


@stack_rule(
    name="s3-checkpoints-object-lock",
    description="The checkpoints bucket has S3 Object Lock with a default retention: versioning alone lets "
    "anyone with s3:DeleteObjectVersion erase every copy of a model (S3 User Guide, Object Lock).",
    severity=Severity.HIGH,
)
def s3_checkpoints_object_lock(args: StackValidationArgs, report: Report) -> None:
    g = graph(args)
    buckets = _data_buckets(g, "checkpoints")
    if not buckets:
        args.not_applicable("no checkpoints bucket")
    for bucket in buckets:
        locks = [
            lock
            for lock in g.referrers(bucket, "bucket", *OBJECT_LOCK)
            if get(lock.props, "rule.defaultRetention.mode") in ("GOVERNANCE", "COMPLIANCE")
            and (get(lock.props, "rule.defaultRetention.days") or get(lock.props, "rule.defaultRetention.years"))
        ]
        if not locks:
            report(f"{bucket.name}: no Object Lock default retention.", bucket.urn)


def data_buckets(g: Graph) -> list[PolicyResource]:
    """Buckets that hold data: not those whose objects the stack writes itself (the HyperPod lifecycle scripts),
    which are generated copies of files in the repository and are rewritten on the next `pulumi up`."""
    return [b for b in g.of_type(*S3_BUCKETS) if not g.referrers(b, "bucket", BUCKET_OBJECT)]


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
    floor = int_config(args, "minBackupRetentionDays", 7)
    for fs in systems:
        days = int(number(get(fs.props, "automaticBackupRetentionDays")) or 0)
        final = has(fs.props, "skipFinalBackup") and not truthy(get(fs.props, "skipFinalBackup"))
        if g.referrers(fs, "fileSystemId", FSX_DATA_REPOSITORY_ASSOCIATION):
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
    floor = int_config(args, "minNoncurrentDays", 30)
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
            "(stacks/fsx_sizing.py READ_MB_S_PER_ACCELERATOR_FLOOR, trainstack's sizing assumption) or the "
            "committed stack file's per_gpu_read_mb_s where that is higher, as `make pack-facts` writes it into "
            "the environment's config; the rule never judges by less than the fact, whatever the config says. The "
            "pack reads no stack file: a rate raised in an edit under review counts once pack-facts has run.",
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


@stack_rule(
    name="object-lock-retention-floor",
    floor="staging",
    description="Every bucket's Object Lock (trainstack locks the checkpoints bucket) keeps each new version at "
    "least the environment's floor: "
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
    floor = int_config(args, "minRetentionDays", 7)
    for lock in locks:
        days = number(get(lock.props, "rule.defaultRetention.days")) or 0.0
        years = number(get(lock.props, "rule.defaultRetention.years")) or 0.0
        total = days + 365 * years
        if total < floor:
            report(
                f"Object Lock on {lock.name} keeps each new version {total:g} days (trainstack's checkpoints lock: "
                f"security.checkpoint_lock.retention_days); the floor here is {floor} days.",
                lock.urn,
            )

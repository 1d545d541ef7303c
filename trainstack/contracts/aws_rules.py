"""Rules AWS enforces that no model encodes: across members, across resources, or stated only in a guide.

Each rule is one function from the recording to its violations, with its source beside it. The stack schema
refuses the same mistakes where a stack-file key causes them (so users meet their key path first); these
rules hold the program itself to them, whatever config or code path produced the inputs.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, TypeGuard, TypeVar

from stacks import fsx_sizing, fsx_squash
from stacks.schema import HYPERPOD_EKS_VERSIONS, HYPERPOD_EKS_VERSIONS_SOURCE, eks_reserved_label_prefix
from trainstack.contracts import ContractViolation, render_value
from trainstack.engine import UNKNOWN, RecordedResource, Recording
from trainstack.tokens import (
    BUCKET,
    BUCKET_OBJECT_LOCK,
    EKS_ADDON,
    EKS_CLUSTER,
    FSX_DATA_REPOSITORY_ASSOCIATION,
    FSX_LUSTRE,
    HELM_RELEASE,
    HYPERPOD_CLUSTER,
    LAUNCH_TEMPLATE,
    NODE_GROUP,
    SNS_TOPIC,
)

CAPACITY_BLOCKS = (
    "EKS User Guide, Create a managed node group with Capacity Blocks for ML; botocore eks CreateNodegroup "
    "instanceTypes (an instance type in the launch template and any instanceTypes: the deployment fails)"
)
RESERVED_LABELS = (
    "EKS CreateNodegroup InvalidParameterException 'Label cannot contain reserved prefixes [kubernetes.io/, "
    "k8s.io/, eks.amazonaws.com/]' (eksctl-io/eksctl#4007, kubernetes/cloud-provider-aws#242)"
)
METADATA = (
    "FSx for Lustre User Guide, File system metadata performance; FSx API CreateFileSystemLustreMetadataConfiguration"
)
INTERFACES = (
    "EC2 User Guide, Maximize network bandwidth on instances with multiple network cards (an EFA-only interface "
    "cannot be the primary); EC2 API LaunchTemplateInstanceNetworkInterfaceSpecificationRequest.InterfaceType "
    "(interface | efa | efa-only)"
)
HOP_LIMIT = "EC2 API InstanceMetadataOptionsRequest.HttpPutResponseHopLimit: integers from 1 to 64"
SG_PLACEMENT = (
    "EC2 RunInstances: security groups go on the network interfaces when the launch template lists them, "
    "never on both the instance and its interfaces"
)
DESTROY = (
    "S3 API DeleteBucket: all objects, versions and delete markers must be deleted first; pulumi-aws "
    "aws.s3.Bucket force_destroy empties a bucket before deleting it"
)
HYPERPOD_CHART = (
    "SageMaker Developer Guide, Installing packages on the Amazon EKS cluster using Helm (required when the "
    "HyperPod cluster is created through the API)"
)
LINKED_BACKUPS = (
    "FSx for Lustre User Guide, Working with backups (backups of persistent file systems not linked to an S3 data "
    "repository) and Using data repositories (backups are not supported on file systems linked to S3); botocore "
    "fsx CreateBackup (Lustre: a persistent file system not linked to a data repository)"
)
OBJECT_LOCK_SOURCE = (
    "botocore s3 DefaultRetention (a mode and either Days or Years, not both); S3 PutObjectLockConfiguration "
    "InvalidArgument 'Default retention period must be a positive integer value' (versity/versitygw#1738), "
    "at most 36500 days or 100 years (versity/versitygw#2195)"
)
SNS_TOPIC_NAME = "botocore sns CreateTopic Name (constraints: ASCII letters, numbers, '_' and '-', 1-256; FIFO: .fifo)"
INTERFACE_TYPES = ("interface", "efa", "efa-only")
# The add-ons every node needs to join and resolve names (HyperPod's guide: the VPC CNI, and Pod Identity for
# the HyperPod agents); the FSx and EBS CSI drivers are storage, not prerequisites of HyperPod nodes.
CORE_ADDONS = ("vpc-cni", "kube-proxy", "coredns", "eks-pod-identity-agent")
SYSTEM_LABEL = "trainstack.io/node-role"  # components/eks/eks.py labels the system node group `system`


_T = TypeVar("_T")


def _known(value: _T | None) -> TypeGuard[_T]:
    """Set, and not unknown in preview: what a rule can check (the guard tells the checker it is not None)."""
    return value is not None and value != UNKNOWN


def _launch_template_of(
    node_group: RecordedResource, by_urn: Mapping[str, RecordedResource]
) -> RecordedResource | None:
    for urn in node_group.property_dependencies.get("launchTemplate", ()):
        if (found := by_urn.get(urn)) is not None and found.type == LAUNCH_TEMPLATE:
            return found
    template_id = (node_group.inputs.get("launchTemplate") or {}).get("id")
    return next((r for r in by_urn.values() if r.type == LAUNCH_TEMPLATE and r.id and r.id == template_id), None)


def capacity_block_node_groups(recording: Recording) -> Iterator[ContractViolation]:
    """A Capacity Block group names its type on the launch template only, with the capacity-block market and
    the reservation target; no group names its type in both places; the market matches the capacity type."""
    by_urn = recording.by_urn()
    for group in recording.by_type(NODE_GROUP):
        template = _launch_template_of(group, by_urn)
        lt = template.inputs if template is not None else {}
        listed = group.inputs.get("instanceTypes")
        capacity = group.inputs.get("capacityType")
        market = (lt.get("instanceMarketOptions") or {}).get("marketType")
        target = ((lt.get("capacityReservationSpecification") or {}).get("capacityReservationTarget") or {}).get(
            "capacityReservationId"
        )
        if capacity == "CAPACITY_BLOCK":
            if listed:
                yield ContractViolation(
                    group.urn,
                    "instanceTypes",
                    render_value(listed),
                    "a CAPACITY_BLOCK node group lists no instanceTypes: the type goes on its launch template",
                    CAPACITY_BLOCKS,
                )
            if template is None:
                yield ContractViolation(
                    group.urn,
                    "launchTemplate",
                    "(none)",
                    "a CAPACITY_BLOCK node group needs a launch template",
                    CAPACITY_BLOCKS,
                )
                continue
            if not lt.get("instanceType"):
                yield ContractViolation(
                    template.urn,
                    "instanceType",
                    "(absent)",
                    "the launch template of a CAPACITY_BLOCK node group names the instance type",
                    CAPACITY_BLOCKS,
                )
            if market != "capacity-block":
                yield ContractViolation(
                    template.urn,
                    "instanceMarketOptions.marketType",
                    render_value(market or "(absent)"),
                    "a CAPACITY_BLOCK node group's launch template sets marketType capacity-block",
                    CAPACITY_BLOCKS,
                )
            if not target:
                yield ContractViolation(
                    template.urn,
                    "capacityReservationSpecification.capacityReservationTarget.capacityReservationId",
                    "(absent)",
                    "a CAPACITY_BLOCK node group's launch template targets the block's reservation id",
                    CAPACITY_BLOCKS,
                )
        elif market == "capacity-block" and template is not None:
            yield ContractViolation(
                group.urn,
                "capacityType",
                render_value(capacity or "(absent)"),
                "its launch template buys from a Capacity Block: capacityType must be CAPACITY_BLOCK",
                CAPACITY_BLOCKS,
            )
        if listed and lt.get("instanceType"):
            yield ContractViolation(
                group.urn,
                "instanceTypes",
                render_value(listed),
                f"the launch template already names {lt['instanceType']}: name the type in one place only",
                CAPACITY_BLOCKS,
            )


def reserved_node_labels(recording: Recording) -> Iterator[ContractViolation]:
    """No managed node group label under a prefix EKS reserves."""
    for group in recording.by_type(NODE_GROUP):
        for key, value in (group.inputs.get("labels") or {}).items():
            if (prefix := eks_reserved_label_prefix(key)) is not None:
                yield ContractViolation(
                    group.urn,
                    f"labels.{key}",
                    render_value(value),
                    f"label keys may not contain {prefix} (EKS reserves it; the kubelet sets its own labels there)",
                    RESERVED_LABELS,
                )


def lustre_metadata(recording: Recording) -> Iterator[ContractViolation]:
    """USER_PROVISIONED metadata IOPS at least what AUTOMATIC gives for the capacity; no IOPS with AUTOMATIC;
    a metadata configuration on PERSISTENT_2 only."""
    for fs in recording.by_type(FSX_LUSTRE):
        config = fs.inputs.get("metadataConfiguration")
        if not isinstance(config, Mapping):
            continue
        mode, iops, capacity = config.get("mode"), config.get("iops"), fs.inputs.get("storageCapacity")
        if fs.inputs.get("deploymentType") not in (None, UNKNOWN, "PERSISTENT_2"):
            yield ContractViolation(
                fs.urn,
                "metadataConfiguration",
                render_value(config),
                "a metadata configuration is for PERSISTENT_2 file systems only",
                METADATA,
            )
        if mode == "AUTOMATIC" and _known(iops):
            yield ContractViolation(
                fs.urn,
                "metadataConfiguration.iops",
                render_value(iops),
                "AUTOMATIC mode takes no iops: FSx sets them from the storage capacity",
                METADATA,
            )
        provisioned = mode == "USER_PROVISIONED" and _known(iops) and _known(capacity)
        if provisioned and (problem := fsx_sizing.metadata_iops_problem(int(iops), int(capacity))):
            yield ContractViolation(fs.urn, "metadataConfiguration.iops", render_value(iops), problem, METADATA)


def launch_template_interfaces(recording: Recording) -> Iterator[ContractViolation]:
    """Interface types EC2 knows; an ENA or EFA primary; one interface per card and device index; security
    groups on the interfaces or the instance, not both; an IMDS hop limit EC2 takes."""
    for template in recording.by_type(LAUNCH_TEMPLATE):
        interfaces = template.inputs.get("networkInterfaces") or []
        seen: set[tuple[Any, Any]] = set()
        for index, interface in enumerate(interfaces):
            where = f"networkInterfaces[{index}]"
            kind = interface.get("interfaceType", "interface")
            if _known(kind) and kind not in INTERFACE_TYPES:
                yield ContractViolation(
                    template.urn,
                    f"{where}.interfaceType",
                    render_value(kind),
                    f"interfaceType must be one of {', '.join(INTERFACE_TYPES)}",
                    INTERFACES,
                )
            slot = (interface.get("networkCardIndex", 0), interface.get("deviceIndex"))
            if float(slot[0]) == 0 and _known(slot[1]) and float(slot[1]) == 0 and kind == "efa-only":
                yield ContractViolation(
                    template.urn,
                    where,
                    render_value(interface),
                    "the primary interface (card 0, device 0) cannot be efa-only: use interface or efa there and "
                    "put card 0's EFA-only interface on device 1",
                    INTERFACES,
                )
            if slot in seen:
                yield ContractViolation(
                    template.urn,
                    where,
                    render_value(interface),
                    "two interfaces on the same network card and device index",
                    INTERFACES,
                )
            seen.add(slot)
        if interfaces and template.inputs.get("vpcSecurityGroupIds"):
            yield ContractViolation(
                template.urn,
                "vpcSecurityGroupIds",
                render_value(template.inputs["vpcSecurityGroupIds"]),
                "with explicit network interfaces the security groups go on each interface, not on the instance",
                SG_PLACEMENT,
            )
        hops = (template.inputs.get("metadataOptions") or {}).get("httpPutResponseHopLimit")
        if _known(hops) and not 1 <= float(hops) <= 64:
            yield ContractViolation(
                template.urn,
                "metadataOptions.httpPutResponseHopLimit",
                render_value(hops),
                "must be 1 to 64",
                HOP_LIMIT,
            )


def destroyable_buckets(recording: Recording) -> Iterator[ContractViolation]:
    """A bucket `pulumi destroy` may delete (not protected) is force-destroyed, or the first versioned object
    in it makes the destroy fail with BucketNotEmpty. Protected buckets cannot be deleted by Pulumi at all."""
    for bucket in recording.by_type(BUCKET):
        if not bucket.protect and bucket.inputs.get("forceDestroy") is not True:
            yield ContractViolation(
                bucket.urn,
                "forceDestroy",
                render_value(bucket.inputs.get("forceDestroy", "(absent)")),
                "an unprotected bucket must set force_destroy, or `pulumi destroy` stops at BucketNotEmpty once it "
                "holds any object version",
                DESTROY,
            )


def hyperpod_on_eks(recording: Recording) -> Iterator[ContractViolation]:
    """A HyperPod cluster joining an EKS cluster: a Kubernetes version HyperPod supports, and created after the
    HyperPod dependencies chart, the core add-ons and the system node group."""
    by_urn = recording.by_urn()
    clusters = recording.by_type(EKS_CLUSTER)
    for hyperpod in recording.by_type(HYPERPOD_CLUSTER):
        if not (hyperpod.inputs.get("orchestrator") or {}).get("eks"):
            continue
        after = set(hyperpod.dependencies)
        for cluster in clusters:
            version = cluster.inputs.get("version")
            if _known(version) and version not in HYPERPOD_EKS_VERSIONS:
                yield ContractViolation(
                    hyperpod.urn,
                    "orchestrator.eks.clusterArn",
                    render_value(version),
                    f"HyperPod does not support Kubernetes {version} on its EKS orchestrator; supported: "
                    f"{', '.join(HYPERPOD_EKS_VERSIONS)}",
                    HYPERPOD_EKS_VERSIONS_SOURCE,
                )
        charts = [
            urn
            for urn in after
            if (r := by_urn.get(urn)) is not None
            and r.type == HELM_RELEASE
            and "HyperPodHelmChart" in str(r.inputs.get("chart", ""))
        ]
        if not charts:
            yield ContractViolation(
                hyperpod.urn,
                "",
                "(no dependency)",
                "the HyperPod cluster must be created after the HyperPod dependencies Helm chart is installed",
                HYPERPOD_CHART,
            )
        missing = [
            r.name
            for r in (
                *(a for a in recording.by_type(EKS_ADDON) if a.inputs.get("addonName") in CORE_ADDONS),
                *(
                    g
                    for g in recording.by_type(NODE_GROUP)
                    if (g.inputs.get("labels") or {}).get(SYSTEM_LABEL) == "system"
                ),
            )
            if r.urn not in after
        ]
        if missing:
            yield ContractViolation(
                hyperpod.urn,
                "",
                render_value(sorted(missing)),
                "the HyperPod cluster must be created after the core add-ons and the system node group",
                "SageMaker Developer Guide, Getting started with Amazon EKS support in SageMaker HyperPod",
            )


# The input that holds a resource's own physical name, where it is not `name`: AWS refuses a second resource of
# one type by that name in one scope (an account and region; a cluster for node groups), and Kubernetes would
# let two objects of one kind and namespace overwrite each other.
NAME_INPUTS = {NODE_GROUP: "nodeGroupName", BUCKET: "bucket", HYPERPOD_CLUSTER: "clusterName"}
NAME_SCOPES = ("clusterName", "role", "vpcId")  # a name unique per cluster (node groups), role (inline policies), VPC
UNIQUE_NAMES = (
    "AWS: a second CreateNodegroup, CreateLaunchTemplate, CreatePlacementGroup, CreateRole, CreateBucket ... with a "
    "name in use fails (ResourceInUseException, InvalidLaunchTemplateName.AlreadyExistsException, "
    "InvalidPlacementGroup.Duplicate, EntityAlreadyExists, BucketAlreadyOwnedByYou); Kubernetes: one object per "
    "kind, namespace and name"
)


def _physical_name(resource: RecordedResource) -> tuple[str, str] | None:
    """(scope, name) of the name the resource takes in AWS or Kubernetes, when the program sets one."""
    if resource.type.startswith("kubernetes:"):
        metadata = resource.inputs.get("metadata")
        if not isinstance(metadata, Mapping) or not _known(metadata.get("name")):
            return None
        return str(metadata.get("namespace") or ""), str(metadata["name"])
    name = resource.inputs.get(NAME_INPUTS.get(resource.type, "name"))
    if not isinstance(name, str) or not _known(name) or resource.type.startswith("pulumi:"):
        return None
    scope = [resource.inputs.get(key) for key in NAME_SCOPES if key != NAME_INPUTS.get(resource.type)]
    return "/".join(str(s) for s in scope if _known(s)), name


def unique_physical_names(recording: Recording) -> Iterator[ContractViolation]:
    """No two resources of one type end with one physical name (however long names were cut to fit)."""
    seen: dict[tuple[str, str, str], RecordedResource] = {}
    for resource in recording.resources:
        named = _physical_name(resource)
        if named is None:
            continue
        key = (resource.type, *named)
        first = seen.setdefault(key, resource)
        if first is not resource:
            yield ContractViolation(
                resource.urn,
                NAME_INPUTS.get(resource.type, "metadata.name" if resource.type.startswith("kubernetes:") else "name"),
                render_value(named[1]),
                f"{first.name} already takes this name: two resources of one type can never share a physical name "
                "(rename one; for GPU groups, the group names)",
                UNIQUE_NAMES,
            )


def lustre_root_squash(recording: Recording) -> Iterator[ContractViolation]:
    """A RootSquash of two non-zero ids (or 0:0) up to 4294967294, and NoSquashNids that are client addresses."""
    for fs in recording.by_type(FSX_LUSTRE):
        config = fs.inputs.get("rootSquashConfiguration")
        if not isinstance(config, Mapping):
            continue
        squash = config.get("rootSquash")
        if _known(squash) and (problem := fsx_squash.root_squash_problem(str(squash))):
            where = "rootSquashConfiguration.rootSquash"
            yield ContractViolation(fs.urn, where, render_value(squash), problem, fsx_squash.SOURCE)
        for index, nid in enumerate(config.get("noSquashNids") or []):
            if _known(nid) and (problem := fsx_squash.nid_problem(str(nid))):
                where = f"rootSquashConfiguration.noSquashNids[{index}]"
                yield ContractViolation(fs.urn, where, render_value(nid), problem, fsx_squash.SOURCE)


def lustre_backups_unlinked(recording: Recording) -> Iterator[ContractViolation]:
    """No backup, automatic or final, of a file system a data repository association links to S3."""
    linked = {
        urn
        for dra in recording.by_type(FSX_DATA_REPOSITORY_ASSOCIATION)
        for urn in dra.property_dependencies.get("fileSystemId", ())
    }
    for fs in recording.by_type(FSX_LUSTRE):
        if fs.urn not in linked:
            continue
        days = fs.inputs.get("automaticBackupRetentionDays")
        if _known(days) and float(days) > 0:
            yield ContractViolation(
                fs.urn,
                "automaticBackupRetentionDays",
                render_value(days),
                "a file system linked to S3 by a data repository association takes no backups: 0",
                LINKED_BACKUPS,
            )
        if fs.inputs.get("skipFinalBackup") is False:
            yield ContractViolation(
                fs.urn,
                "skipFinalBackup",
                "false",
                "a file system linked to S3 gets no final backup on delete: FSx takes no backups of it",
                LINKED_BACKUPS,
            )


def object_lock_retention(recording: Recording) -> Iterator[ContractViolation]:
    """An Object Lock default retention with a mode and exactly one period, Days 1-36500 or Years 1-100."""
    for lock in recording.by_type(BUCKET_OBJECT_LOCK):
        retention = (lock.inputs.get("rule") or {}).get("defaultRetention")
        if not isinstance(retention, Mapping):
            continue
        where = "rule.defaultRetention"
        periods = {k: retention[k] for k in ("days", "years") if retention.get(k) is not None}
        if retention.get("mode") is None:
            yield ContractViolation(
                lock.urn, f"{where}.mode", "(absent)", "a default retention needs a mode", OBJECT_LOCK_SOURCE
            )
        if len(periods) != 1:
            yield ContractViolation(
                lock.urn,
                where,
                render_value(retention),
                "a default retention takes Days or Years, exactly one of them",
                OBJECT_LOCK_SOURCE,
            )
        for key, most in (("days", 36500), ("years", 100)):
            value = periods.get(key)
            if _known(value) and not 1 <= float(value) <= most:
                yield ContractViolation(
                    lock.urn,
                    f"{where}.{key}",
                    render_value(value),
                    f"the default retention period is a positive whole number of {key}, at most {most}",
                    OBJECT_LOCK_SOURCE,
                )


def sns_topic_names(recording: Recording) -> Iterator[ContractViolation]:
    """Topic names of ASCII letters, digits, `_` and `-`, 1 to 256 long; a FIFO topic's ends in `.fifo`."""
    for topic in recording.by_type(SNS_TOPIC):
        name = topic.inputs.get("name")
        if not _known(name):
            continue
        fifo = topic.inputs.get("fifoTopic") is True
        stem = str(name).removesuffix(".fifo") if fifo else str(name)
        if not re.fullmatch(r"[A-Za-z0-9_-]{1,256}", stem) or len(str(name)) > 256 or (fifo and stem == name):
            yield ContractViolation(
                topic.urn,
                "name",
                render_value(name),
                "a topic name is 1 to 256 ASCII letters, digits, '_' and '-'"
                + (", ending in .fifo for a FIFO topic" if fifo else ""),
                SNS_TOPIC_NAME,
            )


RULES: tuple[Callable[[Recording], Iterable[ContractViolation]], ...] = (
    unique_physical_names,
    capacity_block_node_groups,
    reserved_node_labels,
    lustre_metadata,
    lustre_root_squash,
    lustre_backups_unlinked,
    launch_template_interfaces,
    destroyable_buckets,
    object_lock_retention,
    sns_topic_names,
    hyperpod_on_eks,
)


def check(recording: Recording) -> Iterable[ContractViolation]:
    for rule in RULES:
        yield from rule(recording)

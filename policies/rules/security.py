"""Security-model rules (docs/security.md): what keeps teams apart on a shared GPU cluster and keeps data from
being quietly read, poisoned or destroyed. Each rule guards one protection the program builds, so a later
change cannot remove it without the review saying so."""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping
from typing import Any

from pulumi_policy import PolicyResource, ResourceValidationArgs, Severity, StackValidationArgs
from pulumi_policy.proxy import UnknownValueError

from ..facts import (
    DATA_CLASS_TAG,
    DATA_EMPTYING_ACTIONS,
    DATA_READ_WRITE_ACTIONS,
    FSX_CSI_DRIVER,
    PSA_ENFORCE,
    TENANT_LABEL,
    TENANT_TEAM,
)
from .base import (
    EKS_ADDON,
    FSX_LUSTRE,
    IAM_ROLE,
    IAM_ROLE_POLICY_ATTACHMENT,
    KMS_KEY,
    S3_BUCKETS,
    Graph,
    Report,
    as_list,
    config,
    get,
    graph,
    items,
    json_document,
    resource_rule,
    stack_rule,
)

NAMESPACE = "kubernetes:core/v1:Namespace"
NETWORK_POLICY = "kubernetes:networking.k8s.io/v1:NetworkPolicy"
RESOURCE_QUOTA = "kubernetes:core/v1:ResourceQuota"
LIMIT_RANGE = "kubernetes:core/v1:LimitRange"
PERSISTENT_VOLUME = "kubernetes:core/v1:PersistentVolume"
VAP = "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy"
VAP_BINDING = "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicyBinding"
DRA = "aws:fsx/dataRepositoryAssociation:DataRepositoryAssociation"
VPC_ENDPOINT = "aws:ec2/vpcEndpoint:VpcEndpoint"
BUCKET_POLICY = "aws:s3/bucketPolicy:BucketPolicy"
OBJECT_LOCK = (
    "aws:s3/bucketObjectLockConfiguration:BucketObjectLockConfiguration",
    "aws:s3/bucketObjectLockConfigurationV2:BucketObjectLockConfigurationV2",
)

LEVELS = ("privileged", "baseline", "restricted")
_DEFAULT_PRIVILEGED = ["gpu-operator", "trainstack-monitoring", "trainstack-validation"]
SAGEMAKER_FULL_ACCESS = "AmazonSageMakerFullAccess"


def _labels(resource: PolicyResource) -> Mapping[str, Any]:
    labels = get(resource.props, "metadata.labels")
    return labels if isinstance(labels, Mapping) else {}


def team_namespaces(g: Graph) -> list[PolicyResource]:
    """Namespaces trainstack created for teams (the tenant label)."""
    return [ns for ns in g.of_type(NAMESPACE) if _labels(ns).get(TENANT_LABEL) == TENANT_TEAM]


def _in_namespace(g: Graph, namespace: PolicyResource, *types: str) -> list[PolicyResource]:
    """Namespaced objects whose metadata was computed from `namespace` (its name output)."""
    return g.referrers(namespace, "metadata", *types)


def _statements(document: Any) -> list[Mapping[str, Any]]:
    doc = json_document(document)
    return [s for s in as_list(get(doc, "Statement")) if isinstance(s, Mapping)] if isinstance(doc, Mapping) else []


# ------------------------------------------------------------------------------------------ pod security


@resource_rule(
    name="k8s-namespace-pod-security",
    description="Every namespace trainstack creates enforces a Pod Security Standard: team namespaces at least "
    "baseline (no privileged pods, host namespaces or hostPath: CIS EKS 4.2.x), privileged only for the system "
    "components that need host access. A namespace that only warns lets anyone with pod create rights take a node.",
    severity=Severity.CRITICAL,
    types=[NAMESPACE],
    config={
        "privilegedNamespaces": {
            "type": "array",
            "items": {"type": "string"},
            "uniqueItems": True,
            "default": _DEFAULT_PRIVILEGED,
            "description": "Namespaces allowed to enforce `privileged` (documented system components).",
        },
        "minTeamLevel": {
            "type": "string",
            "enum": ["baseline", "restricted"],
            "default": "baseline",
            "description": "The least a team namespace must enforce.",
        },
    },
)
def k8s_namespace_pod_security(args: ResourceValidationArgs, report: Report) -> None:
    name = str(get(args.props, "metadata.name", "?"))
    labels = get(args.props, "metadata.labels", {})
    level = labels[PSA_ENFORCE] if isinstance(labels, Mapping) and PSA_ENFORCE in iter(labels) else None
    if level not in LEVELS:
        report(f"namespace {name} does not enforce a Pod Security Standard ({PSA_ENFORCE} is {level!r}).")
        return
    if level == "privileged" and name not in config(args, "privilegedNamespaces", _DEFAULT_PRIVILEGED):
        report(f"namespace {name} enforces privileged but is not a documented privileged system namespace.")
    if isinstance(labels, Mapping) and labels.get(TENANT_LABEL) == TENANT_TEAM:
        minimum = config(args, "minTeamLevel", "baseline")
        if LEVELS.index(level) < LEVELS.index(minimum):
            report(f"team namespace {name} enforces {level}, below {minimum}.")


# ----------------------------------------------------------------------------------------------- tenancy


@stack_rule(
    name="k8s-team-network-isolation",
    description="Each team namespace has a default-deny NetworkPolicy (every pod, ingress and egress, no rule), "
    "so pods of one team cannot reach another's; the VPC CNI enforces it only with its policy agent on "
    "(eks-network-policy-enabled). CIS EKS 4.3.2.",
    severity=Severity.HIGH,
)
def k8s_team_network_isolation(args: StackValidationArgs, report: Report) -> None:
    g = graph(args)
    namespaces = team_namespaces(g)
    if not namespaces:
        args.not_applicable("no team namespaces")
    for namespace in namespaces:
        deny_all = [
            p
            for p in _in_namespace(g, namespace, NETWORK_POLICY)
            if get(p.props, "spec.podSelector") in ({}, None)
            and {"Ingress", "Egress"} <= set(items(get(p.props, "spec.policyTypes")))
            and not items(get(p.props, "spec.ingress"))
            and not items(get(p.props, "spec.egress"))
        ]
        if not deny_all:
            report(f"team namespace {namespace.name} has no default-deny NetworkPolicy.", namespace.urn)


QUOTA_KEYS = ("requests.cpu", "requests.memory", "requests.ephemeral-storage", "pods")


@stack_rule(
    name="k8s-team-quotas",
    description="Each team namespace has a ResourceQuota on CPU, memory, ephemeral storage and pods, and a "
    "LimitRange, so a team cannot starve another's pods on the nodes both share beyond their GPU quota.",
    severity=Severity.HIGH,
)
def k8s_team_quotas(args: StackValidationArgs, report: Report) -> None:
    g = graph(args)
    namespaces = team_namespaces(g)
    if not namespaces:
        args.not_applicable("no team namespaces")
    for namespace in namespaces:
        hard: set[str] = set()
        for quota in _in_namespace(g, namespace, RESOURCE_QUOTA):
            value = get(quota.props, "spec.hard", {})
            hard |= set(value) if isinstance(value, Mapping) else set()
        missing = [k for k in QUOTA_KEYS if k not in hard]
        if missing:
            report(f"team namespace {namespace.name} has no quota on {missing}.", namespace.urn)
        if not _in_namespace(g, namespace, LIMIT_RANGE):
            report(f"team namespace {namespace.name} has no LimitRange.", namespace.urn)


@resource_rule(
    name="eks-network-policy-enabled",
    description="The VPC CNI add-on runs its network policy agent (configuration `enableNetworkPolicy`): without "
    "it NetworkPolicy objects are accepted and silently not enforced (EKS User Guide, network policies).",
    severity=Severity.HIGH,
    types=[EKS_ADDON],
)
def eks_network_policy_enabled(args: ResourceValidationArgs, report: Report) -> None:
    if get(args.props, "addonName") != "vpc-cni":
        args.not_applicable("not the vpc-cni add-on")
        return
    values = json_document(get(args.props, "configurationValues"))
    if str(get(values, "enableNetworkPolicy", "")).lower() != "true":
        report("the vpc-cni add-on does not set enableNetworkPolicy to true: NetworkPolicies are not enforced.")


def _selects_teams(match_labels: Any) -> bool:
    return (
        isinstance(match_labels, Mapping)
        and TENANT_LABEL in iter(match_labels)
        and match_labels[TENANT_LABEL] == TENANT_TEAM
    )


@stack_rule(
    name="k8s-allowed-registries",
    description="A ValidatingAdmissionPolicy bound with action Deny to the team namespaces restricts their images "
    "to approved registries (supply chain: an image from anywhere runs with the team's data and credentials).",
    severity=Severity.MEDIUM,
)
def k8s_allowed_registries(args: StackValidationArgs, report: Report) -> None:
    g = graph(args)
    if not team_namespaces(g):
        args.not_applicable("no team namespaces")
    policies = {get(p.props, "metadata.name") for p in g.of_type(VAP)}
    bound = [
        b
        for b in g.of_type(VAP_BINDING)
        if "Deny" in items(get(b.props, "spec.validationActions"))
        and get(b.props, "spec.policyName") in policies
        and _selects_teams(get(b.props, "spec.matchResources.namespaceSelector.matchLabels"))
    ]
    if not bound:
        report("no ValidatingAdmissionPolicy is bound with Deny to the team namespaces: images may come from anywhere.")


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
    types=[DRA],
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


def _lustre_directory(volume: PolicyResource) -> tuple[str, str]:
    """(file system, directory) an FSx volume mounts: its dnsname, and `mountname`'s path after the mount name
    ("8aaec4e1/teams/research" -> "/teams/research"; the bare mount name is the root, "/")."""
    attributes = get(volume.props, "spec.csi.volumeAttributes", {})
    mount = str(get(attributes, "mountname", "")).strip("/")
    return str(get(attributes, "dnsname", "")), "/" + (mount.split("/", 1)[1] if "/" in mount else "")


def _holds(outer: str, inner: str) -> bool:
    return (inner.rstrip("/") + "/").startswith(outer.rstrip("/") + "/")


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


def _bucket_statements(g: Graph, bucket: PolicyResource) -> list[Mapping[str, Any]] | None:
    """The statements of the bucket's policies; None while a policy is unknown. A bucket policy names its
    bucket's ARN, so on a stack's first preview it is unknown; the pack checks it again at `pulumi up`, when
    stack policies see every value, and on every later preview."""
    try:
        return [s for p in g.referrers(bucket, "bucket", BUCKET_POLICY) for s in _statements(get(p.props, "policy"))]
    except UnknownValueError:
        return None


def _known_policies(
    args: StackValidationArgs, g: Graph, buckets: list[PolicyResource]
) -> list[tuple[PolicyResource, list[Mapping[str, Any]]]]:
    """Each bucket with its policy statements, skipping policies not known yet (not applicable when none is)."""
    known = [(b, statements) for b in buckets if (statements := _bucket_statements(g, b)) is not None]
    if buckets and not known:
        args.not_applicable("the bucket policies are computed when the buckets are created; checked at pulumi up")
    return known


def _denies(statement: Mapping[str, Any], action: str) -> bool:
    actions = [str(a) for a in as_list(statement.get("Action"))]
    return statement.get("Effect") == "Deny" and any(a in (action, "s3:*", "*") for a in actions)


def _condition_keys(statement: Mapping[str, Any]) -> set[str]:
    condition = statement.get("Condition")
    if not isinstance(condition, Mapping):
        return set()
    return {str(k) for block in condition.values() if isinstance(block, Mapping) for k in block}


def _data_buckets(g: Graph, *classes: str) -> list[PolicyResource]:
    return [b for b in g.of_type(*S3_BUCKETS) if get(b.props, f"tags.{DATA_CLASS_TAG}") in classes]


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
    for bucket, statements in _known_policies(args, g, buckets):
        for action in ("s3:PutObject", "s3:GetObject"):
            if not any(_denies(s, action) and "aws:PrincipalArn" in _condition_keys(s) for s in statements):
                report(f"{bucket.name}: no deny of {action} for principals other than the allowed ones.", bucket.urn)
        key_id = "s3:x-amz-server-side-encryption-aws-kms-key-id"
        if not any(_denies(s, "s3:PutObject") and key_id in _condition_keys(s) for s in statements):
            report(f"{bucket.name}: uploads without the stack's KMS key are not denied.", bucket.urn)


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
    for bucket, statements in _known_policies(args, g, buckets):
        open_actions = [
            action
            for action in (*DATA_READ_WRITE_ACTIONS, *DATA_EMPTYING_ACTIONS)
            if not any(_denies(s, action) and "aws:SourceVpce" in _condition_keys(s) for s in statements)
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
            statements = _statements(get(key.props, "policy"))
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
    for bucket, statements in _known_policies(args, g, buckets):
        for statement in statements:
            if "aws:SourceVpce" not in _condition_keys(statement):
                continue
            reads = [a for a in DATA_READ_WRITE_ACTIONS if _denies(statement, a)]
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


@resource_rule(
    name="vpc-endpoint-policy",
    description="Every VPC endpoint has a policy narrower than the default full access (conditions on the "
    "principal's or resource's account, or named resources): an endpoint is otherwise a path for copying "
    "data to any account (AWS data perimeter guidance).",
    severity=Severity.MEDIUM,
    types=[VPC_ENDPOINT],
)
def vpc_endpoint_policy(args: ResourceValidationArgs, report: Report) -> None:
    statements = _statements(get(args.props, "policy"))
    if not statements:
        report("the endpoint has no policy: AWS applies full access for every principal and resource.")
    for statement in statements:
        unconditioned = statement.get("Effect") == "Allow" and not statement.get("Condition")
        wide = "*" in [str(r) for r in as_list(statement.get("Resource"))]
        any_action = any(str(a) == "*" or str(a).endswith(":*") for a in as_list(statement.get("Action")))
        if unconditioned and wide and any_action:
            report(f"statement {statement.get('Sid', '?')} allows every action on every resource without condition.")


# ---------------------------------------------------------------------------------------------- IAM/KMS


@resource_rule(
    name="kms-admin-separation",
    description="Key policies name administrators separately from users: no statement allows kms:* (IAM could "
    "then make anyone an administrator), and an explicit deny keeps ScheduleKeyDeletion and PutKeyPolicy to "
    "the administrators (KMS Developer Guide, key policies; CIS AWS 3.x key management).",
    severity=Severity.HIGH,
    types=[KMS_KEY],
)
def kms_admin_separation(args: ResourceValidationArgs, report: Report) -> None:
    statements = _statements(get(args.props, "policy"))
    for statement in statements:
        if statement.get("Effect") == "Allow" and any(
            str(a) in ("kms:*", "*") for a in as_list(statement.get("Action"))
        ):
            report(f"statement {statement.get('Sid', '?')} allows kms:*: administration is not separated from use.")
    for action in ("kms:ScheduleKeyDeletion", "kms:PutKeyPolicy"):
        guarded = any(
            statement.get("Effect") == "Deny"
            and action in [str(a) for a in as_list(statement.get("Action"))]
            and "aws:PrincipalArn" in _condition_keys(statement)
            for statement in statements
        )
        if not guarded:
            report(f"{action} is not denied to principals other than the key administrators.")


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

"""Security-model rules (docs/security.md): what keeps teams apart on a shared GPU cluster and keeps data from
being quietly read, poisoned or destroyed. Each rule guards one protection the program builds, so a later
change cannot remove it without the review saying so."""

from __future__ import annotations

import fnmatch
import json
import re
from collections.abc import Callable, Mapping, Sequence
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
    OPEN_REGISTRIES,
    PSA_ENFORCE,
    READ_ONLY_MOUNT_OPTION,
    SERVICE_QUOTA,
    TEAM_GROUP_PREFIX,
    TENANT_LABEL,
    TENANT_TEAM,
)
from ..rbac import PRIVILEGE_VERBS, Request, allows
from .base import (
    EKS_ADDON,
    FSX_LUSTRE,
    HYPERPOD_CLUSTER,
    IAM_ROLE,
    IAM_ROLE_POLICY,
    IAM_ROLE_POLICY_ATTACHMENT,
    KMS_KEY,
    S3_BUCKETS,
    S3_OBJECT,
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
ROLE = "kubernetes:rbac.authorization.k8s.io/v1:Role"
CLUSTER_ROLE = "kubernetes:rbac.authorization.k8s.io/v1:ClusterRole"
ROLE_BINDING = "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding"
CLUSTER_ROLE_BINDING = "kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding"
ACCESS_ENTRY = "aws:eks/accessEntry:AccessEntry"
ACCESS_POLICY_ASSOCIATION = "aws:eks/accessPolicyAssociation:AccessPolicyAssociation"
BUCKET_POLICY = "aws:s3/bucketPolicy:BucketPolicy"
OBJECT_LOCK = (
    "aws:s3/bucketObjectLockConfiguration:BucketObjectLockConfiguration",
    "aws:s3/bucketObjectLockConfigurationV2:BucketObjectLockConfigurationV2",
)

LEVELS = ("privileged", "baseline", "restricted")
_DEFAULT_PRIVILEGED = ["gpu-operator", "trainstack-monitoring", "trainstack-validation"]
SAGEMAKER_FULL_ACCESS = "AmazonSageMakerFullAccess"
HYPERPOD_INSTANCE_POLICY = "AmazonSageMakerClusterInstanceRolePolicy"  # reads every sagemaker-* bucket


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
    "(eks-network-policy-enabled). CIS EKS 4.3.2. No egress rule admits Lustre's server ports: Lustre trusts the "
    "UID a client asserts, so only the node's kernel client may speak it.",
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
        for policy in _in_namespace(g, namespace, NETWORK_POLICY):
            for rule in items(get(policy.props, "spec.egress")):
                if _reaches_lustre(rule):
                    report(
                        f"{policy.name} lets pods of {namespace.name} reach Lustre (TCP 988, 1018-1023) outside the "
                        "cluster: a pod speaking Lustre could claim any team's UID.",
                        policy.urn,
                    )


def _reaches_lustre(rule: Any) -> bool:
    """An egress rule that admits TCP 988 or 1018-1023 to an address block (or to anywhere: no `to`)."""
    peers = items(get(rule, "to"))
    if peers and not any(get(p, "ipBlock") is not None for p in peers):
        return False  # pods and namespaces only: no file server is a pod
    ports = items(get(rule, "ports"))
    if not ports:
        return True
    for port in ports:
        if str(get(port, "protocol", "TCP")) != "TCP":
            continue
        first = get(port, "port")
        if first is None:
            return True  # every port of the protocol
        if not isinstance(first, int):
            continue  # a named port: a pod's container port, never a server's
        last = get(port, "endPort", first)
        if any(first <= high and low <= last for low, high in LUSTRE_PORT_RANGES):
            return True
    return False


@stack_rule(
    name="k8s-team-egress-no-internet",
    description="Team pods open HTTPS only to the VPC (interface endpoints) and S3's prefixes (the gateway endpoint): "
    "no egress rule to 0.0.0.0/0 or a block as wide as a /7, which the NAT gateway turns into the whole internet "
    "for a pod holding the team's credentials and data (security.team_internet_egress; prod refuses it).",
    severity=Severity.MEDIUM,
)
def k8s_team_egress_no_internet(args: StackValidationArgs, report: Report) -> None:
    g = graph(args)
    namespaces = team_namespaces(g)
    if not namespaces:
        args.not_applicable("no team namespaces")
    for namespace in namespaces:
        for policy in _in_namespace(g, namespace, NETWORK_POLICY):
            try:
                rules = items(get(policy.props, "spec.egress"))
            except UnknownValueError:
                continue
            for rule in rules:
                peers = items(get(rule, "to"))
                wide = [str(get(p, "ipBlock.cidr")) for p in peers if _internet_wide(get(p, "ipBlock.cidr"))]
                if not peers and rule is not None:
                    wide = ["anywhere (no `to`)"]
                if wide:
                    report(f"{policy.name} lets pods of {namespace.name} reach {', '.join(wide)}.", policy.urn)


def _internet_wide(cidr: Any) -> bool:
    """A block that is most of the internet: /0 to /7 (S3's prefixes are /14 to /21; a VPC is /16 or smaller)."""
    if not isinstance(cidr, str) or "/" not in cidr:
        return False
    try:
        return int(cidr.rsplit("/", 1)[1]) < 8
    except ValueError:
        return False


QUOTA_KEYS = (
    "requests.cpu",
    "requests.memory",
    "requests.ephemeral-storage",
    "pods",
    "requests.vpc.amazonaws.com/efa",
    "requests.hugepages-2Mi",
)
SYSTEM_PRIORITY_CLASSES = ("system-cluster-critical", "system-node-critical")


def _holds_system_classes_at_zero(spec: Any) -> bool:
    """A quota whose scope is the system priority classes (both, by In) and that admits no pod of them."""
    if not isinstance(spec, Mapping) or str(get(spec, "hard.pods", "")) != "0" or get(spec, "scopes"):
        return False
    expressions = items(get(spec, "scopeSelector.matchExpressions"))
    return len(expressions) == 1 and (
        get(expressions[0], "scopeName") == "PriorityClass"
        and get(expressions[0], "operator") == "In"
        and set(SYSTEM_PRIORITY_CLASSES) <= {str(v) for v in items(get(expressions[0], "values"))}
    )


@stack_rule(
    name="k8s-team-quotas",
    description="Each team namespace has a ResourceQuota on CPU, memory, ephemeral storage, pods, EFA devices and "
    "hugepages, a quota that admits no pod of the system priority classes, and a LimitRange, so a team cannot "
    "starve another's pods on the nodes both share beyond their GPU quota, pin another team's fabric or memory, "
    "or preempt the platform.",
    severity=Severity.HIGH,
)
def k8s_team_quotas(args: StackValidationArgs, report: Report) -> None:
    g = graph(args)
    namespaces = team_namespaces(g)
    if not namespaces:
        args.not_applicable("no team namespaces")
    for namespace in namespaces:
        hard: set[str] = set()
        quotas = _in_namespace(g, namespace, RESOURCE_QUOTA)
        for quota in quotas:
            value = get(quota.props, "spec.hard", {})
            scoped = get(quota.props, "spec.scopeSelector") or get(quota.props, "spec.scopes")
            hard |= set(value) if isinstance(value, Mapping) and not scoped else set()  # a scoped one counts few pods
        missing = [k for k in QUOTA_KEYS if k not in hard]
        if missing:
            report(f"team namespace {namespace.name} has no quota on {missing}.", namespace.urn)
        if not any(_holds_system_classes_at_zero(get(q.props, "spec")) for q in quotas):
            report(
                f"team namespace {namespace.name} has no quota holding pods of {list(SYSTEM_PRIORITY_CLASSES)} at 0.",
                namespace.urn,
            )
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
    "(containers, init and ephemeral containers, image volumes) to approved prefixes (supply chain: an image from "
    "anywhere runs with the team's data and credentials). A prefix names who publishes: never the bare host of a "
    "registry where anyone can publish (ECR Public, Docker Hub, GHCR, Quay, NGC), whose path is the publisher.",
    severity=Severity.MEDIUM,
)
def k8s_allowed_registries(args: StackValidationArgs, report: Report) -> None:
    g = graph(args)
    if not team_namespaces(g):
        args.not_applicable("no team namespaces")
    bindings = _bound_to_teams(g, lambda text: ".image" in text)
    if not bindings:
        report("no ValidatingAdmissionPolicy is bound with Deny to the team namespaces: images may come from anywhere.")
    names = {get(b.props, "spec.policyName") for b in bindings}
    for policy in [p for p in g.of_type(VAP) if get(p.props, "metadata.name") in names]:
        try:
            variables = "\n".join(str(get(v, "expression", "")) for v in items(get(policy.props, "spec.variables")))
        except UnknownValueError:
            continue
        text = variables + _validations_text(policy)
        # `object.` (the pod admitted), not `oldObject.` (what it had before an UPDATE): case-sensitive on purpose.
        if "object.spec.volumes" not in text or ".image.reference" not in text:
            report(f"{policy.name} does not judge image volumes (volumes[].image.reference): any image can be mounted.")
        for prefix in _quoted(_validations_text(policy)):
            host = prefix.split("/", 1)[0]
            if host in OPEN_REGISTRIES and not prefix.rstrip("/").count("/"):
                report(
                    f"{policy.name} approves {prefix!r}: anyone can publish on {host}; name the publisher's path "
                    f"({host}/<namespace>/) or a mirror of the image in the account's ECR."
                )


def _quoted(text: str) -> list[str]:
    """The single-quoted string literals of a CEL expression (the approved prefixes of the registry policy)."""
    return re.findall(r"'([^']*)'", text)


def _validations_text(policy: PolicyResource) -> str:
    """Every validation expression of an admission policy, joined (unknown in a preview: empty)."""
    try:
        return "\n".join(str(get(v, "expression", "")) for v in items(get(policy.props, "spec.validations")))
    except UnknownValueError:
        return ""


def _bound_to_teams(g: Graph, judges: Callable[[str], bool]) -> list[PolicyResource]:
    """The admission policies whose validations `judges` accepts, bound with Deny to the team namespaces."""
    policies = {get(p.props, "metadata.name") for p in g.of_type(VAP) if judges(_validations_text(p))}
    return [
        b
        for b in g.of_type(VAP_BINDING)
        if "Deny" in items(get(b.props, "spec.validationActions"))
        and get(b.props, "spec.policyName") in policies
        and _selects_teams(get(b.props, "spec.matchResources.namespaceSelector.matchLabels"))
    ]


# What a team member must not be able to do in its namespace: open it (remove its NetworkPolicies, expose it
# through a Service or an Ingress), raise its own limits (quotas, limit ranges), or grant itself more (RBAC).
RBAC_GROUP = "rbac.authorization.k8s.io"
TEAM_MEMBER_FORBIDDEN: tuple[Request, ...] = (
    *(Request(v, "networking.k8s.io", "networkpolicies") for v in ("create", "update", "patch", "delete")),
    *(Request(v, "", "services") for v in ("create", "update", "patch")),
    Request("create", "networking.k8s.io", "ingresses"),
    *(Request(v, "", r) for v in ("update", "patch", "delete") for r in ("resourcequotas", "limitranges")),
    *(
        Request(v, "rbac.authorization.k8s.io", r)
        for v in ("create", "update", "patch")
        for r in ("roles", "rolebindings")
    ),
    *(Request(v, "rbac.authorization.k8s.io", r) for v in PRIVILEGE_VERBS[:2] for r in ("roles", "clusterroles")),
    *(Request("impersonate", "", r) for r in ("users", "groups", "serviceaccounts")),
)
# EKS access policies a team member may hold beside its Role: only the read-only one (EKS User Guide, "Review
# access policy permissions": AmazonEKSEditPolicy is Kubernetes `edit`, AmazonEKSAdminPolicy `admin`).
TEAM_ACCESS_POLICIES_ALLOWED = ("AmazonEKSViewPolicy",)


def _team_subjects(binding: PolicyResource) -> list[str]:
    return [
        str(get(s, "name"))
        for s in items(get(binding.props, "subjects"))
        if get(s, "kind") == "Group" and str(get(s, "name", "")).startswith(TEAM_GROUP_PREFIX)
    ]


def _bound_rules(g: Graph, binding: PolicyResource, namespace: str | None) -> list[Mapping[str, Any]] | None:
    """The rules of the role a binding names, from the plan; None when the role is not in it (a built-in such as
    `edit`, whose rules the plan cannot see)."""
    kind, name = get(binding.props, "roleRef.kind"), get(binding.props, "roleRef.name")
    candidates = g.of_type(ROLE) if kind == "Role" else g.of_type(CLUSTER_ROLE)
    for role in candidates:
        if get(role.props, "metadata.name") == name and (
            kind != "Role" or get(role.props, "metadata.namespace") == namespace
        ):
            return [r for r in items(get(role.props, "rules")) if isinstance(r, Mapping)]
    return None


@stack_rule(
    name="k8s-team-access",
    description="Team members reach their namespace through a Role trainstack writes, bound to the team's group: "
    "it cannot change NetworkPolicies, Services, Ingresses, quotas or RBAC; no EKS access policy beyond view is "
    "associated with a member (AmazonEKSEditPolicy deletes NetworkPolicies and creates LoadBalancer Services); and a "
    "quota of zero LoadBalancer and NodePort Services stands behind the Role in every team namespace.",
    severity=Severity.MEDIUM,
)
def k8s_team_access(args: StackValidationArgs, report: Report) -> None:
    g = graph(args)
    namespaces = team_namespaces(g)
    if not namespaces:
        args.not_applicable("no team namespaces")
    for namespace in namespaces:
        hard: dict[str, Any] = {}
        for quota in _in_namespace(g, namespace, RESOURCE_QUOTA):
            value = get(quota.props, "spec.hard", {})
            hard |= dict(value) if isinstance(value, Mapping) else {}
        loose = [k for k in SERVICE_QUOTA if str(hard.get(k)) != "0"]
        if loose:
            report(f"team namespace {namespace.name} does not hold {loose} at 0: a team can expose it.", namespace.urn)
    for binding in [*g.of_type(ROLE_BINDING), *g.of_type(CLUSTER_ROLE_BINDING)]:
        groups = _team_subjects(binding)
        if not groups:
            continue
        if binding.resource_type == CLUSTER_ROLE_BINDING:
            report(f"{binding.name} binds {groups} cluster-wide: team access stays in the team's namespace.")
            continue
        rules = _bound_rules(g, binding, get(binding.props, "metadata.namespace"))
        if rules is None:
            role = f"{get(binding.props, 'roleRef.kind')} {get(binding.props, 'roleRef.name')}"
            report(f"{binding.name} binds {groups} to {role}, which the plan does not define: bind a Role it writes.")
            continue
        granted = [str(r) for r in TEAM_MEMBER_FORBIDDEN if allows(rules, r)]
        if granted:
            report(f"{binding.name} lets {groups} {', '.join(granted)}.")
    members = {
        get(e.props, "principalArn")
        for e in g.of_type(ACCESS_ENTRY)
        if any(str(x).startswith(TEAM_GROUP_PREFIX) for x in items(get(e.props, "kubernetesGroups")))
    }
    team_names = {str(get(ns.props, "metadata.name")) for ns in namespaces}
    for association in g.of_type(ACCESS_POLICY_ASSOCIATION):
        policy = str(get(association.props, "policyArn", "")).rsplit("/", 1)[-1]
        scoped = set(map(str, items(get(association.props, "accessScope.namespaces"))))
        if policy not in TEAM_ACCESS_POLICIES_ALLOWED and (
            get(association.props, "principalArn") in members or scoped & team_names
        ):
            report(f"{association.name} gives {policy} to a team member: use the team Role (k8s-team-access).")


# What the device access policy must judge (components/tenancy.py device_policy_spec): the NVIDIA runtime's device
# variable, the GPU taint's toleration, and the system priority classes.
DEVICE_ACCESS_TERMS = ("NVIDIA_VISIBLE_DEVICES", "'nvidia.com/gpu' in c.resources", "priorityClassName")


@stack_rule(
    name="k8s-device-access",
    description="A ValidatingAdmissionPolicy bound with action Deny to the team namespaces keeps accelerators "
    "behind a resource request: no NVIDIA device variable (NVIDIA_VISIBLE_DEVICES), no GPU toleration without a "
    "GPU request, no system priority class. Without it a pod with NVIDIA_VISIBLE_DEVICES=all lands on another "
    "team's node and uses every GPU, counted by no quota and no queue.",
    severity=Severity.CRITICAL,
)
def k8s_device_access(args: StackValidationArgs, report: Report) -> None:
    g = graph(args)
    if not team_namespaces(g):
        args.not_applicable("no team namespaces")
    if not _bound_to_teams(g, lambda text: all(term in text for term in DEVICE_ACCESS_TERMS)):
        report(
            "no ValidatingAdmissionPolicy bound with Deny to the team namespaces refuses NVIDIA_VISIBLE_DEVICES, GPU "
            "tolerations without a GPU request and system priority classes: a pod can take GPUs it never requested."
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
        for action in ("s3:PutObject", "s3:ReplicateObject", "s3:GetObject"):
            if not any(_denies(s, action) and "aws:PrincipalArn" in _condition_keys(s) for s in statements):
                report(f"{bucket.name}: no deny of {action} for principals other than the allowed ones.", bucket.urn)
        key_id = "s3:x-amz-server-side-encryption-aws-kms-key-id"
        if not any(_denies(s, "s3:PutObject") and key_id in _condition_keys(s) for s in statements):
            report(f"{bucket.name}: uploads without the stack's KMS key are not denied.", bucket.urn)


S3_LIFECYCLE = (
    "aws:s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration",
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


@stack_rule(
    name="s3-checkpoints-per-prefix",
    description="No role the stack creates writes or deletes across the whole checkpoints bucket: each team's "
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
    role_policies = g.of_type(IAM_ROLE_POLICY)
    for bucket, statements in _known_policies(args, g, buckets):
        for header in ENCRYPTION_HEADERS:
            if not any(_denies(s, "s3:PutObject") and header in _condition_keys(s) for s in statements):
                report(f"{bucket.name}: uploads naming another {header} are not denied.", bucket.urn)
        # The bucket's ARN as its own policy names it (bucket-level resources): the plan's inputs carry no ARN.
        arns = {str(r) for s in statements for r in as_list(s.get("Resource")) if "/" not in str(r)}
        for policy in role_policies:
            try:
                found = _statements(get(policy.props, "policy"))
            except UnknownValueError:
                continue
            for statement in found:
                actions = [a for a in CHECKPOINT_WRITE_ACTIONS if _allows_pattern(statement, a)]
                wide = (
                    sorted({r for arn in arns for r in _whole_bucket_writes(statement, arn, teams)}) if actions else []
                )
                if wide:
                    report(
                        f"{policy.name} allows {', '.join(actions)} on {', '.join(wide)}: every team's checkpoints, "
                        "not one team's prefix.",
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


LOG_GROUP = "aws:cloudwatch/logGroup:LogGroup"
SNS_TOPIC = "aws:sns/topic:Topic"


def _context_values(statement: Mapping[str, Any], key: str) -> list[str]:
    condition = statement.get("Condition")
    found: list[str] = []
    for block in condition.values() if isinstance(condition, Mapping) else []:
        if isinstance(block, Mapping) and key in block:
            found += [str(v) for v in as_list(block[key])]
    return found


def _key_names(g: Graph, resource: PolicyResource, prop: str, service: str, context_key: str, suffix: str) -> str:
    """Why the key `resource.prop` names does not let `service` use it for this resource (by the encryption context
    `context_key` ending in `suffix`), or "" when it does."""
    keys = g.deps(resource, prop, KMS_KEY)
    if not keys:
        return "its key is not a key of this stack, so no key policy here says who may read it"
    try:
        statements = [s for k in keys for s in _statements(get(k.props, "policy"))]
    except UnknownValueError:
        return ""  # computed at the first preview; judged at pulumi up
    for statement in statements:
        services = [str(p) for p in as_list(get(statement, "Principal.Service"))]
        named = [v for v in _context_values(statement, context_key) if v.endswith(suffix)]
        if statement.get("Effect") == "Allow" and any(p.startswith(service) for p in services) and named:
            return ""
    return f"its key's policy does not let {service} use it with {context_key} naming it"


def _set(props: Any, key: str) -> Any:
    """The value of `key`, or True when it is set to a value computed later (a key's ARN at the first preview)."""
    try:
        return get(props, key)
    except UnknownValueError:
        return True


@stack_rule(
    name="telemetry-encrypted",
    description="Every CloudWatch log group and SNS topic the stack creates is encrypted with a key of the stack "
    "whose policy lets the service use it for that log group or topic alone (an encryption-context condition): "
    "flow logs, the API server's audit log and the alerts are then readable only as the key policy and its "
    "administrators decide, not by anyone with logs:* or sns:* (CKV_AWS_158, CKV_AWS_26).",
    severity=Severity.LOW,
)
def telemetry_encrypted(args: StackValidationArgs, report: Report) -> None:
    g = graph(args)
    groups, topics = g.of_type(LOG_GROUP), g.of_type(SNS_TOPIC)
    if not groups and not topics:
        args.not_applicable("no log group or topic")
    for group in groups:
        name = str(get(group.props, "name", ""))
        if not _set(group.props, "kmsKeyId"):
            report(f"log group {name or group.name} is not encrypted with a customer-managed key.", group.urn)
        elif why := _key_names(
            g, group, "kmsKeyId", "logs.", "kms:EncryptionContext:aws:logs:arn", f":log-group:{name}"
        ):
            report(f"log group {name}: {why}.", group.urn)
    for topic in topics:
        name = str(get(topic.props, "name", ""))
        key = _set(topic.props, "kmsMasterKeyId")
        if not key or str(key).startswith("alias/aws/"):
            report(f"topic {name or topic.name} is not encrypted with a customer-managed key.", topic.urn)
        elif why := _key_names(
            g, topic, "kmsMasterKeyId", "aps.", "kms:EncryptionContext:aws:sns:topicArn", f":{name}"
        ):
            report(f"topic {name}: {why} (its publisher, the alert manager, could not publish).", topic.urn)


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
    if not _denies(statement, action) or "Resource" in statement or statement.get("Condition"):
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
                s for p in g.referrers(role, "role", IAM_ROLE_POLICY) for s in _statements(get(p.props, "policy"))
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


PROVISIONING_PARAMETERS = "/provisioning_parameters.json"  # components/sagemaker/hyperpod.py PROVISIONING_PARAMETERS


def _login_groups(g: Graph) -> set[str]:
    """The login groups the Slurm lifecycle's provisioning_parameters.json names (`login_group`); none while its
    content is unknown (it carries the file system's outputs) or unreadable."""
    found: set[str] = set()
    for obj in g.of_type(S3_OBJECT):
        try:
            if not str(get(obj.props, "key", "")).endswith(PROVISIONING_PARAMETERS):
                continue
            params = json.loads(str(get(obj.props, "content", "")))
        except (UnknownValueError, ValueError):
            continue
        login = params.get("login_group") if isinstance(params, dict) else None
        if isinstance(login, str):
            found.add(login)
    return found

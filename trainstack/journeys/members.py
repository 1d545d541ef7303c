"""The member journey: a person of a team, with kubectl, in the team's namespace.

One journey per team (kind `team job`): EKS maps the member's IAM role to the team's Kubernetes group (the access
entries), the namespace's RoleBinding gives that group the team Role, and the Role's rules, evaluated as the API
server's RBAC authorizer evaluates them (`policies.rbac`), let the member submit and watch training and do nothing
that opens the namespace: no NetworkPolicy, Service, Ingress, quota or RBAC change, nothing in another team's
namespace. Behind the Role, the namespace's ResourceQuotas refuse a LoadBalancer or NodePort Service whoever
creates it (a controller, a later grant).

EKS access policies associated with a member count too: they are Kubernetes' built-in roles (EKS User Guide,
"Review access policy permissions"), whose grants on the objects this journey asks about are modelled below from
kubernetes v1.36 `plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from components.storage.lustre_volume import CSI_DRIVER, DATASETS_CLAIM_NAME, READ_ONLY_MOUNT_OPTION
from components.team_rbac import SERVICE_QUOTA, team_group
from policies.rbac import Request, allows
from policies.rules.k8s import TEAM_MEMBER_FORBIDDEN
from trainstack.engine import UNKNOWN, RecordedResource, Recording
from trainstack.journeys import TEAM_JOB, Journey, Step, Trip, quantity
from trainstack.tokens import (
    ACCESS_ENTRY,
    ACCESS_POLICY_ASSOCIATION,
    K8S_CLUSTER_ROLE,
    K8S_CLUSTER_ROLE_BINDING,
    K8S_ROLE,
    K8S_ROLE_BINDING,
    PERSISTENT_VOLUME,
    RESOURCE_QUOTA,
)

SOURCES = {
    "entry": "Amazon EKS User Guide, access entries (kubernetesGroups)",
    "rbac": "kubernetes v1.36 plugin/pkg/auth/authorizer/rbac/rbac.go, pkg/apis/rbac/v1/evaluation_helpers.go",
    "policies": "Amazon EKS User Guide, Review access policy permissions; kubernetes v1.36 "
    "plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go (edit, admin, cluster-admin)",
    "services": "kubernetes v1.36 pkg/quota/v1/evaluator/core/services.go; "
    "plugin/pkg/admission/resourcequota/controller.go",
    "fsx": "kubernetes-sigs/aws-fsx-csi-driver pkg/driver/node.go NodePublishVolume; kubernetes#69843",
}

# What a member does day to day: submit, watch, debug and stop its training.
MEMBER_NEEDS: tuple[Request, ...] = (
    Request("create", "trainer.kubeflow.org", "trainjobs"),
    Request("delete", "trainer.kubeflow.org", "trainjobs"),
    Request("list", "kueue.x-k8s.io", "workloads"),
    Request("get", "", "pods", "log"),
    Request("create", "", "pods", "exec"),
    Request("create", "", "secrets"),
)

_ALL_WRITES = ["create", "update", "patch", "delete", "deletecollection"]
# Built-in roles' grants on the objects the journey asks about (bootstrappolicy/policy.go: edit writes services,
# ingresses and networkpolicies; admin adds roles and rolebindings; cluster-admin is everything). An access
# policy not listed is taken as everything: what it grants cannot be read here.
ACCESS_POLICY_RULES: Mapping[str, list[dict[str, Any]]] = {
    "AmazonEKSViewPolicy": [],
    "AmazonEKSEditPolicy": [
        {"apiGroups": [""], "resources": ["services"], "verbs": _ALL_WRITES},
        {"apiGroups": ["networking.k8s.io"], "resources": ["ingresses", "networkpolicies"], "verbs": _ALL_WRITES},
    ],
    "AmazonEKSAdminPolicy": [
        {"apiGroups": [""], "resources": ["services"], "verbs": _ALL_WRITES},
        {"apiGroups": ["networking.k8s.io"], "resources": ["ingresses", "networkpolicies"], "verbs": _ALL_WRITES},
        {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles", "rolebindings"], "verbs": _ALL_WRITES},
    ],
}
_EVERYTHING = [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]

# Two Services a member (or anything in the namespace) might create, one port each.
EXPOSING_SERVICES = {"LoadBalancer": 1, "NodePort": 1}


def walk(trip: Trip) -> Iterator[Journey]:
    recording = trip.recording
    teams = [team.name for team in trip.stack.kubernetes.teams]
    for team in trip.stack.kubernetes.teams:
        members = tuple(team.member_role_arns)
        subject = f"team {team.name}: a member with kubectl"
        entry = entry_step(recording, team.name, members)
        rules, binding = bound_rules(recording, team.name)
        steps = [
            entry,
            binding,
            needs_step(team.name, rules),
            forbidden_step(team.name, rules, association_rules(recording, team.name, members)),
            other_namespaces_step(recording, team.name, teams),
            service_quota_step(recording, team.name),
            datasets_step(recording, team.name),
        ]
        yield Journey(TEAM_JOB, subject, tuple(steps), {"member roles": str(len(members))})


def _meta(resource: RecordedResource) -> Mapping[str, Any]:
    meta = resource.inputs.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _rules(resource: RecordedResource) -> list[Mapping[str, Any]]:
    return [r for r in resource.inputs.get("rules") or [] if isinstance(r, Mapping)]


def _binds(binding: RecordedResource, group: str) -> bool:
    return any(
        isinstance(s, Mapping) and s.get("kind") == "Group" and s.get("name") == group
        for s in binding.inputs.get("subjects") or []
    )


def entry_step(recording: Recording, team: str, members: Sequence[str]) -> Step:
    name = "EKS maps each member role to the team's group"
    group = team_group(team)
    groups = {
        str(e.inputs.get("principalArn")): [str(g) for g in e.inputs.get("kubernetesGroups") or []]
        for e in recording.by_type(ACCESS_ENTRY)
    }
    missing = [arn for arn in members if group not in groups.get(arn, [])]
    if missing:
        return Step(name, False, f"no access entry gives {', '.join(missing)} the group {group}", SOURCES["entry"])
    if not members:
        return Step(name, True, f"no member roles listed; an access entry with {group} makes one", SOURCES["entry"])
    return Step(name, True, f"{len(members)} role(s) get {group}", SOURCES["entry"])


def bound_rules(recording: Recording, team: str) -> tuple[list[Mapping[str, Any]], Step]:
    """The rules the team's group holds in its namespace through RoleBindings, and the step that found them."""
    name = "the namespace binds the team's group to a Role"
    group = team_group(team)
    rules: list[Mapping[str, Any]] = []
    found: list[str] = []
    for binding in recording.by_type(K8S_ROLE_BINDING):
        if _meta(binding).get("namespace") != team or not _binds(binding, group):
            continue
        ref = binding.inputs.get("roleRef") or {}
        kind, role_name = ref.get("kind"), ref.get("name")
        roles = recording.by_type(K8S_ROLE) if kind == "Role" else recording.by_type(K8S_CLUSTER_ROLE)
        match = [
            r
            for r in roles
            if _meta(r).get("name") == role_name and (kind != "Role" or _meta(r).get("namespace") == team)
        ]
        rules += _rules(match[0]) if match else _EVERYTHING  # a built-in role: its rules are not in the plan
        found.append(f"{kind} {role_name}" + ("" if match else " (not in the plan: taken as everything)"))
    if not found:
        return [], Step(name, False, f"no RoleBinding in {team} names {group}: members can do nothing", SOURCES["rbac"])
    return rules, Step(name, True, f"{group} holds {', '.join(found)} in {team}", SOURCES["rbac"])


def association_rules(recording: Recording, team: str, members: Sequence[str]) -> list[Mapping[str, Any]]:
    """What the EKS access policies associated with the team's members grant in its namespace."""
    rules: list[Mapping[str, Any]] = []
    for association in recording.by_type(ACCESS_POLICY_ASSOCIATION):
        scope = association.inputs.get("accessScope") or {}
        in_scope = scope.get("type") == "cluster" or team in (scope.get("namespaces") or [])
        if association.inputs.get("principalArn") in members and in_scope:
            policy = str(association.inputs.get("policyArn", "")).rsplit("/", 1)[-1]
            rules += ACCESS_POLICY_RULES.get(policy, _EVERYTHING)
    return rules


def needs_step(team: str, rules: Sequence[Mapping[str, Any]]) -> Step:
    name = "a member can submit, watch and debug training"
    missing = [str(r) for r in MEMBER_NEEDS if not allows(rules, r)]
    if missing:
        return Step(name, False, f"the team's Role does not allow {', '.join(missing)} in {team}", SOURCES["rbac"])
    return Step(name, True, f"{', '.join(map(str, MEMBER_NEEDS))}: allowed in {team}", SOURCES["rbac"])


def forbidden_step(team: str, rules: Sequence[Mapping[str, Any]], associated: Sequence[Mapping[str, Any]]) -> Step:
    name = "a member cannot open the namespace"
    granted = [str(r) for r in TEAM_MEMBER_FORBIDDEN if allows([*rules, *associated], r)]
    if granted:
        by = " (through an EKS access policy)" if not any(allows(rules, r) for r in TEAM_MEMBER_FORBIDDEN) else ""
        return Step(name, False, f"a member of {team} may {', '.join(granted)}{by}", SOURCES["policies"])
    return Step(
        name,
        True,
        f"no NetworkPolicy, Service, Ingress, quota or RBAC change in {team} ({len(TEAM_MEMBER_FORBIDDEN)} requests "
        "refused)",
        SOURCES["rbac"],
    )


def other_namespaces_step(recording: Recording, team: str, teams: Sequence[str]) -> Step:
    name = "a member acts in no other namespace"
    group = team_group(team)
    elsewhere = [
        f"{b.type.rsplit(':', 1)[-1]} {_meta(b).get('namespace') or ''}/{_meta(b).get('name')}".replace(" /", " ")
        for b in [*recording.by_type(K8S_ROLE_BINDING), *recording.by_type(K8S_CLUSTER_ROLE_BINDING)]
        if _binds(b, group) and (b.type == K8S_CLUSTER_ROLE_BINDING or _meta(b).get("namespace") != team)
    ]
    if elsewhere:
        return Step(name, False, f"{group} is also bound by {', '.join(elsewhere)}", SOURCES["rbac"])
    others = len([t for t in teams if t != team])
    return Step(name, True, f"{group} is bound only in {team} ({others} other team namespace(s))", SOURCES["rbac"])


def service_usage(service_type: str, ports: int) -> dict[str, int]:
    """What one Service counts against a ResourceQuota (services.go: a LoadBalancer also allocates node ports)."""
    usage = {"services": 1}
    if service_type == "LoadBalancer":
        usage |= {"services.loadbalancers": 1, "services.nodeports": ports}
    elif service_type == "NodePort":
        usage |= {"services.nodeports": ports}
    return usage


def service_quota_step(recording: Recording, team: str) -> Step:
    name = "the namespace's quotas refuse LoadBalancer and NodePort Services"
    hards = [
        (q.inputs.get("spec") or {}).get("hard") or {}
        for q in recording.by_type(RESOURCE_QUOTA)
        if _meta(q).get("namespace") == team
    ]
    if any(h == UNKNOWN or UNKNOWN in h.values() for h in hards):
        return Step(name, True, "a quota is unknown in preview; checked at `pulumi up`", SOURCES["services"])
    admitted: list[str] = []
    for service_type, ports in EXPOSING_SERVICES.items():
        usage = service_usage(service_type, ports)
        refused = any(quantity.parse(h[k]) < v for h in hards for k, v in usage.items() if k in h)
        if not refused:
            admitted.append(service_type)
    if admitted:
        return Step(name, False, f"a {' or '.join(admitted)} Service is admitted in {team}", SOURCES["services"])
    held = ", ".join(f"{k} {v}" for k, v in SERVICE_QUOTA.items())
    return Step(name, True, f"{team} holds {held}: both refused", SOURCES["services"])


def publish_options(pod_read_only: bool, mount_flags: Sequence[str]) -> list[str]:
    """The options the FSx CSI driver mounts a volume with (NodePublishVolume): `ro` when the pod asks for it, then
    the PV's mount options not already there."""
    options = [READ_ONLY_MOUNT_OPTION] if pod_read_only else []
    return options + [f for f in mount_flags if f not in options]


def _claim(pv: RecordedResource) -> tuple[Any, Any]:
    ref = (pv.inputs.get("spec") or {}).get("claimRef") or {}
    return ref.get("namespace"), ref.get("name")


def datasets_step(recording: Recording, team: str) -> Step:
    name = "the datasets mount read-only whatever the pod says"
    volumes = [
        pv
        for pv in recording.by_type(PERSISTENT_VOLUME)
        if ((pv.inputs.get("spec") or {}).get("csi") or {}).get("driver") == CSI_DRIVER
        and _claim(pv) == (team, DATASETS_CLAIM_NAME)
    ]
    if not volumes:
        return Step(name, True, f"no datasets volume in {team}", SOURCES["fsx"])
    writable = [
        str(_meta(pv).get("name"))
        for pv in volumes
        if READ_ONLY_MOUNT_OPTION not in publish_options(False, (pv.inputs.get("spec") or {}).get("mountOptions") or [])
    ]
    if writable:
        return Step(
            name,
            False,
            f"a pod of {team} that mounts {', '.join(writable)} without readOnly writes the datasets",
            SOURCES["fsx"],
        )
    return Step(name, True, f"{DATASETS_CLAIM_NAME} mounts with `{READ_ONLY_MOUNT_OPTION}` in {team}", SOURCES["fsx"])

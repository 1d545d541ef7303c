"""What a team member may do in the team's namespace: a Role trainstack writes, bound to the team's Kubernetes
group, in place of EKS's `AmazonEKSEditPolicy` (Kubernetes `edit`).

`edit` lets a member delete the namespace's NetworkPolicies (the team's isolation) and create Services of type
LoadBalancer or NodePort (an internet-facing load balancer in the public subnets, which are tagged for ELB). The
Role keeps what training needs (TrainJobs and MPIJobs, Jobs, pods with logs, exec and port-forward, ConfigMaps and
Secrets, StatefulSets and Deployments for notebooks) and only reads the objects that are the platform's: network
policies, services, quotas, claims, service accounts, queues. A member cannot change RBAC (no Role or RoleBinding
grant, no escalate, bind or impersonate). A ResourceQuota of zero LoadBalancer and NodePort Services stands behind
the Role for any other path (a controller, a later Role).

Members reach the Role through the EKS access entry's `kubernetesGroups` (components/eks/team_access.py): EKS maps
the IAM role to `trainstack:team:<team>` for every team that lists it, and each team namespace's RoleBinding binds
that group.
"""

from __future__ import annotations

from typing import Any

TEAM_MEMBER_ROLE = "trainstack-team-member"
TEAM_GROUP_PREFIX = "trainstack:team:"
# Kubernetes' service quota names (kubernetes v1.36 pkg/quota/v1/evaluator/core/services.go): a Service of type
# LoadBalancer counts one `services.loadbalancers` and, with node ports allocated, its ports as `services.nodeports`.
SERVICE_QUOTA = {"services.loadbalancers": "0", "services.nodeports": "0"}
SERVICE_QUOTA_NAME = "services"

READ = ("get", "list", "watch")
WRITE = (*READ, "create", "update", "patch", "delete", "deletecollection")

# (API group, resources, verbs). Groups: core ""; Kubeflow Trainer v2 `trainer.kubeflow.org`; MPI Operator
# v2beta1 `kubeflow.org`; JobSet `jobset.x-k8s.io`; Kueue `kueue.x-k8s.io`.
_GRANTS: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] = (
    ("trainer.kubeflow.org", ("trainjobs",), WRITE),
    ("trainer.kubeflow.org", ("trainjobs/status", "trainingruntimes"), READ),
    ("kubeflow.org", ("mpijobs",), WRITE),
    ("kubeflow.org", ("mpijobs/status",), READ),
    ("batch", ("jobs", "cronjobs"), WRITE),
    ("batch", ("jobs/status", "cronjobs/status"), READ),
    ("apps", ("statefulsets", "deployments"), WRITE),
    ("apps", ("replicasets", "statefulsets/status", "deployments/status"), READ),
    ("", ("pods", "configmaps", "secrets"), WRITE),
    ("", ("pods/log", "pods/status"), READ),
    # kubectl exec, attach and port-forward: `create` over WebSockets (Kubernetes 1.30+), `get` for older clients.
    ("", ("pods/exec", "pods/attach", "pods/portforward"), ("get", "create")),
    ("", ("pods/ephemeralcontainers",), ("get", "update", "patch")),  # kubectl debug; both admission policies judge
    (
        "",
        (
            "services",
            "endpoints",
            "events",
            "persistentvolumeclaims",
            "serviceaccounts",
            "resourcequotas",
            "limitranges",
        ),
        READ,
    ),
    ("discovery.k8s.io", ("endpointslices",), READ),
    ("networking.k8s.io", ("networkpolicies",), READ),
    ("events.k8s.io", ("events",), READ),
    ("jobset.x-k8s.io", ("jobsets", "jobsets/status"), READ),
    ("kueue.x-k8s.io", ("workloads", "workloads/status", "localqueues", "localqueues/status"), READ),
)


def team_group(team: str) -> str:
    """The Kubernetes group EKS gives a team's members (an access entry's `kubernetesGroups`)."""
    return f"{TEAM_GROUP_PREFIX}{team}"


def team_member_rules() -> list[dict[str, Any]]:
    """The team member Role's rules, as the API object spells them."""
    return [
        {"apiGroups": [group], "resources": list(resources), "verbs": list(verbs)}
        for group, resources, verbs in _GRANTS
    ]


def team_member_binding(team: str) -> dict[str, Any]:
    """The RoleBinding's subjects and roleRef: the team's group to the team member Role."""
    return {
        "subjects": [{"kind": "Group", "name": team_group(team), "apiGroup": "rbac.authorization.k8s.io"}],
        "roleRef": {"kind": "Role", "name": TEAM_MEMBER_ROLE, "apiGroup": "rbac.authorization.k8s.io"},
    }

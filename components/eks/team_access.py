"""Cluster access for team members: an EKS access entry per member role whose Kubernetes groups are the teams
that list it (`trainstack:team:<team>`), and no EKS access policy. Each team namespace binds its group to the
Role trainstack writes (components/team_rbac.py), so members run and manage training in their team's namespace
and nowhere else, and cannot remove its NetworkPolicies or expose it through a load balancer; ResourceQuotas and
Kueue bound what they use.

Not `AmazonEKSEditPolicy` scoped to the namespace: it is Kubernetes `edit`, which deletes NetworkPolicies and
creates LoadBalancer Services. The policy pack refuses it (`k8s-team-access`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pulumi
import pulumi_aws as aws

from components.eks.eks import access_entry_keys
from components.naming import child_name
from components.team_rbac import team_group


@dataclass(frozen=True)
class TeamAccessArgs:
    cluster_name: pulumi.Input[str]
    members: dict[str, tuple[str, ...]]
    """IAM role ARN -> the teams it belongs to (from `kubernetes.teams[].member_role_arns`)."""
    after: Sequence[pulumi.Resource] = ()
    """The team namespaces: an association scoped to a namespace that does not exist yet is allowed, but access
    should appear with the namespace, not before."""


def members_by_role(teams: Sequence[tuple[str, Sequence[str]]]) -> dict[str, tuple[str, ...]]:
    """(team, member role ARNs) pairs -> role ARN -> sorted namespaces; one association per role and policy.

    >>> members_by_role([("research", ["arn:aws:iam::1:role/a"]), ("pretraining", ["arn:aws:iam::1:role/a"])])
    {'arn:aws:iam::1:role/a': ('pretraining', 'research')}
    """
    found: dict[str, set[str]] = {}
    for team, roles in teams:
        for role in roles:
            found.setdefault(role, set()).add(team)
    return {role: tuple(sorted(namespaces)) for role, namespaces in sorted(found.items())}


class TeamAccess(pulumi.ComponentResource):
    """EKS access entries mapping each member role to its teams' Kubernetes groups."""

    def __init__(self, name: str, args: TeamAccessArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("trainstack:eks:TeamAccess", name, None, opts)
        roles = list(args.members)
        self.entries: dict[str, aws.eks.AccessEntry] = {}
        for key, role in zip(access_entry_keys(roles), roles, strict=True):
            self.entries[role] = aws.eks.AccessEntry(
                child_name(name, key),
                aws.eks.AccessEntryArgs(
                    cluster_name=args.cluster_name,
                    principal_arn=role,
                    type="STANDARD",
                    kubernetes_groups=[team_group(team) for team in args.members[role]],
                ),
                opts=pulumi.ResourceOptions(parent=self, depends_on=list(args.after)),
            )
        self.register_outputs({"members": {role: list(ns) for role, ns in args.members.items()}})

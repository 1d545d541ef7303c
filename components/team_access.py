"""Cluster access for team members: an EKS access entry per member role, with the EKS edit policy scoped to
the namespaces of the teams that list it (EKS access policies, `accessScope.type: namespace`). Members can run
and manage workloads in their team's namespace and nowhere else; ResourceQuotas and Kueue bound what they use.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pulumi
import pulumi_aws as aws

from components.eks import access_entry_keys
from components.naming import aws_partition, child_name

# EKS access policy for namespace editors (EKS User Guide, "Review access policy permissions":
# AmazonEKSEditPolicy = Kubernetes `edit`, without RBAC or namespace changes).
TEAM_ACCESS_POLICY = "AmazonEKSEditPolicy"


@dataclass(frozen=True)
class TeamAccessArgs:
    cluster_name: pulumi.Input[str]
    region: str
    members: dict[str, tuple[str, ...]]
    """IAM role ARN -> the team namespaces it may use (from `kubernetes.teams[].member_role_arns`)."""
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
    """Namespace-scoped EKS access entries for the members of every team."""

    def __init__(self, name: str, args: TeamAccessArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("trainstack:eks:TeamAccess", name, None, opts)
        policy_arn = f"arn:{aws_partition(args.region)}:eks::aws:cluster-access-policy/{TEAM_ACCESS_POLICY}"
        roles = list(args.members)
        self.associations: dict[str, aws.eks.AccessPolicyAssociation] = {}
        for key, role in zip(access_entry_keys(roles), roles, strict=True):
            entry = aws.eks.AccessEntry(
                child_name(name, key),
                aws.eks.AccessEntryArgs(cluster_name=args.cluster_name, principal_arn=role, type="STANDARD"),
                opts=pulumi.ResourceOptions(parent=self, depends_on=list(args.after)),
            )
            self.associations[role] = aws.eks.AccessPolicyAssociation(
                child_name(name, key, "policy"),
                aws.eks.AccessPolicyAssociationArgs(
                    cluster_name=args.cluster_name,
                    principal_arn=entry.principal_arn,
                    policy_arn=policy_arn,
                    access_scope=aws.eks.AccessPolicyAssociationAccessScopeArgs(
                        type="namespace", namespaces=list(args.members[role])
                    ),
                ),
                opts=pulumi.ResourceOptions(parent=self),
            )
        self.register_outputs({"members": {role: list(ns) for role, ns in args.members.items()}})

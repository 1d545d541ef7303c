"""EKS Pod Identity: an IAM role for one Kubernetes service account, and the association that binds them.

The role trusts `pods.eks.amazonaws.com` with `sts:AssumeRole` and `sts:TagSession` (the EKS Pod Identity
agent assumes the role and passes session tags). The trust policy also matches the session tags EKS sets
(`eks-cluster-name`, `kubernetes-namespace`, `kubernetes-service-account`), so another association in the
same account cannot borrow the role. Source: EKS User Guide, "Create IAM role with trust policy required by
EKS Pod Identity" (docs.aws.amazon.com/eks/latest/userguide/pod-id-role.html) and "Enable or disable session
tags" (pod-id-abac.html).

Used by the EKS cluster (vpc-cni, aws-ebs-csi-driver) and the storage layer (aws-fsx-csi-driver).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pulumi
import pulumi_aws as aws

from components.naming import child_name

POD_IDENTITY_PRINCIPAL = "pods.eks.amazonaws.com"

# Session tags EKS Pod Identity adds when it assumes the role (pod-id-abac.html#pod-id-abac-tags).
TAG_CLUSTER_NAME = "eks-cluster-name"
TAG_NAMESPACE = "kubernetes-namespace"
TAG_SERVICE_ACCOUNT = "kubernetes-service-account"


def managed_policy_arn(policy_name: str, partition: str) -> str:
    """The ARN of an AWS managed IAM policy, for example `AmazonEKS_CNI_Policy`, in `partition`
    (`components.naming.aws_partition`)."""
    return f"arn:{partition}:iam::aws:policy/{policy_name}"


def policy_short_name(policy_arn: str) -> str:
    """The last path segment of a policy ARN, lower-cased and dash-separated, for child resource names.

    >>> policy_short_name("arn:aws:iam::aws:policy/AmazonEKS_CNI_Policy")
    'amazoneks-cni-policy'
    """
    return policy_arn.rsplit("/", 1)[-1].replace("_", "-").lower()


def trust_policy(cluster_name: Any, namespace: str, service_account: str) -> dict[str, Any]:
    """The role's trust policy: Pod Identity may assume it only for this cluster, namespace and account.

    `cluster_name` may be a `pulumi.Output`; render the result with `pulumi.Output.json_dumps`.
    """
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "AllowEksAuthToAssumeRoleForPodIdentity",
                "Effect": "Allow",
                "Principal": {"Service": POD_IDENTITY_PRINCIPAL},
                "Action": ["sts:AssumeRole", "sts:TagSession"],
                "Condition": {
                    "StringEquals": {
                        f"aws:RequestTag/{TAG_CLUSTER_NAME}": cluster_name,
                        f"aws:RequestTag/{TAG_NAMESPACE}": namespace,
                        f"aws:RequestTag/{TAG_SERVICE_ACCOUNT}": service_account,
                    }
                },
            }
        ],
    }


class PodIdentityRole(pulumi.ComponentResource):
    """An IAM role trusted by EKS Pod Identity, its policies, and the Pod Identity association.

    Children: `<name>-role`, one `<name>-<policy>` attachment per managed policy, `<name>-inline` when an
    inline policy is given, and `<name>-association`. Depending on this component waits for all of them, so a
    workload (an add-on, a Helm release) that `depends_on` it never starts before its credentials work.
    """

    role: aws.iam.Role
    """The IAM role the service account's pods receive credentials for."""
    association: aws.eks.PodIdentityAssociation
    """The association of the role with `namespace/service_account` in the cluster."""
    role_arn: pulumi.Output[str]
    """ARN of the role."""
    role_name: pulumi.Output[str]
    """Name of the role."""

    def __init__(
        self,
        name: str,
        *,
        cluster_name: pulumi.Input[str],
        namespace: str,
        service_account: str,
        policy_arns: Sequence[str] = (),
        inline_policy: Mapping[str, Any] | None = None,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("trainstack:pod_identity:PodIdentityRole", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        names = [policy_short_name(arn) for arn in policy_arns]
        if len(set(names)) != len(names):
            raise ValueError(f"{name}: policy_arns has duplicates: {list(policy_arns)}")

        self.role = aws.iam.Role(
            child_name(name, "role"),
            aws.iam.RoleArgs(
                assume_role_policy=pulumi.Output.json_dumps(trust_policy(cluster_name, namespace, service_account)),
                description=f"EKS Pod Identity role for {namespace}/{service_account}",
            ),
            opts=child,
        )
        attachments: list[pulumi.Resource] = [
            aws.iam.RolePolicyAttachment(
                child_name(name, short),
                aws.iam.RolePolicyAttachmentArgs(role=self.role.name, policy_arn=arn),
                opts=child,
            )
            for short, arn in zip(names, policy_arns, strict=True)
        ]
        if inline_policy is not None:
            attachments.append(
                aws.iam.RolePolicy(
                    child_name(name, "inline"),
                    aws.iam.RolePolicyArgs(role=self.role.id, policy=pulumi.Output.json_dumps(dict(inline_policy))),
                    opts=child,
                )
            )
        # The association waits for the policies: pods that get credentials get working ones.
        self.association = aws.eks.PodIdentityAssociation(
            child_name(name, "association"),
            aws.eks.PodIdentityAssociationArgs(
                cluster_name=cluster_name,
                namespace=namespace,
                service_account=service_account,
                role_arn=self.role.arn,
            ),
            opts=pulumi.ResourceOptions(parent=self, depends_on=attachments),
        )
        self.role_arn = self.role.arn
        self.role_name = self.role.name
        self.register_outputs(
            {
                "role_arn": self.role_arn,
                "role_name": self.role_name,
                "association_arn": self.association.association_arn,
            }
        )


def pod_identity_role(
    name: str,
    *,
    cluster_name: pulumi.Input[str],
    namespace: str,
    service_account: str,
    policy_arns: Sequence[str] = (),
    inline_policy: Mapping[str, Any] | None = None,
    opts: pulumi.ResourceOptions,
) -> PodIdentityRole:
    """Create a `PodIdentityRole`: an IAM role for `namespace/service_account` in the cluster, with the given
    managed policies (full ARNs, see `managed_policy_arn`) and an optional inline policy document (a dict; it
    may contain Outputs), and the Pod Identity association. Pass `opts` with `parent=` the calling component
    (the provider is inherited from it)."""
    return PodIdentityRole(
        name,
        cluster_name=cluster_name,
        namespace=namespace,
        service_account=service_account,
        policy_arns=policy_arns,
        inline_policy=inline_policy,
        opts=opts,
    )

"""Per-team AWS credentials for training data: a ServiceAccount `training` in each team namespace and an EKS Pod
Identity role that may read the datasets and read and write only the team's own prefix of the checkpoints
bucket (`s3://<checkpoints>/<team>/`). One team's jobs cannot list, read, overwrite or delete another's
checkpoints; pods on any other service account get no AWS credentials at all (IMDS hop limit 1 keeps the node
role from them)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.naming import child_name
from components.pod_identity import pod_identity_role

TEAM_SERVICE_ACCOUNT = "training"


def checkpoint_prefix(team: str) -> str:
    """The team's key prefix in the checkpoints bucket."""
    return f"{team}/"


def team_storage_policy(
    team: str,
    *,
    datasets_bucket_arn: pulumi.Input[str],
    checkpoints_bucket_arn: pulumi.Input[str],
    data_key_arn: pulumi.Input[str],
    checkpoints_key_arn: pulumi.Input[str],
    region: str,
) -> dict[str, Any]:
    """Read the datasets; list, read, write and delete objects under the team's checkpoint prefix only (deleting
    makes a delete marker: Object Lock keeps locked versions); use the two keys for exactly that, and only through
    S3 (kms:ViaService: the credentials cannot decrypt a copied data key or ciphertext directly)."""
    prefix = checkpoint_prefix(team)
    through_s3 = {"StringEquals": {"kms:ViaService": f"s3.{region}.amazonaws.com"}}
    own = pulumi.Output.concat(checkpoints_bucket_arn, "/", prefix, "*")
    return {
        "Version": "2012-10-17",
        "Statement": [
            {"Sid": "ListDatasets", "Effect": "Allow", "Action": "s3:ListBucket", "Resource": datasets_bucket_arn},
            {
                "Sid": "ReadDatasets",
                "Effect": "Allow",
                "Action": "s3:GetObject",
                "Resource": pulumi.Output.concat(datasets_bucket_arn, "/*"),
            },
            {
                "Sid": "ListOwnCheckpoints",
                "Effect": "Allow",
                "Action": "s3:ListBucket",
                "Resource": checkpoints_bucket_arn,
                "Condition": {"StringLike": {"s3:prefix": [prefix, f"{prefix}*"]}},
            },
            {
                "Sid": "OwnCheckpoints",
                "Effect": "Allow",
                "Action": ["s3:GetObject", "s3:PutObject", "s3:DeleteObject", "s3:AbortMultipartUpload"],
                "Resource": own,
            },
            {
                "Sid": "DecryptDatasets",
                "Effect": "Allow",
                "Action": "kms:Decrypt",
                "Resource": data_key_arn,
                "Condition": through_s3,
            },
            {
                "Sid": "EncryptCheckpoints",
                "Effect": "Allow",
                "Action": ["kms:Decrypt", "kms:GenerateDataKey"],
                "Resource": checkpoints_key_arn,
                "Condition": through_s3,
            },
        ],
    }


@dataclass
class TeamStorageAccessArgs:
    """Wiring: the cluster, the team namespaces, the buckets and their keys."""

    cluster_name: pulumi.Input[str]
    teams: Sequence[str]
    namespaces: dict[str, pulumi.Resource]
    """Team -> its Namespace, which the ServiceAccount waits for."""
    datasets_bucket_arn: pulumi.Input[str]
    checkpoints_bucket_arn: pulumi.Input[str]
    data_key_arn: pulumi.Input[str]
    checkpoints_key_arn: pulumi.Input[str]
    region: str
    """The stack's region: S3's endpoint in the keys' kms:ViaService condition."""


class TeamStorageAccess(pulumi.ComponentResource):
    """Per team: ServiceAccount `training` and its Pod Identity role. Pass `providers=[aws, k8s]`.

    Children: `<name>-<team>-sa` and the `<name>-<team>` Pod Identity role component."""

    role_arns: dict[str, pulumi.Output[str]]
    """Team -> the ARN of its role."""

    def __init__(self, name: str, args: TeamStorageAccessArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("trainstack:storage:TeamStorageAccess", name, None, opts)
        self.role_arns = {}
        for team in args.teams:
            k8s.core.v1.ServiceAccount(
                child_name(name, team, "sa"),
                metadata=k8s.meta.v1.ObjectMetaArgs(name=TEAM_SERVICE_ACCOUNT, namespace=team),
                opts=pulumi.ResourceOptions(parent=self, depends_on=[args.namespaces[team]]),
            )
            role = pod_identity_role(
                child_name(name, team),
                cluster_name=args.cluster_name,
                namespace=team,
                service_account=TEAM_SERVICE_ACCOUNT,
                inline_policy=team_storage_policy(
                    team,
                    datasets_bucket_arn=args.datasets_bucket_arn,
                    checkpoints_bucket_arn=args.checkpoints_bucket_arn,
                    data_key_arn=args.data_key_arn,
                    checkpoints_key_arn=args.checkpoints_key_arn,
                    region=args.region,
                ),
                opts=pulumi.ResourceOptions(parent=self),
            )
            self.role_arns[team] = role.role_arn
        self.register_outputs({"role_arns": self.role_arns})

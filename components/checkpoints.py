"""`CheckpointAccess`: what a training pod needs to resume, in every team namespace.

Per team: a `training` service account whose pods get, through EKS Pod Identity, read-write access to the
checkpoints bucket and read access to the datasets bucket (and the data key that encrypts both), and a
`trainstack-checkpoints` ConfigMap a job loads with `envFrom`: the team's checkpoint prefix in S3 and where
the Lustre claim is mounted. The per-job Lustre directory (`TRAINSTACK_CHECKPOINT_DIR`) is the training
runtime's to set, so this ConfigMap never names it. The contract a training script follows is in
docs/health.md ("Resume").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.naming import child_name
from components.pod_identity import pod_identity_role

SERVICE_ACCOUNT = "training"
CONFIG_MAP = "trainstack-checkpoints"
LUSTRE_MOUNT_PATH = "/fsx"  # where training pods mount the team's Lustre claim (docs/health.md)


def checkpoint_env(team: str, checkpoints_bucket: str) -> dict[str, str]:
    """The environment a training job reads: where durable checkpoints go in S3, and the Lustre mount."""
    return {
        "TRAINSTACK_CHECKPOINT_S3_URI": f"s3://{checkpoints_bucket}/{team}/",
        "TRAINSTACK_LUSTRE_MOUNT": LUSTRE_MOUNT_PATH,
    }


def checkpoint_policy(checkpoints_arn: str, datasets_arn: str, kms_key_arn: str, team: str) -> dict[str, Any]:
    """Read-write on the team's checkpoint prefix, read on datasets, and the data key for both."""
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "ListOwnCheckpoints",
                "Effect": "Allow",
                "Action": "s3:ListBucket",
                "Resource": checkpoints_arn,
                "Condition": {"StringLike": {"s3:prefix": [f"{team}/*"]}},
            },
            {
                "Sid": "ReadWriteOwnCheckpoints",
                "Effect": "Allow",
                "Action": ["s3:GetObject", "s3:PutObject", "s3:DeleteObject", "s3:AbortMultipartUpload"],
                "Resource": f"{checkpoints_arn}/{team}/*",
            },
            {
                "Sid": "ReadDatasets",
                "Effect": "Allow",
                "Action": ["s3:GetObject", "s3:ListBucket"],
                "Resource": [datasets_arn, f"{datasets_arn}/*"],
            },
            {
                "Sid": "UseDataKey",
                "Effect": "Allow",
                "Action": ["kms:Decrypt", "kms:GenerateDataKey"],
                "Resource": kms_key_arn,
            },
        ],
    }


@dataclass
class CheckpointAccessArgs:
    teams: Sequence[str]
    cluster_name: pulumi.Input[str]
    checkpoints_bucket_name: pulumi.Input[str]
    checkpoints_bucket_arn: pulumi.Input[str]
    datasets_bucket_arn: pulumi.Input[str]
    kms_key_arn: pulumi.Input[str]
    after: list[pulumi.Resource] = field(default_factory=list)
    """The team namespaces."""


class CheckpointAccess(pulumi.ComponentResource):
    """Per team: the `training` service account with checkpoint access, and the checkpoint ConfigMap."""

    service_accounts: dict[str, k8s.core.v1.ServiceAccount]

    def __init__(self, name: str, args: CheckpointAccessArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("trainstack:health:CheckpointAccess", name, None, opts)
        self.service_accounts = {}
        for team in args.teams:
            team_opts = pulumi.ResourceOptions(parent=self, depends_on=list(args.after))
            role = pod_identity_role(
                child_name(name, team),
                cluster_name=args.cluster_name,
                namespace=team,
                service_account=SERVICE_ACCOUNT,
                # The ARNs are Outputs: build the statements once they are known.
                inline_policy={
                    "Version": "2012-10-17",
                    "Statement": pulumi.Output.all(
                        args.checkpoints_bucket_arn, args.datasets_bucket_arn, args.kms_key_arn
                    ).apply(lambda arns, team=team: checkpoint_policy(*arns, team)["Statement"]),
                },
                opts=team_opts,
            )
            self.service_accounts[team] = k8s.core.v1.ServiceAccount(
                child_name(name, f"{team}-sa"),
                metadata=k8s.meta.v1.ObjectMetaArgs(name=SERVICE_ACCOUNT, namespace=team),
                opts=pulumi.ResourceOptions(parent=self, depends_on=[role, *args.after]),
            )
            k8s.core.v1.ConfigMap(
                child_name(name, f"{team}-env"),
                metadata=k8s.meta.v1.ObjectMetaArgs(name=CONFIG_MAP, namespace=team),
                data=pulumi.Output.from_input(args.checkpoints_bucket_name).apply(
                    lambda bucket, team=team: checkpoint_env(team, bucket)
                ),
                opts=team_opts,
            )
        self.register_outputs({"service_accounts": {t: SERVICE_ACCOUNT for t in self.service_accounts}})

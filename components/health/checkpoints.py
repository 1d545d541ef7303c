"""`CheckpointAccess`: where a training job resumes from, in every team namespace.

Per team, a `trainstack-checkpoints` ConfigMap a job loads with `envFrom`: the team's checkpoint prefix in S3
(`components/storage/team_storage.py` gives the team's `training` service account read-write there, and nowhere else)
and where the Lustre claim is mounted. The per-job Lustre directory (`TRAINSTACK_CHECKPOINT_DIR`) is the
training runtime's to set, so this ConfigMap never names it; the runtimes load this ConfigMap by name
(`components/k8s/training_runtimes.py`). The contract a training script follows is in docs/health.md ("Resume").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import pulumi
import pulumi_kubernetes as k8s

from components.naming import child_name
from components.storage.team_storage import TEAM_SERVICE_ACCOUNT, checkpoint_prefix

CONFIG_MAP = "trainstack-checkpoints"
LUSTRE_MOUNT_PATH = "/fsx"  # where training pods mount the team's Lustre claim (docs/health.md)


def checkpoint_env(team: str, checkpoints_bucket: str) -> dict[str, str]:
    """The environment a training job reads: where durable checkpoints go in S3, the Lustre mount, and the
    service account whose credentials reach that prefix."""
    return {
        "TRAINSTACK_CHECKPOINT_S3_URI": f"s3://{checkpoints_bucket}/{checkpoint_prefix(team)}",
        "TRAINSTACK_LUSTRE_MOUNT": LUSTRE_MOUNT_PATH,
        "TRAINSTACK_SERVICE_ACCOUNT": TEAM_SERVICE_ACCOUNT,
    }


@dataclass
class CheckpointAccessArgs:
    teams: Sequence[str]
    checkpoints_bucket_name: pulumi.Input[str]
    after: list[pulumi.Resource] = field(default_factory=list[pulumi.Resource])
    """The team namespaces."""


class CheckpointAccess(pulumi.ComponentResource):
    """Per team: the checkpoint ConfigMap a resuming job reads."""

    def __init__(self, name: str, args: CheckpointAccessArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("trainstack:health:CheckpointAccess", name, None, opts)
        self.config_maps: dict[str, k8s.core.v1.ConfigMap] = {}
        for team in args.teams:
            self.config_maps[team] = k8s.core.v1.ConfigMap(
                child_name(name, f"{team}-env"),
                metadata=k8s.meta.v1.ObjectMetaArgs(name=CONFIG_MAP, namespace=team),
                data=pulumi.Output.from_input(args.checkpoints_bucket_name).apply(
                    lambda bucket, team=team: checkpoint_env(team, bucket)
                ),
                opts=pulumi.ResourceOptions(parent=self, depends_on=list(args.after)),
            )
        self.register_outputs({"config_maps": {team: CONFIG_MAP for team in self.config_maps}})

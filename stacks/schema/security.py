"""`security`: who administers keys, which registries images come from, how data buckets and checkpoints are
protected. The model behind these settings is docs/security.md."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

from pydantic import Field

from stacks.schema.base import RoleArn, Spec

# Key administrators and bucket exemptions name one role each, as admin ARNs do (stacks/schema/base.py RoleArn):
# a pattern would silently widen who may delete a key or reach the data from anywhere, and an IAM user's
# long-lived keys are what a data perimeter exists to contain.
PrincipalArn = RoleArn
# A registry host (optionally with a port) and path, ending in `/`: without the slash `nvcr.io` would also admit
# `nvcr.io.attacker.example/...`.
REGISTRY_PREFIX = r"^[a-z0-9]([a-z0-9.-]*[a-z0-9])?(:\d+)?/([a-z0-9._-]+/)*$"
RegistryPrefix = Annotated[str, Field(pattern=REGISTRY_PREFIX)]

# What team namespaces may run by default: each prefix names who publishes there, never a registry where anyone
# can publish (ECR Public, Docker Hub, GHCR, Quay: components/k8s/tenancy.py OPEN_REGISTRIES) by its host alone.
# - nvcr.io/nvidia/: NVIDIA's own NGC images (CUDA, PyTorch, Triton);
# - public.ecr.aws/deep-learning-containers/: AWS Deep Learning Containers (the torch runtime's image);
# - public.ecr.aws/hpc-cloud/: AWS's nccl-tests build with EFA, aws-ofi-nccl and Open MPI (the MPI runtime's image);
# - public.ecr.aws/neuron/: AWS Neuron images for Trainium;
# - public.ecr.aws/docker/library/: Docker Official Images as ECR Public mirrors them (busybox for restart waits):
#   the mirrored path, since Docker Hub's own host is open to anyone;
# - registry.k8s.io/: the Kubernetes project's images (only the project publishes there);
# - ghcr.io/kubeflow/: Kubeflow Trainer's initializer images;
# - the account's private ECR in the stack's region is always allowed (see components/k8s/tenancy.py).
DEFAULT_ALLOWED_REGISTRIES: tuple[str, ...] = (
    "nvcr.io/nvidia/",
    "public.ecr.aws/deep-learning-containers/",
    "public.ecr.aws/hpc-cloud/",
    "public.ecr.aws/neuron/",
    "public.ecr.aws/docker/library/",
    "registry.k8s.io/",
    "ghcr.io/kubeflow/",
)


class ObjectLockMode(StrEnum):
    GOVERNANCE = "GOVERNANCE"  # principals with s3:BypassGovernanceRetention may still delete (break glass)
    COMPLIANCE = "COMPLIANCE"  # nobody, not even the account root, until the retention ends


class CheckpointLockSpec(Spec):
    """S3 Object Lock on the checkpoints bucket: every new checkpoint version is undeletable for a while."""

    mode: ObjectLockMode = Field(
        default=ObjectLockMode.GOVERNANCE,
        description="GOVERNANCE (a principal whose IAM allows s3:BypassGovernanceRetention can still delete a "
        "locked version early: trainstack grants it to no role) or COMPLIANCE "
        "(no one can delete a locked version before its retention ends; cannot be shortened).",
    )
    retention_days: int = Field(
        default=14,
        ge=1,
        le=36500,
        description="Days each new checkpoint version stays locked (S3 default retention).",
    )


class SecuritySpec(Spec):
    """Key administration, image provenance, data perimeter and checkpoint protection."""

    key_administrator_arns: list[PrincipalArn] = Field(
        default_factory=list,
        description="IAM role ARNs that administer the stack's KMS keys (besides the principal running "
        "`pulumi up`, always an administrator). Only administrators may schedule a key's deletion or replace "
        "its policy.",
    )
    allowed_image_registries: list[RegistryPrefix] = Field(
        default_factory=lambda: list(DEFAULT_ALLOWED_REGISTRIES),
        min_length=1,
        description="Image reference prefixes (registry host, optionally with a path ending in `/`) team "
        "namespaces may run; the account's private ECR in the stack's region is always allowed.",
    )
    data_buckets_vpc_only: bool | None = Field(
        default=None,
        description="Deny object reads and writes on the datasets and checkpoints buckets unless they come "
        "through the VPC's S3 endpoint (or from FSx or an exempt role). Unset: on in staging and prod, off in dev.",
    )
    team_internet_egress: bool | None = Field(
        default=None,
        description="Team pods may open HTTPS to any address (through the NAT gateway: package indexes, model hubs). "
        "Off, their HTTPS reaches only the VPC (interface endpoints) and S3 through its gateway endpoint (AWS's "
        "prefix list, read at deploy). Unset: off in prod, on in dev and staging. Prod refuses on.",
    )
    outside_vpc_data_role_arns: list[PrincipalArn] = Field(
        default_factory=list,
        description="Roles that may read and write the data buckets from outside the VPC (an ingest role, "
        "break glass) when data_buckets_vpc_only is on.",
    )
    checkpoint_lock: CheckpointLockSpec | None = Field(
        default=None,
        description="S3 Object Lock on the checkpoints bucket (can be turned on for an existing bucket, never "
        "off). Required in prod.",
    )

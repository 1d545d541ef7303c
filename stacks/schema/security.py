"""`security`: who administers keys, which registries images come from, how data buckets and checkpoints are
protected. The model behind these settings is docs/security.md."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

from pydantic import Field

from stacks.schema.base import Spec

# An IAM role or user ARN (any partition). Key administrators and bucket exemptions name principals, never
# wildcards: a pattern would silently widen who may delete a key.
# IAM's grammar for role and user ARNs (as ROLE_ARN_PATTERN in stacks/schema/base.py; userNameType is `[\w+=,.@-]+`).
IAM_PRINCIPAL_ARN = r"^arn:aws(-[a-z]+)*:iam::[0-9]{12}:(role|user)/([\x21-\x7E]*/)?[A-Za-z0-9_+=,.@-]{1,64}$"
PrincipalArn = Annotated[str, Field(pattern=IAM_PRINCIPAL_ARN)]
# A registry host (optionally with a port) and path, ending in `/`: without the slash `nvcr.io` would also admit
# `nvcr.io.attacker.example/...`.
REGISTRY_PREFIX = r"^[a-z0-9]([a-z0-9.-]*[a-z0-9])?(:\d+)?/([a-z0-9._-]+/)*$"
RegistryPrefix = Annotated[str, Field(pattern=REGISTRY_PREFIX)]

# Registries trainstack's own images come from (an image ref's host, or host/path prefix):
# - nvcr.io: NVIDIA GPU Operator operands and the DCGM image (NGC);
# - public.ecr.aws: AWS's EFA device plugin, Neuron device plugin and the nccl-tests image;
# - registry.k8s.io: Kueue (its chart's default image repository);
# - ghcr.io/kubeflow: Kubeflow Trainer and JobSet images (the charts' defaults);
# - the account's private ECR in the stack's region is always allowed (see components/tenancy.py).
DEFAULT_ALLOWED_REGISTRIES: tuple[str, ...] = (
    "nvcr.io/nvidia/",
    "public.ecr.aws/",
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
        description="GOVERNANCE (key administrators can bypass with s3:BypassGovernanceRetention) or COMPLIANCE "
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
        description="IAM role or user ARNs that administer the stack's KMS keys (besides the principal running "
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

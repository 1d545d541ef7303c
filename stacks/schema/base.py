"""Shared building blocks of the stack schema: the frozen base model, patterns, and constrained types."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field

from stacks.catalog import CATALOG
from stacks.schema.values import Cidr as Cidr  # re-exported: the schema package exports it

CONFIG_NAMESPACE = "trainstack"
CONFIG_KEY = "cluster"

DNS_LABEL = r"^[a-z]([a-z0-9-]{0,30}[a-z0-9])?$"
AZ_PATTERN = r"^[a-z]{2}(-gov)?-[a-z]+-\d[a-z]$"
REGION_PATTERN = r"^[a-z]{2}(-gov)?-[a-z]+-\d$"
# An IAM role ARN by IAM's own grammar (botocore iam 2010-05-08: pathType `(\u002F)|(\u002F[\u0021-\u007E]+\u002F)`,
# roleNameType `[\w+=,.@-]+` of 1-64 characters, `\w` being ASCII there): partition, 12-digit account, `role/`,
# an optional path, the name. `.+` took spaces, tabs and `#`, which IAM never names a role with. ASCII classes,
# not `\d`/`\w`: pydantic's regex engine reads those as Unicode.
ROLE_ARN_PATTERN = r"^arn:aws(-[a-z]+)*:iam::[0-9]{12}:role/([\x21-\x7E]*/)?[A-Za-z0-9_+=,.@-]{1,64}$"


class Spec(BaseModel):
    """Base of every config model: frozen, unknown keys refused, described fields."""

    # allow_inf_nan=False: no setting takes `inf` or `nan` (and the JSON report could not carry them).
    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=False, allow_inf_nan=False)


class Environment(StrEnum):
    DEV = "dev"
    STAGING = "staging"
    PROD = "prod"


def _instance_type(value: str) -> str:
    if value not in CATALOG:
        raise ValueError(f"unknown instance type; valid: {', '.join(sorted(CATALOG))}")
    return value


CatalogInstanceType = Annotated[str, AfterValidator(_instance_type)]

# An EKS-optimized AMI release (EKS API CreateNodegroup/UpdateNodegroupVersion `releaseVersion`): AL2023 AMIs
# are `<kubernetes version>-<build date>` (amazon-eks-ami releases, e.g. 1.36.0-20260915), Bottlerocket ones
# `<Bottlerocket version>-<commit>` (e.g. 1.44.0-0f2a6ffa). Pinning one makes AMI rotation a reviewed change.
AMI_RELEASE_PATTERN = r"^\d+\.\d+\.\d+-(\d{8}|[0-9a-f]{8})$"
AmiReleaseVersion = Annotated[
    str,
    Field(
        pattern=AMI_RELEASE_PATTERN,
        examples=["1.36.0-20260915"],
        description="EKS AMI release, e.g. 1.36.0-20260915 (AL2023) or 1.44.0-0f2a6ffa (Bottlerocket); "
        "left out, EKS takes the newest release at creation and nodes keep it until you set one.",
    ),
]


# CloudWatch Logs accepts only these retention periods (CloudWatch Logs API Reference, PutRetentionPolicy
# `retentionInDays`); any other value passes a plan and fails `pulumi up` with InvalidParameterException.
LOG_RETENTION_DAYS = (
    1,
    3,
    5,
    7,
    14,
    30,
    60,
    90,
    120,
    150,
    180,
    365,
    400,
    545,
    731,
    1096,
    1827,
    2192,
    2557,
    2922,
    3288,
    3653,
)


def _retention_days(value: int) -> int:
    if value not in LOG_RETENTION_DAYS:
        raise ValueError(f"{value} is not a CloudWatch retention period: use one of {list(LOG_RETENTION_DAYS)}")
    return value


RetentionDays = Annotated[
    int, AfterValidator(_retention_days), Field(json_schema_extra={"enum": list(LOG_RETENTION_DAYS)})
]
"""Days a CloudWatch log group keeps events: one of `LOG_RETENTION_DAYS`. Every log-group retention in the
schema uses this type."""

Email = Annotated[str, Field(pattern=r"^[^@\s]+@[^@\s]+\.[^@\s]+$")]
"""An e-mail address: alert recipients, waiver owners."""


def one_role(value: object) -> object:
    """A principal ARN is judged by what it matches: exactly one role a person (or pipeline) assumes. Run before
    the ARN grammar (which refuses some of these too), so each is named for what it is: a pattern matches every
    role whose name fits it, a service-linked role belongs to an AWS service, and an IAM user holds long-lived
    keys that nobody rotates with a session (IAM User Guide, "IAM roles": prefer roles with temporary
    credentials)."""
    if not isinstance(value, str):
        return value
    resource = value.split(":", 5)[-1]
    if "*" in resource or "?" in resource:
        raise ValueError(
            f"{value} is a pattern: it would match every role whose name fits {resource!r}; name one role, "
            "such as arn:aws:iam::123456789012:role/ml-platform-admin"
        )
    if resource.startswith("user/"):
        raise ValueError(
            f"{value} is an IAM user: users hold long-lived access keys; name the role the person assumes, such as "
            "arn:aws:iam::123456789012:role/ml-platform-admin"
        )
    if resource.startswith("role/aws-service-role/"):
        raise ValueError(
            f"{value} is an AWS service-linked role: it belongs to an AWS service, not to your people; name the "
            "role your people assume"
        )
    return value


RoleArn = Annotated[
    str,
    Field(pattern=ROLE_ARN_PATTERN, examples=["arn:aws:iam::111122223333:role/ml-platform-admin"]),
    BeforeValidator(one_role),
]
"""One IAM role a person or pipeline assumes: no pattern, no IAM user, no service-linked role."""

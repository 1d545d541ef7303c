"""S3 buckets for training data (datasets, checkpoints) and the customer-managed KMS key that encrypts them.

Each bucket is an `aws.s3.Bucket` (pulumi-aws 7 name; `BucketV2` and the `*V2` configuration resources are
deprecated aliases) with its own configuration resources (args classes `*InitArgs` in v7, as `*Args` names the
inline blocks): SSE-KMS with an S3 Bucket Key (fewer KMS requests,
lower cost: S3 User Guide, "Reducing the cost of SSE-KMS with Amazon S3 Bucket Keys"), versioning, all four
public access blocks, a TLS-only bucket policy (S3 User Guide, "Security best practices": deny when
`aws:SecureTransport` is false), and lifecycle rules for noncurrent versions and stale multipart uploads.

Two keys, because the data differs in sensitivity and in who needs it: the data key encrypts the datasets
bucket and FSx for Lustre (passed to `LustreFileSystem`), and FSx's S3 service-linked role may use it to read
and write the SSE-KMS datasets bucket through a data repository association (FSx for Lustre User Guide,
"Working with server-side encrypted Amazon S3 buckets"); the checkpoints key encrypts only the checkpoints
bucket (trained weights, the most valuable output), so a principal allowed to read datasets is not thereby
allowed to read weights. Both policies separate administrators from users (components/kms.py).

Protection beyond versioning (docs/security.md):
- `vpc_only`: a deny on object reads, writes and deletes unless the request comes through the VPC's S3
  gateway endpoint, is FSx's S3 role (a data repository association reads from FSx's own network) or an
  exempt role. Bucket-level calls (what `pulumi up` makes) are not denied. On a force-destroy bucket (dev,
  staging) the stack's destroyers (the deployer and the key administrators) are also exempt from the deny of
  the calls that empty it (listing versions, deleting objects and versions), never from reads or writes:
  `pulumi destroy` runs from outside the VPC, and although Pulumi deletes the policy before the bucket, S3
  applies that change eventually, so the emptying can still meet the deny (docs/security.md).
- `checkpoint_lock`: S3 Object Lock with a default retention on the checkpoints bucket, so no new checkpoint
  version can be deleted or overwritten away before it expires. `BucketObjectLockConfiguration` turns Object
  Lock on for an existing versioned bucket (pulumi-aws docs; S3 since 2023), so existing stacks need no
  replacement; once on, it can never be turned off.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_aws as aws

from components.kms import account_root_statement, customer_key, deployer_arn
from components.naming import aws_partition, child_name
from stacks.schema import BucketsSpec
from stacks.schema.security import CheckpointLockSpec

BUCKET_ROLES = ("datasets", "checkpoints")
# Tag naming what a bucket holds; the policy pack finds data buckets by it.
DATA_CLASS_TAG = "trainstack:data-class"
# Object actions a request from outside the VPC may not make on a data bucket (the S3 service authorization
# reference's object-level actions, plus listing): reads and writes, and the calls that empty a bucket, which
# `pulumi destroy` makes for a force-destroy bucket (terraform-provider-aws internal/service/s3/delete.go
# emptyBucket: ListObjectVersions, then DeleteObjects by version id, which needs s3:DeleteObject and
# s3:DeleteObjectVersion).
READ_WRITE_ACTIONS: tuple[str, ...] = ("s3:GetObject", "s3:GetObjectVersion", "s3:PutObject", "s3:ListBucket")
EMPTYING_ACTIONS: tuple[str, ...] = ("s3:ListBucketVersions", "s3:DeleteObject", "s3:DeleteObjectVersion")
DATA_ACTIONS: tuple[str, ...] = READ_WRITE_ACTIONS + EMPTYING_ACTIONS
# The service-linked role FSx creates per file system for S3 access (one per file system id).
FSX_S3_ROLE_PATH = "role/aws-service-role/s3.data-source.lustre.fsx.amazonaws.com/AWSServiceRoleForFSxS3Access_*"


def tls_only_policy(bucket_arn: str) -> dict[str, Any]:
    """A bucket policy that refuses every request not made over TLS."""
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "DenyInsecureTransport",
                "Effect": "Deny",
                "Principal": "*",
                "Action": "s3:*",
                "Resource": [bucket_arn, f"{bucket_arn}/*"],
                "Condition": {"Bool": {"aws:SecureTransport": "false"}},
            }
        ],
    }


def vpc_only_statements(
    bucket_arn: str,
    vpc_endpoint_ids: Sequence[str],
    exempt_principal_arns: Sequence[str],
    destroyer_arns: Sequence[str] = (),
) -> list[dict[str, Any]]:
    """Deny object reads, writes and deletes to requests that do not come through the VPC's S3 endpoints, unless
    the principal is exempt; `destroyer_arns` (a force-destroy bucket's deployer and key administrators) are
    exempt from the deny of the calls that empty the bucket only."""

    def deny(sid: str, actions: Sequence[str], exempt: Sequence[str]) -> dict[str, Any]:
        return {
            "Sid": sid,
            "Effect": "Deny",
            "Principal": "*",
            "Action": list(actions),
            "Resource": [bucket_arn, f"{bucket_arn}/*"],
            "Condition": {
                "StringNotEqualsIfExists": {"aws:SourceVpce": sorted(vpc_endpoint_ids)},
                "ArnNotLike": {"aws:PrincipalArn": sorted(set(exempt))},
            },
        }

    return [
        deny("DenyDataAccessOutsideVpc", READ_WRITE_ACTIONS, exempt_principal_arns),
        deny("DenyEmptyingOutsideVpc", EMPTYING_ACTIONS, [*exempt_principal_arns, *destroyer_arns]),
    ]


def own_key_statements(bucket_arn: str, kms_key_arn: str) -> list[dict[str, Any]]:
    """Deny uploads that name another encryption: another KMS key, or SSE-S3 or DSSE in place of SSE-KMS. An upload
    that names none gets the bucket's default (this key), so clients relying on it are untouched; a client that
    names the key must name its ARN (S3 User Guide, "Requiring SSE-KMS with a specific AWS KMS key"): S3 sets the
    condition keys from the request's headers only, never from the default. CopyObject and
    CreateMultipartUpload are authorized as s3:PutObject with the same headers."""

    def deny(sid: str, key: str, value: str) -> dict[str, Any]:
        return {
            "Sid": sid,
            "Effect": "Deny",
            "Principal": "*",
            "Action": "s3:PutObject",
            "Resource": f"{bucket_arn}/*",
            # Both: the header is there (Null false) and says something else. A negated operator alone, with or
            # without IfExists, is true when the key is absent (IAM User Guide, condition operators), which would
            # refuse every upload that relies on the default.
            "Condition": {"Null": {key: "false"}, "StringNotEquals": {key: value}},
        }

    return [
        deny("DenyUploadUnderAnotherKey", "s3:x-amz-server-side-encryption-aws-kms-key-id", kms_key_arn),
        deny("DenyUploadWithoutKms", "s3:x-amz-server-side-encryption", "aws:kms"),
    ]


def fsx_s3_role_pattern(partition: str, account_id: str) -> str:
    """FSx's per-file-system S3 service-linked roles (FSx for Lustre User Guide, data repositories)."""
    return f"arn:{partition}:iam::{account_id}:{FSX_S3_ROLE_PATH}"


def with_statements(policy: dict[str, Any], statements: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """`policy` with `statements` appended."""
    return {**policy, "Statement": [*policy["Statement"], *statements]}


def data_key_policy(account_id: str, partition: str, region: str) -> dict[str, Any]:
    """The data key's policy: account administration through IAM, and FSx's S3 role through S3 only."""
    return {
        "Version": "2012-10-17",
        "Statement": [
            account_root_statement(partition, account_id),
            {
                "Sid": "AllowFsxDataRepositoryThroughS3",
                "Effect": "Allow",
                "Principal": {"AWS": "*"},
                "Action": ["kms:Encrypt", "kms:Decrypt", "kms:ReEncrypt*", "kms:GenerateDataKey*", "kms:DescribeKey"],
                "Resource": "*",
                "Condition": {
                    "StringEquals": {"kms:CallerAccount": account_id, "kms:ViaService": f"s3.{region}.amazonaws.com"},
                    "ArnLike": {"aws:PrincipalArn": f"arn:{partition}:iam::{account_id}:{FSX_S3_ROLE_PATH}"},
                },
            },
        ],
    }


def lifecycle_rules(spec: BucketsSpec) -> list[aws.s3.BucketLifecycleConfigurationRuleArgs]:
    """Expire old versions (keeping the newest few), drop expired delete markers, abort stale uploads."""
    return [
        aws.s3.BucketLifecycleConfigurationRuleArgs(
            id="expire-noncurrent-versions",
            status="Enabled",
            filter=aws.s3.BucketLifecycleConfigurationRuleFilterArgs(prefix=""),
            noncurrent_version_expiration=aws.s3.BucketLifecycleConfigurationRuleNoncurrentVersionExpirationArgs(
                noncurrent_days=spec.noncurrent_version_expiration_days,
                newer_noncurrent_versions=spec.noncurrent_versions_kept or None,  # S3 refuses 0
            ),
            # Delete markers with no versions left behind them only slow down listings.
            expiration=aws.s3.BucketLifecycleConfigurationRuleExpirationArgs(expired_object_delete_marker=True),
        ),
        aws.s3.BucketLifecycleConfigurationRuleArgs(
            id="abort-incomplete-multipart-uploads",
            status="Enabled",
            filter=aws.s3.BucketLifecycleConfigurationRuleFilterArgs(prefix=""),
            abort_incomplete_multipart_upload=aws.s3.BucketLifecycleConfigurationRuleAbortIncompleteMultipartUploadArgs(
                days_after_initiation=spec.abort_incomplete_multipart_days,
            ),
        ),
    ]


def checkpoints_key_policy(account_id: str, partition: str) -> dict[str, Any]:
    """The checkpoints key's policy: users through IAM only (no service needs it outside S3)."""
    return {"Version": "2012-10-17", "Statement": [account_root_statement(partition, account_id)]}


@dataclass
class DataBucketsArgs:
    """Spec (from the validated config) and wiring for `DataBuckets`."""

    spec: BucketsSpec
    region: str
    """The stack's region: the partition of the key policy's ARNs and the S3 endpoint of its ViaService."""
    base_name: str
    """The stack's base name: the keys' aliases and descriptions are `<base_name>-data...` (physical names never come
    from the component's logical name, which stays fixed when `name` changes)."""
    protect: bool = False
    """Protect the buckets and the keys against deletion (prod)."""
    key_administrator_arns: Sequence[str] = ()
    """Key administrators besides the deploying principal (security.key_administrator_arns)."""
    vpc_endpoint_ids: Sequence[pulumi.Input[str]] = ()
    """S3 endpoints of the VPC; when given, object access from anywhere else is denied."""
    outside_vpc_role_arns: Sequence[str] = ()
    """Roles exempt from the VPC-only deny (security.outside_vpc_data_role_arns)."""
    checkpoint_lock: CheckpointLockSpec | None = None
    """Object Lock default retention for the checkpoints bucket."""


class DataBuckets(pulumi.ComponentResource):
    """The datasets and checkpoints buckets and the KMS key for training data.

    Children: `<name>-key` (+ `<name>-key-alias`), and per bucket role `<name>-<role>` with
    `-encryption`, `-versioning`, `-public-access-block`, `-policy` and `-lifecycle`.
    """

    kms_key_arn: pulumi.Output[str]
    """ARN of the data key (FSx `kms_key_id` and the datasets bucket's SSE-KMS)."""
    checkpoints_kms_key_arn: pulumi.Output[str]
    """ARN of the checkpoints key (the checkpoints bucket's SSE-KMS)."""
    datasets_bucket_name: pulumi.Output[str]
    """Name of the datasets bucket (linked to Lustre)."""
    datasets_bucket_arn: pulumi.Output[str]
    """ARN of the datasets bucket."""
    checkpoints_bucket_name: pulumi.Output[str]
    """Name of the checkpoints bucket."""
    checkpoints_bucket_arn: pulumi.Output[str]
    """ARN of the checkpoints bucket."""

    def __init__(self, name: str, args: DataBucketsArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("trainstack:storage:DataBuckets", name, None, opts)

        # The account id is only known to AWS (one invoke); partition and region come from the stack's region.
        partition = aws_partition(args.region)
        account_id = aws.get_caller_identity_output(opts=pulumi.InvokeOutputOptions(parent=self)).account_id
        self.key, self.checkpoints_key = self._keys(name, args, account_id, partition)
        keys = {"datasets": self.key, "checkpoints": self.checkpoints_key}
        extra = self._bucket_statements(args, account_id, partition, keys)

        self.buckets: dict[str, aws.s3.Bucket] = {
            role: secure_bucket(
                child_name(name, role),
                # Auto-named (logical name + random suffix): bucket names are global, no fixed name can collide.
                # Unprotected (dev, staging): force_destroy, so `pulumi destroy` empties the versioned bucket
                # instead of failing with BucketNotEmpty. Protected (prod): Pulumi refuses to delete it at all, and
                # force_destroy stays off so that even after `protect` is lifted a destroy cannot wipe the data.
                aws.s3.BucketArgs(force_destroy=not args.protect, tags={DATA_CLASS_TAG: role}),
                kms_key_arn=keys[role].arn,
                rules=lifecycle_rules(args.spec),
                parent=self,
                protect=args.protect,
                extra_statements=extra(role),
                object_lock=args.checkpoint_lock if role == "checkpoints" else None,
            )
            for role in BUCKET_ROLES
        }

        self.kms_key_arn = self.key.arn
        self.checkpoints_kms_key_arn = self.checkpoints_key.arn
        self.datasets_bucket_name = self.buckets["datasets"].bucket
        self.datasets_bucket_arn = self.buckets["datasets"].arn
        self.checkpoints_bucket_name = self.buckets["checkpoints"].bucket
        self.checkpoints_bucket_arn = self.buckets["checkpoints"].arn
        self.register_outputs(
            {
                "kms_key_arn": self.kms_key_arn,
                "checkpoints_kms_key_arn": self.checkpoints_kms_key_arn,
                "datasets_bucket_name": self.datasets_bucket_name,
                "datasets_bucket_arn": self.datasets_bucket_arn,
                "checkpoints_bucket_name": self.checkpoints_bucket_name,
                "checkpoints_bucket_arn": self.checkpoints_bucket_arn,
            }
        )

    def _keys(
        self, name: str, args: DataBucketsArgs, account_id: pulumi.Output[str], partition: str
    ) -> tuple[aws.kms.Key, aws.kms.Key]:
        """The datasets key (also FSx's) and the checkpoints key, each with its own policy."""
        key_policy = account_id.apply(lambda account: json.dumps(data_key_policy(account, partition, args.region)))
        # The logical name and alias of the data key predate the checkpoints key; FSx cannot change keys in place.
        label = f"{args.base_name}-data"
        datasets = customer_key(
            child_name(name, "key"),
            description=f"{label}: training datasets and FSx for Lustre",
            policy=key_policy,
            alias=label,
            parent=self,
            protect=args.protect,
            administrators=args.key_administrator_arns,
        )
        checkpoints = customer_key(
            child_name(name, "checkpoints-key"),
            description=f"{label}: model checkpoints",
            policy=account_id.apply(lambda account: json.dumps(checkpoints_key_policy(account, partition))),
            alias=f"{label}-checkpoints",
            parent=self,
            protect=args.protect,
            administrators=args.key_administrator_arns,
        )
        return datasets, checkpoints

    def _bucket_statements(
        self, args: DataBucketsArgs, account_id: pulumi.Output[str], partition: str, keys: dict[str, aws.kms.Key]
    ) -> Callable[[str], Callable[[pulumi.Output[str]], pulumi.Output[list[dict[str, Any]]]] | None]:
        """Per bucket role, what its policy adds to TLS-only (see `extra` below)."""
        exempt = account_id.apply(
            lambda account: [fsx_s3_role_pattern(partition, account), *args.outside_vpc_role_arns]
        )
        endpoints = pulumi.Output.all(*args.vpc_endpoint_ids)
        # Who may empty a force-destroy bucket from outside the VPC: the principals that may delete its key.
        destroyers = (
            deployer_arn(self).apply(lambda deployer: [deployer, *args.key_administrator_arns])
            if not args.protect
            else pulumi.Output.from_input([])
        )

        def vpc_only(arn: pulumi.Output[str]) -> pulumi.Output[list[dict[str, Any]]]:
            return pulumi.Output.all(arn, endpoints, exempt, destroyers).apply(
                lambda v: vpc_only_statements(v[0], v[1], v[2], v[3])
            )

        def extra(role: str) -> Callable[[pulumi.Output[str]], pulumi.Output[list[dict[str, Any]]]] | None:
            """The bucket's statements beyond TLS: VPC-only where endpoints are given; on the checkpoints bucket,
            uploads only under its own key (a checkpoint written under another key is one its readers cannot
            decrypt, or one outside the key's policy and Object Lock's audit trail)."""
            if role != "checkpoints":
                return vpc_only if args.vpc_endpoint_ids else None

            def statements(arn: pulumi.Output[str]) -> pulumi.Output[list[dict[str, Any]]]:
                fenced = vpc_only(arn) if args.vpc_endpoint_ids else pulumi.Output.from_input([])
                return pulumi.Output.all(fenced, arn, keys[role].arn).apply(
                    lambda v: [*own_key_statements(v[1], v[2]), *v[0]]
                )

            return statements

        return extra


def secure_bucket(
    name: str,
    bucket_args: aws.s3.BucketArgs,
    *,
    kms_key_arn: pulumi.Input[str] | None,
    rules: Sequence[aws.s3.BucketLifecycleConfigurationRuleArgs],
    parent: pulumi.Resource,
    protect: bool,
    extra_statements: Callable[[pulumi.Output[str]], pulumi.Output[list[dict[str, Any]]]] | None = None,
    object_lock: CheckpointLockSpec | None = None,
) -> aws.s3.Bucket:
    """A bucket with trainstack's baseline: SSE-KMS with a bucket key, versioning, all four public access
    blocks, a TLS-only policy and lifecycle `rules`. Every bucket in the stack is made here.

    `kms_key_arn` None encrypts with the AWS managed key (aws/s3); `extra_statements(bucket_arn)` adds bucket
    policy statements; `object_lock` turns on Object Lock with that default retention."""
    bucket = aws.s3.Bucket(name, bucket_args, opts=pulumi.ResourceOptions(parent=parent, protect=protect))
    child = pulumi.ResourceOptions(parent=parent)
    _default_encryption(name, bucket, kms_key_arn, child)
    versioning = aws.s3.BucketVersioning(
        child_name(name, "versioning"),
        aws.s3.BucketVersioningInitArgs(
            bucket=bucket.id,
            versioning_configuration=aws.s3.BucketVersioningVersioningConfigurationArgs(status="Enabled"),
        ),
        opts=child,
    )
    public_access = aws.s3.BucketPublicAccessBlock(
        child_name(name, "public-access-block"),
        aws.s3.BucketPublicAccessBlockArgs(
            bucket=bucket.id,
            block_public_acls=True,
            block_public_policy=True,
            ignore_public_acls=True,
            restrict_public_buckets=True,
        ),
        opts=child,
    )
    _tls_only_policy(name, bucket, extra_statements, parent, public_access)
    if object_lock is not None:
        aws.s3.BucketObjectLockConfiguration(
            child_name(name, "object-lock"),
            aws.s3.BucketObjectLockConfigurationInitArgs(
                bucket=bucket.id,
                object_lock_enabled="Enabled",
                rule=aws.s3.BucketObjectLockConfigurationRuleArgs(
                    default_retention=aws.s3.BucketObjectLockConfigurationRuleDefaultRetentionArgs(
                        mode=object_lock.mode.value, days=object_lock.retention_days
                    )
                ),
            ),
            # Object Lock needs versioning on first (S3 User Guide, "Enabling Object Lock on existing buckets").
            opts=pulumi.ResourceOptions(parent=parent, depends_on=[versioning], protect=protect),
        )
    aws.s3.BucketLifecycleConfiguration(
        child_name(name, "lifecycle"),
        aws.s3.BucketLifecycleConfigurationArgs(bucket=bucket.id, rules=list(rules)),
        # Noncurrent-version rules need versioning in place first (provider docs).
        opts=pulumi.ResourceOptions(parent=parent, depends_on=[versioning]),
    )
    return bucket


def _default_encryption(
    name: str, bucket: aws.s3.Bucket, kms_key_arn: pulumi.Input[str] | None, child: pulumi.ResourceOptions
) -> None:
    """SSE-KMS by default, with a bucket key (fewer KMS calls per object)."""
    aws.s3.BucketServerSideEncryptionConfiguration(
        child_name(name, "encryption"),
        aws.s3.BucketServerSideEncryptionConfigurationInitArgs(
            bucket=bucket.id,
            rules=[
                aws.s3.BucketServerSideEncryptionConfigurationRuleArgs(
                    apply_server_side_encryption_by_default=aws.s3.BucketServerSideEncryptionConfigurationRuleApplyServerSideEncryptionByDefaultArgs(
                        sse_algorithm="aws:kms",
                        kms_master_key_id=kms_key_arn,
                    ),
                    bucket_key_enabled=True,
                )
            ],
        ),
        opts=child,
    )


def _tls_only_policy(
    name: str,
    bucket: aws.s3.Bucket,
    extra_statements: Callable[[pulumi.Output[str]], pulumi.Output[list[dict[str, Any]]]] | None,
    parent: pulumi.Resource,
    public_access: aws.s3.BucketPublicAccessBlock,
) -> None:
    """The bucket policy: TLS only, plus the caller's statements."""
    aws.s3.BucketPolicy(
        child_name(name, "policy"),
        aws.s3.BucketPolicyArgs(
            bucket=bucket.id,
            policy=pulumi.Output.all(
                bucket.arn, extra_statements(bucket.arn) if extra_statements else pulumi.Output.from_input([])
            ).apply(lambda v: json.dumps(with_statements(tls_only_policy(v[0]), v[1]))),
        ),
        # S3 refuses policy writes racing the public access block update on the same bucket.
        opts=pulumi.ResourceOptions(parent=parent, depends_on=[public_access]),
    )

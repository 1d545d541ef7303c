"""DataBuckets under the recording mocks: encryption, versioning, public access, TLS, lifecycle, protection."""

import json

import pytest

from components.storage.buckets import (
    DATA_ACTIONS,
    EMPTYING_ACTIONS,
    READ_WRITE_ACTIONS,
    DataBuckets,
    DataBucketsArgs,
    fsx_s3_role_pattern,
    tls_only_policy,
)
from stacks.schema import BucketsSpec
from tests.component.helpers import aws_opts
from tests.conftest import run_component

REGION = "us-east-1"
SPEC = BucketsSpec(noncurrent_version_expiration_days=45, noncurrent_versions_kept=2, abort_incomplete_multipart_days=3)


def record(protect: bool = False, region: str = REGION):
    return run_component(
        lambda: DataBuckets(
            "data",
            DataBucketsArgs(spec=SPEC, region=region, base_name="trainstack-test", protect=protect),
            opts=aws_opts(),
        )
    )


@pytest.fixture(scope="module")
def protected():
    return record(protect=True)


def test_two_buckets_each_fully_configured(protected) -> None:
    buckets = protected.by_type("aws:s3/bucket:Bucket")
    assert sorted(b.name for b in buckets) == ["data-checkpoints", "data-datasets"]
    for kind in (
        "bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration",
        "bucketVersioning:BucketVersioning",
        "bucketPublicAccessBlock:BucketPublicAccessBlock",
        "bucketPolicy:BucketPolicy",
        "bucketLifecycleConfiguration:BucketLifecycleConfiguration",
    ):
        assert len(protected.by_type(f"aws:s3/{kind}")) == 2, kind


def test_sse_kms_with_a_separate_key_per_data_class(protected) -> None:
    keys = {k.name.rsplit("-", 1)[0].removesuffix("-checkpoints"): k for k in protected.by_type("aws:kms/key:Key")}
    arns = {key.outputs["arn"] for key in protected.by_type("aws:kms/key:Key")}
    sse_type = "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration"
    used = []
    for sse in protected.by_type(sse_type):
        [rule] = sse.inputs["rules"]
        assert rule["bucketKeyEnabled"] is True
        assert rule["applyServerSideEncryptionByDefault"]["sseAlgorithm"] == "aws:kms"
        used.append(rule["applyServerSideEncryptionByDefault"]["kmsMasterKeyId"])
    # Datasets and checkpoints: two buckets, two different customer keys.
    assert len(keys) >= 1 and len(used) == 2 and set(used) == arns and len(set(used)) == 2


def test_versioning_and_public_access_block(protected) -> None:
    for v in protected.by_type("aws:s3/bucketVersioning:BucketVersioning"):
        assert v.inputs["versioningConfiguration"]["status"] == "Enabled"
    for block in protected.by_type("aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock"):
        flags = ("blockPublicAcls", "blockPublicPolicy", "ignorePublicAcls", "restrictPublicBuckets")
        assert all(block.inputs[f] is True for f in flags)


def test_bucket_policy_denies_plain_http(protected) -> None:
    for policy in protected.by_type("aws:s3/bucketPolicy:BucketPolicy"):
        statement, *others = json.loads(policy.inputs["policy"])["Statement"]
        assert statement["Effect"] == "Deny" and statement["Action"] == "s3:*"
        assert statement["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
        assert statement["Resource"][1] == statement["Resource"][0] + "/*"
        # Beyond TLS (no VPC endpoints given here): only the checkpoints bucket's own-key denies.
        sids = [s["Sid"] for s in others]
        assert sids == (["DenyUploadUnderAnotherKey", "DenyUploadWithoutKms"] if "checkpoints" in policy.name else [])


def test_checkpoint_uploads_naming_another_encryption_are_denied(protected) -> None:
    [policy] = [p for p in protected.by_type("aws:s3/bucketPolicy:BucketPolicy") if "checkpoints" in p.name]
    statements = {s["Sid"]: s for s in json.loads(policy.inputs["policy"])["Statement"]}
    key = statements["DenyUploadUnderAnotherKey"]
    assert key["Action"] == "s3:PutObject" and key["Resource"].endswith("/*")
    header = "s3:x-amz-server-side-encryption-aws-kms-key-id"
    # Only when the header is there: an upload relying on the bucket's default (this key) is untouched.
    assert key["Condition"]["Null"] == {header: "false"}
    assert key["Condition"]["StringNotEquals"][header].startswith("arn:aws:kms:")
    kms = statements["DenyUploadWithoutKms"]["Condition"]
    assert kms == {
        "Null": {"s3:x-amz-server-side-encryption": "false"},
        "StringNotEquals": {"s3:x-amz-server-side-encryption": "aws:kms"},
    }


def test_lifecycle_rules_from_spec(protected) -> None:
    for lifecycle in protected.by_type("aws:s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration"):
        rules = {r["id"]: r for r in lifecycle.inputs["rules"]}
        expire = rules["expire-noncurrent-versions"]["noncurrentVersionExpiration"]
        assert expire == {"noncurrentDays": 45, "newerNoncurrentVersions": 2}
        abort = rules["abort-incomplete-multipart-uploads"]["abortIncompleteMultipartUpload"]
        assert abort == {"daysAfterInitiation": 3}
        assert all(r["status"] == "Enabled" for r in rules.values())


def _data_key(recording):
    return next(k for k in recording.by_type("aws:kms/key:Key") if not k.name.endswith("checkpoints-key"))


def test_key_rotates_with_an_explicit_policy(protected) -> None:
    key = _data_key(protected)
    assert key.inputs["enableKeyRotation"] is True
    statements = {s["Sid"]: s for s in json.loads(key.inputs["policy"])["Statement"]}
    assert statements["AccountUsesKeyThroughIam"]["Principal"] == {"AWS": "arn:aws:iam::123456789012:root"}
    assert "kms:*" not in statements["AccountUsesKeyThroughIam"]["Action"]
    # Administration is separate: the deploying principal administers, nobody else may delete the key.
    deny = statements["DenyDestructionExceptAdministrators"]
    assert deny["Effect"] == "Deny" and set(deny["Action"]) == {"kms:ScheduleKeyDeletion", "kms:PutKeyPolicy"}
    assert deny["Condition"]["ArnNotEquals"]["aws:PrincipalArn"] == statements["KeyAdministrators"]["Principal"]["AWS"]
    fsx = statements["AllowFsxDataRepositoryThroughS3"]["Condition"]
    assert fsx["StringEquals"]["kms:ViaService"] == "s3.us-east-1.amazonaws.com"


def test_key_policy_partition_and_endpoint_follow_the_stack_region() -> None:
    # The mocks answer `aws` to the partition data source: only a partition derived from the region passes.
    key = _data_key(record(region="cn-north-1"))
    statements = {s["Sid"]: s for s in json.loads(key.inputs["policy"])["Statement"]}
    assert statements["AccountUsesKeyThroughIam"]["Principal"] == {"AWS": "arn:aws-cn:iam::123456789012:root"}
    fsx = statements["AllowFsxDataRepositoryThroughS3"]["Condition"]
    assert fsx["ArnLike"]["aws:PrincipalArn"].startswith("arn:aws-cn:iam::123456789012:role/aws-service-role/")


def test_prod_protects_key_and_buckets_only_when_asked(protected) -> None:
    data_types = ("aws:s3/bucket:Bucket", "aws:kms/key:Key")
    assert all(r.protect for t in data_types for r in protected.by_type(t))
    unprotected = record(protect=False)
    assert not any(r.protect for r in unprotected.resources)


def test_tls_policy_is_pure() -> None:
    assert tls_only_policy("arn:aws:s3:::b")["Statement"][0]["Resource"] == ["arn:aws:s3:::b", "arn:aws:s3:::b/*"]


VPCE = "vpce-0a1b2c3d4e5f67890"
ADMIN = "arn:aws:iam::123456789012:role/ml-platform-admin"
INGEST = "arn:aws:iam::123456789012:role/ingest"
DEPLOYER = "arn:aws:iam::123456789012:user/offline-plan"  # the mocks' caller: its session issuer is itself


def vpc_only(protect: bool):
    return run_component(
        lambda: DataBuckets(
            "data",
            DataBucketsArgs(
                spec=SPEC,
                region=REGION,
                base_name="trainstack-test",
                protect=protect,
                key_administrator_arns=[ADMIN],
                vpc_endpoint_ids=[VPCE],
                outside_vpc_role_arns=[INGEST],
            ),
            opts=aws_opts(),
        )
    )


@pytest.mark.parametrize("protect", [False, True])
def test_vpc_only_deny_exempts_the_destroyers_from_emptying_calls_only(protect: bool) -> None:
    for policy in vpc_only(protect).by_type("aws:s3/bucketPolicy:BucketPolicy"):
        statements = {s["Sid"]: s for s in json.loads(policy.inputs["policy"])["Statement"]}
        reads, empties = statements["DenyDataAccessOutsideVpc"], statements["DenyEmptyingOutsideVpc"]
        assert (tuple(reads["Action"]), tuple(empties["Action"])) == (READ_WRITE_ACTIONS, EMPTYING_ACTIONS)
        for statement in (reads, empties):
            assert statement["Condition"]["StringNotEqualsIfExists"] == {"aws:SourceVpce": [VPCE]}
        fsx = fsx_s3_role_pattern("aws", "123456789012")
        assert reads["Condition"]["ArnNotLike"] == {"aws:PrincipalArn": sorted([fsx, INGEST])}
        # A force-destroy bucket (unprotected) is emptied by `pulumi destroy` from outside the VPC; a protected
        # one never is, so nobody more is exempt there.
        destroyers = [] if protect else [DEPLOYER, ADMIN]
        assert empties["Condition"]["ArnNotLike"] == {"aws:PrincipalArn": sorted({fsx, INGEST, *destroyers})}


def test_every_object_action_is_denied_outside_the_vpc() -> None:
    assert set(READ_WRITE_ACTIONS) | set(EMPTYING_ACTIONS) == set(DATA_ACTIONS)
    assert not set(READ_WRITE_ACTIONS) & set(EMPTYING_ACTIONS)

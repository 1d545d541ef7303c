"""The SageMaker policy documents: what each statement allows, on what, and nothing broader."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from components.sagemaker.sagemaker_roles import (
    ENI_MUTATE_ACTIONS,
    SAGEMAKER_PRINCIPAL,
    VpcScope,
    hyperpod_execution_policy,
    sagemaker_trust_policy,
    training_job_policy,
)

ACCOUNT = "123456789012"
EKS_ARN = f"arn:aws:eks:us-east-1:{ACCOUNT}:cluster/trainstack-staging"
KEY_ARN = f"arn:aws:kms:us-east-1:{ACCOUNT}:key/0c6f0e4e-1111-2222-3333-444455556666"
LIFECYCLE = "arn:aws:s3:::sagemaker-trainstack-staging-lc-abc"
DATASETS = "arn:aws:s3:::trainstack-staging-datasets-1"
CHECKPOINTS = "arn:aws:s3:::trainstack-staging-checkpoints-1"
FSX = f"arn:aws:fsx:us-east-1:{ACCOUNT}:file-system/fs-0123456789abcdef0"
SCOPE = VpcScope("vpc-0a1", ["subnet-0gpu"], ["sg-0efa", "sg-0work"])
REGIONAL = f"arn:aws:ec2:us-east-1:{ACCOUNT}"
# The only actions that may name Resource "*": they support no resource-level permissions.
UNSCOPABLE = {
    "ec2:DescribeDhcpOptions",
    "ec2:DescribeNetworkInterfaces",
    "ec2:DescribeSecurityGroups",
    "ec2:DescribeSubnets",
    "ec2:DescribeVpcs",
    "ecr:GetAuthorizationToken",
    "fsx:DescribeFileSystems",
}


def hyperpod(**overrides: Any) -> dict[str, Any]:
    kwargs: dict[str, Any] = {
        "partition": "aws",
        "region": "us-east-1",
        "account_id": ACCOUNT,
        "lifecycle_bucket_arn": LIFECYCLE,
        "lifecycle_prefix": "hyperpod/lifecycle/trainstack-staging-hyperpod/0123456789abcdef",
        "scope": SCOPE,
        "eks_cluster_arn": EKS_ARN,
        "kms_key_arn": KEY_ARN,
    }
    return hyperpod_execution_policy(**(kwargs | overrides))


def training(**overrides: Any) -> dict[str, Any]:
    kwargs: dict[str, Any] = {
        "partition": "aws",
        "region": "us-east-1",
        "account_id": ACCOUNT,
        "datasets_bucket_arn": DATASETS,
        "checkpoints_bucket_arn": CHECKPOINTS,
        "checkpoints_prefix": "research",
        "scope": SCOPE,
        "fsx_arn": FSX,
        "kms_key_arn": KEY_ARN,
    }
    return training_job_policy(**(kwargs | overrides))


def grants(document: dict[str, Any]) -> dict[str, set[str]]:
    """action -> every resource it is allowed on."""
    out: dict[str, set[str]] = {}
    for statement in document["Statement"]:
        if statement["Effect"] == "Deny":
            continue
        assert statement["Effect"] == "Allow"
        for action in statement["Action"]:
            out.setdefault(action, set()).update(statement["Resource"])
    return out


def assert_least_privilege(document: dict[str, Any]) -> None:
    for statement in document["Statement"]:
        for action in statement["Action"]:
            assert "*" not in action, f"wildcard action {action}"
            if statement["Effect"] == "Allow" and "*" in statement["Resource"]:
                assert action in UNSCOPABLE, f"{action} on every resource"
    sids = [s["Sid"] for s in document["Statement"]]
    assert len(sids) == len(set(sids))


def test_hyperpod_policy_is_least_privilege() -> None:
    assert_least_privilege(hyperpod())
    assert_least_privilege(hyperpod(eks_cluster_arn=None, kms_key_arn=None))


def test_hyperpod_reads_only_its_lifecycle_prefix() -> None:
    document = hyperpod()
    allowed = grants(document)
    prefix = "hyperpod/lifecycle/trainstack-staging-hyperpod/0123456789abcdef"
    assert allowed["s3:GetObject"] == {f"{LIFECYCLE}/{prefix}/*"}
    assert allowed["s3:ListBucket"] == {LIFECYCLE}
    [listing] = [s for s in document["Statement"] if s["Sid"] == "LifecycleList"]
    assert listing["Condition"] == {"StringLike": {"s3:prefix": [prefix, f"{prefix}/*"]}}
    assert not {a for a in allowed if a.startswith("s3:") and a not in ("s3:GetObject", "s3:ListBucket")}


ROOT = "hyperpod/lifecycle/trainstack-staging-hyperpod"


def test_hyperpod_denies_every_s3_read_outside_its_cluster_lifecycle_root() -> None:
    denies = {s["Sid"]: s for s in hyperpod(lifecycle_root=ROOT)["Statement"] if s["Effect"] == "Deny"}
    assert denies["DenyReadOutsideLifecycle"]["NotResource"] == [f"{LIFECYCLE}/{ROOT}/*"]
    assert set(denies["DenyReadOutsideLifecycle"]["Action"]) == {"s3:GetObject", "s3:GetObjectVersion"}
    assert denies["DenyListOtherBuckets"] == {
        "Sid": "DenyListOtherBuckets",
        "Effect": "Deny",
        "Action": ["s3:ListBucket"],
        "NotResource": [LIFECYCLE],
    }
    # Without a root the deny is as narrow as the allow: the one bundle.
    [narrow] = [s for s in hyperpod()["Statement"] if s["Sid"] == "DenyReadOutsideLifecycle"]
    assert narrow["NotResource"] == [f"{LIFECYCLE}/{ROOT}/0123456789abcdef/*"]


def test_a_lifecycle_prefix_outside_its_root_is_refused() -> None:
    with pytest.raises(ValueError, match="is not under lifecycle root 'hyperpod/lifecycle/other'"):
        hyperpod(lifecycle_root="hyperpod/lifecycle/other")
    with pytest.raises(ValueError, match="not under"):  # a sibling whose name merely starts like the root
        hyperpod(lifecycle_root=ROOT[:-1])


def test_the_deny_beats_the_managed_policy_on_a_repointed_source() -> None:
    """The managed policy reads every sagemaker-* bucket; with the inline deny beside it, a bucket an attacker
    opened to everyone is unreadable, and the stack's own bundle still reads (the real evaluator decides)."""
    from trainstack.journeys.access import HYPERPOD_MANAGED_S3, REPOINTED_POLICY
    from trainstack.journeys.iam import Policy, decide, request

    role = f"arn:aws:iam::{ACCOUNT}:role/trainstack-staging-hyperpod-exec"
    inline = Policy.of("inline", hyperpod(lifecycle_root=ROOT))

    def reads(identity: tuple[Policy, ...], resource: str, policy: Policy | None) -> bool:
        ask = request(role, identity, "s3:GetObject", resource, resource_account=ACCOUNT, resource_policy=policy)
        return decide(ask).allowed

    evil = "arn:aws:s3:::sagemaker-repointed-source/on_create.sh"
    assert reads((HYPERPOD_MANAGED_S3,), evil, REPOINTED_POLICY)  # the managed policy alone: the HIGH
    assert not reads((inline, HYPERPOD_MANAGED_S3), evil, REPOINTED_POLICY)
    assert not reads((inline, HYPERPOD_MANAGED_S3), f"{LIFECYCLE}/elsewhere/on_create.sh", None)
    assert reads((inline, HYPERPOD_MANAGED_S3), f"{LIFECYCLE}/{ROOT}/0123456789abcdef/on_create.sh", None)


def test_hyperpod_eks_statements_name_the_one_cluster() -> None:
    allowed = grants(hyperpod())
    assert allowed["eks:DescribeCluster"] == {EKS_ARN}
    assert allowed["eks-auth:AssumeRoleForPodIdentity"] == {EKS_ARN}
    assert allowed["ecr:BatchGetImage"] == {"arn:aws:ecr:us-east-1:*:repository/*"}
    assert "ec2:AssignPrivateIpAddresses" in allowed  # the VPC CNI on the nodes


def test_hyperpod_on_slurm_gets_no_eks_ecr_or_cni_actions() -> None:
    allowed = grants(hyperpod(eks_cluster_arn=None))
    assert not {a for a in allowed if a.startswith(("eks", "ecr:"))}
    assert "ec2:AssignPrivateIpAddresses" not in allowed
    assert set(ENI_MUTATE_ACTIONS) <= set(allowed)
    # AWS's Slurm execution-role templates grant DetachNetworkInterface too (it needs the instance as well).
    assert allowed["ec2:DetachNetworkInterface"] == {
        f"{REGIONAL}:network-interface/*",
        f"{REGIONAL}:instance/*",
        f"{REGIONAL}:security-group/sg-0efa",
        f"{REGIONAL}:security-group/sg-0work",
    }


def test_ebs_volume_grants_only_on_the_data_key_and_only_for_aws_resources() -> None:
    for document in (hyperpod(), hyperpod(eks_cluster_arn=None)):
        allowed = grants(document)
        assert allowed["kms:CreateGrant"] == allowed["kms:DescribeKey"] == {KEY_ARN}
        [grant] = [s for s in document["Statement"] if "kms:CreateGrant" in s["Action"]]
        assert grant["Action"] == ["kms:CreateGrant"]  # alone: the condition must not narrow DescribeKey
        assert grant["Condition"] == {"Bool": {"kms:GrantIsForAWSResource": "true"}}
    assert "kms:CreateGrant" not in grants(hyperpod(kms_key_arn=None))


def test_network_interfaces_only_in_the_cluster_vpc() -> None:
    for document in (hyperpod(), hyperpod(eks_cluster_arn=None), training()):
        statements = {s["Sid"]: s for s in document["Statement"]}
        create = statements["VpcCreateInterfaces"]
        # New interfaces: only in the configured subnets with the configured groups (no ec2:Vpc on creation).
        assert create["Action"] == ["ec2:CreateNetworkInterface"] and "Condition" not in create
        assert set(create["Resource"]) == {
            f"{REGIONAL}:network-interface/*",
            f"{REGIONAL}:subnet/subnet-0gpu",
            f"{REGIONAL}:security-group/sg-0efa",
            f"{REGIONAL}:security-group/sg-0work",
        }
        # Existing interfaces: only those in the VPC.
        for sid in ("VpcManageInterfaces", "TagNetworkInterfaces"):
            assert statements[sid]["Condition"] == {"ArnEqualsIfExists": {"ec2:Vpc": f"{REGIONAL}:vpc/vpc-0a1"}}, sid
        assert "ec2:DeleteNetworkInterface" in statements["VpcManageInterfaces"]["Action"]


def test_the_grant_condition_stops_a_grant_to_anyone() -> None:
    """With the real evaluator: EBS's grant passes, a grant the role's holder asks for itself does not."""
    from trainstack.journeys.iam import Policy, decide, request

    role = f"arn:aws:iam::{ACCOUNT}:role/trainstack-staging-hyperpod-exec"
    inline = Policy.of("inline", hyperpod())

    # The key policy delegates to the account's IAM (KMS Developer Guide, default key policy).
    key_policy = Policy.of(
        "key policy",
        {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Effect": "Allow",
                    "Principal": {"AWS": f"arn:aws:iam::{ACCOUNT}:root"},
                    "Action": "kms:*",
                    "Resource": "*",
                }
            ],
        },
    )

    def grant(for_aws_resource: str) -> bool:
        context = {"kms:GrantIsForAWSResource": for_aws_resource}
        ask = request(
            role,
            (inline,),
            "kms:CreateGrant",
            KEY_ARN,
            resource_account=ACCOUNT,
            context=context,
            resource_policy=key_policy,
        )
        return decide(ask).allowed

    assert grant("true") and not grant("false")


def test_kms_decrypt_only_on_the_given_key() -> None:
    assert grants(hyperpod())["kms:Decrypt"] == {KEY_ARN}
    assert "kms:Decrypt" not in grants(hyperpod(kms_key_arn=None))


def test_network_interface_actions_stay_in_account_and_region() -> None:
    for document in (hyperpod(), training()):
        allowed = grants(document)
        for action in ENI_MUTATE_ACTIONS:
            assert all(r.startswith(f"arn:aws:ec2:us-east-1:{ACCOUNT}:") for r in allowed[action]), action


def test_training_job_reads_datasets_and_writes_checkpoints_only() -> None:
    document = training()
    assert_least_privilege(document)
    allowed = grants(document)
    # One team's prefix: the role of research cannot overwrite pretraining's checkpoints.
    assert allowed["s3:PutObject"] == {f"{CHECKPOINTS}/research/*"}
    assert allowed["s3:DeleteObject"] == {f"{CHECKPOINTS}/research/*"}
    assert allowed["s3:GetObject"] == {f"{DATASETS}/*", f"{CHECKPOINTS}/research/*"}
    assert allowed["s3:ListBucket"] == {DATASETS, CHECKPOINTS}
    [listing] = [s for s in document["Statement"] if s["Sid"] == "ListOwnCheckpoints"]
    assert listing["Condition"] == {"StringLike": {"s3:prefix": ["research", "research/*"]}}
    assert grants(training(checkpoints_prefix="/pretraining/"))["s3:PutObject"] == {f"{CHECKPOINTS}/pretraining/*"}

    assert allowed["fsx:DescribeFileSystems"] == {"*"}  # no resource-level permission (Service Authorization Reference)
    assert allowed["kms:GenerateDataKey"] == allowed["kms:Decrypt"] == {KEY_ARN}
    log_group = f"arn:aws:logs:us-east-1:{ACCOUNT}:log-group:/aws/sagemaker/TrainingJobs"
    assert allowed["logs:PutLogEvents"] == {f"{log_group}:log-stream:*"}
    assert {"ecr:BatchGetImage", "ecr:GetAuthorizationToken", "ec2:CreateNetworkInterface"} <= set(allowed)


@pytest.mark.parametrize("prefix", ["", "/"])
def test_training_job_refuses_the_whole_bucket(prefix: str) -> None:
    with pytest.raises(ValueError, match="whole bucket"):
        training(checkpoints_prefix=prefix)


def test_training_job_without_fsx_or_key_drops_those_statements() -> None:
    allowed = grants(training(fsx_arn=None, kms_key_arn=None))
    assert not {a for a in allowed if a.startswith(("fsx:", "kms:"))}


CHECKPOINTS_KEY = f"arn:aws:kms:us-east-1:{ACCOUNT}:key/9f6f0e4e-1111-2222-3333-444455556666"


def test_training_job_uses_the_checkpoints_key_through_s3_only() -> None:
    # Without it S3 refuses every checkpoint a job writes: the bucket encrypts with this key, with the job's
    # permissions (the SageMaker training journey's "encrypts checkpoints" step).
    [statement] = [
        s for s in training(checkpoints_kms_key_arn=CHECKPOINTS_KEY)["Statement"] if s["Sid"] == "CheckpointsKey"
    ]
    assert statement["Action"] == ["kms:Decrypt", "kms:GenerateDataKey"]
    assert statement["Resource"] == [CHECKPOINTS_KEY]
    assert statement["Condition"] == {"StringEquals": {"kms:ViaService": "s3.us-east-1.amazonaws.com"}}
    assert "CheckpointsKey" not in json.dumps(training())  # no key given, no statement
    eu = training(region="eu-west-1", checkpoints_kms_key_arn=CHECKPOINTS_KEY)
    assert "s3.eu-west-1.amazonaws.com" in json.dumps(eu)


@given(
    st.from_regex(r"[a-z0-9][a-z0-9-]{2,40}[a-z0-9]", fullmatch=True),
    st.from_regex(r"[a-z0-9-]{1,20}(/[a-z0-9-]{1,20}){0,3}", fullmatch=True),
)
def test_lifecycle_read_never_escapes_the_prefix(bucket: str, prefix: str) -> None:
    document = hyperpod(lifecycle_bucket_arn=f"arn:aws:s3:::{bucket}", lifecycle_prefix=f"/{prefix}/")
    [resource] = grants(document)["s3:GetObject"]
    assert resource == f"arn:aws:s3:::{bucket}/{prefix}/*"
    assert_least_privilege(document)


def test_trust_policies_always_guard_against_confused_deputies() -> None:
    [account_only] = sagemaker_trust_policy(ACCOUNT)["Statement"]
    assert account_only == {
        "Effect": "Allow",
        "Principal": {"Service": SAGEMAKER_PRINCIPAL},
        "Action": "sts:AssumeRole",
        "Condition": {"StringEquals": {"aws:SourceAccount": ACCOUNT}},
    }


def test_the_login_role_decrypts_only_through_s3_for_the_lifecycle_bucket() -> None:
    """Root on a login node holds the login role's credentials: the data key only when S3 reads the scripts."""
    from trainstack.journeys.iam import Policy, decide, request

    login = hyperpod(eks_cluster_arn=None, login=True)
    role = f"arn:aws:iam::{ACCOUNT}:role/trainstack-staging-hyperpod-login"
    key_policy = Policy.of(
        "key policy",
        {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Effect": "Allow",
                    "Principal": {"AWS": f"arn:aws:iam::{ACCOUNT}:root"},
                    "Action": "kms:*",
                    "Resource": "*",
                }
            ],
        },
    )

    def decrypt(document: dict[str, Any], context: dict[str, str]) -> bool:
        ask = request(
            role,
            (Policy.of("inline", document),),
            "kms:Decrypt",
            KEY_ARN,
            resource_account=ACCOUNT,
            context=context,
            resource_policy=key_policy,
        )
        return decide(ask).allowed

    via_s3 = {"kms:ViaService": "s3.us-east-1.amazonaws.com"}
    bucket_key = via_s3 | {"kms:EncryptionContext:aws:s3:arn": LIFECYCLE}
    prefix = "hyperpod/lifecycle/trainstack-staging-hyperpod/0123456789abcdef"
    script = via_s3 | {"kms:EncryptionContext:aws:s3:arn": f"{LIFECYCLE}/{prefix}/on_create.sh"}
    assert decrypt(login, bucket_key) and decrypt(login, script)
    assert not decrypt(login, {})  # directly: the workers' role may, the login role may not
    assert not decrypt(login, via_s3 | {"kms:EncryptionContext:aws:s3:arn": DATASETS})  # the datasets, through S3
    assert not decrypt(login, bucket_key | {"kms:ViaService": "ec2.us-east-1.amazonaws.com"})
    assert decrypt(hyperpod(eks_cluster_arn=None), {})  # the execution role's own grant stays as it was
    # Everything else a node needs is the execution role's: lifecycle read, interfaces, EBS grants.
    others = {s["Sid"] for s in login["Statement"]} - {"LifecycleDecrypt"}
    assert others == {s["Sid"] for s in hyperpod(eks_cluster_arn=None)["Statement"]} - {"LifecycleDecrypt"}


def test_a_login_role_takes_no_eks_cluster() -> None:
    with pytest.raises(ValueError, match="login nodes exist only with the Slurm orchestrator"):
        hyperpod(login=True)

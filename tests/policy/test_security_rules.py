"""The cross-area security rules (policies/rules/security.py), each run alone through its decorator (the direct
harness in test_direct.py): one branch at a time, a not-applicable case requiring the skip."""

from __future__ import annotations

import json
from typing import Any

from policies.facts_generated import IAM_POLICY, IAM_ROLE, IAM_ROLE_POLICY, KMS_KEY, LOG_GROUP, SNS_TOPIC
from policies.rules.security import (
    iam_grants_and_interfaces_scoped,
    iam_no_star_star,
    irsa_trust_scoped,
    kms_rotation,
    telemetry_encrypted,
)
from tests.policy.test_direct import judge_resource, judge_stack, resource

OIDC = "arn:aws:iam::111122223333:oidc-provider/oidc.eks.us-east-1.amazonaws.com/id/EXAMPLE"
SAML = "arn:aws:iam::111122223333:saml-provider/corp"


def _policy(*statements: dict[str, Any]) -> str:
    return json.dumps({"Version": "2012-10-17", "Statement": list(statements)})


ADMIN = {"Sid": "All", "Effect": "Allow", "Action": "*", "Resource": "*"}


def test_a_role_without_inline_policies_is_not_judged_for_admin_statements() -> None:
    assert judge_resource(iam_no_star_star, IAM_ROLE, {"assumeRolePolicy": _policy()}).skipped


def test_an_admin_statement_is_reported_in_a_roles_inline_policy_and_in_a_managed_one() -> None:
    role = judge_resource(iam_no_star_star, IAM_ROLE, {"inlinePolicies": [{"name": "p", "policy": _policy(ADMIN)}]})
    assert role.skipped is None and role.messages == ["inlinePolicies[p]: statement 'All' allows ['*'] on '*'."]
    managed = judge_resource(iam_no_star_star, IAM_POLICY, {"policy": _policy(ADMIN)})
    assert managed.skipped is None and managed.messages == ["policy: statement 'All' allows ['*'] on '*'."]


def test_a_web_identity_trust_naming_an_oidc_provider_among_others_is_judged() -> None:
    """One statement may federate several providers; it trusts the cluster's OIDC provider if any is one."""
    trust = {"Effect": "Allow", "Action": "sts:AssumeRoleWithWebIdentity", "Principal": {"Federated": [SAML, OIDC]}}
    verdict = judge_resource(irsa_trust_scoped, IAM_ROLE, {"assumeRolePolicy": _policy(trust)})
    assert verdict.skipped is None and len(verdict.messages) == 2  # neither :sub nor :aud pinned


def test_a_trust_of_another_identity_provider_only_is_not_judged() -> None:
    trust = {"Effect": "Allow", "Action": "sts:AssumeRoleWithWebIdentity", "Principal": {"Federated": [SAML]}}
    assert judge_resource(irsa_trust_scoped, IAM_ROLE, {"assumeRolePolicy": _policy(trust)}).skipped


def test_a_key_bypassing_the_lockout_check_is_reported_even_when_it_rotates() -> None:
    props = {"bypassPolicyLockoutSafetyCheck": True, "enableKeyRotation": True}
    assert judge_resource(kms_rotation, KMS_KEY, props).messages == [
        "bypassPolicyLockoutSafetyCheck is true: a bad key policy could lock everyone out of the key."
    ]
    assert judge_resource(kms_rotation, KMS_KEY, {"enableKeyRotation": True}).reports == []


def test_a_role_policy_granting_neither_grants_nor_interface_actions_is_not_judged() -> None:
    read = {"Effect": "Allow", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::b/*"}
    assert judge_resource(iam_grants_and_interfaces_scoped, IAM_ROLE_POLICY, {"policy": _policy(read)}).skipped


def test_a_log_group_encrypted_with_a_key_from_outside_the_stack_is_named_as_such() -> None:
    """Its key is no key of this stack: no key policy here can be read, which is its own finding."""
    group = resource(LOG_GROUP, "logs", {"name": "/x/logs", "kmsKeyId": "arn:aws:kms:us-east-1:1:key/outside"})
    verdict = judge_stack(telemetry_encrypted, [group])
    assert verdict.messages == [
        "log group /x/logs: its key is not a key of this stack, so no key policy here says who may read it."
    ]


def test_a_key_statement_naming_the_logs_service_among_other_services_lets_it_use_the_key() -> None:
    """A key policy statement may name several service principals; the log group's service among them is enough."""
    name = "/aws/eks/prod/cluster"
    allow = {
        "Effect": "Allow",
        "Principal": {"Service": ["delivery.logs.amazonaws.com", "logs.us-east-1.amazonaws.com"]},
        "Action": ["kms:Encrypt*", "kms:Decrypt*", "kms:GenerateDataKey*"],
        "Resource": "*",
        "Condition": {"ArnLike": {"kms:EncryptionContext:aws:logs:arn": f"arn:aws:logs:us-east-1:1:log-group:{name}"}},
    }
    key = resource(KMS_KEY, "key", {"policy": _policy(allow)})
    group = resource(
        LOG_GROUP, "logs", {"name": name, "kmsKeyId": "arn:aws:kms:us-east-1:1:key/k"}, {"kmsKeyId": [key]}
    )
    assert judge_stack(telemetry_encrypted, [key, group]).reports == []
    allow["Principal"] = {"Service": ["delivery.logs.amazonaws.com"]}  # the logs service itself is not named
    key = resource(KMS_KEY, "key", {"policy": _policy(allow)})
    group = resource(
        LOG_GROUP, "logs", {"name": name, "kmsKeyId": "arn:aws:kms:us-east-1:1:key/k"}, {"kmsKeyId": [key]}
    )
    assert len(judge_stack(telemetry_encrypted, [key, group]).reports) == 1


# ------------------------------------------------------------------------------- each rule, branch by branch


def _star_star(statement: dict[str, Any]) -> list[str]:
    return judge_resource(iam_no_star_star, IAM_POLICY, {"policy": _policy(statement)}).messages


def test_only_an_allow_of_every_action_or_every_iam_action_on_every_resource_is_admin() -> None:
    assert _star_star({"Effect": "Allow", "Action": ["s3:GetObject", "iam:*"], "Resource": "*"})
    assert _star_star({"Action": "*:*", "Resource": ["arn:aws:s3:::b", "*"]})  # Effect defaults to Allow
    assert not _star_star({"Effect": "Deny", "Action": "*", "Resource": "*"})
    assert not _star_star({"Effect": "Allow", "Action": "*", "Resource": "arn:aws:s3:::b/*"})
    assert not _star_star({"Effect": "Allow", "Action": ["s3:*", "ec2:*"], "Resource": "*"})
    assert judge_resource(iam_no_star_star, IAM_POLICY, {}).reports == []  # no document yet: nothing to judge


def _web_identity(equals: dict[str, Any]) -> list[str]:
    trust = {
        "Effect": "Allow",
        "Action": "sts:AssumeRoleWithWebIdentity",
        "Principal": {"Federated": OIDC},
        "Condition": {"StringEquals": equals},
    }
    return judge_resource(irsa_trust_scoped, IAM_ROLE, {"assumeRolePolicy": _policy(trust)}).messages


def test_a_web_identity_trust_names_one_service_account_and_the_audience() -> None:
    issuer = OIDC.split("oidc-provider/", 1)[1]
    sub, aud = f"{issuer}:sub", f"{issuer}:aud"
    assert _web_identity({sub: "system:serviceaccount:team:trainer", aud: "sts.amazonaws.com"}) == []
    assert _web_identity({sub: "system:serviceaccount:team:*", aud: "sts.amazonaws.com"}) == [
        f"the '{sub}' condition uses a wildcard; name the service account."
    ]
    assert _web_identity({aud: "sts.amazonaws.com"}) == [
        "the web-identity trust has no StringEquals condition on ':sub'."
    ]


def test_only_symmetric_keys_must_rotate() -> None:
    """Automatic rotation covers symmetric encryption keys only (KMS Developer Guide, rotating keys)."""
    assert judge_resource(kms_rotation, KMS_KEY, {}).messages == ["enableKeyRotation is not true."]
    assert judge_resource(kms_rotation, KMS_KEY, {"customerMasterKeySpec": "SYMMETRIC_DEFAULT"}).messages == [
        "enableKeyRotation is not true."
    ]
    assert judge_resource(kms_rotation, KMS_KEY, {"customerMasterKeySpec": "RSA_2048"}).reports == []


ENI_DELETE = "ec2:DeleteNetworkInterface"
IN_VPC = {"StringEquals": {"ec2:Vpc": "arn:aws:ec2:us-east-1:1:vpc/vpc-1"}}


def _scoped(*statements: dict[str, Any]) -> list[str]:
    verdict = judge_resource(iam_grants_and_interfaces_scoped, IAM_ROLE_POLICY, {"policy": _policy(*statements)})
    assert verdict.skipped is None
    return verdict.messages


def test_create_grant_only_for_aws_resources() -> None:
    grant = {"Sid": "Grant", "Effect": "Allow", "Action": "kms:CreateGrant", "Resource": "*"}
    assert _scoped(grant) == [
        "Grant allows kms:CreateGrant without kms:GrantIsForAWSResource: any grantee, any operation."
    ]
    assert _scoped({**grant, "Condition": {"Bool": {"kms:GrantIsForAWSResource": "true"}}}) == []
    assert _scoped({**grant, "Action": "kms:Create*", "Condition": {"Bool": {"kms:GrantIsForAWSResource": True}}}) == []


def test_actions_on_existing_interfaces_only_in_the_stacks_vpc() -> None:
    eni = {"Sid": "Eni", "Effect": "Allow", "Action": ["s3:GetObject", ENI_DELETE], "Resource": "*"}
    assert _scoped(eni) == [f"Eni allows {ENI_DELETE} without an ec2:Vpc condition: every interface of the account."]
    assert _scoped({**eni, "Condition": IN_VPC}) == []
    # a Deny of the same actions grants nothing, and is nothing to judge
    deny = {"Effect": "Deny", "Action": [ENI_DELETE, "kms:CreateGrant"], "Resource": "*"}
    assert judge_resource(iam_grants_and_interfaces_scoped, IAM_ROLE_POLICY, {"policy": _policy(deny)}).skipped


def test_new_interfaces_only_in_named_subnets_and_security_groups() -> None:
    create = {"Sid": "New", "Effect": "Allow", "Action": "ec2:CreateNetworkInterface"}
    subnet = "arn:aws:ec2:us-east-1:1:subnet/subnet-1"
    assert _scoped({**create, "Resource": [subnet, "arn:aws:ec2:us-east-1:1:security-group/sg-1"]}) == []
    assert _scoped({**create, "Resource": ["*"]}) == [
        "New allows ec2:CreateNetworkInterface on *: any subnet or security group."
    ]
    wide = "arn:aws:ec2:us-east-1:1:subnet/*"
    # judged once, also when the same statement grants an action on existing interfaces
    assert _scoped(
        {**create, "Action": ["ec2:CreateNetworkInterface", ENI_DELETE], "Resource": wide, "Condition": IN_VPC}
    ) == [f"New allows ec2:CreateNetworkInterface on {wide}: any subnet or security group."]


def test_telemetry_is_judged_for_topics_alone_and_skipped_without_logs_or_topics() -> None:
    assert judge_stack(telemetry_encrypted, []).skipped
    topic = resource(SNS_TOPIC, "alerts", {"name": "alerts"})
    verdict = judge_stack(telemetry_encrypted, [topic])
    assert verdict.skipped is None and verdict.messages == [
        "topic alerts is not encrypted with a customer-managed key."
    ]


def test_a_sub_condition_listing_a_wildcard_among_exact_accounts_is_a_wildcard() -> None:
    issuer = OIDC.split("oidc-provider/", 1)[1]
    sub = f"{issuer}:sub"
    accounts = ["system:serviceaccount:team:trainer", "system:serviceaccount:team:*"]
    assert _web_identity({sub: accounts, f"{issuer}:aud": "sts.amazonaws.com"}) == [
        f"the '{sub}' condition uses a wildcard; name the service account."
    ]


def test_a_key_statement_with_other_condition_blocks_is_read_by_its_context_block() -> None:
    """Conditions under other operators (here the caller's account) sit beside the encryption context."""
    name = "/aws/eks/prod/cluster"
    allow = {
        "Effect": "Allow",
        "Principal": {"Service": "logs.us-east-1.amazonaws.com"},
        "Action": "kms:Decrypt*",
        "Resource": "*",
        "Condition": {
            "StringEquals": {"aws:SourceAccount": "111122223333"},
            "ArnLike": {"kms:EncryptionContext:aws:logs:arn": f"arn:aws:logs:us-east-1:1:log-group:{name}"},
        },
    }
    key = resource(KMS_KEY, "key", {"policy": _policy(allow)})
    group = resource(LOG_GROUP, "logs", {"name": name, "kmsKeyId": "k"}, {"kmsKeyId": [key]})
    assert judge_stack(telemetry_encrypted, [key, group]).reports == []

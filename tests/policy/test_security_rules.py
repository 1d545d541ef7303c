"""The cross-area security rules (policies/rules/security.py), each run alone through its decorator (the direct
harness in test_direct.py): one branch at a time, a not-applicable case requiring the skip."""

from __future__ import annotations

import json
from typing import Any

from policies.facts_generated import IAM_POLICY, IAM_ROLE, IAM_ROLE_POLICY, KMS_KEY, LOG_GROUP
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

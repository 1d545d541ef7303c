"""The IAM evaluator the access journeys use (trainstack/journeys/iam.py, principalmapper's local simulation).

Three sources of cases, each cited:
- principalmapper's own tests at v1.1.5 (nccgroup/PMapper tests/test_local_policy_sim.py and
  tests/test_resource_policy_evaluation.py), restated as requests through this module's `decide`;
- the IAM User Guide, "Policy evaluation logic" (explicit deny; within one account either an identity or a
  resource policy allows; across accounts both must) and "IAM JSON policy elements: Condition operators" (each
  operator, `...IfExists`, negated operators on a missing key, the ForAnyValue set operator);
- the AWS KMS Developer Guide, "Default key policy" (a key policy must allow the account, or IAM policies do
  not count) and the AWS PrivateLink Guide, "Control access to VPC endpoints using endpoint policies".
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from trainstack.journeys.iam import (
    SUPPORTED_OPERATORS,
    Policy,
    UnsupportedPolicy,
    anyone_statements,
    decide,
    normalised,
    request,
)

ACCOUNT = "000000000000"
OTHER = "999999999999"
USER = f"arn:aws:iam::{ACCOUNT}:user/asdf1"
ROLE = f"arn:aws:iam::{ACCOUNT}:role/reader"
OBJECT = "arn:aws:s3:::bucket/object"
KEY = f"arn:aws:kms:us-east-1:{ACCOUNT}:key/1234abcd-12ab-34cd-56ef-1234567890ab"


def policy(*statements: dict[str, Any], label: str = "identity policy") -> Policy:
    return Policy.of(label, {"Version": "2012-10-17", "Statement": list(statements)})


def allow(action: Any, resource: Any = "*", **extra: Any) -> dict[str, Any]:
    return {"Effect": "Allow", "Action": action, "Resource": resource, **extra}


def allowed(
    identity: Policy | None,
    action: str,
    resource: str = OBJECT,
    *,
    principal: str = USER,
    context: dict[str, Any] | None = None,
    resource_policy: Policy | None = None,
    owner: str = ACCOUNT,
    endpoint: Policy | None = None,
) -> bool:
    return decide(
        request(
            principal,
            [identity] if identity else [],
            action,
            resource,
            resource_account=owner,
            context=context,
            resource_policy=resource_policy,
            endpoint_policy=endpoint,
        )
    ).allowed


# -------------------------------------------------------- principalmapper v1.1.5 tests/test_local_policy_sim.py


def test_action_matching_as_upstream() -> None:
    listed = policy(allow(["ec2:RunInstances", "s3:*", "iam:Get*"]))
    assert allowed(listed, "ec2:RunInstances") and allowed(listed, "s3:GetObject") and allowed(listed, "iam:GetRole")
    assert not allowed(listed, "ec2:DescribeInstances") and not allowed(listed, "iam:PutRolePolicy")
    assert allowed(policy(allow("*")), "iam:GetRole")
    assert not allowed(policy({"Effect": "Allow", "NotAction": "*", "Resource": "*"}), "iam:GetRole")
    not_listed = policy({"Effect": "Allow", "NotAction": ["iam:*", "s3:Put*"], "Resource": "*"})
    assert not allowed(not_listed, "iam:GetRole") and not allowed(not_listed, "s3:PutObject")
    assert allowed(not_listed, "ec2:RunInstances")


def test_resource_matching_with_wildcards_and_variables_as_upstream() -> None:
    resources = ["arn:aws:s3:::bucket/*", "arn:aws:s3:::*/object", "arn:aws:s3:::${aws:SourceAccount}/win"]
    listed = policy(allow("*", resources))
    assert allowed(listed, "s3:GetObject", "arn:aws:s3:::bucket/anything")
    assert allowed(listed, "s3:GetObject", "arn:aws:s3:::anything/object")
    assert allowed(listed, "s3:GetObject", f"arn:aws:s3:::{ACCOUNT}/win", context={"aws:SourceAccount": ACCOUNT})
    assert not allowed(listed, "s3:GetObject", f"arn:aws:s3:::{OTHER}/win", context={"aws:SourceAccount": ACCOUNT})
    excluded = policy({"Effect": "Allow", "Action": "*", "NotResource": resources})
    assert not allowed(excluded, "s3:GetObject", "arn:aws:s3:::bucket/anything")
    assert allowed(excluded, "s3:GetObject", "arn:aws:s3:::elsewhere/else")


def test_ip_address_condition_and_case_insensitive_keys_as_upstream() -> None:
    ranged = policy(allow("s3:GetObject", Condition={"IpAddress": {"aws:SourceIp": "128.223.0.0/16"}}))
    assert allowed(ranged, "s3:GetObject", context={"aws:SourceIp": "128.223.0.1"})
    assert allowed(ranged, "s3:GetObject", context={"aws:sourceip": "128.223.0.1"})  # keys are case-insensitive
    assert not allowed(ranged, "s3:GetObject", context={"aws:SourceIp": "10.0.0.1"})


def test_policy_variables_expand_as_upstream() -> None:
    own = policy(allow("s3:GetObject", "arn:aws:s3:::home/${aws:username}/*"))
    assert allowed(own, "s3:GetObject", "arn:aws:s3:::home/asdf1/notes", context={"aws:username": "asdf1"})
    assert not allowed(own, "s3:GetObject", "arn:aws:s3:::home/other/notes", context={"aws:username": "asdf1"})


# ------------------------------------------------- principalmapper v1.1.5 tests/test_resource_policy_evaluation.py

TRUST_SAME = policy(
    {"Effect": "Allow", "Principal": {"AWS": f"arn:aws:iam::{ACCOUNT}:root"}, "Action": "sts:AssumeRole"},
    label="trust policy",
)
TRUST_OTHER = policy(
    {"Effect": "Allow", "Principal": {"AWS": f"arn:aws:iam::{OTHER}:root"}, "Action": "sts:AssumeRole"},
    label="trust policy",
)
TARGET = f"arn:aws:iam::{ACCOUNT}:role/test1"


def test_assume_role_needs_the_trust_policy_and_the_identity_policy_as_upstream() -> None:
    may_assume, may_read = policy(allow("sts:AssumeRole")), policy(allow("s3:GetObject"))
    assert allowed(may_assume, "sts:AssumeRole", TARGET, resource_policy=TRUST_SAME)  # account root + IAM
    assert not allowed(may_assume, "sts:AssumeRole", TARGET, resource_policy=TRUST_OTHER)  # IAM only
    assert not allowed(may_read, "sts:AssumeRole", TARGET, resource_policy=TRUST_SAME)  # account root only
    assert not allowed(may_read, "sts:AssumeRole", TARGET, resource_policy=TRUST_OTHER)  # neither
    stranger = f"arn:aws:iam::{OTHER}:role/test_other"
    assert not allowed(may_assume, "sts:AssumeRole", TARGET, principal=stranger, resource_policy=TRUST_SAME)


def test_bucket_policy_action_and_resource_elements_as_upstream() -> None:
    bucket = policy(
        {"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject", "Resource": OBJECT}, label="bucket policy"
    )
    assert allowed(None, "s3:GetObject", resource_policy=bucket)  # names everyone: no identity policy needed
    assert not allowed(None, "s3:PutObject", resource_policy=bucket)
    denying = policy(
        {"Effect": "Deny", "Principal": "*", "Action": "s3:GetObject", "Resource": OBJECT}, label="bucket policy"
    )
    assert not allowed(policy(allow("s3:GetObject", OBJECT)), "s3:GetObject", resource_policy=denying)


# ------------------------------------------------------------ IAM User Guide, Policy evaluation logic


def test_an_explicit_deny_in_any_policy_wins() -> None:
    identity = policy(allow("s3:*"), {"Effect": "Deny", "Action": "s3:DeleteObject", "Resource": "*"})
    assert allowed(identity, "s3:GetObject") and not allowed(identity, "s3:DeleteObject")
    result = decide(request(USER, [identity], "s3:DeleteObject", OBJECT, resource_account=ACCOUNT))
    assert result.reason == "identity policy denies ((no Sid))"


def test_within_an_account_either_policy_allows() -> None:
    bucket = policy(
        {"Sid": "Reader", "Effect": "Allow", "Principal": {"AWS": ROLE}, "Action": "s3:GetObject", "Resource": OBJECT},
        label="bucket policy",
    )
    assert allowed(None, "s3:GetObject", principal=ROLE, resource_policy=bucket)
    assert allowed(policy(allow("s3:GetObject")), "s3:GetObject", principal=ROLE, resource_policy=None)
    assert not allowed(None, "s3:GetObject", principal=ROLE)
    named = decide(request(ROLE, [], "s3:GetObject", OBJECT, resource_account=ACCOUNT, resource_policy=bucket))
    assert named.reason == "bucket policy names it (Reader)"


def test_across_accounts_both_policies_must_allow() -> None:
    stranger = f"arn:aws:iam::{OTHER}:role/writer"
    bucket = policy(
        {"Effect": "Allow", "Principal": {"AWS": stranger}, "Action": "s3:PutObject", "Resource": OBJECT},
        label="bucket policy",
    )
    writes = policy(allow("s3:PutObject"))
    assert allowed(writes, "s3:PutObject", principal=stranger, resource_policy=bucket)
    assert not allowed(None, "s3:PutObject", principal=stranger, resource_policy=bucket)
    assert not allowed(writes, "s3:PutObject", principal=stranger, resource_policy=None)


# --------------------------------------------------------------- AWS KMS Developer Guide, Default key policy

ROOT_DELEGATION = {
    "Sid": "AccountUsesKeyThroughIam",
    "Effect": "Allow",
    "Principal": {"AWS": f"arn:aws:iam::{ACCOUNT}:root"},
    "Action": ["kms:Decrypt", "kms:GenerateDataKey*"],
    "Resource": "*",
}


def test_a_key_policy_must_allow_the_account_for_iam_policies_to_count() -> None:
    uses = policy(allow(["kms:Decrypt", "kms:GenerateDataKey"], KEY))
    delegating = policy(ROOT_DELEGATION, label="key policy")
    assert allowed(uses, "kms:Decrypt", KEY, resource_policy=delegating)
    assert not allowed(None, "kms:Decrypt", KEY, resource_policy=delegating)  # the key policy only lets IAM grant
    admins_only = policy(
        {
            "Sid": "Admins",
            "Effect": "Allow",
            "Principal": {"AWS": f"arn:aws:iam::{ACCOUNT}:role/admin"},
            "Action": "kms:*",
            "Resource": "*",
        },
        label="key policy",
    )
    refused = decide(request(USER, [uses], "kms:Decrypt", KEY, resource_account=ACCOUNT, resource_policy=admins_only))
    assert not refused.allowed
    assert refused.reason == "key policy neither names the principal nor lets its account's IAM policies grant it"


def test_a_key_policy_that_names_the_principal_needs_no_iam_policy() -> None:
    named = policy(
        {"Sid": "Service", "Effect": "Allow", "Principal": {"AWS": ROLE}, "Action": "kms:Decrypt", "Resource": "*"},
        label="key policy",
    )
    assert allowed(None, "kms:Decrypt", KEY, principal=ROLE, resource_policy=named)
    assert not allowed(None, "kms:GenerateDataKey", KEY, principal=ROLE, resource_policy=named)


def test_everyone_in_a_key_policy_is_limited_by_its_conditions() -> None:
    # `"Principal": {"AWS": "*"}` is `"Principal": "*"` (IAM User Guide, Principal element): the FSx statement
    # of components/storage/buckets.py names every principal, narrowed by kms:ViaService and aws:PrincipalArn.
    slr = f"arn:aws:iam::{ACCOUNT}:role/aws-service-role/s3.data-source.lustre.fsx.amazonaws.com"
    fsx = f"{slr}/AWSServiceRoleForFSxS3Access_fs-1"
    key_policy = policy(
        {
            "Sid": "Fsx",
            "Effect": "Allow",
            "Principal": {"AWS": "*"},
            "Action": "kms:Decrypt",
            "Resource": "*",
            "Condition": {
                "StringEquals": {"kms:ViaService": "s3.us-east-1.amazonaws.com"},
                "ArnLike": {"aws:PrincipalArn": f"{slr}/AWSServiceRoleForFSxS3Access_*"},
            },
        },
        label="key policy",
    )
    via_s3 = {"kms:ViaService": "s3.us-east-1.amazonaws.com"}
    assert allowed(None, "kms:Decrypt", KEY, principal=fsx, context=via_s3, resource_policy=key_policy)
    assert not allowed(
        None,
        "kms:Decrypt",
        KEY,
        principal=fsx,
        context={"kms:ViaService": "ec2.us-east-1.amazonaws.com"},
        resource_policy=key_policy,
    )
    assert not allowed(None, "kms:Decrypt", KEY, principal=ROLE, context=via_s3, resource_policy=key_policy)


# ------------------------------------------------------- IAM User Guide, Condition operators


def conditioned(condition: dict[str, Any]) -> Policy:
    return policy(allow("s3:GetObject", Condition=condition))


@pytest.mark.parametrize(
    ("condition", "context", "expected"),
    [
        ({"StringEquals": {"s3:prefix": "team/"}}, {"s3:prefix": "team/"}, True),
        ({"StringEquals": {"s3:prefix": "team/"}}, {"s3:prefix": "Team/"}, False),  # case-sensitive
        ({"StringEquals": {"s3:prefix": "team/"}}, {}, False),  # a missing key matches no value
        ({"StringLike": {"s3:prefix": ["team/", "team/*"]}}, {"s3:prefix": "team/run-1/"}, True),
        ({"StringLike": {"s3:prefix": ["team/", "team/*"]}}, {"s3:prefix": "other/"}, False),
        ({"StringNotEquals": {"aws:SourceVpce": "vpce-1"}}, {}, True),  # negated operator, missing key: true
        ({"StringNotEqualsIfExists": {"aws:SourceVpce": "vpce-1"}}, {"aws:SourceVpce": "vpce-1"}, False),
        ({"StringEqualsIfExists": {"aws:SourceVpce": "vpce-1"}}, {}, True),  # IfExists: a missing key matches
        ({"ArnLike": {"aws:PrincipalArn": "arn:aws:iam::*:role/reader"}}, {}, True),  # PrincipalArn is always set
        ({"ArnLike": {"aws:PrincipalArn": "arn:aws:iam::*:role/writer"}}, {}, False),
        ({"ArnNotEquals": {"aws:PrincipalArn": ROLE}}, {}, False),
        ({"Bool": {"aws:SecureTransport": True}}, {}, True),  # a JSON boolean is the string "true"
        ({"Bool": {"aws:SecureTransport": "false"}}, {}, False),
        ({"Bool": {"aws:ViaAWSService": "true"}}, {}, False),  # not in the request: no match
        ({"Null": {"aws:SourceVpce": "true"}}, {}, True),
        ({"Null": {"aws:SourceVpce": True}}, {"aws:SourceVpce": "vpce-1"}, False),
        ({"Null": {"aws:SourceVpce": "false"}}, {"aws:SourceVpce": "vpce-1"}, True),
        ({"IpAddress": {"aws:SourceIp": "10.0.0.0/8"}}, {"aws:SourceIp": "10.20.1.5"}, True),
        ({"NotIpAddress": {"aws:SourceIp": "10.0.0.0/8"}}, {"aws:SourceIp": "10.20.1.5"}, False),
        ({"ForAnyValue:StringLike": {"aws:TagKeys": ["team-*"]}}, {"aws:TagKeys": ["owner", "team-a"]}, True),
        ({"ForAnyValue:StringLike": {"aws:TagKeys": ["team-*"]}}, {"aws:TagKeys": ["owner"]}, False),
        ({"ForAllValues:StringEquals": {"aws:TagKeys": ["a", "b"]}}, {"aws:TagKeys": ["a"]}, True),
        ({"ForAllValues:StringEquals": {"aws:TagKeys": ["a", "b"]}}, {"aws:TagKeys": ["a", "c"]}, False),
        # Two keys in one operator, and two operators: every one must match.
        ({"StringEquals": {"s3:prefix": "t/", "aws:SourceVpce": "vpce-1"}}, {"s3:prefix": "t/"}, False),
        (
            {"StringEquals": {"s3:prefix": "t/"}, "Bool": {"aws:SecureTransport": "true"}},
            {"s3:prefix": "t/"},
            True,
        ),
    ],
)
def test_condition_operators_as_documented(condition: dict[str, Any], context: dict[str, Any], expected: bool) -> None:
    assert allowed(conditioned(condition), "s3:GetObject", principal=ROLE, context=context) is expected


@pytest.mark.parametrize("operator", ["StringNotLike", "IpAddressIfExists", "ForAnyValue:IpAddress", "DateNotEquals"])
def test_operators_principalmapper_gets_wrong_are_refused(operator: str) -> None:
    # StringNotLike on a missing key is true in AWS and false in principalmapper 1.1.5; IpAddressIfExists and the
    # set forms of IpAddress fall into its NotIpAddress branch. A wrong answer would be worse than none.
    unjudgeable = conditioned({operator: {"aws:SourceIp": "10.0.0.0/8"}})
    assert operator in unjudgeable.unsupported and operator not in SUPPORTED_OPERATORS
    with pytest.raises(UnsupportedPolicy, match=operator):
        allowed(unjudgeable, "s3:GetObject")
    with pytest.raises(UnsupportedPolicy, match=operator):
        normalised({"Statement": [{"Effect": "Deny", "Condition": {operator: {}}}]}, "x")


def test_normalising_keeps_the_document_otherwise_whole() -> None:
    document = {"Version": "2012-10-17", "Statement": {"Effect": "Allow", "Principal": {"AWS": "*"}, "Action": "s3:*"}}
    assert normalised(document, "x") == {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Principal": "*", "Action": "s3:*"}],
    }


# ---------------------------------------- AWS PrivateLink Guide, endpoint policies (evaluated by this module)

ENDPOINT = policy(
    {
        "Sid": "AccountPrincipalsToAccountBuckets",
        "Effect": "Allow",
        "Principal": "*",
        "Action": "s3:*",
        "Resource": "*",
        "Condition": {"StringEquals": {"aws:PrincipalAccount": ACCOUNT, "aws:ResourceAccount": ACCOUNT}},
    },
    label="endpoint policy",
)


def test_an_endpoint_policy_limits_and_never_grants() -> None:
    reads = policy(allow("s3:GetObject"))
    own = {"aws:ResourceAccount": ACCOUNT}
    assert allowed(reads, "s3:GetObject", principal=ROLE, context=own, endpoint=ENDPOINT)
    foreign = decide(
        request(
            ROLE,
            [reads],
            "s3:GetObject",
            "arn:aws:s3:::public-bucket/x",
            resource_account=OTHER,
            context={"aws:ResourceAccount": OTHER},
            endpoint_policy=ENDPOINT,
        )
    )
    assert (foreign.allowed, foreign.reason) == (False, "endpoint policy allows no statement for it")
    assert not allowed(None, "s3:GetObject", principal=ROLE, context=own, endpoint=ENDPOINT)  # it grants nothing
    denying = policy(
        {"Sid": "NoDeletes", "Effect": "Deny", "Principal": "*", "Action": "s3:DeleteObject", "Resource": "*"},
        label="endpoint policy",
    )
    assert not allowed(policy(allow("s3:*")), "s3:DeleteObject", principal=ROLE, context=own, endpoint=denying)
    # its deny wins over its own allow
    both = policy(ENDPOINT.statements[0], denying.statements[0], label="endpoint policy")
    deletes = decide(
        request(ROLE, [policy(allow("s3:*"))], "s3:DeleteObject", OBJECT, resource_account=ACCOUNT, context=own,
                endpoint_policy=both)
    )  # fmt: skip
    assert (deletes.allowed, deletes.reason) == (False, "endpoint policy denies (NoDeletes)")
    # an endpoint policy's statement binds only the principals it names, as a resource policy's does
    deny_other = policy(
        ENDPOINT.statements[0],
        {
            "Effect": "Deny",
            "Principal": {"AWS": f"arn:aws:iam::{ACCOUNT}:role/other"},
            "Action": "s3:*",
            "Resource": "*",
        },
        label="endpoint policy",
    )
    assert allowed(reads, "s3:GetObject", principal=ROLE, context=own, endpoint=deny_other)
    only_other = policy({**deny_other.statements[1], "Effect": "Allow"}, label="endpoint policy")
    assert not allowed(reads, "s3:GetObject", principal=ROLE, context=own, endpoint=only_other)


def test_each_question_is_evaluated_once() -> None:
    question = request(ROLE, [policy(allow("s3:GetObject"))], "s3:GetObject", OBJECT, resource_account=ACCOUNT)
    before = decide.cache_info().hits
    assert decide(question) is decide(question)
    assert decide.cache_info().hits >= before + 1


# ------------------------------------------------------------------------------ what each decision says and why


def reason(identity: list[Policy], principal: str = ROLE, owner: str = ACCOUNT, **kwargs: Any) -> tuple[bool, str]:
    found = decide(request(principal, identity, "s3:GetObject", OBJECT, resource_account=owner, **kwargs))
    return found.allowed, found.reason


def bucket(*statements: dict[str, Any]) -> Policy:
    return policy(*statements, label="bucket policy")


READS = policy(allow("s3:GetObject"), label="identity policy reader")


def test_a_resource_policys_deny_names_its_statement_and_binds_only_its_principals() -> None:
    deny_other = {"Sid": "NoOther", "Effect": "Deny", "Principal": {"AWS": f"arn:aws:iam::{ACCOUNT}:role/other"},
                  "Action": "s3:GetObject", "Resource": OBJECT}  # fmt: skip
    assert reason([READS], resource_policy=bucket(deny_other)) == (True, "identity policy reader allows ((no Sid))")
    deny_all = {**deny_other, "Sid": "NoOne", "Principal": "*"}
    assert reason([READS], resource_policy=bucket(deny_all)) == (False, "bucket policy denies (NoOne)")


def test_an_allow_is_explained_by_the_statement_that_grants_it() -> None:
    # the bucket policy delegates to the account only: the identity policy is what grants it
    root = {"Sid": "Account", "Effect": "Allow", "Principal": {"AWS": f"arn:aws:iam::{ACCOUNT}:root"},
            "Action": "s3:GetObject", "Resource": OBJECT}  # fmt: skip
    assert reason([READS], resource_policy=bucket(root)) == (True, "identity policy reader allows ((no Sid))")
    # everyone, or the principal in a list, is named
    anyone = {"Sid": "Public", "Effect": "Allow", "Principal": "*", "Action": "s3:GetObject", "Resource": OBJECT}
    assert reason([], resource_policy=bucket(anyone)) == (True, "bucket policy names it (Public)")
    listed = {**anyone, "Sid": "Listed", "Principal": {"AWS": [f"arn:aws:iam::{ACCOUNT}:role/other", ROLE]}}
    assert reason([], resource_policy=bucket(listed)) == (True, "bucket policy names it (Listed)")
    # NotPrincipal lets the principal in without naming it: the resource policy allows
    all_but = {"Sid": "AllBut", "Effect": "Allow", "NotPrincipal": {"AWS": f"arn:aws:iam::{ACCOUNT}:role/other"},
               "Action": "s3:GetObject", "Resource": OBJECT}  # fmt: skip
    assert reason([], resource_policy=bucket(all_but)) == (True, "bucket policy allows")
    # several identity policies: the first that allows, with its matching statements
    second = policy({"Sid": "A", **allow("s3:Get*")}, {"Sid": "B", **allow("s3:GetObject")}, label="second")
    assert reason([policy(allow("s3:PutObject"), label="writer"), second]) == (True, "second allows (A, B)")


def test_a_refusal_says_which_side_is_missing() -> None:
    root = {"Effect": "Allow", "Principal": {"AWS": f"arn:aws:iam::{ACCOUNT}:root"}, "Action": "s3:GetObject",
            "Resource": OBJECT}  # fmt: skip
    assert reason([], resource_policy=bucket(root)) == (
        False, "no identity policy statement allows it (the resource policy only lets IAM grant it)"
    )  # fmt: skip
    assert reason([]) == (False, "no identity or resource policy statement allows it")
    stranger = f"arn:aws:iam::{OTHER}:role/writer"
    assert reason([READS], principal=stranger) == (
        False, "no resource policy: nothing lets a principal of another account in"
    )  # fmt: skip
    assert reason([READS], principal=stranger, resource_policy=bucket(root)) == (
        False, "bucket policy: nothing lets a principal of another account in"
    )  # fmt: skip


def test_context_values_are_strings_as_iam_sees_them() -> None:
    """A boolean context value is "true"/"false", a list stays a set of values."""
    via_service = conditioned({"Bool": {"aws:ViaAWSService": "true"}})
    assert allowed(via_service, "s3:GetObject", principal=ROLE, context={"aws:ViaAWSService": True})
    assert not allowed(via_service, "s3:GetObject", principal=ROLE, context={"aws:ViaAWSService": False})
    question = request(ROLE, [], "s3:GetObject", OBJECT, resource_account=ACCOUNT,
                       context={"aws:TagKeys": ["a", "b"], "aws:SourceVpce": "vpce-1", "flag": False})  # fmt: skip
    assert dict(question.context) == {
        "aws:PrincipalArn": ROLE, "aws:PrincipalAccount": ACCOUNT, "aws:SecureTransport": "true",
        "aws:TagKeys": ("a", "b"), "aws:SourceVpce": "vpce-1", "flag": "false",
    }  # fmt: skip


def test_condition_values_written_as_json_numbers_and_booleans_match_as_strings() -> None:
    assert allowed(conditioned({"Bool": {"aws:SecureTransport": [True]}}), "s3:GetObject", principal=ROLE)
    assert allowed(conditioned({"NumericLessThanEquals": {"s3:max-keys": 10}}), "s3:GetObject", principal=ROLE,
                   context={"s3:max-keys": "10"})  # fmt: skip
    assert normalised({"Statement": [{"Condition": {"StringEquals": {"k": [1, 2.5, False, "x"]}}}]}, "x") == {
        "Statement": [{"Condition": {"StringEquals": {"k": ["1", "2.5", "false", "x"]}}}]
    }


def test_a_policy_is_the_same_whatever_its_key_order() -> None:
    """Equal documents make equal policies, so equal questions are decided once (decide is cached)."""
    a = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]}
    b = {"Statement": [{"Resource": "*", "Action": "s3:*", "Effect": "Allow"}], "Version": "2012-10-17"}
    assert Policy.of("p", a) == Policy.of("p", b) and Policy.of("p", a).unsupported == ""
    odd = {"StringNotLike": {"s3:prefix": "x"}}
    c = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:*", "Condition": odd}]}
    d = {"Statement": [{"Condition": odd, "Action": "s3:*", "Effect": "Allow"}], "Version": "2012-10-17"}
    assert Policy.of("p", c) == Policy.of("p", json.dumps(d)) and "StringNotLike" in Policy.of("p", c).unsupported


def test_anyone_statements_are_those_for_every_principal_that_match() -> None:
    endpoint = policy(
        {"Sid": "Anyone", "Effect": "Allow", "Principal": {"AWS": "*"}, "Action": "s3:GetObject",
         "Resource": "arn:aws:s3:::public/*"},
        {"Sid": "Named", "Effect": "Allow", "Principal": {"AWS": ROLE}, "Action": "s3:GetObject", "Resource": "*"},
        label="endpoint policy",
    )  # fmt: skip
    assert [s["Sid"] for s in endpoint.statements] == ["Anyone", "Named"]
    found = anyone_statements(endpoint, "Allow", "s3:GetObject", "arn:aws:s3:::public/layer", {})
    assert [s["Sid"] for s in found] == ["Anyone"]
    assert anyone_statements(endpoint, "Allow", "s3:GetObject", "arn:aws:s3:::private/x", {}) == []
    assert anyone_statements(endpoint, "Deny", "s3:GetObject", "arn:aws:s3:::public/layer", {}) == []
    with pytest.raises(UnsupportedPolicy, match="StringNotLike"):
        anyone_statements(conditioned({"StringNotLike": {"a": "b"}}), "Allow", "s3:GetObject", OBJECT, {})

"""IAM and KMS rules: no wildcard admin, scoped IRSA trust, key rotation."""

from __future__ import annotations

import fnmatch
from collections.abc import Iterator, Mapping
from typing import Any

from pulumi_policy import ResourceValidationArgs, Severity

from .base import (
    IAM_POLICY,
    IAM_ROLE,
    IAM_ROLE_POLICY,
    KMS_KEY,
    Report,
    as_list,
    get,
    items,
    json_document,
    resource_rule,
)


def _statements(document: Any) -> Iterator[Any]:
    doc = json_document(document)
    if doc is None:
        return
    statements = get(doc, "Statement")
    yield from ([statements] if isinstance(statements, dict) else items(statements))


def _admin_statement(statement: Any) -> bool:
    if get(statement, "Effect", "Allow") != "Allow":
        return False
    actions = [str(a) for a in as_list(get(statement, "Action"))]
    resources = [str(r) for r in as_list(get(statement, "Resource"))]
    return "*" in resources and any(a in ("*", "iam:*", "*:*") for a in actions)


@resource_rule(
    name="iam-no-star-star",
    description="No IAM policy allows every action (or every IAM action) on every resource: that is "
    "account admin, one compromised pod or node away (CKV2_AWS_40, CKV_AWS_61).",
    severity=Severity.CRITICAL,
    types=[IAM_POLICY, IAM_ROLE_POLICY, IAM_ROLE],
)
def iam_no_star_star(args: ResourceValidationArgs, report: Report) -> None:
    documents: list[tuple[str, Any]] = []
    if args.resource_type == IAM_ROLE:
        documents += [
            (f"inlinePolicies[{get(p, 'name', i)}]", get(p, "policy"))
            for i, p in enumerate(items(get(args.props, "inlinePolicies")))
        ]
        if not documents:
            args.not_applicable("the role has no inline policies")
    else:
        documents.append(("policy", get(args.props, "policy")))
    for where, document in documents:
        for statement in _statements(document):
            if _admin_statement(statement):
                report(
                    f"{where}: statement {get(statement, 'Sid', '')!r} allows "
                    f"{as_list(get(statement, 'Action'))} on '*'."
                )


@resource_rule(
    name="irsa-trust-scoped",
    description="A role that trusts the cluster's OIDC provider names the exact service account (`:sub`) "
    "and audience (`:aud`) with StringEquals; otherwise every pod in the cluster can assume it (EKS best "
    "practices, IRSA).",
    severity=Severity.HIGH,
    types=[IAM_ROLE],
)
def irsa_trust_scoped(args: ResourceValidationArgs, report: Report) -> None:
    federated = [
        s
        for s in _statements(get(args.props, "assumeRolePolicy"))
        if "sts:AssumeRoleWithWebIdentity" in as_list(get(s, "Action"))
        and any("oidc" in str(p) for p in as_list(get(s, "Principal.Federated")))
    ]
    if not federated:
        args.not_applicable("the role does not trust an OIDC provider")
    for statement in federated:
        equals = get(statement, "Condition.StringEquals", {})
        keys = [str(k) for k in equals]
        for suffix in (":sub", ":aud"):
            if not any(k.endswith(suffix) for k in keys):
                report(f"the web-identity trust has no StringEquals condition on '{suffix}'.")
        for key in keys:
            if key.endswith(":sub") and any("*" in str(v) for v in as_list(equals[key])):
                report(f"the '{key}' condition uses a wildcard; name the service account.")


@resource_rule(
    name="kms-rotation",
    description="Customer KMS keys rotate yearly and never bypass the key-policy lockout check "
    "(CKV_AWS_7, CKV2_AWS_64).",
    severity=Severity.MEDIUM,
    types=[KMS_KEY],
)
def kms_rotation(args: ResourceValidationArgs, report: Report) -> None:
    if get(args.props, "bypassPolicyLockoutSafetyCheck") is True:
        report("bypassPolicyLockoutSafetyCheck is true: a bad key policy could lock everyone out of the key.")
    if get(args.props, "customerMasterKeySpec", "SYMMETRIC_DEFAULT") != "SYMMETRIC_DEFAULT":
        return  # automatic rotation covers symmetric encryption keys only
    if get(args.props, "enableKeyRotation") is not True:
        report("enableKeyRotation is not true.")


# Interface actions that act on an existing network interface: each takes ec2:Vpc on it (Service Authorization
# Reference, Amazon EC2, as parliament's IAM definitions record it); CreateNetworkInterface does not, and is bounded
# by the subnet and security-group resources it needs.
ENI_EXISTING_ACTIONS = (
    "ec2:AssignPrivateIpAddresses",
    "ec2:CreateNetworkInterfacePermission",
    "ec2:DeleteNetworkInterface",
    "ec2:DeleteNetworkInterfacePermission",
    "ec2:DetachNetworkInterface",
    "ec2:ModifyNetworkInterfaceAttribute",
    "ec2:UnassignPrivateIpAddresses",
)


def _grants(statement: Any, action: str) -> bool:
    if get(statement, "Effect", "Allow") != "Allow":
        return False
    return any(fnmatch.fnmatchcase(action.lower(), str(a).lower()) for a in as_list(get(statement, "Action")))


def _condition(statement: Any, key: str) -> list[Any]:
    """The values a statement's condition requires of `key`, under any operator."""
    block = get(statement, "Condition", {})
    return [
        v for op in (block if isinstance(block, Mapping) else {}) for k, v in get(block, op, {}).items() if k == key
    ]


@resource_rule(
    name="iam-grants-and-interfaces-scoped",
    description="An inline role policy grants kms:CreateGrant only for AWS resources (kms:GrantIsForAWSResource: a "
    "service such as EBS asking on the role's behalf), never to whoever holds the role's credentials; and network "
    "interface actions only in the stack's VPC (ec2:Vpc on existing interfaces, named subnets for new ones), not on "
    "every interface of the account.",
    severity=Severity.MEDIUM,
    types=[IAM_ROLE_POLICY],
)
def iam_grants_and_interfaces_scoped(args: ResourceValidationArgs, report: Report) -> None:
    statements = list(_statements(get(args.props, "policy")))
    relevant = [
        s for s in statements if _grants(s, "kms:CreateGrant") or any(_grants(s, a) for a in ENI_EXISTING_ACTIONS)
    ]
    relevant += [s for s in statements if _grants(s, "ec2:CreateNetworkInterface") and s not in relevant]
    if not relevant:
        args.not_applicable("grants neither kms:CreateGrant nor network-interface actions")
    for statement in relevant:
        sid = get(statement, "Sid", "a statement")
        if _grants(statement, "kms:CreateGrant") and not any(
            str(v).lower() == "true" for v in _condition(statement, "kms:GrantIsForAWSResource")
        ):
            report(f"{sid} allows kms:CreateGrant without kms:GrantIsForAWSResource: any grantee, any operation.")
        existing = [a for a in ENI_EXISTING_ACTIONS if _grants(statement, a)]
        if existing and not _condition(statement, "ec2:Vpc"):
            report(f"{sid} allows {', '.join(existing)} without an ec2:Vpc condition: every interface of the account.")
        if _grants(statement, "ec2:CreateNetworkInterface"):
            wide = [
                str(r)
                for r in as_list(get(statement, "Resource"))
                if str(r) == "*" or str(r).endswith((":subnet/*", ":security-group/*"))
            ]
            if wide:
                report(f"{sid} allows ec2:CreateNetworkInterface on {', '.join(wide)}: any subnet or security group.")

"""Rules that span the areas (the `trainstack:security` area's, like the telemetry key): IAM policies and trust
wherever a role is made, KMS keys and their administrators, telemetry encrypted with the stack's key, and how
long the audit trail is kept. A rule that guards one area's resource lives in that area's module."""

from __future__ import annotations

import fnmatch
from collections.abc import Iterator, Mapping
from typing import Any

from pulumi_policy import PolicyResource, ResourceValidationArgs, Severity, StackValidationArgs
from pulumi_policy.proxy import UnknownValueError

from ..facts_generated import (
    FLOW_LOG,
    IAM_POLICY,
    IAM_ROLE,
    IAM_ROLE_POLICY,
    KMS_KEY,
    LOG_GROUP,
    SNS_TOPIC,
)
from .base import (
    Graph,
    Report,
    as_list,
    condition_keys,
    get,
    graph,
    int_config,
    items,
    json_document,
    number,
    policy_statements,
    resource_rule,
    stack_rule,
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


# KMS rotates a key every rotationPeriodInDays (90 to 2560; 365 when unset): AWS KMS Developer Guide, "Rotate AWS
# KMS keys", automatic key rotation.
ROTATION_MAX_DAYS = 365


@resource_rule(
    name="kms-rotation",
    description="Customer KMS keys rotate at least yearly (enableKeyRotation, rotationPeriodInDays at most 365) and "
    "never bypass the key-policy lockout check "
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
    period = number(get(args.props, "rotationPeriodInDays"))
    if period is not None and period > ROTATION_MAX_DAYS:
        report(f"rotationPeriodInDays {int(period)}: the key rotates less often than every {ROTATION_MAX_DAYS} days.")


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
    "interface actions only in the stack's VPC (ec2:Vpc naming a VPC, no pattern, on existing interfaces; named "
    "subnets for new ones), not on "
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
        vpcs = [str(v) for v in _condition(statement, "ec2:Vpc")]
        if existing and not vpcs:
            report(f"{sid} allows {', '.join(existing)} without an ec2:Vpc condition: every interface of the account.")
        elif existing and (wildcards := [v for v in vpcs if "*" in v.split("vpc/")[-1] or "?" in v.split("vpc/")[-1]]):
            report(f"{sid} allows {', '.join(existing)} with ec2:Vpc {', '.join(wildcards)}: a pattern, not the VPC.")
        if _grants(statement, "ec2:CreateNetworkInterface"):
            wide = [
                str(r)
                for r in as_list(get(statement, "Resource"))
                if str(r) == "*" or str(r).endswith((":subnet/*", ":security-group/*"))
            ]
            if wide:
                report(f"{sid} allows ec2:CreateNetworkInterface on {', '.join(wide)}: any subnet or security group.")


# ---------------------------------------------------------------------------------------------- IAM/KMS


@resource_rule(
    name="kms-admin-separation",
    description="Key policies name administrators separately from users: no statement allows kms:* (IAM could "
    "then make anyone an administrator), and an explicit deny keeps ScheduleKeyDeletion and PutKeyPolicy to "
    "the administrators (KMS Developer Guide, key policies; CIS AWS 3.x key management).",
    severity=Severity.HIGH,
    types=[KMS_KEY],
)
def kms_admin_separation(args: ResourceValidationArgs, report: Report) -> None:
    statements = policy_statements(get(args.props, "policy"))
    for statement in statements:
        if statement.get("Effect") == "Allow" and any(
            str(a) in ("kms:*", "*") for a in as_list(statement.get("Action"))
        ):
            report(f"statement {statement.get('Sid', '?')} allows kms:*: administration is not separated from use.")
    for action in ("kms:ScheduleKeyDeletion", "kms:PutKeyPolicy"):
        guarded = any(
            statement.get("Effect") == "Deny"
            and action in [str(a) for a in as_list(statement.get("Action"))]
            and "aws:PrincipalArn" in condition_keys(statement)
            for statement in statements
        )
        if not guarded:
            report(f"{action} is not denied to principals other than the key administrators.")


def _context_values(statement: Mapping[str, Any], key: str) -> list[str]:
    condition = statement.get("Condition")
    found: list[str] = []
    for block in condition.values() if isinstance(condition, Mapping) else []:
        if isinstance(block, Mapping) and key in block:
            found += [str(v) for v in as_list(block[key])]
    return found


def _key_names(g: Graph, resource: PolicyResource, prop: str, service: str, context_key: str, suffix: str) -> str:
    """Why the key `resource.prop` names does not let `service` use it for this resource (by the encryption context
    `context_key` ending in `suffix`), or "" when it does."""
    keys = g.deps(resource, prop, KMS_KEY)
    if not keys:
        return "its key is not a key of this stack, so no key policy here says who may read it"
    try:
        statements = [s for k in keys for s in policy_statements(get(k.props, "policy"))]
    except UnknownValueError:
        return ""  # computed at the first preview; judged at pulumi up
    for statement in statements:
        services = [str(p) for p in as_list(get(statement, "Principal.Service"))]
        named = [v for v in _context_values(statement, context_key) if v.endswith(suffix)]
        if statement.get("Effect") == "Allow" and any(p.startswith(service) for p in services) and named:
            return ""
    return f"its key's policy does not let {service} use it with {context_key} naming it"


def _set(props: Any, key: str) -> Any:
    """The value of `key`, or True when it is set to a value computed later (a key's ARN at the first preview)."""
    try:
        return get(props, key)
    except UnknownValueError:
        return True


@stack_rule(
    name="telemetry-encrypted",
    description="Every CloudWatch log group and SNS topic the stack creates is encrypted with a key of the stack "
    "whose policy lets the service use it for that log group or topic alone (an encryption-context condition): "
    "flow logs, the API server's audit log and the alerts are then readable only as the key policy and its "
    "administrators decide, not by anyone with logs:* or sns:* (CKV_AWS_158, CKV_AWS_26).",
    severity=Severity.LOW,
)
def telemetry_encrypted(args: StackValidationArgs, report: Report) -> None:
    g = graph(args)
    groups, topics = g.of_type(LOG_GROUP), g.of_type(SNS_TOPIC)
    if not groups and not topics:
        args.not_applicable("no log group or topic")
    for group in groups:
        name = str(get(group.props, "name", ""))
        if not _set(group.props, "kmsKeyId"):
            report(f"log group {name or group.name} is not encrypted with a customer-managed key.", group.urn)
        elif why := _key_names(
            g, group, "kmsKeyId", "logs.", "kms:EncryptionContext:aws:logs:arn", f":log-group:{name}"
        ):
            report(f"log group {name}: {why}.", group.urn)
    for topic in topics:
        name = str(get(topic.props, "name", ""))
        key = _set(topic.props, "kmsMasterKeyId")
        if not key or str(key).startswith("alias/aws/"):
            report(f"topic {name or topic.name} is not encrypted with a customer-managed key.", topic.urn)
        elif why := _key_names(
            g, topic, "kmsMasterKeyId", "aps.", "kms:EncryptionContext:aws:sns:topicArn", f":{name}"
        ):
            report(f"topic {name}: {why} (its publisher, the alert manager, could not publish).", topic.urn)


# ----------------------------------------------------------------------------------------- audit trail


def _log_kind(g: Graph, log_group: PolicyResource) -> str:
    name = str(get(log_group.props, "name", ""))
    if name.startswith("/aws/eks/") and name.endswith("/cluster"):
        return "controlPlane"
    if g.referrers(log_group, "logDestination", FLOW_LOG):
        return "flowLogs"
    return "other"


_LOG_KEYS = {
    "controlPlane": ("controlPlaneMinDays", "eks.log_retention_days", "EKS control-plane (audit) logs"),
    "flowLogs": ("flowLogsMinDays", "network.flow_logs_retention_days", "VPC flow logs"),
    "other": ("otherMinDays", "the log group's retention (for example storage.fsx.log_retention_days)", "logs"),
}


# The floor per kind of log group; a key a config leaves out falls back to its schema default (what the policy
# tables document), never to one day.
_LOG_RETENTION_CONFIG: dict[str, Any] = {
    "controlPlaneMinDays": {
        "type": "integer",
        "minimum": 1,
        "default": 90,
        "description": "Fewest days EKS control-plane logs are kept. Why: the audit log is the record of who "
        "did what through the API server. Source: CKV_AWS_338 (365 days); EKS best practices, auditing.",
    },
    "flowLogsMinDays": {
        "type": "integer",
        "minimum": 1,
        "default": 30,
        "description": "Fewest days VPC flow logs are kept. Why: a compromised node's connections are traced "
        "from them after the fact. Source: CKV_AWS_338; CIS AWS Foundations 3.7 (flow logs).",
    },
    "otherMinDays": {
        "type": "integer",
        "minimum": 1,
        "default": 14,
        "description": "Fewest days any other log group (FSx data repository events) is kept. Why: failed "
        "imports and exports are debugged from them. Source: CKV_AWS_338.",
    },
}


@stack_rule(
    name="log-retention-floor",
    floor="staging",
    description="CloudWatch log groups keep the audit trail (control-plane audit and authenticator logs, VPC "
    "flow logs) and operational logs for at least the environment's floor: an incident is often found months "
    "after it happened, and expired logs cannot answer who did what (CKV_AWS_338: at least one year; CIS EKS "
    "2.1.1; EKS best practices, detective controls).",
    severity=Severity.MEDIUM,
    config=_LOG_RETENTION_CONFIG,
)
def log_retention_floor(args: StackValidationArgs, report: Report) -> None:
    g = graph(args)
    groups = g.of_type(LOG_GROUP)
    if not groups:
        args.not_applicable("no CloudWatch log groups")
    for log_group in groups:
        kind = _log_kind(g, log_group)
        key, stack_key, what = _LOG_KEYS[kind]
        floor = int_config(args, key, _LOG_RETENTION_CONFIG[key]["default"])
        days = number(get(log_group.props, "retentionInDays"))
        if days is not None and 0 < days < floor:  # unset or 0: never expire
            report(
                f"{what} {get(log_group.props, 'name')} are kept {int(days)} days ({stack_key}); the floor here is "
                f"{floor} days.",
                log_group.urn,
            )

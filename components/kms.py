"""Customer-managed KMS keys, made one way: rotation on, the longest deletion window, an alias, and a key
policy that separates the people who administer a key from the principals that use it.

Every key policy has (KMS Developer Guide, "Default key policy" and "Key administrators"):
- `AccountUsesKeyThroughIam`: the account root may use the key (cryptographic operations, grants, reads), so
  IAM policies decide which of the account's principals are key users. It no longer delegates `kms:*`: IAM
  alone can never make someone a key administrator;
- `KeyAdministrators`: the principal running `pulumi up` (it must keep managing the key: KMS refuses a policy
  that locks its caller out) and the stack's `security.key_administrator_arns` may administer the key;
- `DenyDestructionExceptAdministrators`: nobody else may schedule the key's deletion or replace its policy,
  whatever their IAM policies say (an explicit deny wins);
- each key's own service statements (the EKS cluster role, EC2 Auto Scaling, FSx's S3 role), from the caller.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pulumi
import pulumi_aws as aws

# KMS allows 7 to 30 days; the maximum gives the longest chance to cancel a mistaken deletion, after which
# everything the key encrypted is unreadable.
KEY_DELETION_WINDOW_DAYS = 30
ACCOUNT_ROOT_SID = "AccountUsesKeyThroughIam"
ADMINISTRATORS_SID = "KeyAdministrators"
DENY_DESTRUCTION_SID = "DenyDestructionExceptAdministrators"

# What IAM may grant the account's principals: use, grants for AWS services (EBS, FSx, EKS), and reads.
USAGE_ACTIONS: tuple[str, ...] = (
    "kms:Encrypt",
    "kms:Decrypt",
    "kms:ReEncrypt*",
    "kms:GenerateDataKey*",
    "kms:DescribeKey",
    "kms:CreateGrant",
    "kms:ListGrants",
    "kms:RevokeGrant",
    "kms:GetKeyPolicy",
    "kms:GetKeyRotationStatus",
    "kms:ListResourceTags",
)
# The key administrators' actions (the KMS default policy's "Allow access for Key Administrators" list).
ADMINISTRATOR_ACTIONS: tuple[str, ...] = (
    "kms:Create*",
    "kms:Describe*",
    "kms:Enable*",
    "kms:List*",
    "kms:Put*",
    "kms:Update*",
    "kms:Revoke*",
    "kms:Disable*",
    "kms:Get*",
    "kms:Delete*",
    "kms:TagResource",
    "kms:UntagResource",
    "kms:ScheduleKeyDeletion",
    "kms:CancelKeyDeletion",
    "kms:RotateKeyOnDemand",
)
# What only administrators may do, even when an IAM policy allows it: deleting the key (everything it
# encrypted becomes unreadable) and replacing its policy (which could remove this very statement).
DESTRUCTIVE_ACTIONS: tuple[str, ...] = ("kms:ScheduleKeyDeletion", "kms:PutKeyPolicy")


def account_root_statement(partition: str, account_id: str) -> dict[str, Any]:
    """Without a statement for the account no IAM policy can grant use of the key (KMS Developer Guide,
    "Default key policy"); this one lets IAM grant use, not administration."""
    return {
        "Sid": ACCOUNT_ROOT_SID,
        "Effect": "Allow",
        "Principal": {"AWS": f"arn:{partition}:iam::{account_id}:root"},
        "Action": list(USAGE_ACTIONS),
        "Resource": "*",
    }


def administrator_statements(administrators: Sequence[str]) -> list[dict[str, Any]]:
    """Administrators may administer the key; nobody else may delete it or replace its policy."""
    admins = sorted(set(administrators))
    if not admins:
        raise ValueError("a key needs at least one administrator")
    return [
        {
            "Sid": ADMINISTRATORS_SID,
            "Effect": "Allow",
            "Principal": {"AWS": admins},
            "Action": list(ADMINISTRATOR_ACTIONS),
            "Resource": "*",
        },
        {
            "Sid": DENY_DESTRUCTION_SID,
            "Effect": "Deny",
            "Principal": {"AWS": "*"},
            "Action": list(DESTRUCTIVE_ACTIONS),
            "Resource": "*",
            # aws:PrincipalArn is the role ARN (not the session) for assumed roles: it names who, not which session.
            "Condition": {"ArnNotEquals": {"aws:PrincipalArn": admins}},
        },
    ]


def with_administrators(policy: dict[str, Any], administrators: Sequence[str]) -> dict[str, Any]:
    """`policy` with the administrator statements appended."""
    return {**policy, "Statement": [*policy["Statement"], *administrator_statements(administrators)]}


def deployer_arn(parent: pulumi.Resource) -> pulumi.Output[str]:
    """The IAM principal running the deployment: for an assumed role its role ARN (the session context's
    issuer), for a user its user ARN. That is what `aws:PrincipalArn` holds in its requests."""
    invoke = pulumi.InvokeOutputOptions(parent=parent)
    caller = aws.get_caller_identity_output(opts=invoke)
    return aws.iam.get_session_context_output(arn=caller.arn, opts=invoke).issuer_arn


def customer_key(
    name: str,
    *,
    description: str,
    policy: pulumi.Input[str],
    alias: str,
    parent: pulumi.Resource,
    protect: bool,
    administrators: Sequence[str] = (),
) -> aws.kms.Key:
    """A rotating customer-managed key named `name` with `policy` (JSON: the account statement and the key's
    service statements), the administrator statements for the deploying principal and `administrators`, and
    the alias `alias/<alias>`."""
    full_policy = pulumi.Output.all(pulumi.Output.from_input(policy), deployer_arn(parent)).apply(
        lambda v: json.dumps(with_administrators(json.loads(v[0]), [v[1], *administrators]))
    )
    key = aws.kms.Key(
        name,
        aws.kms.KeyArgs(
            description=description,
            enable_key_rotation=True,
            deletion_window_in_days=KEY_DELETION_WINDOW_DAYS,
            policy=full_policy,
        ),
        opts=pulumi.ResourceOptions(parent=parent, protect=protect),
    )
    aws.kms.Alias(
        f"{name}-alias",
        aws.kms.AliasArgs(name=f"alias/{alias}", target_key_id=key.key_id),
        opts=pulumi.ResourceOptions(parent=parent),
    )
    return key

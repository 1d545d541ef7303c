"""Customer-managed KMS keys, made one way: rotation on, the longest deletion window, an explicit key policy
that starts with the account-root statement, and an alias. Used for the EKS secrets key, the node-volume
key and the training-data key."""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_aws as aws

# KMS allows 7 to 30 days; the maximum gives the longest chance to cancel a mistaken deletion, after which
# everything the key encrypted is unreadable.
KEY_DELETION_WINDOW_DAYS = 30
ACCOUNT_ROOT_SID = "AccountAdministersKeyThroughIam"


def account_root_statement(partition: str, account_id: str) -> dict[str, Any]:
    """Without this statement no IAM policy can grant use of the key (KMS Developer Guide, "Default key
    policy"): the account administers the key through IAM."""
    return {
        "Sid": ACCOUNT_ROOT_SID,
        "Effect": "Allow",
        "Principal": {"AWS": f"arn:{partition}:iam::{account_id}:root"},
        "Action": "kms:*",
        "Resource": "*",
    }


def customer_key(
    name: str,
    *,
    description: str,
    policy: pulumi.Input[str],
    alias: str,
    parent: pulumi.Resource,
    protect: bool,
) -> aws.kms.Key:
    """A rotating customer-managed key named `name` with `policy` (JSON) and the alias `alias/<alias>`."""
    key = aws.kms.Key(
        name,
        aws.kms.KeyArgs(
            description=description,
            enable_key_rotation=True,
            deletion_window_in_days=KEY_DELETION_WINDOW_DAYS,
            policy=policy,
        ),
        opts=pulumi.ResourceOptions(parent=parent, protect=protect),
    )
    aws.kms.Alias(
        f"{name}-alias",
        aws.kms.AliasArgs(name=f"alias/{alias}", target_key_id=key.key_id),
        opts=pulumi.ResourceOptions(parent=parent),
    )
    return key

"""The telemetry key: one customer-managed KMS key for the stack's CloudWatch log groups (VPC flow logs, the EKS
control plane's audit log, FSx) and the alert topic, so who may read them is the key policy's decision and the
keys' administrators', not any principal with `logs:*` or `sns:*` alone.

Its policy (components/kms.py adds the account and administrator statements):
- CloudWatch Logs (`logs.<region>.amazonaws.com`) uses it only for the stack's own log groups: the encryption
  context `aws:logs:arn` names the log group (CloudWatch Logs User Guide, "Encrypt log data in CloudWatch Logs using
  AWS KMS", step 2: the key policy for the logs principal with `kms:EncryptionContext:aws:logs:arn`);
- Amazon Managed Service for Prometheus (`aps.amazonaws.com`), the alert topic's one publisher, may generate data
  keys and decrypt only for that topic: SNS names the topic in the encryption context `aws:sns:topicArn` (AMP User
  Guide, "Giving Amazon Managed Service for Prometheus permission to send alert messages to your Amazon SNS topic":
  an encrypted topic needs kms:GenerateDataKey* and kms:Decrypt for aps.amazonaws.com on its key), and only for
  this account (`aws:SourceAccount`). No CloudWatch alarm publishes to the topic; one that does would need
  `cloudwatch.amazonaws.com` in the same statement.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_aws as aws

from components.kms import account_root_statement, customer_key
from components.naming import aws_partition, child_name, physical_name

LOGS_ACTIONS = ("kms:Encrypt*", "kms:Decrypt*", "kms:ReEncrypt*", "kms:GenerateDataKey*")
PUBLISHER_ACTIONS = ("kms:GenerateDataKey*", "kms:Decrypt")
ALERT_PUBLISHER = "aps.amazonaws.com"


def log_group_arn(partition: str, region: str, account_id: str, name: str) -> str:
    """A log group's ARN as CloudWatch Logs puts it in the encryption context (no `:*` suffix)."""
    return f"arn:{partition}:logs:{region}:{account_id}:log-group:{name}"


def alert_topic_name(base_name: str) -> str:
    """The alert topic's physical name (components/health/observability.py creates it)."""
    return physical_name(base_name, "alerts")


def telemetry_key_policy(
    partition: str, region: str, account_id: str, log_groups: Sequence[str], topic_name: str | None
) -> dict[str, Any]:
    """The key policy's account and service statements (the administrators are added by `customer_key`)."""
    statements: list[dict[str, Any]] = [account_root_statement(partition, account_id)]
    if log_groups:
        statements += [
            {
                "Sid": "CloudWatchLogsForTheStacksLogGroups",
                "Effect": "Allow",
                "Principal": {"Service": f"logs.{region}.amazonaws.com"},
                "Action": list(LOGS_ACTIONS),
                "Resource": "*",  # in a key policy: this key
                "Condition": {
                    # The context value is a plain string (KMS compares it exactly): StringEquals, not ArnEquals.
                    "StringEquals": {
                        "kms:EncryptionContext:aws:logs:arn": [
                            log_group_arn(partition, region, account_id, name) for name in log_groups
                        ]
                    }
                },
            },
            {
                # DescribeKey carries no encryption context: the key's metadata only.
                "Sid": "CloudWatchLogsDescribesTheKey",
                "Effect": "Allow",
                "Principal": {"Service": f"logs.{region}.amazonaws.com"},
                "Action": ["kms:DescribeKey"],
                "Resource": "*",
            },
        ]
    if topic_name is not None:
        topic_arn = f"arn:{partition}:sns:{region}:{account_id}:{topic_name}"
        statements.append(
            {
                "Sid": "AlertManagerPublishesToTheAlertTopic",
                "Effect": "Allow",
                "Principal": {"Service": ALERT_PUBLISHER},
                "Action": list(PUBLISHER_ACTIONS),
                "Resource": "*",
                "Condition": {
                    "StringEquals": {
                        "aws:SourceAccount": account_id,
                        "kms:EncryptionContext:aws:sns:topicArn": topic_arn,
                    }
                },
            }
        )
    return {"Version": "2012-10-17", "Statement": statements}


@dataclass
class TelemetryKeyArgs:
    base_name: str
    region: str
    log_groups: Sequence[str]
    """The physical names of every log group the stack creates."""
    alert_topic_name: str | None
    """The alert topic's physical name; None without one."""
    administrators: Sequence[str] = ()
    protect: bool = False


class TelemetryKey(pulumi.ComponentResource):
    """The key of the stack's log groups and alert topic (see the module docstring for its policy)."""

    key_arn: pulumi.Output[str]

    def __init__(self, name: str, args: TelemetryKeyArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("trainstack:security:TelemetryKey", name, None, opts)
        partition = aws_partition(args.region)
        account = aws.get_caller_identity_output(opts=pulumi.InvokeOutputOptions(parent=self)).account_id
        policy = account.apply(
            lambda a: json.dumps(
                telemetry_key_policy(partition, args.region, a, list(args.log_groups), args.alert_topic_name)
            )
        )
        key = customer_key(
            child_name(name, "key"),
            description=f"{args.base_name}: CloudWatch log groups and the alert topic",
            policy=policy,
            alias=physical_name(args.base_name, "telemetry"),
            parent=self,
            protect=args.protect,
            administrators=args.administrators,
        )
        self.key_arn = key.arn
        self.register_outputs({"key_arn": self.key_arn})

"""The telemetry key's policy: CloudWatch Logs only for the stack's log groups, the alert manager only for the alert
topic, and nothing for anyone else beyond the account's IAM delegation."""

from __future__ import annotations

from components.security.telemetry_key import alert_topic_name, log_group_arn, telemetry_key_policy

ACCOUNT = "123456789012"
GROUPS = ["/aws/eks/trainstack-prod/cluster", "/aws/vpc-flow-logs/trainstack-prod"]


def by_sid(policy: dict) -> dict:
    return {s["Sid"]: s for s in policy["Statement"]}


def test_logs_may_use_the_key_for_the_stacks_log_groups_only() -> None:
    statements = by_sid(telemetry_key_policy("aws", "us-east-1", ACCOUNT, GROUPS, "trainstack-prod-alerts"))
    logs = statements["CloudWatchLogsForTheStacksLogGroups"]
    assert logs["Principal"] == {"Service": "logs.us-east-1.amazonaws.com"}
    assert logs["Condition"] == {
        "StringEquals": {
            "kms:EncryptionContext:aws:logs:arn": [
                f"arn:aws:logs:us-east-1:{ACCOUNT}:log-group:/aws/eks/trainstack-prod/cluster",
                f"arn:aws:logs:us-east-1:{ACCOUNT}:log-group:/aws/vpc-flow-logs/trainstack-prod",
            ]
        }
    }
    assert "kms:CreateGrant" not in logs["Action"] and all(not a.startswith("kms:Describe") for a in logs["Action"])
    assert statements["CloudWatchLogsDescribesTheKey"]["Action"] == ["kms:DescribeKey"]


def test_the_alert_manager_may_publish_to_the_alert_topic_only_for_this_account() -> None:
    statements = by_sid(telemetry_key_policy("aws", "us-east-1", ACCOUNT, GROUPS, "trainstack-prod-alerts"))
    aps = statements["AlertManagerPublishesToTheAlertTopic"]
    assert aps["Principal"] == {"Service": "aps.amazonaws.com"}
    assert sorted(aps["Action"]) == ["kms:Decrypt", "kms:GenerateDataKey*"]
    assert aps["Condition"] == {
        "StringEquals": {
            "aws:SourceAccount": ACCOUNT,
            "kms:EncryptionContext:aws:sns:topicArn": f"arn:aws:sns:us-east-1:{ACCOUNT}:trainstack-prod-alerts",
        }
    }


def test_without_log_groups_or_topic_only_the_account_statement_remains() -> None:
    policy = telemetry_key_policy("aws-us-gov", "us-gov-west-1", ACCOUNT, [], None)
    assert [s["Sid"] for s in policy["Statement"]] == ["AccountUsesKeyThroughIam"]
    assert not any(s.get("Action") == "kms:*" for s in policy["Statement"])


def test_names_follow_the_partition_and_the_components() -> None:
    assert log_group_arn("aws-cn", "cn-north-1", ACCOUNT, "/aws/fsx/x") == (
        f"arn:aws-cn:logs:cn-north-1:{ACCOUNT}:log-group:/aws/fsx/x"
    )
    assert alert_topic_name("trainstack-prod") == "trainstack-prod-alerts"

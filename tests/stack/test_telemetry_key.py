"""The telemetry key on the committed stacks: every log group and the alert topic use it, and its policy names
exactly the log groups and the topic the stack creates (a new log group without its name would fail at deploy)."""

from __future__ import annotations

import json

import pytest

from tests.conftest import STACKS, recording


@pytest.mark.slow
@pytest.mark.parametrize("stack", STACKS)
def test_every_log_group_and_the_alert_topic_use_the_telemetry_key(stack: str) -> None:
    rec = recording(stack)
    [key] = [k for k in rec.by_type("aws:kms/key:Key") if k.name == "telemetry-key"]
    arn = key.outputs["arn"]
    groups = rec.by_type("aws:cloudwatch/logGroup:LogGroup")
    topics = rec.by_type("aws:sns/topic:Topic")
    assert groups and all(g.inputs["kmsKeyId"] == arn for g in groups)
    assert all(t.inputs["kmsMasterKeyId"] == arn for t in topics)
    statements = {s.get("Sid"): s for s in json.loads(key.inputs["policy"])["Statement"]}
    named = statements["CloudWatchLogsForTheStacksLogGroups"]["Condition"]["StringEquals"]
    assert sorted(a.split(":log-group:", 1)[1] for a in named["kms:EncryptionContext:aws:logs:arn"]) == sorted(
        g.inputs["name"] for g in groups
    )
    topic_arns = [t.outputs["arn"] for t in topics]
    aps = statements.get("AlertManagerPublishesToTheAlertTopic")
    assert (aps["Condition"]["StringEquals"]["kms:EncryptionContext:aws:sns:topicArn"] if aps else None) == (
        topic_arns[0] if topic_arns else None
    )

"""FleetHealth under the recording mocks: the agent always; with metrics, AMP, its collector, alerting to SNS,
exporters and Grafana, each wired the way AMP and the charts expect."""

from __future__ import annotations

import json

import pulumi
import pytest
import yaml

from components.health.alert_rules import rules_yaml
from components.health.observability import NODE_MONITORING_AGENT, FleetHealth, FleetHealthArgs
from stacks.schema import HealthSpec
from tests.component.helpers import aws_opts, k8s_opts
from tests.conftest import run_component


def build(metrics: bool, fsx_throughput_mb_s: float | None) -> FleetHealth:
    return FleetHealth(
        "health",
        FleetHealthArgs(
            spec=HealthSpec(alert_emails=["oncall@example.com"]),
            base_name="trainstack-test",
            region="us-east-1",
            cluster_name="trainstack-test",
            cluster_arn="arn:aws:eks:us-east-1:111122223333:cluster/trainstack-test",
            subnet_ids=["subnet-a", "subnet-b"],
            security_group_ids=["sg-cluster"],
            metrics=metrics,
            fsx_throughput_mb_s=fsx_throughput_mb_s,
        ),
        opts=pulumi.ResourceOptions(providers=[aws_opts().provider, k8s_opts().provider]),
    )


@pytest.fixture(scope="module")
def full():
    return run_component(lambda: build(True, 2000.0))


def test_without_metrics_only_the_agent_exists() -> None:
    rec = run_component(lambda: build(False, None))
    custom = {r.type for r in rec.resources if r.custom and not r.type.startswith("pulumi:providers")}
    assert custom == {"aws:eks/addon:Addon"}
    assert rec.one("aws:eks/addon:Addon").inputs["addonName"] == NODE_MONITORING_AGENT


def test_shipped_rules_are_the_generated_rules(full) -> None:
    assert full.one("aws:amp/ruleGroupNamespace:RuleGroupNamespace").inputs["data"] == rules_yaml(2000.0)


def test_alerts_reach_the_topic_and_only_the_workspace_may_publish(full) -> None:
    definition = yaml.safe_load(full.one("aws:amp/alertManagerDefinition:AlertManagerDefinition").inputs["definition"])
    config = yaml.safe_load(definition["alertmanager_config"])
    (receiver,) = config["receivers"]
    assert receiver["sns_configs"][0]["sigv4"] == {"region": "us-east-1"}
    policy = json.loads(full.one("aws:sns/topicPolicy:TopicPolicy").inputs["policy"])
    (statement,) = policy["Statement"]
    assert statement["Principal"] == {"Service": "aps.amazonaws.com"}
    assert set(statement["Condition"]) == {"ArnEquals", "StringEquals"}
    assert full.one("aws:sns/topicSubscription:TopicSubscription").inputs["endpoint"] == "oncall@example.com"


def test_collector_spans_two_subnets_at_30s_or_slower(full) -> None:
    scraper = full.one("aws:amp/scraper:Scraper")
    assert len(scraper.inputs["source"]["eks"]["subnetIds"]) >= 2  # AMP: at least two subnets in two AZs
    config = yaml.safe_load(scraper.inputs["scrapeConfiguration"])
    assert int(config["global"]["scrape_interval"].rstrip("s")) >= 30
    for job in config["scrape_configs"]:
        auth = job.get("authorization")
        assert auth is None or auth["credentials_file"] == "/var/run/secrets/kubernetes.io/serviceaccount/token"


def test_grafana_reads_the_workspace_with_sigv4_and_loads_every_dashboard(full) -> None:
    releases = {r.inputs["chart"]: r for r in full.by_type("kubernetes:helm.sh/v3:Release")}
    assert set(releases) == {
        "prometheus-node-exporter",
        "kube-state-metrics",
        "prometheus-yet-another-cloudwatch-exporter",
        "grafana",
    }
    (source,) = releases["grafana"].inputs["values"]["datasources"]["datasources.yaml"]["datasources"]
    assert source["jsonData"]["sigV4Auth"] is True and source["url"].startswith("https://aps-workspaces.us-east-1.")
    maps = [
        m
        for m in full.by_type("kubernetes:core/v1:ConfigMap")
        if m.inputs["metadata"]["labels"] == {"grafana_dashboard": "1"}
    ]
    assert len(maps) == 4
    # The sidecar finds them in Grafana's own namespace, with a Role there instead of the chart's ClusterRole
    # (which reads every Secret of the cluster).
    grafana = releases["grafana"].inputs
    assert grafana["values"]["rbac"] == {"namespaced": True}
    assert "searchNamespace" not in grafana["values"]["sidecar"]["dashboards"]
    assert {m.inputs["metadata"]["namespace"] for m in maps} == {grafana["namespace"]}
    associations = {
        a.inputs["serviceAccount"] for a in full.by_type("aws:eks/podIdentityAssociation:PodIdentityAssociation")
    }
    assert associations == {"grafana", "yace"}

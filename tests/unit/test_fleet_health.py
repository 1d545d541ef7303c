"""Fleet health, pure parts: the alert rules file is what the code ships, every alert has a firing and a
non-firing promtool case, dashboards are well-formed and query only scraped metrics, repair limits."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from pydantic import ValidationError

from components.fleet_metrics import (
    EFA_TEXTFILE_DIR,
    scrape_configuration,
    scrape_configuration_yaml,
    scraped_metric_names,
    yace_config,
    yace_metric,
)
from components.gpu.gpu_nodes import node_repair_config
from components.health.alert_rules import REFERENCE_FSX_THROUGHPUT_MB_S, alerts, rule_groups, rules_yaml
from components.health.checkpoints import checkpoint_env
from components.health.dashboards import DATASOURCE_UID, dashboards
from components.health.observability import (
    DASHBOARD_LABEL,
    GRAFANA_SERVICE_ACCOUNT,
    grafana_values,
    node_exporter_values,
    workspace_endpoint,
)
from components.storage.lustre import file_system_name
from stacks.schema import HealthSpec, NodeRepairSpec
from tests.conftest import edited_config

MONITORING = Path(__file__).resolve().parents[2] / "monitoring"
METRIC = re.compile(r"\b(DCGM_FI_\w+|efa_\w+|node_\w+|kube_\w+|kueue_\w+|aws_fsx_\w+)\b")


def test_committed_rules_file_is_the_generated_one() -> None:
    assert (MONITORING / "rules.yaml").read_text() == rules_yaml(REFERENCE_FSX_THROUGHPUT_MB_S)


def test_every_alert_has_a_firing_and_a_silent_promtool_case() -> None:
    tests = yaml.safe_load((MONITORING / "rules.test.yaml").read_text())["tests"]
    firing: set[str] = set()
    silent: set[str] = set()
    for case in tests:
        for check in case["alert_rule_test"]:
            (firing if check["exp_alerts"] else silent).add(check["alertname"])
    names = {a.name for a in alerts(REFERENCE_FSX_THROUGHPUT_MB_S)}
    assert names - firing == set(), "alerts without a firing case"
    assert names - silent == set(), "alerts without a non-firing case"


def test_lustre_alerts_exist_only_with_a_file_system() -> None:
    without = {a.name for a in alerts(None)}
    assert not any(name.startswith("Lustre") for name in without)
    assert {"LustreNearlyFull", "LustreThroughputSaturated"} <= {a.name for a in alerts(1000.0)}


def test_throughput_alert_follows_the_provisioned_throughput() -> None:
    (rule,) = [a for a in alerts(1000.0) if a.name == "LustreThroughputSaturated"]
    assert rule.expr.endswith("> 900000000")  # 90% of 1,000 MB/s in bytes per second


@pytest.mark.parametrize("fsx", [True, False])
def test_alerts_and_dashboards_query_only_scraped_metrics(fsx: bool) -> None:
    scraped = scraped_metric_names()
    exprs = [a.expr for a in alerts(1000.0 if fsx else None)]
    for board in dashboards(fsx).values():
        exprs += [t["expr"] for p in board["panels"] for t in p.get("targets", [])]
    used = {m for expr in exprs for m in METRIC.findall(expr)}
    assert used and used <= scraped, sorted(used - scraped)


@pytest.mark.parametrize("fsx", [True, False])
def test_dashboards_are_well_formed(fsx: bool) -> None:
    boards = dashboards(fsx)
    assert ("storage.json" in boards) is fsx
    uids = [b["uid"] for b in boards.values()]
    assert len(set(uids)) == len(uids)
    for board in boards.values():
        ids = [p["id"] for p in board["panels"]]
        assert len(set(ids)) == len(ids) and 0 not in ids
        for panel in board["panels"]:
            if panel["type"] == "row":
                continue
            assert panel["datasource"]["uid"] == DATASOURCE_UID
            refs = [t["refId"] for t in panel["targets"]]
            assert refs and len(set(refs)) == len(refs)


def test_scrape_config_adds_yace_only_with_a_file_system() -> None:
    jobs = lambda fsx: {j["job_name"] for j in scrape_configuration(30, fsx)["scrape_configs"]}  # noqa: E731
    assert "yace" in jobs(True) and "yace" not in jobs(False)
    assert {"dcgm-exporter", "node-exporter", "kube-state-metrics", "kueue"} <= jobs(False)


def test_the_scrape_configuration_is_plain_yaml_and_reads_back_equal() -> None:
    # Every per-node job shares the same relabel rule: safe_dump would write it once with an anchor and alias it.
    text = scrape_configuration_yaml(30, fsx=True)
    assert "&" not in text and "*id" not in text
    assert yaml.safe_load(text) == scrape_configuration(30, fsx=True)


def test_yace_reads_only_the_stacks_file_system_by_its_name_tag() -> None:
    config = yaml.safe_load(yace_config("us-east-1", "trainstack-prod-lustre"))
    [job] = config["discovery"]["jobs"]
    assert job["type"] == "AWS/FSx" and job["regions"] == ["us-east-1"]
    [tag] = job["searchTags"]
    assert tag["key"] == "Name"
    # YACE matches tag values as regular expressions: anchored, the name's own characters escaped.
    assert re.search(tag["value"], "trainstack-prod-lustre")
    assert not re.search(tag["value"], "trainstack-prod-lustre-old") and not re.search(
        tag["value"], "x-trainstack-prod-lustre"
    )
    assert file_system_name("trainstack-prod") == "trainstack-prod-lustre"


def test_no_gpu_or_efa_rules_where_no_dcgm_exporter_runs() -> None:
    assert {"trainstack-gpu", "trainstack-efa"} <= {g["name"] for g in rule_groups(None)["groups"]}
    without = {g["name"] for g in rule_groups(1000.0, gpus=False)["groups"]}
    assert without == {"trainstack-nodes", "trainstack-queues", "trainstack-lustre"}


def test_yace_metric_names() -> None:
    assert yace_metric("MetadataOperations", "Sum") == "aws_fsx_metadata_operations_sum"


def test_repair_config_carries_the_limits() -> None:
    on = node_repair_config(
        NodeRepairSpec(max_parallel_nodes_repaired_count=2, max_unhealthy_node_threshold_percentage=30)
    )
    assert (on.enabled, on.max_parallel_nodes_repaired_count, on.max_unhealthy_node_threshold_percentage) == (
        True,
        2,
        30,
    )
    off = node_repair_config(NodeRepairSpec(enabled=False))
    assert off.enabled is False and off.max_parallel_nodes_repaired_count is None


@pytest.mark.parametrize(
    "bad", [{"max_parallel_nodes_repaired_count": 0}, {"max_unhealthy_node_threshold_percentage": 101}]
)
def test_repair_limits_keep_to_the_eks_api_bounds(bad: dict[str, int]) -> None:
    with pytest.raises(ValidationError):
        HealthSpec.model_validate({"node_repair": bad})


def test_an_alert_address_listed_twice_is_refused_and_distinct_ones_kept() -> None:
    # Each address becomes its own SNS e-mail subscription (components/health/observability.py): one per inbox.
    with pytest.raises(ValidationError, match=re.escape("health.alert_emails has duplicates: ['a@x.io', 'a@x.io']")):
        HealthSpec.model_validate({"alert_emails": ["a@x.io", "a@x.io"]})
    assert HealthSpec.model_validate({"alert_emails": ["a@x.io", "b@x.io"]}).alert_emails == ["a@x.io", "b@x.io"]
    assert HealthSpec.model_validate({}).alert_emails == []


def test_metrics_default_by_environment() -> None:
    assert edited_config("dev", lambda d: None).metrics_enabled is False
    assert edited_config("prod", lambda d: None).metrics_enabled is True

    def on(document: dict) -> None:
        document["health"] = {"metrics": True}

    assert edited_config("dev", on).metrics_enabled is True


def test_checkpoint_env_leaves_the_job_directory_to_the_runtime() -> None:
    env = checkpoint_env("research", "ckpt")
    assert env["TRAINSTACK_CHECKPOINT_S3_URI"] == "s3://ckpt/research/"
    assert "TRAINSTACK_CHECKPOINT_DIR" not in env
    assert env["TRAINSTACK_SERVICE_ACCOUNT"] == "training"  # the account team_storage gives that prefix


# ------------------------------------------------------------------------------------ the charts' values


def test_node_exporter_reads_the_counters_its_sidecar_writes_and_the_host_sys_read_only() -> None:
    values = node_exporter_values(HealthSpec())
    assert values["tolerations"] == [{"operator": "Exists"}]  # every node, whatever its taints
    [sidecar] = values["sidecars"]
    script = sidecar["command"][-1]
    assert f"out={EFA_TEXTFILE_DIR}/efa.prom" in script and "/host/sys/class/infiniband/" in script
    assert values["extraArgs"] == [f"--collector.textfile.directory={EFA_TEXTFILE_DIR}"]
    # The sidecar writes the textfile into the volume it shares with node-exporter ...
    assert values["sidecarVolumeMount"] == [{"name": "efa-textfile", "mountPath": EFA_TEXTFILE_DIR, "readOnly": False}]
    # ... and reads the host's /sys, which it must never be able to change.
    assert values["sidecarHostVolumeMounts"] == [
        {"name": "host-sys", "hostPath": "/sys", "mountPath": "/host/sys", "readOnly": True}
    ]


def test_grafana_queries_the_workspace_by_default_with_sigv4_and_loads_the_labelled_dashboards() -> None:
    endpoint = workspace_endpoint("us-east-1", "ws-0123")
    values = grafana_values(endpoint, "us-east-1")
    # the service account the Pod Identity association names, created by the chart
    assert values["serviceAccount"] == {"create": True, "name": GRAFANA_SERVICE_ACCOUNT}
    assert values["rbac"] == {"namespaced": True}  # a Role in its namespace, not a ClusterRole on every Secret
    assert values["grafana.ini"]["auth"]["sigv4_auth_enabled"] is True  # else the SigV4 data source is refused
    provisioning = values["datasources"]["datasources.yaml"]
    assert provisioning["apiVersion"] == 1  # Grafana's data source provisioning file format
    [source] = provisioning["datasources"]
    assert source["uid"] == DATASOURCE_UID and source["type"] == "prometheus"  # what the dashboards query
    assert source["url"] == "https://aps-workspaces.us-east-1.amazonaws.com/workspaces/ws-0123"
    assert source["isDefault"] is True
    assert source["jsonData"] == {"sigV4Auth": True, "sigV4AuthType": "default", "sigV4Region": "us-east-1"}
    # the sidecar loads every ConfigMap labelled as FleetHealth labels the dashboards
    sidecar = values["sidecar"]["dashboards"]
    assert sidecar["enabled"] is True and {sidecar["label"]: sidecar["labelValue"]} == {DASHBOARD_LABEL: "1"}

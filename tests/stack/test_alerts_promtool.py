"""promtool on the shipped rules with series labelled the way the shipped scrape configuration labels them.

monitoring/rules.test.yaml proves each rule's logic on hand-written series; these tests feed the rules the labels
a series really carries once the managed collector has scraped it: the exporter's own labels, under the target
labels the recorded scrape job's relabelling gives the exporter's pod (the chart's pod labels at the pinned
version), with Prometheus's rule for a clash (honor_labels false: the scraped one becomes exported_<name>).
promtool then says which node the alert names: the node the series is about, or the exporter pod's node.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import recording
from trainstack.journeys.alerts import KSM, NODE, _plan, exporter_pods, scraped_by, stored_labels

pytestmark = pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool comes with `make test`")

GPU_NODE = "ip-10-0-1-7.ec2.internal"  # the node the series is about
EXPORTER_NODE = "ip-10-0-9-3.ec2.internal"  # where kube-state-metrics itself runs


def _stored(scrape: dict[str, Any]) -> dict[str, str]:
    """kube_node_status_condition for GPU_NODE as stored after the kube-state-metrics job scraped it."""
    plan = _plan(recording("prod"))
    [pod] = exporter_pods(KSM, plan.releases["kube-state-metrics"])
    [job] = [j for j in scrape["scrape_configs"] if j["job_name"] == "kube-state-metrics"]
    [target] = scraped_by(job, pod)
    target = {k: (EXPORTER_NODE if v == NODE else v) for k, v in target.items()}
    target |= {"job": job["job_name"], "instance": "10.0.9.30:8080"}
    return stored_labels({"node": GPU_NODE, "condition": "Ready", "status": "true"}, target)


def _promtool(tmp_path: Path, series: dict[str, str]) -> subprocess.CompletedProcess[str]:
    rec = recording("prod")
    [group] = rec.by_type("aws:amp/ruleGroupNamespace:RuleGroupNamespace")
    (tmp_path / "rules.yaml").write_text(group.inputs["data"])
    selector = ",".join(f'{k}="{v}"' for k, v in sorted(series.items()))
    test = {
        "rule_files": ["rules.yaml"],
        "evaluation_interval": "1m",
        "tests": [
            {
                "interval": "1m",
                "input_series": [{"series": f"kube_node_status_condition{{{selector}}}", "values": "0x60"}],
                "alert_rule_test": [
                    {
                        "eval_time": "50m",
                        "alertname": "NodeNotReady",
                        "exp_alerts": [
                            {
                                # The alert must name the node that is not Ready.
                                "exp_labels": {**series, "node": GPU_NODE, "severity": "critical"},
                                "exp_annotations": {
                                    "summary": f"{GPU_NODE} has not been Ready for 45 minutes",
                                    "description": "Auto repair replaces NotReady nodes after 30 minutes; "
                                    "this one is stuck.",
                                },
                            }
                        ],
                    }
                ],
            }
        ],
    }
    (tmp_path / "test.yaml").write_text(yaml.safe_dump(test, sort_keys=False))
    return subprocess.run(
        ["promtool", "test", "rules", str(tmp_path / "test.yaml")], capture_output=True, text=True, check=False
    )


def test_node_alerts_name_the_node_the_series_is_about(tmp_path: Path) -> None:
    scrape = yaml.safe_load(recording("prod").one("aws:amp/scraper:Scraper").inputs["scrapeConfiguration"])
    stored = _stored(scrape)
    assert stored["node"] == GPU_NODE and "exported_node" not in stored
    done = _promtool(tmp_path, stored)
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_node_relabel_on_kube_state_metrics_makes_promtool_see_the_wrong_node(tmp_path: Path) -> None:
    scrape = yaml.safe_load(recording("prod").one("aws:amp/scraper:Scraper").inputs["scrapeConfiguration"])
    [job] = [j for j in scrape["scrape_configs"] if j["job_name"] == "kube-state-metrics"]
    job["relabel_configs"].append({"source_labels": ["__meta_kubernetes_pod_node_name"], "target_label": "node"})
    stored = _stored(scrape)
    assert (stored["node"], stored["exported_node"]) == (EXPORTER_NODE, GPU_NODE)
    done = _promtool(tmp_path, stored)
    assert done.returncode != 0
    assert EXPORTER_NODE in done.stdout + done.stderr  # the alert came out naming the exporter's node

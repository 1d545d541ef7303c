"""The alerts journey's evaluators: Prometheus relabelling (cases from Prometheus's own tests), pod discovery's
targets, and what a rule's PromQL reads."""

from __future__ import annotations

from typing import Any

import pytest

from components.fleet_metrics import scrape_configuration
from trainstack.journeys.alerts import NODE, Pod, read_expression, relabel, scraped_by, targets


def r(source: list[str], regex: str = "(.*)", **fields: Any) -> dict[str, Any]:
    return {"source_labels": source, "regex": regex, **fields}


# prometheus/prometheus v2.42.0 model/relabel/relabel_test.go TestRelabel (v2.42.0 is the promtool `make test`
# runs): the cases of the actions this evaluator handles (replace, keep, drop), inputs and outputs as there.
UPSTREAM = [
    (
        {"a": "foo", "b": "bar", "c": "baz"},
        [r(["a"], "f(.*)", target_label="d", separator=";", replacement="ch${1}-ch${1}", action="replace")],
        {"a": "foo", "b": "bar", "c": "baz", "d": "choo-choo"},
    ),
    (
        {"a": "foo", "b": "bar", "c": "baz"},
        [
            r(["a", "b"], "f(.*);(.*)r", target_label="a", separator=";", replacement="b${1}${2}m", action="replace"),
            r(
                ["c", "a"],
                "(b).*b(.*)ba(.*)",
                target_label="d",
                separator=";",
                replacement="$1$2$2$3",
                action="replace",
            ),
        ],
        {"a": "boobam", "b": "bar", "c": "baz", "d": "boooom"},
    ),
    (
        {"a": "foo"},
        [
            r(["a"], ".*o.*", action="drop"),
            r(["a"], "f(.*)", target_label="d", separator=";", replacement="ch$1-ch$1", action="replace"),
        ],
        None,
    ),
    ({"a": "foo", "b": "bar"}, [r(["a"], ".*o.*", action="drop")], None),
    (
        {"a": "abc"},
        [r(["a"], ".*(b).*", target_label="d", separator=";", replacement="$1", action="replace")],
        {"a": "abc", "d": "b"},
    ),
    ({"a": "foo"}, [r(["a"], "no-match", action="drop")], {"a": "foo"}),
    ({"a": "foo"}, [r(["a"], "f|o", action="drop")], {"a": "foo"}),  # anchored: "foo" is not "f" or "o"
    ({"a": "foo"}, [r(["a"], "no-match", action="keep")], None),
    ({"a": "foo"}, [r(["a"], "f.*", action="keep")], {"a": "foo"}),
    ({"a": "boo"}, [r(["a"], "f", target_label="b", replacement="bar", action="replace")], {"a": "boo"}),
]


@pytest.mark.parametrize(("labels", "configs", "expected"), UPSTREAM)
def test_relabel_agrees_with_prometheus(labels: dict[str, str], configs: list[dict[str, Any]], expected: Any) -> None:
    assert relabel(labels, configs) == expected


def test_relabel_defaults_and_what_it_refuses_to_guess() -> None:
    # Default action replace, regex (.*), replacement $1: copy a label (the `node` relabel of a scrape job).
    assert relabel(
        {"__meta_kubernetes_pod_node_name": "n1"}, [r(["__meta_kubernetes_pod_node_name"], target_label="node")]
    ) == {
        "__meta_kubernetes_pod_node_name": "n1",
        "node": "n1",
    }
    # An empty result deletes the target label.
    assert relabel({"a": "", "b": "x"}, [r(["a"], target_label="b")]) == {"a": ""}
    with pytest.raises(ValueError, match="hashmod"):
        relabel({"a": "x"}, [r(["a"], action="hashmod", modulus=10, target_label="b")])


def test_pod_discovery_makes_one_target_per_named_port_with_sanitised_labels() -> None:
    pod = Pod("mon", "ksm", "Deployment", {"app.kubernetes.io/name": "kube-state-metrics"}, ("http", "metrics"))
    found = targets(pod)
    assert [t["__meta_kubernetes_pod_container_port_name"] for t in found] == ["http", "metrics"]
    assert found[0]["__meta_kubernetes_pod_label_app_kubernetes_io_name"] == "kube-state-metrics"
    assert found[0]["__meta_kubernetes_pod_labelpresent_app_kubernetes_io_name"] == "true"


def test_the_shipped_jobs_keep_their_exporters_pods_and_only_per_node_ones_get_a_node_label() -> None:
    jobs = {j["job_name"]: j for j in scrape_configuration(30, fsx=True)["scrape_configs"]}
    ksm = Pod(
        "trainstack-monitoring",
        "ksm",
        "Deployment",
        {"app.kubernetes.io/name": "kube-state-metrics"},
        ("http", "metrics"),
    )
    [kept] = scraped_by(jobs["kube-state-metrics"], ksm)
    assert "node" not in kept  # its series name the node they are about themselves
    exporter = Pod(
        "trainstack-monitoring", "ne", "DaemonSet", {"app.kubernetes.io/name": "prometheus-node-exporter"}, ("metrics",)
    )
    [kept] = scraped_by(jobs["node-exporter"], exporter)
    assert kept["node"] == NODE
    yace = Pod(
        "trainstack-monitoring",
        "y",
        "Deployment",
        {"app.kubernetes.io/name": "prometheus-yet-another-cloudwatch-exporter"},
        ("http",),
    )
    assert scraped_by(jobs["yace"], yace)
    assert not scraped_by(jobs["yace"], Pod("elsewhere", "y", "Deployment", yace.labels, ("http",)))  # namespace
    assert not scraped_by(jobs["kube-state-metrics"], exporter)  # another exporter's pods


@pytest.mark.parametrize(
    ("expr", "metrics", "grouping"),
    [
        ('kube_node_status_condition{condition=~"A|B",status="false"} == 1', ["kube_node_status_condition"], set()),
        (
            'sum by (node, device) (increase(efa_hw_counter_total{counter=~"x"}[10m])) > 0',
            ["efa_hw_counter_total"],
            {"node", "device"},
        ),
        (
            "DCGM_FI_DEV_XID_ERRORS == 79 or on(node) (max by (node) "
            '(kube_node_status_capacity{resource="nvidia_com_gpu"}) > count by (node) (DCGM_FI_DEV_GPU_TEMP))',
            ["DCGM_FI_DEV_XID_ERRORS", "kube_node_status_capacity", "DCGM_FI_DEV_GPU_TEMP"],
            {"node"},
        ),
        (
            "(sum(aws_fsx_data_read_bytes_sum) + sum(aws_fsx_data_write_bytes_sum)) / 60 > 2.7e10",
            ["aws_fsx_data_read_bytes_sum", "aws_fsx_data_write_bytes_sum"],
            set(),
        ),
        ("rate(a[5m]) * on(x) group_left(y) b offset 5m", ["a", "b"], {"x", "y"}),
    ],
)
def test_read_expression(expr: str, metrics: list[str], grouping: set[str]) -> None:
    found = read_expression(expr)
    assert list(found.metrics) == metrics
    assert found.grouping == grouping

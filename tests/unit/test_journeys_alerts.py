"""The alerts journey's evaluators: Prometheus relabelling (cases from Prometheus's own tests), pod discovery's
targets, and what a rule's PromQL reads."""

from __future__ import annotations

import copy
import dataclasses
import re
from collections.abc import Callable
from typing import Any

import pytest
import yaml

from components.fleet_metrics import dcgm_metrics_csv, scrape_configuration, yace_config
from components.health.observability import node_exporter_values
from components.k8s.scheduling import kueue_values
from stacks.schema import HealthSpec
from tests.conftest import stack_config
from trainstack.engine import UNKNOWN, RecordedResource, Recording
from trainstack.journeys import ALERTS, Step, Trip
from trainstack.journeys.alerts import (
    DCGM,
    DCGM_LABELS,
    KSM,
    METRICS,
    NODE,
    YACE,
    Exporter,
    Expression,
    Metric,
    Plan,
    Pod,
    Release,
    _config_step,
    _label_step,
    _metric,
    _plan,
    _rule_steps,
    _scrape_steps,
    exporter_pods,
    go_expand,
    printed_labels,
    read_expression,
    relabel,
    scraped_by,
    stored_labels,
    targets,
    walk,
)
from trainstack.journeys.workload_facts import chart_workloads
from trainstack.tokens import AMP_RULE_GROUP_NAMESPACE, AMP_SCRAPER, AWS_PROVIDER, FSX_LUSTRE, HELM_RELEASE


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


def test_an_expression_ending_in_a_metric_reads_it_and_label_matchers_name_no_metric() -> None:
    assert read_expression("up").metrics == ("up",)
    assert read_expression('a{job="x", b=~"c"} > b').metrics == ("a", "b")  # `job` and `b=~` are matchers
    assert read_expression("sum without (device) (a)") == Expression(("a",), frozenset({"device"}))
    assert read_expression("a and on (x, y) b").grouping == {"x", "y"}  # commas are separators, not labels


def test_printed_labels_are_the_annotations_dollar_labels() -> None:
    rule = {"annotations": {"summary": "{{ $labels.node }} is down", "description": "{{$labels.cluster_queue}}"}}
    assert printed_labels(rule) == {"node", "cluster_queue"}
    assert printed_labels({"alert": "A"}) == frozenset()


# ------------------------------------------------------------------------------------ relabelling, cont.


def test_labelmap_labeldrop_and_labelkeep_act_on_label_names() -> None:
    """<relabel_config> labelmap (copy each matching name's value to the replacement), labeldrop, labelkeep."""
    meta = {"__meta_kubernetes_pod_label_app": "x", "__meta_kubernetes_pod_name": "p", "job": "j"}
    mapped = relabel(meta, [{"action": "labelmap", "regex": "__meta_kubernetes_pod_label_(.+)"}])
    assert mapped == {**meta, "app": "x"}
    assert relabel(meta, [{"action": "labeldrop", "regex": "__meta_.*"}]) == {"job": "j"}
    assert relabel(meta, [{"action": "labelkeep", "regex": "__meta_.*"}]) == {
        "__meta_kubernetes_pod_label_app": "x",
        "__meta_kubernetes_pod_name": "p",
    }


def test_replace_joins_sources_with_the_default_separator_and_skips_an_invalid_target() -> None:
    assert relabel({"a": "x", "b": "y"}, [r(["a", "b", "missing"], "x;y;", target_label="c", replacement="ok")]) == {
        "a": "x",
        "b": "y",
        "c": "ok",
    }
    # the target expands to "9x", not a label name: Prometheus leaves the labels as they were
    assert relabel({"a": "9x"}, [r(["a"], target_label="$1")]) == {"a": "9x"}
    assert relabel({"a": "x"}, [r(["a"], target_label="${1}_copy")]) == {"a": "x", "x_copy": "x"}
    assert relabel({"a": "foo"}, [r(["a"], "F.*", action="KEEP")]) is None  # actions are case-insensitive


def test_go_expand_follows_regexp_expand() -> None:
    """Go regexp Expand: `$$` a dollar, `$1x` the (absent) group named 1x, `${1}x` group 1 then x, a named
    group by name, a group that did not take part expands to nothing."""
    match = re.match(r"(?P<first>a)(b)?(c)", "ac")
    assert match is not None
    assert go_expand("$$1-${1}x-$1x-$first-$2-$3-$9", match) == "$1-ax--a--c-"


def test_a_job_without_a_pod_role_or_of_other_namespaces_scrapes_nothing() -> None:
    pod = Pod("mon", "ksm", "Deployment", {"app": "ksm"}, ("http",))
    assert scraped_by({"kubernetes_sd_configs": [{"role": "endpoints"}]}, pod) == []
    assert scraped_by({"kubernetes_sd_configs": [{"role": "pod", "namespaces": {"names": ["other"]}}]}, pod) == []
    every = scraped_by({"kubernetes_sd_configs": [{"role": "pod"}, {"role": "node"}]}, pod)
    assert every == [{}]  # every namespace; the discovery labels (`__...`) are not stored


def test_a_stored_series_keeps_a_clashing_own_label_as_exported() -> None:
    """scrape_config honor_labels false: the target's label wins, the exporter's is renamed exported_<name>."""
    stored = stored_labels({"node": "ip-10-0-0-1", "gpu": "0"}, {"node": NODE, "job": "dcgm"})
    assert stored == {"exported_node": "ip-10-0-0-1", "gpu": "0", "node": NODE, "job": "dcgm"}


# ------------------------------------------------------------------------------------------ the alerts plan

MONITORING = "trainstack-monitoring"


def release(chart: str, version: str, name: str, namespace: str, values: dict[str, Any]) -> Release:
    return Release(name, namespace, values, chart_workloads(chart, version))


def shipped() -> dict[str, Release]:
    """The exporters' releases as the components build them, at the pinned chart versions."""
    return {
        "gpu-operator": release(
            "gpu-operator", "v25.3.4", "gpu-operator", "gpu-operator",
            {"dcgmExporter": {"enabled": True, "config": {"name": "dcgm-metrics", "data": dcgm_metrics_csv()}}},
        ),
        "prometheus-node-exporter": release(
            "prometheus-node-exporter", "4.56.1", "node-exporter", MONITORING, node_exporter_values(HealthSpec())
        ),
        "kube-state-metrics": release("kube-state-metrics", "8.4.0", "kube-state-metrics", MONITORING, {}),
        "kueue": release("kueue", "0.14.8", "kueue", "kueue-system", kueue_values("kubeflow_trainer", 300)),
        YACE.chart: release(YACE.chart, "0.47.0", "yace", MONITORING, {"config": yace_config("us-east-1", "prod-fsx")}),
    }  # fmt: skip


def plan(edit: Callable[[dict[str, Release]], None] | None = None, tags: dict[str, str] | None = None) -> Plan:
    releases = shipped()
    if edit:
        edit(releases)
    scrape = scrape_configuration(30, fsx=True)
    return Plan(releases, scrape, yaml.safe_dump(scrape), {"Name": "prod-fsx"} if tags is None else tags)


def with_values(chart: str, edit: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Release]], None]:
    def apply(releases: dict[str, Release]) -> None:
        values = copy.deepcopy(dict(releases[chart].values))
        edit(values)
        releases[chart] = dataclasses.replace(releases[chart], values=values)

    return apply


def produced(name: str, shipped_plan: Plan) -> Step:
    return _metric(name, shipped_plan)[1]


ALL_METRICS = [*METRICS, "DCGM_FI_DEV_XID_ERRORS", "aws_fsx_data_read_bytes_sum"]


@pytest.mark.parametrize("name", ALL_METRICS)
def test_every_known_metric_is_produced_and_scraped_on_the_shipped_configuration(name: str) -> None:
    metric, step = _metric(name, plan())
    assert metric is not None and step.holds, step.detail
    scrape, kept = _scrape_steps(metric, plan())
    assert [s.holds for s in scrape] == [True], scrape[0].detail
    assert {labels["job"] for _, labels in kept} == {metric.exporter.name}  # each exporter has its own job
    assert f"job {kept[0][1]['job']} keeps pod" in scrape[0].detail


def test_a_metric_no_known_exporter_produces_has_no_exporter() -> None:
    metric, step = _metric("my_custom_metric", plan())
    assert metric is None and not step.holds and step.name == "my_custom_metric has an exporter"


@pytest.mark.parametrize(
    "name", ["kube_node_status_condition", "DCGM_FI_DEV_XID_ERRORS", "aws_fsx_data_read_bytes_sum"]
)
def test_without_its_exporters_release_a_metric_is_neither_produced_nor_scraped(name: str) -> None:
    chart = {"kube": "kube-state-metrics", "DCGM": "gpu-operator", "aws": YACE.chart}[name.split("_")[0]]
    without = plan(lambda releases: releases.pop(chart))
    metric, step = _metric(name, without)
    assert metric is not None and not step.holds
    scrape, kept = _scrape_steps(metric, without)
    assert not scrape[0].holds and kept == [] and "no recorded pod" in scrape[0].detail


def test_a_dcgm_field_needs_the_field_list_and_its_config_map_name() -> None:
    field_list = "\n# comment\nDCGM_FI_DEV_XID_ERRORS , gauge, x\n\nDCGM_FI_DEV_GPU_TEMP, gauge, t\n"

    def config(**fields: Any) -> Callable[[dict[str, Any]], None]:
        return lambda values: values["dcgmExporter"].update(config=fields)

    listed = plan(with_values("gpu-operator", config(name="m", data=field_list)))
    assert produced("DCGM_FI_DEV_XID_ERRORS", listed).holds and produced("DCGM_FI_DEV_GPU_TEMP", listed).holds
    assert not produced("DCGM_FI_DEV_POWER_USAGE", listed).holds
    assert not produced("DCGM_FI_DEV_XID_ERRORS", plan(with_values("gpu-operator", config(data=field_list)))).holds
    assert not produced("DCGM_FI_DEV_XID_ERRORS", plan(with_values("gpu-operator", config(name="m")))).holds


def test_kueues_resource_series_need_the_cluster_queue_resources_flag() -> None:
    def flag(on: Any) -> Callable[[dict[str, Any]], None]:
        def apply(values: dict[str, Any]) -> None:
            manager = values["managerConfig"]
            config = yaml.safe_load(manager["controllerManagerConfigYaml"])
            config["metrics"]["enableClusterQueueResources"] = on
            manager["controllerManagerConfigYaml"] = yaml.safe_dump(config)

        return apply

    off = plan(with_values("kueue", flag(False)))
    assert not produced("kueue_cluster_queue_resource_usage", off).holds
    assert not produced("kueue_cluster_queue_nominal_quota", off).holds
    assert produced("kueue_pending_workloads", off).holds  # reported whatever the flag
    assert not produced("kueue_cluster_queue_nominal_quota", plan(with_values("kueue", lambda v: v.clear()))).holds


@pytest.mark.parametrize(
    "edit",
    [lambda v: v.pop("sidecars"), lambda v: v.pop("extraArgs"),
     lambda v: v["sidecarVolumeMount"][0].update(mountPath="/x"),
     lambda v: v["sidecars"][0].update(command=["/bin/sh", "-c", "sleep 1"])],
    ids=["no sidecar", "no textfile directory", "sidecar writes elsewhere", "sidecar writes something else"],
)  # fmt: skip
def test_efa_counters_need_a_sidecar_writing_into_the_textfile_directory(
    edit: Callable[[dict[str, Any]], None],
) -> None:
    step = produced("efa_hw_counter_total", plan(with_values("prometheus-node-exporter", edit)))
    assert not step.holds and "no sidecar writes it" in step.detail
    assert produced("node_filesystem_avail_bytes", plan(with_values("prometheus-node-exporter", edit))).holds


def test_yace_exports_an_fsx_metric_only_for_this_stacks_file_system() -> None:
    name = "aws_fsx_data_read_bytes_sum"
    assert not produced(name, plan(with_values(YACE.chart, lambda v: v.clear()))).holds
    assert not produced("aws_fsx_data_read_bytes_average", plan()).holds  # a statistic YACE does not ask for
    assert not produced(name, plan(tags={"Name": "another-fsx"})).holds
    assert not produced(name, plan(tags={})).holds  # an untagged file system matches no searchTag

    def jobs(edit: Callable[[dict[str, Any]], None]) -> Plan:
        def apply(values: dict[str, Any]) -> None:
            config = yaml.safe_load(values["config"])
            edit(config["discovery"]["jobs"])
            values["config"] = yaml.safe_dump(config)

        return plan(with_values(YACE.chart, apply))

    assert not produced(name, jobs(lambda j: j[0].update(type="AWS/EC2"))).holds  # only AWS/FSx jobs count
    untagged = produced(name, jobs(lambda j: j[0].pop("searchTags")))
    assert not untagged.holds and "every file system in the region" in untagged.detail
    # every FSx job must select by this file system's tags, not just the first
    second = jobs(lambda j: j.append({**j[0], "searchTags": [{"key": "Name", "value": "^other$"}]}))
    assert not produced(name, second).holds


def test_a_release_value_the_pod_labels_depend_on_stops_the_scrape_check() -> None:
    renamed = plan(with_values("kube-state-metrics", lambda v: v.update(nameOverride="ksm")))
    scrape, kept = _scrape_steps(METRICS["kube_node_status_condition"], renamed)
    assert not scrape[0].holds and kept == [] and "nameOverride" in scrape[0].detail


def test_no_job_keeping_the_pods_names_the_keep_rules_of_the_jobs_watching_their_namespace() -> None:
    shipped_plan = plan()
    jobs = [j for j in shipped_plan.scrape["scrape_configs"] if j["job_name"] != "kube-state-metrics"]  # type: ignore[index]
    dropped = dataclasses.replace(shipped_plan, scrape={"scrape_configs": jobs})
    scrape, kept = _scrape_steps(METRICS["kube_node_status_condition"], dropped)
    assert not scrape[0].holds and kept == []
    assert "no scrape job keeps pod kube-state-metrics" in scrape[0].detail
    rules = scrape[0].detail.split("the jobs' keep rules: ")[1]
    assert "yace: __meta_kubernetes_pod_label_app_kubernetes_io_name=~prometheus-yet-another" in rules
    assert " and __meta_kubernetes_pod_container_port_name=~http" in rules
    assert "kueue" not in rules and "dcgm" not in rules  # those watch other namespaces
    empty = _scrape_steps(METRICS["kube_node_status_condition"], dataclasses.replace(shipped_plan, scrape=None))
    assert not empty[0][0].holds


def test_a_relabel_action_not_evaluated_stops_the_scrape_check() -> None:
    shipped_plan = plan()
    jobs = copy.deepcopy(shipped_plan.scrape["scrape_configs"])  # type: ignore[index]
    jobs[0]["relabel_configs"].append({"action": "hashmod", "source_labels": ["a"], "modulus": 2})
    scrape, kept = _scrape_steps(
        Metric(DCGM, DCGM_LABELS, "s"), dataclasses.replace(shipped_plan, scrape={"scrape_configs": jobs})
    )
    assert not scrape[0].holds and kept == [] and "hashmod" in scrape[0].detail


def test_exporter_pods_are_the_release_workloads_holding_the_metrics_container() -> None:
    releases = shipped()
    [pod] = exporter_pods(KSM, releases["kube-state-metrics"])
    assert (pod.namespace, pod.kind, pod.relabelled_by) == (MONITORING, "Deployment", ())
    assert exporter_pods(Exporter("x", "kube-state-metrics", "no-such-container"), releases["kube-state-metrics"]) == []
    assert exporter_pods(KSM, dataclasses.replace(releases["kube-state-metrics"], facts=None)) == []


KEPT_DEPLOYMENT = [(Pod("m", "ksm", "Deployment", {}, ("http",)), {"job": "ksm", "node": NODE})]
KEPT_DAEMONSET = [(Pod("m", "ne", "DaemonSet", {}, ("metrics",)), {"job": "ne", "node": NODE})]


@pytest.mark.parametrize(
    ("metric", "label", "kept", "holds"),
    [(METRICS["kube_node_spec_unschedulable"], "node", [], False),  # not scraped
     (METRICS["kube_node_spec_unschedulable"], "node", KEPT_DEPLOYMENT, False),  # the target overwrites its own
     (METRICS["kueue_pending_workloads"], "node", KEPT_DEPLOYMENT, False),  # the exporter pod's node
     (METRICS["node_filesystem_avail_bytes"], "node", KEPT_DAEMONSET, True),  # a per-node exporter's own node
     (METRICS["kueue_pending_workloads"], "job", KEPT_DEPLOYMENT, True),  # a target label
     (METRICS["kueue_pending_workloads"], "cluster_queue", KEPT_DEPLOYMENT, True),  # its own label
     (METRICS["kueue_pending_workloads"], "flavor", KEPT_DEPLOYMENT, False)],  # nobody sets it
)  # fmt: skip
def test_a_rules_label_reaches_the_stored_series_with_the_meaning_it_needs(
    metric: Metric, label: str, kept: list[tuple[Pod, dict[str, str]]], holds: bool
) -> None:
    step = _label_step("A", "m", metric, label, kept)
    assert step.holds is holds and step.name == f"m keeps its `{label}` label"


def test_a_rule_walks_each_metric_from_exporter_to_label() -> None:
    rule = {"alert": "Q", "expr": "sum by (cluster_queue) (kueue_pending_workloads) > my_metric",
            "annotations": {"summary": "{{ $labels.status }}"}}  # fmt: skip
    steps = _rule_steps(rule, plan())
    assert [s.name for s in steps] == [
        "kueue_pending_workloads is exported by kueue",
        "the collector scrapes kueue's pods",
        "kueue_pending_workloads keeps its `cluster_queue` label",
        "kueue_pending_workloads keeps its `status` label",
        "my_metric has an exporter",
    ]
    assert [s.holds for s in steps] == [True, True, True, True, False]


def test_the_collectors_configuration_must_be_plain_yaml() -> None:
    shipped_plan = plan()
    assert _config_step(shipped_plan).holds
    assert not _config_step(dataclasses.replace(shipped_plan, scrape_text="")).holds
    aliased = "a: &x {b: 1}\nc: *x\n"
    assert not _config_step(dataclasses.replace(shipped_plan, scrape_text=aliased)).holds


# ------------------------------------------------------------------------------- the plan from a recording


def resource(type_: str, name: str, inputs: dict[str, Any]) -> RecordedResource:
    return RecordedResource(type_, name, f"urn:{type_}::{name}", "", True, inputs, (), {}, False, False, "")


def test_the_plan_reads_releases_scrape_configuration_and_the_file_systems_tags() -> None:
    scrape = "scrape_configs: []\n"
    rec = Recording("s", False, (
        resource(HELM_RELEASE, "r1", {"chart": "oci://registry-1.docker.io/x/kube-state-metrics", "version": "8.4.0",
                                      "name": "ksm", "namespace": "mon", "values": {"a": 1}}),
        resource(HELM_RELEASE, "kueue-release", {"chart": "kueue", "version": "0.14.8", "values": UNKNOWN}),
        resource(AMP_SCRAPER, "scraper", {"scrapeConfiguration": scrape}),
        resource(AWS_PROVIDER, "p", {"defaultTags": '{"tags": {"Team": "a", "Name": "default"}}'}),
        resource(AWS_PROVIDER, "q", {}),
        resource(FSX_LUSTRE, "fs", {"tags": {"Name": "prod-fsx"}}),
    ), {})  # fmt: skip
    found = _plan(rec)
    ksm = found.releases["kube-state-metrics"]
    assert (ksm.name, ksm.namespace, ksm.values, ksm.facts) == (
        "ksm", "mon", {"a": 1}, chart_workloads("kube-state-metrics", "8.4.0")
    )  # fmt: skip
    kueue = found.releases["kueue"]
    assert (kueue.name, kueue.namespace, kueue.values) == ("kueue-release", "default", {})
    assert (found.scrape, found.scrape_text) == ({"scrape_configs": []}, scrape)
    assert found.fsx_tags == {"Team": "a", "Name": "prod-fsx"}  # the file system's own tags win
    bare = _plan(Recording("s", False, (resource(AWS_PROVIDER, "p", {"defaultTags": '{"tags": {"T": "a"}}'}),), {}))
    assert (bare.releases, bare.scrape, bare.scrape_text, bare.fsx_tags) == ({}, None, "", None)


def test_walk_makes_one_journey_per_alerting_rule() -> None:
    rules = {"groups": [
        {"name": "g",
         "rules": [{"record": "r", "expr": "up"}, {"alert": "A", "expr": "up"}, {"alert": "B", "expr": "b"}]},
        {"name": "h"},
    ]}  # fmt: skip
    rec = Recording("s", False, (resource(AMP_RULE_GROUP_NAMESPACE, "rules", {"data": yaml.safe_dump(rules)}),), {})
    found = list(walk(Trip(rec, stack_config("dev"))))
    assert [j.subject for j in found] == ["alert A (g)", "alert B (g)"]
    assert all(j.kind == ALERTS and j.steps[0].name == "the collector's configuration is plain YAML" for j in found)
    assert list(walk(Trip(Recording("s", False, (), {}), stack_config("dev")))) == []

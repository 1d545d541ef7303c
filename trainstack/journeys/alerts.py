"""Alerts: every alert rule the workspace evaluates has its metrics, with the labels it groups by.

For each rule of the recorded rule groups (`aws:amp/ruleGroupNamespace`), each metric it reads, in the order the
series travels:
1. an exporter produces the metric: the exporter runs (its Helm release), and what the metric needs is on (a
   DCGM field in the exporter's field list, Kueue's `metrics.enableClusterQueueResources`, the EFA counters'
   textfile sidecar, the FSx metric in YACE's configuration and YACE scoped to this stack's file system);
2. the managed collector scrapes the exporter's pods: a scrape job's `kubernetes_sd_configs` namespace and its
   keep rules select the pods by the labels and port names the chart sets at the pinned version
   (`facts/workloads/`), evaluated with Prometheus's relabelling rules;
3. every label the rule groups by, joins on or prints (`by`, `on`, `$labels.x`) reaches the stored series: the
   exporter's own label not overwritten by a target label of the same name (scrape_config `honor_labels` false:
   the scraped one is renamed `exported_<name>`), or `node` from the pod's node only where the exporter is a
   DaemonSet reporting on its own node.
The collector's configuration itself must be plain YAML.

What the plan cannot show: that the exporters answer (TLS, tokens, network policies of the collector's ENIs),
and each rule's thresholds (the promtool tests in monitoring/rules.test.yaml do).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from trainstack.engine import UNKNOWN, Recording
from trainstack.journeys import ALERTS, Journey, Step, Trip
from trainstack.journeys.workload_facts import ChartWorkloads, chart_workloads, running, sets
from trainstack.tokens import AMP_RULE_GROUP_NAMESPACE, AMP_SCRAPER, AWS_PROVIDER, FSX_LUSTRE, HELM_RELEASE

SRC_RELABEL = "Prometheus docs, <relabel_config> (actions keep, drop, replace, labelmap; regex anchored both ends)"
SRC_POD_SD = (
    "Prometheus docs, <kubernetes_sd_config> role pod (a target per declared container port; "
    "__meta_kubernetes_pod_label_<name> with invalid characters as _)"
)
SRC_HONOR = (
    "Prometheus docs, <scrape_config> honor_labels (false: a scraped label that clashes becomes exported_<name>)"
)
SRC_AMP_CONFIG = (
    "AMP API Reference, CreateScraper (scrapeConfiguration: a Prometheus scrape configuration); CloudWatch User "
    'Guide, "Scraper configuration" of the same managed collectors (tls_config supported; YAML aliases not documented)'
)


@dataclass(frozen=True)
class Exporter:
    """An exporter: the chart that runs it, the container that serves metrics, and where its rule comes from."""

    name: str
    chart: str
    container: str


@dataclass(frozen=True)
class Metric:
    """What one exporter exports: its own labels, and what must be on for it (checked against the release)."""

    exporter: Exporter
    labels: frozenset[str]
    source: str


DCGM = Exporter("dcgm-exporter", "gpu-operator", "nvidia-dcgm-exporter")
NODE_EXPORTER = Exporter("node-exporter", "prometheus-node-exporter", "node-exporter")
KSM = Exporter("kube-state-metrics", "kube-state-metrics", "kube-state-metrics")
KUEUE = Exporter("kueue", "kueue", "manager")
YACE = Exporter("yace", "prometheus-yet-another-cloudwatch-exporter", "prometheus-yet-another-cloudwatch-exporter")

# Metrics by name, with their own labels (source: the exporter's code or docs at the pinned version).
_KSM_SRC = "kubernetes/kube-state-metrics v2.20.0 docs/metrics/cluster/node-metrics.md (chart 8.4.0 appVersion)"
_NE_SRC = "prometheus/node_exporter v1.12.1 collector/filesystem_common.go, netdev_common.go (chart 4.56.1)"
_KUEUE_SRC = "kubernetes-sigs/kueue v0.14.8 pkg/metrics/metrics.go"
METRICS: dict[str, Metric] = {
    "kube_node_status_condition": Metric(KSM, frozenset({"node", "condition", "status"}), _KSM_SRC),
    "kube_node_status_capacity": Metric(KSM, frozenset({"node", "resource", "unit"}), _KSM_SRC),
    "kube_node_spec_unschedulable": Metric(KSM, frozenset({"node"}), _KSM_SRC),
    "node_filesystem_avail_bytes": Metric(NODE_EXPORTER, frozenset({"device", "fstype", "mountpoint"}), _NE_SRC),
    "node_filesystem_size_bytes": Metric(NODE_EXPORTER, frozenset({"device", "fstype", "mountpoint"}), _NE_SRC),
    "node_network_transmit_bytes_total": Metric(NODE_EXPORTER, frozenset({"device"}), _NE_SRC),
    "node_network_receive_bytes_total": Metric(NODE_EXPORTER, frozenset({"device"}), _NE_SRC),
    "efa_hw_counter_total": Metric(
        NODE_EXPORTER,
        frozenset({"device", "port", "counter"}),
        "components/fleet_metrics.py efa_textfile_script (node-exporter's textfile collector)",
    ),
    "kueue_pending_workloads": Metric(KUEUE, frozenset({"cluster_queue", "status"}), _KUEUE_SRC),
    "kueue_admitted_active_workloads": Metric(KUEUE, frozenset({"cluster_queue"}), _KUEUE_SRC),
    "kueue_cluster_queue_resource_usage": Metric(
        KUEUE, frozenset({"cohort", "cluster_queue", "flavor", "resource"}), _KUEUE_SRC
    ),
    "kueue_cluster_queue_nominal_quota": Metric(
        KUEUE, frozenset({"cohort", "cluster_queue", "flavor", "resource"}), _KUEUE_SRC
    ),
}
# dcgm-exporter: one gauge or counter per DCGM field of its field list, labelled by GPU (NVIDIA/dcgm-exporter
# README, "Metrics": gpu, UUID, device, modelName, Hostname).
DCGM_LABELS = frozenset({"gpu", "UUID", "device", "modelName", "Hostname"})
DCGM_SOURCE = "NVIDIA/dcgm-exporter README (labels gpu, UUID, device, modelName, Hostname), the operator's field list"
# YACE: aws_<namespace>_<metric snake_case>_<statistic> with dimension_<Name> labels and `name` (the resource ARN)
# (prometheus-community/yet-another-cloudwatch-exporter v0.67.0 README, "Metrics").
YACE_LABELS = frozenset({"name", "region", "account_id", "dimension_FileSystemId"})
YACE_SOURCE = "prometheus-community/yet-another-cloudwatch-exporter v0.67.0 README (metric naming, searchTags)"
# Kueue reports the per-ClusterQueue resource series only with this flag (v0.14.8 apis/config/v1beta1
# configuration_types.go `EnableClusterQueueResources`; pkg/controller/core/core.go WithReportResourceMetrics).
KUEUE_RESOURCE_METRICS = frozenset({"kueue_cluster_queue_resource_usage", "kueue_cluster_queue_nominal_quota"})
KUEUE_FLAG_SOURCE = (
    "kubernetes-sigs/kueue v0.14.8 apis/config/v1beta1/configuration_types.go, pkg/controller/core/core.go"
)

# ------------------------------------------------------------------------------------------- PromQL

_TOKEN = re.compile(
    r'"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\'|\[[^\]]*\]|(?:\d+(?:ms|[smhdwy]))+|[A-Za-z_:][A-Za-z0-9_:]*'
    r"|\d+(?:\.\d+)?(?:e[+-]?\d+)?|\S"
)
# Keywords, and aggregation operators (which may be followed by `by (...)` before their parenthesis).
_KEYWORDS = frozenset(
    {"by", "without", "on", "ignoring", "and", "or", "unless", "group_left", "group_right", "bool", "offset"}
    | {"sum", "min", "max", "avg", "group", "stddev", "stdvar", "count", "count_values", "bottomk", "topk"}
    | {"quantile", "limitk", "limit_ratio"}
)
_GROUPING = frozenset({"by", "without", "on", "ignoring", "group_left", "group_right"})


@dataclass(frozen=True)
class Expression:
    """What a rule's expression reads: the metric names, and the labels its `by`/`on` clauses name."""

    metrics: tuple[str, ...]
    grouping: frozenset[str]


def read_expression(expr: str) -> Expression:
    """The metric names (identifiers outside label matchers that are not functions or keywords) and grouping
    labels of a PromQL expression (the grammar of Prometheus docs, "Querying basics" and "Operators")."""
    tokens = _TOKEN.findall(expr)
    metrics: list[str] = []
    grouping: set[str] = set()
    depth = 0
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if token == "{":
            depth += 1
        elif token == "}":
            depth -= 1
        elif depth == 0 and token in _GROUPING and i + 1 < len(tokens) and tokens[i + 1] == "(":
            j = i + 2
            while j < len(tokens) and tokens[j] != ")":
                if tokens[j] != ",":
                    grouping.add(tokens[j])
                j += 1
            i = j
        elif (
            depth == 0
            and re.fullmatch(r"[A-Za-z_:][A-Za-z0-9_:]*", token)
            and token not in _KEYWORDS
            and not (i + 1 < len(tokens) and tokens[i + 1] == "(")
        ):
            metrics.append(token)
        i += 1
    return Expression(tuple(dict.fromkeys(metrics)), frozenset(grouping))


def printed_labels(rule: Mapping[str, Any]) -> frozenset[str]:
    """Labels the alert's text prints (`{{ $labels.x }}`): missing, they print empty."""
    text = " ".join(str(v) for v in (rule.get("annotations") or {}).values())
    return frozenset(re.findall(r"\$labels\.([A-Za-z_][A-Za-z0-9_]*)", text))


# --------------------------------------------------------------------------------------- relabelling


def relabel(labels: Mapping[str, str], configs: list[Mapping[str, Any]]) -> dict[str, str] | None:
    """Prometheus's relabelling of one target's labels (prometheus/prometheus model/relabel/relabel.go): None
    when the target is dropped. Raises ValueError on an action not evaluated here (hashmod, keepequal ...)."""
    current = dict(labels)
    for config in configs:
        action = str(config.get("action", "replace")).lower()
        regex = re.compile(f"^(?:{config.get('regex', '(.*)')})$")
        value = str(config.get("separator", ";")).join(current.get(s, "") for s in config.get("source_labels", []))
        if action == "keep":
            if not regex.match(value):
                return None
        elif action == "drop":
            if regex.match(value):
                return None
        elif action == "replace":
            match = regex.match(value)
            if match is None:
                continue
            target = go_expand(str(config.get("target_label", "")), match)
            result = go_expand(str(config.get("replacement", "$1")), match)
            if not re.fullmatch(r"[a-zA-Z_][a-zA-Z0-9_]*", target):
                continue
            if result:
                current[target] = result
            else:
                current.pop(target, None)
        elif action == "labelmap":
            for name, label_value in list(current.items()):
                match = regex.match(name)
                if match:
                    current[go_expand(str(config.get("replacement", "$1")), match)] = label_value
        elif action in ("labeldrop", "labelkeep"):
            keep = action == "labelkeep"
            current = {k: v for k, v in current.items() if bool(regex.match(k)) == keep}
        else:
            raise ValueError(f"relabel action {action!r} is not evaluated here")
    return current


_GO_VARIABLE = re.compile(r"\$(?:\$|\{([A-Za-z0-9_]+)\}|([A-Za-z0-9_]+))")


def go_expand(template: str, match: re.Match[str]) -> str:
    """Go's Regexp.Expand: `$$` is `$`; `$name` takes the longest run of letters, digits and `_`, `${name}` is
    explicit; a name that is not a group (by number or name) expands to nothing (Go regexp, func Expand)."""

    def group(found: re.Match[str]) -> str:
        if found.group(0) == "$$":
            return "$"
        name = found.group(1) or found.group(2)
        try:
            value = match.group(int(name) if name.isdigit() else name)
        except IndexError:  # no such group
            return ""
        return value or ""

    return _GO_VARIABLE.sub(group, template)


def meta_label(label: str) -> str:
    return "__meta_kubernetes_pod_label_" + re.sub(r"[^a-zA-Z0-9_]", "_", label)


@dataclass(frozen=True)
class Pod:
    """An exporter pod as discovery sees it."""

    namespace: str
    name: str
    kind: str  # the workload that runs it (DaemonSet: one per node)
    labels: Mapping[str, str]
    ports: tuple[str, ...]
    relabelled_by: tuple[str, ...] = ()  # values the release sets that change the pod's labels from the facts'


NODE = "<the pod's node>"


def targets(pod: Pod) -> list[dict[str, str]]:
    """The role=pod targets of a pod: one per named container port, with the discovery labels."""
    base = {
        "__meta_kubernetes_namespace": pod.namespace,
        "__meta_kubernetes_pod_name": pod.name,
        "__meta_kubernetes_pod_node_name": NODE,
        "__meta_kubernetes_pod_controller_kind": pod.kind,
        **{meta_label(k): v for k, v in pod.labels.items()},
        **{meta_label(k).replace("_label_", "_labelpresent_", 1): "true" for k in pod.labels},
    }
    return [
        {**base, "__meta_kubernetes_pod_container_port_name": port, "__address__": f"pod:{port}"} for port in pod.ports
    ]


def scraped_by(job: Mapping[str, Any], pod: Pod) -> list[dict[str, str]]:
    """The target labels (after relabelling, without `__` labels) of the pod's targets a job keeps."""
    sd = job.get("kubernetes_sd_configs") or []
    if not any(
        c.get("role") == "pod"
        and (not (c.get("namespaces") or {}).get("names") or pod.namespace in c["namespaces"]["names"])
        for c in sd
    ):
        return []
    kept: list[dict[str, str]] = []
    for target in targets(pod):
        labels = relabel(target, list(job.get("relabel_configs") or []))
        if labels is not None:
            kept.append({k: v for k, v in labels.items() if not k.startswith("__")})
    return kept


def stored_labels(scraped: Mapping[str, str], target: Mapping[str, str]) -> dict[str, str]:
    """The labels a scraped series is stored with: the target's labels (job, instance, relabelled ones) over the
    exporter's own; an own label the target also has is kept as `exported_<name>` (honor_labels: false)."""
    stored = {(f"exported_{k}" if k in target else k): v for k, v in scraped.items()}
    return {**stored, **target}


# ----------------------------------------------------------------------------------------- the plan


@dataclass(frozen=True)
class Release:
    name: str
    namespace: str
    values: Mapping[str, Any]
    facts: ChartWorkloads | None


def _releases(recording: Recording) -> dict[str, Release]:
    from trainstack.contracts.helm_values import chart_name

    found: dict[str, Release] = {}
    for release in recording.by_type(HELM_RELEASE):
        inputs = release.inputs
        chart, version = chart_name(str(inputs.get("chart", ""))), str(inputs.get("version", ""))
        values = inputs.get("values") if isinstance(inputs.get("values"), Mapping) else {}
        found[chart] = Release(
            str(inputs.get("name") or release.name),
            str(inputs.get("namespace", "default")),
            values,
            chart_workloads(chart, version),
        )
    return found


def exporter_pods(exporter: Exporter, release: Release) -> list[Pod]:
    """The pods the exporter's release runs that hold its metrics container (facts under the release's values)."""
    if release.facts is None:
        return []
    pods: list[Pod] = []
    for run in running(release.facts, release.values):
        containers = [c for c, _ in run.containers if c.name == exporter.container]
        if not containers:
            continue
        name, namespace, labels = run.workload.resolved(release.name, release.namespace)
        changed = tuple(key for key in run.workload.label_keys if sets(release.values, key))
        pods.append(Pod(namespace, name, run.workload.kind, labels, containers[0].ports, changed))
    return pods


def _yaml(text: Any) -> Any:
    return yaml.safe_load(text) if isinstance(text, str) and text != UNKNOWN else None


def _has_alias(text: str) -> bool:
    return any(isinstance(event, yaml.AliasEvent) for event in yaml.parse(text, Loader=yaml.SafeLoader))


@dataclass
class Plan:
    """What the alerts read from the recording, once per plan."""

    releases: dict[str, Release]
    scrape: Mapping[str, Any] | None
    scrape_text: str
    fsx_tags: dict[str, str] | None


def _plan(recording: Recording) -> Plan:
    scrapers = recording.by_type(AMP_SCRAPER)
    text = str(scrapers[0].inputs.get("scrapeConfiguration", "")) if scrapers else ""
    fsx_tags: dict[str, str] | None = None
    file_systems = recording.by_type(FSX_LUSTRE)
    if file_systems:
        fsx_tags = {}
        for provider in recording.by_type(AWS_PROVIDER):
            default = _yaml(provider.inputs.get("defaultTags"))
            if isinstance(default, Mapping):
                fsx_tags.update(default.get("tags") or {})
        fsx_tags.update(file_systems[0].inputs.get("tags") or {})
    return Plan(_releases(recording), _yaml(text), text, fsx_tags)


def _metric(name: str, plan: Plan) -> tuple[Metric | None, Step]:
    """Which exporter produces `name`, and whether what it needs is on."""
    if name in METRICS:
        metric = METRICS[name]
        return metric, _produced(name, metric, plan)
    if name.startswith("DCGM_FI_"):
        metric = Metric(DCGM, DCGM_LABELS, DCGM_SOURCE)
        release = plan.releases.get(DCGM.chart)
        config = ((release.values if release else {}).get("dcgmExporter") or {}).get("config") or {}
        fields = {line.split(",")[0].strip() for line in str(config.get("data", "")).splitlines() if line.strip()}
        holds = release is not None and name in fields and bool(config.get("name"))
        return metric, Step(
            f"{name} is exported by dcgm-exporter",
            holds,
            f"{name} is in the field list the GPU Operator's dcgmExporter.config ({config.get('name')}) ships"
            if holds
            else f"{name} is not in the dcgm-exporter field list the GPU Operator release ships (dcgmExporter.config)",
            DCGM_SOURCE,
        )
    if name.startswith("aws_fsx_"):
        metric = Metric(YACE, YACE_LABELS, YACE_SOURCE)
        return metric, _yace_metric(name, plan)
    return None, Step(
        f"{name} has an exporter",
        False,
        f"no exporter the stack runs is known to export {name} (trainstack/journeys/alerts.py METRICS)",
        "trainstack/journeys/alerts.py",
    )


def _produced(name: str, metric: Metric, plan: Plan) -> Step:
    release = plan.releases.get(metric.exporter.chart)
    title = f"{name} is exported by {metric.exporter.name}"
    if release is None:
        return Step(title, False, f"no Helm release of chart {metric.exporter.chart} runs it", metric.source)
    if name in KUEUE_RESOURCE_METRICS:
        config = _yaml((release.values.get("managerConfig") or {}).get("controllerManagerConfigYaml"))
        flag = bool(((config or {}).get("metrics") or {}).get("enableClusterQueueResources"))
        return Step(
            title,
            flag,
            "Kueue's configuration turns on metrics.enableClusterQueueResources"
            if flag
            else "Kueue reports it only with metrics.enableClusterQueueResources, which its configuration leaves off",
            KUEUE_FLAG_SOURCE,
        )
    if name == "efa_hw_counter_total":
        args = " ".join(str(a) for a in release.values.get("extraArgs") or [])
        sidecars = [
            s for s in release.values.get("sidecars") or [] if name in " ".join(map(str, s.get("command") or []))
        ]
        directory = re.search(r"--collector\.textfile\.directory=(\S+)", args)
        mounts = {m.get("mountPath") for m in release.values.get("sidecarVolumeMount") or []}
        holds = bool(sidecars) and directory is not None and directory.group(1) in mounts
        return Step(
            title,
            holds,
            f"a sidecar writes it into {directory.group(1)}, the textfile directory node-exporter reads"
            if holds and directory
            else "no sidecar writes it into the textfile directory node-exporter reads (extraArgs, sidecarVolumeMount)",
            metric.source,
        )
    return Step(title, True, f"release {release.name} runs {metric.exporter.name}", metric.source)


def _yace_metric(name: str, plan: Plan) -> Step:
    from components.fleet_metrics import yace_metric

    release = plan.releases.get(YACE.chart)
    title = f"{name} is exported by YACE for this stack's file system"
    config = _yaml(release.values.get("config")) if release else None
    if not isinstance(config, Mapping):
        return Step(title, False, "no YACE release with a configuration", YACE_SOURCE)
    jobs = [j for j in (config.get("discovery") or {}).get("jobs") or [] if j.get("type") == "AWS/FSx"]
    exported = {
        yace_metric(m["name"], s) for j in jobs for m in j.get("metrics") or [] for s in m.get("statistics") or []
    }
    if name not in exported:
        return Step(title, False, f"YACE's AWS/FSx jobs do not export {name}", YACE_SOURCE)
    tags = plan.fsx_tags or {}
    for job in jobs:
        search = job.get("searchTags") or []
        if not search:
            return Step(
                title,
                False,
                "YACE's AWS/FSx job has no searchTags: it exports every file system in the region, and the "
                "alerts' sums add them all up",
                YACE_SOURCE,
            )
        unmatched = [t for t in search if not re.search(str(t.get("value")), tags.get(str(t.get("key")), "\0"))]
        if unmatched:
            return Step(
                title,
                False,
                f"the file system's tags do not match YACE's searchTags {unmatched}: its metrics are never exported",
                YACE_SOURCE,
            )
    return Step(
        title,
        True,
        "YACE's AWS/FSx job selects the file system by its tags: " + str(jobs[0]["searchTags"]),
        YACE_SOURCE,
    )


def _scrape_steps(metric: Metric, plan: Plan) -> tuple[list[Step], list[tuple[Pod, dict[str, str]]]]:
    """Whether a scrape job keeps the exporter's pods; the kept targets' labels."""
    exporter = metric.exporter
    release = plan.releases.get(exporter.chart)
    pods = exporter_pods(exporter, release) if release else []
    title = f"the collector scrapes {exporter.name}'s pods"
    if not pods:
        source = release.facts.source if release and release.facts else "trainstack/contracts/facts/workloads/"
        return [Step(title, False, f"no recorded pod of {exporter.name} runs under the release's values", source)], []
    relabelled = sorted({key for pod in pods for key in pod.relabelled_by})
    if relabelled:
        return [
            Step(
                title,
                False,
                f"the release sets {', '.join(relabelled)}, which the pod labels depend on: the facts hold the "
                "chart's labels without it, so the scrape selector cannot be checked",
                release.facts.source if release and release.facts else "trainstack/contracts/facts/workloads/",
            )
        ], []
    jobs = list((plan.scrape or {}).get("scrape_configs") or [])
    kept: list[tuple[Pod, dict[str, str]]] = []
    seen_jobs: set[str] = set()
    try:
        for job in jobs:
            for pod in pods:
                for labels in scraped_by(job, pod):
                    kept.append((pod, {**labels, "job": str(job.get("job_name"))}))
                    seen_jobs.add(str(job.get("job_name")))
    except ValueError as error:
        return [Step(title, False, str(error), SRC_RELABEL)], []
    pod = pods[0]
    detail = (
        f"job {', '.join(sorted(seen_jobs))} keeps pod {pod.name} in {pod.namespace} (labels "
        f"{dict(pod.labels)}, ports {list(pod.ports)})"
        if kept
        else f"no scrape job keeps pod {pod.name} in {pod.namespace}: its labels are {dict(pod.labels)} and its "
        f"ports {list(pod.ports)} at the pinned chart version; the jobs' keep rules: "
        + "; ".join(_keeps(j) for j in jobs if _keeps(j) and _watches(j, pod.namespace))
    )
    source = f"{release.facts.source if release and release.facts else ''}; {SRC_POD_SD}; {SRC_RELABEL}"
    return [Step(title, bool(kept), detail, source)], kept


def _watches(job: Mapping[str, Any], namespace: str) -> bool:
    return any(
        namespace in ((c.get("namespaces") or {}).get("names") or [namespace])
        for c in job.get("kubernetes_sd_configs") or []
    )


def _keeps(job: Mapping[str, Any]) -> str:
    rules = [
        f"{','.join(c.get('source_labels', []))}=~{c.get('regex')}"
        for c in job.get("relabel_configs") or []
        if str(c.get("action", "")).lower() == "keep"
    ]
    return f"{job.get('job_name')}: {' and '.join(rules)}" if rules else ""


def _label_step(
    rule_name: str, metric_name: str, metric: Metric, label: str, kept: list[tuple[Pod, dict[str, str]]]
) -> Step:
    """Whether `label` reaches the metric's stored series with the meaning the rule needs."""
    title = f"{metric_name} keeps its `{label}` label"
    if not kept:
        return Step(title, False, "not scraped", SRC_HONOR)
    pod, target = kept[0]
    if label in target:
        if label in metric.labels:
            return Step(
                title,
                False,
                f"the scrape job sets target label `{label}`={target[label]!r}, which overwrites {metric_name}'s own "
                f"`{label}` (kept only as exported_{label}): {rule_name} groups by the wrong value",
                SRC_HONOR,
            )
        if target[label] == NODE and pod.kind != "DaemonSet":
            return Step(
                title,
                False,
                f"`{label}` is the node of {metric.exporter.name}'s own pod (a {pod.kind}), not the node the series "
                "is about",
                SRC_HONOR,
            )
        return Step(title, True, f"target label `{label}` from the scrape job ({pod.kind} on each node)", SRC_HONOR)
    if label in metric.labels:
        return Step(
            title, True, f"{metric.exporter.name} sets `{label}` itself; no target label replaces it", metric.source
        )
    return Step(title, False, f"neither {metric.exporter.name} nor the scrape job sets `{label}`", metric.source)


def _rule_steps(rule: Mapping[str, Any], plan: Plan) -> list[Step]:
    expression = read_expression(str(rule.get("expr", "")))
    labels = sorted(expression.grouping | printed_labels(rule))
    steps: list[Step] = []
    for name in expression.metrics:
        metric, produced = _metric(name, plan)
        steps.append(produced)
        if metric is None:
            continue
        scrape, kept = _scrape_steps(metric, plan)
        steps.extend(scrape)
        steps.extend(_label_step(str(rule.get("alert")), name, metric, label, kept) for label in labels)
    return steps


def _config_step(plan: Plan) -> Step:
    holds = bool(plan.scrape_text) and not _has_alias(plan.scrape_text)
    return Step(
        "the collector's configuration is plain YAML",
        holds,
        "no anchors or aliases" if holds else "the scrape configuration uses YAML anchors and aliases",
        SRC_AMP_CONFIG,
    )


def walk(trip: Trip) -> Iterator[Journey]:
    groups = trip.recording.by_type(AMP_RULE_GROUP_NAMESPACE)
    if not groups:
        return
    plan = _plan(trip.recording)
    config = _config_step(plan)
    for group in groups:
        data = _yaml(group.inputs.get("data"))
        for rule_group in (data or {}).get("groups") or []:
            for rule in rule_group.get("rules") or []:
                if "alert" not in rule:
                    continue
                steps = (config, *_rule_steps(rule, plan))
                yield Journey(ALERTS, f"alert {rule['alert']} ({rule_group.get('name')})", steps)

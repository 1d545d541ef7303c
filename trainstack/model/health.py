"""The plan's Health section: what watches the fleet, what repairs it, which alerts exist and where they go,
with the EKS path and SageMaker HyperPod side by side. Read from the recording, like the rest of the summary.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import yaml

from trainstack.engine import RecordedResource, Recording
from trainstack.model.graph import get
from trainstack.tokens import (
    AMP_ALERT_MANAGER_DEFINITION,
    AMP_RULE_GROUP_NAMESPACE,
    AMP_SCRAPER,
    AMP_WORKSPACE,
    CLUSTER_TRAINING_RUNTIME,
    CONFIG_MAP,
    EKS_ADDON,
    HELM_RELEASE,
    HYPERPOD_CLUSTER,
    NODE_GROUP,
    SNS_TOPIC,
    SNS_TOPIC_SUBSCRIPTION,
)

NMA_ADDON = "eks-node-monitoring-agent"


@dataclass(frozen=True)
class RepairPolicy:
    """One EKS node group's auto repair, or one HyperPod group's recovery."""

    group: str
    path: str  # "EKS" or "HyperPod"
    repair: str  # what repairs a bad node, with its limits


@dataclass(frozen=True)
class HealthSummary:
    node_monitoring_agent: str | None  # the add-on version, None when not planned
    repairs: tuple[RepairPolicy, ...]
    metrics_backend: str | None  # e.g. "Amazon Managed Service for Prometheus (managed collector)"
    scrape_interval_s: int | None
    exporters: tuple[str, ...]  # chart and version
    alerts: tuple[str, ...]
    alert_destination: str | None
    dashboards: tuple[str, ...]
    resume: tuple[str, ...] = ()  # the training runtimes' restart policies, runtimes with the same one together

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def _repair_text(config: dict[str, Any] | None) -> str:
    if not config or not config.get("enabled"):
        return "no auto repair"
    as_int = {k: int(v) for k, v in config.items() if isinstance(v, float)}
    config = {**config, **as_int}  # the engine records numbers as floats
    parallel = config.get("maxParallelNodesRepairedCount") or (
        f"{config.get('maxParallelNodesRepairedPercentage')}%"
        if config.get("maxParallelNodesRepairedPercentage")
        else "EKS default"
    )
    stop = config.get("maxUnhealthyNodeThresholdPercentage")
    stop_text = f"{stop}%" if stop else (config.get("maxUnhealthyNodeThresholdCount") or "EKS default")
    return f"auto repair: {parallel} node(s) at a time, stops above {stop_text} unhealthy"


def _restart_policy_text(spec: dict[str, Any]) -> str:
    """What a runtime does when a pod fails: from its JobSet failure policy and its Jobs' pod failure policies."""
    policy = get(spec, "template", "spec", "failurePolicy") or {}
    jobs = get(spec, "template", "spec", "replicatedJobs") or []
    pod_rules = [rule for job in jobs for rule in get(job, "template", "spec", "podFailurePolicy", "rules") or []]
    actions = {rule.get("name"): rule.get("action") for rule in policy.get("rules") or []}
    codes = sorted({int(c) for rule in pod_rules for c in get(rule, "onExitCodes", "values") or []})
    wait_env: dict[str, Any] = next(
        (
            {e.get("name"): e.get("value") for e in init.get("env") or []}
            for job in jobs
            for init in get(job, "template", "spec", "template", "spec", "initContainers") or []
            if init.get("name") == "restart-wait"
        ),
        {},
    )
    restarts = int(policy.get("maxRestarts") or 0)
    parts = [f"up to {restarts} restarts after a crash" if restarts else "no restarts: any failure fails the job"]
    first, cap = wait_env.get("TRAINSTACK_RESTART_BACKOFF_S"), wait_env.get("TRAINSTACK_RESTART_BACKOFF_MAX_S")
    if restarts and first is not None and cap is not None:
        waits = "/".join(str(min(int(first) * 2**i, int(cap))) for i in range(restarts))
        parts[0] += f" (waits {waits} s)"
    if actions.get("nodeDisruption") == "RestartJobSetAndIgnoreMaxRestarts":
        parts.append("a lost or drained node (DisruptionTarget) restarts without counting")
    if codes and actions.get("fatalExitCode") == "FailJobSet":
        parts.append(f"exit codes {', '.join(map(str, codes))} fail it at once")
    return "; ".join(parts)


def summarize_health(recording: Recording) -> HealthSummary:
    by_type: dict[str, list[RecordedResource]] = {}
    for resource in recording.resources:
        by_type.setdefault(resource.type, []).append(resource)
    agent = next(
        (get(r.inputs, "addonVersion") for r in by_type.get(EKS_ADDON, []) if get(r.inputs, "addonName") == NMA_ADDON),
        None,
    )
    repairs: list[RepairPolicy] = []
    for group in by_type.get(NODE_GROUP, []):
        labels = get(group.inputs, "labels") or {}
        if not labels.get("trainstack.io/accelerator"):
            continue  # the system group: CPU, repaired with EKS defaults
        repairs.append(
            RepairPolicy(
                get(group.inputs, "nodeGroupName") or group.name,
                "EKS",
                _repair_text(get(group.inputs, "nodeRepairConfig")),
            )
        )
    for cluster in by_type.get(HYPERPOD_CLUSTER, []):
        recovery = get(cluster.inputs, "nodeRecovery") or "None"
        for group in get(cluster.inputs, "instanceGroups") or []:
            checks = ", ".join(group.get("onStartDeepHealthChecks") or []) or "none"
            repairs.append(
                RepairPolicy(
                    group.get("instanceGroupName", "?"),
                    "HyperPod",
                    f"node recovery {recovery}, deep health checks on start: {checks}; health agent always on",
                )
            )
    scraper = next(iter(by_type.get(AMP_SCRAPER, [])), None)
    interval = None
    if scraper is not None:
        config = yaml.safe_load(get(scraper.inputs, "scrapeConfiguration") or "{}") or {}
        interval = int(str(config.get("global", {}).get("scrape_interval", "0s")).rstrip("s") or 0)
    alerts: list[str] = []
    for namespace in by_type.get(AMP_RULE_GROUP_NAMESPACE, []):
        rules = yaml.safe_load(get(namespace.inputs, "data") or "{}") or {}
        alerts += [rule["alert"] for group in rules.get("groups", []) for rule in group["rules"] if "alert" in rule]
    topics = [
        get(t.inputs, "name") or t.name for t in by_type.get(SNS_TOPIC, []) if by_type.get(AMP_ALERT_MANAGER_DEFINITION)
    ]
    subscriptions = len(by_type.get(SNS_TOPIC_SUBSCRIPTION, []))
    destination = f"SNS topic {topics[0]} ({subscriptions} e-mail subscription(s))" if topics else None
    exporters = tuple(
        f"{get(r.inputs, 'chart')} {get(r.inputs, 'version')}"
        for r in by_type.get(HELM_RELEASE, [])
        if get(r.inputs, "namespace") == "trainstack-monitoring"
    )
    dashboards = tuple(
        next(iter((get(r.inputs, "data") or {}).keys()), r.name)
        for r in by_type.get(CONFIG_MAP, [])
        if (get(r.inputs, "metadata", "labels") or {}).get("grafana_dashboard") == "1"
    )
    by_policy: dict[str, list[str]] = {}
    for runtime in by_type.get(CLUSTER_TRAINING_RUNTIME, []):
        text = _restart_policy_text(get(runtime.inputs, "spec") or {})
        by_policy.setdefault(text, []).append(get(runtime.inputs, "metadata", "name") or runtime.name)
    resume = tuple(f"{', '.join(sorted(names))}: {text}" for text, names in by_policy.items())
    return HealthSummary(
        node_monitoring_agent=agent,
        repairs=tuple(repairs),
        metrics_backend="Amazon Managed Service for Prometheus (AWS managed collector)"
        if by_type.get(AMP_WORKSPACE)
        else None,
        scrape_interval_s=interval,
        exporters=exporters,
        alerts=tuple(alerts),
        alert_destination=destination,
        dashboards=dashboards,
        resume=resume,
    )

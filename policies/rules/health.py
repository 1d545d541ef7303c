"""Fleet health rules (the `trainstack:health` area): the health floor (auto repair, metrics, alerts that reach
someone, restarts that wait) and the observability stack's own reach (Grafana's RBAC)."""

from __future__ import annotations

from collections.abc import Mapping

from pulumi_policy import PolicyResource, ResourceValidationArgs, Severity, StackValidationArgs

from ..facts import (
    ACCELERATED_AMI_TYPES,
    RESTART_BACKOFF_ENV,
)
from ..facts_generated import (
    AMP_RULE_GROUP_NAMESPACE,
    AMP_SCRAPER,
    AMP_WORKSPACE,
    CLUSTER_TRAINING_RUNTIME,
    SNS_TOPIC,
    SNS_TOPIC_SUBSCRIPTION,
)
from .base import (
    HELM_TYPES,
    Report,
    accelerated_node_groups,
    get,
    graph,
    items,
    number,
    resource_rule,
    stack_rule,
    truthy,
)
from .k8s import chart_name

GRAFANA_CHART = "grafana"


@resource_rule(
    name="grafana-rbac-namespaced",
    description="Grafana's service account reads Secrets and ConfigMaps only in its own namespace (chart value "
    "`rbac.namespaced: true`, its dashboard sidecar searching no other namespace): the chart's default ClusterRole "
    "lets anyone who reaches Grafana's pod read every Secret of the cluster.",
    severity=Severity.MEDIUM,
    types=HELM_TYPES,
)
def grafana_rbac_namespaced(args: ResourceValidationArgs, report: Report) -> None:
    if chart_name(args.props) != GRAFANA_CHART:
        args.not_applicable("not the grafana chart")
        return
    values = get(args.props, "values", {})
    if get(values, "rbac.create", True) is not False and get(values, "rbac.namespaced") is not True:
        report("rbac.namespaced is not true: Grafana's service account reads every Secret of the cluster.")
    for kind in ("dashboards", "datasources", "alerts", "notifiers", "plugins"):
        searched = get(values, f"sidecar.{kind}.searchNamespace")
        if searched not in (None, ""):
            report(f"sidecar.{kind}.searchNamespace is {searched!r}: the sidecar reads outside Grafana's namespace.")


# ------------------------------------------------------------------------------------------------ fleet health

FRAMEWORK_LABEL = "trainer.kubeflow.org/framework"  # the training runtimes carry it; validation's does not


def _chart(release: PolicyResource) -> str:
    return str(get(release.props, "chart", "")).rstrip("/").rsplit("/", 1)[-1]


def _yaml_block(text: str, key: str) -> dict[str, str]:
    """The scalar children of top-level `key:` in block YAML as yaml.safe_dump writes it (the pack has no YAML
    library): `{"enable": "true", "timeout": "600s"}` for Kueue's waitForPodsReady; {} when the key is absent."""
    lines = text.splitlines()
    if f"{key}:" not in lines:
        return {}
    found: dict[str, str] = {}
    for line in lines[lines.index(f"{key}:") + 1 :]:
        if not line.startswith("  "):
            break
        name, _, value = line.strip().partition(":")
        if not line.startswith("   ") and value.strip():
            found[name] = value.strip()
    return found


def _seconds(text: str | None) -> float | None:
    """A Go duration of whole seconds, minutes or hours as Kueue's config takes it ("600s", "10m", "1h")."""
    if not text:
        return None
    units = {"s": 1, "m": 60, "h": 3600}
    number_part, unit = text[:-1], text[-1:]
    return float(number_part) * units[unit] if unit in units and number_part.isdigit() else None


def _restart_backoff(runtime: PolicyResource) -> float | None:
    """The first restart's wait a training runtime's restart-wait init container gets (None without one)."""
    for job in items(get(runtime.props, "spec.template.spec.replicatedJobs")):
        for container in items(get(job, "template.spec.template.spec.initContainers")):
            for env in items(get(container, "env")):
                if get(env, "name") == RESTART_BACKOFF_ENV:
                    return number(get(env, "value"))
    return None


@stack_rule(
    name="fleet-health-floor",
    floor="prod",  # from prod: a staging fleet is a rehearsal
    description="A fleet that runs for weeks heals itself and says when it cannot: auto repair on every "
    "accelerated node group and bounded (a few nodes at a time, stopping when many fail at once: a fabric or AMI "
    "fault, not a bad GPU); metrics with dcgm-exporter, so the GPU alerts can fire; a job restarts after a crash "
    "a bounded number of times, after a wait that lets the node monitoring agent take a bad node out; Kueue "
    "evicts a job whose pods are not all ready in time (all-or-nothing admission); and the alerts reach someone "
    "(an SNS subscription, not an empty topic). EKS User Guide, node auto repair (NodeRepairConfig); Kueue "
    "waitForPodsReady; JobSet failurePolicy.maxRestarts.",
    severity=Severity.HIGH,
    config={
        "requireNodeRepair": {
            "type": "boolean",
            "default": True,
            "description": "Every accelerated node group has auto repair on. Why: a GPU with an Xid or ECC "
            "error otherwise keeps failing every job placed on it. Source: EKS User Guide, node health and auto "
            "repair.",
        },
        "maxParallelNodesRepaired": {
            "type": "integer",
            "minimum": 1,
            "default": 2,
            "description": "Most nodes one group repairs at once (maxParallelNodesRepairedCount; a percentage "
            "is refused here). Why: a replacement on a reservation needs the slot the old node frees, and each "
            "repaired node stops the job on it.",
        },
        "maxUnhealthyNodePercentage": {
            "type": "integer",
            "minimum": 1,
            "maximum": 100,
            "default": 50,
            "description": "Highest share of unhealthy nodes at which repair still acts "
            "(maxUnhealthyNodeThresholdPercentage). Why: many failing at once is a fabric, AMI or driver "
            "fault that replacing nodes does not fix.",
        },
        "requireMetrics": {
            "type": "boolean",
            "default": True,
            "description": "The metrics stack exists: an AMP workspace, its collector and the alert rules "
            "(health.metrics). Why: without it no alert fires.",
        },
        "requireGpuMetrics": {
            "type": "boolean",
            "default": True,
            "description": "dcgm-exporter runs on NVIDIA groups (kubernetes.gpu_operator.dcgm_exporter). Why: "
            "the Xid, ECC and fallen-off-the-bus alerts read its series; without it they are not listed at all.",
        },
        "minRestartBackoffS": {
            "type": "integer",
            "minimum": 0,
            "default": 10,
            "description": "Least wait before a job's first restart "
            "(kubernetes.training_operator.runtimes.restart_backoff_s). Why: an immediate restart lands on the "
            "same bad node before the node monitoring agent marks it.",
        },
        "restartsBetween": {
            "type": "array",
            "items": {"type": "integer", "minimum": 0},
            "minItems": 2,
            "maxItems": 2,
            "default": [1, 10],
            "description": "Least and most restarts of a failed job (runtimes.max_restarts, JobSet "
            "failurePolicy.maxRestarts). Why: none loses a week's run to one Xid; too many burns a reservation on "
            "a crash loop.",
        },
        "maxPodsReadyTimeoutS": {
            "type": "integer",
            "minimum": 60,
            "default": 1800,
            "description": "Kueue's waitForPodsReady is on, with at most this timeout "
            "(kubernetes.kueue.wait_for_pods_ready_timeout_s). Why: a half-scheduled multi-node job otherwise "
            "holds its GPUs for as long as it waits.",
        },
        "requireAlertSubscription": {
            "type": "boolean",
            "default": True,
            "description": "The alerts' SNS topic has at least one subscription (health.alert_emails). Why: an "
            "alert to an empty topic reaches no one.",
        },
    },
)
def fleet_health_floor(args: StackValidationArgs, report: Report) -> None:
    g = graph(args)
    groups = accelerated_node_groups(g)
    if not groups:
        args.not_applicable("no accelerated node group")
    config = args.get_config()
    if config.get("requireNodeRepair", True):
        most = int(config.get("maxParallelNodesRepaired", 2))
        unhealthy = int(config.get("maxUnhealthyNodePercentage", 50))
        for group, _ in groups:
            repair = get(group.props, "nodeRepairConfig", {})
            if not truthy(get(repair, "enabled")):
                report(f"node group {group.name} has no auto repair (health.node_repair.enabled).", group.urn)
                continue
            parallel = number(get(repair, "maxParallelNodesRepairedCount"))
            if parallel is None or parallel > most:
                report(
                    f"node group {group.name} repairs {_shown(parallel)} nodes at once "
                    f"(health.node_repair.max_parallel_nodes_repaired_count); the floor here is at most {most}.",
                    group.urn,
                )
            threshold = number(get(repair, "maxUnhealthyNodeThresholdPercentage"))
            if threshold is None or threshold > unhealthy:
                report(
                    f"node group {group.name} keeps repairing until {_shown(threshold)}% of it is unhealthy "
                    f"(health.node_repair.max_unhealthy_node_threshold_percentage); the floor here stops at "
                    f"{unhealthy}%.",
                    group.urn,
                )
    if config.get("requireMetrics", True) and not all(
        g.of_type(t) for t in (AMP_WORKSPACE, AMP_SCRAPER, AMP_RULE_GROUP_NAMESPACE)
    ):
        report("no metrics stack (workspace, collector, alert rules): no alert can fire; set health.metrics true.")
    nvidia = [group for group, _ in groups if str(get(group.props, "amiType", "")) in ACCELERATED_AMI_TYPES["nvidia"]]
    if config.get("requireGpuMetrics", True) and nvidia:
        for release in [r for r in g.of_type(*HELM_TYPES) if _chart(r) == "gpu-operator"]:
            if get(release.props, "values.dcgmExporter.enabled") is not True:
                report(
                    f"{release.name} runs no dcgm-exporter (kubernetes.gpu_operator.dcgm_exporter): the GPU "
                    "alerts (Xid, ECC, fallen off the bus) cannot fire.",
                    release.urn,
                )
    least, most_restarts = (int(n) for n in config.get("restartsBetween", [1, 10]))
    min_backoff = float(config.get("minRestartBackoffS", 10))
    for runtime in g.of_type(CLUSTER_TRAINING_RUNTIME):
        labels = get(runtime.props, "metadata.labels", {})
        if not isinstance(labels, Mapping) or FRAMEWORK_LABEL not in iter(labels):
            continue
        restarts = number(get(runtime.props, "spec.template.spec.failurePolicy.maxRestarts"))
        if restarts is None or not least <= restarts <= most_restarts:
            report(
                f"training runtime {runtime.name} restarts a failed job {_shown(restarts)} times "
                f"(kubernetes.training_operator.runtimes.max_restarts); the floor here is {least} to "
                f"{most_restarts}.",
                runtime.urn,
            )
        backoff = _restart_backoff(runtime)
        if backoff is None or backoff < min_backoff:
            report(
                f"training runtime {runtime.name} waits {_shown(backoff)} s before a restart "
                f"(kubernetes.training_operator.runtimes.restart_backoff_s); the floor here is {min_backoff:g} s.",
                runtime.urn,
            )
    timeout_floor = float(config.get("maxPodsReadyTimeoutS", 1800))
    for release in [r for r in g.of_type(*HELM_TYPES) if _chart(r) == "kueue"]:
        text = get(release.props, "values.managerConfig.controllerManagerConfigYaml", "")
        ready = _yaml_block(str(text), "waitForPodsReady")
        timeout = _seconds(ready.get("timeout"))
        if ready.get("enable") != "true" or timeout is None or timeout > timeout_floor:
            report(
                f"{release.name}: Kueue's waitForPodsReady is {ready or 'off'} "
                f"(kubernetes.kueue.wait_for_pods_ready_timeout_s); the floor here is on, with a timeout of at "
                f"most {timeout_floor:g} s.",
                release.urn,
            )
    if config.get("requireAlertSubscription", True):
        for topic in g.of_type(SNS_TOPIC):
            if not g.referrers(topic, None, SNS_TOPIC_SUBSCRIPTION):
                report(
                    f"alert topic {topic.name} has no subscription: alerts reach no one; list who receives them in "
                    "health.alert_emails.",
                    topic.urn,
                )


def _shown(value: float | None) -> str:
    return "an unset number of" if value is None else f"{value:g}"

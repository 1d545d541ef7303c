"""How a gang job gets its nodes: the path from Kueue's quota reservation to the nodes the job runs on.

Kueue v0.14.8 reserves quota for a workload, then waits for every AdmissionCheck of its ClusterQueue
(`pkg/workload/admissionchecks.go`). The provisioning check (`pkg/controller/admissionchecks/provisioning`)
creates one ProvisioningRequest per workload with the class of its ProvisioningRequestConfig, and admits the
workload when the request is `Provisioned` (best-effort-atomic-scale-up: the autoscaler added all the nodes, or
none) or reports capacity (check-capacity: the nodes exist now); a `Failed` request is retried with the config's
backoff. Without a check the workload is admitted at quota reservation, so its nodes must already exist.

cluster-autoscaler 1.36 answers a ProvisioningRequest only with `--enable-provisioning-requests`
(config/flags/flags.go), and for an empty Auto Scaling group it knows a node's resources, labels and taints only
from the group's node-template tags (cloudprovider/aws/README.md): a job that requests EFA devices or selects a
group's label never scales an empty group whose tags do not say so.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from components.k8s.autoscaling import NODE_TEMPLATE, PROVISIONING_CONTROLLER, Admission, admission
from stacks.schema import GpuNodeGroupSpec
from trainstack.journeys import Step

SOURCE = (
    "kubernetes-sigs/kueue v0.14.8 pkg/controller/admissionchecks/provisioning/controller.go; kubernetes/autoscaler "
    "cluster-autoscaler-1.36.1 config/flags/flags.go (--enable-provisioning-requests), cloudprovider/aws/README.md"
)
NAME = "the job's nodes exist or are provisioned, all of them, before Kueue admits it"


@dataclass
class Capacity:
    """What the plan built for capacity: Kueue's checks and configs, the autoscaler, and each group's ASG tags."""

    admission_checks: dict[str, dict[str, Any]] = field(default_factory=dict)
    provisioning_configs: dict[str, dict[str, Any]] = field(default_factory=dict)
    autoscaler_args: dict[str, Any] | None = None  # the release's extraArgs, None without an autoscaler
    provisioning_crd: bool = False
    asg_tags: dict[str, dict[str, str]] = field(default_factory=dict)  # group name -> node-template tags


def _missing_from_template(
    group: GpuNodeGroupSpec,
    tags: Mapping[str, str],
    requests: Mapping[str, Any],
    node_labels: Mapping[str, str],
    taint_key: str,
) -> list[str]:
    """What an empty group's tags leave out that the job needs: a requested resource, a selected label, the taint."""
    missing: list[str] = []
    inferred = {"cpu", "memory", "ephemeral-storage", "pods"}  # from the instance type (README, "Auto-Discovery")
    for resource in sorted(requests):
        if resource not in inferred and f"{NODE_TEMPLATE}/resources/{resource}" not in tags:
            missing.append(f"resource {resource}")
    for key, value in sorted(node_labels.items()):
        if tags.get(f"{NODE_TEMPLATE}/label/{key}") != value:
            missing.append(f"label {key}={value}")
    if f"{NODE_TEMPLATE}/taint/{taint_key}" not in tags:
        missing.append(f"taint {taint_key}")
    return missing


def admission_step(
    capacity: Capacity,
    group: GpuNodeGroupSpec,
    queue: Mapping[str, Any] | None,
    nodes: int,
    requests: Mapping[str, Any],
    node_labels: Mapping[str, str],
    taint_key: str,
) -> Step:
    """The admission path of a job of `nodes` nodes on `group` through its queue: holds when it is whole."""
    if queue is None:
        return Step(NAME, False, f"no ClusterQueue for group {group.name}", SOURCE)
    checks = list(queue.get("admissionChecks") or [])
    expected = admission(group)
    if expected is Admission.NODES_EXIST:
        return _fixed_group_step(group, checks)
    if not checks:
        return Step(
            NAME,
            False,
            f"group {group.name} has {group.min_size} of up to {group.max_size} node(s) and its "
            "queue has no admission check: a job is admitted onto nodes that may never appear, and "
            "waitForPodsReady evicts and requeues it",
            SOURCE,
        )
    if refusal := _provisioning_refusal(capacity, group, checks[0], expected, nodes):
        return Step(NAME, False, refusal, SOURCE)
    config = _provisioning_config(capacity, capacity.admission_checks[checks[0]]) or {}
    retry = config.get("retryStrategy") or {}
    if expected is Admission.CHECK_CAPACITY:
        return _capacity_block_step(group, retry)
    if group.min_size < nodes:
        missing = _missing_from_template(group, capacity.asg_tags.get(group.name, {}), requests, node_labels, taint_key)
        if missing:
            return Step(
                NAME,
                False,
                f"the autoscaler cannot see that an empty {group.name} node would fit the job: "
                f"its Auto Scaling group's tags leave out {', '.join(missing)}",
                SOURCE,
            )
    return Step(
        NAME,
        True,
        f"ProvisioningRequest best-effort-atomic-scale-up for {nodes} node(s) → the autoscaler "
        f"grows {group.name} ({group.min_size} to {group.max_size}) by all of them or none → admitted when "
        f"Provisioned; a failed scale-up is retried {retry.get('backoffLimitCount')} time(s)",
        SOURCE,
    )


def _fixed_group_step(group: GpuNodeGroupSpec, checks: list[Any]) -> Step:
    """A group fixed on the nodes that exist: admitted at quota reservation, so its queue must wait for nothing."""
    if checks:
        return Step(
            NAME,
            False,
            f"group {group.name} is fixed on nodes that exist, but its queue waits for {checks}: nothing would answer",
            SOURCE,
        )
    return Step(
        NAME,
        True,
        f"admitted at quota reservation onto the {group.max_size} node(s) that exist "
        f"(min_size = max_size = {group.max_size}); no admission check",
        SOURCE,
    )


def _provisioning_config(capacity: Capacity, check: Mapping[str, Any]) -> dict[str, Any] | None:
    """The ProvisioningRequestConfig an AdmissionCheck names, if the plan built it."""
    return capacity.provisioning_configs.get((check.get("parameters") or {}).get("name", ""))


def _provisioning_refusal(
    capacity: Capacity, group: GpuNodeGroupSpec, check_name: str, expected: Admission, nodes: int
) -> str | None:
    """Why the provisioning path cannot admit a job of `nodes` nodes on `group`, or None when every link is there:
    Kueue's check and its config of the group's class, the ProvisioningRequest CRD, an autoscaler that answers,
    and a group that can grow to the job."""
    check = capacity.admission_checks.get(check_name)
    if check is None or check.get("controllerName") != PROVISIONING_CONTROLLER:
        return f"AdmissionCheck {check_name} is missing or not Kueue's provisioning check"
    config = _provisioning_config(capacity, check)
    if config is None:
        return f"AdmissionCheck {check_name} names no ProvisioningRequestConfig in the plan"
    cls = config.get("provisioningClassName")
    if cls != expected.value:
        return f"ProvisioningRequestConfig {check_name} asks for {cls}; group {group.name} needs {expected.value}"
    if not capacity.provisioning_crd:
        return (
            "the ProvisioningRequest CRD is not installed: Kueue skips its provisioning "
            "controller and the check never answers"
        )
    args = capacity.autoscaler_args
    if args is None or str(args.get("enable-provisioning-requests")).lower() != "true":
        return "no cluster-autoscaler with --enable-provisioning-requests: the ProvisioningRequest is never answered"
    if nodes > group.max_size:
        return (
            f"a job of {nodes} node(s) asks for more than max_size {group.max_size}: the "
            "atomic scale-up fails and the job is retried, then deactivated"
        )
    return None


def _capacity_block_step(group: GpuNodeGroupSpec, retry: Mapping[str, Any]) -> Step:
    """A Capacity Block's job: admitted when the autoscaler reports the block's nodes, inside its window."""
    window = group.capacity.window
    when = (
        f" (from {window.starts_at.isoformat()} to {window.last_instance_at.isoformat()})" if window is not None else ""
    )
    return Step(
        NAME,
        True,
        f"ProvisioningRequest check-capacity → the autoscaler reports the block's "
        f"{group.max_size} node(s) exist only inside the window{when} → admitted; before the start "
        f"it is retried every {retry.get('backoffMaxSeconds')} s up to "
        f"{retry.get('backoffLimitCount')} times",
        SOURCE,
    )

"""Kubernetes rules: Helm releases (GPU Operator, EFA device plugin) and workload pod specs.

Offline, a Helm release is one resource with its `values`; the objects it renders are not visible, so the
settings these rules check are kept in `values` by the program.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, NamedTuple

from pulumi_policy import PolicyResource, ResourceValidationArgs, Severity, StackValidationArgs
from pulumi_policy.proxy import UnknownValueError

from ..facts import ACCELERATED_AMI_TYPES
from .base import (
    HELM_TYPES,
    WORKLOAD_TYPES,
    Graph,
    Report,
    accelerated_node_groups,
    get,
    graph,
    items,
    label,
    resource_rule,
    stack_rule,
)

_EXACT_SEMVER = re.compile(r"^v?\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$")
GPU_OPERATOR_CHART = "gpu-operator"
EFA_PLUGIN_CHART = "aws-efa-k8s-device-plugin"


def chart_name(props: Mapping[str, Any]) -> str:
    """The chart's own name from `chart` ("nvidia/gpu-operator", "oci://.../gpu-operator" or a bare name)."""
    return str(get(props, "chart", "")).rstrip("/").rsplit("/", 1)[-1]


def _releases(g: Graph, chart: str) -> list[PolicyResource]:
    return [r for r in g.of_type(*HELM_TYPES) if chart_name(r.props) == chart]


@resource_rule(
    name="helm-chart-pinned",
    description="Every Helm release pins an exact chart version: an unpinned chart upgrades itself on the "
    "next `pulumi up`, and GPU Operator upgrades restart every GPU node's driver stack.",
    severity=Severity.MEDIUM,
    types=HELM_TYPES,
)
def helm_chart_pinned(args: ResourceValidationArgs, report: Report) -> None:
    version = get(args.props, "version")
    if version is None or not _EXACT_SEMVER.match(str(version)):
        report(f"chart {chart_name(args.props)!r} version is {version!r}; pin an exact version (x.y.z).")


DEVICE_PLUGIN_OPT_OUT = "nvidia.com/gpu.deploy.device-plugin"  # the operator skips nodes labelled "false"


@stack_rule(
    name="gpu-operator-values",
    description="On EKS NVIDIA AMIs the GPU Operator installs neither the driver nor the container toolkit, "
    "and on Bottlerocket not the device plugin either (off in values, or the node opts out with "
    "nvidia.com/gpu.deploy.device-plugin=false): the AMI ships them, and a second driver or plugin breaks "
    "every GPU node (NVIDIA GPU Operator, Amazon EKS notes; EKS accelerated AMIs). Its device plugin passes "
    "GPUs as volume mounts, which the nodes' runtime takes in place of NVIDIA_VISIBLE_DEVICES.",
    severity=Severity.HIGH,
)
def gpu_operator_values(args: StackValidationArgs, report: Report) -> None:
    g = graph(args)
    releases = _releases(g, GPU_OPERATOR_CHART)
    nvidia_amis = ACCELERATED_AMI_TYPES["nvidia"]
    groups = [group for group, _ in accelerated_node_groups(g) if get(group.props, "amiType") in nvidia_amis]
    if not releases or not groups:
        args.not_applicable("needs a gpu-operator release and a node group on an EKS NVIDIA AMI")
    bottlerocket = [group for group in groups if str(get(group.props, "amiType")).startswith("BOTTLEROCKET")]
    for release in releases:
        values = get(release.props, "values", {})
        for key in ("driver", "toolkit"):
            if get(values, f"{key}.enabled") is not False:
                report(
                    f"{release.name}: values.{key}.enabled is not false; the EKS NVIDIA AMI already provides it.",
                    release.urn,
                )
        if get(values, "devicePlugin.enabled") is False:
            continue
        strategy = {get(e, "name"): get(e, "value") for e in items(get(values, "devicePlugin.env"))}
        if strategy.get("DEVICE_LIST_STRATEGY") != "volume-mounts":
            report(
                f"{release.name}: the device plugin passes GPUs as {strategy.get('DEVICE_LIST_STRATEGY', 'envvar')}, "
                "not volume-mounts: the nodes' runtime ignores NVIDIA_VISIBLE_DEVICES in unprivileged containers "
                "(docs/security.md), so allocated GPUs would never reach a container.",
                release.urn,
            )
        for group in bottlerocket:
            if label(group, DEVICE_PLUGIN_OPT_OUT) != "false":
                report(
                    f"{release.name} runs the device plugin, and Bottlerocket node group {group.name} neither "
                    f"turns it off nor carries {DEVICE_PLUGIN_OPT_OUT}=false.",
                    release.urn,
                )


# EKS node groups spell taint effects in the EKS API's enum; pods spell them as Kubernetes does.
_EFFECTS = {"NO_SCHEDULE": "NoSchedule", "NO_EXECUTE": "NoExecute", "PREFER_NO_SCHEDULE": "PreferNoSchedule"}
# Taints that keep a pod off a node; PreferNoSchedule only steers the scheduler.
_REPELLING = ("NoSchedule", "NoExecute")


class Taint(NamedTuple):
    """A node taint in Kubernetes' spelling (effect NoSchedule, not NO_SCHEDULE); value "" when unset."""

    key: str
    value: str
    effect: str


def node_group_taints(group: PolicyResource) -> list[Taint]:
    """A node group's taints, with EKS's effect names translated to Kubernetes'."""
    out: list[Taint] = []
    for t in items(get(group.props, "taints")):
        effect = str(get(t, "effect", ""))
        out.append(Taint(str(get(t, "key", "")), str(get(t, "value", "")), _EFFECTS.get(effect, effect)))
    return out


def tolerates(toleration: Any, taint: Taint) -> bool:
    """Whether a pod toleration matches a taint, as Kubernetes decides it (core/v1 Toleration.ToleratesTaint).

    An effect, when set, must equal the taint's; a key, when set, must equal the taint's; operator Exists
    matches any value, Equal (the default) needs the same value. An empty key matches every key, which the
    API server only admits with Exists, and Exists admits no value: invalid tolerations tolerate nothing.
    """
    key = str(get(toleration, "key", ""))
    operator = str(get(toleration, "operator", "") or "Equal")
    value = str(get(toleration, "value", ""))
    effect = str(get(toleration, "effect", ""))
    if operator not in ("Exists", "Equal") or (not key and operator != "Exists") or (operator == "Exists" and value):
        return False
    if effect and effect != taint.effect:
        return False
    if key and key != taint.key:
        return False
    return operator == "Exists" or value == taint.value


@stack_rule(
    name="efa-plugin-tolerates-gpu-taint",
    description="The EFA device plugin tolerates the accelerator taints of the node groups: otherwise it "
    "never runs on GPU nodes, `vpc.amazonaws.com/efa` is never advertised and NCCL falls back to TCP "
    "(aws-efa-k8s-device-plugin chart).",
    severity=Severity.HIGH,
)
def efa_plugin_tolerates_gpu_taint(args: StackValidationArgs, report: Report) -> None:
    g = graph(args)
    releases = _releases(g, EFA_PLUGIN_CHART)
    if not releases:
        args.not_applicable("no aws-efa-k8s-device-plugin release")
    taints = {
        taint
        for group, _ in accelerated_node_groups(g)
        for taint in node_group_taints(group)
        if taint.effect in _REPELLING
    }
    for release in releases:
        tolerations = items(get(release.props, "values.tolerations"))
        for taint in sorted(taints):
            if not any(tolerates(t, taint) for t in tolerations):
                report(
                    f"{release.name}: values.tolerations does not tolerate {taint.key}={taint.value}:{taint.effect}.",
                    release.urn,
                )


# ------------------------------------------------------------------------------------------- pod specs


def pod_specs(props: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    """Every pod spec inside a workload (Pod, Deployment, Job, CronJob, or a CRD with pod templates)."""
    stack: list[Any] = [get(props, "spec")]
    while stack:
        node = stack.pop()
        if isinstance(node, Mapping):
            if "containers" in iter(node):
                yield node
                continue
            for key in node:
                try:
                    stack.append(node[key])
                except UnknownValueError:
                    continue  # a value computed later (preview) holds no pod spec of ours
        elif isinstance(node, Sequence) and not isinstance(node, str):
            for index in range(len(node)):
                try:
                    stack.append(node[index])
                except UnknownValueError:
                    continue


def containers(spec: Mapping[str, Any]) -> list[Any]:
    return items(get(spec, "initContainers")) + items(get(spec, "containers"))


_WORKLOADS = [*WORKLOAD_TYPES]
_DEFAULT_PRIVILEGED_NAMESPACES = ["kube-system", "gpu-operator"]


@resource_rule(
    name="k8s-pod-security",
    description="Workloads outside the system namespaces run without privileged containers, host "
    "network/PID/IPC or privilege escalation (CIS EKS 4.2, CKV_K8S_16-20); the NVIDIA and EFA device "
    "plugins in kube-system and gpu-operator need them and are allowed.",
    severity=Severity.HIGH,
    types=_WORKLOADS,
    config={
        "privilegedNamespaces": {
            "type": "array",
            "items": {"type": "string"},
            "uniqueItems": True,
            "default": _DEFAULT_PRIVILEGED_NAMESPACES,
            "description": "Namespaces whose workloads may be privileged.",
        }
    },
)
def k8s_pod_security(args: ResourceValidationArgs, report: Report) -> None:
    namespace = str(get(args.props, "metadata.namespace", "default"))
    if namespace in args.get_config().get("privilegedNamespaces", _DEFAULT_PRIVILEGED_NAMESPACES):
        args.not_applicable(f"namespace {namespace} is allowed privileged workloads")
    for spec in pod_specs(args.props):
        for flag in ("hostNetwork", "hostPID", "hostIPC"):
            if get(spec, flag) is True:
                report(f"the pod spec sets {flag}.")
        for container in containers(spec):
            name = get(container, "name", "?")
            if get(container, "securityContext.privileged") is True:
                report(f"container {name} is privileged.")
            if get(container, "securityContext.allowPrivilegeEscalation") is True:
                report(f"container {name} allows privilege escalation.")


TRAINING_RUNTIMES = (
    "kubernetes:trainer.kubeflow.org/v1alpha1:ClusterTrainingRuntime",
    "kubernetes:trainer.kubeflow.org/v1alpha1:TrainingRuntime",
)
# Pod Security `baseline`'s allowed added capabilities minus NET_RAW, which Kubernetes' baseline still admits but no
# training process needs (raw sockets: ARP and ICMP spoofing on the node's network).
RUNTIME_CAPABILITIES = frozenset(
    {"AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD", "NET_BIND_SERVICE", "SETFCAP",
     "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT"}
)  # fmt: skip
SECCOMP_CONFINED = ("RuntimeDefault", "Localhost")


@resource_rule(
    name="k8s-runtime-least-privilege",
    description="The training runtimes' containers drop every capability and add back only what they need (never "
    "NET_RAW, nothing beyond Pod Security baseline), allow no privilege escalation, and run under a seccomp "
    "profile (RuntimeDefault): a team's job is the code the platform trusts least (CKV_K8S_28, CKV_K8S_31, CIS EKS "
    "4.6).",
    severity=Severity.LOW,
    types=list(TRAINING_RUNTIMES),
)
def k8s_runtime_least_privilege(args: ResourceValidationArgs, report: Report) -> None:
    for spec in pod_specs(args.props):
        pod_seccomp = get(spec, "securityContext.seccompProfile.type")
        for container in containers(spec):
            name = get(container, "name", "?")
            context = get(container, "securityContext") or {}
            if (get(context, "seccompProfile.type") or pod_seccomp) not in SECCOMP_CONFINED:
                report(f"container {name} runs without a seccomp profile (set RuntimeDefault).")
            if get(context, "allowPrivilegeEscalation") is not False:
                report(f"container {name} does not set allowPrivilegeEscalation: false.")
            if "ALL" not in [str(c) for c in items(get(context, "capabilities.drop"))]:
                report(f"container {name} does not drop ALL capabilities.")
            extra = sorted({str(c) for c in items(get(context, "capabilities.add"))} - RUNTIME_CAPABILITIES)
            if extra:
                report(f"container {name} adds {extra}: beyond what a training container needs.")


def _image_parts(image: str) -> tuple[str | None, str | None]:
    """(tag, digest) of an image reference."""
    name, _, digest = image.partition("@")
    last = name.rsplit("/", 1)[-1]
    tag = last.split(":", 1)[1] if ":" in last else None
    return tag, (digest or None)


def _images(props: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(container name, image) pairs, once each: launcher and worker templates often share both."""
    seen: list[tuple[str, str]] = []
    for spec in pod_specs(props):
        for container in containers(spec):
            pair = (str(get(container, "name", "?")), str(get(container, "image", "")))
            if pair not in seen:
                seen.append(pair)
    return seen


@resource_rule(
    name="k8s-image-tag-pinned",
    description="Every container image names a tag other than `latest` or `latest-*` (or a digest): a floating image "
    "changes under a running training job's restarts (CKV_K8S_14).",
    severity=Severity.MEDIUM,
    types=_WORKLOADS,
)
def k8s_image_tag_pinned(args: ResourceValidationArgs, report: Report) -> None:
    for name, image in _images(args.props):
        tag, digest = _image_parts(image)
        if digest is None and (not tag or tag == "latest" or tag.startswith("latest-")):
            report(f"container {name} uses {image!r}: pin a version tag or a digest.")


@resource_rule(
    name="k8s-image-digest",
    description="Container images are pinned by digest, so the bytes that ran in staging are the bytes that "
    "run in prod (CKV_K8S_43).",
    severity=Severity.LOW,
    types=_WORKLOADS,
)
def k8s_image_digest(args: ResourceValidationArgs, report: Report) -> None:
    for name, image in _images(args.props):
        if _image_parts(image)[1] is None:
            report(f"container {name} uses {image!r} without a digest (@sha256:...).")


EFA_RESOURCE = "vpc.amazonaws.com/efa"
HUGEPAGES = "hugepages-2Mi"
ACCELERATOR_RESOURCES = ("nvidia.com/gpu", "aws.amazon.com/neuron", "aws.amazon.com/neuroncore")


@resource_rule(
    name="k8s-efa-pod-resources",
    description="EFA workers (pods that ask for EFA devices, or run on accelerators with FI_PROVIDER=efa) "
    "request `vpc.amazonaws.com/efa` and 2 MiB hugepages: without the device request NCCL silently falls "
    "back to TCP sockets, and libfabric needs hugepages for its buffers (AWS EFA on EKS docs, aws-ofi-nccl).",
    severity=Severity.HIGH,
    types=_WORKLOADS,
)
def k8s_efa_pod_resources(args: ResourceValidationArgs, report: Report) -> None:
    checked = False
    for spec in pod_specs(args.props):
        for container in containers(spec):
            name = get(container, "name", "?")
            env = {str(get(e, "name")): get(e, "value") for e in items(get(container, "env"))}
            limits = get(container, "resources.limits", {})
            requests = get(container, "resources.requests", {})
            accelerators = any(k in limits or k in requests for k in ACCELERATOR_RESOURCES)
            # An MPI launcher exports FI_PROVIDER to its workers without using EFA itself: only a container
            # that asks for EFA devices or runs on accelerators with FI_PROVIDER=efa is an EFA worker.
            wants_efa = (
                EFA_RESOURCE in limits or EFA_RESOURCE in requests or (env.get("FI_PROVIDER") == "efa" and accelerators)
            )
            if not wants_efa:
                continue
            checked = True
            if EFA_RESOURCE not in limits:
                report(f"container {name} uses EFA (FI_PROVIDER=efa) but has no {EFA_RESOURCE} limit.")
            if HUGEPAGES not in limits:
                report(f"container {name} uses EFA but has no {HUGEPAGES} limit.")
    if not checked:
        args.not_applicable("no container uses EFA")


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

"""Kubernetes rules (the `trainstack:k8s` area): Helm releases (GPU Operator, EFA device plugin), workload pod
specs, and the team namespaces: Pod Security, network isolation, quotas, image registries, access and device
access (docs/security.md).

Offline, a Helm release is one resource with its `values`; the objects it renders are not visible, so the
settings these rules check are kept in `values` by the program."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, NamedTuple

from pulumi_policy import PolicyResource, ResourceValidationArgs, Severity, StackValidationArgs
from pulumi_policy.proxy import UnknownValueError

from ..facts import (
    ACCELERATED_AMI_TYPES,
    LUSTRE_PORT_RANGES,
    OPEN_REGISTRIES,
    PSA_ENFORCE,
    REGISTRY_POLICY_NAME,
    SERVICE_QUOTA,
    TEAM_GROUP_PREFIX,
    TENANT_LABEL,
    TENANT_TEAM,
)
from ..facts_generated import (
    ACCESS_ENTRY,
    ACCESS_POLICY_ASSOCIATION,
    CLUSTER_TRAINING_RUNTIME,
    EKS_CLUSTER,
    HYPERPOD_CLUSTER,
    K8S_CLUSTER_ROLE,
    K8S_CLUSTER_ROLE_BINDING,
    K8S_ROLE,
    K8S_ROLE_BINDING,
    LIMIT_RANGE,
    NAMESPACE,
    NETWORK_POLICY,
    RESOURCE_QUOTA,
    VALIDATING_ADMISSION_POLICY,
    VALIDATING_ADMISSION_POLICY_BINDING,
)
from ..rbac import PRIVILEGE_VERBS, Request, allows
from .base import (
    HELM_TYPES,
    WORKLOAD_TYPES,
    Graph,
    Report,
    accelerated_node_groups,
    accelerator_capacity,
    config,
    get,
    graph,
    items,
    label,
    number,
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
    CLUSTER_TRAINING_RUNTIME,
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


LEVELS = ("privileged", "baseline", "restricted")
_DEFAULT_PRIVILEGED = ["gpu-operator", "trainstack-monitoring", "trainstack-validation"]


def metadata_labels(resource: PolicyResource) -> Mapping[str, Any]:
    labels = get(resource.props, "metadata.labels")
    return labels if isinstance(labels, Mapping) else {}


def team_namespaces(g: Graph) -> list[PolicyResource]:
    """Namespaces trainstack created for teams (the tenant label)."""
    return [ns for ns in g.of_type(NAMESPACE) if metadata_labels(ns).get(TENANT_LABEL) == TENANT_TEAM]


def _in_namespace(g: Graph, namespace: PolicyResource, *types: str) -> list[PolicyResource]:
    """Namespaced objects whose metadata was computed from `namespace` (its name output)."""
    return g.referrers(namespace, "metadata", *types)


# ------------------------------------------------------------------------------------------ pod security


@resource_rule(
    name="k8s-namespace-pod-security",
    description="Every namespace trainstack creates enforces a Pod Security Standard: team namespaces at least "
    "baseline (no privileged pods, host namespaces or hostPath: CIS EKS 4.2.x), privileged only for the system "
    "components that need host access. A namespace that only warns lets anyone with pod create rights take a node.",
    severity=Severity.CRITICAL,
    types=[NAMESPACE],
    config={
        "privilegedNamespaces": {
            "type": "array",
            "items": {"type": "string"},
            "uniqueItems": True,
            "default": _DEFAULT_PRIVILEGED,
            "description": "Namespaces allowed to enforce `privileged` (documented system components).",
        },
        "minTeamLevel": {
            "type": "string",
            "enum": ["baseline", "restricted"],
            "default": "baseline",
            "description": "The least a team namespace must enforce.",
        },
    },
)
def k8s_namespace_pod_security(args: ResourceValidationArgs, report: Report) -> None:
    name = str(get(args.props, "metadata.name", "?"))
    labels = get(args.props, "metadata.labels", {})
    level = labels[PSA_ENFORCE] if isinstance(labels, Mapping) and PSA_ENFORCE in iter(labels) else None
    if level not in LEVELS:
        report(f"namespace {name} does not enforce a Pod Security Standard ({PSA_ENFORCE} is {level!r}).")
        return
    if level == "privileged" and name not in config(args, "privilegedNamespaces", _DEFAULT_PRIVILEGED):
        report(f"namespace {name} enforces privileged but is not a documented privileged system namespace.")
    if isinstance(labels, Mapping) and labels.get(TENANT_LABEL) == TENANT_TEAM:
        minimum = config(args, "minTeamLevel", "baseline")
        if LEVELS.index(level) < LEVELS.index(minimum):
            report(f"team namespace {name} enforces {level}, below {minimum}.")


# ----------------------------------------------------------------------------------------------- tenancy


@stack_rule(
    name="k8s-team-network-isolation",
    description="Each team namespace has a default-deny NetworkPolicy (every pod, ingress and egress, no rule), "
    "so pods of one team cannot reach another's; the VPC CNI enforces it only with its policy agent on "
    "(eks-network-policy-enabled). CIS EKS 4.3.2. No egress rule admits Lustre's server ports: Lustre trusts the "
    "UID a client asserts, so only the node's kernel client may speak it.",
    severity=Severity.HIGH,
)
def k8s_team_network_isolation(args: StackValidationArgs, report: Report) -> None:
    g = graph(args)
    namespaces = team_namespaces(g)
    if not namespaces:
        args.not_applicable("no team namespaces")
    for namespace in namespaces:
        deny_all = [
            p
            for p in _in_namespace(g, namespace, NETWORK_POLICY)
            if get(p.props, "spec.podSelector") in ({}, None)
            and {"Ingress", "Egress"} <= set(items(get(p.props, "spec.policyTypes")))
            and not items(get(p.props, "spec.ingress"))
            and not items(get(p.props, "spec.egress"))
        ]
        if not deny_all:
            report(f"team namespace {namespace.name} has no default-deny NetworkPolicy.", namespace.urn)
        for policy in _in_namespace(g, namespace, NETWORK_POLICY):
            for rule in items(get(policy.props, "spec.egress")):
                if _reaches_lustre(rule):
                    report(
                        f"{policy.name} lets pods of {namespace.name} reach Lustre (TCP 988, 1018-1023) outside the "
                        "cluster: a pod speaking Lustre could claim any team's UID.",
                        policy.urn,
                    )


def _reaches_lustre(rule: Any) -> bool:
    """An egress rule that admits TCP 988 or 1018-1023 to an address block (or to anywhere: no `to`)."""
    peers = items(get(rule, "to"))
    if peers and not any(get(p, "ipBlock") is not None for p in peers):
        return False  # pods and namespaces only: no file server is a pod
    ports = items(get(rule, "ports"))
    if not ports:
        return True
    for port in ports:
        if str(get(port, "protocol", "TCP")) != "TCP":
            continue
        first = get(port, "port")
        if first is None:
            return True  # every port of the protocol
        if not isinstance(first, int):
            continue  # a named port: a pod's container port, never a server's
        last = get(port, "endPort", first)
        if any(first <= high and low <= last for low, high in LUSTRE_PORT_RANGES):
            return True
    return False


@stack_rule(
    name="k8s-team-egress-no-internet",
    description="Team pods open HTTPS only to the VPC (interface endpoints) and S3's prefixes (the gateway endpoint): "
    "no egress rule to 0.0.0.0/0 or a block as wide as a /7, which the NAT gateway turns into the whole internet "
    "for a pod holding the team's credentials and data (security.team_internet_egress; prod refuses it).",
    severity=Severity.MEDIUM,
)
def k8s_team_egress_no_internet(args: StackValidationArgs, report: Report) -> None:
    g = graph(args)
    namespaces = team_namespaces(g)
    if not namespaces:
        args.not_applicable("no team namespaces")
    for namespace in namespaces:
        for policy in _in_namespace(g, namespace, NETWORK_POLICY):
            try:
                rules = items(get(policy.props, "spec.egress"))
            except UnknownValueError:
                continue
            for rule in rules:
                peers = items(get(rule, "to"))
                wide = [str(get(p, "ipBlock.cidr")) for p in peers if _internet_wide(get(p, "ipBlock.cidr"))]
                if not peers and rule is not None:
                    wide = ["anywhere (no `to`)"]
                if wide:
                    report(f"{policy.name} lets pods of {namespace.name} reach {', '.join(wide)}.", policy.urn)


def _internet_wide(cidr: Any) -> bool:
    """A block that is most of the internet: /0 to /7 (S3's prefixes are /14 to /21; a VPC is /16 or smaller)."""
    if not isinstance(cidr, str) or "/" not in cidr:
        return False
    try:
        return int(cidr.rsplit("/", 1)[1]) < 8
    except ValueError:
        return False


QUOTA_KEYS = (
    "requests.cpu",
    "requests.memory",
    "requests.ephemeral-storage",
    "pods",
    "requests.vpc.amazonaws.com/efa",
    "requests.hugepages-2Mi",
)
SYSTEM_PRIORITY_CLASSES = ("system-cluster-critical", "system-node-critical")


def _holds_system_classes_at_zero(spec: Any) -> bool:
    """A quota whose scope is the system priority classes (both, by In) and that admits no pod of them."""
    if not isinstance(spec, Mapping) or str(get(spec, "hard.pods", "")) != "0" or get(spec, "scopes"):
        return False
    expressions = items(get(spec, "scopeSelector.matchExpressions"))
    return len(expressions) == 1 and (
        get(expressions[0], "scopeName") == "PriorityClass"
        and get(expressions[0], "operator") == "In"
        and set(SYSTEM_PRIORITY_CLASSES) <= {str(v) for v in items(get(expressions[0], "values"))}
    )


@stack_rule(
    name="k8s-team-quotas",
    description="Each team namespace has a ResourceQuota on CPU, memory, ephemeral storage, pods, EFA devices and "
    "hugepages, a quota that admits no pod of the system priority classes, and a LimitRange, so a team cannot "
    "starve another's pods on the nodes both share beyond their GPU quota, pin another team's fabric or memory, "
    "or preempt the platform.",
    severity=Severity.HIGH,
)
def k8s_team_quotas(args: StackValidationArgs, report: Report) -> None:
    g = graph(args)
    namespaces = team_namespaces(g)
    if not namespaces:
        args.not_applicable("no team namespaces")
    for namespace in namespaces:
        hard: set[str] = set()
        quotas = _in_namespace(g, namespace, RESOURCE_QUOTA)
        for quota in quotas:
            value = get(quota.props, "spec.hard", {})
            scoped = get(quota.props, "spec.scopeSelector") or get(quota.props, "spec.scopes")
            hard |= set(value) if isinstance(value, Mapping) and not scoped else set()  # a scoped one counts few pods
        missing = [k for k in QUOTA_KEYS if k not in hard]
        if missing:
            report(f"team namespace {namespace.name} has no quota on {missing}.", namespace.urn)
        if not any(_holds_system_classes_at_zero(get(q.props, "spec")) for q in quotas):
            report(
                f"team namespace {namespace.name} has no quota holding pods of {list(SYSTEM_PRIORITY_CLASSES)} at 0.",
                namespace.urn,
            )
        if not _in_namespace(g, namespace, LIMIT_RANGE):
            report(f"team namespace {namespace.name} has no LimitRange.", namespace.urn)


def _selects_teams(match_labels: Any) -> bool:
    return (
        isinstance(match_labels, Mapping)
        and TENANT_LABEL in iter(match_labels)
        and match_labels[TENANT_LABEL] == TENANT_TEAM
    )


@stack_rule(
    name="k8s-allowed-registries",
    description="A ValidatingAdmissionPolicy bound with action Deny to the team namespaces restricts their images "
    "(containers, init and ephemeral containers, image volumes) to approved prefixes (supply chain: an image from "
    "anywhere runs with the team's data and credentials). A prefix names who publishes: never the bare host of a "
    "registry where anyone can publish (ECR Public, Docker Hub, GHCR, Quay, NGC), whose path is the publisher.",
    severity=Severity.MEDIUM,
)
def k8s_allowed_registries(args: StackValidationArgs, report: Report) -> None:
    g = graph(args)
    if not team_namespaces(g):
        args.not_applicable("no team namespaces")
    bindings = _bound_to_teams(g, lambda text: ".image" in text)
    if not bindings:
        report("no ValidatingAdmissionPolicy is bound with Deny to the team namespaces: images may come from anywhere.")
    names = {get(b.props, "spec.policyName") for b in bindings}
    for policy in [p for p in g.of_type(VALIDATING_ADMISSION_POLICY) if get(p.props, "metadata.name") in names]:
        try:
            variables = "\n".join(str(get(v, "expression", "")) for v in items(get(policy.props, "spec.variables")))
        except UnknownValueError:
            continue
        text = variables + _validations_text(policy)
        # `object.` (the pod admitted), not `oldObject.` (what it had before an UPDATE): case-sensitive on purpose.
        if "object.spec.volumes" not in text or ".image.reference" not in text:
            report(f"{policy.name} does not judge image volumes (volumes[].image.reference): any image can be mounted.")
        for field in POD_CONTAINER_LISTS:
            if f"object.spec.{field}" not in text:
                report(f"{policy.name} does not judge {field}: any image can run there.")
        for prefix in _quoted(_validations_text(policy)):
            host = prefix.split("/", 1)[0]
            if host in OPEN_REGISTRIES and not prefix.rstrip("/").count("/"):
                report(
                    f"{policy.name} approves {prefix!r}: anyone can publish on {host}; name the publisher's path "
                    f"({host}/<namespace>/) or a mirror of the image in the account's ECR."
                )


# Every list of a pod spec whose entries run an image (core/v1 PodSpec): each is a way around a registry policy
# that judges the others only.
POD_CONTAINER_LISTS = ("containers", "initContainers", "ephemeralContainers")


def _quoted(text: str) -> list[str]:
    """The single-quoted string literals of a CEL expression (the approved prefixes of the registry policy)."""
    return re.findall(r"'([^']*)'", text)


def _validations_text(policy: PolicyResource) -> str:
    """Every validation expression of an admission policy, joined (unknown in a preview: empty)."""
    try:
        return "\n".join(str(get(v, "expression", "")) for v in items(get(policy.props, "spec.validations")))
    except UnknownValueError:
        return ""


def _bound_to_teams(g: Graph, judges: Callable[[str], bool]) -> list[PolicyResource]:
    """The admission policies whose validations `judges` accepts, bound with Deny to the team namespaces."""
    policies = {
        get(p.props, "metadata.name") for p in g.of_type(VALIDATING_ADMISSION_POLICY) if judges(_validations_text(p))
    }
    return [
        b
        for b in g.of_type(VALIDATING_ADMISSION_POLICY_BINDING)
        if "Deny" in items(get(b.props, "spec.validationActions"))
        and get(b.props, "spec.policyName") in policies
        and _selects_teams(get(b.props, "spec.matchResources.namespaceSelector.matchLabels"))
    ]


TEAM_MEMBER_FORBIDDEN: tuple[Request, ...] = (
    *(Request(v, "networking.k8s.io", "networkpolicies") for v in ("create", "update", "patch", "delete")),
    *(Request(v, "", "services") for v in ("create", "update", "patch")),
    Request("create", "networking.k8s.io", "ingresses"),
    *(Request(v, "", r) for v in ("update", "patch", "delete") for r in ("resourcequotas", "limitranges")),
    *(
        Request(v, "rbac.authorization.k8s.io", r)
        for v in ("create", "update", "patch")
        for r in ("roles", "rolebindings")
    ),
    *(Request(v, "rbac.authorization.k8s.io", r) for v in PRIVILEGE_VERBS[:2] for r in ("roles", "clusterroles")),
    *(Request("impersonate", "", r) for r in ("users", "groups", "serviceaccounts")),
)
# EKS access policies a team member may hold beside its Role: only the read-only one (EKS User Guide, "Review
# access policy permissions": AmazonEKSEditPolicy is Kubernetes `edit`, AmazonEKSAdminPolicy `admin`).
TEAM_ACCESS_POLICIES_ALLOWED = ("AmazonEKSViewPolicy",)


def _team_subjects(binding: PolicyResource) -> list[str]:
    return [
        str(get(s, "name"))
        for s in items(get(binding.props, "subjects"))
        if get(s, "kind") == "Group" and str(get(s, "name", "")).startswith(TEAM_GROUP_PREFIX)
    ]


def _bound_rules(g: Graph, binding: PolicyResource, namespace: str | None) -> list[Mapping[str, Any]] | None:
    """The rules of the role a binding names, from the plan; None when the role is not in it (a built-in such as
    `edit`, whose rules the plan cannot see)."""
    kind, name = get(binding.props, "roleRef.kind"), get(binding.props, "roleRef.name")
    candidates = g.of_type(K8S_ROLE) if kind == "Role" else g.of_type(K8S_CLUSTER_ROLE)
    for role in candidates:
        if get(role.props, "metadata.name") == name and (
            kind != "Role" or get(role.props, "metadata.namespace") == namespace
        ):
            return [r for r in items(get(role.props, "rules")) if isinstance(r, Mapping)]
    return None


@stack_rule(
    name="k8s-team-access",
    description="Team members reach their namespace through a Role trainstack writes, bound to the team's group: "
    "it cannot change NetworkPolicies, Services, Ingresses, quotas or RBAC; no EKS access policy beyond view is "
    "associated with a member (AmazonEKSEditPolicy deletes NetworkPolicies and creates LoadBalancer Services); and a "
    "quota of zero LoadBalancer and NodePort Services stands behind the Role in every team namespace.",
    severity=Severity.MEDIUM,
)
def k8s_team_access(args: StackValidationArgs, report: Report) -> None:
    g = graph(args)
    namespaces = team_namespaces(g)
    if not namespaces:
        args.not_applicable("no team namespaces")
    for namespace in namespaces:
        hard: dict[str, Any] = {}
        for quota in _in_namespace(g, namespace, RESOURCE_QUOTA):
            value = get(quota.props, "spec.hard", {})
            hard |= dict(value) if isinstance(value, Mapping) else {}
        loose = [k for k in SERVICE_QUOTA if str(hard.get(k)) != "0"]
        if loose:
            report(f"team namespace {namespace.name} does not hold {loose} at 0: a team can expose it.", namespace.urn)
    for binding in [*g.of_type(K8S_ROLE_BINDING), *g.of_type(K8S_CLUSTER_ROLE_BINDING)]:
        groups = _team_subjects(binding)
        if not groups:
            continue
        if binding.resource_type == K8S_CLUSTER_ROLE_BINDING:
            report(f"{binding.name} binds {groups} cluster-wide: team access stays in the team's namespace.")
            continue
        rules = _bound_rules(g, binding, get(binding.props, "metadata.namespace"))
        if rules is None:
            role = f"{get(binding.props, 'roleRef.kind')} {get(binding.props, 'roleRef.name')}"
            report(f"{binding.name} binds {groups} to {role}, which the plan does not define: bind a Role it writes.")
            continue
        granted = [str(r) for r in TEAM_MEMBER_FORBIDDEN if allows(rules, r)]
        if granted:
            report(f"{binding.name} lets {groups} {', '.join(granted)}.")
    members = {
        get(e.props, "principalArn")
        for e in g.of_type(ACCESS_ENTRY)
        if any(str(x).startswith(TEAM_GROUP_PREFIX) for x in items(get(e.props, "kubernetesGroups")))
    }
    team_names = {str(get(ns.props, "metadata.name")) for ns in namespaces}
    for association in g.of_type(ACCESS_POLICY_ASSOCIATION):
        policy = str(get(association.props, "policyArn", "")).rsplit("/", 1)[-1]
        scoped = set(map(str, items(get(association.props, "accessScope.namespaces"))))
        if policy not in TEAM_ACCESS_POLICIES_ALLOWED and (
            get(association.props, "principalArn") in members or scoped & team_names
        ):
            report(f"{association.name} gives {policy} to a team member: use the team Role (k8s-team-access).")


# What the device access policy must judge (components/k8s/tenancy.py device_policy_spec): the NVIDIA runtime's device
# variable, the GPU taint's toleration, and the system priority classes.
DEVICE_ACCESS_TERMS = ("NVIDIA_VISIBLE_DEVICES", "'nvidia.com/gpu' in c.resources", "priorityClassName")


@stack_rule(
    name="k8s-device-access",
    description="A ValidatingAdmissionPolicy bound with action Deny to the team namespaces keeps accelerators "
    "behind a resource request: no NVIDIA device variable (NVIDIA_VISIBLE_DEVICES), no GPU toleration without a "
    "GPU request, no system priority class. Without it a pod with NVIDIA_VISIBLE_DEVICES=all lands on another "
    "team's node and uses every GPU, counted by no quota and no queue.",
    severity=Severity.CRITICAL,
)
def k8s_device_access(args: StackValidationArgs, report: Report) -> None:
    g = graph(args)
    if not team_namespaces(g):
        args.not_applicable("no team namespaces")
    if not _bound_to_teams(g, lambda text: all(term in text for term in DEVICE_ACCESS_TERMS)):
        report(
            "no ValidatingAdmissionPolicy bound with Deny to the team namespaces refuses NVIDIA_VISIBLE_DEVICES, GPU "
            "tolerations without a GPU request and system priority classes: a pod can take GPUs it never requested."
        )


# The account's private ECR in any region (ECR User Guide, "Private registry concepts": the registry URI is
# <account>.dkr.ecr.<region>.amazonaws.com): only the account publishes there.
_PRIVATE_ECR = re.compile(r"^[0-9]{12}\.dkr\.ecr\.[a-z0-9-]+\.amazonaws\.com(\.cn)?$")


def approved_prefixes(text: str) -> list[str]:
    """The quoted prefixes of the registry policy's CEL (`['nvcr.io/nvidia/', ...].exists(...)`)."""
    return [p for p in re.findall(r"'([^']*)'", text) if p.endswith("/")]


@stack_rule(
    name="registry-allowlist-breadth",
    description="Every prefix the team namespaces' image allowlist approves names a publisher (a path below the "
    "registry host), except the account's private ECR and hosts only one publisher writes to: a whole registry "
    "such as docker.io/, ghcr.io/ or public.ecr.aws/ admits images anyone can push, which then run with a team's "
    "data and credentials (docs/security.md, supply chain).",
    severity=Severity.HIGH,
    config={
        "singlePublisherHosts": {
            "type": "array",
            "items": {"type": "string"},
            "default": ["registry.k8s.io"],
            "description": "Registry hosts approved whole because one publisher alone writes to them. Why: "
            "registry.k8s.io serves only the Kubernetes project's images (kubernetes/registry.k8s.io README); "
            "every open registry (Docker Hub, ECR Public, GHCR, Quay, NGC) lets anyone publish under a namespace.",
        }
    },
)
def registry_allowlist_breadth(args: StackValidationArgs, report: Report) -> None:
    g = graph(args)
    policies = [
        p for p in g.of_type(VALIDATING_ADMISSION_POLICY) if get(p.props, "metadata.name") == REGISTRY_POLICY_NAME
    ]
    if not policies:
        args.not_applicable("no registry allowlist (no team namespaces)")
    single = {str(h) for h in args.get_config().get("singlePublisherHosts", ["registry.k8s.io"])}
    for policy in policies:
        try:
            text = "\n".join(str(get(v, "expression", "")) for v in items(get(policy.props, "spec.validations")))
        except UnknownValueError:
            continue  # the private ECR prefix names the account, known after deploy: checked then
        for prefix in approved_prefixes(text):
            host, _, path = prefix.partition("/")
            if path or host in single or _PRIVATE_ECR.match(host):
                continue
            report(
                f"the image allowlist approves {prefix!r}, the whole of {host} (security.allowed_image_registries): "
                f"every publisher there may run images in the team namespaces; name the publisher's path "
                f"({host}/<namespace>/) or mirror the image into the account's ECR.",
                policy.urn,
            )


ACCELERATOR_REQUESTS = ("requests.nvidia.com/gpu", "requests.aws.amazon.com/neuron")


@stack_rule(
    name="team-quota-fits-capacity",
    floor="staging",
    description="A team's accelerator quota is judged against what the cluster can hold: a quota above every "
    "accelerator the node groups (at maxSize) and HyperPod can ever run limits nothing, and jobs admitted up to "
    "it wait for nodes that never come (kubernetes-sigs/kueue#2665: Kueue does not check quotas against "
    "physical capacity).",
    severity=Severity.MEDIUM,
)
def team_quota_fits_capacity(args: StackValidationArgs, report: Report) -> None:
    g = graph(args)
    quotas = g.of_type(RESOURCE_QUOTA)
    if not quotas:
        args.not_applicable("no ResourceQuota")
    if not g.of_type(EKS_CLUSTER) and not g.of_type(HYPERPOD_CLUSTER):
        # Platform-only mode: the cluster and its node groups are someone else's, so the plan holds no capacity.
        args.not_applicable("the cluster is not in the stack (platform-only): its node groups are not either")
    capacity = sum(c.accelerators for c in accelerator_capacity(g))
    for quota in quotas:
        for key in ACCELERATOR_REQUESTS:
            hard = get(quota.props, "spec.hard")
            amount = number(hard[key]) if isinstance(hard, Mapping) and key in iter(hard) else None
            if amount is not None and amount > capacity:
                namespace = get(quota.props, "metadata.namespace")
                report(
                    f"team {namespace!r} may request {int(amount)} accelerators ({key}; kubernetes.teams[].gpu_quota), "
                    f"more than the {capacity} the cluster can hold: a quota above capacity limits nothing; use at "
                    f"most {capacity}.",
                    quota.urn,
                )

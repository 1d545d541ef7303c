"""What keeps teams on a shared GPU cluster apart: compute quotas and default limits (pod security levels:
components/namespaces.py),
network policies, and the admission policy that restricts where images come from (docs/security.md).

Pure functions decide every value; `Tenancy` only registers them:
- per team namespace a ResourceQuota `compute` (CPU, memory, ephemeral storage and pods, sized so the team's
  pods fit beside its accelerator quota), a LimitRange `defaults` (requests and limits for containers that
  name none, so every pod counts against the quota), and NetworkPolicies: deny everything, then allow the
  namespace itself, DNS, HTTPS to AWS APIs and the Pod Identity agent. No Lustre rule: the Lustre client is the
  node's kernel module, and the FSx CSI driver mounts the file system on the node, so Lustre traffic leaves from
  the node's own address and never passes a pod's NetworkPolicy (which the VPC CNI enforces on pod interfaces);
  the security groups (components/storage/lustre.py) are what admit it;
- one ValidatingAdmissionPolicy and its binding that refuse pods in team namespaces whose images come from
  a registry outside the approved list (core Kubernetes, admissionregistration.k8s.io/v1, GA since 1.30). On
  UPDATE only images the pod did not already have are judged, so a metadata-only change (a controller removing
  its finalizer) still passes after the approved list shrinks.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

import pulumi
import pulumi_kubernetes as k8s

from components.k8s_common import EFA_RESOURCE, GPU_TAINT_KEY, NEURON_TAINT_KEY
from components.namespaces import TENANT_LABEL, TENANT_TEAM
from components.naming import child_name
from components.team_rbac import (
    SERVICE_QUOTA,
    SERVICE_QUOTA_NAME,
    TEAM_MEMBER_ROLE,
    team_member_binding,
    team_member_rules,
)
from stacks.catalog import CATALOG, InstanceType
from stacks.schema import GpuNodeGroupSpec, HyperPodInstanceGroupSpec, TeamSpec

# ------------------------------------------------------------------------------------------------ quotas

# kube-reserved on EKS-optimized AMIs (awslabs/amazon-eks-ami nodeadm, the same formula in bottlerocket-os):
# memory 11 MiB per schedulable pod + 255 MiB; CPU 6% of the first core, 1% of the second, 0.5% of the third
# and fourth, 0.25% of the rest; plus the kubelet's hard eviction threshold of 100 MiB memory.
MAX_PODS_PER_NODE = 250  # the largest max-pods the EKS AMIs set: the memory reservation is an upper bound
EVICTION_HARD_MIB = 100
CPU_RESERVE_TIERS: tuple[tuple[int, float], ...] = ((1, 0.06), (1, 0.01), (2, 0.005), (10**6, 0.0025))
# Pods beyond one per accelerator: MPI launchers, data loaders, a notebook. The pod quota stops a team from
# exhausting pod IPs and the API server with a flood of small pods.
POD_HEADROOM = 16


def reserved_cpu_millicores(vcpus: int) -> int:
    """CPU the EKS AMI reserves for the kubelet and container runtime on a node with `vcpus`."""
    remaining, reserved = vcpus, 0.0
    for cores, share in CPU_RESERVE_TIERS:
        used = min(remaining, cores)
        reserved += used * 1000 * share
        remaining -= used
    return math.ceil(reserved)


@dataclass(frozen=True)
class NodeShape:
    """What pods can request on one node of a group, and how many accelerators and nodes the group has."""

    device_resource: str
    accelerators_per_node: int
    nodes: int
    cpu_millicores: int
    memory_mib: int
    ephemeral_gib: int
    efa_per_node: int = 0
    hugepages_mib: int = 0


def node_shape(row: InstanceType, nodes: int, hugepages_mib: int, disk_gib: int, efa: bool = False) -> NodeShape:
    """Allocatable CPU, memory (less kube-reserved, eviction threshold and pre-allocated hugepages) and
    ephemeral storage (the instance store when the node has one, else its root volume) of one node; its EFA
    devices (the EFA device plugin advertises one per interface) when `efa`, and its 2 MiB hugepages."""
    memory = row.memory_gib * 1024 - (11 * MAX_PODS_PER_NODE + 255) - EVICTION_HARD_MIB - hugepages_mib
    return NodeShape(
        device_resource=row.device_resource,
        accelerators_per_node=row.accelerator_count,
        nodes=nodes,
        cpu_millicores=row.vcpus * 1000 - reserved_cpu_millicores(row.vcpus),
        memory_mib=memory,
        ephemeral_gib=row.instance_store_gib or disk_gib,
        efa_per_node=row.max_efa_interfaces if efa else 0,
        hugepages_mib=hugepages_mib,
    )


def node_shapes(
    groups: Sequence[GpuNodeGroupSpec], hyperpod_groups: Sequence[HyperPodInstanceGroupSpec] = ()
) -> list[NodeShape]:
    """The shape of every accelerated group's nodes at its maximum size."""
    shapes = [
        node_shape(
            CATALOG[g.instance_type],
            g.max_size,
            g.hugepages_2mi * 2 if g.efa_enabled else 0,
            g.root_volume_size_gib,
            efa=g.efa_enabled,
        )
        for g in groups
    ]
    # HyperPod puts every EFA interface of an EFA-capable type on its nodes; the EFA device plugin advertises them.
    shapes += [
        node_shape(CATALOG[g.ec2_instance_type], g.instance_count, 0, g.ebs_volume_size_gib, efa=True)
        for g in hyperpod_groups
    ]
    return shapes


def team_compute_quota(team: TeamSpec, shapes: Sequence[NodeShape]) -> dict[str, str]:
    """The namespace's CPU, memory, ephemeral-storage and pod quota.

    A team holding `gpu_quota` accelerators of a kind occupies at most ceil(gpu_quota / accelerators per node)
    nodes of a group of that kind (no more than the group has); it may use them on whichever group of that
    kind has the most allocatable resources, so it gets the largest such share, once per accelerator kind
    (the accelerator ResourceQuota counts each kind separately). What it gets is exactly what its
    accelerators' nodes offer: its pods fit beside its GPUs, and it cannot take the rest of the cluster."""
    cpu = memory = ephemeral = pods = efa = hugepages = 0
    for kind in dict.fromkeys(s.device_resource for s in shapes):
        best = (0, 0, 0, 0)
        devices = (0, 0)  # EFA devices and hugepages: the most any one group of the kind offers the team's nodes
        for shape in (s for s in shapes if s.device_resource == kind):
            nodes = min(math.ceil(team.gpu_quota / shape.accelerators_per_node), shape.nodes)
            accelerators = min(team.gpu_quota, nodes * shape.accelerators_per_node)
            share = (
                nodes * shape.cpu_millicores,
                nodes * shape.memory_mib,
                nodes * shape.ephemeral_gib,
                accelerators,
            )
            best = max(best, share)
            devices = (max(devices[0], nodes * shape.efa_per_node), max(devices[1], nodes * shape.hugepages_mib))
        cpu, memory, ephemeral, pods = cpu + best[0], memory + best[1], ephemeral + best[2], pods + best[3]
        efa, hugepages = efa + devices[0], hugepages + devices[1]
    return {
        "requests.cpu": f"{cpu}m",
        "limits.cpu": f"{cpu}m",
        "requests.memory": f"{memory}Mi",
        "limits.memory": f"{memory}Mi",
        "requests.ephemeral-storage": f"{ephemeral}Gi",
        "limits.ephemeral-storage": f"{ephemeral}Gi",
        "pods": str(pods + POD_HEADROOM),
        # Extended resources take only the requests. form, hugepages both forms (kubernetes
        # pkg/quota/v1/evaluator/core/pods.go podComputeUsageHelper): a team's pods hold no more EFA devices or
        # hugepages than its accelerators' nodes have, so they cannot pin another team's fabric or memory.
        f"requests.{EFA_RESOURCE}": str(efa),
        f"requests.{HUGEPAGES_2MI}": f"{hugepages}Mi",
    }


def priority_quota() -> dict[str, Any]:
    """A ResourceQuota spec that admits no pod of the system priority classes: pods with one can preempt the
    platform's own (CoreDNS, the CNI, the device plugins). The device policy refuses them at admission; this
    holds the line without it (a pod matches a PriorityClass scope by its priorityClassName: pods.go
    podMatchesScopeFunc)."""
    return {
        "hard": {"pods": "0"},
        "scopeSelector": {
            "matchExpressions": [
                {"scopeName": "PriorityClass", "operator": "In", "values": list(SYSTEM_PRIORITY_CLASSES)}
            ]
        },
    }


# Defaults for containers that set no requests or limits: small, so a forgotten request is visible, never a node.
DEFAULT_REQUEST = {"cpu": "100m", "memory": "256Mi", "ephemeral-storage": "1Gi"}
DEFAULT_LIMIT = {"cpu": "1", "memory": "1Gi", "ephemeral-storage": "10Gi"}


def limit_range_limits() -> list[dict[str, Any]]:
    """The LimitRange's container defaults: with limits.* in the quota, Kubernetes refuses a pod that names no
    limit unless a LimitRange supplies one."""
    return [{"type": "Container", "defaultRequest": dict(DEFAULT_REQUEST), "default": dict(DEFAULT_LIMIT)}]


# ---------------------------------------------------------------------------------------- network policy

DNS_PORT = 53
HTTPS_PORT = 443
# EKS Pod Identity agent: a host-network DaemonSet answering on the link-local 169.254.170.23, port 80
# (EKS User Guide, "Set up the Amazon EKS Pod Identity Agent").
POD_IDENTITY_AGENT_CIDR = "169.254.170.23/32"
POD_IDENTITY_AGENT_PORT = 80
ANYWHERE = "0.0.0.0/0"
# CoreDNS pods carry k8s-app=kube-dns in kube-system (the EKS coredns add-on, as upstream).
KUBE_SYSTEM_SELECTOR = {"kubernetes.io/metadata.name": "kube-system"}
KUBE_DNS_SELECTOR = {"k8s-app": "kube-dns"}


def _ports(protocol: str, ranges: Sequence[tuple[int, int]]) -> list[dict[str, Any]]:
    return [{"protocol": protocol, "port": low, **({"endPort": high} if high != low else {})} for low, high in ranges]


def network_policies(https_destinations: Sequence[str] = (ANYWHERE,)) -> dict[str, dict[str, Any]]:
    """Spec per NetworkPolicy name in a team namespace. Policies are additive: `default-deny` selects every
    pod for both directions with no rule, the others open exactly the flows training needs. EFA traffic is
    RDMA through the device, not the kernel's IP stack, and Lustre is the node's traffic (module docstring):
    neither meets a NetworkPolicy. HTTPS goes to `https_destinations`: anywhere (through NAT), or only the VPC
    (interface endpoints) and S3's prefixes (the gateway endpoint) where teams get no internet."""
    if not https_destinations:
        raise ValueError("team pods need HTTPS to S3 and the VPC's endpoints at least")
    everyone: dict[str, Any] = {}
    policies: dict[str, dict[str, Any]] = {
        "default-deny": {"podSelector": everyone, "policyTypes": ["Ingress", "Egress"]},
        # NCCL bootstrap, MPI launchers and workers, torchrun rendezvous: all within the job's namespace.
        "allow-same-namespace": {
            "podSelector": everyone,
            "policyTypes": ["Ingress", "Egress"],
            "ingress": [{"from": [{"podSelector": everyone}]}],
            "egress": [{"to": [{"podSelector": everyone}]}],
        },
        "allow-dns": {
            "podSelector": everyone,
            "policyTypes": ["Egress"],
            "egress": [
                {
                    "to": [
                        {
                            "namespaceSelector": {"matchLabels": KUBE_SYSTEM_SELECTOR},
                            "podSelector": {"matchLabels": KUBE_DNS_SELECTOR},
                        }
                    ],
                    "ports": _ports("UDP", [(DNS_PORT, DNS_PORT)]) + _ports("TCP", [(DNS_PORT, DNS_PORT)]),
                }
            ],
        },
        # S3 (datasets, checkpoints through the gateway endpoint's public prefixes), ECR, STS and the other
        # AWS APIs over interface endpoints or NAT: HTTPS only.
        "allow-https": {
            "podSelector": everyone,
            "policyTypes": ["Egress"],
            "egress": [
                {
                    "to": [{"ipBlock": {"cidr": cidr}} for cidr in https_destinations],
                    "ports": _ports("TCP", [(HTTPS_PORT, HTTPS_PORT)]),
                }
            ],
        },
        "allow-pod-identity": {
            "podSelector": everyone,
            "policyTypes": ["Egress"],
            "egress": [
                {
                    "to": [{"ipBlock": {"cidr": POD_IDENTITY_AGENT_CIDR}}],
                    "ports": _ports("TCP", [(POD_IDENTITY_AGENT_PORT, POD_IDENTITY_AGENT_PORT)]),
                }
            ],
        },
    }
    return policies


# -------------------------------------------------------------------------------------- image registries

REGISTRY_POLICY_NAME = "trainstack-allowed-registries"


# Registries where anyone can publish under a namespace of their own (ECR Public: an alias; Docker Hub, GHCR, Quay,
# GitLab: a user or organisation; NGC: an org, pulled with the team's own key): an approved prefix must name the
# namespace, never the host alone (the policy pack's k8s-allowed-registries refuses it).
OPEN_REGISTRIES = (
    "public.ecr.aws",
    "docker.io",
    "index.docker.io",
    "registry-1.docker.io",
    "ghcr.io",
    "quay.io",
    "registry.gitlab.com",
    "nvcr.io",
)


def private_ecr_prefix(account_id: str, region: str) -> str:
    """The account's private ECR registry in the stack's region (ECR User Guide, registry URI format)."""
    return f"{account_id}.dkr.ecr.{region}.amazonaws.com/"


def registry_expression(prefixes: Sequence[str]) -> str:
    """CEL: every container, init container and ephemeral container image the pod did not already have (all of
    them on CREATE) starts with an approved prefix."""
    allowed = ", ".join(f"'{p}'" for p in prefixes)
    return (
        f"variables.images.all(image, image in variables.previousImages || "
        f"[{allowed}].exists(prefix, image.startsWith(prefix)))"
    )


def images_expression(pod: str) -> str:
    """CEL: every image of the pod `pod` names: containers always, init and ephemeral containers when present, and
    image volumes (`volumes[].image.reference`, Kubernetes 1.31+: the kubelet pulls them like container images)."""
    return (
        f"{pod}.spec.containers.map(c, c.image)"
        f" + (has({pod}.spec.initContainers) ? {pod}.spec.initContainers.map(c, c.image) : [])"
        f" + (has({pod}.spec.ephemeralContainers) ? {pod}.spec.ephemeralContainers.map(c, c.image) : [])"
        f" + (has({pod}.spec.volumes) ? {pod}.spec.volumes.filter(v, has(v.image) && has(v.image.reference))"
        ".map(v, v.image.reference) : [])"
    )


IMAGES_EXPRESSION = images_expression("object")
# `oldObject` is null on CREATE (Kubernetes ValidatingAdmissionPolicy, "Validation expression" variables).
PREVIOUS_IMAGES_EXPRESSION = f"oldObject == null ? [] : ({images_expression('oldObject')})"


def _refusing_pod_writes() -> dict[str, Any]:
    """What both admission policies judge, failing closed: every pod created or updated, and every ephemeral
    container added to one (`kubectl debug` writes pods/ephemeralcontainers, not the pod)."""
    return {
        "failurePolicy": "Fail",
        "matchConstraints": {
            "resourceRules": [
                {
                    "apiGroups": [""],
                    "apiVersions": ["v1"],
                    "operations": ["CREATE", "UPDATE"],
                    "resources": ["pods", "pods/ephemeralcontainers"],
                }
            ]
        },
    }


def registry_policy_spec(prefixes: Sequence[str]) -> dict[str, Any]:
    """The ValidatingAdmissionPolicy: pods (and their ephemeral containers) with an unapproved image are refused."""
    return {
        **_refusing_pod_writes(),
        "variables": [
            {"name": "images", "expression": IMAGES_EXPRESSION},
            {"name": "previousImages", "expression": PREVIOUS_IMAGES_EXPRESSION},
        ],
        "validations": [
            {
                "expression": registry_expression(prefixes),
                "message": f"images in team namespaces must come from: {', '.join(prefixes)}",
            }
        ],
    }


def registry_binding_spec() -> dict[str, Any]:
    """Bind the policy to team namespaces only, denying (not just warning)."""
    return {
        "policyName": REGISTRY_POLICY_NAME,
        "validationActions": ["Deny"],
        "matchResources": {"namespaceSelector": {"matchLabels": {TENANT_LABEL: TENANT_TEAM}}},
    }


# ------------------------------------------------------------------------------- device access admission

DEVICE_POLICY_NAME = "trainstack-device-access"
# The environment variables the NVIDIA container runtime selects devices by (NVIDIA/nvidia-container-toolkit
# internal/config/image/cuda_image.go: envNVVisibleDevices, envNVMigConfigDevices, envNVMigMonitorDevices, and
# NVIDIA_IMEX_CHANNELS for IMEX channels on GB200). On the EKS AL2023 NVIDIA AMI the NVIDIA runtime is containerd's
# default, so a pod naming one of these on a GPU node gets the GPUs without requesting them; the node's runtime
# config ignores them for unprivileged containers too (components/gpu/userdata.py), this refuses them at the door.
NVIDIA_DEVICE_VARIABLES = (
    "NVIDIA_VISIBLE_DEVICES",
    "NVIDIA_MIG_CONFIG_DEVICES",
    "NVIDIA_MIG_MONITOR_DEVICES",
    "NVIDIA_IMEX_CHANNELS",
)
# Accelerator taints (components/gpu/gpu_nodes.node_taint) and the resource a pod tolerating one must request.
ACCELERATOR_TAINTS = (GPU_TAINT_KEY, NEURON_TAINT_KEY)
# The one pod that tolerates an accelerator taint and requests none: the Trainer's MPI launcher, placed with its
# workers (components/k8s/training_runtimes.py). JobSet labels each pod with its replicated job's name.
LAUNCHER_LABEL = "jobset.sigs.k8s.io/replicatedjob-name"
LAUNCHER_NAME = "launcher"
SYSTEM_PRIORITY_PREFIX = "system-"  # system-cluster-critical, system-node-critical (kube-scheduler built-ins)
SYSTEM_PRIORITY_CLASSES = ("system-cluster-critical", "system-node-critical")
PRIORITY_QUOTA_NAME = "system-priority"
HUGEPAGES_2MI = "hugepages-2Mi"


def _no_device_variables(field: str) -> str:
    names = ", ".join(f"'{n}'" for n in NVIDIA_DEVICE_VARIABLES)
    check = f"object.spec.{field}.all(c, !has(c.env) || c.env.all(e, !(e.name in [{names}])))"
    return check if field == "containers" else f"!has(object.spec.{field}) || {check}"


def _requests(resource: str) -> str:
    return (
        f"object.spec.containers.exists(c, has(c.resources) && ("
        f"(has(c.resources.limits) && '{resource}' in c.resources.limits) || "
        f"(has(c.resources.requests) && '{resource}' in c.resources.requests)))"
    )


def _tolerates(taint: str) -> str:
    return (
        "has(object.spec.tolerations) && object.spec.tolerations.exists(t, "
        f"(has(t.key) && t.key == '{taint}') || (!has(t.key) && has(t.operator) && t.operator == 'Exists'))"
    )


LAUNCHER_EXPRESSION = (
    f"has(object.metadata.labels) && '{LAUNCHER_LABEL}' in object.metadata.labels && "
    f"object.metadata.labels['{LAUNCHER_LABEL}'] == '{LAUNCHER_NAME}'"
)


def device_policy_spec() -> dict[str, Any]:
    """The ValidatingAdmissionPolicy that keeps accelerators behind a resource request in team namespaces: no
    NVIDIA device variable in any container, no accelerator toleration without requesting that accelerator (the
    MPI launcher aside), no system priority class."""
    validations = [
        {
            "expression": " && ".join(
                f"({_no_device_variables(f)})" for f in ("containers", "initContainers", "ephemeralContainers")
            ),
            "message": "pods in team namespaces may not set "
            + ", ".join(NVIDIA_DEVICE_VARIABLES)
            + ": request nvidia.com/gpu instead",
        },
        *(
            {
                "expression": f"!({_tolerates(taint)}) || ({_requests(taint)}) || ({LAUNCHER_EXPRESSION})",
                "message": f"a pod tolerating the {taint} taint must request {taint}",
            }
            for taint in ACCELERATOR_TAINTS
        ),
        {
            "expression": "!has(object.spec.priorityClassName) || "
            f"!object.spec.priorityClassName.startsWith('{SYSTEM_PRIORITY_PREFIX}')",
            "message": "system priority classes are reserved to the platform",
        },
    ]
    return {
        **_refusing_pod_writes(),
        "validations": validations,
    }


def device_binding_spec() -> dict[str, Any]:
    return {**registry_binding_spec(), "policyName": DEVICE_POLICY_NAME}


# ------------------------------------------------------------------------------------------- component


@dataclass
class TenancyArgs:
    """Spec (teams, groups, registries) and wiring (the team namespaces, the account id)."""

    teams: Sequence[TeamSpec]
    node_groups: Sequence[GpuNodeGroupSpec]
    namespaces: Mapping[str, k8s.core.v1.Namespace]
    """Team name -> its Namespace (created by the scheduling component)."""
    allowed_registries: Sequence[str]
    region: str
    account_id: pulumi.Input[str]
    """The account whose private ECR (in `region`) is approved too."""
    hyperpod_groups: Sequence[HyperPodInstanceGroupSpec] = ()
    https_destinations: pulumi.Input[Sequence[str]] | None = None
    """Where team pods may open HTTPS: None for anywhere (through NAT); else the VPC CIDR and S3's prefixes."""


class Tenancy(pulumi.ComponentResource):
    """Quotas, default limits and network policies per team namespace, and the image-registry admission policy.

    Children: per team `<name>-<team>-quota`, `<name>-<team>-services`, `<name>-<team>-limits`,
    `<name>-<team>-np-<policy>`, the member Role `<name>-<team>-member` and its binding `<name>-<team>-member-binding`
    (components/team_rbac.py); and `<name>-registries` with `<name>-registries-binding`."""

    quotas: dict[str, dict[str, str]]
    """Team -> its compute ResourceQuota (plain data)."""

    def __init__(self, name: str, args: TenancyArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("trainstack:k8s:Tenancy", name, None, opts)
        missing = sorted({t.name for t in args.teams} - set(args.namespaces))
        if missing:
            raise ValueError(f"{name}: no namespace given for teams {missing}")
        shapes = node_shapes(args.node_groups, args.hyperpod_groups)
        destinations = pulumi.Output.from_input(
            args.https_destinations if args.https_destinations is not None else [ANYWHERE]
        ).apply(list)
        self.quotas = {}
        for team in args.teams:
            namespace = args.namespaces[team.name].metadata.name
            self.quotas[team.name] = team_compute_quota(team, shapes)
            self._team_quotas(name, team.name, namespace, self.quotas[team.name])
            self._team_member_role(name, team.name, namespace)
            self._team_limits_and_network_policies(name, team.name, namespace, destinations)
        self._admission_policies(name, args)
        self.register_outputs({"quotas": self.quotas})

    def _team_quotas(self, name: str, team: str, namespace: pulumi.Input[str], hard: dict[str, str]) -> None:
        """A team's compute quota, the quota that admits none of the system priority classes, and its services'."""
        child = pulumi.ResourceOptions(parent=self)
        k8s.core.v1.ResourceQuota(
            child_name(name, team, "quota"),
            metadata=k8s.meta.v1.ObjectMetaArgs(name="compute", namespace=namespace),
            spec=k8s.core.v1.ResourceQuotaSpecArgs(hard=hard),
            opts=child,
        )
        k8s.core.v1.ResourceQuota(
            child_name(name, team, "priority"),
            metadata=k8s.meta.v1.ObjectMetaArgs(name=PRIORITY_QUOTA_NAME, namespace=namespace),
            spec=cast("k8s.core.v1.ResourceQuotaSpecArgsDict", priority_quota()),
            opts=child,
        )
        k8s.core.v1.ResourceQuota(
            child_name(name, team, "services"),
            metadata=k8s.meta.v1.ObjectMetaArgs(name=SERVICE_QUOTA_NAME, namespace=namespace),
            spec=k8s.core.v1.ResourceQuotaSpecArgs(hard=dict(SERVICE_QUOTA)),
            opts=child,
        )

    def _team_member_role(self, name: str, team: str, namespace: pulumi.Input[str]) -> None:
        """The role a team's members have in its namespace, bound to the team's group (components/team_rbac.py)."""
        child = pulumi.ResourceOptions(parent=self)
        role = k8s.rbac.v1.Role(
            child_name(name, team, "member"),
            metadata=k8s.meta.v1.ObjectMetaArgs(name=TEAM_MEMBER_ROLE, namespace=namespace),
            rules=[cast("k8s.rbac.v1.PolicyRuleArgsDict", rule) for rule in team_member_rules()],
            opts=child,
        )
        binding = team_member_binding(team)
        k8s.rbac.v1.RoleBinding(
            child_name(name, team, "member-binding"),
            metadata=k8s.meta.v1.ObjectMetaArgs(name=TEAM_MEMBER_ROLE, namespace=namespace),
            subjects=[cast("k8s.rbac.v1.SubjectArgsDict", s) for s in binding["subjects"]],
            role_ref=cast("k8s.rbac.v1.RoleRefArgsDict", binding["roleRef"]),
            opts=pulumi.ResourceOptions(parent=self, depends_on=[role]),
        )

    def _team_limits_and_network_policies(
        self, name: str, team: str, namespace: pulumi.Input[str], destinations: pulumi.Output[list[str]]
    ) -> None:
        """Default requests and limits for containers that set none, and the namespace's network policies."""
        child = pulumi.ResourceOptions(parent=self)
        k8s.core.v1.LimitRange(
            child_name(name, team, "limits"),
            metadata=k8s.meta.v1.ObjectMetaArgs(name="defaults", namespace=namespace),
            spec=k8s.core.v1.LimitRangeSpecArgs(
                limits=[k8s.core.v1.LimitRangeItemArgs(**_snake(item)) for item in limit_range_limits()]
            ),
            opts=child,
        )
        for policy in network_policies():
            k8s.networking.v1.NetworkPolicy(
                child_name(name, team, "np", policy),
                metadata=k8s.meta.v1.ObjectMetaArgs(name=policy, namespace=namespace),
                # The spec in the API's own camelCase field names (as the Kubernetes reference and the tests
                # spell them); the SDK's typed inputs use snake_case, but a plain mapping reaches the provider
                # unchanged: the cast only names the parameter's type.
                spec=destinations.apply(
                    lambda d, policy=policy: cast(
                        "k8s.networking.v1.NetworkPolicySpecArgsDict", network_policies(d)[policy]
                    )
                ),
                opts=child,
            )

    def _admission_policies(self, name: str, args: TenancyArgs) -> None:
        """The cluster-wide admission policies: images only from the allowed registries (and the account's
        private ECR), and accelerators only through a resource request (device_policy_spec)."""
        child = pulumi.ResourceOptions(parent=self)
        prefixes = pulumi.Output.from_input(args.account_id).apply(
            lambda account: [*args.allowed_registries, private_ecr_prefix(account, args.region)]
        )
        policy = k8s.admissionregistration.v1.ValidatingAdmissionPolicy(
            child_name(name, "registries"),
            metadata=k8s.meta.v1.ObjectMetaArgs(name=REGISTRY_POLICY_NAME),
            # camelCase API objects, cast for the same reason as the NetworkPolicy spec above.
            spec=prefixes.apply(
                lambda p: cast(
                    "k8s.admissionregistration.v1.ValidatingAdmissionPolicySpecArgsDict", registry_policy_spec(p)
                )
            ),
            opts=child,
        )
        k8s.admissionregistration.v1.ValidatingAdmissionPolicyBinding(
            child_name(name, "registries-binding"),
            metadata=k8s.meta.v1.ObjectMetaArgs(name=REGISTRY_POLICY_NAME),
            spec=cast(
                "k8s.admissionregistration.v1.ValidatingAdmissionPolicyBindingSpecArgsDict", registry_binding_spec()
            ),
            opts=pulumi.ResourceOptions(parent=self, depends_on=[policy]),
        )
        devices = k8s.admissionregistration.v1.ValidatingAdmissionPolicy(
            child_name(name, "devices"),
            metadata=k8s.meta.v1.ObjectMetaArgs(name=DEVICE_POLICY_NAME),
            spec=cast("k8s.admissionregistration.v1.ValidatingAdmissionPolicySpecArgsDict", device_policy_spec()),
            opts=child,
        )
        k8s.admissionregistration.v1.ValidatingAdmissionPolicyBinding(
            child_name(name, "devices-binding"),
            metadata=k8s.meta.v1.ObjectMetaArgs(name=DEVICE_POLICY_NAME),
            spec=cast(
                "k8s.admissionregistration.v1.ValidatingAdmissionPolicyBindingSpecArgsDict", device_binding_spec()
            ),
            opts=pulumi.ResourceOptions(parent=self, depends_on=[devices]),
        )


def _snake(item: Mapping[str, Any]) -> dict[str, Any]:
    """LimitRangeItemArgs takes snake_case keyword names for the camelCase API fields."""
    names = {"defaultRequest": "default_request"}
    return {names.get(k, k): v for k, v in item.items()}

"""Defence in depth: settings a stack file could widen without any other rule noticing (docs/defence-in-depth.md).

- `registry-allowlist-breadth`: what the team namespaces' image allowlist admits, judged by breadth: a prefix
  that is a registry's host alone admits every publisher there.
- `gpu-operator-node-opt-outs`: the GPU Operator's per-node labels that switch its operands off on a node group.
"""

from __future__ import annotations

import re

from pulumi_policy import Severity, StackValidationArgs
from pulumi_policy.proxy import UnknownValueError

from ..facts import ACCELERATED_AMI_TYPES
from .base import Report, accelerated_node_groups, get, graph, items, stack_rule

VAP = "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy"
REGISTRY_POLICY_NAME = "trainstack-allowed-registries"  # components/tenancy.py REGISTRY_POLICY_NAME
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
    policies = [p for p in g.of_type(VAP) if get(p.props, "metadata.name") == REGISTRY_POLICY_NAME]
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


# The GPU Operator's per-node switches (NVIDIA/gpu-operator v25.3.4, controllers/state_manager.go: the operator
# labels each GPU node `nvidia.com/gpu.deploy.<operand>=true` but keeps a value already there, and removes them all
# when `nvidia.com/gpu.deploy.operands=false`; `nvidia.com/gpu.workload.config` picks the VM operand sets instead
# of the container ones).
OPERANDS_LABEL = "nvidia.com/gpu.deploy.operands"
WORKLOAD_CONFIG_LABEL = "nvidia.com/gpu.workload.config"
OPERAND_LABEL_PREFIX = "nvidia.com/gpu.deploy."


@stack_rule(
    name="gpu-operator-node-opt-outs",
    description="No NVIDIA node group on an AL2023 AMI carries the GPU Operator's per-node opt-outs "
    "(nvidia.com/gpu.deploy.<operand> other than true, nvidia.com/gpu.deploy.operands, "
    "nvidia.com/gpu.workload.config): on AL2023 the operator runs the device plugin, DCGM and its exporter, so an "
    "opt-out label silently leaves the group's GPUs unschedulable or unwatched (no Xid or ECC alert). Bottlerocket's "
    "required device-plugin opt-out is gpu-operator-values' concern.",
    severity=Severity.HIGH,
    config={
        "guardedOperands": {
            "type": "array",
            "items": {"type": "string"},
            "default": [
                "device-plugin",
                "dcgm",
                "dcgm-exporter",
                "gpu-feature-discovery",
                "operator-validator",
                "node-status-exporter",
            ],
            "description": "Operands a node group may not switch off. Why: the device plugin makes the GPUs "
            "requestable, DCGM and its exporter feed the GPU alerts, the validator holds pods until the stack "
            "works. Source: NVIDIA/gpu-operator v25.3.4 controllers/state_manager.go gpuStateLabels.",
        }
    },
)
def gpu_operator_node_opt_outs(args: StackValidationArgs, report: Report) -> None:
    g = graph(args)
    al2023 = {t for t in ACCELERATED_AMI_TYPES["nvidia"] if t.startswith("AL2023")}
    groups = [group for group, _ in accelerated_node_groups(g) if str(get(group.props, "amiType", "")) in al2023]
    if not groups:
        args.not_applicable("no NVIDIA node group on an AL2023 AMI")
    guarded = {str(o) for o in args.get_config().get("guardedOperands", [])}
    for group in groups:
        labels = get(group.props, "labels", {})
        for key in sorted(labels) if hasattr(labels, "keys") else []:
            value = str(labels[key])
            operand = key.removeprefix(OPERAND_LABEL_PREFIX)
            if key in (OPERANDS_LABEL, WORKLOAD_CONFIG_LABEL) or (
                key.startswith(OPERAND_LABEL_PREFIX) and operand in guarded and value != "true"
            ):
                report(
                    f"node group {group.name} carries {key}={value} (gpu_node_groups[].labels): the GPU Operator "
                    "then skips its operands on these nodes; remove the label.",
                    group.urn,
                )

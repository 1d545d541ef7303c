"""The labels of every namespace trainstack creates: its Pod Security Admission levels and the tenant marker.

One home for them because several areas create namespaces (Kubernetes platform, fleet health, validation)
and the team namespaces' labels are what the ClusterQueues, quotas, network policies and the registry policy
select on (components/k8s/tenancy.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from components.k8s_common import TEAM_LABEL
from stacks.schema import TeamSpec

PodSecurityLevel = Literal["privileged", "baseline", "restricted"]
PSA_PREFIX = "pod-security.kubernetes.io/"  # Kubernetes Pod Security Admission namespace labels
PSA_ENFORCE = f"{PSA_PREFIX}enforce"
# Marks the namespaces trainstack creates for teams: quotas, network policies and the registry policy select it.
TENANT_LABEL = "trainstack.io/tenant"
TENANT_TEAM = "team"

# Why each namespace trainstack creates has its level. Team namespaces take theirs from the stack file.
SYSTEM_POD_SECURITY: Mapping[str, tuple[PodSecurityLevel, str]] = {
    "gpu-operator": ("privileged", "NVIDIA GPU Operator operands: hostPath, privileged validator and DCGM"),
    "trainstack-validation": ("privileged", "dcgmi diag needs SYS_ADMIN, which baseline forbids"),
    "trainstack-monitoring": ("privileged", "node-exporter and its EFA counter sidecar read host network, PID, /sys"),
    "kueue-system": ("baseline", "Kueue controller: no host access; restricted is warned and audited"),
    "kubeflow-system": ("baseline", "Kubeflow Trainer and JobSet controllers: no host access"),
}


def pod_security_labels(enforce: PodSecurityLevel) -> dict[str, str]:
    """Enforce `enforce`, and warn and audit at restricted so every gap to the strictest level shows up."""
    return {PSA_ENFORCE: enforce, f"{PSA_PREFIX}warn": "restricted", f"{PSA_PREFIX}audit": "restricted"}


def system_namespace_labels(namespace: str) -> dict[str, str]:
    """The pod security labels of a system namespace trainstack creates (KeyError: add it to the table)."""
    return pod_security_labels(SYSTEM_POD_SECURITY[namespace][0])


def team_namespace_labels(team: TeamSpec) -> dict[str, str]:
    """A team namespace: the team label the ClusterQueues select on, the tenant label, its pod security."""
    return {TEAM_LABEL: team.name, TENANT_LABEL: TENANT_TEAM, **pod_security_labels(team.pod_security)}

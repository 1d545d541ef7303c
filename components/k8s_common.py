"""Kubernetes names the GPU platform components agree on: labels, taints, extended resources, tolerations.

Pure data and pure functions, no resources. The GPU node groups put `NODE_GROUP_LABEL` (and, on EFA groups,
`EFA_NODE_LABEL`) on their nodes and taint them with `GPU_TAINT_KEY` or `NEURON_TAINT_KEY`; everything that
must run there (operators' daemonsets, the EFA plugin, queued jobs) tolerates those taints from here.
"""

from __future__ import annotations

from components.gpu_nodes import EFA_PRESENT_LABEL
from components.gpu_nodes import NODE_GROUP_LABEL as NODE_GROUP_LABEL  # one source, re-exported
from stacks.catalog import CATALOG, Accelerator

TEAM_LABEL = "trainstack.io/team"
# The label EFA nodes carry (set by the GPU node groups); the EFA plugin selects on it instead of an
# instance-type list (user pain point 4).
EFA_NODE_LABEL = EFA_PRESENT_LABEL
EFA_RESOURCE = "vpc.amazonaws.com/efa"  # the extended resource the EFA device plugin advertises
# The node groups taint accelerator nodes with their device resource name (components/gpu_nodes.node_taint).
GPU_TAINT_KEY = "nvidia.com/gpu"
NEURON_TAINT_KEY = "aws.amazon.com/neuron"
KUEUE_QUEUE_LABEL = "kueue.x-k8s.io/queue-name"  # Kueue's label that puts a job in a LocalQueue

Toleration = dict[str, str]


def toleration(key: str) -> Toleration:
    """Tolerate any value of `key` with effect NoSchedule (the node groups' taint effect)."""
    return {"key": key, "operator": "Exists", "effect": "NoSchedule"}


def accelerator_tolerations(*accelerators: Accelerator) -> list[Toleration]:
    """Tolerations for the taints of the given accelerator families, GPU first, without duplicates."""
    keys = {Accelerator.NVIDIA: GPU_TAINT_KEY, Accelerator.NEURON: NEURON_TAINT_KEY}
    wanted = accelerators or tuple(Accelerator)
    return [toleration(keys[a]) for a in Accelerator if a in wanted]


def taint_key(instance_type: str) -> str:
    """The taint key an accelerated node group of this instance type carries (its device resource name)."""
    return CATALOG[instance_type].device_resource

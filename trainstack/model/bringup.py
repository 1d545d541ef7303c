"""How each SageMaker HyperPod instance group comes up: the lifecycle steps its nodes run and what they need, read
from the recording (the cluster's instance groups and the provisioning_parameters.json uploaded next to the Slurm
scripts; components/sagemaker/slurm_lifecycle.py turns them into steps). One section of its own in every view."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from components.sagemaker.slurm_lifecycle import node_needs, node_steps, role_of
from trainstack.engine import Recording
from trainstack.tokens import BUCKET_OBJECT, FSX_LUSTRE, HYPERPOD_CLUSTER

PARAMS = "provisioning_parameters.json"
# components/sagemaker/lifecycle/eks/on_create.sh, in one line.
EKS_STEPS = ("on_create (eks): kubelet and containerd state onto /opt/sagemaker, held until it is mounted",)


@dataclass(frozen=True)
class GroupBringUp:
    cluster: str
    group: str
    role: str
    steps: tuple[str, ...]  # "name: detail", in order
    needs: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "cluster": self.cluster,
            "group": self.group,
            "role": self.role,
            "steps": list(self.steps),
            "needs": list(self.needs),
        }


def summarize_bringup(recording: Recording) -> tuple[GroupBringUp, ...]:
    no_squash_nids = tuple(
        str(nid)
        for fsx in recording.by_type(FSX_LUSTRE)
        for nid in (fsx.inputs.get("rootSquashConfiguration") or {}).get("noSquashNids") or []
    )
    params_by_cluster: dict[str, dict[str, Any]] = {}
    for obj in recording.by_type(BUCKET_OBJECT):
        key, content = obj.inputs.get("key"), obj.inputs.get("content")
        if isinstance(key, str) and key.endswith(f"/{PARAMS}") and isinstance(content, str):
            params_by_cluster[key.split("/")[2]] = json.loads(content)
    found: list[GroupBringUp] = []
    for cluster in recording.by_type(HYPERPOD_CLUSTER):
        name = str(cluster.inputs.get("clusterName", cluster.name))
        params = params_by_cluster.get(name)
        for group in cluster.inputs.get("instanceGroups") or []:
            group_name = str(group.get("instanceGroupName"))
            if params is None:  # EKS orchestrator: no Slurm parameters
                found.append(GroupBringUp(name, group_name, "compute", EKS_STEPS, ()))
                continue
            steps = tuple(f"{s.name}: {s.detail}" for s in node_steps(params, group_name))
            needs = tuple(node_needs(params, group_name, no_squash_nids))
            found.append(GroupBringUp(name, group_name, role_of(params, group_name), steps, needs))
    return tuple(found)

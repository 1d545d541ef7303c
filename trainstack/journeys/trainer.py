"""What Kubeflow Trainer v2.1.0 makes of a TrainJob on a ClusterTrainingRuntime: the JobSet's pod sets.

The rules, from kubeflow/trainer v2.1.0:
- pkg/runtime/framework/plugins/jobset/builder.go `Trainer`: the replicated job labelled
  `trainer.kubeflow.org/trainjob-ancestor-step: trainer` takes the TrainJob's `image`, `command` and `args` on its
  `node` container, and `resourcesPerNode` *replaces* that container's whole `resources` (limits and requests as
  given, nothing else kept). The MPI `node` workers (not the ancestor unless `runLauncherAsNode`) keep the
  runtime's image and resources: a TrainJob cannot resize them.
- pkg/runtime/framework/plugins/torch/torch.go `EnforceMLPolicy`: the trainer pod set's count is `numNodes`;
  torchrun gets PET_NNODES, PET_NPROC_PER_NODE, PET_NODE_RANK, PET_MASTER_ADDR and PET_MASTER_PORT (29500,
  pkg/constants ContainerTrainerPort), and the container that port.
- pkg/runtime/framework/plugins/mpi/mpi.go `EnforceMLPolicy`: the `node` pod set's count is `numNodes` (less one
  with runLauncherAsNode); every pod mounts the generated SSH key Secret, the launcher the hostfile ConfigMap.
- pkg/runtime/framework/plugins/jobset/jobset.go `Build`: each replicated job's parallelism and completions are
  its pod set's count; every pod carries the JobSet's labels.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from components.k8s.training_runtimes import ANCESTOR_LABEL, LAUNCHER, NODE, SSH_SECRET_VOLUME
from trainstack.journeys.resources import Pod

SOURCE = "kubeflow/trainer v2.1.0 pkg/runtime/framework/plugins/jobset/builder.go, plugins/torch, plugins/mpi"
TORCH_MASTER_PORT = 29500  # pkg/constants ContainerTrainerPort
ANCESTOR_KEY, ANCESTOR_TRAINER = next(iter(ANCESTOR_LABEL.items()))


@dataclass(frozen=True)
class PodSet:
    """One replicated job of the JobSet: its name, how many pods, the pod spec and whether it is the trainer."""

    name: str
    count: int
    pod: Pod
    trainer: bool

    def container(self, name: str = NODE) -> dict[str, Any]:
        return next(c for c in self.pod["containers"] if c["name"] == name)


def policy_kind(runtime_spec: Mapping[str, Any]) -> str:
    """`torch` or `mpi`: the ML policy the runtime declares."""
    policy = runtime_spec.get("mlPolicy", {})
    return "mpi" if "mpi" in policy else "torch"


def procs_per_node(runtime_spec: Mapping[str, Any], trainjob: Mapping[str, Any]) -> int:
    """Processes (ranks) per node: the TrainJob's numProcPerNode, else the runtime's."""
    policy = runtime_spec.get("mlPolicy", {})
    runtime_value = policy.get(policy_kind(runtime_spec), {}).get("numProcPerNode", 1)
    return int(trainjob.get("spec", {}).get("trainer", {}).get("numProcPerNode", runtime_value))


def _upsert_env(container: dict[str, Any], env: list[dict[str, Any]]) -> None:
    current = {e["name"]: i for i, e in enumerate(container.get("env", []))}
    values = container.setdefault("env", [])
    for entry in env:
        if entry["name"] in current:
            values[current[entry["name"]]] = entry
        else:
            values.append(entry)


def pod_sets(trainjob: Mapping[str, Any], runtime_spec: Mapping[str, Any]) -> tuple[PodSet, ...]:
    """The JobSet's pod sets for `trainjob` on a runtime whose spec is `runtime_spec`."""
    trainer = trainjob.get("spec", {}).get("trainer", {})
    kind = policy_kind(runtime_spec)
    mpi = runtime_spec.get("mlPolicy", {}).get("mpi", {})
    launcher_as_node = bool(mpi.get("runLauncherAsNode", False))
    num_nodes = int(trainer.get("numNodes", runtime_spec.get("mlPolicy", {}).get("numNodes", 1)))
    name = trainjob.get("metadata", {}).get("name", "trainjob")
    found: list[PodSet] = []
    for job in runtime_spec["template"]["spec"]["replicatedJobs"]:
        template = job["template"]
        is_trainer = template.get("metadata", {}).get("labels", {}).get(ANCESTOR_KEY) == ANCESTOR_TRAINER
        pod = copy.deepcopy(template["spec"]["template"]["spec"])
        count = int(template["spec"].get("parallelism", 1))
        if (kind == "torch" and is_trainer) or (kind == "mpi" and job["name"] == NODE):
            count = max(num_nodes - 1, 1) if kind == "mpi" and launcher_as_node else num_nodes
        for container in pod["containers"]:
            if container["name"] != NODE:
                continue
            if is_trainer:
                for field in ("image", "command", "args"):
                    if field in trainer:
                        container[field] = trainer[field]
            if is_trainer or (launcher_as_node and job["name"] == NODE):
                per_node = trainer.get("resourcesPerNode")
                if per_node and (per_node.get("limits") or per_node.get("requests")):
                    container["resources"] = copy.deepcopy(dict(per_node))
                _upsert_env(container, list(trainer.get("env", [])))
            if kind == "torch" and is_trainer:
                _upsert_env(
                    container,
                    [
                        {"name": "PET_NNODES", "value": str(num_nodes)},
                        {"name": "PET_NPROC_PER_NODE", "value": str(procs_per_node(runtime_spec, trainjob))},
                        {"name": "PET_MASTER_ADDR", "value": f"{name}-{NODE}-0-0.{name}"},
                        {"name": "PET_MASTER_PORT", "value": str(TORCH_MASTER_PORT)},
                    ],
                )
                container.setdefault("ports", []).append({"containerPort": TORCH_MASTER_PORT})
        if kind == "mpi" and job["name"] in (NODE, LAUNCHER):
            secret = {"secretName": f"{name}-mpi-ssh-auth"}
            pod.setdefault("volumes", []).append({"name": SSH_SECRET_VOLUME, "secret": secret})
            if job["name"] == LAUNCHER:
                hostfile = {"name": f"{name}-mpi-hostfile"}
                pod["volumes"].append({"name": "mpi-hostfile", "configMap": hostfile})
        found.append(PodSet(job["name"], count, pod, is_trainer))
    return tuple(found)


def rank_pod_set(sets: tuple[PodSet, ...]) -> PodSet:
    """The pod set whose pods hold the accelerators: torch's trainer, MPI's `node` workers."""
    return next(s for s in sets if s.name == NODE)

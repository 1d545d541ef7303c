"""The TrainJobs docs/validate.md shows a team, as data: the docs print them and the team-job journey walks
them (`tests/unit/test_team_job_rules.py` holds the two equal). Each is walked in every team namespace on every GPU
group with the group's runtime, queue and as many nodes as the team may use (`for_team`)."""

from __future__ import annotations

import copy
from typing import Any

from components.k8s_common import KUEUE_QUEUE_LABEL

TRAINER_API_VERSION = "trainer.kubeflow.org/v1alpha1"

# torchrun through the runtime's entrypoint: the script and its options go in `args`, so the runtime's `command`
# (the exit-code entrypoint) stays; the image is the runtime's unless `image` names another.
TORCH = {
    "apiVersion": TRAINER_API_VERSION,
    "kind": "TrainJob",
    "metadata": {"name": "llama-pretrain", "namespace": "pretraining", "labels": {KUEUE_QUEUE_LABEL: "p5-train"}},
    "spec": {
        "runtimeRef": {"name": "trainstack-torch-p5-train"},
        "trainer": {"numNodes": 16, "args": ["train.py", "--config", "llama.yaml"]},
    },
}

# mpirun in the launcher (Trainer gives it the hostfile and one slot per GPU); it exits with the lowest failed
# rank's code. `-x` passes the checkpoint directory to the ranks, which ssh does not.
MPI = {
    "apiVersion": TRAINER_API_VERSION,
    "kind": "TrainJob",
    "metadata": {"name": "deepspeed-finetune", "namespace": "research", "labels": {KUEUE_QUEUE_LABEL: "p5-train"}},
    "spec": {
        "runtimeRef": {"name": "trainstack-mpi-p5-train"},
        "trainer": {
            "numNodes": 4,
            "command": ["mpirun", "--allow-run-as-root", "-x", "TRAINSTACK_CHECKPOINT_DIR", "python3", "train.py"],
        },
    },
}

EXAMPLES: dict[str, dict[str, Any]] = {"torch": TORCH, "mpi": MPI}


def for_team(kind: str, namespace: str, queue: str, runtime: str, nodes: int) -> dict[str, Any]:
    """The docs' TrainJob of `kind` submitted by a team: its namespace, the group's queue and runtime, `nodes`."""
    job = copy.deepcopy(EXAMPLES[kind])
    job["metadata"]["namespace"] = namespace
    job["metadata"]["labels"][KUEUE_QUEUE_LABEL] = queue
    job["spec"]["runtimeRef"]["name"] = runtime
    job["spec"]["trainer"]["numNodes"] = nodes
    return job

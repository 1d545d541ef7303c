"""What Kubeflow Trainer v2.1.0 makes of a TrainJob on a runtime (trainstack/journeys/trainer.py), one rule at a
time, on small runtimes written for the rule: the trainer step takes the TrainJob's image, command, args, env and
resourcesPerNode (which replaces the container's resources whole); torch's count is numNodes and its torchrun
variables; MPI's `node` count (less one with runLauncherAsNode), its SSH Secret and hostfile."""

from __future__ import annotations

from typing import Any

from components.k8s.training_runtimes import ANCESTOR_LABEL, LAUNCHER, NODE, SSH_SECRET_VOLUME
from trainstack.journeys.trainer import (
    TORCH_MASTER_PORT,
    _upsert_env,
    pod_sets,
    policy_kind,
    procs_per_node,
    rank_pod_set,
)

RUNTIME_RESOURCES = {"limits": {"nvidia.com/gpu": "8"}, "requests": {"cpu": "96"}}


def container(name: str, **fields: Any) -> dict[str, Any]:
    return {"name": name, "image": f"runtime/{name}:1", "resources": RUNTIME_RESOURCES, **fields}


def job(
    name: str, *containers: dict[str, Any], trainer: bool = False, parallelism: int | None = None
) -> dict[str, Any]:
    spec: dict[str, Any] = {"template": {"spec": {"containers": list(containers)}}}
    if parallelism is not None:
        spec["parallelism"] = parallelism
    template: dict[str, Any] = {"spec": spec}
    if trainer:
        template["metadata"] = {"labels": dict(ANCESTOR_LABEL)}
    return {"name": name, "template": template}


def runtime(policy: dict[str, Any], *jobs: dict[str, Any]) -> dict[str, Any]:
    return {"mlPolicy": policy, "template": {"spec": {"replicatedJobs": list(jobs)}}}


def trainjob(**trainer: Any) -> dict[str, Any]:
    return {"metadata": {"name": "llm"}, "spec": {"trainer": trainer}}


TORCH = runtime(
    {"numNodes": 2, "torch": {"numProcPerNode": 8}},
    job("dataset-initializer", container(NODE), container("init"), parallelism=3),
    job(NODE, container(NODE, env=[{"name": "NCCL_DEBUG", "value": "WARN"}]), container("sidecar"), trainer=True),
)
MPI = runtime(
    {"numNodes": 2, "mpi": {"numProcPerNode": 8}},
    job(LAUNCHER, container(NODE), trainer=True),
    job(NODE, container(NODE)),
    job("other", container(NODE)),
)


def env(c: dict[str, Any]) -> dict[str, str]:
    return {e["name"]: e["value"] for e in c.get("env", [])}


def test_the_policy_kind_and_ranks_per_node() -> None:
    assert (policy_kind(TORCH), policy_kind(MPI), policy_kind({})) == ("torch", "mpi", "torch")
    assert procs_per_node(TORCH, trainjob()) == 8 and procs_per_node(MPI, trainjob()) == 8
    assert procs_per_node(TORCH, trainjob(numProcPerNode=4)) == 4  # the TrainJob's wins
    assert procs_per_node({"mlPolicy": {"torch": {}}}, {}) == 1


def test_env_entries_replace_by_name_in_place_and_new_ones_follow() -> None:
    c: dict[str, Any] = {"env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]}
    _upsert_env(c, [{"name": "B", "value": "3"}, {"name": "C", "value": "4"}])
    assert c["env"] == [{"name": "A", "value": "1"}, {"name": "B", "value": "3"}, {"name": "C", "value": "4"}]
    bare: dict[str, Any] = {}
    _upsert_env(bare, [{"name": "A", "value": "1"}])
    assert bare["env"] == [{"name": "A", "value": "1"}]


def test_torch_trainer_step_takes_the_trainjobs_settings_on_its_node_container_only() -> None:
    per_node = {"limits": {"nvidia.com/gpu": "4"}}
    found = pod_sets(
        trainjob(numNodes=4, image="team/train:2", command=["torchrun"], args=["--x"], resourcesPerNode=per_node,
                 env=[{"name": "NCCL_DEBUG", "value": "INFO"}]),
        TORCH,
    )  # fmt: skip
    initializer, trainer = found
    assert (initializer.name, initializer.count, initializer.trainer) == ("dataset-initializer", 3, False)
    assert (trainer.name, trainer.count, trainer.trainer) == (NODE, 4, True)
    node = trainer.container()
    assert (node["image"], node["command"], node["args"]) == ("team/train:2", ["torchrun"], ["--x"])
    assert node["resources"] == per_node  # replaced whole: the runtime's requests are gone
    assert env(node) == {
        "NCCL_DEBUG": "INFO", "PET_NNODES": "4", "PET_NPROC_PER_NODE": "8", "PET_MASTER_ADDR": "llm-node-0-0.llm",
        "PET_MASTER_PORT": str(TORCH_MASTER_PORT),
    }  # fmt: skip
    assert node["ports"] == [{"containerPort": 29500}]
    assert trainer.container("sidecar") == container("sidecar")  # other containers keep the runtime's
    # the initializer's node container is not the trainer's
    assert initializer.container() == container(NODE) and initializer.container("init") == container("init")
    assert "volumes" not in trainer.pod  # no MPI Secret for torch


def test_torch_defaults_come_from_the_runtime_and_resources_only_from_limits_or_requests() -> None:
    [_, trainer] = pod_sets({"spec": {"trainer": {"resourcesPerNode": {"claims": [{"name": "x"}]}}}}, TORCH)
    node = trainer.container()
    assert trainer.count == 2 and node["image"] == "runtime/node:1" and node["resources"] == RUNTIME_RESOURCES
    assert env(node)["PET_NNODES"] == "2" and env(node)["PET_MASTER_ADDR"] == "trainjob-node-0-0.trainjob"
    assert "command" not in node
    bare = runtime({}, job(NODE, container(NODE), trainer=True), job("x", container(NODE)))
    assert [s.count for s in pod_sets({}, bare)] == [1, 1]  # numNodes and parallelism default to 1
    requests_only = {"requests": {"cpu": "1"}}
    [_, trainer] = pod_sets(trainjob(resourcesPerNode=requests_only), TORCH)
    assert trainer.container()["resources"] == requests_only


def test_mpi_sizes_the_node_workers_and_gives_the_launcher_the_trainjobs_image() -> None:
    launcher, workers, other = pod_sets(
        trainjob(numNodes=3, image="team/mpi:2", resourcesPerNode={"limits": {"cpu": "2"}}), MPI
    )
    assert (launcher.count, workers.count, other.count) == (1, 3, 1)
    assert (launcher.trainer, workers.trainer) == (True, False)
    assert launcher.container()["image"] == "team/mpi:2" and launcher.container()["resources"] == {
        "limits": {"cpu": "2"}
    }
    # the workers keep the runtime's image and resources: a TrainJob cannot resize them
    assert workers.container() == container(NODE)
    assert "PET_NNODES" not in env(launcher.container())
    assert workers.pod["volumes"] == [{"name": SSH_SECRET_VOLUME, "secret": {"secretName": "llm-mpi-ssh-auth"}}]
    assert launcher.pod["volumes"] == [
        {"name": SSH_SECRET_VOLUME, "secret": {"secretName": "llm-mpi-ssh-auth"}},
        {"name": "mpi-hostfile", "configMap": {"name": "llm-mpi-hostfile"}},
    ]
    assert "volumes" not in other.pod
    assert rank_pod_set((launcher, workers, other)) is workers


def test_run_launcher_as_node_counts_the_launcher_as_one_node() -> None:
    as_node = {**MPI, "mlPolicy": {"numNodes": 2, "mpi": {"runLauncherAsNode": True}}}
    per_node = {"limits": {"nvidia.com/gpu": "8", "cpu": "4"}}
    launcher, workers, _ = pod_sets(trainjob(numNodes=3, resourcesPerNode=per_node, env=[{"name": "A", "value": "1"}]),
                                    as_node)  # fmt: skip
    assert (launcher.count, workers.count) == (1, 2)  # three nodes, the launcher one of them
    assert workers.container()["resources"] == per_node and env(workers.container()) == {"A": "1"}
    assert workers.container()["image"] == "runtime/node:1"  # the image stays the runtime's
    [_, single, _] = pod_sets(trainjob(numNodes=1), as_node)
    assert single.count == 1  # never below one worker

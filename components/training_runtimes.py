"""trainstack's Kubeflow Trainer ClusterTrainingRuntimes: what team TrainJobs run on.

Trainer 2.1.0's chart installs the TrainJob API but no runtime (kubeflow/trainer v2.1.0 `charts/kubeflow-trainer`
has no runtime templates; 2.2.0 is the first chart that installs them), and upstream's runtimes neither
tolerate the GPU taint nor request EFA devices. Per GPU node group, trainstack installs two:

- `trainstack-torch-<group>`: torchrun (Trainer's torch policy), one process per accelerator;
- `trainstack-mpi-<group>` (NVIDIA groups): Open MPI launcher + ssh workers (Trainer's MPI policy), for
  DeepSpeed or MPI jobs.

Each pins its pods to the group (node selector and the taint tolerated), requests every accelerator, EFA device
and the hugepages of a node (EFA groups; without the EFA request NCCL silently falls back to TCP sockets), and
mounts the team's FSx for Lustre claim at `/fsx` with a per-job checkpoint directory:
`TRAINSTACK_CHECKPOINT_DIR=/fsx/checkpoints/<TrainJob name>`, stable across restarts. A node failure fails its
pod; the Job has no retries of its own (a lone restarted rank cannot rejoin the collective), so the JobSet
restarts every job together, at most `max_restarts` times, and the training script resumes from the newest
checkpoint in that directory (docs/validate.md, "Training runtimes").

MPI's ssh keys: Trainer 2.1.0 mounts its generated key Secret with the default mode 0644 and OpenSSH refuses a
private key others can read ("UNPROTECTED PRIVATE KEY FILE", kubeflow/trainer issues 2716 and 3262). The Secret is
therefore mounted away from `~/.ssh` (`sshAuthMountPath`) and an init container copies the key and
`authorized_keys` with mode 0600 into an in-memory `~/.ssh` that the main container mounts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.k8s_common import EFA_RESOURCE, NODE_GROUP_LABEL, taint_key, toleration
from components.naming import child_name
from stacks.catalog import CATALOG, Accelerator
from stacks.schema import GpuNodeGroupSpec, TrainerRuntimesSpec

TRAINER_API_VERSION = "trainer.kubeflow.org/v1alpha1"
# Container and replicated-job names the Trainer runtime framework acts on (kubeflow/trainer v2.1.0
# pkg/constants: `node` for trainer nodes, `launcher` for the MPI launcher; the ancestor label marks the trainer).
NODE = "node"
LAUNCHER = "launcher"
ANCESTOR_LABEL = {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}
# Trainer's MPI plugin names the key Secret volume `mpi-ssh-auth` (pkg/constants MPISSHAuthVolumeName).
SSH_SECRET_VOLUME = "mpi-ssh-auth"
SSH_SECRET_DIR = "/etc/trainstack/mpi-ssh"  # where Trainer mounts the Secret (sshAuthMountPath), read-only
SSH_HOME_VOLUME = "ssh-home"
SSH_HOME = "/root/.ssh"  # the runtimes' images run as root
SSH_PORT = 22
JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"  # on every pod; the JobSet is named after its TrainJob
LUSTRE_MOUNT = "/fsx"
CHECKPOINT_ENV = "TRAINSTACK_CHECKPOINT_DIR"


# ----------------------------------------------------------------------------------------------- pure


def group_scheduling(group: GpuNodeGroupSpec) -> dict[str, Any]:
    """Pin a pod to the group's nodes and tolerate their accelerator taint."""
    return {
        "nodeSelector": {NODE_GROUP_LABEL: group.name},
        "tolerations": [toleration(taint_key(group.instance_type))],
    }


def node_resources(group: GpuNodeGroupSpec) -> dict[str, str]:
    """A whole node of the group: every accelerator, and on EFA groups every EFA device and the hugepages."""
    row = CATALOG[group.instance_type]
    amounts = {row.device_resource: str(row.accelerator_count)}
    if group.efa_enabled:
        amounts[EFA_RESOURCE] = str(row.max_efa_interfaces)
        if group.hugepages_2mi:
            amounts["hugepages-2Mi"] = f"{group.hugepages_2mi * 2}Mi"
    return amounts


def ssh_key_init_container(image: str) -> dict[str, Any]:
    """Copies Trainer's MPI key Secret into `~/.ssh` with the modes OpenSSH demands (0700 dir, 0600 files)."""
    script = (
        f"install -m 0600 {SSH_SECRET_DIR}/id_rsa {SSH_HOME}/id_rsa && "
        f"install -m 0644 {SSH_SECRET_DIR}/id_rsa.pub {SSH_HOME}/id_rsa.pub && "
        f"install -m 0600 {SSH_SECRET_DIR}/authorized_keys {SSH_HOME}/authorized_keys && "
        f"chmod 0700 {SSH_HOME}"
    )
    return {
        "name": "ssh-keys",
        "image": image,
        "command": ["/bin/sh", "-c", script],
        "volumeMounts": [
            {"name": SSH_SECRET_VOLUME, "mountPath": SSH_SECRET_DIR, "readOnly": True},
            {"name": SSH_HOME_VOLUME, "mountPath": SSH_HOME},
        ],
    }


def ssh_home_volume() -> dict[str, Any]:
    return {"name": SSH_HOME_VOLUME, "emptyDir": {"medium": "Memory"}}


def ssh_home_mount() -> dict[str, str]:
    return {"name": SSH_HOME_VOLUME, "mountPath": SSH_HOME}


def sshd_command() -> list[str]:
    """A worker: sshd in the foreground, on SSH_PORT (the readiness probe and the launcher's dependsOn wait for it)."""
    return ["/bin/bash", "-c", "mkdir -p /run/sshd && exec /usr/sbin/sshd -De -p " + str(SSH_PORT)]


def sshd_readiness_probe() -> dict[str, Any]:
    """Ready once sshd accepts connections: JobSet starts the launcher only after every worker is ready."""
    return {"tcpSocket": {"port": SSH_PORT}, "initialDelaySeconds": 2, "periodSeconds": 3}


def mpi_policy(num_nodes: int, procs_per_node: int) -> dict[str, Any]:
    return {
        "numNodes": num_nodes,
        "mpi": {
            "numProcPerNode": procs_per_node,
            "mpiImplementation": "OpenMPI",
            "sshAuthMountPath": SSH_SECRET_DIR,
            "runLauncherAsNode": False,
        },
    }


def launcher_after_workers(launcher: dict[str, Any], node: dict[str, Any]) -> list[dict[str, Any]]:
    """Replicated jobs in start order: the workers, then the launcher once every worker is Ready (JobSet
    `dependsOn`; the first replicated job may not have one)."""
    return [node, {**launcher, "dependsOn": [{"name": NODE, "status": "Ready"}]}]


def checkpoint_env(lustre: bool) -> list[dict[str, Any]]:
    """The job's name (from the JobSet label) and, with Lustre, its checkpoint directory on /fsx."""
    env: list[dict[str, Any]] = [
        {
            "name": "TRAINSTACK_JOB_NAME",
            "valueFrom": {"fieldRef": {"fieldPath": f"metadata.labels['{JOBSET_NAME_LABEL}']"}},
        }
    ]
    if lustre:
        env.append({"name": CHECKPOINT_ENV, "value": f"{LUSTRE_MOUNT}/checkpoints/$(TRAINSTACK_JOB_NAME)"})
    return env


def _pod(
    group: GpuNodeGroupSpec, container: dict[str, Any], lustre_claim: str | None, extra_volumes: list[dict[str, Any]]
) -> dict[str, Any]:
    volumes = [{"name": "dshm", "emptyDir": {"medium": "Memory"}}, *extra_volumes]
    mounts = [{"name": "dshm", "mountPath": "/dev/shm"}]
    if lustre_claim:
        volumes.append({"name": "fsx", "persistentVolumeClaim": {"claimName": lustre_claim}})
        mounts.append({"name": "fsx", "mountPath": LUSTRE_MOUNT})
    container = {**container, "volumeMounts": [*container.get("volumeMounts", []), *mounts]}
    return {**group_scheduling(group), "restartPolicy": "Never", "containers": [container], "volumes": volumes}


def _job(pod: dict[str, Any], labels: dict[str, str] | None = None) -> dict[str, Any]:
    job: dict[str, Any] = {"spec": {"backoffLimit": 0, "template": {"spec": pod}}}
    if labels:
        job["metadata"] = {"labels": labels}
    return job


def torch_runtime_spec(group: GpuNodeGroupSpec, spec: TrainerRuntimesSpec, lustre_claim: str | None) -> dict[str, Any]:
    """torchrun on every node of a JobSet, one process per accelerator, restarted together at most max_restarts."""
    row = CATALOG[group.instance_type]
    resources = node_resources(group)
    container = {
        "name": NODE,
        "image": spec.torch_image,
        "env": checkpoint_env(lustre_claim is not None),
        "resources": {"requests": resources, "limits": resources},
    }
    node = {"name": NODE, "template": _job(_pod(group, container, lustre_claim, []), ANCESTOR_LABEL)}
    return {
        "mlPolicy": {"numNodes": 1, "torch": {"numProcPerNode": row.accelerator_count}},
        "template": {"spec": {"failurePolicy": {"maxRestarts": spec.max_restarts}, "replicatedJobs": [node]}},
    }


def mpi_runtime_spec(group: GpuNodeGroupSpec, spec: TrainerRuntimesSpec, lustre_claim: str | None) -> dict[str, Any]:
    """An Open MPI launcher and ssh workers (DeepSpeed's and MPI's runtime), keys fixed, launcher after workers."""
    row = CATALOG[group.instance_type]
    resources = node_resources(group)
    env = checkpoint_env(lustre_claim is not None)
    ssh = [ssh_home_volume()]
    worker = {
        "name": NODE,
        "image": spec.mpi_image,
        "command": sshd_command(),
        "env": env,
        "readinessProbe": sshd_readiness_probe(),
        "resources": {"requests": resources, "limits": resources},
        "volumeMounts": [ssh_home_mount()],
    }
    launcher = {
        "name": NODE,
        "image": spec.mpi_image,
        "env": env,
        "resources": {"requests": {"cpu": "1", "memory": "2Gi"}, "limits": {"cpu": "2", "memory": "4Gi"}},
        "volumeMounts": [ssh_home_mount()],
    }
    worker_pod = _pod(group, worker, lustre_claim, ssh)
    launcher_pod = _pod(group, launcher, lustre_claim, ssh)
    for pod in (worker_pod, launcher_pod):
        pod["initContainers"] = [ssh_key_init_container(spec.mpi_image)]
    return {
        "mlPolicy": mpi_policy(1, row.accelerator_count),
        "template": {
            "spec": {
                "network": {"publishNotReadyAddresses": True},
                "successPolicy": {"operator": "All", "targetReplicatedJobs": [LAUNCHER]},
                "failurePolicy": {"maxRestarts": spec.max_restarts},
                "replicatedJobs": launcher_after_workers(
                    {"name": LAUNCHER, "template": _job(launcher_pod, ANCESTOR_LABEL)},
                    {"name": NODE, "template": _job(worker_pod)},
                ),
            }
        },
    }


def runtime_names(group: GpuNodeGroupSpec) -> dict[str, str]:
    """The group's runtimes by kind: torch everywhere, MPI on NVIDIA groups (its image is CUDA's Open MPI stack)."""
    names = {"torch": f"trainstack-torch-{group.name}"}
    if CATALOG[group.instance_type].accelerator is Accelerator.NVIDIA:
        names["mpi"] = f"trainstack-mpi-{group.name}"
    return names


# ------------------------------------------------------------------------------------------ component


@dataclass
class TrainingRuntimesArgs:
    """Spec (the runtimes' settings, the GPU node groups) and wiring (Lustre claim name, what must exist first)."""

    spec: TrainerRuntimesSpec
    node_groups: Sequence[GpuNodeGroupSpec]
    lustre_claim: str | None = None
    """Name of the FSx for Lustre claim every team namespace has (None: no Lustre, no checkpoint directory)."""
    after: Sequence[pulumi.Resource] = ()
    """The Trainer release (it installs the ClusterTrainingRuntime CRD)."""


class TrainingRuntimes(pulumi.ComponentResource):
    """A torch and an MPI ClusterTrainingRuntime per GPU node group."""

    runtimes: dict[str, k8s.apiextensions.CustomResource]
    """Runtime name -> its ClusterTrainingRuntime."""

    def __init__(self, name: str, args: TrainingRuntimesArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("trainstack:k8s:TrainingRuntimes", name, None, opts)
        after = pulumi.ResourceOptions(parent=self, depends_on=list(args.after))
        self.runtimes = {}
        for group in args.node_groups:
            build = {"torch": torch_runtime_spec, "mpi": mpi_runtime_spec}
            for kind, runtime_name in runtime_names(group).items():
                self.runtimes[runtime_name] = k8s.apiextensions.CustomResource(
                    child_name(name, group.name, kind),
                    api_version=TRAINER_API_VERSION,
                    kind="ClusterTrainingRuntime",
                    metadata=k8s.meta.v1.ObjectMetaArgs(
                        name=runtime_name, labels={"trainer.kubeflow.org/framework": kind}
                    ),
                    spec=build[kind](group, args.spec, args.lustre_claim),
                    opts=after,
                )
        self.register_outputs({"runtimes": sorted(self.runtimes)})

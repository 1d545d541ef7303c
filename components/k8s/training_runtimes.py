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
`TRAINSTACK_CHECKPOINT_DIR=/fsx/checkpoints/<TrainJob name>`, stable across restarts. Pods run as the team's
`training` service account (EKS Pod Identity: its checkpoint prefix in S3) and load the team's
`trainstack-checkpoints` ConfigMap; both have the same name in every team namespace, which is what lets a
cluster-scoped runtime name them.

Restart policy (docs/health.md, "Resume"): a lone restarted rank cannot rejoin the collective, so no Job retries
a pod (`backoffLimit: 0`); any pod failure fails its Job, and the JobSet's failure rules decide:

| the pod failed with | Job (`podFailurePolicy`) | JobSet (`failurePolicy.rules`) |
|---|---|---|
| condition `DisruptionTarget` (drained, evicted, preempted, node lost) | FailJob | restart, not counted |
| a fatal exit code of the `node` container | FailJob | fail the TrainJob |
| anything else (exit 1, a signal, CUDA/NCCL errors) | BackoffLimitExceeded | restart, counted (`max_restarts`) |

JobSet 0.10.1 (Trainer 2.1.0's chart dependency) restarts at once, with no backoff; an init container on the
pods that hold the GPUs waits `restart_backoff_s * 2^(attempt-1)` seconds, capped, before restart `attempt`.

What a rank gets (docs/validate.md, "What each rank gets"): the pod holding a node's accelerators requests, as
requests = limits, the node's allocatable CPU, memory and half its ephemeral storage (`components/k8s/tenancy.py`
`node_shape`: capacity less kube-reserved, the eviction threshold and the hugepages) less the node's DaemonSets'
headroom (`DAEMONSET_HEADROOM_MILLICORES`, `DAEMONSET_HEADROOM_MIB`) and, for MPI, the launcher that Kueue places
on one of the group's nodes. Every rank's CPU and memory is therefore the runtime's, never the namespace
LimitRange's default (1 CPU and 1 GiB for a whole pod).
/dev/shm is a memory-backed emptyDir without a size limit: the kubelet sizes it to the pod's memory limit and its
pages count against the container's memory (kubernetes pkg/volume/emptydir/empty_dir.go
calculateEmptyDirMemorySize), so a rank's /dev/shm is bounded by the same memory. MPI workers are sized here and
only here: Trainer v2.1.0 applies a TrainJob's `resourcesPerNode` to the replicated job labelled as the trainer
ancestor (the launcher), never to the MPI `node` workers (pkg/runtime/framework/plugins/jobset/builder.go `Trainer`).

Who the ranks run as: the torch runtime runs every process as the team's Lustre identity (`LustreMount`, the FSx
root squash UID:GID, 65534:65534 by default) with the `restricted` Pod Security settings (non-root, seccomp
RuntimeDefault, no privilege escalation, every capability dropped), so it runs in a `restricted` team namespace
too; the MPI runtime's workers run sshd as root, which only `baseline` admits (with every capability dropped but
the few sshd and root's Lustre writes need, no privilege escalation, seccomp RuntimeDefault:
`MPI_WORKER_CAPABILITIES`), and root on a Lustre client is squashed to the same identity. Either way a job
writes its team directory as one owner (docs/security.md says how that directory is created).

Exit codes: torchrun exits 1 whatever a rank exited with (pytorch v2.7.1 torch/distributed/run.py `main` is
wrapped by `errors.record`, which re-raises the agent's `ChildFailedError`), so the torch runtime runs torchrun
through `TORCHRUN_ENTRYPOINT`, which exits with the first failed rank's code (128+N for a rank killed by signal
N) and the Job's `onExitCodes` rule can match a fatal code. A TrainJob passes its script and arguments in
`spec.trainer.args`; a `command` would replace the entrypoint.

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

from components.health.checkpoints import CONFIG_MAP as CHECKPOINT_CONFIG_MAP
from components.k8s.tenancy import node_shape
from components.k8s_common import (
    EFA_RESOURCE,
    IMMUTABLE_FIELDS,
    group_tolerations,
)
from components.naming import child_name
from components.storage.team_storage import TEAM_SERVICE_ACCOUNT
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
# JobSet labels every Job and pod with its restart number (jobset v0.10.1 pkg/constants RestartsKey).
RESTART_ATTEMPT_LABEL = "jobset.sigs.k8s.io/restart-attempt"
RESTART_WAIT = "restart-wait"

# Job failure reasons JobSet's rules match (batch/v1 JobReasonPodFailurePolicy, JobReasonBackoffLimitExceeded;
# jobset v0.10.1 pkg/webhooks validOnJobFailureReasons).
POD_FAILURE_POLICY = "PodFailurePolicy"
BACKOFF_LIMIT_EXCEEDED = "BackoffLimitExceeded"
# The Job controller's message when a FailJob rule on a pod condition fires: "Pod <ns>/<name> has condition
# DisruptionTarget matching FailJob rule at index <i>" (kubernetes pkg/controller/job/pod_failure_policy.go).
DISRUPTION_MESSAGE = "has condition DisruptionTarget matching FailJob rule"


# What a node keeps for its DaemonSets besides kube-reserved: the VPC CNI, kube-proxy, Pod Identity agent, EBS and
# FSx CSI node plugins, EFA device plugin, the GPU Operator's operands, node-exporter and the node monitoring
# agent each request tens of millicores and tens of MiB; the margin also lets one more agent join later without
# leaving every training pod Pending.
DAEMONSET_HEADROOM_MILLICORES = 500
DAEMONSET_HEADROOM_MIB = 1024
# The MPI launcher: mpirun and ssh, no accelerator. Kueue places it with the workers on the group's nodes (the
# flavor's node labels), so each worker leaves its requests free. Limits equal to requests: a team whose compute
# quota is exactly its nodes' allocatable (components/k8s/tenancy.py) has no room for a launcher limit above them.
LAUNCHER_RESOURCES = {"requests": {"cpu": "1", "memory": "2Gi"}, "limits": {"cpu": "1", "memory": "2Gi"}}
LAUNCHER_CPU_MILLICORES = 1000
LAUNCHER_MEMORY_MIB = 2048
# Small init containers, sized so the namespace LimitRange never has to default them.
INIT_RESOURCES = {"requests": {"cpu": "10m", "memory": "16Mi"}, "limits": {"cpu": "100m", "memory": "64Mi"}}
NOBODY_UID = NOBODY_GID = 65534  # stacks.schema.storage.NOBODY, FSx's default root squash identity


@dataclass(frozen=True)
class LustreMount:
    """The team claim the runtimes mount at /fsx and the identity a team's processes reach Lustre as: the file
    system's root squash UID:GID (root in a container is squashed to it; the torch runtime runs as it)."""

    claim: str
    uid: int = NOBODY_UID
    gid: int = NOBODY_GID


# torchrun through an entrypoint that keeps a failed rank's exit code (torchrun itself always exits 1). It creates
# the job's checkpoint directory first, as the identity the ranks write it with. `python3 -c CODE ARGS`: the
# TrainJob's `args` (script and its options) are torchrun's; torchrun's own options come from Trainer's PET_* env.
TORCHRUN_ENTRYPOINT = """\
import os, sys
from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
from torch.distributed.run import main
if os.environ.get("TRAINSTACK_CHECKPOINT_DIR"):
    os.makedirs(os.environ["TRAINSTACK_CHECKPOINT_DIR"], exist_ok=True)
try:
    main(sys.argv[1:])
except ChildFailedError as error:
    code = error.get_first_failure()[1].exitcode
    sys.exit(128 - code if code < 0 else code or 1)
"""
TORCHRUN_COMMAND = ["python3", "-c", TORCHRUN_ENTRYPOINT]


# ----------------------------------------------------------------------------------------------- pure


def group_scheduling(group: GpuNodeGroupSpec) -> dict[str, Any]:
    """Pin a pod to the group's nodes and tolerate their accelerator taint."""
    return {
        "nodeSelector": group.node_selector,
        "tolerations": group_tolerations(group),
    }


def node_resources(group: GpuNodeGroupSpec, *, launcher: bool = False) -> dict[str, str]:
    """A whole node of the group for the pod that holds its accelerators: every accelerator, on EFA groups every
    EFA device and the hugepages, and the node's allocatable CPU, memory and half its ephemeral storage less the
    DaemonSets' headroom (and the MPI launcher's requests when `launcher`)."""
    row = CATALOG[group.instance_type]
    hugepages_mib = group.hugepages_2mi * 2 if group.efa_enabled else 0
    shape = node_shape(row, group.max_size, hugepages_mib, group.root_volume_size_gib)
    cpu = shape.cpu_millicores - DAEMONSET_HEADROOM_MILLICORES - (LAUNCHER_CPU_MILLICORES if launcher else 0)
    memory = shape.memory_mib - DAEMONSET_HEADROOM_MIB - (LAUNCHER_MEMORY_MIB if launcher else 0)
    amounts = {
        row.device_resource: str(row.accelerator_count),
        "cpu": f"{cpu}m",
        "memory": f"{memory}Mi",
        "ephemeral-storage": f"{shape.ephemeral_gib // 2}Gi",
    }
    if group.efa_enabled:
        amounts[EFA_RESOURCE] = str(row.max_efa_interfaces)
        if hugepages_mib:
            amounts["hugepages-2Mi"] = f"{hugepages_mib}Mi"
    return amounts


def restricted_security_context(uid: int, gid: int) -> dict[str, Any]:
    """A pod security context the `restricted` Pod Security level admits (kubernetes/pod-security-admission
    v0.36.2 policy: runAsNonRoot, runAsUser not 0, seccomp RuntimeDefault), as `uid`:`gid`."""
    return {
        "runAsNonRoot": True,
        "runAsUser": uid,
        "runAsGroup": gid,
        "seccompProfile": {"type": "RuntimeDefault"},
    }


def restricted_container_context() -> dict[str, Any]:
    """The container half of `restricted`: no privilege escalation, every capability dropped."""
    return {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}


# The MPI runtime runs as root (sshd as root, and mpirun's ssh logs in as root: the image's only user with the keys), so
# it cannot take `restricted`. It drops every capability and adds back only what was measured to be needed, with
# Debian bookworm's OpenSSH 9.2p1 under no_new_privs (tests/e2e/test_mpi_capabilities.py runs it): SETUID and
# SETGID (setgroups) and SYS_CHROOT (the pre-auth privilege separation child's chroot to /run/sshd), NET_BIND_SERVICE
# (port 22 where ip_unprivileged_port_start is 1024), DAC_OVERRIDE (root writing the team directory, owned by the
# squash identity with mode 770: the Lustre client checks permissions locally first), and AUDIT_WRITE (a PAM login
# as root fails when libpam cannot write its audit record: images that run sshd with UsePAM). Gone: NET_RAW (raw
# sockets, ARP and ICMP spoofing), MKNOD, SETFCAP, SETPCAP, FSETID, FOWNER, CHOWN, KILL. Every one of these is in
# Pod Security `baseline`'s allowed list, so the runtime still runs in a baseline team namespace.
MPI_WORKER_CAPABILITIES = ("AUDIT_WRITE", "DAC_OVERRIDE", "NET_BIND_SERVICE", "SETGID", "SETUID", "SYS_CHROOT")
# The launcher runs mpirun and the ssh client as root: nothing but root's writes to the team directory.
MPI_LAUNCHER_CAPABILITIES = ("DAC_OVERRIDE",)


def mpi_container_context(capabilities: Sequence[str]) -> dict[str, Any]:
    """The MPI runtime's containers: root with only `capabilities`, no privilege escalation (sshd's setuid to its
    privilege separation user is a direct call, which no_new_privs allows)."""
    return {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"], "add": list(capabilities)}}


MPI_POD_CONTEXT = {"seccompProfile": {"type": "RuntimeDefault"}}  # containerd's default profile admits sshd and mpirun


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
        "resources": INIT_RESOURCES,
        "volumeMounts": [
            {"name": SSH_SECRET_VOLUME, "mountPath": SSH_SECRET_DIR, "readOnly": True},
            {"name": SSH_HOME_VOLUME, "mountPath": SSH_HOME},
        ],
    }


def ssh_home_volume() -> dict[str, Any]:
    return {"name": SSH_HOME_VOLUME, "emptyDir": {"medium": "Memory"}}


def ssh_home_mount() -> dict[str, str]:
    return {"name": SSH_HOME_VOLUME, "mountPath": SSH_HOME}


def sshd_command(checkpoint_dir: bool = False) -> list[str]:
    """A worker: sshd in the foreground, on SSH_PORT (the readiness probe and the launcher's dependsOn wait for it);
    with `checkpoint_dir`, the job's checkpoint directory is created first (as the squashed identity on Lustre)."""
    first = f'mkdir -p "${CHECKPOINT_ENV}" && ' if checkpoint_dir else ""
    return ["/bin/bash", "-c", first + "mkdir -p /run/sshd && exec /usr/sbin/sshd -De -p " + str(SSH_PORT)]


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


# The init container's settings, as env so the plan (trainstack/model/health.py) can read them back.
BACKOFF_ENV = "TRAINSTACK_RESTART_BACKOFF_S"
BACKOFF_MAX_ENV = "TRAINSTACK_RESTART_BACKOFF_MAX_S"
ATTEMPT_ENV = "TRAINSTACK_RESTART_ATTEMPT"
# POSIX sh: no wait on the first run, then BACKOFF, 2*BACKOFF, ... capped at BACKOFF_MAX before each restart.
RESTART_WAIT_SCRIPT = (
    f'attempt="${{{ATTEMPT_ENV}:-0}}"; first="${BACKOFF_ENV}"; cap="${BACKOFF_MAX_ENV}"; wait=0; '
    'if [ "$attempt" -gt 0 ]; then wait="$first"; i=1; '
    'while [ "$i" -lt "$attempt" ] && [ "$wait" -lt "$cap" ]; do wait=$((wait * 2)); i=$((i + 1)); done; fi; '
    'if [ "$wait" -gt "$cap" ]; then wait="$cap"; fi; '
    'echo "trainstack: restart $attempt, waiting ${wait}s before starting"; sleep "$wait"'
)


def restart_wait_seconds(attempt: int, initial_s: int, max_s: int) -> int:
    """What RESTART_WAIT_SCRIPT sleeps before restart `attempt` (0: the first run)."""
    return 0 if attempt <= 0 else min(initial_s * 2 ** (attempt - 1), max_s)


def restart_wait_init_container(spec: TrainerRuntimesSpec) -> dict[str, Any]:
    """Waits before a restarted pod starts, by JobSet's restart number (JobSet 0.10.1 itself restarts at once)."""
    return {
        "name": RESTART_WAIT,
        "image": spec.restart_wait_image,
        "command": ["/bin/sh", "-c", RESTART_WAIT_SCRIPT],
        "env": [
            {
                "name": ATTEMPT_ENV,
                "valueFrom": {"fieldRef": {"fieldPath": f"metadata.labels['{RESTART_ATTEMPT_LABEL}']"}},
            },
            {"name": BACKOFF_ENV, "value": str(spec.restart_backoff_s)},
            {"name": BACKOFF_MAX_ENV, "value": str(spec.restart_backoff_max_s)},
        ],
        "resources": INIT_RESOURCES,
        "securityContext": {
            "runAsNonRoot": True,
            "runAsUser": NOBODY_UID,
            **restricted_container_context(),
            "seccompProfile": {"type": "RuntimeDefault"},
        },
    }


def pod_failure_policy(fatal_exit_codes: Sequence[int]) -> dict[str, Any]:
    """Which pod failures fail the Job at once, and how JobSet can tell them apart afterwards (by the message).

    Rule order matters (first match wins): a drained pod may also exit non-zero. Without a match the failure is
    counted, and with backoffLimit 0 the Job fails with BackoffLimitExceeded. The API wants the codes sorted and
    unique, without 0 (batch/v1 PodFailurePolicyOnExitCodesRequirement)."""
    rules: list[dict[str, Any]] = [
        {"action": "FailJob", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]},
    ]
    if fatal_exit_codes:
        rules.append(
            {
                "action": "FailJob",
                "onExitCodes": {"containerName": NODE, "operator": "In", "values": sorted(set(fatal_exit_codes))},
            }
        )
    return {"rules": rules}


def jobset_failure_policy(spec: TrainerRuntimesSpec) -> dict[str, Any]:
    """Restart on a lost node without counting it, fail on a fatal exit code, restart (counted) on anything else.

    BlockingRecreate: the old pods are gone before new ones start, so no new rank meets an old one and the new
    pods find the whole nodes the old ones held free."""
    return {
        "maxRestarts": spec.max_restarts,
        "restartStrategy": "BlockingRecreate",
        "rules": [
            {
                "name": "nodeDisruption",
                "action": "RestartJobSetAndIgnoreMaxRestarts",
                "onJobFailureReasons": [POD_FAILURE_POLICY],
                "onJobFailureMessagePatterns": [DISRUPTION_MESSAGE],
            },
            {"name": "fatalExitCode", "action": "FailJobSet", "onJobFailureReasons": [POD_FAILURE_POLICY]},
            {"name": "crash", "action": "RestartJobSet", "onJobFailureReasons": [BACKOFF_LIMIT_EXCEEDED]},
        ],
    }


def team_checkpoint_access() -> dict[str, Any]:
    """The team's `training` service account (Pod Identity: its checkpoint prefix) and checkpoint ConfigMap."""
    return {
        "serviceAccountName": TEAM_SERVICE_ACCOUNT,
        "envFrom": [{"configMapRef": {"name": CHECKPOINT_CONFIG_MAP}}],
    }


def _pod(
    group: GpuNodeGroupSpec,
    container: dict[str, Any],
    lustre: LustreMount | None,
    extra_volumes: list[dict[str, Any]],
    init_containers: list[dict[str, Any]],
) -> dict[str, Any]:
    volumes = [{"name": "dshm", "emptyDir": {"medium": "Memory"}}, *extra_volumes]
    mounts = [{"name": "dshm", "mountPath": "/dev/shm"}]
    if lustre:
        volumes.append({"name": "fsx", "persistentVolumeClaim": {"claimName": lustre.claim}})
        mounts.append({"name": "fsx", "mountPath": LUSTRE_MOUNT})
    access = team_checkpoint_access()
    container = {
        **container,
        "envFrom": access["envFrom"],
        "volumeMounts": [*container.get("volumeMounts", []), *mounts],
    }
    pod = {
        **group_scheduling(group),
        "serviceAccountName": access["serviceAccountName"],
        "restartPolicy": "Never",  # podFailurePolicy requires it; the JobSet, not the kubelet, restarts ranks
        "containers": [container],
        "volumes": volumes,
    }
    if init_containers:
        pod["initContainers"] = init_containers
    return pod


def _job(pod: dict[str, Any], spec: TrainerRuntimesSpec, labels: dict[str, str] | None = None) -> dict[str, Any]:
    job: dict[str, Any] = {
        "spec": {
            "backoffLimit": 0,
            "podFailurePolicy": pod_failure_policy(spec.fatal_exit_codes),
            "template": {"spec": pod},
        }
    }
    if labels:
        job["metadata"] = {"labels": labels}
    return job


def torch_runtime_spec(
    group: GpuNodeGroupSpec, spec: TrainerRuntimesSpec, lustre: LustreMount | None
) -> dict[str, Any]:
    """torchrun (through TORCHRUN_ENTRYPOINT) on every node of a JobSet, one process per accelerator, restarted
    together at most max_restarts; every process runs as the team's Lustre identity under `restricted` settings."""
    row = CATALOG[group.instance_type]
    resources = node_resources(group)
    uid, gid = (lustre.uid, lustre.gid) if lustre else (NOBODY_UID, NOBODY_GID)
    container = {
        "name": NODE,
        "image": spec.torch_image,
        "command": TORCHRUN_COMMAND,
        # A UID the image's /etc/passwd may not list: HOME and USER from the environment, so caches land in a
        # writable place and getpass.getuser() (torch's compile caches use it) never looks the UID up.
        "env": [
            *checkpoint_env(lustre is not None),
            {"name": "HOME", "value": "/tmp"},
            {"name": "USER", "value": "trainstack"},
        ],
        "resources": {"requests": resources, "limits": resources},
        "securityContext": restricted_container_context(),
    }
    pod = _pod(group, container, lustre, [], [restart_wait_init_container(spec)])
    pod["securityContext"] = restricted_security_context(uid, gid)
    node = {"name": NODE, "template": _job(pod, spec, ANCESTOR_LABEL)}
    return {
        "mlPolicy": {"numNodes": 1, "torch": {"numProcPerNode": row.accelerator_count}},
        "template": {"spec": {"failurePolicy": jobset_failure_policy(spec), "replicatedJobs": [node]}},
    }


def mpi_runtime_spec(group: GpuNodeGroupSpec, spec: TrainerRuntimesSpec, lustre: LustreMount | None) -> dict[str, Any]:
    """An Open MPI launcher and ssh workers (DeepSpeed's and MPI's runtime), keys fixed, launcher after workers.
    The workers are sized here (a TrainJob cannot resize them) and leave room for the launcher."""
    row = CATALOG[group.instance_type]
    resources = node_resources(group, launcher=True)
    env = checkpoint_env(lustre is not None)
    ssh = [ssh_home_volume()]
    worker = {
        "name": NODE,
        "image": spec.mpi_image,
        "command": sshd_command(checkpoint_dir=lustre is not None),
        "env": env,
        "readinessProbe": sshd_readiness_probe(),
        "resources": {"requests": resources, "limits": resources},
        "volumeMounts": [ssh_home_mount()],
        "securityContext": mpi_container_context(MPI_WORKER_CAPABILITIES),
    }
    launcher = {
        "name": NODE,
        "image": spec.mpi_image,
        "env": env,
        "resources": LAUNCHER_RESOURCES,
        "volumeMounts": [ssh_home_mount()],
        "securityContext": mpi_container_context(MPI_LAUNCHER_CAPABILITIES),
    }
    # Root writing root's files in an emptyDir: no capability at all.
    keys = {**ssh_key_init_container(spec.mpi_image), "securityContext": mpi_container_context(())}
    # The workers hold the GPUs and wait before a restart; the launcher starts only once they are Ready.
    worker_pod = {
        **_pod(group, worker, lustre, ssh, [restart_wait_init_container(spec), keys]),
        "securityContext": MPI_POD_CONTEXT,
    }
    launcher_pod = {**_pod(group, launcher, lustre, ssh, [keys]), "securityContext": MPI_POD_CONTEXT}
    return {
        "mlPolicy": mpi_policy(1, row.accelerator_count),
        "template": {
            "spec": {
                "network": {"publishNotReadyAddresses": True},
                "successPolicy": {"operator": "All", "targetReplicatedJobs": [LAUNCHER]},
                "failurePolicy": jobset_failure_policy(spec),
                "replicatedJobs": launcher_after_workers(
                    {"name": LAUNCHER, "template": _job(launcher_pod, spec, ANCESTOR_LABEL)},
                    {"name": NODE, "template": _job(worker_pod, spec)},
                ),
            }
        },
    }


def runtime_names(group: GpuNodeGroupSpec, mpi: bool = True) -> dict[str, str]:
    """The group's runtimes by kind: torch everywhere, MPI on NVIDIA groups (its image is CUDA's Open MPI stack)
    unless the stack turned it off (`mpi`: training_operator.runtimes.mpi)."""
    names = {"torch": f"trainstack-torch-{group.name}"}
    if mpi and CATALOG[group.instance_type].accelerator is Accelerator.NVIDIA:
        names["mpi"] = f"trainstack-mpi-{group.name}"
    return names


# ------------------------------------------------------------------------------------------ component


@dataclass
class TrainingRuntimesArgs:
    """Spec (the runtimes' settings, the GPU node groups) and wiring (Lustre claim name, what must exist first)."""

    spec: TrainerRuntimesSpec
    node_groups: Sequence[GpuNodeGroupSpec]
    lustre_claim: LustreMount | None = None
    """The FSx for Lustre claim every team namespace has and the file system's squash identity (None: no Lustre,
    no checkpoint directory; the torch runtime then runs as 65534:65534)."""
    after: Sequence[pulumi.Resource] = ()
    """The Trainer release (it installs the ClusterTrainingRuntime CRD)."""


class TrainingRuntimes(pulumi.ComponentResource):
    """A torch and an MPI ClusterTrainingRuntime per GPU node group."""

    runtimes: dict[str, k8s.apiextensions.CustomResource]
    """Runtime name -> its ClusterTrainingRuntime."""

    def __init__(self, name: str, args: TrainingRuntimesArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("trainstack:k8s:TrainingRuntimes", name, None, opts)
        # An edit of an immutable field (max_restarts lives in failurePolicy) replaces the runtime, old one first.
        after = pulumi.ResourceOptions(
            parent=self,
            depends_on=list(args.after),
            replace_on_changes=list(IMMUTABLE_FIELDS["ClusterTrainingRuntime"]),
            delete_before_replace=True,
        )
        self.runtimes = {}
        for group in args.node_groups:
            build = {"torch": torch_runtime_spec, "mpi": mpi_runtime_spec}
            for kind, runtime_name in runtime_names(group, args.spec.mpi).items():
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

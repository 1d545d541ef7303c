"""Opt-in cluster validation: a multi-node NCCL all-reduce over EFA and a DCGM diagnostic per node.

Both run through Kueue (the `kueue.x-k8s.io/queue-name` label: Kueue's webhook creates them suspended and
admits them when the node group's ClusterQueue has room), in their own namespace, on the target node group. The
namespace has the team namespaces' LimitRange, so the NCCL check meets the same defaulting and the same Kueue
coverage rule as a team's job (docs/validate.md says what still differs: privileged pod security for dcgmi, no
compute quota, no registry policy).

The NCCL test runs `all_reduce_perf` under Open MPI across `nodes` nodes, one rank per GPU, as the installed
training operator runs MPI: a TrainJob on a trainstack ClusterTrainingRuntime (Kubeflow Trainer v2, MPI
policy) or an MPIJob (MPI Operator). Each worker requests every GPU, every EFA device (catalog
`max_efa_interfaces`), the group's hugepages and half the node's memory, which is what keeps NCCL on EFA:
without the EFA request it silently falls back to TCP sockets (user pain points 6 and 7). The launcher fails
the job when NCCL used sockets, when any result was wrong, or when the large-message bus bandwidth is below
the catalog's `nccl_busbw_floor_gb_s`.

The DCGM job is an Indexed Job with one pod per node (each requests all of a node's GPUs), running
`dcgmi diag -r <level>` against a pod-local host engine.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

import pulumi
import pulumi_kubernetes as k8s

from components.k8s.scheduling import custom_resource_name, local_queue
from components.k8s.tenancy import limit_range_limits
from components.k8s.training_runtimes import (
    LAUNCHER,
    MPI_POD_CONTEXT,
    MPI_WORKER_CAPABILITIES,
    NODE,
    SSH_HOME,
    launcher_after_workers,
    mpi_container_context,
    mpi_policy,
    ssh_home_mount,
    ssh_home_volume,
    ssh_key_init_container,
    sshd_command,
    sshd_readiness_probe,
)
from components.k8s_common import (
    EFA_RESOURCE,
    IMMUTABLE_FIELDS,
    KUEUE_QUEUE_LABEL,
    TEAM_LABEL,
    group_tolerations,
)
from components.namespaces import system_namespace_labels
from components.naming import child_name
from components.nccl import ALL_REDUCE_PERF, NcclPlan, nccl_env, nccl_verdict_lines, supports_device_rdma
from stacks.catalog import CATALOG
from stacks.schema import GpuNodeGroupSpec, ValidationSpec

NAMESPACE = "trainstack-validation"
NCCL_JOB_NAME = "nccl-all-reduce"
DCGM_JOB_NAME = "dcgm-diag"
# The MPI Operator mounts its key Secret with mode 0600 only at this path (kubeflow/mpi-operator v0.8.0
# `setupSSHOnPod`); the nccl-tests image runs as root. Trainer's keys go through training_runtimes instead.
MPI_OPERATOR_SSH_PATH = "/root/.ssh"
MPIRUN = "/opt/amazon/openmpi/bin/mpirun"  # Open MPI from the EFA installer, as the nccl-tests image ships it
# ssh from the launcher: the 0600 key copy, no host-key prompt (worker host keys are per pod), and retries for a
# worker whose sshd is still starting (Trainer's own default is ConnectionAttempts=10).
RSH_ARGS = (
    f"-i {SSH_HOME}/id_rsa -o IdentitiesOnly=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null "
    "-o ConnectionAttempts=10"
)
# Tell pulumi-kubernetes not to wait for these to finish: Kueue decides when they start.
SKIP_AWAIT = {"pulumi.com/skipAwait": "true"}

# ----------------------------------------------------------------------------------------------- pure


def nccl_plan(validation: ValidationSpec, group: GpuNodeGroupSpec) -> NcclPlan:
    row = CATALOG[group.instance_type]
    return NcclPlan(
        group=group.name,
        instance_type=group.instance_type,
        nodes=validation.nodes,
        gpus_per_node=row.accelerator_count,
        efa_per_node=row.max_efa_interfaces,
        hugepages_2mi_mi=group.hugepages_2mi * 2,
        # Half the node: NCCL buffers plus EFA registrations; a tight limit shows up as bogus EFA QPN errors
        # that are really OOM kills (user pain point 7).
        memory_gi=row.memory_gib // 2,
        cpu=row.vcpus // 2,
        busbw_floor_gb_s=row.nccl_busbw_floor_gb_s,
        device_rdma=supports_device_rdma(row),
        max_message_size=validation.nccl_max_message_size,
    )


def _k8s_env(env: dict[str, str]) -> list[dict[str, str]]:
    return [{"name": k, "value": v} for k, v in env.items()]


def nccl_worker_resources(plan: NcclPlan) -> dict[str, dict[str, str]]:
    """Requests = limits for a worker: every GPU and EFA device of the node, hugepages, memory, CPU."""
    row = CATALOG[plan.instance_type]
    amounts = {
        row.device_resource: str(plan.gpus_per_node),
        EFA_RESOURCE: str(plan.efa_per_node),
        "hugepages-2Mi": f"{plan.hugepages_2mi_mi}Mi",
        "memory": f"{plan.memory_gi}Gi",
        "cpu": str(plan.cpu),
    }
    if not plan.hugepages_2mi_mi:
        del amounts["hugepages-2Mi"]
    return {"requests": dict(amounts), "limits": dict(amounts)}


def nccl_launcher_script(plan: NcclPlan) -> str:
    """The launcher's shell script: run all_reduce_perf over every rank, then judge the result.

    Fails when NCCL fell back to sockets ("NET/Socket", "Using network Socket"), when the OFI plugin did not
    select the EFA provider, when any rank reported wrong results, or when the out-of-place or in-place bus
    bandwidth of the largest message is below the floor. ("Avg bus bandwidth" averages every message size
    from 8 bytes up, so it sits far below the fabric's rate; it is printed, not judged.)
    """
    env_flags = " ".join(f"-x {name}" for name in [*nccl_env(plan), "PATH", "LD_LIBRARY_PATH"])
    mpirun = (
        f"{MPIRUN} --allow-run-as-root -np {plan.ranks} --map-by ppr:{plan.gpus_per_node}:node --bind-to none "
        f"{env_flags} --mca pml ^ucx --mca btl tcp,self --mca btl_tcp_if_exclude lo,docker0,pod-id-link0 "
        f"--mca plm_rsh_args '{RSH_ARGS}' "
        f"{ALL_REDUCE_PERF} -b 8 -e {plan.max_message_size} -f 2 -g 1 -c 1 -n 50"
    )
    return "\n".join(
        ["set -euo pipefail", f"{mpirun} 2>&1 | tee /tmp/nccl.log", *nccl_verdict_lines(plan, "/tmp/nccl.log")]
    )


def _scheduling(group: GpuNodeGroupSpec) -> dict[str, Any]:
    return {
        "nodeSelector": group.node_selector,
        "tolerations": group_tolerations(group),
    }


def nccl_worker_pod_spec(
    plan: NcclPlan, group: GpuNodeGroupSpec, image: str, container: str, *, trainer_keys: bool
) -> dict[str, Any]:
    """A worker: sshd for the launcher (ready once it listens), all of one node's GPUs and EFA devices, /dev/shm.

    `trainer_keys`: copy Trainer's key Secret into ~/.ssh with mode 0600 first (training_runtimes)."""
    pod: dict[str, Any] = {
        **_scheduling(group),
        "restartPolicy": "Never",
        "containers": [
            {
                "name": container,
                "image": image,
                "command": sshd_command(),
                "env": _k8s_env(nccl_env(plan)),
                "readinessProbe": sshd_readiness_probe(),
                "resources": nccl_worker_resources(plan),
                "volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}],
                # sshd as root with the MPI runtime's measured set (components/k8s/training_runtimes.py).
                "securityContext": mpi_container_context(MPI_WORKER_CAPABILITIES),
            }
        ],
        "volumes": [{"name": "dshm", "emptyDir": {"medium": "Memory"}}],
        "securityContext": MPI_POD_CONTEXT,
    }
    return _with_trainer_keys(pod, image) if trainer_keys else pod


def nccl_launcher_pod_spec(
    plan: NcclPlan, group: GpuNodeGroupSpec, image: str, container: str, *, trainer_keys: bool
) -> dict[str, Any]:
    """The launcher: runs mpirun and the pass/fail check; small, no accelerators."""
    pod: dict[str, Any] = {
        **_scheduling(group),
        "restartPolicy": "Never",
        "containers": [
            {
                "name": container,
                "image": image,
                "command": ["/bin/bash", "-c", nccl_launcher_script(plan)],
                "env": _k8s_env(nccl_env(plan)),
                "resources": {
                    "requests": {"cpu": "1", "memory": "2Gi"},
                    "limits": {"cpu": "2", "memory": "4Gi"},
                },
                "securityContext": mpi_container_context(()),  # mpirun and ssh as root, writing nothing shared
            }
        ],
        "securityContext": MPI_POD_CONTEXT,
    }
    return _with_trainer_keys(pod, image) if trainer_keys else pod


def _with_trainer_keys(pod: dict[str, Any], image: str) -> dict[str, Any]:
    """The pod with the 0600 key copy: an init container and the in-memory ~/.ssh the main container mounts."""
    container = pod["containers"][0]
    return {
        **pod,
        "initContainers": [{**ssh_key_init_container(image), "securityContext": mpi_container_context(())}],
        "containers": [{**container, "volumeMounts": [*container.get("volumeMounts", []), ssh_home_mount()]}],
        "volumes": [*pod.get("volumes", []), ssh_home_volume()],
    }


def mpijob_spec(plan: NcclPlan, group: GpuNodeGroupSpec, image: str) -> dict[str, Any]:
    """MPIJob (kubeflow.org/v2beta1) spec for the MPI Operator."""
    return {
        "slotsPerWorker": plan.gpus_per_node,
        "mpiImplementation": "OpenMPI",
        "sshAuthMountPath": MPI_OPERATOR_SSH_PATH,
        # The launcher starts once every worker is Ready, i.e. its sshd listens (readiness probe).
        "launcherCreationPolicy": "WaitForWorkersReady",
        "runPolicy": {"cleanPodPolicy": "Running", "backoffLimit": 0, "suspend": True},
        "mpiReplicaSpecs": {
            "Launcher": {
                "replicas": 1,
                "restartPolicy": "Never",
                "template": {"spec": nccl_launcher_pod_spec(plan, group, image, "launcher", trainer_keys=False)},
            },
            "Worker": {
                "replicas": plan.nodes,
                "restartPolicy": "Never",
                "template": {"spec": nccl_worker_pod_spec(plan, group, image, "worker", trainer_keys=False)},
            },
        },
    }


def training_runtime_spec(plan: NcclPlan, group: GpuNodeGroupSpec, image: str) -> dict[str, Any]:
    """ClusterTrainingRuntime (trainer.kubeflow.org/v1alpha1) spec: MPI policy, launcher + node jobs.

    Shaped like Kubeflow Trainer's own MPI runtime (`manifests/base/runtimes/deepspeed_distributed.yaml` at
    v2.1.0): Trainer generates the SSH keys and the hostfile; container and replicated-job names are Trainer's.
    Unlike it, the workers come first and the launcher waits for all of them to be Ready (sshd listening), the
    key is copied with mode 0600 before ssh reads it, and no job retries: one NCCL run, judged once.
    """
    launcher = {
        "name": LAUNCHER,
        "template": {
            "metadata": {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}},
            "spec": {
                "backoffLimit": 0,
                "template": {"spec": nccl_launcher_pod_spec(plan, group, image, NODE, trainer_keys=True)},
            },
        },
    }
    node = {
        "name": NODE,
        "template": {
            "spec": {
                "backoffLimit": 0,
                "template": {"spec": nccl_worker_pod_spec(plan, group, image, NODE, trainer_keys=True)},
            }
        },
    }
    return {
        "mlPolicy": mpi_policy(plan.nodes, plan.gpus_per_node),
        "template": {
            "spec": {
                "network": {"publishNotReadyAddresses": True},
                "successPolicy": {"operator": "All", "targetReplicatedJobs": [LAUNCHER]},
                "replicatedJobs": launcher_after_workers(launcher, node),
            }
        },
    }


def trainjob_spec(plan: NcclPlan, runtime_name: str) -> dict[str, Any]:
    """TrainJob (trainer.kubeflow.org/v1alpha1) spec referencing the validation runtime."""
    return {
        "runtimeRef": {"name": runtime_name, "apiGroup": "trainer.kubeflow.org", "kind": "ClusterTrainingRuntime"},
        "trainer": {"numNodes": plan.nodes},
        "suspend": True,
    }


def dcgm_script(level: int) -> str:
    """Start a pod-local DCGM host engine, run the diagnostic, fail on any failed test."""
    return "\n".join(
        [
            "set -uo pipefail",
            "nv-hostengine",
            "sleep 5",
            f"dcgmi diag -r {int(level)} 2>&1 | tee /tmp/diag.log",
            "status=${PIPESTATUS[0]}",
            "if [ \"$status\" -ne 0 ] || grep -Eq '\\bFail\\b' /tmp/diag.log; then",
            f'  echo "trainstack-dcgm: FAIL on $(hostname) (level {int(level)})"; exit 1',
            "fi",
            f'echo "trainstack-dcgm: PASS on $(hostname) (level {int(level)})"',
        ]
    )


def dcgm_job_spec(validation: ValidationSpec, group: GpuNodeGroupSpec) -> dict[str, Any]:
    """An Indexed Job with one pod per node (each takes all the node's GPUs), run by Kueue."""
    row = CATALOG[group.instance_type]
    gpus = {row.device_resource: str(row.accelerator_count)}
    return {
        "completionMode": "Indexed",
        "completions": validation.nodes,
        "parallelism": validation.nodes,
        "backoffLimit": 0,
        "suspend": True,
        # No ttlSecondsAfterFinished: the TTL controller would delete this Pulumi-managed Job, and the next
        # `pulumi up --refresh` would recreate it and rerun dcgmi diag on every node at an arbitrary time.
        # Pulumi owns its lifetime; docs/validate.md shows how to rerun it.
        "template": {
            "spec": {
                **_scheduling(group),
                "restartPolicy": "Never",
                "containers": [
                    {
                        "name": "dcgm",
                        "image": validation.dcgm_image,
                        "command": ["/bin/bash", "-c", dcgm_script(validation.dcgm_diag_level)],
                        # DCGM's diagnostics need SYS_ADMIN (NVIDIA DCGM container docs: --cap-add SYS_ADMIN).
                        "securityContext": {"capabilities": {"add": ["SYS_ADMIN"]}},
                        "resources": {
                            "requests": {**gpus, "cpu": "2", "memory": "8Gi"},
                            "limits": {**gpus, "cpu": "4", "memory": "16Gi"},
                        },
                    }
                ],
            }
        },
    }


# ------------------------------------------------------------------------------------------ component


@dataclass
class ValidationJobsArgs:
    """Spec (the validation settings, the target group, the operator kind) and what must exist first."""

    spec: ValidationSpec
    node_group: GpuNodeGroupSpec
    training_operator_kind: str
    after: Sequence[pulumi.Resource] = ()
    """The GPU Operator, EFA plugin, training operator and Kueue queues: nothing requests GPUs before them."""


class ValidationJobs(pulumi.ComponentResource):
    """The NCCL all-reduce job and the DCGM diagnostic job, queued through Kueue."""

    namespace: k8s.core.v1.Namespace
    """The validation namespace."""
    nccl_job: k8s.apiextensions.CustomResource
    """The TrainJob or MPIJob running all_reduce_perf."""
    dcgm_job: k8s.batch.v1.Job
    """The Indexed Job running dcgmi diag on every node."""
    plan: NcclPlan
    """What the NCCL job requests and its bandwidth floor (plain data)."""

    def __init__(self, name: str, args: ValidationJobsArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("trainstack:k8s:ValidationJobs", name, None, opts)
        group = args.node_group
        self.plan = nccl_plan(args.spec, group)
        after = list(args.after)
        self.namespace = self._namespace(name)
        queue = local_queue(
            child_name(name, "lq"),
            group.name,
            self.namespace.metadata.name,
            pulumi.ResourceOptions(parent=self, depends_on=after),
        )
        queued = {KUEUE_QUEUE_LABEL: group.name}
        # Kueue owns `suspend` once a job exists: it unsuspends the job on admission, and a later `pulumi up`
        # must not suspend a running (or finished) job again.
        ordered = pulumi.ResourceOptions(parent=self, depends_on=[*after, queue])
        kueue_owns_suspend = pulumi.ResourceOptions(ignore_changes=["spec.suspend"])
        if args.training_operator_kind == "kubeflow_trainer":
            self.nccl_job = self._nccl_train_job(name, args, queued, ordered, kueue_owns_suspend)
        else:
            self.nccl_job = self._nccl_mpi_job(name, args, queued, ordered)
        self.dcgm_job = k8s.batch.v1.Job(
            child_name(name, "dcgm"),
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name=DCGM_JOB_NAME, namespace=self.namespace.metadata.name, labels=queued, annotations=SKIP_AWAIT
            ),
            # The Job in the API's own camelCase field names (as the tests compare it); the SDK's typed inputs use
            # snake_case, but a plain mapping reaches the provider unchanged, so the cast only names the parameter.
            spec=cast("k8s.batch.v1.JobSpecArgsDict", dcgm_job_spec(args.spec, group)),
            opts=pulumi.ResourceOptions.merge(ordered, kueue_owns_suspend),
        )
        self.register_outputs(
            {
                "namespace": self.namespace.metadata.name,
                "nccl_job": custom_resource_name(self.nccl_job),
                "dcgm_job": self.dcgm_job.metadata.name,
                "busbw_floor_gb_s": self.plan.busbw_floor_gb_s,
            }
        )

    def _namespace(self, name: str) -> k8s.core.v1.Namespace:
        """The validation namespace, with the team namespaces' default limits."""
        namespace = k8s.core.v1.Namespace(
            child_name(name, "ns"),
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name=NAMESPACE, labels={TEAM_LABEL: "platform-validation", **system_namespace_labels(NAMESPACE)}
            ),
            opts=pulumi.ResourceOptions(parent=self),
        )
        # The team namespaces' defaults: a check that passes here passes the rules a team's job meets.
        k8s.core.v1.LimitRange(
            child_name(name, "limits"),
            metadata=k8s.meta.v1.ObjectMetaArgs(name="defaults", namespace=namespace.metadata.name),
            spec=k8s.core.v1.LimitRangeSpecArgs(
                limits=[
                    k8s.core.v1.LimitRangeItemArgs(
                        type=item["type"], default=item["default"], default_request=item["defaultRequest"]
                    )
                    for item in limit_range_limits()
                ]
            ),
            opts=pulumi.ResourceOptions(parent=self),
        )
        return namespace

    def _nccl_train_job(
        self,
        name: str,
        args: ValidationJobsArgs,
        queued: dict[str, str],
        ordered: pulumi.ResourceOptions,
        kueue_owns_suspend: pulumi.ResourceOptions,
    ) -> k8s.apiextensions.CustomResource:
        """Kubeflow Trainer: a ClusterTrainingRuntime for the group and the TrainJob that runs it."""
        group = args.node_group
        after = list(args.after)
        image = args.spec.nccl_tests_image
        runtime_name = f"trainstack-{NCCL_JOB_NAME}-{group.name}"
        runtime = k8s.apiextensions.CustomResource(
            child_name(name, "nccl-runtime"),
            api_version="trainer.kubeflow.org/v1alpha1",
            kind="ClusterTrainingRuntime",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=runtime_name),
            spec=training_runtime_spec(self.plan, group, image),
            opts=pulumi.ResourceOptions(
                parent=self,
                depends_on=after,
                replace_on_changes=list(IMMUTABLE_FIELDS["ClusterTrainingRuntime"]),
                delete_before_replace=True,
            ),
        )
        return k8s.apiextensions.CustomResource(
            child_name(name, "nccl"),
            api_version="trainer.kubeflow.org/v1alpha1",
            kind="TrainJob",
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name=NCCL_JOB_NAME, namespace=self.namespace.metadata.name, labels=queued, annotations=SKIP_AWAIT
            ),
            spec=trainjob_spec(self.plan, runtime_name),
            opts=pulumi.ResourceOptions.merge(
                ordered,
                pulumi.ResourceOptions(
                    depends_on=[runtime],
                    ignore_changes=kueue_owns_suspend.ignore_changes,
                    replace_on_changes=list(IMMUTABLE_FIELDS["TrainJob"]),
                    delete_before_replace=True,
                ),
            ),
        )

    def _nccl_mpi_job(
        self, name: str, args: ValidationJobsArgs, queued: dict[str, str], ordered: pulumi.ResourceOptions
    ) -> k8s.apiextensions.CustomResource:
        """The MPI Operator: an MPIJob, whose suspend field sits under runPolicy."""
        group = args.node_group
        image = args.spec.nccl_tests_image
        return k8s.apiextensions.CustomResource(
            child_name(name, "nccl"),
            api_version="kubeflow.org/v2beta1",
            kind="MPIJob",
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name=NCCL_JOB_NAME, namespace=self.namespace.metadata.name, labels=queued, annotations=SKIP_AWAIT
            ),
            spec=mpijob_spec(self.plan, group, image),
            opts=pulumi.ResourceOptions.merge(
                ordered, pulumi.ResourceOptions(ignore_changes=["spec.runPolicy.suspend"])
            ),
        )

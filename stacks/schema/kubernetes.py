"""`kubernetes`: GPU Operator, device plugins, Kueue, the training operator, teams and validation jobs."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Literal, Self

from pydantic import Field, field_validator, model_validator

from stacks.schema.base import RoleArn, Spec
from stacks.schema.capacity import ClusterAutoscalerSpec
from stacks.schema.values import Limits, PinnedImage, TeamNamespace


class MigStrategy(StrEnum):
    NONE = "none"
    SINGLE = "single"
    MIXED = "mixed"


CHART_VERSION = r"^v?\d+\.\d+\.\d+$"


class GpuOperatorSpec(Spec):
    """NVIDIA GPU Operator (Helm chart `gpu-operator` from https://helm.ngc.nvidia.com/nvidia)."""

    chart_version: str = Field(
        pattern=CHART_VERSION, examples=["0.14.3"], description="NVIDIA gpu-operator Helm chart version."
    )
    mig_strategy: MigStrategy = Field(default=MigStrategy.NONE, description="MIG strategy for the device plugin.")
    dcgm_exporter: bool = Field(default=True, description="Run the DCGM exporter for GPU metrics.")


class EfaDevicePluginSpec(Spec):
    """AWS EFA Kubernetes device plugin (chart `aws-efa-k8s-device-plugin` from https://aws.github.io/eks-charts)."""

    chart_version: str = Field(
        pattern=CHART_VERSION,
        examples=["0.14.3"],
        # Plugins before v0.5.10 counted p6-b200's NVLink ibp* controllers as EFA devices (aws/sagemaker-hyperpod-cli
        # PR #282, user pain point 4).
        description="aws-efa-k8s-device-plugin chart version; pick one that ships plugin v0.5.10 or newer on "
        "p6-b200 (earlier plugins count its NVLink ibp* controllers as EFA devices).",
    )


# neuron-helm-chart 1.9.0 (Neuron SDK 2.31.0, device plugin image 2.31.0.0): the newest release whose notes and
# values.yaml we checked (github.com/aws-neuron/neuron-helm-charts releases/tag/1.9.0). The chart has no
# leading v in its tags.
NEURON_HELM_CHART_VERSION = "1.9.0"


class NeuronDevicePluginSpec(Spec):
    """AWS Neuron device plugin for Trainium nodes (chart oci://public.ecr.aws/neuron/neuron-helm-chart).

    Installed only when a GPU node group is Neuron; the default pins a checked chart release, so swapping a
    group to a Trainium type needs no other edit."""

    chart_version: str = Field(
        default=NEURON_HELM_CHART_VERSION,
        pattern=CHART_VERSION,
        examples=["0.14.3"],
        description="neuron-helm-chart version (no leading v); its device plugin advertises aws.amazon.com/neuron.",
    )


# metrics-server chart 3.13.1 (app v0.8.1): kubernetes-sigs/metrics-server tag metrics-server-helm-chart-3.13.1,
# the newest chart release whose values we recorded (trainstack/contracts/facts/charts/metrics-server@3.13.1.json).
METRICS_SERVER_CHART_VERSION = "3.13.1"


class MetricsServerSpec(Spec):
    """Kubernetes metrics-server (chart `metrics-server` from https://kubernetes-sigs.github.io/metrics-server/):
    the resource metrics API behind `kubectl top` and the HorizontalPodAutoscaler. EKS does not run it by default."""

    enabled: bool = Field(
        default=True,
        description="Install metrics-server (two replicas; on the system nodes of a cluster trainstack creates). "
        "On an existing cluster that runs one already, set false: two releases cannot own its APIService.",
    )
    chart_version: str = Field(
        default=METRICS_SERVER_CHART_VERSION,
        pattern=CHART_VERSION,
        examples=["3.13.1"],
        description="metrics-server chart version (no leading v).",
    )


class KueueSpec(Spec):
    """Kueue job queueing (chart oci://registry.k8s.io/kueue/charts/kueue)."""

    chart_version: str = Field(
        pattern=CHART_VERSION, examples=["0.14.3"], description="Kueue Helm chart version (no leading v)."
    )
    wait_for_pods_ready_timeout_s: int = Field(
        default=600,
        ge=60,
        le=Limits.TIMEOUT_S,
        description="All-or-nothing admission: a workload whose pods are not all ready within this many seconds "
        "is evicted and requeued, so a half-scheduled multi-node job never holds GPUs.",
    )


# AWS's NCCL tests image: Open MPI, EFA, aws-ofi-nccl and NCCL, as the validation job uses it
# (aws-samples/awsome-distributed-training micro-benchmarks/nccl-tests; public.ecr.aws/hpc-cloud/nccl-tests).
NCCL_TESTS_IMAGE = "public.ecr.aws/hpc-cloud/nccl-tests:cuda12.8.1-efa1.43.2-ofiv1.16.3-ncclv2.27.7-1-testsv2.16.9"


# Exit codes a training script may declare fatal (docs/health.md, "Resume"): 1 and 128+N stay retryable.
FATAL_EXIT_CODE_MIN = 2
FATAL_EXIT_CODE_MAX = 127
DEFAULT_FATAL_EXIT_CODES = (2, 78, 126, 127)


class TrainerRuntimesSpec(Spec):
    """trainstack's ClusterTrainingRuntimes (a torch and an MPI one per GPU node group), Kubeflow Trainer only."""

    torch_image: PinnedImage = Field(
        # AWS Deep Learning Container, PyTorch 2.7.1 training on EC2/EKS: CUDA 12.8, NCCL 2.26.2, EFA 1.40.0 with
        # aws-ofi-nccl (aws/deep-learning-containers docs/releasenotes/pytorch/pytorch-training-2.7-gpu-ec2.md).
        # Trainer v2.1.0's own runtime uses docker.io's pytorch/pytorch, which has no EFA libraries and is not in
        # the approved registries the team namespaces enforce.
        default="public.ecr.aws/deep-learning-containers/pytorch-training:2.7.1-gpu-py312-cu128-ubuntu22.04-ec2",
        description="Default image of the torch runtime; a TrainJob sets its own (spec.trainer.image), which "
        "needs libfabric and aws-ofi-nccl to use EFA.",
    )
    mpi_image: PinnedImage = Field(
        default=NCCL_TESTS_IMAGE,
        description="Default image of the MPI runtime (Open MPI, sshd, EFA libraries); a TrainJob may set its own.",
    )
    mpi: bool = Field(
        default=True,
        description="Install the MPI runtime on NVIDIA groups. Its workers run sshd as root, which the `restricted` "
        "Pod Security level refuses: a stack with a restricted team sets this false (torch runs restricted).",
    )
    max_restarts: int = Field(
        default=3,
        ge=0,
        le=20,
        description="Times a failed job (a rank crashed: CUDA or NCCL error, Xid, OOM kill) is restarted as a "
        "whole before it fails; each restart resumes from the newest checkpoint under TRAINSTACK_CHECKPOINT_DIR. "
        "Restarts after a node was drained, evicted or lost (pod condition DisruptionTarget) do not count.",
    )
    fatal_exit_codes: list[Annotated[int, Field(ge=FATAL_EXIT_CODE_MIN, le=FATAL_EXIT_CODE_MAX)]] = Field(
        default_factory=lambda: list(DEFAULT_FATAL_EXIT_CODES),
        max_length=FATAL_EXIT_CODE_MAX - FATAL_EXIT_CODE_MIN + 1,
        description="Exit codes of the training container that fail the job at once, without a restart: a "
        "bug or a bad config does not get better by retrying. 2: usage error (argparse, a missing script, a "
        "shell syntax error); 78: EX_CONFIG (sysexits.h), trainstack's code for 'my config is wrong'; 126 and "
        "127: command not executable or not found. Only 2-127: 1 is what Python and torchrun exit with on any "
        "error (an NCCL or CUDA failure included) and 128+N is death by signal N (OOM kill, NCCL watchdog "
        "abort, SIGBUS on an ECC error, SIGTERM on a drain), all of which a restart on a healthy node may cure.",
    )
    restart_backoff_s: int = Field(
        default=30,
        ge=0,
        le=600,
        description="Wait before the first restart, doubled for each further one (0: no wait). JobSet restarts "
        "at once; the wait gives the node monitoring agent and auto repair time to take a bad node out before "
        "the job lands on it again.",
    )
    restart_backoff_max_s: int = Field(
        default=300,
        ge=0,
        le=3600,
        description="Longest wait before a restart; below kueue.wait_for_pods_ready_timeout_s, or Kueue evicts "
        "a job that restarts before all its pods were first ready.",
    )
    restart_wait_image: PinnedImage = Field(
        default="public.ecr.aws/docker/library/busybox:1.37.0",
        description="Image of the init container that waits before a restart (a POSIX shell is all it needs).",
    )

    @field_validator("fatal_exit_codes")
    @classmethod
    def _unique_codes(cls, codes: list[int]) -> list[int]:
        repeated = sorted({code for code in codes if codes.count(code) > 1})
        if repeated:
            raise ValueError(f"exit codes must be unique, {repeated} repeated")
        return codes

    @model_validator(mode="after")
    def _backoff_bounds(self) -> Self:
        if self.restart_backoff_max_s < self.restart_backoff_s:
            raise ValueError(
                f"restart_backoff_max_s {self.restart_backoff_max_s} is below restart_backoff_s "
                f"{self.restart_backoff_s}: the longest wait must be at least the first"
            )
        return self


class TrainingOperatorSpec(Spec):
    """The distributed-training operator for multi-node jobs."""

    kind: Literal["kubeflow_trainer", "mpi_operator"] = Field(
        default="kubeflow_trainer",
        description="kubeflow_trainer: Kubeflow Trainer v2 (TrainJob, Helm chart oci://ghcr.io/kubeflow/charts/"
        "kubeflow-trainer); mpi_operator: Kubeflow MPI Operator (MPIJob v2beta1, release manifest).",
    )
    version: str = Field(pattern=CHART_VERSION, examples=["0.14.3"], description="Operator release (chart) version.")
    runtimes: TrainerRuntimesSpec = Field(
        default_factory=TrainerRuntimesSpec,
        description="The training runtimes trainstack installs for Kubeflow Trainer (ignored for mpi_operator).",
    )


class TeamSpec(Spec):
    """A team namespace with a LocalQueue per ClusterQueue and a GPU ResourceQuota."""

    name: TeamNamespace = Field(description="Team namespace name (not one of the platform's own namespaces).")
    gpu_quota: int = Field(
        ge=0,
        le=Limits.ACCELERATORS,
        description="Accelerators the namespace may request at once, per kind: up to this many GPUs and, on a "
        "cluster with Trainium groups, up to this many Neuron devices too.",
    )
    pod_security: Literal["baseline", "restricted"] = Field(
        default="baseline",
        description="Pod Security Standard the namespace enforces: baseline (no privileged pods, host "
        "namespaces or host paths) or restricted (also non-root, no capabilities, a seccomp profile).",
    )
    member_role_arns: list[RoleArn] = Field(
        default_factory=list,
        max_length=Limits.ADMIN_ROLES,
        description="IAM roles of the team's members: each gets an EKS access entry in the Kubernetes group "
        "trainstack:team:<team>, which trainstack's team-member Role binds in this namespace (and in those of any "
        "other team that lists it): narrower than `edit`, it cannot change NetworkPolicies, RBAC or quotas, nor "
        "create LoadBalancer or NodePort Services (components/team_rbac.py).",
    )


class ValidationSpec(Spec):
    """Opt-in cluster validation jobs: multi-node NCCL all-reduce over EFA and a DCGM diagnostic."""

    enabled: bool = Field(default=False, description="Create the validation jobs.")
    node_group: str | None = Field(
        default=None, description="GPU group to test (an NVIDIA EFA group); the first NVIDIA EFA group if unset."
    )
    nodes: int = Field(default=2, ge=2, le=Limits.NODES_PER_GROUP, description="Nodes the NCCL test spans.")
    nccl_tests_image: PinnedImage = Field(
        description="Container image with nccl-tests, aws-ofi-nccl, libfabric and Open MPI, pinned by tag or digest."
    )
    nccl_max_message_size: str = Field(
        default="16G",
        pattern=r"^\d+[KMG]?$",
        examples=["16G"],
        description="Largest all-reduce message (all_reduce_perf -e); bus bandwidth is measured up to it.",
    )
    dcgm_image: PinnedImage = Field(
        # DCGM 4.2.3 is the standalone DCGM that GPU Operator v25.3 pairs with; NVIDIA NGC cloud-native/dcgm tags.
        default="nvcr.io/nvidia/cloud-native/dcgm:4.2.3-1-ubuntu22.04",
        description="NVIDIA DCGM image for the `dcgmi diag` job, pinned by tag or digest.",
    )
    dcgm_diag_level: Literal[1, 2, 3, 4] = Field(default=2, description="dcgmi diag run level.")


class KubernetesSpec(Spec):
    gpu_operator: GpuOperatorSpec = Field(description="NVIDIA GPU Operator.")
    efa_device_plugin: EfaDevicePluginSpec = Field(description="AWS EFA Kubernetes device plugin.")
    neuron_device_plugin: NeuronDevicePluginSpec | None = Field(
        default_factory=NeuronDevicePluginSpec,
        description="AWS Neuron device plugin, installed when a GPU node group is Neuron (Trainium); null only "
        "in a stack without Neuron groups.",
    )
    kueue: KueueSpec = Field(description="Kueue job queueing.")
    metrics_server: MetricsServerSpec = Field(
        default_factory=MetricsServerSpec, description="metrics-server: `kubectl top` and autoscaling on metrics."
    )
    cluster_autoscaler: ClusterAutoscalerSpec = Field(
        default_factory=ClusterAutoscalerSpec,
        description="cluster-autoscaler, installed when a GPU node group can grow (docs/capacity.md).",
    )
    training_operator: TrainingOperatorSpec = Field(description="Distributed-training operator.")
    teams: list[TeamSpec] = Field(
        min_length=1, max_length=Limits.TEAMS, description="Team namespaces with queues and GPU quotas."
    )
    validation: ValidationSpec | None = Field(default=None, description="Cluster validation jobs.")

    @model_validator(mode="after")
    def _unique_teams(self) -> Self:
        names = [t.name for t in self.teams]
        if len(set(names)) != len(names):
            raise ValueError(f"team names must be unique, got {names}")
        return self

    @model_validator(mode="after")
    def _restart_wait_within_kueue_timeout(self) -> Self:
        runtimes, timeout = self.training_operator.runtimes, self.kueue.wait_for_pods_ready_timeout_s
        if self.training_operator.kind == "kubeflow_trainer" and runtimes.restart_backoff_max_s >= timeout:
            raise ValueError(
                f"training_operator.runtimes.restart_backoff_max_s {runtimes.restart_backoff_max_s} must be below "
                f"kueue.wait_for_pods_ready_timeout_s {timeout}: a job that restarts before all its pods were "
                "first ready would be evicted by Kueue while it waits"
            )
        return self

"""`sagemaker`: the optional HyperPod cluster and training-job role."""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Self

from pydantic import Field, model_validator

from stacks.catalog import CATALOG
from stacks.schema.base import Spec
from stacks.schema.kubernetes import NCCL_TESTS_IMAGE
from stacks.schema.values import Limits, PinnedImage

# Kubernetes versions HyperPod's EKS orchestrator runs on, with what each claim rests on. Source: SageMaker
# Developer Guide, "Getting started with Amazon EKS support in SageMaker HyperPod", Kubernetes version support.
# The page grew over time (copies list 1.28-1.32, then 1.28-1.33); the newest copy we could read (2026, the
# China regions' edition) lists 1.28-1.34. EKS ships 1.35 and 1.36 on standard support, but no AWS page or
# release note we could reach says whether HyperPod supports them: they are UNCONFIRMED, like the FSx CSI add-on
# pin, and `StackConfig.hyperpod_eks_version_warning` warns about them (in the plan, and from the program under
# the real CLI). Check the guide before deploying.
# A version in neither list is refused.
HYPERPOD_EKS_VERSIONS_DOCUMENTED = ("1.28", "1.29", "1.30", "1.31", "1.32", "1.33", "1.34")
HYPERPOD_EKS_VERSIONS_UNCONFIRMED = ("1.35", "1.36")
HYPERPOD_EKS_VERSIONS = HYPERPOD_EKS_VERSIONS_DOCUMENTED + HYPERPOD_EKS_VERSIONS_UNCONFIRMED
HYPERPOD_EKS_VERSIONS_SOURCE = (
    "SageMaker Developer Guide, Getting started with Amazon EKS support in SageMaker HyperPod (Kubernetes version "
    "support: 1.28-1.34 documented; 1.35-1.36 unconfirmed)"
)


def hyperpod_eks_version_problem(version: str) -> str | None:
    """Why HyperPod cannot join an EKS cluster of `version`, or None."""
    if version in HYPERPOD_EKS_VERSIONS:
        return None
    return (
        f"SageMaker HyperPod does not support Kubernetes {version} on its EKS orchestrator; "
        f"documented: {', '.join(HYPERPOD_EKS_VERSIONS_DOCUMENTED)} (unconfirmed: "
        f"{', '.join(HYPERPOD_EKS_VERSIONS_UNCONFIRMED)})"
    )


class HyperPodOrchestrator(StrEnum):
    """Who schedules work on the HyperPod nodes: the trainstack EKS cluster, or Slurm run by HyperPod."""

    EKS = "eks"
    SLURM = "slurm"


class HyperPodGroupRole(StrEnum):
    """The Slurm role of an instance group; EKS-orchestrated clusters have compute groups only."""

    COMPUTE = "compute"
    CONTROLLER = "controller"  # runs slurmctld
    LOGIN = "login"  # where users ssh in and submit jobs


class HyperPodCapacity(StrEnum):
    ON_DEMAND = "on_demand"
    TRAINING_PLAN = "training_plan"  # reserved capacity from a SageMaker training plan (hyperpod-cluster target)


# HyperPod instance group names: [a-zA-Z0-9](-*[a-zA-Z0-9]){0,62} (SageMaker API, ClusterInstanceGroupSpecification);
# trainstack keeps them DNS labels so they double as Slurm partition and Kubernetes label values.
_HYPERPOD_GROUP = r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$"


# Debian's useradd default NAME_REGEX (adduser.conf(5)), at most 32 characters (useradd(8)).
_POSIX_USER = r"^[a-z][-a-z0-9_]{0,31}$"
# OpenSSH authorized_keys(5) key types trainstack accepts (no DSA: OpenSSH 9.8 removed it).
_SSH_PUBLIC_KEY = (
    r"^(ssh-ed25519|ssh-rsa|ecdsa-sha2-nistp256|ecdsa-sha2-nistp384|ecdsa-sha2-nistp521|"
    r"sk-ssh-ed25519@openssh\.com|sk-ecdsa-sha2-nistp256@openssh\.com) [A-Za-z0-9+/]+={0,3}( [^\x00-\x1f\x7f]*)?$"
)
# Debian policy 9.2.2: UIDs 1000-59999 are for normal users; the HyperPod AMI's `ubuntu` user is 1000.
USER_UID_MIN = 2000
USER_UID_MAX = 59999


class SlurmUserSpec(Spec):
    """A cluster user: the same name and UID on every node, home on Lustre, an SSH key pair for the cluster."""

    name: str = Field(pattern=_POSIX_USER, description="Login name (lower case, at most 32 characters).")
    uid: int = Field(
        ge=USER_UID_MIN, le=USER_UID_MAX, description="Numeric user id, the same on every node (2000-59999)."
    )
    ssh_public_keys: list[str] = Field(
        default_factory=list,
        description="Public keys the user logs in with (added to ~/.ssh/authorized_keys next to the cluster key).",
    )

    @model_validator(mode="after")
    def _keys(self) -> Self:
        bad = [i for i, key in enumerate(self.ssh_public_keys) if not re.fullmatch(_SSH_PUBLIC_KEY, key)]
        if bad:
            raise ValueError(
                f"ssh_public_keys {bad} of user {self.name} are not OpenSSH public keys "
                "('<type> <base64> [comment]', type ssh-ed25519, ssh-rsa or ecdsa-sha2-nistp*)"
            )
        return self


# enroot and pyxis as AWS's HyperPod reference lifecycle scripts pin them (aws-samples/awsome-distributed-training
# 1.architectures/5.sagemaker-hyperpod/LifecycleScripts/base-config/utils/install_enroot_pyxis.sh, 2026-02).
ENROOT_VERSION = "3.4.1"
PYXIS_VERSION = "0.19.0"


class SlurmSpec(Spec):
    """What the Slurm lifecycle scripts set up beyond HyperPod's own Slurm: each part can be turned off.

    The defaults follow AWS's HyperPod reference lifecycle scripts (base-config `config.py` and
    `lifecycle_script.py`): containers, accounting and Lustre home directories on, the Lustre client held.
    """

    containers: bool = Field(
        default=True, description="Install enroot and the pyxis SPANK plugin: `srun --container-image=...`."
    )
    enroot_version: str = Field(
        default=ENROOT_VERSION, pattern=r"^\d+\.\d+\.\d+$", description="NVIDIA enroot release."
    )
    pyxis_version: str = Field(default=PYXIS_VERSION, pattern=r"^\d+\.\d+\.\d+$", description="NVIDIA pyxis release.")
    accounting: bool = Field(
        default=True,
        description="Slurm accounting (`sacct`): MariaDB and slurmdbd on the controller, the database backed up "
        "hourly to /fsx and restored when HyperPod replaces the controller; needs storage.fsx.enabled.",
    )
    homes_on_lustre: bool = Field(
        default=True,
        description="Home directories of `ubuntu` and `users` on FSx for Lustre (/fsx/<user>) with a per-user "
        "SSH key pair, so every node sees the same home and users ssh between their nodes.",
    )
    users: list[SlurmUserSpec] = Field(
        default_factory=list[SlurmUserSpec], description="Cluster users created on every node."
    )
    hold_lustre_client: bool = Field(
        default=True,
        description="Hold the Lustre client module package and the installed kernel meta-packages (apt-mark hold), "
        "so an upgrade cannot pull in a kernel the client has no module for.",
    )
    nccl_validation: bool = Field(
        default=True,
        description="Ship an sbatch script per EFA GPU group that runs the NCCL all-reduce across the group "
        "(/opt/trainstack/validation on every node); needs containers.",
    )
    nccl_tests_image: PinnedImage = Field(
        default=NCCL_TESTS_IMAGE,
        description="Container image with nccl-tests, aws-ofi-nccl, libfabric and Open MPI, pinned by tag or digest.",
    )
    nccl_max_message_size: str = Field(
        default="16G",
        pattern=r"^\d+[KMG]?$",
        description="Largest all-reduce message (all_reduce_perf -e); bus bandwidth is judged at it.",
    )

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        problems: list[str] = []
        names = [u.name for u in self.users]
        uids = [u.uid for u in self.users]
        if len(set(names)) != len(names):
            problems.append(f"users names must be unique, got {names}")
        if len(set(uids)) != len(uids):
            problems.append(f"users uids must be unique, got {uids}")
        if "ubuntu" in names:
            problems.append("users must not list ubuntu: the HyperPod AMI creates it (uid 1000)")
        if self.nccl_validation and not self.containers:
            problems.append(
                "nccl_validation runs nccl-tests in a container (pyxis): set containers true or nccl_validation false"
            )
        if problems:
            raise ValueError("\n".join(problems))
        return self


class HyperPodInstanceGroupSpec(Spec):
    """One HyperPod instance group: a set of identical ml.* instances with one role and lifecycle."""

    name: str = Field(
        pattern=_HYPERPOD_GROUP, examples=["compute"], description="Instance group name, unique in the cluster."
    )
    instance_type: str = Field(
        pattern=r"^ml\.[a-z0-9-]+\.[a-z0-9]+$",
        examples=["ml.p5.48xlarge"],
        description="SageMaker instance type, for example ml.p5.48xlarge.",
    )
    instance_count: int = Field(ge=1, le=Limits.HYPERPOD_INSTANCES_PER_GROUP, description="Instances in the group.")
    role: HyperPodGroupRole = Field(
        default=HyperPodGroupRole.COMPUTE, description="Slurm role of the group (EKS takes compute groups only)."
    )
    capacity: HyperPodCapacity = Field(
        default=HyperPodCapacity.ON_DEMAND,
        description="on_demand, or training_plan to run on the reserved capacity of hyperpod.training_plan_arn.",
    )
    # HyperPod mounts the extra volume at /opt/sagemaker; VolumeSizeInGB is 1-16384 (ClusterEbsVolumeConfig).
    ebs_volume_size_gib: int = Field(
        default=500, ge=1, le=16384, description="Extra EBS volume per instance in GiB, mounted at /opt/sagemaker."
    )

    @model_validator(mode="after")
    def _known(self) -> Self:
        problems: list[str] = []
        ec2_type = self.ec2_instance_type
        if self.role is HyperPodGroupRole.COMPUTE and ec2_type not in CATALOG:
            problems.append(
                f"compute instance_type {self.instance_type} is not in the catalog; valid: "
                + ", ".join(f"ml.{name}" for name in sorted(CATALOG))
            )
        if self.role is not HyperPodGroupRole.COMPUTE and self.capacity is HyperPodCapacity.TRAINING_PLAN:
            problems.append(
                f"{self.role.value} group {self.name} with capacity training_plan: training plans reserve "
                "accelerated compute; run controller and login groups on_demand"
            )
        if self.role is HyperPodGroupRole.CONTROLLER and self.instance_count != 1:
            problems.append(
                f"controller group {self.name} has instance_count {self.instance_count}: HyperPod "
                "Slurm runs one slurmctld node, use 1"
            )
        if problems:
            raise ValueError("\n".join(problems))
        return self

    @property
    def ec2_instance_type(self) -> str:
        """The EC2 type behind the ml.* type (ml.p5.48xlarge -> p5.48xlarge), for catalog lookups."""
        return self.instance_type.removeprefix("ml.")

    @property
    def accelerators(self) -> int:
        """Accelerators in the whole group (0 for CPU controller and login groups outside the catalog)."""
        row = CATALOG.get(self.ec2_instance_type)
        return self.instance_count * row.accelerator_count if row else 0


class HyperPodSpec(Spec):
    """An optional SageMaker HyperPod cluster on trainstack's VPC, EFA security group, FSx and S3."""

    enabled: bool = Field(default=False, description="Create a SageMaker HyperPod cluster.")
    orchestrator: HyperPodOrchestrator = Field(default=HyperPodOrchestrator.EKS, description="eks or slurm.")
    instance_groups: list[HyperPodInstanceGroupSpec] = Field(
        default_factory=list[HyperPodInstanceGroupSpec],
        max_length=Limits.HYPERPOD_GROUPS,
        description="HyperPod instance groups.",
    )
    training_plan_arn: str | None = Field(
        default=None,
        pattern=r"^arn:aws[a-z-]*:sagemaker:[a-z0-9-]+:\d{12}:training-plan/[A-Za-z0-9-]+$",
        examples=["arn:aws:sagemaker:us-east-1:111122223333:training-plan/p5-plan"],
        description="SageMaker training plan (target resource hyperpod-cluster) for training_plan groups.",
    )
    slurm: SlurmSpec = Field(
        default_factory=SlurmSpec, description="Slurm lifecycle settings (orchestrator slurm only)."
    )

    @model_validator(mode="after")
    def _groups(self) -> Self:
        problems: list[str] = []
        names = [g.name for g in self.instance_groups]
        if len(set(names)) != len(names):
            problems.append(f"instance group names must be unique, got {names}")
        planned = [g.name for g in self.instance_groups if g.capacity is HyperPodCapacity.TRAINING_PLAN]
        if planned and self.training_plan_arn is None:
            problems.append(f"instance groups {planned} use capacity training_plan but training_plan_arn is unset")
        if self.training_plan_arn is not None and not planned:
            problems.append(
                "training_plan_arn is set but every instance group is on_demand: set capacity training_plan on "
                "the compute groups the plan reserves, or remove training_plan_arn"
            )
        if self.enabled:
            roles = [g.role for g in self.instance_groups]
            if HyperPodGroupRole.COMPUTE not in roles:
                problems.append("an enabled HyperPod cluster needs at least one compute instance group")
            if self.orchestrator is HyperPodOrchestrator.SLURM:
                if roles.count(HyperPodGroupRole.CONTROLLER) != 1:
                    problems.append(
                        f"a Slurm HyperPod cluster needs exactly one controller instance group, got "
                        f"{roles.count(HyperPodGroupRole.CONTROLLER)}"
                    )
                if roles.count(HyperPodGroupRole.LOGIN) > 1:
                    problems.append("a Slurm HyperPod cluster takes at most one login instance group")
            elif self.slurm != SlurmSpec():  # the defaults (a dumped config carries them) are fine
                problems.append(
                    "slurm settings apply to orchestrator slurm only: remove them or use orchestrator slurm"
                )
            if self.orchestrator is HyperPodOrchestrator.EKS and set(roles) - {HyperPodGroupRole.COMPUTE}:
                problems.append(
                    "an EKS HyperPod cluster takes compute instance groups only: the EKS control plane schedules; "
                    "remove the controller and login groups or use orchestrator slurm"
                )
        if problems:
            raise ValueError("\n".join(problems))
        return self

    def groups(self, role: HyperPodGroupRole) -> list[HyperPodInstanceGroupSpec]:
        return [g for g in self.instance_groups if g.role is role]

    @property
    def accelerators(self) -> int:
        """Accelerators over all instance groups."""
        return sum(g.accelerators for g in self.instance_groups)


class SageMakerSpec(Spec):
    """Optional SageMaker: a HyperPod cluster, and an execution role plus VPC settings for training jobs."""

    hyperpod: HyperPodSpec = Field(default_factory=HyperPodSpec, description="SageMaker HyperPod cluster.")
    training_job_role: bool = Field(
        default=False,
        description="Create an execution role per team (output sagemaker_training_role_arns, by team) and VPC "
        "settings for SageMaker training jobs.",
    )

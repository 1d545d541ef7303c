"""`sagemaker`: the optional HyperPod cluster and training-job role."""

from __future__ import annotations

from enum import StrEnum
from typing import Self

from pydantic import Field, model_validator

from stacks.catalog import CATALOG
from stacks.schema.base import Spec
from stacks.schema.values import Limits


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
        default_factory=list, max_length=Limits.HYPERPOD_GROUPS, description="HyperPod instance groups."
    )
    training_plan_arn: str | None = Field(
        default=None,
        pattern=r"^arn:aws[a-z-]*:sagemaker:[a-z0-9-]+:\d{12}:training-plan/[A-Za-z0-9-]+$",
        examples=["arn:aws:sagemaker:us-east-1:111122223333:training-plan/p5-plan"],
        description="SageMaker training plan (target resource hyperpod-cluster) for training_plan groups.",
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
            elif set(roles) - {HyperPodGroupRole.COMPUTE}:
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
        default=False, description="Create an execution role and VPC settings for SageMaker training jobs."
    )

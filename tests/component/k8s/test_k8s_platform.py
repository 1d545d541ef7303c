"""The Kubernetes platform components under the recording mocks: what each registers, and the ordering."""

from __future__ import annotations

import pulumi

from components.k8s.efa_device_plugin import EfaDevicePlugin, EfaDevicePluginArgs
from components.k8s.gpu_operator import GpuOperator, GpuOperatorArgs
from components.k8s.scheduling import Scheduling, SchedulingArgs
from components.k8s.validation_jobs import ValidationJobs, ValidationJobsArgs
from stacks.schema import (
    AmiFamily,
    EfaDevicePluginSpec,
    GpuNodeGroupSpec,
    GpuOperatorSpec,
    KueueSpec,
    TeamSpec,
    TrainingOperatorSpec,
    ValidationSpec,
)
from tests.component.helpers import k8s_opts
from tests.conftest import run_component

RELEASE = "kubernetes:helm.sh/v3:Release"
CR_KUEUE = "kubernetes:kueue.x-k8s.io/v1beta1:"
IMAGE = "public.ecr.aws/hpc-cloud/nccl-tests:cuda12.8.1-efa1.43.2-ofiv1.16.3-ncclv2.27.7-1-testsv2.16.9"
GROUPS = [
    GpuNodeGroupSpec(
        name="p5", instance_type="p5.48xlarge", availability_zone="us-east-1a", min_size=0, desired_size=0, max_size=4
    ),
    GpuNodeGroupSpec(
        name="trn",
        instance_type="trn1.32xlarge",
        availability_zone="us-east-1a",
        min_size=0,
        desired_size=0,
        max_size=2,
    ),
]
TEAMS = [TeamSpec(name="pretraining", gpu_quota=24), TeamSpec(name="research", gpu_quota=8)]


def test_gpu_operator_installs_the_pinned_chart_in_its_namespace() -> None:
    rec = run_component(
        lambda: GpuOperator(
            "gpu",
            GpuOperatorArgs(
                spec=GpuOperatorSpec(chart_version="v25.3.4"),
                ami_family=AmiFamily.AL2023_NVIDIA,
            ),
            opts=k8s_opts(),
        )
    )
    release = rec.one(RELEASE)
    assert release.inputs["chart"] == "gpu-operator"
    assert release.inputs["version"] == "v25.3.4"
    assert release.inputs["repositoryOpts"]["repo"] == "https://helm.ngc.nvidia.com/nvidia"
    assert release.inputs["namespace"] == "gpu-operator"
    assert release.inputs["values"]["driver"]["enabled"] is False
    assert release.inputs["values"]["toolkit"]["enabled"] is False
    namespace = rec.one("kubernetes:core/v1:Namespace")
    assert namespace.inputs["metadata"]["name"] == "gpu-operator"
    assert namespace.urn in release.dependencies
    component = rec.one("trainstack:k8s:GpuOperator")
    assert all(r.parent == component.urn for r in rec.resources if r.type.startswith("kubernetes:"))
    assert release.provider_urn.endswith("::k8s")


def test_efa_plugin_release_selects_efa_nodes_and_tolerates_the_gpu_taint() -> None:
    rec = run_component(
        lambda: EfaDevicePlugin(
            "efa", EfaDevicePluginArgs(spec=EfaDevicePluginSpec(chart_version="v0.5.29")), opts=k8s_opts()
        )
    )
    release = rec.one(RELEASE)
    assert (release.inputs["chart"], release.inputs["version"], release.inputs["namespace"]) == (
        "aws-efa-k8s-device-plugin",
        "v0.5.29",
        "kube-system",
    )
    assert release.inputs["repositoryOpts"]["repo"] == "https://aws.github.io/eks-charts"
    assert release.inputs["values"]["supportedInstanceLabels"] == {
        "keys": ["vpc.amazonaws.com/efa.present"],
        "values": ["true"],
    }
    gpu_taint = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
    assert gpu_taint in release.inputs["values"]["tolerations"]


def _scheduling(kind: str = "kubeflow_trainer"):
    def build() -> None:
        marker = pulumi.CustomResource("test:index:Marker", "device-plugins")
        Scheduling(
            "sched",
            SchedulingArgs(
                kueue=KueueSpec(chart_version="0.14.8"),
                training_operator=TrainingOperatorSpec(
                    kind=kind, version="2.1.0" if kind == "kubeflow_trainer" else "0.6.0"
                ),
                teams=TEAMS,
                node_groups=GROUPS,
                cohort="trainstack-test",
                after=[marker],
            ),
            opts=k8s_opts(),
        )

    return run_component(build)


def test_scheduling_builds_a_queue_per_group_and_a_local_queue_per_team_and_group() -> None:
    rec = _scheduling()
    flavors = rec.by_type(CR_KUEUE + "ResourceFlavor")
    queues = rec.by_type(CR_KUEUE + "ClusterQueue")
    local = rec.by_type(CR_KUEUE + "LocalQueue")
    assert sorted(q.inputs["metadata"]["name"] for q in queues) == ["p5", "trn"]
    assert len(flavors) == 2 and len(local) == len(TEAMS) * len(GROUPS)
    assert {(lq.inputs["metadata"]["namespace"], lq.inputs["spec"]["clusterQueue"]) for lq in local} == {
        (t.name, g.name) for t in TEAMS for g in GROUPS
    }
    p5 = next(q for q in queues if q.inputs["metadata"]["name"] == "p5")
    flavor = p5.inputs["spec"]["resourceGroups"][0]["flavors"][0]
    resources = {r["name"]: r["nominalQuota"] for r in flavor["resources"]}
    assert resources["nvidia.com/gpu"] == "32" and resources["vpc.amazonaws.com/efa"] == "128"
    kueue = next(r for r in rec.by_type(RELEASE) if r.inputs["chart"].endswith("/kueue"))
    assert kueue.inputs["chart"] == "oci://registry.k8s.io/kueue/charts/kueue"
    assert kueue.inputs["namespace"] == "kueue-system" and kueue.inputs["version"] == "0.14.8"
    for cr in flavors + queues:
        assert kueue.urn in cr.dependencies, cr.name


def test_scheduling_orders_kueue_after_device_plugins_and_the_training_operator() -> None:
    rec = _scheduling()
    marker = rec.one("test:index:Marker")
    releases = {r.inputs["chart"]: r for r in rec.by_type(RELEASE)}
    trainer = releases["oci://ghcr.io/kubeflow/charts/kubeflow-trainer"]
    kueue = releases["oci://registry.k8s.io/kueue/charts/kueue"]
    assert trainer.inputs["version"] == "2.1.0" and trainer.inputs["namespace"] == "kubeflow-system"
    assert marker.urn in trainer.dependencies and marker.urn in kueue.dependencies
    assert trainer.urn in kueue.dependencies


def test_team_namespaces_carry_the_team_label_and_a_gpu_quota() -> None:
    rec = _scheduling()
    namespaces = {n.inputs["metadata"]["name"]: n for n in rec.by_type("kubernetes:core/v1:Namespace")}
    assert namespaces["research"].inputs["metadata"]["labels"]["trainstack.io/team"] == "research"
    quotas = {q.inputs["metadata"]["namespace"]: q for q in rec.by_type("kubernetes:core/v1:ResourceQuota")}
    assert quotas["pretraining"].inputs["spec"]["hard"] == {
        "requests.nvidia.com/gpu": "24",
        "requests.aws.amazon.com/neuron": "24",
    }


def test_mpi_operator_variant_installs_the_release_manifest_and_queues_mpijobs() -> None:
    rec = _scheduling("mpi_operator")
    config = rec.one("kubernetes:yaml/v2:ConfigFile")
    assert config.inputs["file"].endswith("/mpi-operator/v0.6.0/deploy/v2beta1/mpi-operator.yaml")
    kueue = next(r for r in rec.by_type(RELEASE) if r.inputs["chart"].endswith("/kueue"))
    assert "kubeflow.org/mpijob" in kueue.inputs["values"]["managerConfig"]["controllerManagerConfigYaml"]


def _validation(kind: str):
    def build() -> None:
        marker = pulumi.CustomResource("test:index:Marker", "gpu-operator")
        ValidationJobs(
            "val",
            ValidationJobsArgs(
                spec=ValidationSpec(enabled=True, nodes=4, nccl_tests_image=IMAGE),
                node_group=GROUPS[0],
                training_operator_kind=kind,
                after=[marker],
            ),
            opts=k8s_opts(),
        )

    return run_component(build)


def test_validation_jobs_run_through_kueue_after_the_device_plugins() -> None:
    for kind, nccl_type in (
        ("kubeflow_trainer", "kubernetes:trainer.kubeflow.org/v1alpha1:TrainJob"),
        ("mpi_operator", "kubernetes:kubeflow.org/v2beta1:MPIJob"),
    ):
        rec = _validation(kind)
        marker = rec.one("test:index:Marker")
        nccl = rec.one(nccl_type)
        dcgm = rec.one("kubernetes:batch/v1:Job")
        for job in (nccl, dcgm):
            assert job.inputs["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "p5"
            assert job.inputs["metadata"]["annotations"]["pulumi.com/skipAwait"] == "true"
            assert marker.urn in job.dependencies, (kind, job.type)
        queue = rec.one(CR_KUEUE + "LocalQueue")
        assert queue.inputs["spec"]["clusterQueue"] == "p5" and queue.urn in nccl.dependencies


def test_mpijob_workers_request_all_efa_devices() -> None:
    rec = _validation("mpi_operator")
    worker = rec.one("kubernetes:kubeflow.org/v2beta1:MPIJob").inputs["spec"]["mpiReplicaSpecs"]["Worker"]
    limits = worker["template"]["spec"]["containers"][0]["resources"]["limits"]
    assert limits["vpc.amazonaws.com/efa"] == "32" and limits["nvidia.com/gpu"] == "8"

"""The Kubernetes GPU platform in each committed stack, from a whole-program run under the mocks."""

from __future__ import annotations

import pytest

from stacks.catalog import CATALOG
from stacks.schema import HyperPodGroupRole, HyperPodInstanceGroupSpec, HyperPodOrchestrator
from tests.conftest import recording, stack_config

RELEASE = "kubernetes:helm.sh/v3:Release"
GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}


def release(stack: str, chart_suffix: str):
    found = [r for r in recording(stack).by_type(RELEASE) if r.inputs["chart"].endswith(chart_suffix)]
    assert len(found) == 1, f"{stack}: expected one {chart_suffix} release, found {len(found)}"
    return found[0]


def test_prod_gpu_operator_leaves_driver_and_toolkit_to_the_al2023_ami() -> None:
    values = release("prod", "gpu-operator").inputs["values"]
    assert values["driver"]["enabled"] is False and values["toolkit"]["enabled"] is False
    assert values["devicePlugin"]["enabled"] is True
    # GPUs reach containers as volume mounts the nodes' runtime accepts, not as NVIDIA_VISIBLE_DEVICES.
    assert values["devicePlugin"]["env"] == [{"name": "DEVICE_LIST_STRATEGY", "value": "volume-mounts"}]
    assert GPU_TOLERATION in values["daemonsets"]["tolerations"]


def test_chart_versions_come_from_the_stack(stack_name: str) -> None:
    spec = stack_config(stack_name).kubernetes
    assert release(stack_name, "gpu-operator").inputs["version"] == spec.gpu_operator.chart_version
    assert release(stack_name, "/kueue").inputs["version"] == spec.kueue.chart_version


def _hyperpod_eks_groups(stack_name: str) -> list[HyperPodInstanceGroupSpec]:
    hyperpod = stack_config(stack_name).sagemaker.hyperpod
    if not hyperpod.enabled or hyperpod.orchestrator is not HyperPodOrchestrator.EKS:
        return []
    return hyperpod.groups(HyperPodGroupRole.COMPUTE)


def test_efa_plugin_exists_exactly_when_a_group_or_hyperpod_node_has_efa(stack_name: str) -> None:
    efa_groups = [g for g in stack_config(stack_name).gpu_node_groups if g.efa_enabled]
    hyperpod_types = sorted(
        {g.instance_type for g in _hyperpod_eks_groups(stack_name) if CATALOG[g.ec2_instance_type].supports_efa}
    )
    plugins = [r for r in recording(stack_name).by_type(RELEASE) if r.inputs["chart"] == "aws-efa-k8s-device-plugin"]
    assert len(plugins) == (1 if efa_groups or hyperpod_types else 0)
    for plugin in plugins:
        values = plugin.inputs["values"]
        assert GPU_TOLERATION in values["tolerations"]
        assert "nodeSelector" not in values
        assert values["supportedInstanceLabels"]["values"] == ["true", *hyperpod_types]


def test_staging_hyperpod_nodes_get_the_efa_plugin_operands_and_a_queue() -> None:
    # staging joins ml.p5.48xlarge HyperPod workers to its EKS cluster.
    rec = recording("staging")
    health = {
        "key": "sagemaker.amazonaws.com/node-health-status",
        "operator": "Equal",
        "value": "Unschedulable",
        "effect": "NoSchedule",
    }
    efa = release("staging", "aws-efa-k8s-device-plugin").inputs["values"]
    assert efa["supportedInstanceLabels"]["keys"] == [
        "vpc.amazonaws.com/efa.present",
        "node.kubernetes.io/instance-type",
    ]
    assert "ml.p5.48xlarge" in efa["supportedInstanceLabels"]["values"] and health in efa["tolerations"]
    operator = release("staging", "gpu-operator").inputs["values"]
    assert health in operator["daemonsets"]["tolerations"]
    assert health in operator["node-feature-discovery"]["worker"]["tolerations"]
    (group,) = _hyperpod_eks_groups("staging")
    queue = next(
        q
        for q in rec.by_type("kubernetes:kueue.x-k8s.io/v1beta1:ClusterQueue")
        if q.inputs["metadata"]["name"] == f"hyperpod-{group.name}"
    )
    flavor = queue.inputs["spec"]["resourceGroups"][0]["flavors"][0]
    quota = {r["name"]: r["nominalQuota"] for r in flavor["resources"]}
    row = CATALOG[group.ec2_instance_type]
    assert quota["nvidia.com/gpu"] == str(row.accelerator_count * group.instance_count)
    assert quota["vpc.amazonaws.com/efa"] == str(row.max_efa_interfaces * group.instance_count)
    flavors = {f.inputs["metadata"]["name"]: f for f in rec.by_type("kubernetes:kueue.x-k8s.io/v1beta1:ResourceFlavor")}
    assert flavors[f"hyperpod-{group.name}"].inputs["spec"]["nodeLabels"] == {
        "sagemaker.amazonaws.com/instance-group-name": group.name,
        "sagemaker.amazonaws.com/node-health-status": "Schedulable",
    }
    local = {q.inputs["metadata"]["name"] for q in rec.by_type("kubernetes:kueue.x-k8s.io/v1beta1:LocalQueue")}
    assert f"hyperpod-{group.name}" in local


def test_cluster_queue_quotas_match_the_node_groups(stack_name: str) -> None:
    cluster = stack_config(stack_name)
    queues = {
        q.inputs["metadata"]["name"]: q
        for q in recording(stack_name).by_type("kubernetes:kueue.x-k8s.io/v1beta1:ClusterQueue")
    }
    hyperpod = {f"hyperpod-{g.name}" for g in _hyperpod_eks_groups(stack_name)}
    assert set(queues) == {g.name for g in cluster.gpu_node_groups} | hyperpod
    for group in cluster.gpu_node_groups:
        row = CATALOG[group.instance_type]
        flavor = queues[group.name].inputs["spec"]["resourceGroups"][0]["flavors"][0]
        quota = {r["name"]: r["nominalQuota"] for r in flavor["resources"]}
        assert quota[row.device_resource] == str(group.max_gpus)
        if group.efa_enabled:
            assert quota["vpc.amazonaws.com/efa"] == str(group.max_size * row.max_efa_interfaces)
        assert queues[group.name].inputs["spec"]["cohort"] == cluster.name


def test_prod_queues_hold_128_h100_and_512_efa_devices() -> None:
    (queue,) = recording("prod").by_type("kubernetes:kueue.x-k8s.io/v1beta1:ClusterQueue")
    quota = {r["name"]: r["nominalQuota"] for r in queue.inputs["spec"]["resourceGroups"][0]["flavors"][0]["resources"]}
    assert quota["nvidia.com/gpu"] == "128" and quota["vpc.amazonaws.com/efa"] == "512"


def test_every_team_gets_a_namespace_quota_and_local_queues(stack_name: str) -> None:
    cluster = stack_config(stack_name)
    rec = recording(stack_name)
    namespaces = {n.inputs["metadata"]["name"] for n in rec.by_type("kubernetes:core/v1:Namespace")}
    local = {
        (q.inputs["metadata"]["namespace"], q.inputs["metadata"]["name"])
        for q in rec.by_type("kubernetes:kueue.x-k8s.io/v1beta1:LocalQueue")
    }
    quotas = {
        q.inputs["metadata"]["namespace"]: q.inputs["spec"]["hard"]
        for q in rec.by_type("kubernetes:core/v1:ResourceQuota")
        if q.inputs["metadata"]["name"] == "accelerators"
    }
    for team in cluster.kubernetes.teams:
        assert team.name in namespaces
        assert quotas[team.name]["requests.nvidia.com/gpu"] == str(team.gpu_quota)
        assert {(team.name, g.name) for g in cluster.gpu_node_groups} <= local


@pytest.mark.parametrize("stack", ["staging", "prod"])
def test_validation_jobs_run_after_device_plugins_and_use_the_catalog_floor(stack: str) -> None:
    cluster = stack_config(stack)
    rec = recording(stack)
    urns = {r.urn: r for r in rec.resources}
    job = rec.one("kubernetes:trainer.kubeflow.org/v1alpha1:TrainJob")
    dcgm = rec.one("kubernetes:batch/v1:Job")
    (runtime,) = [
        r
        for r in rec.by_type("kubernetes:trainer.kubeflow.org/v1alpha1:ClusterTrainingRuntime")
        if r.name.endswith("validation-nccl-runtime")
    ]
    for resource in (job, dcgm, runtime):
        charts = {urns[d].inputs.get("chart") for d in resource.dependencies if d in urns}
        assert {"gpu-operator", "aws-efa-k8s-device-plugin"} <= charts, resource.name
    assert job.inputs["spec"]["trainer"]["numNodes"] == cluster.kubernetes.validation.nodes
    floor = CATALOG[cluster.gpu_node_groups[0].instance_type].nccl_busbw_floor_gb_s
    (launcher,) = [j for j in runtime.inputs["spec"]["template"]["spec"]["replicatedJobs"] if j["name"] == "launcher"]
    script = launcher["template"]["spec"]["template"]["spec"]["containers"][0]["command"][-1]
    assert f"floor {floor:.1f} GB/s" in script
    assert rec.outputs["nccl_busbw_floor_gb_s"] == floor


def test_dev_has_no_validation_jobs() -> None:
    rec = recording("dev")
    assert not rec.by_type("trainstack:k8s:ValidationJobs")
    assert not rec.by_type("kubernetes:batch/v1:Job")

"""Regressions of the Kubernetes platform found by the review of the pinned charts and CRDs: who owns what
after creation, which jobs Kueue manages, what a chart upgrade does, and the runtimes team TrainJobs run on."""

from __future__ import annotations

import yaml

from components.k8s.training_runtimes import CHECKPOINT_ENV, LUSTRE_MOUNT, runtime_names
from stacks.catalog import CATALOG
from tests.conftest import STACKS, recording, stack_config

RUNTIME = "kubernetes:trainer.kubeflow.org/v1alpha1:ClusterTrainingRuntime"


def _release(stack: str, part: str) -> dict:
    (found,) = [r for r in recording(stack).by_type("kubernetes:helm.sh/v3:Release") if part in r.name]
    return found.inputs


def test_kueue_manages_queue_less_jobs_in_team_namespaces_only() -> None:
    config = yaml.safe_load(_release("prod", "kueue")["values"]["managerConfig"]["controllerManagerConfigYaml"])
    assert config["manageJobsWithoutQueueName"] is True
    assert config["managedJobsNamespaceSelector"] == {
        "matchExpressions": [{"key": "trainstack.io/team", "operator": "Exists"}]
    }
    teams = [r for r in recording("prod").by_type("kubernetes:core/v1:Namespace") if "-team-" in r.name]
    assert teams and all("trainstack.io/team" in t.inputs["metadata"]["labels"] for t in teams)


def test_gpu_operator_upgrades_its_crds_with_the_chart() -> None:
    assert _release("prod", "gpu-operator")["values"]["operator"]["upgradeCRD"] is True


def test_kubernetes_provider_is_identified_by_the_cluster() -> None:
    rec = recording("prod")
    (provider,) = rec.by_type("pulumi:providers:kubernetes")
    (cluster,) = rec.by_type("aws:eks/cluster:Cluster")
    assert provider.inputs["clusterIdentifier"] == cluster.outputs["arn"]


def test_kueue_owns_suspend_after_creation() -> None:
    rec = recording("prod")
    jobs = [
        *rec.by_type("kubernetes:trainer.kubeflow.org/v1alpha1:TrainJob"),
        *rec.by_type("kubernetes:batch/v1:Job"),
    ]
    assert jobs and all(j.inputs["spec"]["suspend"] is True for j in jobs)  # created suspended for Kueue ...
    assert all("spec.suspend" in j.ignore_changes for j in jobs)  # ... and never re-suspended by `pulumi up`


def test_every_gpu_group_gets_a_torch_and_an_mpi_runtime_for_its_nodes() -> None:
    for stack in STACKS:
        cluster = stack_config(stack)
        runtimes = {r.inputs["metadata"]["name"]: r.inputs["spec"] for r in recording(stack).by_type(RUNTIME)}
        for group in cluster.gpu_node_groups:
            row = CATALOG[group.instance_type]
            for name in runtime_names(group).values():
                spec = runtimes[name]
                assert spec["template"]["spec"]["failurePolicy"]["maxRestarts"] == 3
                for job in spec["template"]["spec"]["replicatedJobs"]:
                    pod = job["template"]["spec"]["template"]["spec"]
                    assert pod["tolerations"][0]["key"] == row.device_resource
                    assert job["template"]["spec"]["backoffLimit"] == 0  # the JobSet restarts all ranks together
                    container = pod["containers"][0]
                    env = {e["name"]: e.get("value") for e in container["env"]}
                    if cluster.storage.fsx.enabled:
                        assert env[CHECKPOINT_ENV] == f"{LUSTRE_MOUNT}/checkpoints/$(TRAINSTACK_JOB_NAME)"
                        assert {"name": "fsx", "mountPath": LUSTRE_MOUNT} in container["volumeMounts"]
                    if job["name"] == "node" and group.efa_enabled:
                        assert container["resources"]["limits"]["vpc.amazonaws.com/efa"] == str(row.max_efa_interfaces)

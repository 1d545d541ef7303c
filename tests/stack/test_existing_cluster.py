"""Platform-only mode (issue 34): trainstack's Kubernetes layer on an EKS cluster it does not own, and on a SageMaker
HyperPod cluster's EKS orchestrator, with the cluster's existing FSx for Lustre file system."""

from __future__ import annotations

from typing import Any

import pytest

from stacks.load import load_file
from tests.conftest import ROOT, program_recording
from trainstack.engine import Recording
from trainstack.journeys import team_job
from trainstack.review import review

EXAMPLES = ROOT / "stacks" / "examples"
CREATED_BY_THE_OWNER = (
    "aws:ec2/vpc:Vpc",
    "aws:ec2/subnet:Subnet",
    "aws:eks/cluster:Cluster",
    "aws:eks/nodeGroup:NodeGroup",
    "aws:ec2/launchTemplate:LaunchTemplate",
    "aws:fsx/lustreFileSystem:LustreFileSystem",
)


def planned(example: str) -> tuple[Any, Recording]:
    stack = load_file(EXAMPLES / example)
    return stack, program_recording(stack, stack.environment.value)


def releases(rec: Recording) -> dict[str, dict[str, Any]]:
    return {
        r.inputs["chart"].rsplit("/", 1)[-1]: r.inputs.get("values", {})
        for r in rec.by_type("kubernetes:helm.sh/v3:Release")
    }


@pytest.mark.e2e
def test_the_platform_on_an_existing_cluster_creates_no_cluster_nodes_or_file_system() -> None:
    stack, rec = planned("existing-cluster.yaml")
    assert not [r.type for r in rec.resources if r.type in CREATED_BY_THE_OWNER]
    found = releases(rec)
    assert {"gpu-operator", "aws-efa-k8s-device-plugin", "kueue", "metrics-server"} <= set(found)
    assert "nodeSelector" not in found["metrics-server"]  # no node here carries trainstack's system label
    # The owner's nodes carry no trainstack label: the EFA plugin picks them by instance type.
    assert found["aws-efa-k8s-device-plugin"]["supportedInstanceLabels"]["values"] == ["true", "p5.48xlarge"]
    flavors = {
        r.inputs["metadata"]["name"]: r.inputs["spec"] for r in rec.resources if r.type.endswith(":ResourceFlavor")
    }
    assert flavors["p5"]["nodeLabels"] == {"eks.amazonaws.com/nodegroup": "p5-efa"}
    # The existing file system: the FSx CSI driver add-on on the cluster and a PV on its id.
    (csi,) = [r for r in rec.by_type("aws:eks/addon:Addon") if r.inputs["addonName"] == "aws-fsx-csi-driver"]
    assert csi.inputs["clusterName"] == "ml-platform-eks"
    pvs = rec.by_type("kubernetes:core/v1:PersistentVolume")
    assert pvs and all(pv.inputs["spec"]["csi"]["volumeHandle"] == "fs-0123456789abcdef0" for pv in pvs)
    jobs = list(team_job.walk(team_job.Trip(recording=rec, stack=stack)))
    assert jobs and all(j.holds for j in jobs), [(j.subject, j.broken_step) for j in jobs if not j.holds]
    assert not review(rec, stack.environment.value).mandatory


@pytest.mark.e2e
def test_the_platform_on_a_hyperpod_cluster_leaves_its_device_plugins_to_hyperpod() -> None:
    stack, rec = planned("existing-hyperpod-eks.yaml")
    found = releases(rec)
    assert "gpu-operator" not in found and "aws-efa-k8s-device-plugin" not in found
    flavors = {
        r.inputs["metadata"]["name"]: r.inputs["spec"] for r in rec.resources if r.type.endswith(":ResourceFlavor")
    }
    assert flavors["workers"]["nodeLabels"] == {
        "sagemaker.amazonaws.com/instance-group-name": "worker-group-1",
        "sagemaker.amazonaws.com/node-health-status": "Schedulable",
    }
    jobs = list(team_job.walk(team_job.Trip(recording=rec, stack=stack)))
    assert jobs and all(j.holds for j in jobs)
    assert not review(rec, stack.environment.value).mandatory

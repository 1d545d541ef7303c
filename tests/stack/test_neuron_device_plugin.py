"""The Neuron device plugin in the whole program: installed exactly when a GPU node group is Trainium."""

from __future__ import annotations

import pytest

from stacks.schema import NEURON_HELM_CHART_VERSION
from tests.conftest import recording, stack_config
from tests.stack.test_gpu_swap import swapped
from trainstack.engine import Recording

RELEASE = "kubernetes:helm.sh/v3:Release"
CHART = "oci://public.ecr.aws/neuron/neuron-helm-chart"


def neuron_releases(rec: Recording) -> list:
    return [r for r in rec.by_type(RELEASE) if r.inputs["chart"] == CHART]


def test_committed_stacks_install_no_neuron_plugin(stack_name: str) -> None:
    assert not any(g.instance_type.startswith("trn") for g in stack_config(stack_name).gpu_node_groups)
    assert neuron_releases(recording(stack_name)) == []
    assert recording(stack_name).by_type("trainstack:k8s:NeuronDevicePlugin") == []


@pytest.mark.e2e
def test_prod_swapped_to_trn1n_installs_the_default_pinned_plugin() -> None:
    (release,) = neuron_releases(swapped("trn1n.32xlarge"))
    assert release.inputs["version"] == NEURON_HELM_CHART_VERSION
    assert release.inputs["namespace"] == "kube-system"
    plugin = release.inputs["values"]["devicePlugin"]
    assert plugin["nodeSelector"] == {"trainstack.io/accelerator": "neuron"}
    assert {"key": "aws.amazon.com/neuron", "operator": "Exists", "effect": "NoSchedule"} in plugin["tolerations"]


@pytest.mark.e2e
def test_kueue_waits_for_the_neuron_plugin_and_nvidia_only_jobs_are_not_planned() -> None:
    rec = swapped("trn1n.32xlarge")
    (release,) = neuron_releases(rec)
    kueue = [r for r in rec.by_type(RELEASE) if r.inputs["chart"].endswith("/kueue")]
    assert kueue and all(release.urn in r.dependencies for r in kueue)
    # Prod enables the validation jobs, but NCCL-over-EFA and DCGM are NVIDIA-only: none on a Trainium cluster.
    assert rec.by_type("trainstack:k8s:ValidationJobs") == []


@pytest.mark.e2e
def test_prod_swapped_to_an_nvidia_type_installs_no_neuron_plugin() -> None:
    assert neuron_releases(swapped("p5en.48xlarge")) == []

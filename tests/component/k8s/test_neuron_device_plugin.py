"""The Neuron device plugin component under the recording mocks: the release it registers and its ordering."""

from __future__ import annotations

import pulumi

from components.k8s.neuron_device_plugin import NeuronDevicePlugin, NeuronDevicePluginArgs, neuron_device_plugin_values
from stacks.schema import NeuronDevicePluginSpec
from tests.component.helpers import k8s_opts
from tests.conftest import run_component

RELEASE = "kubernetes:helm.sh/v3:Release"


def _build(spec: NeuronDevicePluginSpec) -> None:
    marker = pulumi.CustomResource("test:index:Marker", "cluster")
    NeuronDevicePlugin("neuron", NeuronDevicePluginArgs(spec=spec, after=[marker]), opts=k8s_opts())


def test_release_installs_the_pinned_oci_chart_in_kube_system() -> None:
    rec = run_component(lambda: _build(NeuronDevicePluginSpec(chart_version="1.8.0")))
    release = rec.one(RELEASE)
    assert (release.inputs["chart"], release.inputs["version"], release.inputs["namespace"]) == (
        "oci://public.ecr.aws/neuron/neuron-helm-chart",
        "1.8.0",
        "kube-system",
    )
    assert "repositoryOpts" not in release.inputs  # an OCI chart reference needs no repository
    assert release.inputs["atomic"] is True and release.inputs["cleanupOnFail"] is True
    assert release.inputs["values"] == neuron_device_plugin_values()


def test_release_selects_neuron_nodes_and_tolerates_the_neuron_taint_only() -> None:
    values = run_component(lambda: _build(NeuronDevicePluginSpec())).one(RELEASE).inputs["values"]
    assert values["devicePlugin"]["nodeSelector"] == {"trainstack.io/accelerator": "neuron"}
    assert values["devicePlugin"]["tolerations"] == [
        {"key": "aws.amazon.com/neuron", "operator": "Exists", "effect": "NoSchedule"}
    ]
    assert values["scheduler"]["enabled"] is False and values["npd"]["enabled"] is False


def test_release_is_a_child_on_the_k8s_provider_after_the_cluster() -> None:
    rec = run_component(lambda: _build(NeuronDevicePluginSpec()))
    component = rec.one("trainstack:k8s:NeuronDevicePlugin")
    release = rec.one(RELEASE)
    assert release.parent == component.urn
    assert release.provider_urn.endswith("::k8s")
    assert rec.one("test:index:Marker").urn in release.dependencies
    assert release.name.startswith("neuron")

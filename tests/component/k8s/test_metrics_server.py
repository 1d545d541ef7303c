"""The metrics-server component under the recording mocks: the release it registers, its values and ordering."""

from __future__ import annotations

import pulumi

from components.eks.eks import NODE_ROLE_LABEL
from components.k8s.metrics_server import MetricsServer, MetricsServerArgs, metrics_server_values
from stacks.schema import METRICS_SERVER_CHART_VERSION, MetricsServerSpec
from tests.component.helpers import k8s_opts
from tests.conftest import run_component

RELEASE = "kubernetes:helm.sh/v3:Release"


def _build(spec: MetricsServerSpec, system_nodes: bool = True) -> None:
    marker = pulumi.CustomResource("test:index:Marker", "cluster")
    args = MetricsServerArgs(spec=spec, after=[marker], system_nodes=system_nodes)
    MetricsServer("metrics-server", args, opts=k8s_opts())


def test_release_installs_the_pinned_chart_from_its_repository_in_kube_system() -> None:
    release = run_component(lambda: _build(MetricsServerSpec(chart_version="3.12.2"))).one(RELEASE)
    assert (release.inputs["chart"], release.inputs["version"], release.inputs["namespace"]) == (
        "metrics-server",
        "3.12.2",
        "kube-system",
    )
    assert release.inputs["repositoryOpts"] == {"repo": "https://kubernetes-sigs.github.io/metrics-server/"}
    assert release.inputs["atomic"] is True and release.inputs["cleanupOnFail"] is True


def test_default_spec_pins_the_version_whose_facts_are_recorded() -> None:
    release = run_component(lambda: _build(MetricsServerSpec())).one(RELEASE)
    assert release.inputs["version"] == METRICS_SERVER_CHART_VERSION


def test_two_replicas_a_disruption_budget_and_the_system_nodes() -> None:
    values = run_component(lambda: _build(MetricsServerSpec())).one(RELEASE).inputs["values"]
    assert values == metrics_server_values()
    assert values["replicas"] == 2
    assert values["podDisruptionBudget"] == {"enabled": True, "minAvailable": 1}
    assert values["nodeSelector"] == {NODE_ROLE_LABEL: "system"}


def test_on_a_cluster_without_trainstacks_system_nodes_it_selects_no_node() -> None:
    """No node of an existing cluster carries trainstack's system label: a selector on it would leave the pods
    Pending."""
    values = run_component(lambda: _build(MetricsServerSpec(), system_nodes=False)).one(RELEASE).inputs["values"]
    assert values == {"replicas": 2, "podDisruptionBudget": {"enabled": True, "minAvailable": 1}}


def test_release_is_a_child_on_the_k8s_provider_after_the_cluster() -> None:
    rec = run_component(lambda: _build(MetricsServerSpec()))
    component = rec.one("trainstack:k8s:MetricsServer")
    release = rec.one(RELEASE)
    assert release.parent == component.urn
    assert release.provider_urn.endswith("::k8s")
    assert rec.one("test:index:Marker").urn in release.dependencies
    assert release.name == "metrics-server-release"

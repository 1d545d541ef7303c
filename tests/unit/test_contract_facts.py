"""The recorded contract facts: every pinned chart and CRD has them, and the extraction table matches the files."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

from stacks.compatibility import kueue_trainer_problem
from stacks.schema import NEURON_HELM_CHART_VERSION
from tests.conftest import STACKS, stack_config
from trainstack.contracts.facts import (
    CHARTS_DIR,
    CRDS_DIR,
    ITEM,
    CrdFacts,
    Source,
    all_crd_facts,
    chart_facts,
    chart_file,
    child,
    crd_facts,
    crd_file,
    join,
    json_type,
    key_segment,
    write_json,
)
from trainstack.journeys.workload_facts import WORKLOADS_DIR, chart_workloads

ROOT = Path(__file__).resolve().parents[2]


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "extract_contract_facts", ROOT / "scripts" / "extract_contract_facts.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("stack", STACKS)
def test_every_pinned_chart_and_operator_has_facts(stack: str) -> None:
    """A pin that changes without its facts fails here (and the plan refuses it)."""
    k8s = stack_config(stack).kubernetes
    for chart, version in [
        ("gpu-operator", k8s.gpu_operator.chart_version),
        ("aws-efa-k8s-device-plugin", k8s.efa_device_plugin.chart_version),
        ("kueue", k8s.kueue.chart_version),
        ("kubeflow-trainer", k8s.training_operator.version),
    ]:
        assert chart_facts(chart, version) is not None, f"{stack}: no facts for {chart} {version}"
        assert chart_workloads(chart, version) is not None, f"{stack}: no workload facts for {chart} {version}"
    for kind in ("ResourceFlavor", "ClusterQueue", "LocalQueue"):
        assert any(f.operator == ("kueue", k8s.kueue.chart_version) for f in crd_facts("kueue.x-k8s.io/v1beta1", kind))
    for kind in ("TrainJob", "ClusterTrainingRuntime"):
        facts = crd_facts("trainer.kubeflow.org/v1alpha1", kind)
        assert any(f.operator == ("kubeflow-trainer", k8s.training_operator.version) for f in facts)
    assert kueue_trainer_problem(k8s.kueue.chart_version, k8s.training_operator.version) is None


# Every chart the schema pins by default (a stack that leaves the version out installs it): chart -> default.
def _default_pins() -> dict[str, str]:
    from stacks.schema import MetricsServerSpec, NeuronDevicePluginSpec
    from stacks.schema.health import GRAFANA_CHART, KUBE_STATE_METRICS_CHART, NODE_EXPORTER_CHART, YACE_CHART

    return {
        "metrics-server": MetricsServerSpec().chart_version,
        "neuron-helm-chart": NeuronDevicePluginSpec().chart_version,
        "prometheus-node-exporter": NODE_EXPORTER_CHART,
        "kube-state-metrics": KUBE_STATE_METRICS_CHART,
        "prometheus-yet-another-cloudwatch-exporter": YACE_CHART,
        "grafana": GRAFANA_CHART,
    }


# Issue 34, item 1: the one default pin without facts, and why (docs/contracts.md says how to add them).
NO_FACTS_YET = {"neuron-helm-chart"}


@pytest.mark.parametrize(("chart", "version"), sorted(_default_pins().items()))
def test_every_default_pin_has_values_and_workload_facts(chart: str, version: str) -> None:
    if chart in NO_FACTS_YET:
        assert chart_facts(chart, version) is None and chart_workloads(chart, version) is None
        return
    assert chart_facts(chart, version) is not None, f"no values facts for the default {chart} {version}"
    assert chart_workloads(chart, version) is not None, f"no workload facts for the default {chart} {version}"


def test_the_neuron_chart_default_has_no_facts_yet() -> None:
    # aws-neuron/neuron-helm-charts publishes no git tags, and the snapshot the research tooling brings is at chart
    # 1.0.0 (2024-09); the code index holds 1.9.0's Chart.yaml and values.yaml (commit b77a6f90) but its templates
    # only at other, unordered commits, so no tree of 1.9.0 can be rendered. A Neuron stack's plan refuses the
    # release until its facts exist. This test fails (and should be deleted) once they do.
    assert chart_facts("neuron-helm-chart", NEURON_HELM_CHART_VERSION) is None


def test_the_extraction_table_and_the_facts_files_agree() -> None:
    script = _script()
    charts = {f"{row.chart}@{row.version}.json" for row in script.CHARTS}
    assert charts == {p.name for p in CHARTS_DIR.glob("*.json")}
    assert charts == {p.name for p in WORKLOADS_DIR.glob("*.json")}  # every chart's workloads, rendered
    for path in CRDS_DIR.glob("*.json"):
        data = json.loads(path.read_text())
        assert any(
            (row.repository, row.tag, row.path, row.installed_by)
            == (data["source"]["repository"], data["source"]["tag"], data["source"]["path"], data["installed_by"])
            for row in script.CRDS
        ), path.name
    assert len({(r.repository, r.tag, r.path) for r in script.CRDS}) == len(script.CRDS)


def test_facts_are_facts_not_copies() -> None:
    """No upstream prose: no descriptions, no comments, no templates; every file names its source."""
    for path in [*CHARTS_DIR.glob("*.json"), *CRDS_DIR.glob("*.json"), *WORKLOADS_DIR.glob("*.json")]:
        data = json.loads(path.read_text())
        assert set(data["source"]) == {"repository", "tag", "path"}
        assert '"description"' not in path.read_text() and "{{" not in path.read_text()


def test_flattening_quotes_dotted_keys_and_marks_free_maps() -> None:
    script = _script()
    values: dict[str, str] = {}
    free: set[str] = set()
    script.flatten_values({"a": {"b.c": 1, "d": {}}, "e": [1]}, "", values, free)
    assert values == {"": "object", "a": "object", 'a."b.c"': "integer", "a.d": "object", "e": "array"}
    assert free == {"a.d"}


def test_a_values_schema_is_enforced_where_a_chart_has_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """None of today's pinned charts ships values.schema.json; the path that checks one still works."""
    from trainstack.contracts import helm_values
    from trainstack.contracts.facts import ChartFacts, Source
    from trainstack.engine import RecordedResource, Recording

    fields: dict = {}
    _script().flatten_schema(
        {
            "type": "object",
            "required": ["replicas"],
            "properties": {"replicas": {"type": "integer", "minimum": 1}, "mode": {"enum": ["a", "b"]}},
        },
        "",
        fields,
    )
    source = Source("example/chart", "v1.0.0", "chart/values.schema.json")
    facts = ChartFacts(
        "demo", "1.0.0", source, {"": "object", "replicas": "integer", "mode": "string"}, frozenset(), fields, source
    )
    monkeypatch.setattr(helm_values, "chart_facts", lambda chart, version: facts)
    release = RecordedResource(
        type="kubernetes:helm.sh/v3:Release",
        name="demo",
        urn="urn:pulumi:s::p::kubernetes:helm.sh/v3:Release::demo",
        parent="",
        custom=True,
        inputs={"chart": "demo", "version": "1.0.0", "values": {"replicas": 0, "mode": "c"}},
        dependencies=(),
        property_dependencies={},
        protect=False,
        retain_on_delete=False,
        provider="",
    )
    found = {v.path: v for v in helm_values.check(Recording("s", False, (release,), {}))}
    assert "must be >= 1" in found["values.replicas"].rule and "must be one of" in found["values.mode"].rule
    assert found["values.mode"].source == "example/chart@v1.0.0:chart/values.schema.json"


def test_metrics_server_values_are_keys_of_its_pinned_chart() -> None:
    from components.k8s.metrics_server import metrics_server_values

    facts = chart_facts("metrics-server", _default_pins()["metrics-server"])
    assert facts is not None
    for key in ("replicas", "podDisruptionBudget.enabled", "podDisruptionBudget.minAvailable", "nodeSelector"):
        assert key in facts.values or any(key.startswith(f + ".") for f in facts.free_maps), key
    assert metrics_server_values()["nodeSelector"] == {"trainstack.io/node-role": "system"}


# --- the path and type vocabulary every facts file is written and read in ---


@pytest.mark.parametrize(
    ("key", "segment"),
    [
        ("replicas", "replicas"),
        ("Job.batch", '"Job.batch"'),  # a dot would split the path
        ("a[0]", '"a[0]"'),  # an opening bracket alone is enough
        ("b]", '"b]"'),
        ('say"hi', '"say\\"hi"'),  # a quote is escaped inside the quotes
        ("*", '"*"'),  # a literal star key, not the free-map wildcard
        ("**", "**"),  # only the one-character wildcard is reserved
        ("", ""),
    ],
)
def test_a_key_is_quoted_only_when_it_would_be_read_as_path_syntax(key: str, segment: str) -> None:
    assert key_segment(key) == segment


def test_joining_path_segments() -> None:
    assert join("", "spec") == "spec"  # no leading dot at the root
    assert join("spec", "flavors") == "spec.flavors"
    assert join("spec.flavors", ITEM) == "spec.flavors[]"  # a list's items take no dot
    assert join("", ITEM) == "[]"
    assert child("spec", "Job.batch") == 'spec."Job.batch"'
    assert child("", "x") == "x"
    assert child("spec.flavors[]", "name") == "spec.flavors[].name"


@pytest.mark.parametrize(
    ("value", "name"),
    [
        (None, "null"),
        (True, "boolean"),  # a bool is an int in Python, not in JSON schema
        (False, "boolean"),
        (0, "integer"),
        (3, "integer"),
        (2.0, "integer"),  # YAML's 2.0 is read as an integer by the API
        (2.5, "number"),
        ("2", "string"),
        ("", "string"),
        ([], "array"),
        ([1], "array"),
        ({}, "object"),
        ({"a": 1}, "object"),
    ],
)
def test_json_type_names_each_yaml_value(value: object, name: str) -> None:
    assert json_type(value) == name


def test_a_source_and_a_crd_name_where_they_come_from() -> None:
    source = Source("kubernetes-sigs/kueue", "v0.14.8", "charts/kueue/crds/x.yaml")
    assert str(source) == "kubernetes-sigs/kueue@v0.14.8:charts/kueue/crds/x.yaml"
    crd = CrdFacts("kueue.x-k8s.io", "ClusterQueue", "v1beta1", source, "kueue@v0.14.8", {})
    assert crd.api_version == "kueue.x-k8s.io/v1beta1"
    assert crd.operator == ("kueue", "0.14.8")  # the leading v goes, as in a chart pin
    assert CrdFacts("g", "K", "v1", source, "vpc-cni@1.22.4", {}).operator == ("vpc-cni", "1.22.4")


def test_every_facts_file_is_where_its_reader_and_writer_name_it() -> None:
    charts = sorted(CHARTS_DIR.glob("*.json"))
    crds = sorted(CRDS_DIR.glob("*.json"))
    assert charts and crds
    for path in charts:
        data = json.loads(path.read_text())
        assert chart_file(data["chart"], data["version"]) == path
    for path in crds:
        data = json.loads(path.read_text())
        assert crd_file(data["group"], data["kind"], data["version"], data["source"]["tag"]) == path


def test_chart_facts_are_read_from_the_file_of_that_version() -> None:
    read = chart_facts.__wrapped__  # uncached, so this test runs the reader itself
    path = CHARTS_DIR / "gpu-operator@v25.3.4.json"
    data = json.loads(path.read_text())
    facts = read("gpu-operator", "v25.3.4")
    assert facts is not None
    assert (facts.chart, facts.version) == ("gpu-operator", "v25.3.4")
    assert str(facts.source) == "NVIDIA/gpu-operator@v25.3.4:deployments/gpu-operator/values.yaml"
    assert facts.values == data["values"] and facts.values["driver.enabled"] == "boolean"
    assert facts.free_maps == frozenset(data["free_maps"]) and facts.free_maps
    assert facts.schema == {} and facts.schema_source is None  # the chart ships no values.schema.json
    assert read("gpu-operator", "25.3.4") == facts  # a leading v on either side is ignored
    assert read("kueue", "v0.14.8") == read("kueue", "0.14.8") is not None
    assert read("gpu-operator", "v25.3.5") is None  # another version has no facts
    assert read("no-such-chart", "1.0.0") is None


def test_chart_facts_read_a_values_schema_and_its_source(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from trainstack.contracts import facts

    schema_source = {"repository": "example/chart", "tag": "v1.0.0", "path": "chart/values.schema.json"}
    data = {
        "chart": "demo",
        "version": "1.0.0",
        "source": {"repository": "example/chart", "tag": "v1.0.0", "path": "chart/values.yaml"},
        "values": {"": "object", "replicas": "integer"},
        "free_maps": [],
        "schema": {"source": schema_source, "fields": {"replicas": {"minimum": 1}}},
    }
    write_json(tmp_path / "demo@1.0.0.json", data)
    monkeypatch.setattr(facts, "CHARTS_DIR", tmp_path)
    found = facts.chart_facts.__wrapped__("demo", "v1.0.0")
    assert found is not None
    assert found.schema == {"replicas": {"minimum": 1}}
    assert str(found.schema_source) == "example/chart@v1.0.0:chart/values.schema.json"
    assert str(found.source) == "example/chart@v1.0.0:chart/values.yaml"


def test_every_crd_facts_file_is_read_once_with_its_fields() -> None:
    found = all_crd_facts.__wrapped__()  # uncached, so this test runs the reader itself
    paths = sorted(CRDS_DIR.glob("*.json"))
    assert isinstance(found, tuple) and len(found) == len(paths)
    for facts, path in zip(found, paths, strict=True):
        data = json.loads(path.read_text())
        assert (facts.group, facts.kind, facts.version) == (data["group"], data["kind"], data["version"])
        assert facts.installed_by == data["installed_by"] and facts.fields == data["fields"]
        assert facts.source == Source(**data["source"])


def test_crd_facts_match_both_the_api_version_and_the_kind() -> None:
    queues = crd_facts("kueue.x-k8s.io/v1beta1", "ClusterQueue")
    assert [(f.api_version, f.kind) for f in queues] == [("kueue.x-k8s.io/v1beta1", "ClusterQueue")]
    assert crd_facts("kueue.x-k8s.io/v1beta1", "TrainJob") == []  # the group serves no such kind
    assert crd_facts("trainer.kubeflow.org/v1alpha1", "ClusterQueue") == []  # the kind is of another group
    assert crd_facts("kueue.x-k8s.io/v1", "ClusterQueue") == []  # a version not served
    requests = crd_facts("autoscaling.x-k8s.io/v1beta1", "ProvisioningRequest")
    assert [f.version for f in requests] == ["v1beta1"]  # one CRD, two served versions: only the asked one


def test_facts_files_are_written_sorted_one_field_a_line(tmp_path: Path) -> None:
    first = tmp_path / "charts" / "new" / "a.json"  # directories that do not exist yet are made
    write_json(first, {"b": 1, "a": {"d": [2], "c": None}})
    assert first.read_text() == '{\n "a": {\n  "c": null,\n  "d": [\n   2\n  ]\n },\n "b": 1\n}\n'
    second = first.with_name("b.json")  # a second file into a directory that now exists
    write_json(second, {})
    assert second.read_text() == "{}\n"

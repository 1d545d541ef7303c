"""The Helm values contract (trainstack/contracts/helm_values.py) on a hand-written chart: keys the chart defines,
types, free maps, keys templates read, hints for a misspelt key, and releases whose chart or version has no facts.
The recorded charts and the shipped stacks' releases are held in tests/stack/test_k8s_contracts.py."""

from __future__ import annotations

from typing import Any

import pytest

from trainstack.contracts import helm_values
from trainstack.contracts.facts import ChartFacts, Source
from trainstack.engine import UNKNOWN, RecordedResource, Recording
from trainstack.tokens import HELM_RELEASE

SOURCE = Source("example/charts", "v1.0.0", "charts/demo/values.yaml")
FACTS = ChartFacts(
    chart="demo",
    version="1.0.0",
    source=SOURCE,
    values={
        "": "object",
        "replicas": "integer",
        "ratio": "number",
        "image": "object",
        "image.repository": "string",
        "image.tag": "string",
        "image.pullPolicy": "string",
        "nodeSelector": "object",
        "tolerations": "array",
        "extra": "null",
        "enabled": "boolean",
        "labels": "object",  # an object whose default is set but holds no key of its own
        "resources": "object",
        "resources.limits": "object",
        "resources.limits.cpu": "string",
        "resources.limits.memory": "string",
    },
    free_maps=frozenset({"nodeSelector"}),
    schema={},
    schema_source=None,
)


def _problems(values: Any, facts: ChartFacts = FACTS) -> list[tuple[str, Any, str]]:
    return list(helm_values.values_problems(facts, values))


def test_keys_and_types_the_chart_defines_pass() -> None:
    values = {
        "replicas": 2,
        "ratio": 1,  # an integer where the default is a number
        "image": {"repository": "r", "tag": "t"},
        "nodeSelector": {"any/label": "x", "deeper": {"too": 1}},  # a free map takes any key
        "tolerations": [{"key": "k"}],  # a list is replaced whole
        "extra": {"whatever": [1]},  # a null default takes any type
        "enabled": False,
    }
    assert _problems(values) == []


def test_a_key_the_chart_lacks_is_refused_with_the_closest_sibling() -> None:
    assert _problems({"image": {"pullPolcy": "Always"}}) == [
        ("image.pullPolcy", "Always", "is not a key of the chart's values.yaml; did you mean `image.pullPolicy`?")
    ]
    assert _problems({"replica": 3}) == [
        ("replica", 3, "is not a key of the chart's values.yaml; did you mean `replicas`?")
    ]
    assert _problems({"zzzzzz": 1}) == [("zzzzzz", 1, "is not a key of the chart's values.yaml")]


def test_a_misplaced_key_is_hinted_at_among_the_top_level_keys() -> None:
    # Under an object the chart gives no keys of its own, the top-level keys are offered.
    (found,) = _problems({"labels": {"replicas": 2}})
    assert found[0] == "labels.replicas" and found[2].endswith("did you mean `replicas`?")
    (nested,) = _problems({"image": {"replicas": 2}})  # under image, its own keys are the candidates
    assert nested[2].endswith("did you mean `image.repository`?")
    (deeper,) = _problems({"resources": {"limits": {"cpus": "1"}}})  # two levels down: that level's keys
    assert deeper[0] == "resources.limits.cpus" and deeper[2].endswith("did you mean `resources.limits.cpu`?")
    # The top-level fallback offers top-level keys only, not a nested key that happens to look alike.
    assert _problems({"labels": {"repository": "r"}}) == [
        ("labels.repository", "r", "is not a key of the chart's values.yaml")
    ]


def test_a_value_of_another_type_is_refused_and_not_walked_into() -> None:
    assert _problems({"replicas": "2"}) == [
        ("replicas", "2", "must be integer (the chart's default is one), not string")
    ]
    assert _problems({"ratio": "x"}) == [("ratio", "x", "must be number (the chart's default is one), not string")]
    assert _problems({"image": ["r"]}) == [("image", ["r"], "must be object (the chart's default is one), not array")]
    assert _problems({"enabled": 1}) == [("enabled", 1, "must be boolean (the chart's default is one), not integer")]


def test_unknown_values_and_template_keys_are_not_judged(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _problems({"replicas": UNKNOWN, "image": UNKNOWN}) == []
    assert _problems(UNKNOWN) == [] and _problems(["not", "a", "map"]) == []
    monkeypatch.setitem(helm_values.TEMPLATE_KEYS, "demo", {"image.digest": "templates/deployment.yaml"})
    assert _problems({"image": {"digest": "sha256:0"}, "digest": 1})[0][0] == "digest"  # only where the template reads
    assert len(_problems({"image": {"digest": "sha256:0"}})) == 0


@pytest.mark.parametrize(
    ("chart", "name"),
    [
        ("gpu-operator", "gpu-operator"),
        ("oci://registry.k8s.io/kueue/charts/kueue", "kueue"),
        ("oci://registry.k8s.io/kueue/charts/kueue/", "kueue"),
        ("/work/checkout/helm_chart/HyperPodHelmChart", "hyperpod-helm-chart"),
    ],
)
def test_the_chart_name_of_a_release(chart: str, name: str) -> None:
    assert helm_values.chart_name(chart) == name


# ----------------------------------------------------------------------------------------- releases


def _release(chart: Any, version: Any, values: Any = None) -> RecordedResource:
    inputs = {"chart": chart, "version": version, **({"values": values} if values is not None else {})}
    return RecordedResource(HELM_RELEASE, "rel", "urn:rel", "", True, inputs, (), {}, False, False, "")


def _check(*releases: RecordedResource) -> list[tuple[str, str, str, str]]:
    return [(v.path, v.value, v.rule, v.source) for v in helm_values.check(Recording("s", False, releases, {}))]


def test_a_release_is_held_against_its_recorded_chart() -> None:
    assert _check(_release("gpu-operator", "v25.3.4", {"driver": {"enabled": False}})) == []
    assert _check(_release("gpu-operator", "v25.3.4")) == []  # no values: the chart's defaults
    ((path, value, rule, source),) = _check(_release("gpu-operator", "v25.3.4", {"driver": {"enabeld": False}}))
    assert (path, value) == ("values.driver.enabeld", "false")
    assert rule == "gpu-operator v25.3.4: driver.enabeld is not a key of the chart's values.yaml; did you mean " + (
        "`driver.enabled`?"
    )
    assert source == "NVIDIA/gpu-operator@v25.3.4:deployments/gpu-operator/values.yaml"


def test_a_chart_version_without_facts_is_refused() -> None:
    ((path, value, rule, source),) = _check(_release("gpu-operator", "v0.0.1", {"anything": 1}))
    assert (path, value) == ("version", "gpu-operator@v0.0.1") and source.endswith("contracts/facts/charts")
    assert rule.startswith("no recorded values contract for chart gpu-operator v0.0.1")


def test_a_missing_chart_names_the_facts_directory_from_the_repository_root() -> None:
    ((_, _, _, source),) = _check(_release("gpu-operator", "v0.0.1"))
    assert source == "trainstack/contracts/facts/charts"


def test_a_release_not_yet_known_is_not_judged() -> None:
    assert _check(_release(None, "v25.3.4"), _release("gpu-operator", None), _release(3, "1.0.0")) == []


def test_a_values_schema_is_applied_with_its_own_source(monkeypatch: pytest.MonkeyPatch) -> None:
    schema_source = Source("example/charts", "v1.0.0", "charts/demo/values.schema.json")
    schema = {"": {"type": "object"}, "replicas": {"type": "integer", "minimum": 1}}
    facts = ChartFacts("demo", "1.0.0", SOURCE, FACTS.values, FACTS.free_maps, schema, schema_source)
    monkeypatch.setattr(helm_values, "chart_facts", lambda chart, version: facts if chart == "demo" else None)
    assert _check(_release("demo", "1.0.0", {"replicas": 0})) == [
        ("values.replicas", "0", "demo 1.0.0 values schema: replicas must be >= 1", str(schema_source))
    ]
    without_source = ChartFacts("demo", "1.0.0", SOURCE, FACTS.values, FACTS.free_maps, schema, None)
    monkeypatch.setattr(helm_values, "chart_facts", lambda chart, version: without_source)
    assert _check(_release("demo", "1.0.0", {"replicas": 0})) == []

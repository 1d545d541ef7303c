"""Every Helm release's values against the recorded values of its chart at the pinned version.

Helm merges the values it is given over the chart's `values.yaml` and ignores a key no template reads: a
misspelled or misplaced key installs the chart's default silently. So every key path a release sets must be a
key path the chart's `values.yaml` defines at that version (`facts/charts/`), with a value of the same type, or
be one of the few keys a template reads without a default (TEMPLATE_KEYS, each with the template that reads
it). Under a map the chart leaves empty (`nodeSelector: {}`) any key goes; a list is replaced whole. Where the
chart has a `values.schema.json`, the values must also pass it. A release whose chart version has no recorded
facts is refused: its contract is unknown.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator
from typing import Any

from trainstack.contracts import ContractViolation, render_value
from trainstack.contracts.crds import schema_problems
from trainstack.contracts.facts import CHARTS_DIR, ChartFacts, chart_facts, child, json_type
from trainstack.engine import UNKNOWN, RecordedResource, Recording
from trainstack.tokens import HELM_RELEASE

# Keys a chart's templates read although its values.yaml does not define them, per chart: path -> the template.
# Keep it short: prefer keys values.yaml defines.
TEMPLATE_KEYS: dict[str, dict[str, str]] = {
    # values.yaml has it only as a commented-out example; the templates read its name, create and data.
    "gpu-operator": {"dcgmExporter.config": "templates/dcgm_exporter_config.yaml, templates/clusterpolicy.yaml"},
    # Every section under grafana.ini becomes a section of the rendered grafana.ini (templates/_config.tpl ranges
    # over the map), so any Grafana setting is read, not only those values.yaml sets.
    "grafana": {'"grafana.ini".auth': "templates/_config.tpl"},
}


# Charts installed from a local checkout: the release's `chart` is a directory, whose Chart.yaml names the chart.
LOCAL_CHART_DIRECTORIES = {"HyperPodHelmChart": "hyperpod-helm-chart"}  # aws/sagemaker-hyperpod-cli helm_chart/


def chart_name(chart: str) -> str:
    """The chart's name from a release's `chart` input (a bare name, an `oci://` reference or a local directory)."""
    last = chart.rstrip("/").rsplit("/", 1)[-1]
    return LOCAL_CHART_DIRECTORIES.get(last, last)


def _compatible(expected: str, value: Any) -> bool:
    actual = json_type(value)
    return expected == "null" or actual == expected or (expected == "number" and actual == "integer")


def values_problems(facts: ChartFacts, values: Any, path: str = "") -> Iterator[tuple[str, Any, str]]:
    """(path, value, rule) for every key of `values` the chart does not define or defines with another type."""
    if not isinstance(values, dict):
        return
    template_keys = TEMPLATE_KEYS.get(facts.chart, {})
    for key, value in values.items():
        here = child(path, str(key))
        if value == UNKNOWN:
            continue
        if here in template_keys:
            continue
        if here not in facts.values:
            siblings = [p for p in facts.values if p.rsplit(".", 1)[0] == path and p != path] if path else []
            siblings = siblings or [p for p in facts.values if "." not in p and p]
            close = difflib.get_close_matches(here, siblings, n=1, cutoff=0.6)
            hint = f"; did you mean `{close[0]}`?" if close else ""
            yield here, value, f"is not a key of the chart's values.yaml{hint}"
            continue
        expected = facts.values[here]
        if not _compatible(expected, value):
            yield here, value, f"must be {expected} (the chart's default is one), not {json_type(value)}"
        elif isinstance(value, dict) and expected == "object" and here not in facts.free_maps:
            yield from values_problems(facts, value, here)


def _violation(release: RecordedResource, path: str, value: Any, rule: str, source: str) -> ContractViolation:
    return ContractViolation(urn=release.urn, path=path, value=render_value(value), rule=rule, source=source)


def check(recording: Recording) -> Iterator[ContractViolation]:
    for release in recording.by_type(HELM_RELEASE):
        chart, version = release.inputs.get("chart"), release.inputs.get("version")
        if not isinstance(chart, str) or not isinstance(version, str):
            continue  # unknown in preview: nothing to hold it against yet
        name = chart_name(chart)
        facts = chart_facts(name, version)
        if facts is None:
            yield _violation(
                release,
                "version",
                f"{name}@{version}",
                f"no recorded values contract for chart {name} {version}: add its row to "
                "scripts/extract_contract_facts.py (CHARTS) and extract its facts before pinning it",
                str(CHARTS_DIR.relative_to(CHARTS_DIR.parents[3])),  # from the repository root, as crds names its facts
            )
            continue
        values = release.inputs.get("values") or {}
        for path, value, rule in values_problems(facts, values):
            yield _violation(release, f"values.{path}", value, f"{name} {version}: {path} {rule}", str(facts.source))
        if facts.schema and facts.schema_source:
            for problem in schema_problems(facts.schema, values):
                yield _violation(
                    release,
                    f"values.{problem.path}",
                    problem.value,
                    f"{name} {version} values schema: {problem.path} {problem.rule}",
                    str(facts.schema_source),
                )

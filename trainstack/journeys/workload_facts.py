"""What each pinned chart runs, as recorded by `scripts/extract_contract_facts.py` (`facts/workloads/`): every
workload with its pod labels, its containers' images and ports, the values that switch it on (`when`, against the
chart's defaults in `condition_defaults`) and the values that change an image (`parts`).

Given a recorded Helm release's values, `running` answers which of them run and which images they pull, so both
the deploy and the alerts journeys read what the release turns on, never the chart's defaults alone.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from trainstack.contracts.facts import FACTS_DIR

WORKLOADS_DIR = FACTS_DIR / "workloads"


@dataclass(frozen=True)
class ImagePart:
    """A value that lands in an image reference: where in the default image it goes, and which of two values on
    the same place Helm uses (rank 0)."""

    key: str
    start: int
    end: int
    rank: int
    replaces: bool  # False: it adds to the image (a digest) instead of replacing a span of it


@dataclass(frozen=True)
class ContainerFacts:
    name: str
    init: bool
    image: str  # the image at the chart's defaults
    ports: tuple[str, ...]
    parts: tuple[ImagePart, ...]
    when: Mapping[str, Any]  # conditions of this container beyond its workload's
    regional_by: str = ""  # a `region` value the chart picks the image's registry by ("" when it does not)


@dataclass(frozen=True)
class WorkloadFacts:
    kind: str
    name: str  # with `{release}` for the release name
    namespace: str  # `{namespace}` for the release's namespace
    template: str
    hook: str  # a Helm hook ("pre-upgrade", "post-delete" ...) or "" for an installed object
    pod_labels: Mapping[str, str]
    label_keys: tuple[str, ...]  # values the pod labels depend on
    when: Mapping[str, Any]
    containers: tuple[ContainerFacts, ...]

    def resolved(self, release: str, namespace: str) -> tuple[str, str, dict[str, str]]:
        """(name, namespace, pod labels) with the release's name and namespace in place of the markers."""

        def fill(text: str) -> str:
            return text.replace("{release}", release).replace("{namespace}", namespace)

        return fill(self.name), fill(self.namespace), {k: fill(v) for k, v in self.pod_labels.items()}


@dataclass(frozen=True)
class ChartWorkloads:
    chart: str
    version: str
    source: str
    workloads: tuple[WorkloadFacts, ...]
    condition_defaults: Mapping[str, Any]
    missing_subcharts: tuple[Mapping[str, str], ...]


def _container(data: dict[str, Any]) -> ContainerFacts:
    return ContainerFacts(
        name=data["name"],
        init=data["init"],
        image=data["image"],
        ports=tuple(data["ports"]),
        parts=tuple(ImagePart(p["key"], p["start"], p["end"], p["rank"], p["replaces"]) for p in data.get("parts", [])),
        when=data.get("when", {}),
        regional_by=data.get("regional_by", ""),
    )


@functools.cache
def chart_workloads(chart: str, version: str) -> ChartWorkloads | None:
    """The recorded workloads of `chart` at `version` (a leading v ignored), or None."""
    path = WORKLOADS_DIR / f"{chart}@{version}.json"
    if not path.exists():
        path = WORKLOADS_DIR / f"{chart}@v{version.removeprefix('v')}.json"
    if not path.exists():
        path = WORKLOADS_DIR / f"{chart}@{version.removeprefix('v')}.json"
    if not path.exists():
        return None
    data = json.loads(path.read_text())
    source = data["source"]
    return ChartWorkloads(
        chart=data["chart"],
        version=data["version"],
        source=f"{source['repository']}@{source['tag']}:{source['path']} (rendered with {data['rendered_with']})",
        workloads=tuple(
            WorkloadFacts(
                kind=w["kind"],
                name=w["name"],
                namespace=w["namespace"],
                template=w["template"],
                hook=w["hook"],
                pod_labels=w["pod_labels"],
                label_keys=tuple(w["label_keys"]),
                when=w["when"],
                containers=tuple(_container(c) for c in w["containers"]),
            )
            for w in data["workloads"]
        ),
        condition_defaults=data.get("condition_defaults", {}),
        missing_subcharts=tuple(data["missing_subcharts"]),
    )


_MISSING = object()


def value_at(values: Mapping[str, Any], dotted: str) -> Any:
    """The value a release sets at a dotted key, or `_MISSING`."""
    node: Any = values
    for part in dotted.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return _MISSING
        node = node[part]
    return node


def sets(values: Mapping[str, Any], dotted: str) -> bool:
    return value_at(values, dotted) is not _MISSING


def _holds(when: Mapping[str, Any], values: Mapping[str, Any], defaults: Mapping[str, Any]) -> bool:
    for key, wanted in when.items():
        value = value_at(values, key)
        if value is _MISSING:
            value = defaults.get(key)
        if bool(value) != bool(wanted):
            return False
    return True


def image_of(container: ContainerFacts, values: Mapping[str, Any]) -> str:
    """The container's image under a release's values: each value the release sets that replaces a span of the
    default image goes there (of two on the same span, the one Helm prefers)."""
    chosen: dict[tuple[int, int], tuple[int, str]] = {}
    for part in container.parts:
        value = value_at(values, part.key)
        if not part.replaces or value is _MISSING or not isinstance(value, str) or not value:
            continue
        span = (part.start, part.end)
        if span not in chosen or part.rank < chosen[span][0]:
            chosen[span] = (part.rank, value)
    image = container.image
    for (start, end), (_, value) in sorted(chosen.items(), reverse=True):
        image = image[:start] + value + image[end:]
    return image


@dataclass(frozen=True)
class Running:
    """One workload a release runs, with the containers (and images) it runs under the release's values."""

    workload: WorkloadFacts
    containers: tuple[tuple[ContainerFacts, str], ...]  # (container, image under the values)


def running(facts: ChartWorkloads, values: Mapping[str, Any], hooks: bool = False) -> list[Running]:
    """The workloads a release with `values` runs (installed objects; with `hooks`, its hooks too)."""
    found: list[Running] = []
    for workload in facts.workloads:
        if (workload.hook and not hooks) or not _holds(workload.when, values, facts.condition_defaults):
            continue
        containers = tuple(
            (c, image_of(c, values)) for c in workload.containers if _holds(c.when, values, facts.condition_defaults)
        )
        if containers:
            found.append(Running(workload, containers))
    return found


def enabled_missing_subcharts(facts: ChartWorkloads, values: Mapping[str, Any]) -> list[str]:
    """Subcharts the release turns on whose workloads the facts do not hold (their chart is not in git)."""
    found: list[str] = []
    for sub in facts.missing_subcharts:
        condition = sub.get("condition", "")
        value = value_at(values, condition) if condition else True
        if value is _MISSING:
            value = facts.condition_defaults.get(condition, True)
        if value:
            found.append(f"{sub['name']} {sub['version']} ({condition or 'always'})")
    return found

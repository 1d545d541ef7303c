"""Recorded facts of the upstream contracts trainstack's Kubernetes inputs meet: Helm chart values and CRD schemas.

The facts are our own data, extracted by `scripts/extract_contract_facts.py` from one upstream file at a pinned
tag and kept under `trainstack/contracts/facts/`: each file names its repository, tag and path, and holds a flat
map from a field path to what the upstream file says of it (type, enum, required keys, CEL rules ...).

Paths are dotted (`spec.resourceGroups[].flavors[].name`); `[]` stands for every item of a list, `*` for every
value of a map whose keys are free, and a key that itself holds a dot is quoted (`"Job.batch"`).
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FACTS_DIR = Path(__file__).resolve().parent / "facts"
CHARTS_DIR = FACTS_DIR / "charts"
CRDS_DIR = FACTS_DIR / "crds"

ITEM = "[]"  # every item of a list
ANY_KEY = "*"  # every value of a map with free keys


def key_segment(key: str) -> str:
    """One map key as a path segment: quoted when it holds a dot, a bracket, a quote or is `*`."""
    if key == ANY_KEY or any(c in key for c in '.[]"'):
        return json.dumps(key)
    return key


def join(parent: str, segment: str) -> str:
    """`parent` extended by a key segment, or by ITEM (no dot before a list's items)."""
    if segment == ITEM:
        return parent + ITEM
    return f"{parent}.{segment}" if parent else segment


def child(parent: str, key: str) -> str:
    return join(parent, key_segment(key))


def json_type(value: Any) -> str:
    """The JSON-schema type name of a YAML/JSON value (an integral float is an integer, as the API reads it)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "integer" if value.is_integer() else "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


@dataclass(frozen=True)
class Source:
    """Where a facts file was extracted from."""

    repository: str
    tag: str
    path: str

    def __str__(self) -> str:
        return f"{self.repository}@{self.tag}:{self.path}"


@dataclass(frozen=True)
class ChartFacts:
    """A chart's values at one version: every key path its values.yaml defines, with its type."""

    chart: str
    version: str
    source: Source
    values: dict[str, str]  # path -> JSON type of the default value ("object" + empty map = free keys)
    free_maps: frozenset[str]  # paths whose default is an empty map: any key may go under them
    schema: dict[str, dict[str, Any]]  # flattened values.schema.json, when the chart has one
    schema_source: Source | None


@dataclass(frozen=True)
class CrdFacts:
    """One served version of a CRD: its field paths and what the openAPI schema says of each."""

    group: str
    kind: str
    version: str
    source: Source
    installed_by: str  # "<chart or manifest>@<version>": the install that brings this CRD
    fields: dict[str, dict[str, Any]]

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}"

    @property
    def operator(self) -> tuple[str, str]:
        """(chart or manifest name, version without a leading v) of the install that brings this CRD."""
        name, _, version = self.installed_by.partition("@")
        return name, version.removeprefix("v")


def _source(data: dict[str, Any]) -> Source:
    return Source(data["repository"], data["tag"], data["path"])


def chart_file(chart: str, version: str) -> Path:
    return CHARTS_DIR / f"{chart}@{version}.json"


def crd_file(group: str, kind: str, version: str, tag: str) -> Path:
    return CRDS_DIR / f"{group}_{kind}_{version}@{tag}.json"


@functools.cache
def chart_facts(chart: str, version: str) -> ChartFacts | None:
    """The recorded facts of `chart` at `version` (a leading v is ignored on both sides), or None."""
    for path in sorted(CHARTS_DIR.glob(f"{chart}@*.json")):
        data = json.loads(path.read_text())
        if data["version"].removeprefix("v") == version.removeprefix("v"):
            schema = data.get("schema") or {}
            return ChartFacts(
                chart=data["chart"],
                version=data["version"],
                source=_source(data["source"]),
                values=data["values"],
                free_maps=frozenset(data["free_maps"]),
                schema=schema.get("fields", {}),
                schema_source=_source(schema["source"]) if schema else None,
            )
    return None


@functools.cache
def all_crd_facts() -> tuple[CrdFacts, ...]:
    found: list[CrdFacts] = []
    for path in sorted(CRDS_DIR.glob("*.json")):
        data = json.loads(path.read_text())
        found.append(
            CrdFacts(
                group=data["group"],
                kind=data["kind"],
                version=data["version"],
                source=_source(data["source"]),
                installed_by=data["installed_by"],
                fields=data["fields"],
            )
        )
    return tuple(found)


def crd_facts(api_version: str, kind: str) -> list[CrdFacts]:
    """Every recorded CRD (at any tag) serving `api_version` + `kind`."""
    return [f for f in all_crd_facts() if f.api_version == api_version and f.kind == kind]


def write_json(path: Path, data: dict[str, Any]) -> None:
    """Facts files: sorted keys, one field per line, so a re-extraction's diff is readable."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")

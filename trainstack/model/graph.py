"""Reading a Recording as a graph: follow references between recorded resources.

A reference is found through the recorded property dependencies (URNs, known in preview too) and, when
those are missing, through physical ids the mock engine returned. Everything here is pure: it reads a
Recording and returns recorded resources or plain values.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from trainstack.engine import UNKNOWN, RecordedResource, Recording


class Index:
    """Lookups over one Recording: by URN and by physical id."""

    def __init__(self, recording: Recording) -> None:
        self.recording = recording
        self.by_urn: dict[str, RecordedResource] = {r.urn: r for r in recording.resources}
        self.by_id: dict[str, RecordedResource] = {r.id: r for r in recording.resources if r.id and r.custom}

    def refs(self, resource: RecordedResource, prop: str, type_token: str | None = None) -> list[RecordedResource]:
        """The recorded resources that input `prop` of `resource` depends on (optionally of one type)."""
        found: dict[str, RecordedResource] = {}
        for urn in resource.property_dependencies.get(prop, ()):
            target = self.by_urn.get(urn)
            if target is not None:
                found[target.urn] = target
        for value in _strings(resource.inputs.get(prop)):
            target = self.by_id.get(value)
            if target is not None:
                found.setdefault(target.urn, target)
        return [r for r in found.values() if type_token is None or r.type == type_token]

    def of_type(self, *type_tokens: str) -> list[RecordedResource]:
        return [r for r in self.recording.resources if r.type in type_tokens]


def _strings(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def known(value: Any) -> Any:
    """The value, or None when it is the engine's unknown sentinel (preview)."""
    return None if value == UNKNOWN else value


def get(inputs: dict[str, Any], *path: str) -> Any:
    """A nested input by engine names, None when absent or unknown."""
    value: Any = inputs
    for key in path:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return known(value)


def as_int(value: Any) -> int | None:
    """Engine numbers arrive as floats; strings of digits appear in some providers' inputs."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        return int(value)
    if isinstance(value, str) and value.isdigit():
        return int(value)
    return None

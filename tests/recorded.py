"""One resource as the engine records it, built by hand with only what a diff test sets (the rest empty)."""

from __future__ import annotations

from typing import Any

from trainstack.engine import RecordedResource


def recorded(
    type_: str, name: str, inputs: dict[str, Any], *, protect: bool = False, ignore: tuple[str, ...] = ()
) -> RecordedResource:
    return RecordedResource(
        type=type_,
        name=name,
        urn=f"urn:pulumi:s::trainstack::{type_}::{name}",
        parent="",
        custom=True,
        inputs=inputs,
        dependencies=(),
        property_dependencies={},
        protect=protect,
        retain_on_delete=False,
        provider="",
        ignore_changes=ignore,
    )

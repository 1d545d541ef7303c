"""The stack-file reference (docs/config.md), generated from the schema's own field descriptions.

The schema (`stacks/schema/`) is the one home of every key's type, default, bounds and meaning; this module
walks its JSON schema (the same one `make schema` writes for editors) and renders one table per object, in
the order a stack file reads: the root, then each area and the objects nested in it. Regenerate with
`make docs`; tests/unit/test_docs.py fails when docs/config.md differs from what this renders.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel
from pydantic_core import to_jsonable_python

from stacks.schema import CONFIG_KEY, CONFIG_NAMESPACE, StackConfig, json_schema

Schema = Mapping[str, Any]
_ROOT = f"{CONFIG_NAMESPACE}:{CONFIG_KEY}"  # the stack-file key every path below hangs from

_CONSTRAINTS = (  # JSON schema keyword -> how the Valid column says it
    ("minimum", ">= {}"),
    ("exclusiveMinimum", "> {}"),
    ("maximum", "<= {}"),
    ("exclusiveMaximum", "< {}"),
    ("minLength", "at least {} characters"),
    ("maxLength", "at most {} characters"),
    ("pattern", "matches `{}`"),
    ("format", "format {}"),
    ("minItems", "at least {} items"),
    ("maxItems", "at most {} items"),
    ("uniqueItems", "unique items"),
    ("minProperties", "at least {} keys"),
    ("maxProperties", "at most {} keys"),
)


@dataclass(frozen=True)
class Section:
    """One object of the config: its key path, its schema and what it is for."""

    path: str
    schema: Schema

    @property
    def anchor(self) -> str:
        """GitHub's anchor of this section's heading: lower case, spaces to -, other punctuation dropped."""
        heading = (self.path or "top level").lower().replace(" ", "-")
        return "".join(c for c in heading if c.isalnum() or c in "-_")


class _Walker:
    """Resolves `$ref`s of one JSON schema and finds every object under the root, depth first."""

    def __init__(self, root: Schema) -> None:
        self.root = root
        self.defs: Mapping[str, Schema] = root.get("$defs", {})
        self.sections: dict[str, Section] = {}  # $defs name (or "" for the root) -> its first path

    def resolve(self, schema: Schema) -> tuple[str | None, Schema]:
        ref = schema.get("$ref")
        if ref is None:
            return None, schema
        name = ref.rsplit("/", 1)[-1]
        return name, self.defs[name]

    def branches(self, schema: Schema) -> list[Schema]:
        """The non-null alternatives of a field (an optional field is `anyOf: [X, null]`)."""
        options = schema.get("anyOf") or schema.get("oneOf")
        if options is None:
            return [schema]
        return [option for option in options if option.get("type") != "null"]

    def objects_in(self, schema: Schema) -> Iterator[tuple[str, str, Schema]]:
        """(suffix, def name, schema) for each object a field holds: itself, list items or map values."""
        for branch in self.branches(schema):
            name, resolved = self.resolve(branch)
            if name is not None and "properties" in resolved:
                yield "", name, resolved
            elif resolved.get("type") == "array" and "items" in resolved:
                for suffix, inner, target in self.objects_in(resolved["items"]):
                    yield "[]" + suffix, inner, target
            elif isinstance(resolved.get("additionalProperties"), dict):
                for suffix, inner, target in self.objects_in(resolved["additionalProperties"]):
                    yield ".<key>" + suffix, inner, target

    def walk(self, path: str, name: str, schema: Schema) -> None:
        if name in self.sections:
            return
        self.sections[name] = Section(path, schema)
        for key, field in schema.get("properties", {}).items():
            for suffix, inner, target in self.objects_in(field):
                self.walk(f"{path}.{key}{suffix}" if path else f"{key}{suffix}", inner, target)


def _cell(text: str) -> str:
    """Text safe in a Markdown table cell: one line, pipes escaped."""
    return " ".join(str(text).split()).replace("|", "\\|")


def _code(value: object) -> str:
    return "`" + json.dumps(value, ensure_ascii=False) + "`"


class Reference:
    """The rendered reference of one JSON schema."""

    def __init__(self, root: Schema, models: Mapping[str, type[BaseModel]]) -> None:
        """`models`: the pydantic model of each object, by its `$defs` name ("" for the root); defaults are
        read from them, because the JSON schema leaves out what a `default_factory` gives."""
        self.walker = _Walker(root)
        self.walker.walk("", "", root)
        self.models = models

    def link(self, name: str) -> str:
        section = self.walker.sections[name]
        return f"[{section.path}](#{section.anchor})"

    def type_of(self, schema: Schema) -> str:
        kinds = [self._one_type(branch) for branch in self.walker.branches(schema)]
        optional = len(kinds) < len(schema.get("anyOf") or schema.get("oneOf") or kinds)
        text = " or ".join(dict.fromkeys(kinds))
        return f"{text} or null" if optional else text

    def _one_type(self, schema: Schema) -> str:
        name, resolved = self.walker.resolve(schema)
        if name is not None and "properties" in resolved:
            return f"object ({self.link(name)})"
        if "enum" in resolved or "const" in resolved:
            return "enum" if "enum" in resolved else "constant"
        kind = resolved.get("type", "any")
        if kind == "array":
            return f"list of {self.type_of(resolved.get('items', {}))}"
        if kind == "object" and isinstance(resolved.get("additionalProperties"), dict):
            return f"map of string to {self.type_of(resolved['additionalProperties'])}"
        return str(kind)

    def valid(self, schema: Schema) -> str:
        """Enum values and bounds, of the field and of what it holds (list items, map values)."""
        parts: list[str] = []
        for branch in self.walker.branches(schema):
            _, resolved = self.walker.resolve(branch)
            if "enum" in resolved:
                parts.append("one of " + ", ".join(_code(value) for value in resolved["enum"]))
            if "const" in resolved:
                parts.append(f"exactly {_code(resolved['const'])}")
            parts.extend(template.format(resolved[key]) for key, template in _CONSTRAINTS if key in resolved)
            for inner, label in (("items", "each item"), ("additionalProperties", "each value")):
                nested = resolved.get(inner)
                if isinstance(nested, dict) and (found := self.valid(nested)) and "object (" not in found:
                    parts.append(f"{label}: {found}")
        return "; ".join(dict.fromkeys(parts))

    @staticmethod
    def default(model: type[BaseModel], key: str) -> str:
        info = model.model_fields[key]
        if info.is_required():
            return "required"
        if info.default_factory_takes_validated_data:
            return "derived (see description)"
        value = info.get_default(call_default_factory=True)  # the default, or what its factory makes
        if isinstance(value, BaseModel):
            return "the defaults of its keys"
        return _code(to_jsonable_python(value))

    def table(self, name: str, section: Section) -> list[str]:
        model = self.models[name]
        rows = ["| Key | Type | Default | Valid | Description |", "|---|---|---|---|---|"]
        for key, field in section.schema.get("properties", {}).items():
            cells = (
                f"`{key}`",
                self.type_of(field),
                self.default(model, key),
                self.valid(field) or "-",
                field.get("description", ""),
            )
            rows.append("| " + " | ".join(_cell(cell) for cell in cells) + " |")
        return rows

    def render(self) -> str:
        sections = list(self.walker.sections.values())
        lines = [
            "<!-- Generated by `make docs` (scripts/config_reference.py) from stacks/schema/: do not edit by hand;",
            "     tests/unit/test_docs.py fails when this file differs from the schema. -->",
            "# Stack configuration reference",
            "",
            f"Each stack file (`stacks/Pulumi.<stack>.yaml`) holds one object, `{_ROOT}`, validated by",
            "`stacks/schema/` (pydantic: frozen models, unknown keys refused). This page is generated from the",
            "schema's field descriptions; `stacks/cluster.schema.json` is the same schema for editors (`make schema`).",
            "A bad file stops before any resource is registered, with every problem listed (key path, value, what is",
            "valid) and exit code 2. Rules that span several keys (for example SCRATCH_2 only in dev, EFA groups in",
            "one AZ, FSx capacity steps) are model validators in the schema: the plan names the key they refuse.",
            "",
            "**Default** `required` means the key must be given; `derived` means that, left out, trainstack computes",
            "it from other keys (the description says how). A `[]` in a path is each item of a list, `.<key>` each",
            "value of a map.",
            "",
            "Contents: " + ", ".join(f"[{s.path or 'top level'}](#{s.anchor})" for s in sections),
            "",
        ]
        for name, section in self.walker.sections.items():
            title = f"`{_ROOT}.{section.path}`" if section.path else f"`{_ROOT}` (top level)"
            about = _cell(section.schema.get("description", ""))
            lines += [f"## {section.path or 'top level'}", "", f"{title}: {about}", "", *self.table(name, section), ""]
        return "\n".join(lines)


def _models(model: type[BaseModel], found: dict[str, type[BaseModel]]) -> dict[str, type[BaseModel]]:
    """Every pydantic model reachable from MODEL's fields, by class name (the JSON schema's `$defs` names)."""
    for info in model.model_fields.values():
        for inner in _model_types(info.annotation):
            if inner.__name__ not in found:
                found[inner.__name__] = inner
                _models(inner, found)
    return found


def _model_types(annotation: object) -> Iterator[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        yield annotation
    for argument in getattr(annotation, "__args__", ()):  # list[X], X | None, dict[str, X]
        yield from _model_types(argument)


def render() -> str:
    """docs/config.md, from the stack schema."""
    return Reference(json_schema(), {"": StackConfig, **_models(StackConfig, {})}).render()

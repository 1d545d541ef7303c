"""pulumi-aws-native inputs against the CloudFormation resource schema of the same type, for the stack's region.

aws-native resources are CloudFormation resource types driven through Cloud Control, so their contract is the
type's registry schema. cfn-lint ships those schemas per region as package data (`data/schemas/providers/
<region>.json` names each type's schema file under `data/schemas/resources/`) plus the regional instance-type
lists of AWS::SageMaker::Cluster (`data/schemas/extensions/aws_sagemaker_cluster/instancetype_enum.json`). Only
the data is read, never cfn-lint's code (importing it costs seconds); the schema is applied with jsonschema.

Input names are the engine's camelCase forms of the schema's property names (`instanceGroups` for
`InstanceGroups`, `volumeSizeInGb` for `VolumeSizeInGB`): each key is matched to the schema's property of the
same name ignoring case, and a key that matches none is kept, so `additionalProperties: false` refuses it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import jsonschema

from stacks.cfn_data import SAGEMAKER_CLUSTER_INSTANCE_TYPES, cfn_lint_version, read
from trainstack.contracts import ContractViolation, render_value
from trainstack.engine import UNKNOWN, RecordedResource, Recording
from trainstack.tokens import HYPERPOD_CLUSTER

# aws-native type token -> CloudFormation type name.
CFN_TYPES = {HYPERPOD_CLUSTER: "AWS::SageMaker::Cluster"}
# Regional enums cfn-lint adds on top of a type's schema: the JSON pointer they constrain, and the file.
REGIONAL_ENUMS = {
    "AWS::SageMaker::Cluster": (
        ("InstanceGroups", "*", "InstanceType"),
        SAGEMAKER_CLUSTER_INSTANCE_TYPES,
    )
}


def resource_schema(cfn_type: str, region: str) -> dict[str, Any]:
    """The type's registry schema as cfn-lint ships it for `region`."""
    providers = read(f"providers/{region}.json")
    if cfn_type not in providers:
        raise KeyError(f"{cfn_type} is not offered in {region} (cfn-lint {cfn_lint_version()} schemas)")
    return read(f"resources/{providers[cfn_type]}.json")


def regional_enum(cfn_type: str, region: str) -> tuple[tuple[str, ...], list[str]] | None:
    """The pointer and allowed values of the type's regional enum in `region`, if cfn-lint records one."""
    if cfn_type not in REGIONAL_ENUMS:
        return None
    pointer, relative = REGIONAL_ENUMS[cfn_type]
    by_region = read(relative)
    return (pointer, by_region[region]["enum"]) if region in by_region else (pointer, [])


def _resolve(schema: Mapping[str, Any], root: Mapping[str, Any]) -> Mapping[str, Any]:
    while "$ref" in schema:
        ref = schema["$ref"]
        node: Any = root
        for part in ref.removeprefix("#/").split("/"):
            node = node[part]
        schema = node
    return schema


def _properties(schema: Mapping[str, Any], root: Mapping[str, Any]) -> dict[str, Any]:
    """The properties an object may have: its own and those of its oneOf/anyOf/allOf branches."""
    schema = _resolve(schema, root)
    found = dict(schema.get("properties", {}))
    for keyword in ("oneOf", "anyOf", "allOf"):
        for branch in schema.get(keyword, []):
            for name, sub in _properties(branch, root).items():
                found.setdefault(name, sub)
    return found


DocumentPath = tuple[str | int, ...]  # keys and list indexes from a document's root, as jsonschema gives them


def to_cfn(
    value: Any,
    schema: Mapping[str, Any],
    root: Mapping[str, Any],
    where: DocumentPath,
    names: dict[DocumentPath, str],
) -> Any:
    """`value` with camelCase keys renamed to the schema's property names; `names` maps each converted path to
    the engine path, for messages."""
    schema = _resolve(schema, root)
    if isinstance(value, Mapping):
        properties = _properties(schema, root)
        by_lower = {name.lower(): name for name in properties}
        converted: dict[str, Any] = {}
        for key, item in value.items():
            name = by_lower.get(key.lower(), key)
            engine_path = f"{names[where]}.{key}" if names.get(where) else key
            names[(*where, name)] = engine_path
            converted[name] = to_cfn(item, properties.get(name, {}), root, (*where, name), names)
        return converted
    if isinstance(value, list):
        items = schema.get("items", {})
        out: list[Any] = []
        for index, item in enumerate(value):
            names[(*where, index)] = f"{names.get(where, '')}[{index}]"
            out.append(to_cfn(item, items, root, (*where, index), names))
        return out
    return value


def _has_unknown(value: Any, preview: bool) -> bool:
    """Whether `value` holds a value a preview does not know yet. Besides Pulumi's unknown sentinel, a preview
    records null for a property of a resource that does not exist yet (the EKS cluster's security group id)."""
    if isinstance(value, str):
        return value == UNKNOWN
    if value is None:
        return preview
    if isinstance(value, Mapping):
        return any(_has_unknown(v, preview) for v in value.values())
    if isinstance(value, list):
        return any(_has_unknown(v, preview) for v in value)
    return False


def _at(document: Any, pointer: tuple[str, ...]) -> Iterator[tuple[tuple[Any, ...], Any]]:
    """Every (path, value) at a pointer whose `*` steps over list items."""
    if not pointer:
        yield (), document
        return
    head, rest = pointer[0], pointer[1:]
    if head == "*" and isinstance(document, list):
        for index, item in enumerate(document):
            yield from (((index, *p), v) for p, v in _at(item, rest))
    elif isinstance(document, Mapping) and head in document:
        yield from (((head, *p), v) for p, v in _at(document[head], rest))


def region_of(resource: RecordedResource, recording: Recording) -> str | None:
    provider = recording.by_urn().get(resource.provider_urn)
    region = provider.inputs.get("region") if provider else None
    return region if isinstance(region, str) else None


def _deepest(error: jsonschema.ValidationError) -> jsonschema.ValidationError:
    """Under oneOf/anyOf the error only says "not valid under any of the given schemas"; the branch error that
    reached deepest into the value is the one that names the member and the bound (the branch that fits)."""
    while error.context:
        error = max(error.context, key=lambda e: len(e.absolute_path))
    return error


def check_resource(resource: RecordedResource, region: str, preview: bool = False) -> Iterator[ContractViolation]:
    cfn_type = CFN_TYPES[resource.type]
    schema = resource_schema(cfn_type, region)
    source = f"CloudFormation resource schema {cfn_type} ({region}), as shipped in cfn-lint {cfn_lint_version()}"
    names: dict[DocumentPath, str] = {(): ""}
    document = to_cfn(resource.inputs, schema, schema, (), names)
    validator = jsonschema.Draft7Validator(schema)
    for found in validator.iter_errors(document):
        error = _deepest(found)
        if _has_unknown(error.instance, preview):
            continue  # a preview does not know this value yet
        path = names.get(tuple(error.absolute_path), ".".join(map(str, error.absolute_path)))
        rule = f"{error.validator}: {error.message}"
        yield ContractViolation(resource.urn, path, render_value(error.instance), rule[:300], source)
    regional = regional_enum(cfn_type, region)
    if regional is not None:
        pointer, allowed = regional
        for where, value in _at(document, pointer):
            if isinstance(value, str) and value != UNKNOWN and value not in allowed:
                yield ContractViolation(
                    resource.urn,
                    names.get(where, "/".join(map(str, where))),
                    render_value(value),
                    f"not offered in {region}: {'/'.join(pointer)} must be one of the {len(allowed)} instance types "
                    f"cfn-lint lists for the region",
                    f"{source}, regional enum {REGIONAL_ENUMS[cfn_type][1]}",
                )


def check(recording: Recording) -> Iterable[ContractViolation]:
    """Every aws-native resource of a type in CFN_TYPES against its schema for its provider's region."""
    for resource in recording.resources:
        if resource.type not in CFN_TYPES:
            continue
        region = region_of(resource, recording)
        if region is None:
            yield ContractViolation(
                resource.urn,
                "",
                "(no region)",
                "the resource's aws-native provider names no region, so its schema cannot be chosen",
                "trainstack: components/sagemaker/hyperpod.py aws_native_provider",
            )
            continue
        yield from check_resource(resource, region, recording.preview)

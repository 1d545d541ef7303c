"""Record, from botocore's service models, the constraints of every request member `aws_models.API_MAP` names.

    .venv/bin/python -m trainstack.contracts.record_aws_api          # rewrite facts/aws_api.json
    .venv/bin/python -m trainstack.contracts.record_aws_api --check  # exit 1 if the file is stale

Uses botocore's own loader and shape objects (`botocore.loaders.Loader`, `botocore.model.ServiceModel`), never
the JSON by hand. What is recorded is data about the API (shape names, types, enums, bounds, patterns, which
members are required), not botocore's files.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import botocore
from botocore.loaders import Loader
from botocore.model import ListShape, MapShape, ServiceModel, Shape, StructureShape

from trainstack.contracts import recorder
from trainstack.contracts.aws_models import API_MAP, FACTS_FILE, ApiCall, _split, member_key, operation_key

_BOUNDS = ("min", "max", "pattern")
MODULE = "trainstack.contracts.record_aws_api"


def shape_fact(shape: Shape) -> dict[str, Any]:
    """A shape's own constraints; list members and map keys/values recursively, structures by name only."""
    fact: dict[str, Any] = {"shape": shape.name, "type": shape.type_name}
    fact |= {bound: shape.metadata[bound] for bound in _BOUNDS if bound in shape.metadata}
    if getattr(shape, "enum", None):
        fact["enum"] = list(shape.enum)
    # botocore builds a ListShape, MapShape or StructureShape for those types (ShapeResolver.SHAPE_CLASSES)
    if isinstance(shape, ListShape):
        fact["member"] = shape_fact(shape.member)
    elif isinstance(shape, MapShape):
        fact["key"], fact["value"] = shape_fact(shape.key), shape_fact(shape.value)
    return fact


def resolve(model: ServiceModel, call: ApiCall, member_path: str) -> dict[str, Any]:
    """The fact at `member_path` of the operation's request, with whether its parent requires it."""
    shape: Shape = _input_shape(model, call)
    required = False
    for name, into_list in _split(member_path):
        if not isinstance(shape, StructureShape) or name not in shape.members:
            raise KeyError(f"{member_key(call, member_path)}: {shape.name} has no member {name}")
        required = name in shape.required_members
        shape = shape.members[name]
        if into_list:
            if not isinstance(shape, ListShape):
                raise KeyError(f"{member_key(call, member_path)}: {name} is a {shape.type_name}, not a list")
            shape, required = shape.member, False
    return {**shape_fact(shape), "required": required}


def _input_shape(model: ServiceModel, call: ApiCall) -> StructureShape:
    """The operation's request shape; botocore gives None for an operation that takes no input."""
    shape = model.operation_model(call.operation).input_shape
    if not isinstance(shape, StructureShape):
        raise KeyError(f"{operation_key(call)}: the operation takes no request structure")
    return shape


def load_model(service: str, loader: Loader | None = None) -> ServiceModel:
    """botocore's model of `service`, from the package's own data files."""
    return ServiceModel((loader or Loader()).load_service_model(service, "service-2"), service_name=service)


def record() -> dict[str, Any]:
    loader = Loader()
    models: dict[str, ServiceModel] = {}
    members: dict[str, Any] = {}
    required: dict[str, list[str]] = {}
    for calls in API_MAP.values():
        for call in calls:
            if call.service not in models:
                models[call.service] = load_model(call.service, loader)
            model = models[call.service]
            required[operation_key(call)] = list(_input_shape(model, call).required_members)
            for member_path in call.members.values():
                members[member_key(call, member_path)] = resolve(model, call, member_path)
    return {
        "botocore": botocore.__version__,
        "recorded_by": f"python -m {MODULE}",
        "members": dict(sorted(members.items())),
        "required": dict(sorted(required.items())),
    }


def render(facts: dict[str, Any]) -> str:
    return json.dumps(facts, indent=1, sort_keys=True) + "\n"


def main(argv: list[str] | None = None) -> int:
    origin = f"botocore {botocore.__version__}"
    return recorder.main(argv, __doc__ or "", FACTS_FILE, lambda: render(record()), MODULE, origin)


if __name__ == "__main__":
    sys.exit(main())

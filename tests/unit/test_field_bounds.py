"""Every numeric bound of the stack schema at its edges, found by walking the pydantic models (ge/le/gt/lt), so
a bound added later is tested too: the value just past the edge is refused with the key path and the limit
named, and the edge itself passes the field. The bounds that guard GPUs and disks are pinned by hand below."""

from __future__ import annotations

import copy
import types
import typing
from collections.abc import Iterator
from typing import Any

import annotated_types
import pytest
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from stacks.load import FULL_KEY, ConfigError, validate_object
from stacks.schema import StackConfig
from tests.conftest import STACKS, stack_document


def _models(annotation: Any) -> Iterator[tuple[type[BaseModel], str]]:
    """The models inside an annotation, with the key step that reaches one ('' or '.0' for a list item)."""
    origin = typing.get_origin(annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        yield annotation, ""
    elif origin in (typing.Union, types.UnionType, typing.Annotated):
        for arg in typing.get_args(annotation)[: 1 if origin is typing.Annotated else None]:
            yield from _models(arg)
    elif origin in (list, tuple):
        for arg in typing.get_args(annotation)[:1]:
            yield from ((m, ".0" + step) for m, step in _models(arg))


def bounded_fields(model: type[BaseModel], prefix: str = "") -> Iterator[tuple[str, type[BaseModel], str, FieldInfo]]:
    """(key path, model, field name, field) for every field of every model reachable from `model`."""
    for name, field in model.model_fields.items():
        path = f"{prefix}{name}"
        if any(
            isinstance(m, annotated_types.Ge | annotated_types.Le | annotated_types.Gt | annotated_types.Lt)
            for m in field.metadata
        ):
            yield path, model, name, field
        for inner, step in _models(field.annotation):
            yield from bounded_fields(inner, f"{path}{step}.")


def edges(field: FieldInfo) -> Iterator[tuple[int | float, int | float]]:
    """(the last valid value, the first invalid one) at each bound."""
    for m in field.metadata:
        if isinstance(m, annotated_types.Ge):
            yield m.ge, m.ge - 1
        elif isinstance(m, annotated_types.Gt):
            yield m.gt + 1, m.gt
        elif isinstance(m, annotated_types.Le):
            yield m.le, m.le + 1
        elif isinstance(m, annotated_types.Lt):
            yield m.lt - 1, m.lt


BOUNDS = [(path, model, name, field) for path, model, name, field in bounded_fields(StackConfig)]


def _located(path: str) -> tuple[str, dict[str, Any]] | None:
    """A committed stack whose document reaches `path` (missing mappings on the way are added empty), and that
    stack's cluster object."""
    for stack in STACKS:
        raw = stack_document(stack)["config"][FULL_KEY]
        node: Any = raw
        for step in path.split(".")[:-1]:
            if step.isdigit():
                if not isinstance(node, list) or len(node) <= int(step):
                    break
                node = node[int(step)]
            else:
                node = node.setdefault(step, {}) if isinstance(node, dict) else None
                if node is None:
                    break
        else:
            if isinstance(node, dict):
                return stack, raw
    return None


def _set(raw: dict[str, Any], path: str, value: Any) -> None:
    *parents, last = path.split(".")
    node: Any = raw
    for step in parents:
        node = node[int(step) if step.isdigit() else step]
    node[last] = value


def test_the_walk_finds_the_bounds_that_guard_gpus_and_disks() -> None:
    paths = {path for path, *_ in BOUNDS}
    assert {"gpu_node_groups.0.hugepages_2mi", "gpu_node_groups.0.root_volume_size_gib"} <= paths
    assert "gpu_node_groups.0.max_size" in paths
    assert len(BOUNDS) >= 20


@pytest.mark.parametrize(("path", "model", "name", "field"), BOUNDS, ids=[b[0] for b in BOUNDS])
def test_a_value_past_each_bound_is_refused_with_its_key_path(path, model, name, field) -> None:
    located = _located(path)
    if located is None:
        pytest.skip(f"no committed stack has the parents of {path}")
    stack, raw = located
    for _, invalid in edges(field):
        edited = copy.deepcopy(raw)
        _set(edited, path, invalid)
        with pytest.raises(ConfigError) as caught:
            validate_object(edited, f"{stack} with {path}={invalid}")
        keys = [p.key for p in caught.value.problems]
        assert f"{FULL_KEY}.{path}" in keys, (invalid, [str(p.message) for p in caught.value.problems])


@pytest.mark.parametrize(("path", "model", "name", "field"), BOUNDS, ids=[b[0] for b in BOUNDS])
def test_each_bound_itself_is_accepted_by_the_field(path, model, name, field) -> None:
    for valid, _ in edges(field):
        # the field alone: the edge passes the bound (other rules of the whole model may still apply)
        try:
            model.__pydantic_validator__.validate_assignment(model.model_construct(), name, valid)
        except Exception as error:
            messages = str(error)
            assert "greater than" not in messages and "less than" not in messages, (path, valid, messages)


# --- pinned by hand: the edges that decide GPUs and disks --------------------------------------------------


def _group_edit(stack: str, **changes: Any) -> dict[str, Any]:
    raw = stack_document(stack)["config"][FULL_KEY]
    raw["gpu_node_groups"][0].update(changes)
    return raw


def _problems(raw: dict[str, Any]) -> list[tuple[str, str]]:
    try:
        validate_object(raw, "edited")
    except ConfigError as error:
        return [(p.key, p.message) for p in error.problems]
    return []


@pytest.mark.parametrize(("size", "ok"), [(49, False), (50, True), (16384, True), (16385, False)])
def test_root_volume_size_edges(size: int, ok: bool) -> None:
    problems = _problems(_group_edit("staging", root_volume_size_gib=size))
    assert (problems == []) is ok, problems


@pytest.mark.parametrize(("pages", "ok"), [(-1, False), (0, True)])
def test_hugepages_lower_edge(pages: int, ok: bool) -> None:
    problems = _problems(_group_edit("staging", hugepages_2mi=pages))
    assert (problems == []) is ok, problems


def test_hugepages_upper_edge_is_the_share_of_memory() -> None:
    """p5.48xlarge: 2048 GiB memory; at most the fraction of it in 2 MiB pages, one page more is refused."""
    from stacks.catalog import lookup
    from stacks.schema.gpu import MAX_HUGEPAGES_FRACTION

    most = int(MAX_HUGEPAGES_FRACTION * lookup("p5.48xlarge").memory_gib * 1024 / 2)
    assert _problems(_group_edit("staging", hugepages_2mi=most)) == []
    problems = _problems(_group_edit("staging", hugepages_2mi=most + 1))
    assert any(f"use at most {most}" in message for _, message in problems), problems


@pytest.mark.parametrize(("max_size", "ok"), [(1, False), (2, True)])
def test_efa_groups_need_at_least_two_nodes_at_the_boundary(max_size: int, ok: bool) -> None:
    problems = _problems(_group_edit("staging", min_size=0, desired_size=0, max_size=max_size))
    efa = [m for _, m in problems if "EFA is for multi-node jobs" in m]
    assert (not efa) is ok, problems
    if not ok:
        assert f"efa_enabled with max_size {max_size}" in efa[0]

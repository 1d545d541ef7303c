"""Narrowing for values read from YAML or JSON, whose shape is known only at run time.

`isinstance(value, Mapping)` leaves the key and value types unknown to the type checker; these say what a
parsed document can hold (any object) so the code that walks one stays fully typed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeGuard


def is_mapping(value: object) -> TypeGuard[Mapping[object, object]]:
    return isinstance(value, Mapping)


def is_list(value: object) -> TypeGuard[list[object]]:
    return isinstance(value, list)


def is_sequence(value: object) -> TypeGuard[list[object] | tuple[object, ...]]:
    """A list or a tuple (not a string)."""
    return isinstance(value, (list, tuple))

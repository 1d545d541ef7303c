"""How a bad value is shown in a problem (stacks/load.py `short`): bounded however large or deep the value is,
at each bound exactly: eight levels of nesting shown and the ninth elided, an integer shown in full up to 199 bits,
a long value cut to the limit with an ellipsis."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from stacks.load import short


def _nested(levels: int, wrap: Callable[[Any], Any]) -> Any:
    value: Any = 1
    for _ in range(levels):
        value = wrap(value)
    return value


@pytest.mark.parametrize(
    ("wrap", "opened", "closed", "elided"),
    [(lambda v: {"a": v}, "{'a': ", "}", "{...}"), (lambda v: [v], "[", "]", "[...]")],
    ids=["mappings", "lists"],
)
def test_eight_levels_are_shown_and_the_ninth_is_elided(
    wrap: Callable[[Any], Any], opened: str, closed: str, elided: str
) -> None:
    assert short(_nested(8, wrap), 1000) == opened * 8 + "1" + closed * 8
    assert short(_nested(9, wrap), 1000) == opened * 8 + elided + closed * 8


def test_an_integer_is_shown_in_full_below_200_bits_and_by_its_size_from_there() -> None:
    assert short(2**199 - 1, 1000) == str(2**199 - 1)
    assert short(2**199, 1000) == "<integer of about 60 digits>"


def test_scalars_read_as_json_inside_a_list() -> None:
    assert short([1, 2.5, "x", None, True, {"b": False}], 100) == "[1, 2.5, 'x', null, true, {'b': false}]"


@pytest.mark.parametrize("limit", [20, 40, 80])
def test_a_long_value_is_cut_to_the_limit_with_an_ellipsis(limit: int) -> None:
    shown = short("x" * 500, limit)
    assert len(shown) == limit and shown.endswith("...")
    assert short("x" * (limit - 2), limit) == repr("x" * (limit - 2))  # fits exactly: not cut

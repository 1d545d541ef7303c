"""How a bad value is shown in a problem (stacks/load.py `short`): bounded however large or deep the value is,
at each bound exactly: eight levels of nesting shown and the ninth elided, an integer shown in full up to 199 bits,
a long value cut to the limit with an ellipsis."""

from __future__ import annotations

import datetime
from collections.abc import Callable, Iterator
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


def test_a_value_whose_text_reaches_the_limit_exactly_in_mid_value_still_ends_in_an_ellipsis() -> None:
    """`[123456789` is exactly 10 characters but the list goes on: it must not read as the whole value."""
    assert short([123456789, 1], 10) == "[123456..."
    assert short([123456789], 11) == "[123456789]"  # the whole value at the limit: shown as it is


def test_a_cut_string_or_key_never_reads_as_whole_at_any_limit() -> None:
    """A string is kept to one character more than shown, so the cut shows however wide the limit."""
    assert short("x" * 100, 82).endswith("...")
    assert short({"k" * 100: 1}, 87).endswith("...")


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (True, "true"),
        (None, "null"),
        (7, "7"),
        (2.5, "2.5"),
        (datetime.date(2024, 1, 2), "2024-01-02"),
        (datetime.datetime(2024, 1, 2, 3, 4, 5), "2024-01-02T03:04:05"),
        (("a", 1), "['a', 1]"),
        (object(), "<object>"),
        (b"raw", "<bytes>"),
    ],
    ids=["bool", "null", "int", "float", "date", "datetime", "tuple", "object", "bytes"],
)
def test_each_kind_of_scalar_is_shown_as_its_text(value: Any, shown: str) -> None:
    assert short(value) == shown


class _CountingList(list[int]):
    """A list that counts the items drawn from it."""

    drawn = 0

    def __iter__(self) -> Iterator[int]:
        for item in super().__iter__():
            _CountingList.drawn += 1
            yield item


def test_a_long_value_is_read_only_as_far_as_the_limit() -> None:
    """Showing a value costs its first characters, not its size: a million items are not all walked."""
    _CountingList.drawn = 0
    assert short(_CountingList(range(1_000_000)), 20) == "[0, 1, 2, 3, 4, 5..."
    assert _CountingList.drawn < 20

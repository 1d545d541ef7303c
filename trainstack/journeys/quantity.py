"""Kubernetes resource quantities as exact numbers, and resource lists added, maxed and compared.

A quantity is a decimal number with an optional binary (Ki..Ei) or decimal (m, k..E) suffix, or an exponent
(kubernetes/apimachinery pkg/api/resource/quantity.go, "The serialization format"). Values are kept as
`Fraction`s, so `100m` CPU and `0.1` compare equal and nothing rounds. The engine records numbers as doubles,
so a number is read as its decimal text.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from fractions import Fraction
from typing import Any

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {"n": Fraction(1, 10**9), "u": Fraction(1, 10**6), "m": Fraction(1, 1000), "": Fraction(1)}
_DECIMAL |= {"k": Fraction(10**3), "M": Fraction(10**6), "G": Fraction(10**9), "T": Fraction(10**12)}
_DECIMAL |= {"P": Fraction(10**15), "E": Fraction(10**18)}
_QUANTITY = re.compile(r"^([+-]?(?:\d+\.?\d*|\.\d+))(?:([eE][+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?)$")

Resources = dict[str, Fraction]


def parse(value: Any) -> Fraction:
    """The quantity `value` (a string such as `2Gi`, `500m`, `1e3`, or a number) as an exact number."""
    text = repr(value) if isinstance(value, float) else str(value)  # 1e+23, as Go's JSON writes it: 10**23
    match = _QUANTITY.match(text.strip())
    if match is None:
        raise ValueError(f"not a Kubernetes quantity: {value!r}")
    number, exponent, suffix = match.groups()
    base = Fraction(number)
    if exponent:
        return base * Fraction(10) ** int(exponent[1:])
    if suffix in _BINARY:
        return base * _BINARY[suffix]
    return base * _DECIMAL[suffix or ""]


def resources(mapping: Mapping[str, Any] | None) -> Resources:
    """A resource list (`requests`, `limits`, a quota's `hard`) as exact numbers."""
    return {name: parse(value) for name, value in (mapping or {}).items()}


def add(*lists: Mapping[str, Fraction]) -> Resources:
    total: Resources = {}
    for resource_list in lists:
        for name, value in resource_list.items():
            total[name] = total.get(name, Fraction(0)) + value
    return total


def scale(resource_list: Mapping[str, Fraction], times: int) -> Resources:
    return {name: value * times for name, value in resource_list.items()}


def maximum(lists: Iterable[Mapping[str, Fraction]]) -> Resources:
    """Per resource, the largest value any list has."""
    top: Resources = {}
    for resource_list in lists:
        for name, value in resource_list.items():
            top[name] = max(top.get(name, value), value)
    return top


def over(used: Mapping[str, Fraction], capacity: Mapping[str, Fraction]) -> dict[str, tuple[Fraction, Fraction]]:
    """The resources `used` takes more of than `capacity` has (a resource `capacity` lacks has 0)."""
    return {
        name: (value, capacity.get(name, Fraction(0)))
        for name, value in sorted(used.items())
        if value > capacity.get(name, Fraction(0))
    }


GIB = Fraction(2**30)


def _one_decimal(value: float) -> str:
    """`23.9`, and `254` rather than `254.0` (a whole number reads, and is written to JSON text, as one)."""
    return f"{value:.1f}".removesuffix(".0")


def cpu_text(value: Fraction) -> str:
    """CPU as a reader wants it: `23.9` vCPU."""
    return _one_decimal(float(value))


def gib_text(value: Fraction) -> str:
    return f"{_one_decimal(float(value / GIB))} GiB"


def text(name: str, value: Fraction) -> str:
    """A quantity for a message: CPU in vCPU, byte resources in GiB, counts as they are."""
    if name == "cpu":
        return f"{cpu_text(value)} vCPU"
    if name in ("memory", "ephemeral-storage") or name.startswith("hugepages-"):
        return gib_text(value)
    return f"{float(value):g}"

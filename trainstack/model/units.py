"""How a quantity is written: dollars, bandwidth, throughput, percent, signed changes.

The model's figures and risks (trainstack/model/verdict.py) and every view write a quantity the same way, so the
words live here, below both.
"""

from __future__ import annotations


def usd(value: float) -> str:
    """Dollars with cents below $1,000 and whole dollars above."""
    return f"${value:,.2f}" if abs(value) < 1000 else f"${value:,.0f}"


def unit_usd(value: float) -> str:
    """A unit price with the precision list prices have ($0.045, $0.1008)."""
    text = f"{value:,.4f}".rstrip("0")
    whole, _, cents = text.partition(".")
    return f"${whole}.{cents.ljust(2, '0')}"


def signed_usd(value: float) -> str:
    return ("+" if value >= 0 else "-") + usd(abs(value))


def gbps(value: float) -> str:
    """Gbit/s, switching to Tbit/s from 1,000."""
    if value >= 1000:
        return f"{value / 1000:,.1f} Tbit/s"
    return f"{value:,.0f} Gbit/s"


def gbps_row(*values: float, signed_last: bool = False) -> list[str]:
    """Several bandwidths in one unit (the largest value's), so a row never mixes Tbit/s and Gbit/s; with
    `signed_last` the last value is a change and carries its sign."""
    tera = max((abs(v) for v in values), default=0.0) >= 1000
    out: list[str] = []
    for i, v in enumerate(values):
        sign = "+" if signed_last and i == len(values) - 1 and v >= 0 else ""
        out.append(f"{sign}{v / 1000:,.1f} Tbit/s" if tera else f"{sign}{v:,.0f} Gbit/s")
    return out


def gbps_pair(after: float, before: float) -> tuple[str, str]:
    """(after, before) in one unit."""
    a, b = gbps_row(after, before)
    return a, b


def mb_s(value: float) -> str:
    return f"{value / 1000:,.1f} GB/s" if value >= 1000 else f"{value:,.0f} MB/s"


def percent(value: float) -> str:
    return f"{value * 100:.0f}%"


def signed(value: float, unit: str = "") -> str:
    text = f"{value:+,.0f}" if float(value).is_integer() else f"{value:+,.1f}"
    return f"{text}{unit}"

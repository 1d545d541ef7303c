"""Number formatting and plain-text tables shared by the renderers."""

from __future__ import annotations

from collections.abc import Sequence


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


def mb_s(value: float) -> str:
    return f"{value / 1000:,.1f} GB/s" if value >= 1000 else f"{value:,.0f} MB/s"


def percent(value: float) -> str:
    return f"{value * 100:.0f}%"


def signed(value: float, unit: str = "") -> str:
    text = f"{value:+,.0f}" if float(value).is_integer() else f"{value:+,.1f}"
    return f"{text}{unit}"


def table(headers: Sequence[str], rows: Sequence[Sequence[str]], indent: str = "  ") -> list[str]:
    """A plain left-aligned table with a header rule; numbers are pre-formatted strings."""
    widths = [len(h) for h in headers]
    for row in rows:
        widths = [max(w, len(cell)) for w, cell in zip(widths, row, strict=True)]
    lines = [indent + "  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip()]
    lines.append(indent + "  ".join("-" * w for w in widths))
    lines += [indent + "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows]
    return lines


def short(value: object, limit: int = 60) -> str:
    text = repr(value) if not isinstance(value, str) else value
    return text if len(text) <= limit else text[: limit - 3] + "..."

"""Numbers as people read them: one rule for times, percentages, shares and counts, in every format.

* **Times** are given in µs (the documents' unit) and printed with three significant digits in the
  largest unit that keeps the number at or above one: ``850 µs``, ``4.87 ms``, ``1.50 s``. Never
  ``us``, never a fourth digit that a profile's run-to-run noise does not support.
* **Percentages** (0..100) and **shares** (0..1) have one decimal and a space before the sign:
  ``21.9 %``; a tiny non-zero value is ``<0.1 %`` rather than a misleading ``0.0 %``; a change is
  signed (``+3.4 %``, ``-11.2 %``). A figure quoted from a source keeps its own digits (``30–50 %``).
* **Counts** have thousands separators: ``1,234``.

Each format takes its ``Units``: ``TEXT`` (terminal and markdown: a plain space and ``-``) or
``HTML`` (a no-break space, so ``4.87 ms`` never breaks across lines, and the minus sign).
Missing or non-finite values print as ``—``. Nothing here computes a figure: the documents hold
them, this only writes them.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

NBSP = "\u00a0"
MISSING = "—"

#: Time units from the largest, with their size in µs.
_TIME_UNITS = ((1e6, "s"), (1e3, "ms"), (1.0, "µs"))


def as_float(value: Any) -> float | None:
    """A finite float, or None for missing / non-numeric / NaN values."""
    if isinstance(value, bool) or value is None:
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def _three_digits(value: float) -> str:
    size = abs(value)
    if size >= 100:
        return f"{value:,.0f}"
    if size >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def split_time(us: Any) -> tuple[str, str] | None:
    """(number, unit) of a duration given in µs by the time rule, e.g. ``("4.87", "ms")``; None when missing."""
    value = as_float(us)
    if value is None:
        return None
    if value == 0:
        return "0", "µs"
    rounded = abs(float(f"{value:.3g}"))  # 999.7 µs rounds to 1.00 ms, not to "1,000 µs"
    size, unit = next(((size, unit) for size, unit in _TIME_UNITS if rounded >= size), _TIME_UNITS[-1])
    return _three_digits(value / size), unit


class Units(NamedTuple):  # built at start-up: a NamedTuple is ~5x cheaper than a frozen dataclass (count() is ours)
    """The number rule, written with one format's space before a unit and minus sign."""

    space: str = " "
    minus: str = "-"

    def _signed(self, text: str) -> str:
        return text.replace("-", self.minus) if self.minus != "-" else text

    def time(self, us: Any) -> str:
        """A duration given in µs: ``850 µs``, ``4.87 ms``, ``1.50 s``."""
        parts = split_time(us)
        if parts is None:
            return MISSING
        return self._signed(parts[0]) + self.space + parts[1]

    def time_range(self, low_us: Any, high_us: Any) -> str:
        """``5.21–7.82 ms`` (the unit once when both ends share it), one value when both print the same."""
        low, high = split_time(low_us), split_time(high_us)
        if low is None or high is None:
            return self.time(high_us if low is None else low_us)
        if low == high:
            return self.time(high_us)
        if low[1] == high[1]:
            return f"{self._signed(low[0])}–{self.time(high_us)}"
        return f"{self.time(low_us)} – {self.time(high_us)}"

    def time_tick(self, us: float) -> str:
        """An axis tick of a time chart: a round value without superfluous decimals (``0``, ``2.5 ms``)."""
        if us == 0:
            return "0"
        size, unit = next(((size, unit) for size, unit in _TIME_UNITS if abs(us) >= size), _TIME_UNITS[-1])
        return f"{us / size:g}{self.space}{unit}"

    def pct_tick(self, pct: float) -> str:
        """An axis tick of a percentage chart: ``25 %``."""
        return f"{pct:g}{self.space}%"

    def pct(self, pct: Any, *, signed: bool = False) -> str:
        """A percentage given as 0..100: ``21.9 %``, ``<0.1 %`` for a tiny non-zero value, ``+3.4 %`` signed."""
        value = as_float(pct)
        if value is None:
            return MISSING
        if value != 0 and abs(value) < 0.05 and not signed:
            return f"<0.1{self.space}%"
        return self._signed(f"{value:+.1f}" if signed else f"{value:.1f}") + f"{self.space}%"

    def share(self, share: Any, *, signed: bool = False) -> str:
        """A share given as 0..1, as a percentage (``0.219`` -> ``21.9 %``)."""
        value = as_float(share)
        return MISSING if value is None else self.pct(value * 100, signed=signed)

    def pct_range(self, low_pct: Any, high_pct: Any) -> str:
        """``4.5–6.3 %`` (percentages 0..100), one value when both ends print the same."""
        low, high = as_float(low_pct), as_float(high_pct)
        if low is None or high is None:
            return MISSING
        if abs(high - low) < 0.05:
            return self.pct(high)
        return f"{self._signed(f'{low:.1f}')}–{self.pct(high)}"

    def share_range(self, low: Any, high: Any) -> str:
        """A range of two shares (0..1) as percentages: ``30.0–45.0 %``."""
        low, high = as_float(low), as_float(high)
        return MISSING if low is None or high is None else self.pct_range(low * 100, high * 100)

    def quoted_pct(self, low_pct: float, high_pct: float) -> str:
        """A percentage range as its source states it (``30–50 %``, ``12.5 %``): a quoted figure keeps its digits."""
        span = f"{low_pct:g}–{high_pct:g}" if low_pct != high_pct else f"{low_pct:g}"
        return self._signed(span) + f"{self.space}%"

    def count(self, count: Any) -> str:
        """A whole number with thousands separators: ``1,234``."""
        value = as_float(count)
        return MISSING if value is None else f"{int(value):,}"

    def number(self, value: Any, digits: int = 1) -> str:
        """A plain figure (a rate, an intensity) with thousands separators, or ``""`` when missing."""
        number = as_float(value)
        return "" if number is None else self._signed(f"{number:,.{digits}f}")


#: Terminal tables and markdown.
TEXT = Units()
#: HTML reports: numbers and units never split across lines; a real minus sign.
HTML = Units(space=NBSP, minus="\u2212")

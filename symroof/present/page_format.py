"""Numbers on the Try-it page: the seed's figures (2,731; 85; 1.0; 0.25), with prefixes.

Every rule here is :func:`symroof.present.numbers.grouped` with a number of decimal
places chosen from the value: none from 10 up, else two significant figures. The page's
script carries a line-for-line JavaScript copy of these functions (``page/sim.js.j2``)
and the browser tests check that both write the same text for the same double. Choices
compare the value's double with decimal literals (``1e-3``), which Python and
JavaScript read as the same double, so the two never disagree at a boundary.

>>> figure(8192 / 3), figure(256 / 3), figure(1.0), figure(200 / 11), figure(0.25)
('2,731', '85', '1.0', '18', '0.25')
>>> prefixed(2 * 8192**3, "FLOP"), prefixed(402653184, "B"), prefixed(512, "B")
('1.1 TFLOP', '403 MB', '512 B')
>>> duration(1.1113e-3), duration(2.0e-5), duration(3.2), duration(4e-10)
('1.1 ms', '20 µs', '3.2 s', '0.40 ns')
"""

from __future__ import annotations

import math
from numbers import Real

import sympy as sp

from symroof.errors import SymroofError
from symroof.present.numbers import PREFIXES, TIME_UNITS, grouped

__all__ = ["decimals", "figure", "prefixed", "duration", "PREFIXES", "TIME_UNITS",
           "MAX_DECIMALS"]

#: The most decimal places a figure gets (values below 1e-20 print as 0.000...).
MAX_DECIMALS = 21


def _double(x: object) -> float:
    """``x`` as the double the page computes with; never NaN, an infinity or negative."""
    value = math.nan
    if isinstance(x, (Real, sp.Basic)) and not isinstance(x, bool):
        try:
            value = float(x)
        except (TypeError, ValueError, OverflowError):   # zoo, a free symbol, 10**400
            pass
    if not math.isfinite(value) or value < 0:
        raise SymroofError(f"page number: expected a finite non-negative value, got {x!r}")
    return value


def decimals(x: object) -> int:
    """Decimal places for ``x``: 0 from 10 up, else as many as two significant figures need.

    >>> decimals(2730.67), decimals(9.5), decimals(0.25), decimals(0.01)
    (0, 1, 2, 3)
    """
    value = _double(x)
    if value >= 10 or value == 0:
        return 0
    for places in range(1, MAX_DECIMALS):
        if value >= float(f"1e-{places - 1}"):
            return places
    return MAX_DECIMALS


def figure(x: object) -> str:
    """``x`` as the seed prints its figures: ``grouped`` at :func:`decimals` places."""
    value = _double(x)
    return grouped(value, decimals(value))


def prefixed(x: object, unit: str) -> str:
    """``x`` with the largest decimal prefix that keeps it at 1 or more: ``1.1 TFLOP``."""
    value = _double(x)
    for prefix, power in PREFIXES:
        if value >= float(f"1e{power}"):
            return f"{figure(value / float(f'1e{power}'))} {prefix}{unit}"
    return f"{figure(value)} {unit}"


def duration(seconds: object) -> str:
    """A time in s, ms, µs or ns, whichever keeps it at 1 or more (ns below that)."""
    value = _double(seconds)
    for unit, power in TIME_UNITS:
        if value >= float(f"1e-{power}") or unit == "ns":
            return f"{figure(value * float(f'1e{power}'))} {unit}"
    raise AssertionError("unreachable: ns always matches")

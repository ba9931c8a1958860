"""Numbers for people and for machines: text, JSON, exact strings, SI and binary prefixes.

Every number that leaves symroof passes through here. Exact values stay exact where a
reader may want them (``"19788/67"``), text rounds to six significant figures, and a
value too large for a float is written in scientific notation from its exact digits,
never as ``inf``.

>>> text_number(sp.Integer(2048)), text_number(sp.Rational(8192, 3)), text_number(sp.Integer(10)**300 * 3)
('2048', '2730.67', '3.0000e+300')
>>> json_number(sp.Rational(1, 4)), json_number(sp.Integer(7)), exact(sp.Rational(19788, 67))
(0.25, 7, '19788/67')
>>> si(sp.Integer(80) * 10**9, "B"), si(sp.Integer(50) * 2**20, "B"), si(sp.Rational(989400) * 10**9, "FLOP/s", 12)
('80 GB', '50 MiB', '989.4 TFLOP/s')
"""

from __future__ import annotations

import math
from typing import Any

import sympy as sp
from mpmath.libmp import from_rational, to_str

from symroof.errors import SymroofError
from symroof.present.formula import text

__all__ = ["exact", "exact_fields", "json_number", "text_number", "scientific", "si",
           "grouped", "MAX_JSON_DIGITS"]

#: Integers with more digits than this are written in scientific notation (Python
#: refuses to print integers past 4,300 digits, and no reader wants them).
MAX_JSON_DIGITS = 30

_TEN, _TWO = sp.Integer(10), sp.Integer(2)


def _finite(x: sp.Expr, what: str) -> sp.Expr:
    if x.has(sp.oo, -sp.oo, sp.zoo, sp.nan):
        raise SymroofError(f"{what}: {x} is not a finite number")
    return x


def scientific(x: sp.Expr, digits: int = 5) -> str:
    """``x`` as ``d.dddde+NN`` from its exact value (no float overflow, no digit limit)."""
    v = sp.Rational(_finite(sp.sympify(x), "number"))
    mpf = from_rational(v.p, v.q, 4 * digits + 20)
    text = to_str(mpf, digits, min_fixed=1, max_fixed=0, show_zero_exponent=True)
    mantissa, _, exponent = text.partition("e")
    power = int(exponent)
    return f"{float(mantissa):.{digits - 1}f}e{'+' if power >= 0 else '-'}{abs(power):02d}"


def _fits_float(x: sp.Expr) -> bool:
    return x == 0 or 1e-300 < abs(x) < 1e300


def exact(value: sp.Expr) -> int | str:
    """An exact rational as an int, or a ``"p/q"`` string."""
    v = sp.Rational(value)
    return int(v) if v.q == 1 else f"{v.p}/{v.q}"


def exact_fields(key: str, value: sp.Expr | None, *, always_float: bool = False) -> dict[str, Any]:
    """``{key: exact}``, plus ``key_float`` for a non-integer (or when asked)."""
    if value is None:
        return {key: None}
    v = sp.Rational(value)
    return {key: exact(v),
            **({f"{key}_float": json_number(v)} if always_float or v.q != 1 else {})}


def json_number(x: sp.Expr | None) -> object:
    """A JSON value: an int for an integer, a float otherwise, a string for an expression
    or for a value beyond a float's range; never NaN or Infinity."""
    if x is None:
        return None
    if not isinstance(x, sp.Basic):
        x = sp.sympify(x)
    _finite(x, "JSON value")
    if x.free_symbols:
        return str(x)
    if x.is_Integer:
        return int(x) if abs(x) < _TEN**MAX_JSON_DIGITS else scientific(x, 12)
    if not _fits_float(x):
        return scientific(x, 12)
    return float(x)


def text_number(x: sp.Expr) -> str:
    """Six significant figures; integers below a million as they are; an expression in
    the textbook's form."""
    if not isinstance(x, sp.Basic):
        x = sp.sympify(x)
    _finite(x, "value")
    if x.free_symbols:
        return text(x)
    if x.is_Integer and abs(x) < 10**6:
        return str(int(x))
    if not _fits_float(x) or abs(x) >= 1e6:
        return scientific(x, 5)
    return f"{float(x):.6g}"


def grouped(x: sp.Expr, decimals: int = 0, sep: str = ",") -> str:
    """``x`` rounded to ``decimals`` places with thousands grouped: ``2,731`` (text) or,
    with ``sep="{,}"``, LaTeX."""
    value = float(_finite(sp.sympify(x), "value"))
    if not math.isfinite(value):
        return scientific(x, 5)
    return f"{value:,.{decimals}f}".replace(",", sep)


def si(value: sp.Expr, unit: str, top: int = 15) -> str:
    """``value`` with a binary prefix if it is an exact Ki/Mi/Gi/Ti multiple, else decimal
    (prefixes up to 10**top)."""
    v = sp.Rational(value)
    for k, prefix in ((4, "Ti"), (3, "Gi"), (2, "Mi"), (1, "Ki")):
        scaled = v / _TWO**(10 * k)
        if scaled >= 1 and scaled.q == 1 and (v / _TEN**(3 * k)).q != 1:
            return f"{scaled} {prefix}{unit}"
    for power, prefix in ((15, "P"), (12, "T"), (9, "G"), (6, "M"), (3, "k"), (0, "")):
        if power <= top and (v >= _TEN**power or power == 0):
            return f"{text_number(v / _TEN**power)} {prefix}{unit}"
    raise AssertionError("unreachable: power 0 always matches")

"""Numbers for people and for machines: text, JSON, exact strings, SI and binary prefixes.

Every number that leaves symroof passes through here. Exact values stay exact where a
reader may want them (``"19788/67"``), text rounds to six significant figures, and a
value too large for a float is written in scientific notation from its exact digits,
never as ``inf``. A value that is not a finite real number (``nan``, ``oo``, ``zoo``, an
imaginary part) is a SymroofError, never printed: every number out is valid JSON
(``json.dumps(..., allow_nan=False)``) and finite text.

>>> text_number(sp.Integer(2048)), text_number(sp.Rational(8192, 3)), text_number(sp.Integer(10)**300 * 3)
('2048', '2730.67', '3.0000e+300')
>>> json_number(sp.Rational(1, 4)), json_number(sp.Integer(7)), exact(sp.Rational(19788, 67))
(0.25, 7, '19788/67')
>>> si(sp.Integer(80) * 10**9, "B"), si(sp.Integer(50) * 2**20, "B"), si(sp.Rational(989400) * 10**9, "FLOP/s", 12)
('80 GB', '50 MiB', '989.4 TFLOP/s')
>>> text_number(sp.sqrt(2) * 10**400), json_number(sp.exp(800)), exact(sp.sqrt(8))
('1.4142e+400', '2.72637457211e+347', '2*sqrt(2)')
>>> json_number(sp.nan)
Traceback (most recent call last):
...
symroof.errors.SymroofError: JSON value: nan is not a finite real number
"""

from __future__ import annotations

import math
from typing import Any

import sympy as sp
from mpmath.libmp import to_str

from symroof.errors import SymroofError
from symroof.present.formula import scientific_text, text
from symroof.units import DECIMAL, prefix

__all__ = ["exact", "exact_fields", "json_number", "text_number", "scientific", "si",
           "grouped", "quantity", "PREFIXES", "TIME_UNITS", "STYLES", "MAX_JSON_DIGITS"]

#: The decimal prefixes above one, largest first, with the power of ten of each (the
#: console, the reports, the charts and the Try-it page read it): of the one table,
#: :data:`symroof.units.DECIMAL`.
PREFIXES: tuple[tuple[str, int], ...] = tuple((p, power) for p, power in DECIMAL if power > 0)
#: The lowest unit of time the writers use (nanoseconds).
_TIME_BOTTOM = -9
#: Units of time, largest first, with the power of ten that turns seconds into each (the
#: one table's prefixes from one down to nano).
TIME_UNITS: tuple[tuple[str, int], ...] = tuple(
    (p + "s", -power) for p, power in DECIMAL if _TIME_BOTTOM <= power <= 0)
#: How :func:`quantity` writes a number and its unit for each kind of output.
STYLES = ("text", "latex", "html", "pgf")

#: Integers with more digits than this are written in scientific notation (Python
#: refuses to print integers past 4,300 digits, and no reader wants them).
MAX_JSON_DIGITS = 30

_TEN, _TWO = sp.Integer(10), sp.Integer(2)


def _finite(x: object, what: str) -> sp.Expr:
    """``x`` as a SymPy value, refused unless finite and real (where it is a number)."""
    if isinstance(x, sp.Rational):  # always finite and real: most values, checked fast
        return x
    if isinstance(x, bool) or not isinstance(x, (sp.Basic, int, float)):
        raise SymroofError(f"{what}: expected a number, got {type(x).__name__} {x!r}")
    if isinstance(x, float) and not math.isfinite(x):
        raise SymroofError(f"{what}: {x} is not a finite real number")
    value = (sp.Rational(repr(x)) if isinstance(x, float) else sp.Integer(x)
             if isinstance(x, int) else x)
    if not isinstance(value, sp.Expr) or value.has(sp.oo, -sp.oo, sp.zoo, sp.nan) or \
            value.has(sp.I) or value.is_extended_real is False:
        raise SymroofError(f"{what}: {value} is not a finite real number")
    return value


def scientific(x: sp.Expr, digits: int = 5) -> str:
    """``x`` as ``d.dddde+NN`` from its exact value (no float overflow, no digit limit)."""
    v = _finite(x, "number")
    if v.is_Rational:
        return scientific_text(v.p, v.q, digits)
    approx = v.evalf(digits + 5)
    if not approx.is_Float:
        raise SymroofError(f"number: {v} has no numeric value")
    shown = to_str(approx._mpf_, digits, min_fixed=1, max_fixed=0, show_zero_exponent=True)
    mantissa, _, exponent = shown.partition("e")
    power = int(exponent)
    return f"{float(mantissa):.{digits - 1}f}e{'+' if power >= 0 else '-'}{abs(power):02d}"


def _fits_float(x: sp.Expr) -> bool:
    if x.is_Rational:
        return x == 0 or 1e-300 < abs(x) < 1e300
    approx = sp.Abs(x).evalf(15)
    return approx.is_Float and (approx == 0 or 1e-300 < approx < 1e300)


def exact(value: sp.Expr) -> int | str:
    """An exact rational as an int, or a ``"p/q"`` string (another exact number in SymPy
    syntax)."""
    v = _finite(value, "exact value")
    if not v.is_Rational:
        return str(v)
    return int(v) if v.q == 1 else f"{v.p}/{v.q}"


def exact_fields(key: str, value: sp.Expr | None, *, always_float: bool = False) -> dict[str, Any]:
    """``{key: exact}``, plus ``key_float`` for a non-integer (or when asked)."""
    if value is None:
        return {key: None}
    v = _finite(value, key)
    return {key: exact(v),
            **({f"{key}_float": json_number(v)} if always_float or not v.is_Integer else {})}


def json_number(x: sp.Expr | None) -> object:
    """A JSON value: an int for an integer, a float otherwise, a string for an expression
    or for a value beyond a float's range; never NaN or Infinity."""
    if x is None:
        return None
    x = _finite(x, "JSON value")
    if x.free_symbols:
        return str(x)
    if x.is_Integer:
        return int(x) if abs(x) < _TEN**MAX_JSON_DIGITS else scientific(x, 12)
    if not _fits_float(x):
        return scientific(x, 12)
    value = float(x)
    if not math.isfinite(value):  # pragma: no cover - _fits_float keeps this out
        return scientific(x, 12)
    return value


def text_number(x: sp.Expr) -> str:
    """Six significant figures; integers below a million as they are; an expression in
    the textbook's form."""
    x = _finite(x, "value")
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
    v = _finite(x, "value")
    if not _fits_float(v):
        return scientific(v, 5)
    value = float(v)
    return f"{value:,.{decimals}f}".replace(",", sep)


def quantity(value: object, unit: str, *, digits: int = 4, style: str = "text") -> str:
    """``value`` in ``unit`` to ``digits`` significant figures, with the largest prefix of
    :data:`PREFIXES` (a time: the unit of :data:`TIME_UNITS`) that keeps the number at 1
    or more; the one formatter of quantities for people.

    ``style`` is ``text`` (``17.64 GB``, ``4.52 ms``; microseconds as ``us``, plain ASCII
    for any terminal), ``latex`` (``17.64\\,\\mathrm{GB}``, for math mode), ``html``
    (``17.64&#8239;GB``, a narrow no-break space) or ``pgf`` (``17.64\\,GB``, a chart's
    text mode). A value with free symbols is its formula in the bare unit.

    >>> quantity(17.6431e9, "B"), quantity(0.00451968, "s"), quantity(3e-5, "s")
    ('17.64 GB', '4.52 ms', '30 us')
    >>> print(quantity(4e-10, "s", style="html"), quantity(989.4e12, "FLOP/s", digits=3, style="latex"))
    0.4&#8239;ns 989\\,\\mathrm{TFLOP/s}
    """
    if style not in STYLES:
        raise SymroofError(f"quantity style: expected one of {', '.join(STYLES)}, got {style!r}")
    exact_value = value if isinstance(value, sp.Basic) and value.free_symbols else \
        _finite(value, unit)
    if exact_value.free_symbols or not _fits_float(exact_value):
        number, shown = text_number(exact_value), unit   # a formula, or beyond a float
    else:
        v = float(exact_value)
        v = float(f"{v:.{digits - 1}e}")   # rounded first: 999.96e9 B is 1 TB, not 1000 GB
        shown, number = unit, ""
        if unit == "s":
            name, power = prefix(v, top=0, bottom=_TIME_BOTTOM)
            shown, number = name + "s", f"{v * 10.0**-power:.{digits}g}"
        else:
            name, power = prefix(v, top=PREFIXES[0][1])
            shown, number = name + unit, f"{v / 10.0**power:.{digits}g}"
    if style == "text":
        return f"{number} {shown.replace('µs', 'us')}"
    if style == "html":
        return f"{number}&#8239;{shown}"
    if style == "pgf":
        return number + r"\," + shown.replace("µs", r"$\mu$s")
    return number + r"\,\mathrm{" + shown.replace("µs", r"\mu s") + "}"


def si(value: sp.Expr, unit: str, top: int = 15) -> str:
    """``value`` with a binary prefix if it is an exact Ki/Mi/Gi/Ti multiple, else decimal
    (prefixes up to 10**top)."""
    v = _finite(value, unit)
    if not v.is_Rational or not _fits_float(v):
        return f"{text_number(v)} {unit}"
    for k, prefix in ((4, "Ti"), (3, "Gi"), (2, "Mi"), (1, "Ki")):
        scaled = v / _TWO**(10 * k)
        if scaled >= 1 and scaled.q == 1 and (v / _TEN**(3 * k)).q != 1:
            return f"{scaled} {prefix}{unit}"
    for prefix, power in (*PREFIXES, ("", 0)):
        if power <= top and (v >= _TEN**power or power == 0):
            return f"{text_number(v / _TEN**power)} {prefix}{unit}"
    raise AssertionError("unreachable: power 0 always matches")

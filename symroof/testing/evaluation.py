"""Numbers: exact and bounded-precision values of a formula at a point, and whether two
values agree within a tolerance.
(Part of :mod:`symroof.testing`.)
"""

from __future__ import annotations

# imports inside functions: sympy, mpmath and symroof load on first use, because pytest
# imports this plugin at start-up in every project that has symroof installed
import math
import numbers
from collections.abc import Mapping
from typing import TYPE_CHECKING

from symroof.testing.shown import _nonfinite

if TYPE_CHECKING:
    import mpmath
    import sympy as sp


_INEXACT_REL = 1e-12  # default tolerance for irrational or float values (rel=None)
_DIGITS = 30          # significant digits an irrational or float value is evaluated to


def _exact(x: sp.Expr) -> tuple[sp.Rational, sp.Rational] | None:
    """(re, im) of an exact Gaussian rational such as 3, 1/2 or 1 + 2*I; else None."""
    import sympy as sp
    if x.is_Rational:
        return x, sp.Integer(0)
    if (x.is_Add or x.is_Mul or x is sp.I) and x.has(sp.I) and not x.has(sp.Float):
        re, im = x.as_real_imag()
        if re.is_Rational and im.is_Rational:
            return re, im
    return None


def _numeric(x: sp.Expr, digits: int) -> mpmath.mpc | None:
    """*x* to *digits* significant digits as an mpmath complex, or None if not a number."""
    import mpmath
    try:
        v = x.evalf(digits, maxn=4 * digits + 100)
        re, im = v.as_real_imag()
    except Exception:   # SymPy cannot evaluate it: not a number to compare
        return None
    if not (re.is_Number and im.is_Number and re.is_finite and im.is_finite):
        return None
    with mpmath.workdps(digits + 10):   # mpc() rounds to the working precision
        part = [mpmath.mp.make_mpf(p._mpf_) if p.is_Float else mpmath.mpf(int(p)) for p in (re, im)]
        return mpmath.mpc(part[0], part[1])


def _within(x: sp.Expr, y: sp.Expr, rel: float, abs_: float) -> bool | None:
    """``|x - y| <= max(rel * max(|x|, |y|), abs_)``; None where a side is not a number.

    Exact for (Gaussian) rationals. Other values are evaluated separately to at least 30
    digits (never ``x - y`` symbolically, which SymPy may not finish), so ``rel`` below
    about 1e-25 acts as "equal to 25 digits". nan, zoo, oo and -oo are equal to nothing.
    """
    import mpmath
    import sympy as sp
    if _nonfinite(x) or _nonfinite(y):
        return False
    if x == y:
        return True
    ex, ey = _exact(x), _exact(y)
    if ex is not None and ey is not None:
        d2 = (ex[0] - ey[0]) ** 2 + (ex[1] - ey[1]) ** 2
        scale2 = max(ex[0] ** 2 + ex[1] ** 2, ey[0] ** 2 + ey[1] ** 2)
        return bool(d2 <= max(sp.Rational(rel) ** 2 * scale2, sp.Rational(abs_) ** 2))
    digits = _DIGITS if rel == 0 or rel >= 1e-20 else min(int(-math.log10(rel)) + 15, 2000)
    xv, yv = _numeric(x, 15), _numeric(y, 15)
    if xv is None or yv is None:
        return None
    with mpmath.workdps(30):
        scale = max(abs(xv), abs(yv))
        if abs_ > 0 and scale > abs_:   # an absolute tolerance needs the digits down to it
            digits = max(digits, min(int(mpmath.log10(scale / abs_)) + 15, 20_000))
    xv, yv = _numeric(x, digits), _numeric(y, digits)
    if xv is None or yv is None:
        return None
    with mpmath.workdps(digits + 10):
        d, scale = abs(xv - yv), max(abs(xv), abs(yv))
        noise = scale * mpmath.mpf(10) ** (5 - digits)   # rounding, where rel asks for less
        return bool(d <= max(rel * scale, abs_, noise if rel < 10.0 ** (5 - digits) else 0))


class _Undefined(Exception):
    """A formula has no value at a point (a division by zero, nan, an error in SymPy)."""


def _evaluate(expr: sp.Expr, point: Mapping[sp.Symbol, sp.Expr],
              finite: bool = False) -> sp.Expr | None:
    """*expr* at *point*: a number, None if symbols are left; _Undefined if SymPy fails
    (or, with *finite*, if the value is nan, zoo, oo or -oo)."""
    try:
        value = expr.xreplace(dict(point))
        value = value if value.is_number else value.doit()
    except Exception as exc:   # Max(2, zoo), comparisons of complex values, ...
        raise _Undefined(f"{type(exc).__name__}: {exc}") from None
    if not value.is_number:
        return None
    bad = _nonfinite(value) if finite else None
    if bad:
        raise _Undefined(bad)
    return value


def _check_tol(tol: object, fn: str, name: str = "rel") -> None:
    if (isinstance(tol, bool) or not isinstance(tol, numbers.Real) or not math.isfinite(tol)
            or tol < 0):
        raise ValueError(f"{fn}: {name} must be a finite non-negative number, got {tol!r}")

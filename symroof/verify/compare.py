"""A claimed figure against the derived one, within the rounding the document used.

Rounding rules (a claim's ``rounding`` table, one key):

- ``exact = true``: equal exactly (formulas: ``cancel(derived - claimed) == 0``);
- ``sig = k``: the claim printed k significant figures: within half a unit of its last one;
- ``decimals = k``: k decimals: within half of 10**-k;
- ``rel = r`` ("about", "~"): within r of the claimed value, relatively;
- ``abs = a``: within a;
- ``orders = x`` ("an order of magnitude"): within x decades;
- ``less_than``, ``at_most``, ``greater_than``, ``at_least`` (= true): the claim is a bound.

Comparisons are exact (rationals), so a figure that rounds to the claim matches however
many digits the derivation carries.

>>> status(sp.Rational(8192, 3), sp.Integer(2731), {"sig": 4})
'match'
>>> status(sp.Rational(8192, 3), sp.Integer(2730), {"sig": 4})
'mismatch'
>>> status(sp.Rational(548, 1000), sp.Rational(9, 100), {"decimals": 0}, sp.Rational(1, 100))
'mismatch'
>>> tolerance_text({"rel": 0.05})
'within 5%'
"""

from __future__ import annotations

from collections.abc import Mapping

import sympy as sp

from symroof.errors import SymroofError

__all__ = ["RULES", "check_rounding", "status", "tolerance_text"]

RULES = ("exact", "sig", "decimals", "rel", "abs", "orders", "less_than", "at_most",
         "greater_than", "at_least")


def check_rounding(rounding: object, where: str) -> dict[str, object]:
    """``rounding`` validated: a table with exactly one rule of :data:`RULES`."""
    if not isinstance(rounding, Mapping) or len(rounding) != 1:
        raise SymroofError(f"{where}: expected a table with one of {', '.join(RULES)}, "
                           f"got {rounding!r}")
    (rule, value), = rounding.items()
    if rule not in RULES:
        raise SymroofError(f"{where}: unknown rounding rule {rule!r}; expected one of "
                           f"{', '.join(RULES)}")
    if rule in ("sig", "decimals"):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise SymroofError(f"{where}.{rule}: expected a non-negative integer, got {value!r}")
    elif rule in ("rel", "abs", "orders"):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
            raise SymroofError(f"{where}.{rule}: expected a positive number, got {value!r}")
    elif value is not True:
        raise SymroofError(f"{where}.{rule}: expected true, got {value!r}")
    return {rule: value}


def _rational(x: object) -> sp.Rational:
    if isinstance(x, float):
        return sp.Rational(repr(x))
    return sp.Rational(x)


def _exponent(x: sp.Rational) -> int:
    """floor(log10 |x|), exactly."""
    x = abs(x)
    e = len(str(int(x))) - 1 if x >= 1 else -len(str(int(1 / x)))
    while sp.Integer(10) ** e > x:
        e -= 1
    while sp.Integer(10) ** (e + 1) <= x:
        e += 1
    return e


def status(derived: sp.Expr, claimed: sp.Expr, rounding: Mapping[str, object],
           scale: sp.Expr = sp.Integer(1)) -> str:
    """``"match"`` or ``"mismatch"`` for numbers (or formulas, for ``exact``).

    Values are in base units; ``scale`` is base units per one of the claim's unit, so that
    ``decimals`` and ``abs`` count in the unit the document printed (9% to 0 decimals is
    within half a percentage point).
    """
    (rule, value), = rounding.items()
    if derived.free_symbols or claimed.free_symbols:
        if rule != "exact":
            raise SymroofError(f"rounding {rule}: a formula compares exactly, not by {rule}")
        return "match" if sp.cancel(derived - claimed) == 0 else "mismatch"
    if derived.has(sp.oo, -sp.oo, sp.zoo, sp.nan):
        return "mismatch"
    # an irrational derivation (a square root) is compared at 40 significant digits
    d = derived if derived.is_Rational else sp.Rational(str(sp.N(derived, 40)))
    c = _rational(claimed)
    unit = sp.Rational(scale)
    ok = {
        "exact": lambda: d == c,
        "sig": lambda: abs(d - c) <= sp.Rational(1, 2) * sp.Integer(10) ** (
            _exponent(c) - int(value) + 1) if c != 0 else d == 0,  # type: ignore[call-overload]
        "decimals": lambda: abs(d - c) / unit <= sp.Rational(1, 2) * sp.Integer(10) ** (-int(value)),  # type: ignore[call-overload]
        "rel": lambda: abs(d - c) <= _rational(value) * abs(c),
        "abs": lambda: abs(d - c) / unit <= _rational(value),
        "orders": lambda: d > 0 and c > 0 and abs(sp.log(d / c, 10).evalf()) <= float(value),  # type: ignore[arg-type]
        "less_than": lambda: d < c, "at_most": lambda: d <= c,
        "greater_than": lambda: d > c, "at_least": lambda: d >= c,
    }[rule]()
    return "match" if ok else "mismatch"


def tolerance_text(rounding: Mapping[str, object]) -> str:
    """How the comparison was made, in words (for the appendix)."""
    (rule, value), = rounding.items()
    return {
        "exact": "exactly",
        "sig": f"to {value} significant figure{'s' if value != 1 else ''}",
        "decimals": f"to {value} decimal{'s' if value != 1 else ''}",
        "rel": f"within {float(value) * 100:g}%",  # type: ignore[arg-type]
        "abs": f"within {value}", "orders": f"within {value} orders of magnitude",
        "less_than": "below the claimed bound", "at_most": "at most the claimed bound",
        "greater_than": "above the claimed bound", "at_least": "at least the claimed bound",
    }[rule]

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
many digits the derivation carries. An irrational derivation is compared at
:data:`DIGITS` significant digits, so ``sig`` and ``decimals`` are at most that many
(a document prints far fewer); two formulas are compared within the budget's size and
degree limits, their difference cancelled in the guarded child unless it is light
(:mod:`symroof.budget`).

>>> status(sp.Rational(8192, 3), sp.Integer(2731), {"sig": 4})
'match'
>>> status(sp.Rational(8192, 3), sp.Integer(2730), {"sig": 4})
'mismatch'
>>> status(sp.Rational(548, 1000), sp.Rational(9, 100), {"decimals": 0}, sp.Rational(1, 100))
'mismatch'
>>> tolerance_text({"rel": 0.05})
'within 5%'
>>> check_rounding({"sig": 400}, "f.toml:9: claim 'x' field 'rounding'")
Traceback (most recent call last):
...
symroof.errors.SymroofError: f.toml:9: claim 'x' field 'rounding'.sig: expected an integer from 1 to 40 (significant figures as printed), got 400
"""

from __future__ import annotations

from collections.abc import Mapping

import math

import sympy as sp

from symroof.budget import check_expr, check_number, guarded, light
from symroof.errors import SymroofError

__all__ = ["RULES", "DIGITS", "ROUNDING_RULE", "COMPARISONS", "check_rounding", "status",
           "tolerance_text", "comparison", "propagated_halfwidth"]

#: The one rounding rule of every verdict, in words (the report's front matter prints it).
ROUNDING_RULE = (
    "A printed figure is compared at its own precision: k significant figures (or k "
    "decimals) means the derived value must lie within half a unit of the last printed "
    "digit. Where the document computed a figure from other figures it printed (rounded), "
    "that rounding is propagated: the half-units of those inputs, as relative errors, are "
    "added to the tolerance, so a product of two accepted figures is not a mismatch. "
    "'About' and '~' figures are compared within a stated relative tolerance; a bound "
    "('at most', 'at least') is checked against the bound. Derived values are exact "
    "rationals (an irrational one at 40 significant digits), so no rounding of ours "
    "enters a verdict.")

#: How a verdict compares (the JSON's ``comparison``): equal as printed, within a
#: tolerance, or against a bound.
COMPARISONS = ("equal", "within", "at most", "at least")

#: Significant digits an irrational derived value is compared at; ``sig`` and
#: ``decimals`` may not ask for more.
DIGITS = 40

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
        low = 1 if rule == "sig" else 0
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= DIGITS:
            what = "significant figures" if rule == "sig" else "decimals"
            raise SymroofError(f"{where}.{rule}: expected an integer from {low} to {DIGITS} "
                               f"({what} as printed), got {value!r}")
    elif rule in ("rel", "abs", "orders"):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not (
                math.isfinite(value) and value > 0):
            raise SymroofError(f"{where}.{rule}: expected a positive finite number, got "
                               f"{value!r}")
    elif value is not True:
        raise SymroofError(f"{where}.{rule}: expected true, got {value!r}")
    return {rule: value}


def comparison(rounding: Mapping[str, object]) -> str:
    """The kind of comparison ``rounding`` makes (one of :data:`COMPARISONS`).

    >>> comparison({"sig": 3}), comparison({"rel": 0.05}), comparison({"at_most": True})
    ('equal', 'within', 'at most')
    """
    (rule, _), = rounding.items()
    if rule in ("exact", "sig", "decimals"):
        return "equal"
    if rule in ("less_than", "at_most"):
        return "at most"
    if rule in ("greater_than", "at_least"):
        return "at least"
    return "within"


def half_unit(printed: sp.Expr, rounding: Mapping[str, object],
              scale: sp.Expr = sp.Integer(1)) -> sp.Rational:
    """Half a unit of the last printed digit of ``printed`` (base units), 0 for exact.

    >>> half_unit(sp.Rational(53, 10), {"sig": 2})
    1/20
    """
    (rule, value), = rounding.items()
    c = _rational(printed)
    if rule == "sig" and c != 0:
        return sp.Rational(1, 2) * sp.Integer(10) ** (_exponent(c) - int(value) + 1)  # type: ignore[call-overload]
    if rule == "decimals":
        return sp.Rational(1, 2) * sp.Integer(10) ** (-int(value)) * sp.Rational(scale)  # type: ignore[call-overload]
    return sp.Integer(0)


def propagated_halfwidth(claimed: sp.Expr, inputs: list[tuple[sp.Expr, sp.Rational]]
                         ) -> sp.Rational:
    """The extra tolerance of a figure the document computed (by products and quotients)
    from ``inputs``, each (printed value, its half-unit): their relative errors add.

    >>> propagated_halfwidth(sp.Integer(100), [(sp.Integer(10), sp.Rational(1, 2))])
    5
    """
    rel = sum((abs(h / _rational(v)) for v, h in inputs if v != 0), sp.Integer(0))
    return sp.Rational(abs(_rational(claimed)) * rel)


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
           scale: sp.Expr = sp.Integer(1), extra: sp.Expr = sp.Integer(0)) -> str:
    """``"match"`` or ``"mismatch"`` for numbers (or formulas, for ``exact``).

    Values are in base units; ``scale`` is base units per one of the claim's unit, so that
    ``decimals`` and ``abs`` count in the unit the document printed (9% to 0 decimals is
    within half a percentage point). ``extra`` (base units) widens the tolerance by the
    rounding of printed inputs the document propagated (:func:`propagated_halfwidth`).
    """
    (rule, value), = rounding.items()
    if derived.free_symbols or claimed.free_symbols:
        if rule != "exact":
            raise SymroofError(f"rounding {rule}: a formula compares exactly, not by {rule}")
        difference = derived - claimed
        check_expr(difference, "comparing the derived formula with the claimed one")
        same = guarded("comparing the derived formula with the claimed one", _is_zero,
                       difference, unguarded=light(difference))
        return "match" if same else "mismatch"
    if derived.has(sp.oo, -sp.oo, sp.zoo, sp.nan) or derived.is_real is False:
        return "mismatch"
    check_number(derived, "the derived value")
    # an irrational derivation (a square root) is compared at DIGITS significant digits
    d = derived if derived.is_Rational else _decimal(derived)
    c = _rational(claimed)
    unit = sp.Rational(scale)
    if extra and rule in ("sig", "decimals", "rel", "abs") and abs(d - c) <= _rational(extra) + (
            half_unit(c, rounding, unit) if rule in ("sig", "decimals") else
            _rational(value) * abs(c) if rule == "rel" else _rational(value) * unit):
        return "match"
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


def _is_zero(difference: sp.Expr) -> bool:
    return bool(sp.cancel(difference) == 0)


def _decimal(value: sp.Expr) -> sp.Rational:
    """An irrational number as a rational at :data:`DIGITS` significant digits."""
    approx = sp.N(value, DIGITS)
    if not approx.is_Float:
        raise SymroofError(f"the derived value {str(value)[:60]} has no numeric value to "
                           "compare")
    return sp.Rational(str(approx))


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

"""Textbook display forms: results rearranged into the shape a textbook prints them.

The engine keeps expressions cancelled; this step only rearranges for printing (an
unevaluated ``Mul``), so ``display(e)`` equals ``e`` (``cancel`` of the difference is
0). The one rearrangement: an expression ``X/b`` in a bytes-per-value symbol ``b`` is
shown as ``(X expanded)/b`` when every term of X has a monomial denominator, which turns
``2*(6*D + S)/(S*b)`` into ``(12*D/S + 2)/b``.

The printers that write these forms as text and LaTeX are in :mod:`symroof.present.formula`.

>>> from symroof.symbols import D, S, b
>>> display(2*(6*D + S)/(S*b))
(12*D/S + 2)/b
"""

from __future__ import annotations

import sympy as sp

from symroof.ir import as_expr

__all__ = ["display", "byte_symbols", "positive_denominator"]


def byte_symbols(expr: sp.Expr) -> list[sp.Symbol]:
    """Free symbols that are sizes in bytes (positive, not integer), sorted by name."""
    return sorted((s for s in expr.free_symbols
                   if isinstance(s, sp.Symbol) and s.is_positive and s.is_integer is None),
                  key=lambda s: s.name)


def _monomial_denominators(terms: tuple[sp.Expr, ...]) -> bool:
    for term in terms:
        den = sp.fraction(term)[1]
        if den.is_Add:
            return False
    return True


def positive_denominator(e: sp.Expr) -> sp.Expr:
    """``-a/(c - d)`` as ``a/(d - c)``: flip signs when most denominator terms are
    negative, or when half are and the numerator is negative."""
    num, den = sp.fraction(e)
    terms = sp.Add.make_args(sp.expand(den))
    negative = sum(1 for t in terms if t.as_coeff_Mul()[0] < 0)
    if 2 * negative > len(terms) or (2 * negative == len(terms) and
                                     sp.factor_terms(num).as_coeff_Mul()[0] < 0):
        return sp.Mul(sp.factor_terms(-num), sp.Pow(sp.factor_terms(sp.expand(-den)), -1),
                      evaluate=False)
    return e


def display(expr: object) -> sp.Expr:
    """``expr`` rearranged into textbook shape (mathematically the same expression)."""
    if isinstance(expr, sp.core.relational.Relational):
        return type(expr)(display(expr.lhs), display(expr.rhs), evaluate=False)
    e = as_expr(expr, "display")
    if e.is_number or not isinstance(e, sp.Expr):
        return e
    if e.is_Add and _monomial_denominators(e.args) and any(
            sp.fraction(t)[1] != 1 for t in e.args):
        return e  # a sum of simple fractions (n/d + 1/B) reads best as it is
    if e.is_polynomial() and not e.has(sp.Float):
        return sp.expand(e)  # a polynomial reads best as a sum: 2*P + 4*L*S*D
    e = sp.cancel(e)
    if sp.fraction(e)[1] == 1:
        return sp.expand(e)
    e = positive_denominator(sp.factor_terms(e))
    for bsym in byte_symbols(e):
        x = sp.cancel(e * bsym)
        if bsym in x.free_symbols:
            continue
        expanded = sp.expand(x)
        if expanded.is_Add and _monomial_denominators(expanded.args):
            return sp.Mul(expanded, sp.Pow(bsym, -1), evaluate=False)
        return e
    return e

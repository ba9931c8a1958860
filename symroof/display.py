"""Textbook display forms: results in the shape a textbook prints them.

The engine keeps expressions cancelled; this step only rearranges for printing (an
unevaluated ``Mul``), so ``display(e)`` equals ``e`` (``cancel`` of the difference is
0). The one rearrangement: an expression ``X/b`` in a bytes-per-value symbol ``b`` is
shown as ``(X expanded)/b`` when every term of X has a monomial denominator, which turns
``2*(6*D + S)/(S*b)`` into ``(12*D/S + 2)/b``.

>>> from symroof.symbols import D, S, b, n
>>> text(2*(6*D + S)/(S*b))
'(12*D/S + 2)/b'
>>> text(2*n/(3*b))
'2*n/(3*b)'
>>> latex(2*(6*D + S)/(S*b))
'\\\\frac{\\\\frac{12 D}{S} + 2}{b}'
"""

from __future__ import annotations

import sympy as sp
from sympy.printing.latex import LatexPrinter
from sympy.printing.str import StrPrinter

from symroof.ir import as_expr

__all__ = ["display", "text", "latex", "byte_symbols", "positive_denominator"]


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
    e = sp.cancel(e)
    if sp.fraction(e)[1] == 1:
        return sp.expand(e)  # a polynomial reads best as a sum: 2*P + 4*L*S*D
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


#: Factor order in products, as the seeds write them (2 B L S D b, P/(2 L D)).
_ORDER = {name: i for i, name in enumerate("B L S D H G n M N K".split())}


def _factor_key(f: sp.Expr) -> tuple[int, int, str]:
    if f.is_number:
        return (-1, 0, "")
    base = f.as_base_exp()[0]
    if isinstance(base, sp.Symbol):
        if base.is_integer is None:  # bytes and other quantities after the dimensions
            return (1, 0, base.name)
        return (0, _ORDER.get(base.name, len(_ORDER)), base.name)
    return (2, 0, str(f))  # sums and functions last: b*(K*M + K*N + M*N)


def _ordered_mul(printer: StrPrinter | LatexPrinter, expr: sp.Mul) -> str:
    coeff, factors = expr.as_coeff_mul()
    ordered = sp.Mul(*([coeff] if coeff != 1 else []), *sorted(factors, key=_factor_key),
                     evaluate=False)
    old = printer._settings["order"]
    printer._settings["order"] = "none"  # keep the order just chosen
    try:
        return type(printer).__mro__[1]._print_Mul(printer, ordered)  # type: ignore[attr-defined]
    finally:
        printer._settings["order"] = old


def _ordered_add(printer: StrPrinter | LatexPrinter, expr: sp.Add) -> str:
    """Terms by descending degree with constants last: ``12*D/S + 2``, ``B*S + 6*D``."""
    terms = sp.Add.make_args(expr)
    ordered = sorted(terms, key=lambda t: (t.is_number, [-x for x in sp.Poly(
        t, *sorted(expr.free_symbols, key=str)).monoms()[0]] if t.is_polynomial(
        *expr.free_symbols) and not t.is_number else [0], str(t)))
    old = printer._settings["order"]
    printer._settings["order"] = "none"
    try:
        return type(printer).__mro__[1]._print_Add(printer, sp.Add(*ordered, evaluate=False))  # type: ignore[attr-defined]
    finally:
        printer._settings["order"] = old


class _Str(StrPrinter):
    """Plain text: SymPy's printer, sums by descending degree, products in seed order."""

    def _print_Add(self, expr: sp.Add, order: str | None = None) -> str:
        return _ordered_add(self, expr)

    def _print_Mul(self, expr: sp.Mul) -> str:
        return _ordered_mul(self, expr)


class _Latex(LatexPrinter):
    """LaTeX in seed order, multi-letter subscripts upright (d_ff -> d_{\\mathrm{ff}})."""

    def _print_Add(self, expr: sp.Add, order: str | None = None) -> str:
        return _ordered_add(self, expr)

    def _print_Mul(self, expr: sp.Mul) -> str:
        return _ordered_mul(self, expr)

    def _print_Symbol(self, expr: sp.Symbol, style: str = "plain") -> str:
        name = expr.name
        if "_" in name:
            head, tail = name.split("_", 1)
            tail = tail.replace("_", r"\_")
            return f"{self._deal_with_super_sub(head)}_{{\\mathrm{{{tail}}}}}" if len(tail) > 1 \
                else f"{head}_{{{tail}}}"
        return super()._print_Symbol(expr, style)


def text(expr: object) -> str:
    """Plain-text textbook form."""
    return _Str().doprint(display(expr))


def latex(expr: object) -> str:
    """LaTeX textbook form."""
    return _Latex().doprint(display(expr))

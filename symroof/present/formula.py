"""Formulas for people: plain text and LaTeX in the textbook's shape and factor order.

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

from symroof.display import display

__all__ = ["text", "latex"]


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

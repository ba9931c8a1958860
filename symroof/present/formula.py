"""Formulas for people: plain text and LaTeX in the textbook's shape and factor order.

The imaginary unit never prints as ``I`` (which reads as intensity): ``sqrt(-1)`` in
text, an upright ``\\mathrm{i}`` in LaTeX. An exact number of more than
:data:`MAX_SHOWN_DIGITS` digits is written in scientific notation (no reader wants
600 digits, and Python refuses to print more than 4,300).

>>> from symroof.symbols import D, S, b, n
>>> text(2*(6*D + S)/(S*b))
'(12*D/S + 2)/b'
>>> text(2*n/(3*b))
'2*n/(3*b)'
>>> latex(2*(6*D + S)/(S*b))
'\\\\frac{\\\\frac{12 D}{S} + 2}{b}'
>>> text(1 + 2*sp.I), latex(sp.I*n)
('1 + 2*sqrt(-1)', '\\\\mathrm{i} n')
>>> text(3 * sp.Integer(10)**600 * b)
'3.0000e+600*b'
"""

from __future__ import annotations

import functools

import sympy as sp
from mpmath.libmp import from_rational, to_str
from sympy.printing.latex import LatexPrinter
from sympy.printing.str import StrPrinter

from symroof.display import display

__all__ = ["text", "latex", "scientific_text", "MAX_SHOWN_DIGITS"]

#: Exact numbers with more digits than this print in scientific notation.
MAX_SHOWN_DIGITS = 30
_LOG10_2 = 0.30102999566398120


def scientific_text(p: int, q: int = 1, digits: int = 5) -> str:
    """``p/q`` as ``d.dddde+NN`` from its exact value (no float overflow, no digit limit).

    >>> scientific_text(2 * 10**900), scientific_text(1, 3 * 10**400, 3)
    ('2.0000e+900', '3.33e-401')
    """
    mpf = from_rational(int(p), int(q), 4 * digits + 20)
    shown = to_str(mpf, digits, min_fixed=1, max_fixed=0, show_zero_exponent=True)
    mantissa, _, exponent = shown.partition("e")
    power = int(exponent)
    return f"{float(mantissa):.{digits - 1}f}e{'+' if power >= 0 else '-'}{abs(power):02d}"


def _too_long(r: sp.Rational) -> bool:
    return max(abs(int(r.p)).bit_length(), int(r.q).bit_length()) * _LOG10_2 > MAX_SHOWN_DIGITS


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

    def _print_ImaginaryUnit(self, expr: sp.Expr) -> str:
        return "sqrt(-1)"

    def _print_Integer(self, expr: sp.Integer) -> str:
        return scientific_text(expr.p) if _too_long(expr) else str(expr.p)

    def _print_Rational(self, expr: sp.Rational) -> str:
        return scientific_text(expr.p, expr.q) if _too_long(expr) else super()._print_Rational(expr)


class _Latex(LatexPrinter):
    """LaTeX in seed order, multi-letter subscripts upright (d_ff -> d_{\\mathrm{ff}})."""

    def _print_Add(self, expr: sp.Add, order: str | None = None) -> str:
        return _ordered_add(self, expr)

    def _print_Mul(self, expr: sp.Mul) -> str:
        return _ordered_mul(self, expr)

    def _print_Integer(self, expr: sp.Integer) -> str:
        return _latex_scientific(expr) if _too_long(expr) else str(expr.p)

    def _print_Rational(self, expr: sp.Rational) -> str:
        return _latex_scientific(expr) if _too_long(expr) else super()._print_Rational(expr)

    def _print_Symbol(self, expr: sp.Symbol, style: str = "plain") -> str:
        name = expr.name
        if "_" in name:
            head, tail = name.split("_", 1)
            tail = tail.replace("_", r"\_")
            return f"{self._deal_with_super_sub(head)}_{{\\mathrm{{{tail}}}}}" if len(tail) > 1 \
                else f"{head}_{{{tail}}}"
        return super()._print_Symbol(expr, style)


def _latex_scientific(r: sp.Rational) -> str:
    mantissa, _, power = scientific_text(r.p, r.q).partition("e")
    return f"{mantissa} \\cdot 10^{{{int(power)}}}"


def text(expr: object) -> str:
    """Plain-text textbook form."""
    return _Str().doprint(display(expr))


def latex(expr: object) -> str:
    """LaTeX textbook form."""
    try:
        return _latex_cached(expr)
    except TypeError:  # an unhashable argument: printed, not remembered
        return _latex(expr)


def _latex(expr: object) -> str:
    return _Latex({"imaginary_unit": "ri"}).doprint(display(expr))  # upright i, not I


# A report prints the same formulas many times (the Markdown and the LaTeX of one
# appendix, a table row and its claim): display() cancels and factors, so each
# expression is printed once. SymPy expressions are immutable and hash by value.
# typed: SymPy's 1 equals Python's True, so an untyped cache would print a refused
# argument (True) as the 1 printed before it.
_latex_cached = functools.lru_cache(maxsize=4096, typed=True)(_latex)

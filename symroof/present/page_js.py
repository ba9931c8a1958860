"""Formulas as JavaScript for the Try-it page, printed by SymPy's JavaScript code printer.

A formula becomes one function of an object of values, ``function (v) { return N/D; }``:
numerator and denominator are the formula's cancelled polynomials, so with integer
values below 2**53 they are exact and the one division rounds once, to the double
nearest the exact value, the same double Python gets from the exact Rational. Integer
powers are printed as products (``S*S``), never ``Math.pow``, for the same reason.

>>> from symroof.symbols import M, N, K, b
>>> print(js_function(2*M*N*K / (b*(M*K + K*N + M*N))))
function (v) { return (2*v.K*v.M*v.N)/(v.K*v.M*v.b + v.K*v.N*v.b + v.M*v.N*v.b); }
>>> print(js_function(2*M*N*K))
function (v) { return 2*v.K*v.M*v.N; }
"""

from __future__ import annotations

import re

import sympy as sp
from markupsafe import Markup
from sympy.printing.jscode import JavascriptCodePrinter
from sympy.printing.precedence import precedence

from symroof.errors import SymroofError

__all__ = ["js_function", "js_expression", "MAX_EXACT"]

#: The largest integer a double holds exactly; a bigger coefficient would be rounded.
MAX_EXACT = 2**53
#: What printed code may hold besides ``v.<name>``: numbers, arithmetic, parentheses.
_SAFE = re.compile(r"[0-9. *+\-/()]*")
_VALUE = re.compile(r"\bv\.[A-Za-z_][A-Za-z0-9_]*")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
#: Integer powers up to this are printed as products.
_MAX_PRODUCT_POWER = 8


class _Printer(JavascriptCodePrinter):
    """SymPy's JavaScript printer with symbols read from ``v`` and integer powers as
    products (exact for integers, where ``Math.pow`` need not be)."""

    def _print_Symbol(self, expr: sp.Symbol) -> str:
        if not _NAME.fullmatch(expr.name):
            raise SymroofError(f"page formula: symbol {expr.name!r} is not a JavaScript name")
        return f"v.{expr.name}"

    def _print_Pow(self, expr: sp.Pow) -> str:
        base, exp = expr.base, expr.exp
        if exp.is_Integer and 1 < exp <= _MAX_PRODUCT_POWER:
            return "*".join([self.parenthesize(base, precedence(expr))] * int(exp))
        return str(super()._print_Pow(expr))


def js_expression(expr: object) -> str:
    """``expr`` (no free symbols but ``v.<name>``) as one JavaScript expression."""
    e = sp.Integer(expr) if isinstance(expr, int) and not isinstance(expr, bool) else expr
    if not isinstance(e, sp.Expr) or e.has(sp.oo, -sp.oo, sp.zoo, sp.nan):
        raise SymroofError(f"page formula: expected a finite expression, got {e}")
    for c in e.atoms(sp.Integer):
        if abs(c) > MAX_EXACT:
            raise SymroofError(f"page formula {e}: coefficient {c} is past 2**53, where a "
                               "double is no longer exact")
    code = _Printer().doprint(e)
    if not _SAFE.fullmatch(_VALUE.sub("", code)):
        raise SymroofError(f"page formula {e}: printed code {code!r} holds characters a "
                           "formula never needs")
    return code


def js_function(expr: object) -> Markup:
    """``expr`` as ``function (v) { return (numerator)/(denominator); }`` (a polynomial
    without the division), marked safe for an HTML template: only names, numbers and
    arithmetic get through."""
    if not isinstance(expr, sp.Expr):
        raise SymroofError(f"page formula: expected a SymPy expression, got {expr!r}")
    numerator, denominator = sp.fraction(sp.cancel(expr))
    body = js_expression(numerator) if denominator == 1 else \
        f"({js_expression(numerator)})/({js_expression(denominator)})"
    return Markup(f"function (v) {{ return {body}; }}")

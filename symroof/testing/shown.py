"""Converting the helpers' inputs to SymPy and printing them in a failure message.
(Part of :mod:`symroof.testing`.)
"""

from __future__ import annotations

# imports inside functions: sympy, mpmath and symroof load on first use, because pytest
# imports this plugin at start-up in every project that has symroof installed
import math
import numbers
from collections.abc import Iterable
from typing import TYPE_CHECKING

from symroof.testing.bounded import _huge_number, _magnitude

if TYPE_CHECKING:
    import sympy as sp


_UNDEFINED = "nan, zoo, oo and -oo are unequal to everything, themselves included"


def _as_expr(x: object, role: str, fn: str) -> sp.Expr:
    """*x* as a SymPy expression; strings and non-numbers are a TypeError, never parsed."""
    import sympy as sp
    if isinstance(x, str):
        raise TypeError(f"{fn}: {role} is a string ({x!r}); strings are not parsed implicitly "
                        "(SymPy's parser reads S, N, E, I, Q as built-ins): build expressions "
                        "from symroof.symbols, or parse text with symroof.parse.parse_expr")
    if isinstance(x, bool) or not isinstance(x, (sp.Expr, numbers.Number)):
        hint = " (did you mean its .intensity, .flops or .bytes?)" if hasattr(x, "intensity") else ""
        raise TypeError(f"{fn}: {role} must be a SymPy expression or a number, "
                        f"got {type(x).__name__}{hint}")
    if isinstance(x, sp.Expr):
        return x
    if isinstance(x, numbers.Integral):
        return sp.Integer(int(x))
    if isinstance(x, numbers.Rational):
        return sp.Rational(x.numerator, x.denominator)
    if isinstance(x, numbers.Real):
        return sp.Float(x)
    if isinstance(x, numbers.Complex):
        z = complex(x)
        return sp.Float(z.real) + sp.I * sp.Float(z.imag)
    try:  # decimal.Decimal and other registered numbers
        return sp.Number(x)
    except (TypeError, ValueError):
        raise TypeError(f"{fn}: {role} must be a SymPy expression or a number, "
                        f"got {type(x).__name__}") from None


def _show(x: object) -> str:
    """*x* for a message: never a hang, never Python's error for printing a huge integer."""
    import sympy as sp
    if isinstance(x, int) and not isinstance(x, bool):
        x = sp.Integer(x)
    if isinstance(x, sp.Basic) and x.is_Rational and x != 0:
        p, q = x.p, x.q
        if max(_magnitude(p).bit_length(), q.bit_length()) > 600:   # about 180 digits
            lg = math.log10(_magnitude(p)) - math.log10(q)
            ex = math.floor(lg)
            digits = int(max(math.log10(_magnitude(p)), math.log10(q))) + 1
            return (f"{'-' if p < 0 else ''}{10 ** (lg - ex):.5f}e{ex:+d} (an exact "
                    f"{'integer' if q == 1 else 'rational'} of {digits} digits)")
    try:
        if isinstance(x, sp.Basic) and _huge_number(x):
            return sp.sstr(x, order="none")   # ordering terms would evaluate the huge number
        return str(x)
    except ValueError:  # an integer past sys.get_int_max_str_digits inside an expression
        return f"<{type(x).__name__} too long to print>"


def _describe(s: sp.Symbol) -> str:
    """A symbol's assumptions as given: 'positive integer', 'real=True', 'no assumptions'."""
    given = {k: v for k, v in getattr(s, "_assumptions_orig", s.assumptions0).items()
             if k != "commutative"}
    if given == {"positive": True, "integer": True}:
        return "positive integer"
    if given == {"positive": True}:
        return "positive"
    return ", ".join(f"{k}={v}" for k, v in sorted(given.items())) or "no assumptions"


def _name_clashes(symbols: Iterable[sp.Symbol]) -> list[str]:
    """One line per name carried by several symbols with different assumptions."""
    by_name: dict[str, list[sp.Symbol]] = {}
    for s in symbols:
        by_name.setdefault(s.name, []).append(s)
    return [f"{name!r} appears {'twice' if len(group) == 2 else f'{len(group)} times'} with "
            f"different assumptions ({'; '.join(sorted(map(_describe, group)))}): "
            "make every symbol with symroof.symbols"
            for name, group in sorted(by_name.items()) if len(group) > 1]


def _notes(*exprs: sp.Expr) -> str:
    symbols = set().union(*(e.free_symbols for e in exprs))
    return "".join(f"\n  note: {line}" for line in _name_clashes(symbols))


def _nonfinite(expr: sp.Basic) -> str | None:
    """The first nan, zoo, oo or -oo in *expr* (outside Sum/Integral limits), or None."""
    import sympy as sp
    from sympy.concrete.expr_with_limits import ExprWithLimits
    stack: list[sp.Basic] = [expr]
    while stack:
        x = stack.pop()
        if x is sp.nan or x is sp.zoo or x is sp.oo or x is sp.S.NegativeInfinity:
            return str(x)
        stack.extend([x.function] if isinstance(x, ExprWithLimits) else x.args)
    return None


_MEANING = {"nan": "undefined", "zoo": "complex infinity, a division by zero",
            "oo": "infinite", "-oo": "infinite"}


def _node_count(expr: sp.Basic, cap: int) -> int:
    """Nodes in *expr*'s tree, counting stops past *cap*."""
    count, stack = 0, [expr]
    while stack and count <= cap:
        x = stack.pop()
        count += 1
        stack.extend(x.args)
    return count

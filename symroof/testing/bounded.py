"""Bounded work: how large a formula and its values may grow before the checker
refuses to evaluate them (a size read off the tree, never a computation that could hang).
(Part of :mod:`symroof.testing`.)
"""

from __future__ import annotations

# imports inside functions: sympy, mpmath and symroof load on first use, because pytest
# imports this plugin at start-up in every project that has symroof installed
import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import sympy as sp


# Bounded work. Before a formula is evaluated at a point, _bits bounds |log2 |v|| for every
# value v it passes through: past _MAX_BITS (about 10**19728) exact arithmetic and evalf's
# precision grow without bound (exp(exp(exp(5))) needs 2**213 bits), so such a point is
# "too large to compare numerically" and is skipped or fails; it is never evaluated.
_MAX_BITS = 2 ** 16
_MAX_NODES = 50_000   # a formula with more nodes is too large to compare at all
_MAX_TERMS = 1_000    # cancel() would expand a power into more terms: decide by numbers
_LOG2_E = 1.4426950408889634
_magnitude = abs      # the builtin, before assert_close's `abs` argument shadows it


def _grow(bits: float) -> float:
    """``2**bits``, or infinity where that overflows a float."""
    return 2.0 ** bits if bits < 1000 else math.inf


def _near_power(bits: float) -> str:
    """How large a value of at most ``2**bits`` may be, in words."""
    return f"near 2**{bits:.3g}" if math.isfinite(bits) else "beyond 2**(2**1000)"


def _number_bits(x: sp.Expr) -> float:
    """``|log2 |x||`` for a SymPy number (0 for zero), read without evaluating *x*."""
    if x.is_zero:
        return 0.0
    if x.is_Rational:
        return _magnitude(math.log2(_magnitude(x.p)) - math.log2(x.q))
    if x.is_Float:
        _, man, exp, _ = x._mpf_
        return _magnitude(math.log2(man) + exp)
    if not x.is_finite:                       # nan, zoo, oo
        return math.inf
    return _magnitude(math.log2(_magnitude(complex(x))))   # pi, E, I, EulerGamma


def _bits(expr: sp.Basic, values: Mapping[sp.Basic, sp.Expr]) -> float:
    """An upper bound on ``|log2 |v||`` over every value *v* met while evaluating *expr*
    with its symbols set to *values* (a symbol without a value counts as infinite).

    It reads the tree only, so it cannot hang where evaluating would: ``exp(exp(exp(5)))``
    is bounded by about ``2**213``, and the caller refuses it.
    """
    import sympy as sp
    from sympy.concrete.expr_with_limits import ExprWithLimits
    from sympy.core.relational import Relational
    from sympy.functions.elementary.integers import RoundFunction
    from sympy.functions.elementary.miscellaneous import MinMaxBase
    from sympy.functions.elementary.piecewise import ExprCondPair
    from sympy.functions.elementary.trigonometric import (
        InverseTrigonometricFunction, TrigonometricFunction)
    from sympy.logic.boolalg import Boolean
    # values stay within their arguments' size (plus a bit): |Abs(v)| = |v|, |sin v| <= 1
    bounded = (sp.Abs, sp.sign, sp.re, sp.im, sp.arg, sp.conjugate, RoundFunction, MinMaxBase,
               sp.Piecewise, ExprCondPair, sp.Mod, sp.Heaviside, sp.KroneckerDelta,
               TrigonometricFunction, InverseTrigonometricFunction, sp.tanh, sp.coth, sp.sech,
               sp.csch, Relational, Boolean, sp.Tuple)
    exp_like = (sp.exp, sp.sinh, sp.cosh)                          # log2|v| <= 1.45 |x|
    log_like = (sp.log, sp.asinh, sp.acosh, sp.atanh, sp.acoth, sp.asech, sp.acsch, sp.LambertW)
    worst = 0.0

    def walk(x: sp.Basic, known: Mapping[sp.Basic, float], memo: dict[sp.Basic, float]) -> float:
        nonlocal worst
        if x in memo:
            return memo[x]
        if isinstance(x, sp.Symbol):
            r = known.get(x, math.inf)
        elif isinstance(x, sp.Expr) and (x.is_Number or x.is_NumberSymbol or x is sp.I):
            r = _number_bits(x)
        elif isinstance(x, ExprWithLimits):
            r = limits(x, known)
        else:
            kids = [walk(k, known, memo) for k in x.args]
            top = max(kids, default=0.0)
            if x.is_Add:
                r = top + math.log2(len(kids))      # |sum| <= n * max |term|
            elif x.is_Mul:
                r = sum(kids)
            elif x.is_Pow:
                base, ex = x.args
                if ex.is_Rational and ex.p.bit_length() < 1000:
                    r = _magnitude(ex.p) / ex.q * kids[0]
                else:   # |log2 |b**e|| <= |e| * (|log2 |b|| + pi*log2(e) for a complex b)
                    r = _grow(kids[1]) * (kids[0] + (0 if base.is_extended_nonnegative else 4.6))
            elif isinstance(x, exp_like):
                r = _grow(top) * _LOG2_E         # |log2 |exp(v)|| = |re(v)| * log2(e)
            elif isinstance(x, log_like):
                r = max(0.0, math.log2(top * math.log(2) + math.pi))
            elif isinstance(x, bounded):
                r = top + 1
            else:  # factorial, gamma, binomial, unknown functions: as fast as x**x
                r = _grow(top) * (top + 2)
        worst = max(worst, r)
        memo[x] = r
        return r

    def limits(x: Any, known: Mapping[sp.Basic, float]) -> float:
        inner, size = dict(known), 0.0
        for var, *ends in x.limits:
            inner[var] = max((walk(v, known, {}) for v in ends), default=math.inf)
            size += inner[var]
        body = walk(x.function, inner, {})
        return _grow(size) * (body + 1) if isinstance(x, sp.Product) else body + size + 2

    try:
        walk(expr, {s: walk(v, {}, {}) for s, v in values.items()}, {})
    except RecursionError:
        return math.inf
    return worst


def _huge_number(expr: sp.Basic) -> tuple[float, sp.Basic] | None:
    """A constant part of *expr* too large to evaluate (with its size bound), or None.

    SymPy evaluates constants when it orders the terms of a sum (and so when it prints
    one), so ``exp(exp(exp(5)))*M + 1`` hangs wherever it is touched.
    """
    stack = [expr]
    while stack:
        x = stack.pop()
        if getattr(x, "is_number", False) and not x.is_Rational:
            bits = _bits(x, {})
            if bits > _MAX_BITS:
                return bits, x
        else:
            stack.extend(x.args)
    return None


def _expansion_terms(expr: sp.Basic, cap: int) -> int:
    """About how many terms cancel() could expand *expr* into (at most *cap* + 1)."""
    def terms(x: sp.Basic) -> int:
        if x.is_Add:
            return min(sum(terms(a) for a in x.args), cap + 1)
        if x.is_Mul:
            return min(math.prod(terms(a) for a in x.args), cap + 1)
        if x.is_Pow and x.exp.is_Integer:
            t, e = terms(x.base), _magnitude(int(x.exp))
            if t == 1:
                return 1
            return cap + 1 if e > cap else min(math.comb(e + t - 1, t - 1), cap + 1)
        return 1   # a symbol, a number, or a generator such as floor(M/T)
    try:
        return terms(expr)
    except RecursionError:
        return cap + 1

"""Assertion helpers for tests of roofline formulas; also a pytest plugin (fixtures).

Every helper raises :class:`AssertionError` with a message that shows both sides; none
warns and passes. Formulas are compared by ``cancel(actual - expected) == 0``; where that
cannot decide (``Min``/``Max``, ``Piecewise``, ``floor``/``ceiling``, ``Abs``, radicals),
both sides are evaluated exactly at fixed corner points, at the formulas' own constants
and at seeded random points, all drawn from each symbol's whole domain (negative values,
zero and complex values wherever its assumptions allow them), and a failure names the
seed and the point. ``nan``, ``zoo``, ``oo`` and ``-oo`` equal nothing, themselves
included, and a formula too large to evaluate fails at once instead of hanging.

>>> from sympy import Abs, Symbol, ceiling, floor, nan
>>> from symroof.symbols import M, N, K, T
>>> assert_formula_equal(2*M*N*K / (M*N), 2*K)
>>> assert_formula_equal(ceiling(M/T), floor((M + T - 1)/T))   # ceil-div, integers
>>> assert_formula_equal(2*M*N*K, 2*M*N*K + M)
Traceback (most recent call last):
...
AssertionError: formulas differ:
  actual:   2*K*M*N
  expected: 2*K*M*N + M
  actual - expected = -M
>>> assert_formula_equal(Abs(M), M)                          # M is positive
>>> x = Symbol("x", real=True)
>>> assert_formula_equal(Abs(x), x)                          # x may be negative
Traceback (most recent call last):
...
AssertionError: formulas differ at x=-1 (corner point 3 of 9, seed=0):
  actual:   Abs(x)
  expected: x
  actual - expected = -x + Abs(x)
  values:   actual = 1, expected = -1
>>> assert_formula_equal(nan, nan)  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
AssertionError: cannot compare formulas: actual is or contains nan (undefined); nan, zoo, ...

Example: a textbook chapter's test

>>> from symroof.symbols import n, b
>>> from symroof.workloads import gemm
>>> assert_formula_equal(gemm(n, n, n).intensity, 2*n/(3*b))
>>> assert_matches_oracle(2*M*N*K, lambda s: 2 * s["M"] * s["N"] * s["K"],
...                       [{"M": 2, "N": 3, "K": 4}, {"M": 1, "N": 1, "K": 9}])

In a pytest suite the helpers are also fixtures named ``formula_equal``,
``free_symbols``, ``close`` and ``matches_oracle`` (the plugin loads itself once symroof
is installed; otherwise pass ``-p symroof.testing``)::

    def test_square_gemm(formula_equal):
        formula_equal(gemm(n, n, n).intensity, 2*n/(3*b))
"""

from __future__ import annotations

# imports inside functions: sympy, mpmath and symroof load on first use, because pytest
# imports this plugin at start-up in every project that has symroof installed

# This module is a pytest plugin (the pytest11 entry point): pytest imports it at start-up
# in every session of every project where symroof is installed. At the top it imports only
# the standard library; sympy, mpmath and symroof's own modules are imported inside the
# helpers, so loading the plugin costs nothing and cannot fail when they are broken
# (tests/project/test_testing.py checks the top-level imports).
import itertools
import math
import numbers
import random
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import mpmath
    import sympy as sp

__all__ = ["assert_formula_equal", "assert_free_symbols", "assert_close", "assert_matches_oracle"]

_INEXACT_REL = 1e-12  # default tolerance for irrational or float values (rel=None)
_DIGITS = 30          # significant digits an irrational or float value is evaluated to
# Bounded work. Before a formula is evaluated at a point, _bits bounds |log2 |v|| for every
# value v it passes through: past _MAX_BITS (about 10**19728) exact arithmetic and evalf's
# precision grow without bound (exp(exp(exp(5))) needs 2**213 bits), so such a point is
# "too large to compare numerically" and is skipped or fails; it is never evaluated.
_MAX_BITS = 2 ** 16
_MAX_NODES = 50_000   # a formula with more nodes is too large to compare at all
_MAX_TERMS = 1_000    # cancel() would expand a power into more terms: decide by numbers
_LOG2_E = 1.4426950408889634
_UNDEFINED = "nan, zoo, oo and -oo are unequal to everything, themselves included"
_magnitude = abs      # the builtin, before assert_close's `abs` argument shadows it


# --- converting and printing -----------------------------------------------------------

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


# --- bounded work ----------------------------------------------------------------------

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


# --- sampling each symbol's domain ------------------------------------------------------

def _violation(s: sp.Symbol, value: sp.Expr) -> str | None:
    """How *value* breaks an assumption of *s* ('is not positive', 'is integer'), or None."""
    import sympy as sp
    if value.is_Float and value._mpf_[1] and value._mpf_[2] >= 0:
        value = sp.Integer(int(value))   # 2.0 is an integer value (SymPy says unknown)
    given = getattr(s, "_assumptions_orig", {})
    facts = sorted(s.assumptions0.items(), key=lambda kv: (kv[0] not in given, kv[0]))
    for fact, want in facts:
        if fact == "commutative" or want is None:
            continue
        got = getattr(value, f"is_{fact}", None)
        if got is not None and got != want:
            return f"is not {fact}" if want else f"is {fact}"
    return None


def _corners(s: sp.Symbol) -> list[sp.Expr]:
    """Small values of *s*'s domain, zero and negatives included where it allows them."""
    import sympy as sp
    half = sp.Rational(1, 2)
    values = [sp.Integer(0), sp.Integer(1), sp.Integer(-1), sp.Integer(2), sp.Integer(-2), half,
              -half, sp.Integer(3), sp.Integer(-3), sp.I, -sp.I, 1 + sp.I, 2 - 3 * sp.I]
    return [v for v in values if _violation(s, v) is None]


def _near(*exprs: sp.Expr) -> list[sp.Rational]:
    """Magnitudes next to the formulas' own constants, where thresholds such as
    ``Piecewise((x, M > 4), ...)`` or ``Max(x, -3)`` switch."""
    import sympy as sp
    consts: set[sp.Rational] = set()
    for e in exprs:
        consts |= {_magnitude(c) for c in e.atoms(sp.Rational)}
        consts |= {sp.Rational(int(_magnitude(f))) for f in e.atoms(sp.Float)
                   if f.is_finite and _magnitude(f) < 1e15}
    near = {c + d for c in consts for d in (-1, 0, 1)}
    near |= {sp.floor(c) for c in consts} | {sp.ceiling(c) for c in consts}
    return sorted(v for v in near if v > 0)


def _candidate(s: sp.Symbol, rng: random.Random, near: list[sp.Rational]) -> sp.Expr:
    """One draw from *s*'s domain: the caller rejects draws that break an assumption."""
    import sympy as sp
    from_near = bool(near) and rng.random() < 1 / 3
    if from_near:
        m: sp.Expr = rng.choice(near)
    else:
        small = rng.random() < 0.5        # small values make ties, large ones spread
        m = sp.Integer(rng.randint(1, 8) if small else rng.randint(1, 1000))
    neg_ok, zero_ok, pos_ok = (s.is_negative is not False, s.is_zero is not False,
                               s.is_positive is not False)
    if s.is_zero or (zero_ok and rng.random() < 1 / 8):
        return sp.Integer(0)
    if s.is_integer:
        v: sp.Expr = sp.floor(m) if rng.random() < 0.5 else sp.ceiling(m)
    elif from_near and s.is_rational is not False and rng.random() < 0.5:
        v = m                                      # the threshold itself
    else:
        v = m / rng.randint(1, 16)
        if s.is_transcendental:
            v *= sp.pi
        elif s.is_irrational:
            v *= sp.sqrt(2)
    if (neg_ok and not pos_ok) or (neg_ok and rng.random() < 0.5):
        v = -v
    if s.is_integer and (s.is_even and v % 2 or s.is_odd and not v % 2):
        v += 1 if (v > 0 or (v == 0 and pos_ok)) else -1            # the parity asked for
    if s.is_imaginary or (s.is_real is not True and rng.random() < 2 / 3):
        im = sp.Rational(rng.randint(1, 8), rng.randint(1, 4)) * rng.choice((1, -1))
        v = im * sp.I if s.is_imaginary or rng.random() < 1 / 4 else v + im * sp.I
    return v


def _sample(s: sp.Symbol, rng: random.Random, near: list[sp.Rational], fn: str) -> sp.Expr:
    """A seeded value that satisfies every assumption of *s* (rejection sampling)."""
    for _ in range(200):
        v = _candidate(s, rng, near)
        if _violation(s, v) is None:
            return v
    raise ValueError(f"{fn}: cannot draw a value for symbol {s} ({_describe(s)}) that "
                     "satisfies its assumptions")


def _points(symbols: list[sp.Symbol], rng: random.Random, near: list[sp.Rational], points: int,
            fn: str) -> Iterator[tuple[str, dict[sp.Symbol, sp.Expr]]]:
    """(label, point) pairs to check, in order:

    - corner points: small values (0, +-1, 1/2, I, ...), each symbol's staggered against
      the others', so zero, negative and complex values are always tried where allowed;
    - threshold points: one symbol at a constant of the formulas (+-1, either sign), the
      others drawn at random, so ``Max(x, -10**6)`` meets an x below -10**6 (at most
      2 * *points* of them, a seeded choice);
    - then random points (as many as the caller takes).
    """
    corners = [_corners(s) for s in symbols]
    count = max((len(c) for c in corners), default=1)
    for i in range(count):
        yield f"corner point {i + 1} of {count}", {
            s: c[(i + j) % len(c)] if c else _sample(s, rng, near, fn)
            for j, (s, c) in enumerate(zip(symbols, corners))}
    signed = sorted({v for m in near for v in (m, -m)})
    pairs = [(s, v) for s in symbols for v in signed
             if not (s.is_integer and not v.is_integer) and _violation(s, v) is None]
    if len(pairs) > 2 * points:
        pairs = rng.sample(pairs, 2 * points)
    for i, (s, v) in enumerate(pairs):
        point = {t: v if t == s else _sample(t, rng, near, fn) for t in symbols}
        yield f"threshold point {i + 1} of {len(pairs)}", point
    for i in itertools.count(1):
        yield f"random point {i}", {s: _sample(s, rng, near, fn) for s in symbols}


# --- numbers -------------------------------------------------------------------------------

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


# --- the helpers ---------------------------------------------------------------------------

def assert_formula_equal(actual: object, expected: object, *, rel: float | None = None,
                         points: int = 20, seed: int = 0) -> None:
    """Assert two formulas are equal: structurally, by cancel(), or at sampled points.

    ``rel=None`` compares rational values exactly (irrational or float values to 1e-12);
    a number makes every comparison relative. Formulas that are or contain nan, zoo, oo
    or -oo are unequal to everything. The numeric check evaluates fixed corner points
    (0, +-1, +-2, 1/2, I, ... as each symbol's assumptions allow), points where one
    symbol sits at a constant of the formulas (+-1, either sign: thresholds), then
    ``points`` seeded random points from each symbol's whole domain: integers for integer
    symbols, rationals for real ones, complex values for symbols without assumptions,
    negative values and zero unless the assumptions exclude them. Points where a side is
    undefined (a division by zero) or too large to evaluate are skipped and more are
    drawn; if fewer than half of ``points`` can be compared, the assertion fails and says
    why. A formula holding a constant too large to evaluate fails at once. The check is
    strong evidence, not a proof.
    """
    __tracebackhide__ = True  # pytest shows the caller's line, not this helper's
    import sympy as sp
    fn = "assert_formula_equal"
    a, e = _as_expr(actual, "actual", fn), _as_expr(expected, "expected", fn)
    if rel is not None:
        _check_tol(rel, fn)
    if isinstance(points, bool) or not isinstance(points, int) or points < 1:
        raise ValueError(f"{fn}: points must be a positive integer, got {points!r}")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ValueError(f"{fn}: seed must be an integer (the check is reproducible), "
                         f"got {seed!r}")
    for side, x in (("actual", a), ("expected", e)):
        bad = _nonfinite(x)
        if bad:
            raise AssertionError(f"cannot compare formulas: {side} is or contains {bad} "
                                 f"({_MEANING[bad]}); {_UNDEFINED}\n"
                                 f"  actual:   {_show(a)}\n  expected: {_show(e)}")
    if a == e:
        return
    for side, x in (("actual", a), ("expected", e)):
        huge = _huge_number(x)
        nodes = _node_count(x, _MAX_NODES)
        if huge or nodes > _MAX_NODES:
            why = (f"holds the number {_show(huge[1])}, which may be {_near_power(huge[0])}"
                   if huge else f"has more than {_MAX_NODES} nodes")
            raise AssertionError(f"cannot compare formulas: {side} {why}: too large to compare "
                                 f"numerically\n  actual:   {_show(a)}\n  expected: {_show(e)}")
    zeros = {s: sp.Integer(0) for s in a.free_symbols | e.free_symbols if s.is_zero}
    a, e = a.xreplace(zeros), e.xreplace(zeros)
    diff = a - e
    if max(_expansion_terms(a, _MAX_TERMS), _expansion_terms(e, _MAX_TERMS)) <= _MAX_TERMS:
        try:
            diff = sp.cancel(diff)
        except Exception:  # cancel failing means "cannot decide", never a verdict
            pass
        if diff == 0:
            return
        if rel is None and (diff.is_Rational or _plain_rational(a) and _plain_rational(e)):
            raise AssertionError(f"formulas differ:\n  actual:   {_show(a)}\n  expected: "
                                 f"{_show(e)}\n  actual - expected = {_show(diff)}{_notes(a, e)}")
    _compare_at_points(a, e, diff, rel, points, seed, fn)


def _plain_rational(expr: sp.Expr) -> bool:
    """True when *expr* is a rational function over Q, where cancel() decides equality."""
    import sympy as sp
    return all(isinstance(x, (sp.Symbol, sp.Rational)) or x.is_Add or x.is_Mul
               or (x.is_Pow and x.exp.is_Integer) for x in sp.preorder_traversal(expr))


def _compare_at_points(a: sp.Expr, e: sp.Expr, diff: sp.Expr, rel: float | None, points: int,
                       seed: int, fn: str) -> None:
    """The numeric check of assert_formula_equal, at the points _points gives."""
    __tracebackhide__ = True  # pytest shows the caller's line, not this helper's
    symbols = sorted(a.free_symbols | e.free_symbols, key=lambda s: (s.name, _describe(s)))
    rng, near = random.Random(seed), _near(a, e)
    need = max(1, math.ceil(points / 2)) if symbols else 1
    compared, random_compared, random_tried, tried = 0, 0, 0, 0
    large: list[str] = []
    undefined: list[str] = []

    def both() -> str:
        return f"\n  actual:   {_show(a)}\n  expected: {_show(e)}"

    for label, point in _points(symbols, rng, near, points, fn):
        random_point = label.startswith("random")
        if random_point and (not symbols or random_compared >= points
                             or random_tried >= 5 * points):
            break               # enough random points compared, or 5 * points drawn
        random_tried += random_point
        where = ", ".join(f"{s}={_show(v)}" for s, v in point.items()) or "(no symbols)"
        tried += 1
        bits = max(_bits(a, point), _bits(e, point))
        if bits > _MAX_BITS:
            large.append(f"at {where}: values may be {_near_power(bits)}")
            continue
        try:
            av, ev = _evaluate(a, point, finite=True), _evaluate(e, point, finite=True)
        except _Undefined as exc:
            undefined.append(f"at {where}: {exc}")
            continue
        if av is None or ev is None:
            raise AssertionError(f"cannot compare formulas: they do not evaluate to numbers at "
                                 f"{where} (seed={seed}):{both()}")
        ok = _within(av, ev, rel if rel is not None else 0 if _exact(av) and _exact(ev)
                     else _INEXACT_REL, 0)
        if ok is None:
            undefined.append(f"at {where}: no numeric value ({_show(av)}, {_show(ev)})")
            continue
        compared += 1
        random_compared += random_point
        if not ok:
            raise AssertionError(
                f"formulas differ at {where} ({label}, seed={seed}):{both()}\n"
                f"  actual - expected = {_show(diff)}\n"
                f"  values:   actual = {_show(av)}, expected = {_show(ev)}"
                + ("" if rel is None else f" (rel={rel})") + _notes(a, e))
    if compared >= need:
        return
    reasons = ([f"too large to compare numerically at {len(large)}"] if large else []) + \
              ([f"undefined at {len(undefined)}"] if undefined else [])
    raise AssertionError(f"cannot compare formulas: {' and '.join(reasons)} of {tried} points "
                         f"(compared {compared}, need {need}; seed={seed}){both()}\n  e.g. "
                         + "\n  e.g. ".join(x[0] for x in (large, undefined) if x))


def assert_free_symbols(expr: object, symbols: Iterable[sp.Symbol] | sp.Symbol) -> None:
    """Assert *expr*'s free symbols are exactly *symbols* (same names and assumptions)."""
    __tracebackhide__ = True  # pytest shows the caller's line, not this helper's
    import sympy as sp
    from symroof.symbols import CANONICAL
    fn = "assert_free_symbols"
    ex = _as_expr(expr, "expr", fn)
    if isinstance(symbols, str) or not isinstance(symbols, (sp.Basic, Iterable)):
        raise TypeError(f"{fn}: symbols must be SymPy Symbols (from symroof.symbols), "
                        f"got {symbols!r}")
    want = {symbols} if isinstance(symbols, sp.Basic) else set(symbols)
    bad = [s for s in want if not isinstance(s, sp.Symbol)]
    if bad:
        raise TypeError(f"{fn}: symbols must be SymPy Symbols (from symroof.symbols), got {bad[0]!r}")
    got = ex.free_symbols
    if got == want:
        return
    lines = [f"free symbols differ for {_show(ex)}:",
             f"  actual:   {{{', '.join(sorted(map(str, got)))}}}",
             f"  expected: {{{', '.join(sorted(map(str, want)))}}}"]
    lines += [f"  {line}" for line in _name_clashes(got | want)]
    for s in sorted(got - want, key=str):
        canon = CANONICAL.get(s.name)
        if canon is not None and canon != s:
            lines.append(f"  symbol {s.name!r} ({_describe(s)}) is not symroof's {s.name!r} "
                         f"({_describe(canon)})")
    if got - want:
        lines.append(f"  unexpected: {', '.join(sorted(f'{s} ({_describe(s)})' for s in got - want))}")
    if want - got:
        lines.append(f"  missing:    {', '.join(sorted(f'{s} ({_describe(s)})' for s in want - got))}")
    raise AssertionError("\n".join(lines))


def _as_number(x: object, role: str, fn: str) -> sp.Expr:
    """*x* as a SymPy number; a free symbol left in it, or a number too large, fails."""
    __tracebackhide__ = True  # pytest shows the caller's line, not this helper's
    value = _as_expr(x, role, fn)
    if value.free_symbols:
        names = ", ".join(sorted(map(str, value.free_symbols)))
        raise AssertionError(f"{fn}: {role} {_show(value)} still has free symbol(s) {names}; "
                             "substitute values first (expr.subs({...}))")
    if not value.is_Rational and not _nonfinite(value):   # exact rationals are cheap at any size
        bits = _bits(value, {})
        if bits > _MAX_BITS:
            raise AssertionError(f"{fn}: {role} {_show(value)} is too large to compare "
                                 f"numerically (it may be {_near_power(bits)})")
    try:
        value = value if value.is_number else value.doit()
    except Exception as exc:
        raise AssertionError(f"{fn}: {role} {_show(value)} cannot be evaluated "
                             f"({type(exc).__name__}: {exc})") from None
    if not value.is_number:
        raise AssertionError(f"{fn}: {role} {_show(value)} does not evaluate to a number")
    return value


def assert_close(value: object, expected: object, *, rel: float = 1e-9, abs: float = 0) -> None:
    """Assert ``|value - expected| <= max(rel * max(|value|, |expected|), abs)`` (math.isclose).

    nan, zoo, oo and -oo are close to nothing, themselves included.
    """
    __tracebackhide__ = True  # pytest shows the caller's line, not this helper's
    fn = "assert_close"
    _check_tol(rel, fn)
    _check_tol(abs, fn, "abs")
    v, e = _as_number(value, "value", fn), _as_number(expected, "expected", fn)
    ok = _within(v, e, rel, abs)
    if ok:
        return
    if _nonfinite(v) or _nonfinite(e):
        raise AssertionError(f"values differ: {_show(v)} != {_show(e)} (expected): {_UNDEFINED}")
    if ok is None:
        raise AssertionError(f"values differ: {_show(v)} != {_show(e)} (expected): a side "
                             "does not evaluate to a number")
    hint = "; comparing with 0 needs abs=..." if 0 in (v, e) and not abs else ""
    raise AssertionError(f"values differ: {_show(v)} != {_show(e)} (expected), difference "
                         f"{_show((v - e).evalf(6))}, tolerance rel={rel}, abs={abs}{hint}")


class _Size(dict):
    """A size keyed by symbol names that also answers lookups by Symbol (``s[M]``)."""

    def __getitem__(self, key: object) -> Any:
        return super().__getitem__(getattr(key, "name", key))

    def __contains__(self, key: object) -> bool:
        return super().__contains__(getattr(key, "name", key))

    def get(self, key: object, default: Any = None) -> Any:
        return super().get(getattr(key, "name", key), default)


def _read_size(size: object, by_name: Mapping[str, sp.Symbol],
               fn: str) -> tuple[_Size, dict[str, sp.Expr]]:
    """A size as (name -> value as given, name -> SymPy number), each value checked
    against the assumptions of its symbol (the formula's, or the key's own)."""
    import sympy as sp
    if not isinstance(size, Mapping):
        raise TypeError(f"{fn}: each size must be a dict of symbol name -> value, "
                        f"got {type(size).__name__}")
    given, keyed = _Size(), {}
    for k, v in size.items():
        if not isinstance(k, (str, sp.Symbol)):
            raise TypeError(f"{fn}: size keys must be symbol names or Symbols, got {k!r}")
        name = k if isinstance(k, str) else k.name
        if name in given:
            raise ValueError(f"{fn}: size {_show_size(size)} gives {name} twice")
        given[name] = v
        if isinstance(k, sp.Symbol):
            keyed[name] = k
    values = {}
    for name, v in given.items():
        num = _as_number(v, f"size value {name}", fn)
        if _nonfinite(num) or not num.is_finite:
            raise ValueError(f"{fn}: size {_show_size(size)} gives {name}={_show(v)}, "
                             "not a finite number")
        for s in (by_name.get(name), keyed.get(name)):
            broken = None if s is None else _violation(s, num)
            if s is not None and broken:
                raise ValueError(f"{fn}: size {_show_size(size)} gives {name}={_show(v)}, but "
                                 f"{name} is a {_describe(s)} symbol: {_show(v)} {broken}")
        values[name] = num
    return given, values


def _show_size(size: Mapping[Any, object]) -> str:
    """A size as a dict keyed by name, its values as given (huge integers shortened)."""
    def value(v: object) -> str:
        big = isinstance(v, int) and v.bit_length() > 600
        return _show(v) if big else repr(v)
    return "{" + ", ".join(f"{getattr(k, 'name', k)!r}: {value(v)}" for k, v in size.items()) + "}"


def assert_matches_oracle(formula: object, counter: Callable[[dict[Any, Any]], object],
                          sizes: Iterable[Mapping[Any, object]], *, rel: float = 0) -> None:
    """Assert *formula* equals a brute-force *counter* at every size (within *rel*).

    A size is a dict keyed by symbol names or by Symbols (either: symbols are matched by
    name), and its values must satisfy the symbols' assumptions (``M=-2`` is an error for
    a positive integer ``M``). ``counter`` gets each size as a fresh dict keyed by name
    (``{"M": 2, ...}``) that also answers lookups by Symbol (``size[M]``), and returns a
    number. Failures name the size and both values; an empty *sizes* is a failure too.
    """
    __tracebackhide__ = True  # pytest shows the caller's line, not this helper's
    import sympy as sp
    fn = "assert_matches_oracle"
    f = _as_expr(formula, "formula", fn)
    _check_tol(rel, fn)
    if not callable(counter):
        raise TypeError(f"{fn}: counter must be callable (size -> number), got {counter!r}")
    if isinstance(sizes, (str, bytes, Mapping)) or not isinstance(sizes, Iterable):
        raise TypeError(f"{fn}: sizes must be an iterable of dicts (one per size), got "
                        f"{type(sizes).__name__}" + (": wrap one size in a list"
                                                     if isinstance(sizes, Mapping) else ""))
    bad = _nonfinite(f)
    if bad:
        raise AssertionError(f"{fn}: formula {_show(f)} is or contains {bad}; {_UNDEFINED}")
    clashes = _name_clashes(f.free_symbols)
    if clashes:
        raise AssertionError(f"{fn}: formula {_show(f)}: {clashes[0]}")
    by_name = {s.name: s for s in f.free_symbols}
    who = getattr(counter, "__qualname__", repr(counter))
    checked, failures = 0, []
    for size in sizes:
        given, values = _read_size(size, by_name, fn)
        missing = sorted(set(by_name) - set(values))
        if missing:
            raise AssertionError(f"{fn}: size {_show_size(given)} gives no value for "
                                 f"{', '.join(missing)} (free in formula {_show(f)})")
        point = {s: values[name] for name, s in by_name.items()}
        bits = _bits(f, point)
        if bits > _MAX_BITS:
            raise AssertionError(f"{fn}: formula {_show(f)} is too large to compare numerically "
                                 f"at {_show_size(given)} (its values may be {_near_power(bits)})")
        try:
            fv: sp.Expr | None = _evaluate(f, point)
        except _Undefined as exc:   # SymPy refused a value, e.g. Max(2, zoo)
            fv = None
            failures.append(f"  at {_show_size(given)}: formula {_show(f)} is undefined ({exc})")
        else:
            if fv is None:
                raise AssertionError(f"{fn}: formula {_show(f)} does not evaluate to a number at "
                                     f"{_show_size(given)}")
        got = counter(_Size(given))
        if isinstance(got, bool) or not isinstance(got, (numbers.Number, sp.Expr)):
            raise TypeError(f"{fn}: counter {who} returned {type(got).__name__} for size "
                            f"{_show_size(given)}, expected a number")
        cv = _as_number(got, "counter result", fn)
        checked += 1
        if fv is None:
            continue
        ok = _within(fv, cv, rel, 0)
        if not ok:
            why = (f"; {_UNDEFINED}" if _nonfinite(fv) or _nonfinite(cv) else
                   " (not a number)" if ok is None else f" (difference {_show(fv - cv)})")
            failures.append(f"  at {_show_size(given)}: formula {_show(f)} = {_show(fv)}, "
                            f"counter {who} = {_show(cv)}{why}")
    if not checked:
        raise AssertionError(f"{fn}: no sizes given, nothing was checked")
    if failures:
        more = f"\n  ... and {len(failures) - 3} more" if len(failures) > 3 else ""
        raise AssertionError(f"formula does not match the oracle at {len(failures)} of {checked} "
                             f"sizes{' (rel=' + str(rel) + ')' if rel else ''}:\n"
                             + "\n".join(failures[:3]) + more)


# --- pytest plugin: the helpers as fixtures (pytest is optional for the helpers) -------
try:
    import pytest
except ImportError:  # pragma: no cover - plain users of the helpers need no pytest
    pytest = None  # type: ignore[assignment]

if pytest is not None:
    def _fixture(name: str, helper: Callable[..., None]) -> Any:
        def fixture() -> Callable[..., None]:
            return helper
        fixture.__doc__ = f"The :func:`{helper.__name__}` helper, as a fixture."
        return pytest.fixture(name=name)(fixture)

    _formula_equal_fixture = _fixture("formula_equal", assert_formula_equal)
    _free_symbols_fixture = _fixture("free_symbols", assert_free_symbols)
    _close_fixture = _fixture("close", assert_close)
    _matches_oracle_fixture = _fixture("matches_oracle", assert_matches_oracle)

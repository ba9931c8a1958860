"""The formula helpers: :func:`assert_formula_equal` and :func:`assert_free_symbols`.
(Part of :mod:`symroof.testing`.)
"""

from __future__ import annotations

# imports inside functions: sympy, mpmath and symroof load on first use, because pytest
# imports this plugin at start-up in every project that has symroof installed
import math
import random
from collections.abc import Iterable
from typing import TYPE_CHECKING

from symroof.testing.bounded import (_MAX_BITS, _MAX_NODES, _MAX_TERMS, _bits,
                                     _expansion_terms, _huge_number, _near_power)
from symroof.testing.shown import (_MEANING, _UNDEFINED, _as_expr, _describe, _name_clashes,
                                   _node_count, _nonfinite, _notes, _show)
from symroof.testing.sampling import _near, _points
from symroof.testing.evaluation import (_INEXACT_REL, _Undefined, _check_tol, _evaluate,
                                        _exact, _within)

if TYPE_CHECKING:
    import sympy as sp

__all__ = ["assert_formula_equal", "assert_free_symbols"]


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

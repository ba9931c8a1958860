"""Assertion helpers for tests of roofline formulas; also a pytest plugin (fixtures).

Every helper raises :class:`AssertionError` with a message that shows both sides; none
warns and passes. Formulas are compared by ``cancel(actual - expected) == 0``; where that
cannot decide (``Min``/``Max``, ``Piecewise``, ``floor``/``ceiling``, ``Abs``, radicals),
both sides are evaluated exactly at seeded random points, and a failure names the seed
and the point.

>>> from sympy import ceiling, floor
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

import numbers
import random
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import sympy as sp

__all__ = ["assert_formula_equal", "assert_free_symbols", "assert_close", "assert_matches_oracle"]

_INEXACT_REL = 1e-12  # default tolerance for irrational or float values (rel=None)
_magnitude = abs      # the builtin, before assert_close's `abs` argument shadows it


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
    return sp.Float(x) if isinstance(x, numbers.Real) else sp.Number(x)  # type: ignore[arg-type]


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


def _plain_rational(expr: sp.Expr) -> bool:
    """True when *expr* is a rational function over Q, where cancel() decides equality."""
    import sympy as sp
    return all(isinstance(x, (sp.Symbol, sp.Rational)) or x.is_Add or x.is_Mul
               or (x.is_Pow and x.exp.is_Integer) for x in sp.preorder_traversal(expr))


def _sample(s: sp.Symbol, rng: random.Random, near: list[int]) -> sp.Expr:
    """A value that respects *s*'s assumptions: integers for integer symbols, else rationals.

    A third of the draws come from *near* (the formulas' own constants, +-1), where
    thresholds such as ``Piecewise((x, M > 4), ...)`` switch.
    """
    import sympy as sp
    if near and rng.random() < 1 / 3:
        k = rng.choice(near)
    else:
        k = rng.randint(1, 8) if rng.random() < 0.5 else rng.randint(1, 1000)  # ties, spread
    if s.is_zero:
        return sp.Integer(0)
    if s.is_integer:
        value = sp.Integer(2 * k if s.is_even else 2 * k - 1 if s.is_odd else k)
    elif s.is_integer is False:
        value = sp.Rational(2 * k + 1, 2)
    else:
        value = sp.Rational(k, rng.randint(1, 16))
    return -value if s.is_nonpositive else value  # positive unless told otherwise


def _near(*exprs: sp.Expr) -> list[int]:
    import sympy as sp
    consts = {int(_magnitude(c.p)) for e in exprs for c in e.atoms(sp.Rational)}
    return sorted({c + d for c in consts for d in (-1, 0, 1)} - {0, -1})


def _within(x: sp.Expr, y: sp.Expr, rel: float, abs_: float) -> bool:
    """``|x - y| <= max(rel * max(|x|, |y|), abs_)``: exact for rationals, else 30 digits."""
    import sympy as sp
    if sp.nan in (x, y):
        return False
    if x == y:
        return True
    if x.is_Rational and y.is_Rational:
        return bool(_magnitude(x - y) <= max(sp.Rational(rel) * max(_magnitude(x), _magnitude(y)),
                                            sp.Rational(abs_)))
    d = sp.Abs(x - y).evalf(30)
    scale = sp.Max(sp.Abs(x), sp.Abs(y)).evalf(30)
    return bool(d.is_finite and d <= max(rel * scale, abs_))


def _evaluate(expr: sp.Expr, point: Mapping[sp.Symbol, sp.Expr]) -> sp.Expr | None:
    value = expr.xreplace(dict(point))
    value = value if value.is_number else value.doit()
    return value if value.is_number else None


def _check_tol(tol: float, fn: str, name: str = "rel") -> None:
    if isinstance(tol, bool) or not isinstance(tol, numbers.Real) or tol < 0:
        raise ValueError(f"{fn}: {name} must be a non-negative number, got {tol!r}")


def assert_formula_equal(actual: object, expected: object, *, rel: float | None = None,
                         points: int = 20, seed: int = 0) -> None:
    """Assert two formulas are equal: structurally, by cancel(), or at seeded random points.

    ``rel=None`` compares rational values exactly (irrational or float values to 1e-12);
    a number makes every comparison relative. The random check evaluates ``points``
    points (positive integers for integer symbols, positive rationals otherwise); it is
    strong evidence, not a proof.
    """
    import sympy as sp
    fn = "assert_formula_equal"
    a, e = _as_expr(actual, "actual", fn), _as_expr(expected, "expected", fn)
    if rel is not None:
        _check_tol(rel, fn)
    if isinstance(points, bool) or not isinstance(points, int) or points < 1:
        raise ValueError(f"{fn}: points must be a positive integer, got {points!r}")
    if a == e:
        return
    try:
        diff = sp.cancel(a - e)
    except Exception:  # cancel failing means "cannot decide", never a verdict
        diff = a - e
    if diff == 0:
        return
    if rel is None and _plain_rational(a) and _plain_rational(e):
        raise AssertionError(f"formulas differ:\n  actual:   {a}\n  expected: {e}\n"
                             f"  actual - expected = {diff}{_notes(a, e)}")
    symbols = sorted(a.free_symbols | e.free_symbols, key=lambda s: (s.name, _describe(s)))
    rng, near = random.Random(seed), _near(a, e)
    for i in range(points if symbols else 1):
        point = {s: _sample(s, rng, near) for s in symbols}
        where = ", ".join(f"{s}={v}" for s, v in point.items()) or "(no symbols)"
        av, ev = _evaluate(a, point), _evaluate(e, point)
        if av is None or ev is None:
            raise AssertionError(f"cannot compare formulas: they do not evaluate to numbers at "
                                 f"{where} (seed={seed}):\n  actual:   {a}\n  expected: {e}")
        if not _within(av, ev, _INEXACT_REL if rel is None else rel, 0):
            raise AssertionError(
                f"formulas differ at {where} (random point {i + 1} of {points}, seed={seed}):\n"
                f"  actual:   {a}\n  expected: {e}\n  actual - expected = {diff}\n"
                f"  values:   actual = {av}, expected = {ev}"
                + ("" if rel is None else f" (rel={rel})") + _notes(a, e))


def assert_free_symbols(expr: object, symbols: Iterable[sp.Symbol] | sp.Symbol) -> None:
    """Assert *expr*'s free symbols are exactly *symbols* (same names and assumptions)."""
    import sympy as sp
    from symroof.symbols import CANONICAL
    fn = "assert_free_symbols"
    ex = _as_expr(expr, "expr", fn)
    want = {symbols} if isinstance(symbols, sp.Basic) else set(symbols)
    bad = [s for s in want if not isinstance(s, sp.Symbol)]
    if bad:
        raise TypeError(f"{fn}: symbols must be SymPy Symbols (from symroof.symbols), got {bad[0]!r}")
    got = ex.free_symbols
    if got == want:
        return
    lines = [f"free symbols differ for {ex}:",
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
    """*x* as a SymPy number; a free symbol left in it fails, naming the symbol."""
    value = _as_expr(x, role, fn)
    if value.free_symbols:
        names = ", ".join(sorted(map(str, value.free_symbols)))
        raise AssertionError(f"{fn}: {role} {value} still has free symbol(s) {names}; "
                             "substitute values first (expr.subs({...}))")
    value = value if value.is_number else value.doit()
    if not value.is_number:
        raise AssertionError(f"{fn}: {role} {value} does not evaluate to a number")
    return value


def assert_close(value: object, expected: object, *, rel: float = 1e-9, abs: float = 0) -> None:
    """Assert ``|value - expected| <= max(rel * max(|value|, |expected|), abs)`` (math.isclose)."""
    fn = "assert_close"
    _check_tol(rel, fn)
    _check_tol(abs, fn, "abs")
    v, e = _as_number(value, "value", fn), _as_number(expected, "expected", fn)
    if _within(v, e, rel, abs):
        return
    hint = "; comparing with 0 needs abs=..." if 0 in (v, e) and not abs else ""
    raise AssertionError(f"values differ: {v} != {e} (expected), difference "
                         f"{(v - e).evalf(6)}, tolerance rel={rel}, abs={abs}{hint}")


class _Size(dict):  # type: ignore[type-arg]
    """A size keyed by symbol names that also answers lookups by Symbol (``s[M]``)."""

    def __getitem__(self, key: object) -> Any:
        return super().__getitem__(getattr(key, "name", key))

    def __contains__(self, key: object) -> bool:
        return super().__contains__(getattr(key, "name", key))

    def get(self, key: object, default: Any = None) -> Any:
        return super().get(getattr(key, "name", key), default)


def assert_matches_oracle(formula: object, counter: Callable[[dict[Any, Any]], object],
                          sizes: Iterable[Mapping[Any, object]], *, rel: float = 0) -> None:
    """Assert *formula* equals a brute-force *counter* at every size (within *rel*).

    A size is a dict keyed by symbol names or by Symbols (either: symbols are matched by
    name). ``counter`` gets each size as a fresh dict keyed by name (``{"M": 2, ...}``)
    that also answers lookups by Symbol (``size[M]``), and returns a number. Failures
    name the size and both values; an empty *sizes* is a failure too.
    """
    import sympy as sp
    fn = "assert_matches_oracle"
    f = _as_expr(formula, "formula", fn)
    _check_tol(rel, fn)
    clashes = _name_clashes(f.free_symbols)
    if clashes:
        raise AssertionError(f"{fn}: formula {f}: {clashes[0]}")
    by_name = {s.name: s for s in f.free_symbols}
    who = getattr(counter, "__qualname__", repr(counter))
    checked, failures = 0, []
    for size in sizes:
        given = _Size({str(k): v for k, v in size.items()})
        values = {k: _as_number(v, f"size value {k}", fn) for k, v in given.items()}
        missing = sorted(set(by_name) - set(values))
        if missing:
            raise AssertionError(f"{fn}: size {dict(given)} gives no value for "
                                 f"{', '.join(missing)} (free in formula {f})")
        fv = _as_number(f.xreplace({s: values[name] for name, s in by_name.items()}), "formula", fn)
        got = counter(_Size(given))
        if isinstance(got, bool) or not isinstance(got, (numbers.Number, sp.Expr)):
            raise TypeError(f"{fn}: counter {who} returned {type(got).__name__} for size "
                            f"{dict(given)}, expected a number")
        cv = _as_number(got, "counter result", fn)
        checked += 1
        if not _within(fv, cv, rel, 0):
            failures.append(f"  at {dict(given)}: formula {f} = {fv}, counter {who} = {cv}"
                            f" (difference {fv - cv})")
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

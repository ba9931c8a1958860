"""Sampling each symbol's whole domain: corner points, values near the formulas' own
constants and seeded random points, each allowed by the symbol's assumptions.
(Part of :mod:`symroof.testing`.)
"""

from __future__ import annotations

# imports inside functions: sympy, mpmath and symroof load on first use, because pytest
# imports this plugin at start-up in every project that has symroof installed
import itertools
import random
from collections.abc import Iterator
from typing import TYPE_CHECKING

from symroof.testing.bounded import _magnitude
from symroof.testing.shown import _describe

if TYPE_CHECKING:
    import sympy as sp


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

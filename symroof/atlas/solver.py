"""Solving one pair of an atlas: guards first, then the crossover, its sides and limits.

Every solve is bounded before SymPy expands anything: the operation count of each side,
an upper bound on the degree read off the expression tree, then the cancelled
numerator's terms and degree (:class:`~symroof.atlas.records.AtlasBudget`). A pair whose
sides are not light runs under :func:`symroof.budget.guarded` (one forked child for the
whole pair, within symroof's seconds and memory limits); a refusal marks that pair
unsolved with the limit it met. Which side
dominates comes from leading terms, or across a simple crossing, or, where the other
symbols decide, from seeded sample points (the same answer on every run).

>>> from symroof.symbols import B, S, D, L, P
>>> rational_degree((B*S + 6*D)/B**2, B)
(1, 2)
>>> in_terms_of(24*B*L*D**2 + 4*B*L*S*D, {P: 12*L*D**2})
4*B*D*L*S + 2*B*P
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any
from dataclasses import replace

import sympy as sp

from symroof.atlas.records import (LEVERS, Asymptote, AtlasBudget, Entry, Invariant, Reason, Ridge,
                                   Side, Status)
from symroof import budget as _budget
from symroof.budget import guarded, light
from symroof.errors import SymroofError
from symroof.solve import Crossover, crossover, leading_term, limit

__all__ = ["Solver", "rational_degree", "in_terms_of"]


def rational_degree(e: sp.Expr, v: sp.Symbol) -> tuple[int, int] | None:
    """Upper bounds on the degrees in ``v`` of ``e``'s numerator and denominator once put
    over one denominator, without expanding anything; None if ``e`` is not rational in v."""
    if v not in e.free_symbols:
        return (0, 0)
    if e == v:
        return (1, 0)
    if e.is_Add or e.is_Mul:
        found = [rational_degree(a, v) for a in e.args]
        if any(f is None for f in found):
            return None
        pairs = [f for f in found if f is not None]
        den = sum(d for _, d in pairs)
        if e.is_Mul:
            return (sum(n for n, _ in pairs), den)
        return (max(n - d for n, d in pairs) + den, den)
    if e.is_Pow and e.exp.is_Integer and v not in e.exp.free_symbols:
        inner = rational_degree(e.base, v)
        if inner is None:
            return None
        k = int(e.exp)
        return (k * inner[0], k * inner[1]) if k >= 0 else (-k * inner[1], -k * inner[0])
    return None


def _sign(e: sp.Expr) -> int | None:
    e = sp.factor_terms(e)
    return 1 if e.is_positive else -1 if e.is_negative else None


#: What a solver's refusal (a ``symroof.budget`` limit it names) means for a pair.
_LIMITS = {"seconds": Reason.TIME, "memory_mib": Reason.SIZE, "ops": Reason.SIZE,
           "digits": Reason.SIZE, "degree": Reason.DEGREE}


class Solver:
    """Solves pairs under one budget and one deadline."""

    def __init__(self, budget: AtlasBudget, named: Mapping[sp.Symbol, sp.Expr],
                 variables: tuple[sp.Symbol, ...], deadline: float) -> None:
        self.budget, self.named, self.variables, self.deadline = budget, named, variables, deadline
        self._seen: dict[tuple[object, ...], Entry] = {}
        self._limits: dict[tuple[object, ...], list[sp.Expr]] = {}

    def pair(self, kind: str, lhs: str, rhs: str, left: sp.Expr, right: sp.Expr, *,
             ridge: Ridge | None = None,
             named: tuple[sp.Expr, sp.Expr] | None = None) -> list[Entry]:
        """Entries for ``lhs = rhs`` (``left``, ``right``), one per variable; none when both
        are 0. ``named``: the two sides in the named symbols, where they are not found
        term by term (the intensity)."""
        base: dict[str, Any] = dict(kind=kind, lhs=lhs, rhs=rhs, lhs_expr=left, rhs_expr=right,
                                    ridge=ridge)
        if left == 0 and right == 0:
            return []
        if left == 0 or right == 0:
            return [Entry(**base, var=None, status=Status.NEVER, reason=Reason.ZERO,
                          detail=sp.Integer(0))]
        if max(sp.count_ops(left), sp.count_ops(right)) > self.budget.max_ops:
            return [Entry(**base, var=v, status=Status.UNSOLVED, reason=Reason.SIZE)
                    for v in self.variables]
        if sp.expand(left - right) == 0:
            return [Entry(**base, var=None, status=Status.NEVER, reason=Reason.EQUAL)]
        return [self._memo(base, left, right, v, named) for v in self.variables]

    def _memo(self, base: dict[str, Any], left: sp.Expr, right: sp.Expr, v: sp.Symbol,
              named: tuple[sp.Expr, sp.Expr] | None) -> Entry:
        """One solve per distinct pair of expressions (a chip's bf16 and fp16 ridges are
        often the same number)."""
        key = (left, right, v, named)
        if key not in self._seen:
            try:  # one guard per pair: the solver calls inside run in its child, unforked
                self._seen[key] = guarded(
                    f"atlas pair {base['lhs']} = {base['rhs']} in {v}", self._solve, base, left,
                    right, v, named, unguarded=light(left) and light(right))
            except SymroofError as exc:  # a solver step past symroof's limits: this pair only
                reason = _LIMITS.get(getattr(exc, "limit", ""), Reason.NO_CLOSED_FORM)
                self._seen[key] = Entry(**base, var=v, status=Status.UNSOLVED, reason=reason)
        return replace(self._seen[key], **base)

    def _solve(self, base: dict[str, Any], left: sp.Expr, right: sp.Expr, v: sp.Symbol,
               named: tuple[sp.Expr, sp.Expr] | None) -> Entry:
        def result(status: Status, reason: Reason | None = None, **more: Any) -> Entry:
            return Entry(**base, var=v, status=status, reason=reason, **more)

        if _budget.clock() > self.deadline:  # budget.clock: the one clock of every limit
            return result(Status.UNSOLVED, Reason.TIME)
        if v not in left.free_symbols | right.free_symbols:
            return result(Status.NEVER, Reason.INDEPENDENT, detail=sp.cancel(left / right))
        degrees = [rational_degree(x, v) for x in (left, right)]
        if degrees[0] is None or degrees[1] is None:
            return result(Status.UNSOLVED, Reason.NOT_RATIONAL)
        bound = sum(n + d for n, d in (degrees[0], degrees[1]))
        if bound > 4 * (self.budget.max_degree + 1):  # before cancel expands anything
            return result(Status.UNSOLVED, Reason.DEGREE, detail=sp.Integer(bound))
        ratio = sp.factor_terms(sp.cancel(left / right))
        if v not in ratio.free_symbols:
            return result(Status.NEVER, Reason.PROPORTIONAL, detail=ratio)
        num, den = sp.fraction(sp.cancel(sp.together(left - right)))
        poly = sp.Poly(num, v)
        if len(poly.terms()) > self.budget.max_terms:
            return result(Status.UNSOLVED, Reason.SIZE)
        low = min(m[0] for m in poly.monoms())  # v**low > 0 divides out: no positive root
        degree = poly.degree() - low
        symbolic = poly.free_symbols - {v}      # a symbolic cubic's roots run for pages
        if degree > self.budget.max_degree or (degree > 2 and symbolic):
            return result(Status.UNSOLVED, Reason.DEGREE, detail=sp.Integer(degree))
        sols = tuple(_tidied(c, self.variables)
                     for c in crossover(left / v ** low, right / v ** low, v))
        below, above = _sides(num / den, v, sols)
        of, expr = ("I", left) if base["kind"] == "ridge" else (f"{base['lhs']}/{base['rhs']}",
                                                                ratio)
        more: dict[str, Any] = dict(asymptotes=tuple(self.asymptotes(of, expr, v)))
        if not sols:
            known = below if below is not None else above
            return result(Status.NEVER, Reason.NO_POSITIVE_ROOT if known is None
                          else Reason.ONE_SIGN, below=_side(known, base),
                          above=_side(known, base), **more)
        textbook = self._textbook(named or (in_terms_of(left, self.named),
                                            in_terms_of(right, self.named)), v, sols)
        return result(Status.CROSSES, solutions=sols, textbook=textbook,
                      invariants=self._invariants(v, sols + textbook),
                      below=_side(below, base), above=_side(above, base), **more)

    def asymptotes(self, of: str, expr: sp.Expr, v: sp.Symbol) -> list[Asymptote]:
        """Limits of ``expr`` as v -> 0 and v -> oo (none if outside the budget)."""
        if v not in expr.free_symbols or rational_degree(expr, v) is None or \
                sp.count_ops(expr) > self.budget.max_ops:
            return []
        key = ("limits", expr, v)
        if key not in self._limits:  # canonical: display() shapes it when it is printed
            self._limits[key] = [sp.cancel(limit(expr, v, to)) for to in (sp.Integer(0), sp.oo)]
        return [Asymptote(of, v, to, value)
                for to, value in zip((sp.Integer(0), sp.oo), self._limits[key])]

    def _textbook(self, named: tuple[sp.Expr, sp.Expr], v: sp.Symbol,
                  sols: tuple[Crossover, ...]) -> tuple[Crossover, ...]:
        """The solutions again with the named symbols in place (S = P/(2LD)); each is
        checked against a graph-form solution once the names are substituted back."""
        if not self.named or not (named[0].free_symbols | named[1].free_symbols) & set(self.named):
            return ()
        try:
            found = crossover(named[0], named[1], v)
        except SymroofError:
            return ()
        back = dict(self.named)
        return tuple(c for c in found if any(
            sp.cancel(c.value.xreplace(back) - s.value) == 0 for s in sols))

    def _invariants(self, v: sp.Symbol, sols: tuple[Crossover, ...]) -> tuple[Invariant, ...]:
        """Products ``v * y**k`` constant along a solution ``v = c * y**(-k)``."""
        out: list[Invariant] = []
        for c in sols:
            for y in self.variables:
                if y == v or y not in c.value.free_symbols:
                    continue
                const, rest = c.value.as_independent(y, as_Add=False)
                base, power = rest.as_base_exp()
                if base == y and power.is_Integer:
                    out.append(Invariant(v * y ** -power, const))
        return tuple(out)


def in_terms_of(expr: sp.Expr, named: Mapping[sp.Symbol, sp.Expr]) -> sp.Expr:
    """``expr`` with each named expression replaced by its symbol where it divides a term
    (or the whole expression): 24*B*L*D**2 with P = 12*L*D**2 becomes 2*B*P."""
    for sym, value in named.items():
        whole = sp.cancel(expr / value)
        if sp.fraction(whole)[1].is_number:
            expr = sp.expand(whole) * sym
            continue
        if value.is_Add:
            continue
        terms = []
        for t in sp.Add.make_args(sp.expand(expr)):
            q = sp.cancel(t / value)
            terms.append(q * sym if sp.fraction(q)[1].is_number else t)
        expr = sp.Add(*terms)
    return expr


def _tidied(c: Crossover, variables: tuple[sp.Symbol, ...]) -> Crossover:
    """``c`` with each condition ``X > 0`` (or ``< 0``) stated more plainly and equivalently:
    factors known to be positive dropped, and a condition linear in a variable of the
    atlas solved for it (``67*B - 19788 > 0`` becomes ``B > 19788/67``)."""
    return Crossover(c.var, c.value, tuple(_plain(x, variables) for x in c.conditions))


def _plain(cond: sp.Expr, variables: tuple[sp.Symbol, ...]) -> sp.Expr:
    if not isinstance(cond, (sp.StrictGreaterThan, sp.StrictLessThan)) or cond.rhs != 0:
        return cond
    gt = isinstance(cond, sp.StrictGreaterThan)
    coeff, factors = sp.factor_terms(cond.lhs).as_coeff_mul()
    kept = [f for f in factors if not f.is_positive]
    if coeff < 0:
        gt = not gt
    x = sp.Mul(*kept)
    for v in variables:
        if v not in x.free_symbols or not x.is_polynomial(v):
            continue
        poly = sp.Poly(x, v)
        a = poly.all_coeffs()[0] if poly.degree() == 1 else None
        if a is None or not (a.is_positive or a.is_negative):
            continue
        bound = sp.factor_terms(sp.cancel(-poly.all_coeffs()[1] / a))
        return sp.StrictGreaterThan(v, bound) if gt == bool(a.is_positive) \
            else sp.StrictLessThan(v, bound)
    terms = sp.Add.make_args(sp.expand(x)) if x.is_Add else ()
    if 2 * sum(1 for t in terms if t.as_coeff_Mul()[0] < 0) > len(terms):
        x, gt = sp.expand(-x), not gt  # state it with mostly positive terms
    return sp.StrictGreaterThan(x, 0) if gt else sp.StrictLessThan(x, 0)


def _side(sign: int | None, base: Mapping[str, object]) -> Side | None:
    """The side where lhs - rhs has ``sign``: who dominates, and the lever there."""
    if sign is None:
        return None
    lhs, rhs = str(base["lhs"]), str(base["rhs"])
    top, other = (lhs, rhs) if sign > 0 else (rhs, lhs)
    if base["kind"] == "ridge":
        bound = "compute" if sign > 0 else "memory"
        return Side(top, other, LEVERS[bound], bound)
    return Side(top, other, LEVERS.get(top, ""))


def _sides(diff: sp.Expr, v: sp.Symbol,
           sols: tuple[Crossover, ...]) -> tuple[int | None, int | None]:
    """The sign of ``diff`` (lhs - rhs) as v -> 0 and as v -> oo: from the leading terms,
    else across one simple crossing, else at sample points."""
    low = _sign(leading_term(diff, v, 0).subs(v, 1))
    high = _sign(leading_term(diff, v).subs(v, 1))
    if len(sols) == 1 and (low is None) != (high is None) and _simple(diff, v, sols[0]):
        if high is not None:
            low = -high
        elif low is not None:
            high = -low
    if (low is None or high is None) and sols:
        seen = _witness_signs(diff, v, sols)
        low = seen[0] if low is None else low
        high = seen[1] if high is None else high
    return low, high


def _simple(diff: sp.Expr, v: sp.Symbol, c: Crossover) -> bool:
    """True unless ``c`` is a double root of diff's numerator (a touch, not a crossing)."""
    num = sp.Poly(sp.fraction(sp.cancel(diff))[0], v)
    return not num.rem(sp.Poly(sp.expand((v - c.value) ** 2), v)).is_zero \
        if num.degree() >= 2 else True


def _witness_signs(diff: sp.Expr, v: sp.Symbol,
                   sols: tuple[Crossover, ...]) -> tuple[int | None, int | None]:
    """Signs of ``diff`` below the smallest and above the largest root, at seeded sample
    points of the other symbols where every solution exists; None where samples disagree
    (the side then depends on the other symbols) or none is found."""
    rng = random.Random(18)
    others = sorted(diff.free_symbols - {v}, key=str)
    signs: set[tuple[int, int]] = set()
    found = 0
    for _ in range(64):
        point = {s: _sample(s, rng) for s in others}
        found_roots = [c.at(point) for c in sols]
        roots = [r for r in found_roots if r is not None and r.is_number and r.is_positive]
        if len(roots) != len(sols):
            continue
        lo, hi = min(roots) / 2, max(roots) * 2
        at_lo, at_hi = (_sign(diff.xreplace({**point, v: x})) for x in (lo, hi))
        if at_lo is None or at_hi is None:
            continue
        signs.add((at_lo, at_hi))
        found += 1
        if len(signs) > 1 or found >= 12:
            break
    if len(signs) != 1:
        return (None, None)
    return next(iter(signs))


def _sample(s: sp.Symbol, rng: random.Random) -> sp.Expr:
    """A value in ``s``'s domain: dimensions up to 2**17, bytes per value 1/2 to 4, other
    quantities (a ridge) 1/16 to 16384."""
    if s.is_integer:
        return sp.Integer(int(2 ** rng.uniform(0, 17)))
    if s.name.startswith("b"):
        return sp.Rational(rng.choice((1, 2, 4, 8)), 2)
    return sp.Rational(rng.randint(1, 2 ** 14), 2 ** rng.randint(0, 4))

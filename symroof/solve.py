"""Solvers: limits, crossovers with their conditions, curves, asymptotics (the roofline's
regimes are :mod:`symroof.regimes`, beside the roofline; ``regimes`` and ``Regime`` load
from here too).

Everything works on rational functions through their numerator and denominator as
polynomials in the variable (leading terms, roots by degree); no general-purpose
simplification. Min and Max never reach a solver: roofline bounds come as branches
(:func:`symroof.regimes.regimes`).
Every solver checks its input against the size and degree limits and runs under the
wall-clock and memory guard of :mod:`symroof.budget`; a BudgetError names the call.

>>> from symroof.symbols import B, D, S, b
>>> I = 2*B*(6*D + S)/(b*(B*S + 6*D))
>>> limit(I, B)                       # algebra: the cancelled form
(12*D + 2*S)/(S*b)
>>> from symroof import text
>>> text(limit(I, B))                 # printed in the textbook's order
'(12*D/S + 2)/b'
>>> [c.value for c in crossover(2*B*S*D, 12*D**2, B)]
[6*D/S]
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Mapping
from typing import Any
from dataclasses import dataclass

import sympy as sp

from symroof.budget import (check_expr, current, degree_bound, guarded, light, note,
                            substitute)
from symroof.display import positive_denominator
from symroof.errors import SymroofError
from symroof.ir import as_expr
from symroof.rich import Rich

__all__ = ["limit", "leading_term", "crossover", "Crossover", "Crossings", "crossover_curve",
           "Curve", "sensitivity", "theta", "positive_condition"]


def __getattr__(name: str) -> Any:
    """``regimes`` and ``Regime``, which moved to :mod:`symroof.regimes` (that module
    builds on this one, so they load on first use)."""
    if name in ("regimes", "Regime"):
        return getattr(importlib.import_module("symroof.regimes"), name)
    raise AttributeError(f"module 'symroof.solve' has no attribute {name!r}")


def power_hint(expr: sp.Expr, var: sp.Symbol) -> str:
    """Why ``expr`` is no rational function of ``var`` when ``var`` is in an exponent: a
    mixture of experts' expected expert reads, E (1 - (1 - k/E)^tokens), the default;
    the options that make it one are named. '' otherwise."""
    if not any(var in p.exp.free_symbols for p in expr.atoms(sp.Pow)):
        return ""
    return (f"; {var} is in an exponent, as in a mixture of experts' expected expert reads "
            "(expert_reads='expected', the default: E(1 - (1 - k/E)^tokens)); "
            "expert_reads='all' (an upper bound) or 'active' (k experts a token) makes it "
            "a rational function (--expert-reads all|active)")


def _rational_parts(expr: sp.Expr, var: sp.Symbol, what: str) -> tuple[sp.Poly, sp.Poly]:
    num, den = sp.fraction(sp.cancel(sp.together(expr)))
    try:
        return sp.Poly(num, var), sp.Poly(den, var)
    except sp.PolynomialError:
        raise SymroofError(f"{what}: expected a rational function of {var}, got "
                           f"{_short(expr)}{power_hint(expr, var)}") from None


def _symbol(var: object, what: str) -> sp.Symbol:
    if not isinstance(var, sp.Symbol):
        raise SymroofError(f"{what}: expected a symbol to vary, got {var!r}")
    return var


def _short(e: object) -> str:
    text = str(e) if not isinstance(e, sp.Basic) or sp.count_ops(e) < 60 else \
        f"{type(e).__name__}(...)"
    return text if len(text) <= 80 else text[:77] + "..."


def _checked(e: sp.Expr, what: str) -> sp.Expr:
    """``e`` within the size and degree limits (all its symbols: cancel expands them all)."""
    check_expr(e, what)
    return e


def _quick(e: sp.Expr, var: sp.Symbol | None = None, degree: int | None = None) -> bool:
    """Whether ``e`` is light and rational in ``var`` (of at most ``degree`` there): a
    computation on it runs without the guard's fork (see symroof.budget.light)."""
    if var is not None and not e.is_rational_function(var):
        return False
    if degree is not None and var is not None and degree_bound(e, var) > degree:
        return False
    return light(e)


def leading_term(expr: object, var: sp.Symbol, to: object = sp.oo) -> sp.Expr:
    """The dominant term of ``expr`` as ``var`` tends to ``to`` (oo or 0).

    >>> from symroof.symbols import B, D, S
    >>> leading_term((B*S + 6*D)/B, B)
    S
    """
    e, v = as_expr(expr, "leading_term"), _symbol(var, "leading_term")
    if to not in (sp.oo, 0):
        raise SymroofError(f"leading_term: expected to=oo or 0, got {to!r}")
    if v not in e.free_symbols:
        return e
    _checked(e, "leading_term")
    return guarded(f"leading term of {_short(e)} as {v} -> {to}", _leading_term, e, v, to,
                   unguarded=_quick(e, v))


def _leading_term(e: sp.Expr, v: sp.Symbol, to: object) -> sp.Expr:
    note("cancelling to one fraction")
    num, den = _rational_parts(e, v, "leading_term")
    if to == sp.oo:
        n_c, n_d = num.LC(), num.degree()
        d_c, d_d = den.LC(), den.degree()
    else:
        n_d = min(k[0] for k, _ in num.terms())
        n_c = dict((k[0], c) for k, c in num.terms())[n_d]
        d_d = min(k[0] for k, _ in den.terms())
        d_c = dict((k[0], c) for k, c in den.terms())[d_d]
    return sp.cancel(n_c / d_c) * v ** (n_d - d_d)


def limit(expr: object, var: sp.Symbol, to: object = sp.oo) -> sp.Expr:
    """The limit of a rational function of ``var`` from its leading terms.

    A non-rational expression falls back to ``sympy.limit``. The result is algebra: a
    finite leading term comes cancelled (``(12*D + 2*S)/(S*b)``); the printers
    (``symroof.text``, ``symroof.latex``, ``symroof.display``) write it in the
    textbook's order, ``(12*D/S + 2)/b``.
    """
    e, v = as_expr(expr, "limit"), _symbol(var, "limit")
    point = as_expr(to, "limit to")
    if point.free_symbols or point.has(sp.nan, sp.zoo) or point.is_extended_real is False:
        raise SymroofError(f"limit: expected a point such as oo or 0 to tend to, got {to!r}")
    if e.has(sp.Min, sp.Max, sp.Piecewise, sp.floor, sp.ceiling):
        raise SymroofError(f"limit: {_short(e)} has Min/Max/Piecewise/floor/ceiling; take "
                           "limits per branch (symroof.regimes gives the branches of a roofline)")
    if v not in e.free_symbols:
        return e
    _checked(e, "limit")
    value, shown = guarded(f"limit of {_short(e)} as {v} -> {point}", _limit, e, v, point,
                           unguarded=point in (sp.oo, 0) and _quick(e, v))
    return sp.cancel(value) if shown else value


def _limit(e: sp.Expr, v: sp.Symbol, to: sp.Expr) -> tuple[sp.Expr, bool]:
    """(the limit, whether it is a finite leading term to show in display form)."""
    if to not in (sp.oo, 0):
        return _sympy_limit(e, v, to), False
    try:
        lead = _leading_term(e, v, to)
    except SymroofError:
        return _sympy_limit(e, v, to), False
    power = sp.Poly(lead, v).degree() if lead.is_polynomial(v) else -1
    if v not in lead.free_symbols:
        return lead, True  # the textbook's shape: (12*D/S + 2)/b
    if (to == sp.oo and power < 0) or (to == 0 and power > 0):
        return sp.Integer(0), False
    sign = sp.sign(lead.subs(v, 1))
    return (sp.oo * sign, False) if sign.is_number else (_sympy_limit(e, v, to), False)


def _sympy_limit(e: sp.Expr, v: sp.Symbol, to: object) -> sp.Expr:
    note("sympy.limit (not a rational function)")
    try:
        return sp.limit(e, v, to)
    except Exception as exc:  # SymPy's limit raises many types; the caller gets one
        raise SymroofError(f"limit of {_short(e)} as {v} -> {to}: no closed form "
                           f"({type(exc).__name__}){power_hint(e, v)}") from None


def positive_condition(expr: sp.Expr) -> sp.Expr | bool:
    """``expr > 0`` reduced with the symbols' assumptions: True, False or a relation.

    >>> from symroof.symbols import B, S
    >>> positive_condition(B - S), positive_condition(B + S)
    (B - S > 0, True)
    """
    e = _checked(as_expr(expr, "positive_condition"), "positive_condition")
    if e.has(sp.I) or e.has(sp.nan, sp.zoo):
        raise SymroofError(f"positive_condition: {_short(e)} is not a real expression")
    return guarded(f"the sign of {_short(e)}", _positive_condition, e, unguarded=_quick(e))


def _positive_condition(expr: sp.Expr) -> sp.Expr | bool:
    note("factoring the sign condition")
    e = sp.factor_terms(sp.cancel(expr))
    if e.is_positive:
        return True
    if e.is_nonpositive:
        return False
    num, den = sp.fraction(sp.together(e))
    for known, unknown in ((den, num), (num, den)):  # the sign of the part not known
        if known.is_positive or known.is_negative:
            sign = 1 if known.is_positive else -1
            coeff, factors = sp.factor_terms(unknown).as_coeff_mul()
            rest = sp.Mul(*[f for f in factors if not f.is_positive])
            if rest.is_number:
                return bool(sign * coeff * rest > 0)
            if _leading_sign(rest) < 0:  # state it with a positive leading term
                rest, coeff = -rest, -coeff
            return _solved(sp.StrictGreaterThan(rest, 0) if sign * coeff > 0
                           else sp.StrictLessThan(rest, 0))
    return sp.StrictGreaterThan(e, 0)


def _leading_sign(expr: sp.Expr) -> int:
    """-1 when most terms of ``expr`` have negative coefficients, else 1."""
    terms = sp.Add.make_args(sp.expand(expr))
    return -1 if 2 * sum(1 for t in terms if t.as_coeff_Mul()[0] < 0) > len(terms) else 1


def _solved(rel: sp.Expr) -> sp.Expr:
    """A linear condition in one quantity (a non-dimension symbol, e.g. a ridge) solved
    for it: ``12*D + 2*S - R*S*b > 0`` becomes ``R < (12*D + 2*S)/(S*b)``."""
    lhs = rel.lhs - rel.rhs
    quantities = [q for q in lhs.free_symbols if q.is_integer is not True]
    for q in sorted(quantities, key=lambda x: x.name):
        try:
            poly = sp.Poly(lhs, q)
        except sp.PolynomialError:
            continue
        if poly.degree() != 1:
            continue
        a, c = poly.all_coeffs()
        if not (a.is_positive or a.is_negative):
            continue
        bound = sp.factor_terms(sp.cancel(-c / a))
        flip = a.is_negative
        strict_gt = isinstance(rel, sp.StrictGreaterThan)
        return sp.StrictGreaterThan(q, bound) if strict_gt != flip else sp.StrictLessThan(q, bound)
    return rel


@dataclass(frozen=True)
class Crossover(Rich):
    """One solution ``var = value`` of ``lhs = rhs``, valid while every condition holds."""

    var: sp.Symbol
    value: sp.Expr
    conditions: tuple[sp.Expr, ...] = ()

    @property
    def always(self) -> bool:
        """True when the solution exists for every value of the other symbols."""
        return not self.conditions

    def at(self, values: Mapping[sp.Symbol, object]) -> sp.Expr | None:
        """The value at ``values``, or None where a condition fails there (values within
        the digits limit, keys symbols)."""
        if not isinstance(values, Mapping) or not all(isinstance(k, sp.Symbol) for k in values):
            raise SymroofError("Crossover.at: expected a mapping of symbols to values")
        subs = {k: as_expr(v, f"value of {k.name}") for k, v in values.items()}
        for c in self.conditions:
            held = substitute(c, subs, f"condition {c}")
            if held is sp.false or held is False:
                return None
        return substitute(self.value, subs, f"crossover {self.var}")


class Crossings(list[Crossover]):
    """What :func:`crossover` returns: the list of solutions it always was (index it,
    iterate it, compare it with ``[]``), and, when it is empty, ``reason``: why there is
    no crossing (the sides differ by a constant, no root is real, no real root is
    positive).

    >>> from symroof.symbols import B
    >>> crossover(B + 5, 2, B)
    Crossings([], reason='no positive root in B (the real roots: -3)')
    """

    def __init__(self, solutions: Iterable[Crossover] = (), reason: str = "") -> None:
        super().__init__(solutions)
        self.reason = reason

    def __repr__(self) -> str:
        if self or not self.reason:
            return super().__repr__()
        return f"Crossings([], reason={self.reason!r})"

    def __reduce__(self) -> tuple[Any, ...]:  # through the guarded child and back
        return (Crossings, (list(self), self.reason))


def crossover(lhs: object, rhs: object, var: sp.Symbol) -> Crossings:
    """Every positive solution of ``lhs = rhs`` in ``var``, each with its conditions;
    none comes back with the reason (:class:`Crossings`), and ``var`` on neither side is
    a SymroofError (it was an empty list before: a typo in the variable is not "never").

    A root that is never positive is dropped; one positive only for some values of
    the other symbols carries that as a condition (a batch where decode turns
    compute-bound exists only while the asymptotic intensity exceeds the ridge). Roots
    come in closed form up to degree 2 with symbolic coefficients, exactly (radicals or
    ``CRootOf``) for any degree within the limit when every other symbol has a value,
    and otherwise only where the polynomial factors.
    """
    v = _symbol(var, "crossover")
    a, c = as_expr(lhs, "crossover lhs"), as_expr(rhs, "crossover rhs")
    if v not in a.free_symbols | c.free_symbols:
        names = ", ".join(sorted(str(x) for x in a.free_symbols | c.free_symbols)) or "none"
        raise SymroofError(f"crossover: {v} appears on neither side (their symbols: {names})")
    diff = _checked(a - c, "crossover")
    if diff.has(sp.Min, sp.Max, sp.Piecewise):
        raise SymroofError("crossover: a side has Min/Max/Piecewise; solve per branch "
                           "(symroof.regimes gives the branches of a roofline)")
    return guarded(f"crossover {_short(a)} = {_short(c)} in {v}", _crossover, diff, v,
                   unguarded=_quick(diff, v, 2))


def _crossover(diff: sp.Expr, v: sp.Symbol) -> Crossings:
    note("cancelling to one fraction")
    diff = sp.cancel(diff)
    if diff == 0:
        raise SymroofError(f"crossover: the two sides are equal for every {v}")
    num, den = _rational_parts(diff, v, "crossover")
    deg = num.degree()
    if deg > current().degree:
        raise SymroofError(f"crossover: degree {deg} in {v}, more than the limit of "
                           f"{current().degree} (raise it with --budget degree=N)")
    if deg <= 0:
        return Crossings(reason=f"the sides differ by {_short(diff)}, never 0, for every {v}")
    note(f"finding the roots of a degree-{deg} polynomial in {v}")
    conds_extra: list[sp.Expr] = []
    if deg == 1:
        c1, c0 = num.all_coeffs()
        roots = [sp.cancel(-c0 / c1)]
    elif deg == 2:
        a, b_, c = num.all_coeffs()
        disc = sp.expand(b_ ** 2 - 4 * a * c)
        sq = sp.sqrt(disc)
        roots = [sp.cancel((-b_ + sq) / (2 * a)), sp.cancel((-b_ - sq) / (2 * a))]
        conds_extra = [] if disc.is_nonnegative else [sp.GreaterThan(disc, 0)]
    elif num.free_symbols <= {v}:  # numbers only: every real root, exactly
        roots = list(dict.fromkeys(num.real_roots()))
    else:  # symbolic: only roots found by factoring; Cardano's radicals are no answer
        found = sp.roots(num, v, cubics=False, quartics=False, quintics=False)
        if sum(found.values()) < deg:
            raise SymroofError(f"crossover: no closed form for the roots of a degree-{deg} "
                               f"polynomial in {v} with symbolic coefficients; give the "
                               "other symbols values (--set) for exact numeric roots")
        roots = list(found)
    out = Crossings()
    seen: set[sp.Expr] = set()
    real: list[sp.Expr] = []
    poles: list[sp.Expr] = []
    note("checking each root's sign and conditions")
    for root in roots:
        if root in seen or root.is_real is False or root.has(sp.I) or (
                root.is_number and not root.is_real):
            continue  # a repeated or complex root is no crossover
        seen.add(root)
        real.append(root)
        cond = _positive_condition(root)
        if cond is False:
            continue
        conds = list(conds_extra) + ([] if cond is True else [cond])
        if sp.cancel(den.as_expr().subs(v, root)) == 0:
            poles.append(root)   # a root of the numerator where a side is undefined
            continue
        out.append(Crossover(v, _normalised(root), tuple(conds)))
    if not out:
        shown = ", ".join(_short(r) for r in real[:4]) + (", ..." if len(real) > 4 else "")
        out.reason = (
            f"the only positive root, {v} = {_short(poles[0])}, makes a side undefined"
            if poles else f"no positive root in {v} (the real roots: {shown})" if real else
            f"no real root in {v} (degree {deg}, every root complex)")
    return out


def _normalised(root: sp.Expr) -> sp.Expr:
    """``root`` with a denominator whose terms are mostly positive (-a/(c - d) -> a/(d - c))."""
    num, den = sp.fraction(positive_denominator(sp.factor_terms(root)))
    return sp.factor_terms(num) / sp.factor_terms(sp.expand(den))


@dataclass(frozen=True)
class Curve:
    """``y = f(x)`` along ``lhs = rhs``, with the conditions of that branch."""

    x: sp.Symbol
    y: sp.Symbol
    expr: sp.Expr
    conditions: tuple[sp.Expr, ...] = ()

    @property
    def invariant(self) -> sp.Expr | None:
        """The constant ``x**k * y`` along the curve when y is a power law in x, else None
        (KV bytes = weight bytes: ``S*B`` is constant)."""
        for power in (1, 2, 3, -1, -2, -3):
            value = sp.cancel(self.expr * self.x ** power)
            if self.x not in value.free_symbols:
                return value
        return None


def crossover_curve(lhs: object, rhs: object, x: sp.Symbol, y: sp.Symbol) -> list[Curve]:
    """``y`` as a function of ``x`` along ``lhs = rhs`` (one curve per branch)."""
    _symbol(x, "crossover_curve x")
    return [Curve(x, c.var, c.value, c.conditions) for c in crossover(lhs, rhs, y)]


def sensitivity(expr: object, var: sp.Symbol) -> sp.Expr:
    """The elasticity d ln f / d ln x = x f'(x) / f(x): the % change of f per % of x.

    >>> from symroof.symbols import n, b
    >>> sensitivity(2*n/(3*b), n)
    1
    """
    e, v = as_expr(expr, "sensitivity"), _symbol(var, "sensitivity")
    if e == 0:
        raise SymroofError("sensitivity: the elasticity of 0 is undefined")
    _checked(e, "sensitivity")
    return guarded(f"sensitivity of {_short(e)} to {v}", _sensitivity, e, v,
                   unguarded=_quick(e, v))


def _sensitivity(e: sp.Expr, v: sp.Symbol) -> sp.Expr:
    note("differentiating and cancelling")
    return sp.factor_terms(sp.cancel(v * sp.diff(e, v) / e))


def theta(expr: object, small: Iterable[tuple[sp.Symbol, sp.Symbol]] = ()) -> sp.Expr:
    """The asymptotic class of ``expr``: its dominant terms with constants dropped.

    ``small`` lists pairs (x, y) with x << y (context << width; SRAM << S d_h): x is
    written eps*y and the expression expanded to first order in eps. A term is dropped
    when another term of lower order in eps is at least as large by the dimension test
    (their ratio is 1 over a product of dimensions, all >= 1), or when another term of
    the same order dominates it that way; coefficients become 1.
    Shazeer's incremental attention: memory/arithmetic = Theta(n/d + 1/b).
    """
    e = _checked(as_expr(expr, "theta"), "theta")
    try:
        pairs = [(_symbol(x, "theta small"), _symbol(y, "theta small")) for x, y in small]
    except (TypeError, ValueError):
        raise SymroofError("theta: small must be pairs (x, y) of symbols with x << y") from None
    return guarded(f"theta of {_short(e)}", _theta, e, pairs)


def _theta(e: sp.Expr, small: list[tuple[sp.Symbol, sp.Symbol]]) -> sp.Expr:
    note("expanding in the small ratios")
    eps = sp.Dummy("eps", positive=True)
    back: dict[sp.Expr, sp.Expr] = {}
    for x, y in small:
        e = e.xreplace({x: eps * y})
        back[eps] = x / y
        e = sp.series(e, eps, 0, 2).removeO()
    monomials: list[tuple[sp.Expr, sp.Expr]] = []     # (eps power, term without eps)
    for t in sp.Add.make_args(sp.expand(e)):
        body, power = t.as_coeff_exponent(eps) if eps in t.free_symbols else (t, sp.Integer(0))
        coeff, rest = body.as_coeff_Mul()
        if coeff.is_positive and (power, rest) not in monomials:
            monomials.append((power, rest))

    def at_most(t: sp.Expr, by: sp.Expr) -> bool:
        num, den = sp.fraction(sp.cancel(t / by))
        return num.is_number and all(s.is_integer and s.is_positive for s in den.free_symbols)

    def dominated(item: tuple[sp.Expr, sp.Expr], other: tuple[sp.Expr, sp.Expr]) -> bool:
        (p, t), (q, o) = item, other
        if item == other:
            return False
        if q < p:
            return at_most(t, o)
        return q == p and t != o and at_most(t, o) and not at_most(o, t)

    kept = [m for m in monomials if not any(dominated(m, o) for o in monomials)]
    result = sp.Add(*(t * eps ** p for p, t in kept))
    return result.xreplace(back) if back else result

"""The closed forms that bind a serving plan: the largest batch meeting an inter-token
latency objective, and the memory limit on batch x context.

A decode step's time is built from linear functions of the batch ``B`` with ``Max``
(memory and compute overlap), ``+`` (the link is not overlapped), positive factors
(pipeline stages, efficiencies) and ``Min`` (MoE experts read: ``min(E, k B)``). Such a
function is a *min of maxes of linear functions* (:func:`minmax`): the lattice laws
``max(min_j x_j, min_k y_k) = min_{j,k} max(x_j, y_k)`` and ``+`` distributing over both
bring it there. Each linear branch ``c + s B`` with ``s > 0`` meets ``T`` at
``B = (T - c)/s``; the step time is at most ``T`` exactly when, for some ``j``, every
branch of max ``j`` is, so the largest batch is

    B* = max_j min_i (T - c_ij) / s_ij

(a branch with ``s = 0`` is a condition ``c <= T`` instead). That is the crossover
``ITL(B) = T`` solved symbolically, with its conditions; the integer batch is
``floor(B*)``.

>>> from symroof.symbols import B, quantity
>>> T = quantity("tau")
>>> lim = itl_limit(2 * sp.Max(3 + B, 1 + 2 * B), T)
>>> lim.formula
Min(tau/4 - 1/2, tau/2 - 3)
>>> lim.at(T, 20).batch    # 2 max(3 + B, 1 + 2B) <= 20 up to B = 4.5
4
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import sympy as sp

from symroof.errors import SymroofError
from symroof.symbols import B

__all__ = ["Branch", "minmax", "BatchLimit", "itl_limit", "MemoryLimit", "memory_limit",
           "NotPiecewiseLinear", "MAX_BRANCHES"]

#: Most (min x max) branches a step-time formula may expand to before the planner gives
#: up the closed form and scans numerically instead.
MAX_BRANCHES = 256


class NotPiecewiseLinear(SymroofError):
    """The formula is not a min of maxes of linear functions of B (MoE reads counted as
    expected values, ``(1 - k/E)^B``): no closed form here."""


@dataclass(frozen=True)
class Branch:
    """One linear piece ``constant + slope * B`` of a step time."""

    constant: sp.Expr
    slope: sp.Expr

    def expr(self, batch: sp.Expr = B) -> sp.Expr:
        return self.constant + self.slope * batch


def _linear(e: sp.Expr, x: sp.Symbol) -> Branch:
    if x not in e.free_symbols:
        return Branch(e, sp.Integer(0))
    p = sp.Poly(sp.expand(e), x) if e.is_polynomial(x) else None
    if p is None or p.degree() > 1:
        raise NotPiecewiseLinear(f"step time: {e} is not linear in {x}")
    return Branch(p.coeff_monomial(1), p.coeff_monomial(x))


def _positive(c: sp.Expr) -> bool:
    return bool(c.is_positive)


MinMax = tuple[tuple[Branch, ...], ...]   # min over j of max over i of branch ij


def minmax(e: sp.Expr, x: sp.Symbol = B) -> MinMax:
    """``e`` as a min over maxes of linear functions of ``x`` (see the module docstring);
    :class:`NotPiecewiseLinear` where it is not one."""
    if not isinstance(e, sp.Expr):
        raise SymroofError(f"step time: expected a formula, got {type(e).__name__}")
    out = _minmax(e, x)
    if sum(len(m) for m in out) > MAX_BRANCHES:
        raise NotPiecewiseLinear(f"step time: more than {MAX_BRANCHES} linear branches")
    return out


def _minmax(e: sp.Expr, x: sp.Symbol) -> MinMax:
    if x not in e.free_symbols:
        return ((Branch(e, sp.Integer(0)),),)
    if isinstance(e, sp.Max):
        parts = [_minmax(a, x) for a in e.args]
        return tuple(tuple(b for m in combo for b in m) for combo in itertools.product(*parts))
    if isinstance(e, sp.Min):
        return tuple(m for a in e.args for m in _minmax(a, x))
    if isinstance(e, sp.Add):
        parts = [_minmax(a, x) for a in e.args]
        out = []
        for combo in itertools.product(*parts):  # a sum of maxes: the max of the sums
            out.append(tuple(Branch(sp.Add(*(b.constant for b in pick)),
                                    sp.Add(*(b.slope for b in pick)))
                             for pick in itertools.product(*combo)))
            if len(out) > MAX_BRANCHES:
                raise NotPiecewiseLinear(f"step time: more than {MAX_BRANCHES} branches")
        return tuple(out)
    if isinstance(e, sp.Mul):
        const = sp.Mul(*(a for a in e.args if x not in a.free_symbols))
        rest = sp.Mul(*(a for a in e.args if x in a.free_symbols))
        if const != 1 and _positive(const) and not isinstance(rest, sp.Mul):
            return tuple(tuple(Branch(const * b.constant, const * b.slope) for b in m)
                         for m in _minmax(rest, x))
    return ((_linear(e, x),),)


@dataclass(frozen=True)
class BatchLimit:
    """The largest batch whose step time is at most ``objective``: ``formula`` is B* as a
    closed form (``max_j min_i (T - c_ij)/s_ij``), ``conditions`` the constant branches
    that must hold (``c <= T``); ``binding`` the branch that sets B* (where every
    quantity is a number)."""

    step: sp.Expr                      # the step time, in B
    objective: sp.Expr                 # T
    branches: MinMax
    formula: sp.Expr                   # B* (real); oo where no branch grows with B
    conditions: tuple[sp.Expr, ...]    # relations that must hold for any batch to meet T

    def at(self, symbol: sp.Symbol, value: object) -> BatchLimit:
        """The limit with ``symbol`` (the objective's) set to ``value``."""
        v = sp.Rational(str(value)) if isinstance(value, float) else sp.Integer(value) \
            if isinstance(value, int) else value
        sub = {symbol: v}
        return BatchLimit(self.step.xreplace(sub), self.objective.xreplace(sub),
                          tuple(tuple(Branch(b.constant.xreplace(sub), b.slope.xreplace(sub))
                                      for b in m) for m in self.branches),
                          self.formula.xreplace(sub),
                          tuple(c.xreplace(sub) for c in self.conditions))

    @property
    def met(self) -> bool | None:
        """Whether some batch >= 1 meets the objective (None: undecided)."""
        b = self.batch
        return None if b is None else b >= 1

    @property
    def batch(self) -> int | None:
        """floor(B*) where it is a number, over the alternatives (min over j) whose
        conditions hold; 0 where none does; None where symbols remain."""
        best: int | None = 0
        for m in self.branches:
            ok, roots = True, []
            for b in m:
                if b.slope == 0:
                    held = sp.Le(b.constant, self.objective)
                    if held not in (sp.true, sp.false):
                        return None
                    ok = ok and held is sp.true
                else:
                    roots.append((self.objective - b.constant) / b.slope)
            if not ok:
                continue
            if any(r.free_symbols for r in roots):
                return None
            top = min(roots) if roots else sp.oo
            if top is sp.oo:
                return None   # no branch grows: any batch (the memory limit decides)
            n = int(sp.floor(top))
            best = max(best or 0, n)
        return best

    @property
    def binding(self) -> Branch | None:
        """The branch whose crossing is B* (numbers only)."""
        found: tuple[sp.Expr, Branch] | None = None
        for m in self.branches:
            if any(b.slope == 0 and sp.Le(b.constant, self.objective) is not sp.true
                   for b in m):
                continue
            grow = [b for b in m if b.slope != 0]
            if not grow:
                continue
            roots = [((self.objective - b.constant) / b.slope, b) for b in grow]
            if any(r.free_symbols for r, _ in roots):
                return None
            r, b = min(roots, key=lambda t: t[0])
            if found is None or r > found[0]:
                found = (r, b)
        return None if found is None else found[1]


def itl_limit(step: sp.Expr, objective: sp.Expr) -> BatchLimit:
    """The largest batch whose step time ``step`` (a formula in B) is at most
    ``objective`` (see the module docstring); :class:`NotPiecewiseLinear` where the
    step time is not piecewise linear in B."""
    mm = minmax(step)
    alts, conds = [], []
    for m in mm:
        roots = [(objective - b.constant) / b.slope for b in m if b.slope != 0]
        conds += [sp.Le(b.constant, objective) for b in m if b.slope == 0]
        alts.append(sp.Min(*roots) if roots else sp.oo)
    conditions = tuple(c for c in dict.fromkeys(conds) if c is not sp.true)
    return BatchLimit(step, objective, mm, sp.Max(*alts), conditions)


@dataclass(frozen=True)
class MemoryLimit:
    """The capacity formula as a limit on batch x context: ``B * per_token * S <= free``
    per device (``per_token`` the KV bytes of one position of one sequence on a device,
    ``free`` the usable memory less the weights)."""

    usable: sp.Expr
    weights: sp.Expr
    per_token: sp.Expr       # KV bytes per (sequence, position) on one device
    tokens: sp.Expr          # the most B * S: free / per_token

    def batch(self, context: int) -> int:
        """Sequences of ``context`` positions that fit (0 when the weights do not)."""
        n = sp.floor(self.tokens / sp.Integer(context))
        return max(0, int(n))


def memory_limit(usable: sp.Expr, weights: sp.Expr, kv_per_sequence: sp.Expr,
                 context: sp.Symbol) -> MemoryLimit:
    """The memory limit on B x S from one sequence's KV bytes at ``context`` positions (a
    formula proportional to ``context``: full attention)."""
    per_token = sp.cancel(kv_per_sequence / context)
    if context in per_token.free_symbols:
        raise SymroofError(f"memory limit: the KV cache per sequence {kv_per_sequence} is not "
                           f"proportional to the context (a window): no B x S limit")
    return MemoryLimit(usable, weights, per_token, (usable - weights) / per_token)

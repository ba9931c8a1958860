"""Formulas in a document's own notation: rewrite an expression in named sub-expressions.

A document writes ``2P + 4LSD`` where the engine derives ``24*D**2*L + 4*D*L*S``; given
the names it declares (``P = 12 L D²``), :func:`rewrite` returns the expression in those
names, exactly equal once the names are substituted back, or the expression unchanged
where no name applies. :func:`ordered` puts a result in the order a textbook prints it,
:func:`usage` says which declared names a formula uses, and :func:`substitution_steps`
gives the chain a reader checks by hand (names, their values, numbers).

>>> from symroof.symbols import B, D, L, P, S
>>> e = rewrite(24*D**2*L + 4*D*L*S, {P: 12*L*D**2})
>>> e
4*D*L*S + 2*P
>>> text(e, {P: 12*L*D**2}, order=(L, S, D))
'2*P + 4*L*S*D'
>>> rewrite(6*D, {P: 12*L*D**2}, require=(P,))
P/(2*D*L)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache

import sympy as sp
from sympy.printing.latex import LatexPrinter

from symroof import budget
from symroof.errors import SymroofError
from symroof.display import display
from symroof.symbols import CANONICAL

__all__ = ["Names", "Usage", "Step", "expand_names", "rewrite", "usage", "check_used",
           "ordered", "text", "latex", "substitution_steps"]

#: An ordered mapping of named sub-expressions: name -> value (in base symbols or in
#: names declared with it).
Names = Mapping[sp.Symbol, sp.Expr]

_Monomial = tuple[int, ...]
_PolyDict = dict[_Monomial, Fraction]
_Key = Callable[[sp.Basic], tuple[int, str]]

#: Nesting of the name-as-a-factor search (F/Q is two levels): each level tries every
#: name twice, so the work stays (2 * names)**_MAX_DEPTH cancels at most per fraction.
_MAX_DEPTH = 2


def _exact(value: object) -> object:
    """A Python int or Fraction as a SymPy number, built explicitly (no sympify: the
    library converts nothing from text); anything else is returned as it is."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return sp.Integer(value)
    if isinstance(value, Fraction):
        return sp.Rational(value.numerator, value.denominator)
    return value


def expand_names(names: Names, where: str = "names") -> dict[sp.Symbol, sp.Expr]:
    """Each name's value in base symbols only (a value may use other declared names).

    >>> from symroof.symbols import D, L, S, P, T
    >>> expand_names({P: 12*L*D**2, T: 2*P + 4*L*S*D})[T]
    24*D**2*L + 4*D*L*S
    """
    values: dict[sp.Symbol, sp.Expr] = {}
    for name, value in names.items():
        if not isinstance(name, sp.Symbol):
            raise SymroofError(f"{where}: a name must be a symbol, got {name!r}")
        v = _exact(value)
        if not isinstance(v, sp.Expr):
            raise SymroofError(f"{where}: {name} = {value!r} is not an expression")
        budget.check_expr(v, f"{where}: {name}")
        values[name] = v
    for _ in range(len(values) + 1):
        nested = {n: v.xreplace(values) for n, v in values.items()}
        if nested == values:
            break
        values = nested
    for name, value in values.items():
        if value.free_symbols & set(values):
            raise SymroofError(f"{where}: {name} is defined in terms of itself")
        if not value.free_symbols:
            raise SymroofError(f"{where}: {name} = {value} is a number, not a formula")
    return values


def rewrite(expr: sp.Expr, names: Names, *, require: Iterable[sp.Symbol] = (),
            where: str = "rewrite") -> sp.Expr:
    """``expr`` in terms of ``names``: ``cancel(result.subs(names) - expr) == 0`` always.

    Polynomial parts of the numerator and denominator are matched term by term (a name
    whose value is a monomial, a polynomial or a ratio; larger values first, so a name
    defined through another is found before it); Min, Max and other functions are
    rewritten argument by argument. A name in ``require`` appears in the result even
    where that divides by its value (``6*D`` -> ``P/(2*D*L)``). Where no name applies
    the result is ``expr`` itself.

    >>> from symroof.symbols import B, D, L, S, b, P
    >>> F, Q = sp.symbols("F Q", positive=True)
    >>> f, q = 24*B*D**2*L + 4*B*D*L*S, 2*B*D*L*S*b + 12*D**2*L*b
    >>> rewrite(sp.cancel(f/q), {F: f, Q: q})
    F/Q
    """
    values = expand_names(names, where)
    budget.check_expr(expr, where)
    base = expr.xreplace(values)
    result = _rewrite(base, values, 0)
    for name in require:
        if name not in values:
            raise SymroofError(f"{where}: required name {name} is not declared")
        if name not in result.free_symbols:  # its value divided out; the rest without it
            others = {n: v for n, v in values.items() if n != name}
            result = name * _rewrite(sp.cancel(base / values[name]), others, 1)
    if result == base or sp.cancel(result.xreplace(values) - base) != 0:
        return expr
    return result


def _rewrite(e: sp.Expr, values: dict[sp.Symbol, sp.Expr], depth: int) -> sp.Expr:
    if not e.free_symbols or not isinstance(e, sp.Expr):
        return e
    if not e.is_rational_function():
        args = [_rewrite(a, values, depth) if isinstance(a, sp.Expr) else a for a in e.args]
        return e.func(*args)
    whole = _rational(e, values, depth)
    if whole.free_symbols & set(values) or not e.is_Add or e.is_polynomial():
        return whole
    # a sum of fractions no name fits as a whole (I + 1): its terms one by one
    terms = sp.Add(*(_rewrite(t, values, depth) for t in e.args))
    return terms if terms.free_symbols & set(values) else whole


def _rational(e: sp.Expr, values: dict[sp.Symbol, sp.Expr], depth: int) -> sp.Expr:
    """A rational function in names: its numerator and denominator matched term by term,
    or one name times an Add-free rest where that is shorter."""
    c = _combined(e)
    num, den = sp.fraction(c)
    gens = tuple(sorted(c.free_symbols | set().union(*(v.free_symbols for v in values.values())),
                        key=sp.default_sort_key))
    polys = [(n, d) for n, v in values.items() if (d := _poly_dict(v, gens)) is not None]
    polys.sort(key=lambda nd: (-len(nd[1]), -max(sum(m) for m in nd[1])))
    best = c
    if polys:
        best = _poly_rewrite(num, gens, polys) / _poly_rewrite(den, gens, polys)
    used = bool(best.free_symbols & set(values))
    if used and not best.has(sp.Add):
        return best
    if used or depth >= _MAX_DEPTH:  # matched term by term: the form a textbook prints
        return best if used else e
    cost = budget.operations(e)
    chosen: tuple[int, sp.Expr] | None = None
    for name, value in values.items():
        # the name as a factor (B*I) or as a divisor (3*B/Q), times an Add-free rest in
        # the other names (the same name again would only undo this one)
        others = {n: v for n, v in values.items() if n != name}
        for power in (1, -1):
            r = _rewrite(_cancelled(c / value**power), others, depth + 1)
            candidate = name**power * r   # F * (S/F) is no rewrite: the name must remain
            if r.has(sp.Add) or name not in candidate.free_symbols:
                continue
            ops = budget.operations(candidate)
            if ops <= cost and (chosen is None or ops < chosen[0]):  # a tie goes to the name
                chosen = (ops, candidate)
    if chosen is not None:
        return chosen[1]
    return best if used else e


# The factor search meets one quotient along several paths (F/(Q*W) and F/(W*Q)), and a
# document rewrites one formula in several sets of names: each cancel is done once.
# SymPy expressions are immutable and cancel is a function of its argument alone.

@lru_cache(maxsize=4096)
def _combined(e: sp.Expr) -> sp.Expr:
    """``cancel(together(e))``, remembered."""
    return sp.cancel(sp.together(e))


@lru_cache(maxsize=4096)
def _cancelled(e: sp.Expr) -> sp.Expr:
    """``cancel(e)``, remembered."""
    return sp.cancel(e)


def _poly_dict(p: sp.Expr, gens: tuple[sp.Symbol, ...]) -> _PolyDict | None:
    """``p`` as monomial exponents -> coefficient, or None where it is no polynomial."""
    if not p.is_polynomial(*gens):
        return None
    poly = sp.Poly(sp.expand(p), *gens)
    out: _PolyDict = {}
    for m, c in poly.as_dict().items():
        if not c.is_Rational:
            return None
        out[tuple(m)] = Fraction(int(c.p), int(c.q))
    return out


def _poly_rewrite(p: sp.Expr, gens: tuple[sp.Symbol, ...],
                  polys: list[tuple[sp.Symbol, _PolyDict]]) -> sp.Expr:
    d = _poly_dict(p, gens)
    return p if d is None else _match(d, gens, polys)


def _match(p: _PolyDict, gens: tuple[sp.Symbol, ...],
           polys: list[tuple[sp.Symbol, _PolyDict]]) -> sp.Expr:
    """Greedy term matching: take ``k * value`` out of ``p`` while every term of it is a
    term of ``p`` (no term is created, so each step removes at least one); the
    multipliers, of lower degree than ``p``, are matched in turn."""
    rest = dict(p)
    out: list[sp.Expr] = []
    for name, value in polys:
        taken: _PolyDict = {}
        while (k := _multiplier(rest, value)) is not None:
            exps, coeff = k
            for m, c in value.items():
                key = tuple(a + b for a, b in zip(exps, m))
                rest[key] -= coeff * c
                if rest[key] == 0:
                    del rest[key]
            taken[exps] = taken.get(exps, Fraction(0)) + coeff
        taken = {m: c for m, c in taken.items() if c != 0}
        if taken:
            out.append(name * _match(taken, gens, polys))
    return sp.Add(*out, _expr(rest, gens))


def _multiplier(p: _PolyDict, value: _PolyDict) -> tuple[_Monomial, Fraction] | None:
    """The monomial k with k*value inside p's terms that removes the most terms of p."""
    best: tuple[int, _Monomial, Fraction] | None = None
    for t, tc in p.items():
        for u, uc in value.items():
            exps = tuple(a - b for a, b in zip(t, u))
            if min(exps) < 0:
                continue
            coeff = tc / uc
            removed = 0
            for m, c in value.items():
                key = tuple(a + b for a, b in zip(exps, m))
                if key not in p:
                    break
                removed += p[key] == coeff * c
            else:
                if best is None or removed > best[0]:
                    best = (removed, exps, coeff)
    return None if best is None else (best[1], best[2])


def _expr(p: _PolyDict, gens: tuple[sp.Symbol, ...]) -> sp.Expr:
    return sp.Add(*(sp.Rational(c.numerator, c.denominator)
                    * sp.Mul(*(g**e for g, e in zip(gens, m))) for m, c in p.items()))


@dataclass(frozen=True)
class Usage:
    """Which declared names a formula uses once rewritten, and which it does not."""

    used: tuple[sp.Symbol, ...]
    unused: tuple[sp.Symbol, ...]


def usage(expr: sp.Expr, names: Names, where: str = "rewrite") -> Usage:
    """The declared names that :func:`rewrite` puts into ``expr``, and the others.

    >>> from symroof.symbols import D, L, S, P, T
    >>> usage(24*D**2*L + 4*D*L*S, {P: 12*L*D**2, T: L*S**3})
    Usage(used=(P,), unused=(T,))
    """
    found = rewrite(expr, names, where=where).free_symbols
    return Usage(tuple(n for n in names if n in found), tuple(n for n in names if n not in found))


def check_used(expr: sp.Expr, names: Names, where: str) -> sp.Expr:
    """``expr`` rewritten in ``names``; a :class:`SymroofError` starting with ``where``
    (a claim file's path, line and field) if a declared name does not appear in it.

    >>> from symroof.symbols import D, L, P, T
    >>> check_used(6*D, {T: L*D}, "c.toml:3: formula")
    Traceback (most recent call last):
    ...
    symroof.errors.SymroofError: c.toml:3: formula: declared T = D*L does not appear in 6*D
    """
    result = rewrite(expr, names, where=where)
    missing = [n for n in names if n not in result.free_symbols]
    if missing:
        said = ", ".join(f"{n} = {names[n]}" for n in missing)
        verb = "does" if len(missing) == 1 else "do"
        raise SymroofError(f"{where}: declared {said} {verb} not appear in {expr}")
    return result


# -- display order ------------------------------------------------------------------------

def _symbol_key(names: Sequence[sp.Symbol], order: Sequence[sp.Symbol]) -> _Key:
    canonical = list(CANONICAL.values())
    rank = {s: i for i, s in enumerate([*names, *order])}
    for i, s in enumerate(canonical):
        rank.setdefault(s, len(names) + len(order) + i)

    def key(s: sp.Basic) -> tuple[int, str]:
        return (rank.get(s, 10**6), str(s))
    return key


def ordered(expr: sp.Expr, names: Iterable[sp.Symbol] = (),
            order: Sequence[sp.Symbol] = ()) -> sp.Expr:
    """``expr`` as an unevaluated expression in textbook order: terms with names first,
    then by degree; in a product the number, the names, then the symbols in ``order``
    (then the canonical order). Equal to ``expr``; print it with ``order='none'``.

    >>> from symroof.symbols import D, L, S, P
    >>> sp.StrPrinter({"order": "none"}).doprint(ordered(4*D*L*S + 2*P, [P], (L, S, D)))
    '2*P + 4*L*S*D'
    """
    ns = list(names)
    key = _symbol_key(ns, order)
    if isinstance(expr, sp.Expr) and expr.is_Mul and not expr.free_symbols & set(ns) and \
            sp.fraction(expr)[1].free_symbols:
        expr = display(expr)   # a ratio with no name to put first: (12*D/S + 2)/b
    return _ordered(expr, set(ns), key)


def _ordered(e: sp.Expr, names: set[sp.Symbol], key: _Key) -> sp.Expr:
    if e.is_Atom:
        return e
    if isinstance(e, sp.Add):
        def term_key(t: sp.Expr) -> tuple[int, int, int, list[tuple[int, str]]]:
            num, den = sp.fraction(t)
            degree = sum(int(x) for x in (num.as_powers_dict().values()) if x.is_Integer)
            syms = sorted(t.free_symbols, key=key)
            return (0 if t.free_symbols & names else 1, 1 if t.is_number else 0, -degree,
                    [key(s) for s in syms])
        terms = sorted(e.args, key=term_key)
        return sp.Add(*(_ordered(t, names, key) for t in terms), evaluate=False)
    if isinstance(e, sp.Mul):
        coeff, rest = e.as_coeff_Mul()
        num, den = sp.fraction(rest)
        top = _factors(num, names, key)
        bottom = _factors(den, names, key)
        if coeff.is_Rational and coeff.q != 1:
            bottom = [sp.Integer(coeff.q), *bottom]
            coeff = sp.Integer(coeff.p)
        lead = [] if coeff == 1 else [coeff]
        if coeff == -1:
            lead = [sp.Integer(-1)]
        numerator = [*lead, *top] or [sp.Integer(1)]
        if not bottom:
            return numerator[0] if len(numerator) == 1 else sp.Mul(*numerator, evaluate=False)
        # one reciprocal per factor: a reciprocal of a product prints as /((3*b))
        return sp.Mul(*numerator, *(sp.Pow(f, -1, evaluate=False) for f in bottom),
                      evaluate=False)
    if isinstance(e, sp.Pow):
        return sp.Pow(_ordered(e.base, names, key), e.exp, evaluate=False)
    return e.func(*(_ordered(a, names, key) if isinstance(a, sp.Expr) else a for a in e.args))


def _factors(e: sp.Expr, names: set[sp.Symbol], key: _Key) -> list[sp.Expr]:
    parts = list(sp.Mul.make_args(e))
    if parts == [sp.Integer(1)]:
        return []
    numbers = [p for p in parts if p.is_number]

    def factor_key(p: sp.Expr) -> tuple[int, tuple[int, str]]:
        base = p.base if isinstance(p, sp.Pow) else p
        if isinstance(base, sp.Symbol):
            return (0, key(base))
        return (1, (0, str(base)))
    rest = sorted((p for p in parts if not p.is_number), key=factor_key)
    return [*numbers, *(_ordered(p, names, key) for p in rest)]


def text(expr: sp.Expr, names: Iterable[sp.Symbol] = (), order: Sequence[sp.Symbol] = ()) -> str:
    """``expr`` printed in textbook order (see :func:`ordered`)."""
    return str(sp.StrPrinter({"order": "none"}).doprint(ordered(expr, names, order)))


def latex(expr: sp.Expr, names: Iterable[sp.Symbol] = (), order: Sequence[sp.Symbol] = ()) -> str:
    """``expr`` as LaTeX in textbook order (see :func:`ordered`).

    >>> from symroof.symbols import D, L, S, P
    >>> latex(4*D*L*S + 2*P, [P], (L, S, D))
    '2 P + 4 L S D'
    """
    return str(LatexPrinter({"order": "none"}).doprint(ordered(expr, names, order)))


# -- the chain a reader checks --------------------------------------------------------------

@dataclass(frozen=True)
class Step:
    """One line of a derivation table: what it shows and the expression."""

    label: str
    expr: sp.Expr


def substitution_steps(expr_in_names: sp.Expr, names: Names,
                       values: Mapping[sp.Symbol, object]) -> tuple[Step, ...]:
    """The formula in names, with the names' values written out, the numbers put in
    (unevaluated), and the exact result (a Rational where every symbol has a value).

    >>> from symroof.symbols import D, L, S, P
    >>> steps = substitution_steps(2*P + 4*L*S*D, {P: 12*L*D**2}, {L: 2, S: 8, D: 4})
    >>> [(s.label, s.expr) for s in steps]
    [('in names', 4*D*L*S + 2*P), ('names written out', 24*D**2*L + 4*D*L*S), ('numbers', 4*4*2*8 + 2*384), ('result', 1024)]
    """
    full = expand_names(names, "substitution_steps")
    numbers: dict[sp.Symbol, sp.Expr] = {}
    for s, v in values.items():
        n = sp.nsimplify(v, rational=True) if isinstance(v, float) else _exact(v)
        if not isinstance(n, sp.Basic):
            raise SymroofError(f"substitution_steps: {s} = {v!r} is not a number")
        if not n.is_number:
            raise SymroofError(f"substitution_steps: {s} = {v!r} is not a number")
        numbers[s] = n
    named_numbers = {n: sp.expand(v.xreplace(numbers)) for n, v in full.items()}
    written = sp.expand(expr_in_names.xreplace(full))
    with sp.evaluate(False):
        plugged = expr_in_names.xreplace({**named_numbers, **numbers})
    result = sp.cancel(expr_in_names.xreplace(full).xreplace(numbers))
    return (Step("in names", expr_in_names), Step("names written out", written),
            Step("numbers", plugged), Step("result", result))

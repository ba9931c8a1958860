"""The limits on the work one request may cause, and the checks made before the work
starts: rows, expression size and degree, digits of a number (:mod:`symroof.budget`
describes them all; :mod:`symroof.budget.guard` holds the wall-clock and memory guard).
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import math
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, fields, replace
from typing import Any

import mpmath
import sympy as sp

from symroof.errors import SymroofError, suggest
from symroof.files import MAX_FILE_BYTES

__all__ = [
    "Budget", "BudgetError", "DEFAULT", "current", "limits", "parse_limits", "check_rows",
    "check_expr", "check_number", "operations", "degree_bound", "expansion_bound", "light",
    "substitute", "LIGHT_TERMS", "LIGHT_DEGREE", "MAX_ROWS", "MAX_OPS", "MAX_DEGREE",
    "MAX_SECONDS", "MAX_MEMORY_MIB", "MAX_DIGITS", "MAX_FILE_BYTES", "MAX_LENGTH", "MAX_DEPTH",
    "MAX_EXPONENT", "MAX_BITS", "hint",
]

# -- the limits -------------------------------------------------------------------------
# Adjustable per request (Budget fields; --budget NAME=VALUE):
MAX_ROWS = 10_000        #: rows one request evaluates (the product of the --set list lengths)
MAX_OPS = 2_000          #: operations in an expression given to a solver, limit or --set value
MAX_DEGREE = 16          #: polynomial degree in any one symbol (numerator or denominator)
MAX_SECONDS = 10.0       #: wall-clock seconds of one solver or limit call
MAX_MEMORY_MIB = 2048    #: memory one solver or limit call may add, in MiB
MAX_DIGITS = 4000        #: decimal digits of any number in a result (Python prints <= 4300)
# MAX_FILE_BYTES (from symroof.files): the largest user file read, in bytes
# Fixed bounds of the expression parser (symroof.parse), on the text itself:
MAX_LENGTH = 2000        #: longest accepted expression text, in characters
MAX_DEPTH = 64           #: deepest nesting of calls, unary operators and right operands
MAX_EXPONENT = 64        #: bound on the value of an exponent (and on a numeric one's denominator)
MAX_BITS = 1024          #: bound on the bit length of every numerator and denominator typed

# Not limits: below both, SymPy's rational algebra is quick enough to run unguarded.
LIGHT_TERMS = 400        #: expanded terms of a numerator or denominator
LIGHT_DEGREE = 4         #: degree in any one symbol

_LOG10_2 = math.log10(2)


class BudgetError(SymroofError):
    """A request over one of the limits; ``limit`` names it (``"rows"``, ``"seconds"``...).

    >>> BudgetError("--set: too many rows", "rows").limit
    'rows'
    """

    __module__ = "symroof.budget"  # its public path, as printed in a traceback

    def __init__(self, message: str, limit: str = "") -> None:
        super().__init__(message, limit)
        self.limit = limit

    def __str__(self) -> str:
        return str(self.args[0])


def hint(name: str) -> str:
    """How to raise the limit ``name``, as a refusal ends."""
    return f" (raise it with --budget {name}=N)"


@dataclass(frozen=True)
class Budget:
    """The limits of one request; ``None`` for ``seconds`` or ``memory_mib`` turns that
    guard off (SymPy then runs in this process, unbounded)."""

    rows: int = MAX_ROWS
    ops: int = MAX_OPS
    degree: int = MAX_DEGREE
    seconds: float | None = MAX_SECONDS
    memory_mib: int | None = MAX_MEMORY_MIB
    digits: int = MAX_DIGITS
    file_bytes: int = MAX_FILE_BYTES

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            optional = f.name in ("seconds", "memory_mib")
            if value is None and optional:
                continue
            plain = isinstance(value, (int, float)) and not isinstance(value, bool)
            if f.name == "seconds":
                ok, expected = plain and math.isfinite(value) and value > 0, "a positive number"
            else:
                ok, expected = plain and isinstance(value, int) and value > 0, "a positive integer"
            if not ok:
                raise SymroofError(f"budget {f.name}: expected {expected}"
                                   f"{' or None' if optional else ''}, got {value!r}")
        python_limit = sys.get_int_max_str_digits()
        if python_limit and self.digits > python_limit:
            raise SymroofError(f"budget digits: at most {python_limit} (Python's limit for "
                               f"printing an integer), got {self.digits}")


#: The limits a request gets unless it asks for others.
DEFAULT = Budget()
_CURRENT: contextvars.ContextVar[Budget] = contextvars.ContextVar("symroof_budget",
                                                                  default=DEFAULT)


def current() -> Budget:
    """The limits in force (``DEFAULT`` outside :func:`limits`)."""
    return _CURRENT.get()


@contextlib.contextmanager
def limits(**changes: Any) -> Iterator[Budget]:
    """Run a block under changed limits (unknown names and bad values are SymroofErrors).

    >>> with limits(rows=100_000, seconds=None) as b:
    ...     (b.rows, b.seconds, current().rows)
    (100000, None, 100000)
    """
    known = [f.name for f in fields(Budget)]
    for name in changes:
        if name not in known:
            raise SymroofError(f"budget: unknown limit {name!r}; expected one of "
                               f"{', '.join(known)}{suggest(str(name), known)}")
    token = _CURRENT.set(replace(current(), **changes))
    try:
        yield _CURRENT.get()
    finally:
        _CURRENT.reset(token)


def parse_limits(items: Iterable[str], what: str = "--budget") -> dict[str, Any]:
    """``NAME=VALUE`` strings as :func:`limits` keywords (``off`` turns a guard off).

    >>> parse_limits(["rows=1e6", "seconds=2.5", "memory_mib=off"])
    {'rows': 1000000, 'seconds': 2.5, 'memory_mib': None}
    """
    known = {f.name: f for f in fields(Budget)}
    out: dict[str, Any] = {}
    for item in items:
        name, eq, text = str(item).partition("=")
        name, text = name.strip(), text.strip()
        if not eq or name not in known:
            raise SymroofError(f"{what} {item!r}: expected NAME=VALUE with NAME one of "
                               f"{', '.join(known)}{suggest(name, known)}")
        if text.lower() in ("off", "none") and name in ("seconds", "memory_mib"):
            out[name] = None
            continue
        try:
            number = float(text.replace("_", "")) if len(text) <= 30 else math.nan
        except ValueError:
            number = math.nan
        if not math.isfinite(number) or number <= 0 or (name != "seconds" and number != int(number)):
            kind = "a positive number of seconds or off" if name == "seconds" else (
                "a positive integer or off" if name == "memory_mib" else "a positive integer")
            raise SymroofError(f"{what} {name}: expected {kind}, got {text!r}")
        out[name] = number if name == "seconds" else int(number)
    Budget(**{**{f: getattr(current(), f) for f in known}, **out})  # validate together
    return out


# -- checks before work ------------------------------------------------------------------


def check_rows(lengths: Sequence[tuple[str, int]], what: str) -> int:
    """The number of rows of a product of value lists, refused above the rows limit."""
    total = math.prod(n for _, n in lengths)
    limit = current().rows
    if total > limit:
        parts = " x ".join(f"{name} {n}" for name, n in lengths)
        raise BudgetError(f"{what}: {total:,} rows ({parts}), more than the limit of "
                          f"{limit:,} rows{hint('rows')}", "rows")
    return total


def operations(expr: sp.Basic, cap: int | None = None) -> int:
    """Operations in ``expr`` (a sum of n terms is n - 1 additions), counting stops past cap.

    >>> from symroof.symbols import M, N, K
    >>> operations(2*M*N*K + M*K)
    5
    """
    count, stack = 0, [expr]
    while stack:
        e = stack.pop()
        args = e.args if isinstance(e, sp.Basic) else ()
        if not args or e.is_Atom:
            continue
        count += len(args) - 1 if isinstance(e, (sp.Add, sp.Mul)) else 1
        if cap is not None and count > cap:
            return count
        stack.extend(args)
    return count


def degree_bound(expr: sp.Basic, symbol: sp.Symbol) -> int:
    """An upper bound on the degree in ``symbol`` of the numerator and the denominator of
    ``expr`` over a common denominator (what ``cancel`` would expand).

    >>> from symroof.symbols import B, S
    >>> degree_bound((B*S + 1)**3 / (B + 2), B), degree_bound(1/B + 1/(B + 1), B)
    (3, 2)
    """
    memo: dict[sp.Basic, tuple[int, int]] = {}

    def deg(e: sp.Basic) -> tuple[int, int]:
        if e in memo:
            return memo[e]
        if e == symbol:
            r = (1, 0)
        elif not isinstance(e, sp.Basic) or not e.args or symbol not in e.free_symbols:
            r = (0, 0)
        elif isinstance(e, sp.Add):
            parts = [deg(a) for a in e.args]
            den = sum(d for _, d in parts)
            r = (max(n + den - d for n, d in parts), den)
        elif isinstance(e, sp.Mul):
            parts = [deg(a) for a in e.args]
            r = (sum(n for n, _ in parts), sum(d for _, d in parts))
        elif isinstance(e, sp.Pow) and e.exp.is_Rational:
            n, d = deg(e.base)
            k = math.ceil(abs(e.exp))
            r = (k * n, k * d) if e.exp > 0 else (k * d, k * n)
        else:  # a function or a symbolic power: its arguments are not expanded into it
            r = (max(max(deg(a)) for a in e.args), 0)
        memo[e] = r
        return r

    try:
        return max(deg(expr))
    except RecursionError:
        raise BudgetError("expression is nested too deeply to measure", "ops") from None


def expansion_bound(expr: sp.Basic, cap: int = 10**6) -> int:
    """An upper bound on the terms of the numerator and of the denominator of ``expr``
    expanded over a common denominator (what ``cancel`` works on), or ``cap + 1`` past
    cap; a function application or a symbolic power counts as one term.

    >>> from symroof.symbols import B, S, D
    >>> expansion_bound((B + S)**2 * (B + D)), expansion_bound(1/B + 1/S)
    (6, 2)
    """
    over = cap + 1
    memo: dict[sp.Basic, tuple[int, int]] = {}

    def bounded(x: int) -> int:
        return x if x <= over else over

    def terms(e: sp.Basic) -> tuple[int, int]:
        if e in memo:
            return memo[e]
        if not isinstance(e, sp.Basic) or not e.args or not e.free_symbols:
            r = (1, 1)
        elif isinstance(e, sp.Add):
            parts = [terms(a) for a in e.args]
            den = bounded(math.prod(d for _, d in parts))
            r = (bounded(sum(bounded(n * den // d) for n, d in parts)), den)
        elif isinstance(e, sp.Mul):
            parts = [terms(a) for a in e.args]
            r = (bounded(math.prod(n for n, _ in parts)), bounded(math.prod(d for _, d in parts)))
        elif isinstance(e, sp.Pow) and e.exp.is_Integer:
            n, d = terms(e.base)
            k = abs(int(e.exp))
            grow = (lambda t: bounded(math.comb(t + k - 1, k)) if t < over and k < 10**4
                    else over)
            r = (grow(n), grow(d)) if k == int(e.exp) else (grow(d), grow(n))
        else:  # a generator for cancel: a function, a symbolic or fractional power
            r = (1, 1)
        memo[e] = r
        return r

    try:
        return max(terms(expr))
    except RecursionError:
        return over


def light(expr: sp.Basic) -> bool:
    """Whether ``expr`` is small enough that rational algebra on it is quick: within
    :data:`LIGHT_TERMS` expanded terms and :data:`LIGHT_DEGREE` in every symbol. A light
    call runs without the fork of :func:`guarded` (tests/engine/test_budget.py checks
    that light inputs never fork and heavy ones do)."""
    if expansion_bound(expr, LIGHT_TERMS) > LIGHT_TERMS:
        return False
    return all(degree_bound(expr, s) <= LIGHT_DEGREE for s in expr.free_symbols)


def check_expr(expr: sp.Basic, what: str, symbols: Iterable[sp.Symbol] | None = None) -> None:
    """Refuse ``expr`` if it has more operations, or a higher degree in one of ``symbols``
    (default: all its free symbols), than the limits allow."""
    b = current()
    ops = operations(expr, b.ops)
    if ops > b.ops:
        raise BudgetError(f"{what}: more than {b.ops:,} operations, the limit{hint('ops')}",
                          "ops")
    chosen = expr.free_symbols if symbols is None else set(symbols)
    for s in sorted(chosen, key=lambda x: x.name):
        d = degree_bound(expr, s)
        if d > b.degree:
            raise BudgetError(f"{what}: degree {d} in {s}, more than the limit of "
                              f"{b.degree}{hint('degree')}", "degree")


def _digits(r: sp.Rational) -> int:
    return int(max(abs(int(r.p)).bit_length(), int(r.q).bit_length()) * _LOG10_2) + 1


def check_number(expr: sp.Basic, what: str) -> sp.Basic:
    """``expr`` if none of its rational numbers has more digits than the limit."""
    limit = current().digits
    for r in expr.atoms(sp.Rational):
        if _digits(r) > limit:
            raise BudgetError(f"{what}: a number of about {_digits(r):,} digits, more than the "
                              f"limit of {limit:,}{hint('digits')}", "digits")
    return expr


def _log10(value: sp.Expr) -> float | None:
    """log10 |value| of a number (exact integers of any size); None when unknown."""
    if value.is_Rational:
        if value == 0:
            return -math.inf
        return math.log10(abs(int(value.p))) - math.log10(int(value.q))
    try:
        approx = sp.Abs(value).evalf(15, maxn=50)
    except (ValueError, TypeError, ArithmeticError):
        return None
    if not approx.is_Float:
        return None
    if approx == 0:
        return -math.inf
    return float(mpmath.log10(mpmath.mpf(approx._mpf_)))


def _power_growth(expr: sp.Basic) -> float:
    """The largest product of numeric exponents along a path of ``expr`` (inf if an
    exponent is symbolic): how much a value's digits can grow inside it."""
    best, stack = 1.0, [(expr, 1.0)]
    while stack:
        e, grow = stack.pop()
        if isinstance(e, sp.Pow):
            if not e.exp.is_Number:
                return math.inf
            grow *= max(abs(float(e.exp)), 1.0)
        elif isinstance(e, sp.exp):
            return math.inf
        best = max(best, grow)
        stack.extend((a, grow) for a in e.args)
    return best


def substitute(expr: sp.Expr, values: Mapping[sp.Basic, sp.Basic],
               what: str | Callable[[], str]) -> sp.Expr:
    """``expr.xreplace(values)``, refused before it would build a number of more digits
    than the limit (``2**B`` at ``B = 2**1000`` is never computed). ``what`` (or a
    function that makes it, called only for an error) names the expression.

    >>> from symroof.symbols import B, S
    >>> substitute(2**B * S, {B: 10, S: 3}, "F")
    3072
    >>> substitute(2**B, {B: 10**6}, "F")
    Traceback (most recent call last):
    ...
    symroof.budget.BudgetError: F: 2**1000000 would have about 301,030 digits, more than the limit of 4,000 (raise it with --budget digits=N)
    """
    limit = current().digits
    values = {k: sp.Integer(v) if isinstance(v, int) else v for k, v in values.items()}
    try:
        return _substitute(expr, values, limit)
    except _TooBig as big:
        name = what if isinstance(what, str) else what()
        raise BudgetError(f"{name}: {big.args[0]}{hint('digits')}", "digits") from None


class _TooBig(Exception):
    """A number past the digits limit (the caller names the expression)."""


def _check_digits(expr: sp.Basic, limit: int) -> sp.Basic:
    for r in expr.atoms(sp.Rational):
        if _digits(r) > limit:
            raise _TooBig(f"a number of about {_digits(r):,} digits, more than the limit of "
                          f"{limit:,}")
    return expr


@functools.lru_cache(maxsize=4096)
def _growth(expr: sp.Basic) -> float:
    return _power_growth(expr)


def _substitute(expr: sp.Expr, values: dict[sp.Basic, sp.Basic], limit: int) -> sp.Expr:
    for v in values.values():
        _check_digits(v, limit)
    if _growth(expr) <= MAX_EXPONENT:
        return _check_digits(expr.xreplace(values), limit)

    def build(e: sp.Basic) -> sp.Basic:
        if not e.args:
            return values.get(e, e)
        args = [build(a) for a in e.args]
        if isinstance(e, (sp.Pow, sp.exp)):
            base, exponent = (args[0], args[1]) if isinstance(e, sp.Pow) else (sp.E, args[0])
            if base.is_number and exponent.is_number and base not in (0, 1, -1):
                log_base, log_exp = _log10(base), _log10(exponent)
                if log_exp is not None and log_exp > 9:  # exponent past 10**9: surely too big
                    size = math.inf
                elif log_base is not None and log_exp is not None:
                    size = abs(float(exponent.evalf(15)) * log_base)
                else:
                    size = 0.0
                if size > limit:
                    shown = f"{base}**{exponent}" if isinstance(e, sp.Pow) else f"exp({exponent})"
                    about = f"about {size:,.0f}" if math.isfinite(size) else "more than 10**9"
                    raise _TooBig(f"{shown[:60]} would have {about} digits, more than the "
                                  f"limit of {limit:,}")
        return e.func(*args) if any(x is not y for x, y in zip(args, e.args)) else e

    try:
        return _check_digits(build(expr), limit)
    except RecursionError:
        raise _TooBig("the expression is nested too deeply to substitute into") from None



"""Limits on the work one request may cause: every one of them here, adjustable on purpose.

A small input can ask for a lot: six ``--set`` lists of 999 values are 10**18 rows,
``(F + Q)**64`` expands into millions of terms, ``exp(exp(exp(64)))`` has more digits than
there are atoms. Each limit below is checked before the work starts (rows, expression
size and degree, digits of a number), and SymPy's solvers and limits run under a
wall-clock and memory guard that ends the computation and names the step that was too
large. A refusal is a :class:`BudgetError` (a :class:`~symroof.errors.SymroofError`)
naming the limit and how to raise it: ``--budget NAME=VALUE`` on the command line,
``with symroof.budget.limits(NAME=VALUE):`` in Python.

>>> current().rows
10000
>>> with limits(rows=50):
...     check_rows([("M", 10), ("N", 10)], "--set")
Traceback (most recent call last):
...
symroof.budget.BudgetError: --set: 100 rows (M 10 x N 10), more than the limit of 50 rows (raise it with --budget rows=N)
>>> from symroof.symbols import B
>>> check_expr((B + 1)**64, "limit")
Traceback (most recent call last):
...
symroof.budget.BudgetError: limit: degree 64 in B, more than the limit of 16 (raise it with --budget degree=N)
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import math
import os
import pickle
import select
import signal
import struct
import sys
import threading
import time
import traceback
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, fields, replace
from typing import Any, TypeVar

import mpmath
import sympy as sp

from symroof.errors import SymroofError, suggest
from symroof.files import MAX_FILE_BYTES

try:
    import resource  # POSIX only: the guard's memory limit
except ImportError:  # pragma: no cover - Windows
    resource = None  # type: ignore[assignment]

__all__ = [
    "Budget", "BudgetError", "DEFAULT", "current", "limits", "parse_limits", "check_rows",
    "check_expr", "check_number", "operations", "degree_bound", "expansion_bound", "light",
    "substitute", "guarded", "note", "LIGHT_TERMS", "LIGHT_DEGREE", "MAX_ROWS", "MAX_OPS", "MAX_DEGREE", "MAX_SECONDS", "MAX_MEMORY_MIB",
    "MAX_DIGITS", "MAX_FILE_BYTES", "MAX_LENGTH", "MAX_DEPTH", "MAX_EXPONENT", "MAX_BITS",
]

T = TypeVar("T")

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

    def __init__(self, message: str, limit: str = "") -> None:
        super().__init__(message, limit)
        self.limit = limit

    def __str__(self) -> str:
        return str(self.args[0])


def _hint(name: str) -> str:
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
                          f"{limit:,} rows{_hint('rows')}", "rows")
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
        raise BudgetError(f"{what}: more than {b.ops:,} operations, the limit{_hint('ops')}",
                          "ops")
    chosen = expr.free_symbols if symbols is None else set(symbols)
    for s in sorted(chosen, key=lambda x: x.name):
        d = degree_bound(expr, s)
        if d > b.degree:
            raise BudgetError(f"{what}: degree {d} in {s}, more than the limit of "
                              f"{b.degree}{_hint('degree')}", "degree")


def _digits(r: sp.Rational) -> int:
    return int(max(abs(int(r.p)).bit_length(), int(r.q).bit_length()) * _LOG10_2) + 1


def check_number(expr: sp.Basic, what: str) -> sp.Basic:
    """``expr`` if none of its rational numbers has more digits than the limit."""
    limit = current().digits
    for r in expr.atoms(sp.Rational):
        if _digits(r) > limit:
            raise BudgetError(f"{what}: a number of about {_digits(r):,} digits, more than the "
                              f"limit of {limit:,}{_hint('digits')}", "digits")
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
        raise BudgetError(f"{name}: {big.args[0]}{_hint('digits')}", "digits") from None


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


# -- the wall-clock and memory guard -----------------------------------------------------
# SymPy cannot be interrupted from a thread, and a signal handler never runs inside one
# long C-level integer operation, so a guarded call runs in a forked child: the parent
# waits on a pipe until the deadline and kills the child if it is late. A fork costs
# about 10 ms (measured in this project: ~6 ms on top of a 15 ms decode limit); where
# fork is unavailable or unsafe (no os.fork, macOS, other threads running) the call runs
# in this process with the size and degree checks as its only bound.

_CHILD_PIPE: int | None = None   # set in a guarded child: where its notes and result go
_HEADER = struct.Struct("!cI")

#: The clock the guard's deadline is read from (seconds, monotonic): ``_collect`` calls
#: it once to set the deadline and again before each wait. The one injection point for
#: tests, which replace it (``monkeypatch.setattr(budget, "clock", fake)``) so that a
#: test of the seconds limit never depends on how fast the machine is.
clock: Callable[[], float] = time.monotonic


def _send(fd: int, kind: bytes, payload: bytes) -> None:
    data = _HEADER.pack(kind, len(payload)) + payload
    while data:
        data = data[os.write(fd, data):]


def note(step: str) -> None:
    """Name the step a guarded computation is in, so that a timeout can say which."""
    if _CHILD_PIPE is not None:
        _send(_CHILD_PIPE, b"S", step[:300].encode("utf-8", "replace"))


def _forkable() -> bool:
    return (hasattr(os, "fork") and sys.platform != "darwin"
            and threading.active_count() == 1)


def guarded(step: str, fn: Callable[..., T], /, *args: Any, unguarded: bool = False,
            **kwargs: Any) -> T:
    """``fn(*args, **kwargs)`` within the seconds and memory limits; ``step`` names the
    call in the BudgetError that ends a computation past them. ``unguarded`` (a light
    input, see :func:`light`) runs it here, without the fork.

    >>> guarded("a sum", sum, [1, 2, 3])
    6
    """
    b = current()
    if unguarded or _CHILD_PIPE is not None or (b.seconds is None and b.memory_mib is None) \
            or not _forkable():
        return fn(*args, **kwargs)
    read_end, write_end = os.pipe()
    with warnings.catch_warnings():  # Python 3.12 warns about fork with threads; none run
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:  # the child: compute, send, and leave without running any cleanup
        code = 0
        try:
            os.close(read_end)
            _child(write_end, b, fn, args, kwargs)
        except BaseException:  # noqa: BLE001 - nothing may escape into the parent's stack
            code = 70
        finally:
            os._exit(code)
    os.close(write_end)
    try:
        return _collect(step, b, pid, read_end)
    finally:
        os.close(read_end)
        _reap(pid, kill=True)


def _child(fd: int, b: Budget, fn: Callable[..., Any], args: tuple[Any, ...],
           kwargs: dict[str, Any]) -> None:
    global _CHILD_PIPE
    _CHILD_PIPE = fd
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    out_of_memory = pickle.dumps(("memory", None))
    if b.memory_mib is not None and resource is not None:
        with contextlib.suppress(OSError, ValueError):
            soft, hard = resource.getrlimit(resource.RLIMIT_AS)
            with open("/proc/self/statm", "rb") as fh:
                used = int(fh.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
            want = used + b.memory_mib * 2**20
            if hard == resource.RLIM_INFINITY or want < hard:
                resource.setrlimit(resource.RLIMIT_AS, (want, hard))
    try:
        payload = pickle.dumps(("ok", fn(*args, **kwargs)))
    except MemoryError:
        payload = out_of_memory
    except BaseException as exc:  # noqa: BLE001 - the parent re-raises it
        tb = "".join(traceback.format_exception(exc))
        try:
            payload = pickle.dumps(("error", exc, tb))
        except Exception:  # noqa: BLE001 - an exception that does not pickle
            payload = pickle.dumps(("error", RuntimeError(f"{type(exc).__name__}: {exc}"), tb))
    _send(fd, b"R", payload)


def _collect(step: str, b: Budget, pid: int, fd: int) -> Any:
    deadline = None if b.seconds is None else clock() + b.seconds
    buf, last = b"", ""
    while True:
        left = None if deadline is None else deadline - clock()
        if left is not None and left <= 0:
            os.kill(pid, signal.SIGKILL)
            where = f" while {last}" if last else ""
            raise BudgetError(f"{step}: still running after {b.seconds:g} s{where}; stopped "
                              f"at the seconds limit{_hint('seconds')}", "seconds")
        ready, _, _ = select.select([fd], [], [], left)
        if not ready:
            continue
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            break
        buf += chunk
        while len(buf) >= _HEADER.size:
            kind, size = _HEADER.unpack_from(buf)
            if len(buf) < _HEADER.size + size:
                break
            body, buf = buf[_HEADER.size:_HEADER.size + size], buf[_HEADER.size + size:]
            if kind == b"S":
                last = body.decode("utf-8", "replace")
            else:
                return _result(step, b, pickle.loads(body))
    status = _reap(pid, kill=False)
    where = f" while {last}" if last else ""
    raise BudgetError(f"{step}: the computation ended without a result{where} ({status}; "
                      f"out of memory?){_hint('memory_mib')}", "memory_mib")


def _result(step: str, b: Budget, message: tuple[Any, ...]) -> Any:
    kind = message[0]
    if kind == "ok":
        return message[1]
    if kind == "memory":
        raise BudgetError(f"{step}: needed more than {b.memory_mib:,} MiB, the memory limit"
                          f"{_hint('memory_mib')}", "memory_mib")
    exc, tb = message[1], message[2]
    if not isinstance(exc, SymroofError):
        exc.add_note(f"in symroof's guarded child process:\n{tb}")
    raise exc


def _reap(pid: int, kill: bool) -> str:
    """Wait for the child (killing it first if asked); how it ended, in words."""
    try:
        if kill:
            os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
    except (ChildProcessError, ProcessLookupError):
        return "already ended"
    if os.WIFSIGNALED(status):
        return f"killed by signal {os.WTERMSIG(status)}"
    return f"exit status {os.WEXITSTATUS(status)}"

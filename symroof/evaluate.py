"""Numbers from formulas: exact substitution and the roofline bound on a real chip.

>>> from symroof.symbols import n
>>> from symroof.workloads import gemm
>>> evaluate(gemm(n, n, n).intensity, {n: 8192, "b": 2})
8192/3
"""

from __future__ import annotations

import itertools
import numbers
import threading
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import sympy as sp

from symroof import hardware, units
from symroof.analysis import Analysis
from symroof.budget import check_expr, check_rows, substitute
from symroof.device import choose_link, entry_sequences
from symroof.memory.fit import DeviceMemory, device_memory, fraction
from symroof.errors import SymroofError, shown
from symroof.hardware import HardwareSpec
from symroof.ir import Kind, as_expr
from symroof.options import option
from symroof.passes.shard import CollectiveAlgorithm, collective_terms, sharding
from symroof.precision import Precision
from symroof.rich import Rich
from symroof.symbols import b as _b

__all__ = ["evaluate", "sweep", "Roofline", "roofline", "roofline_at", "symbol_map",
           "workload_values", "workload_symbols", "check_domain", "check_rows_domain",
           "check_value", "Point", "points", "points_at", "product", "DeviceMemory", "grid_symbols",
           "refuse_not_finite"]

_ZERO, _ONE = sp.Integer(0), sp.Integer(1)


def _max(*xs: sp.Expr) -> sp.Expr:
    """``Max(*xs)``: the largest number itself when all are numbers (what Max returns,
    without its argument processing, which dominates a row's evaluation)."""
    if all(x.is_Rational for x in xs):
        return max(xs, key=lambda x: x)
    return sp.Max(*xs)


def symbol_map(expr: sp.Expr, subs: Mapping[object, object] | None, *,
               integers: bool = False) -> dict[sp.Symbol, sp.Expr]:
    """``subs`` keyed by symbols of ``expr``; string keys name a free symbol of ``expr``.

    Keys ``expr`` does not use are allowed (one mapping serves F, Q and I alike), except a
    look-alike: a symbol with the name of one of ``expr``'s but other assumptions, which
    would silently substitute nothing. Values must be finite, real, and positive where
    the symbol is; with ``integers``, dimensions must be positive integers (a physical
    workload), else any positive value (a point on a curve, such as a crossover at
    n = 59364/67)."""
    if subs is None:
        return {}
    if not isinstance(subs, Mapping):
        raise SymroofError(f"subs: expected a mapping of symbols to values, got "
                           f"{type(subs).__name__}")
    out: dict[sp.Symbol, sp.Expr] = {}
    by_name = {s.name: s for s in expr.free_symbols if isinstance(s, sp.Symbol)}
    for key, value in subs.items():
        if isinstance(key, str):
            if key not in by_name:
                continue  # a value for a symbol this expression does not use
            key = by_name[key]
        if not isinstance(key, sp.Symbol):
            raise SymroofError(f"subs: expected symbols or their names as keys, got {key!r}")
        twin = by_name.get(key.name)
        if twin is not None and twin != key:
            raise SymroofError(f"subs: {key.name} {_assumed(key)} is not the {key.name} of "
                               f"the expression, which is {_assumed(twin)} (make symbols "
                               "with symroof.symbols)")
        out[key] = _fits(key, as_expr(value, f"value of {key.name}"), integers)
    return out


def _assumed(sym: sp.Symbol) -> str:
    """The assumptions that tell look-alike symbols apart, in words."""
    kinds = [k for k in ("positive", "integer") if sym.assumptions0.get(k)]
    return "(" + (" ".join(kinds) if kinds else "no assumptions") + ")"


def _fits(sym: sp.Symbol, value: sp.Expr, integers: bool) -> sp.Expr:
    return check_value(sym, value, f"value of {sym}", integers=integers)


def check_value(sym: sp.Symbol, value: sp.Expr, where: str, *,
                integers: bool = True) -> sp.Expr:
    """The rule a value for ``sym`` meets, wherever it comes from (``--set``, ``subs=``, a
    request's rows): finite and real; an expression within the size and degree limits;
    with ``integers`` a dimension's value a positive integer (a physical workload), else
    any positive value (a point on a curve); a positive symbol's value positive. Errors
    start with ``where``.

    >>> from symroof.symbols import M
    >>> check_value(M, sp.Rational(5, 2), "--set M")
    Traceback (most recent call last):
    ...
    symroof.errors.SymroofError: --set M: expected a positive integer (a dimension), got 5/2
    """
    if value.has(sp.oo, -sp.oo, sp.zoo, sp.nan):
        raise SymroofError(f"{where}: expected a finite number, got {value}")
    if value.has(sp.I) or value.is_real is False:
        raise SymroofError(f"{where}: expected a real number, got {value}")
    if value.free_symbols:
        check_expr(value, where)
        return value
    if integers and sym.is_integer and not (value.is_integer and value.is_positive):
        raise SymroofError(f"{where}: expected a positive integer (a dimension), got {value}")
    if sym.is_positive and not value.is_positive:
        raise SymroofError(f"{where}: expected a positive number, got {value}")
    return value


def evaluate(expr: object, subs: Mapping[object, object] | None = None) -> sp.Expr:
    """``expr`` with ``subs`` substituted, exactly (Rational in, Rational out); a number
    past the digits limit (:mod:`symroof.budget`) is refused before it is computed."""
    e = as_expr(expr, "expression")
    return _at(e, symbol_map(e, subs))


def _at(e: sp.Expr, values: Mapping[sp.Symbol, sp.Expr]) -> sp.Expr:
    """``e`` at checked ``values``: within the digits limit, and defined."""
    out = substitute(e, values, lambda: f"value of {_short(e)}")
    if out.has(sp.zoo, sp.nan) or (out.has(sp.oo, -sp.oo) and not e.has(sp.oo, -sp.oo)):
        at = ", ".join(f"{k}={v}" for k, v in values.items())
        raise SymroofError(f"{_short(e)} is undefined at {at} (a division by zero)")
    return out


def _short(e: sp.Expr) -> str:
    text = str(e) if e.is_Atom or len(e.args) < 40 else f"{type(e).__name__}(...)"
    return text if len(text) <= 80 else text[:77] + "..."


def sweep(expr: object, grid: Mapping[object, object], *,
          subs: Mapping[object, object] | None = None) -> Any:
    """``expr`` over numpy arrays of values (float64), compiled once per expression
    (``sr.sweep``; :mod:`symroof.compiled` keeps the compiled functions).

    ``grid`` maps symbols (or their names) to arrays that broadcast together, e.g.
    ``{B: B_values[:, None], S: S_values[None, :]}`` for a B x S table; ``subs`` fixes
    the other symbols (numbers go in as they are; a value that is an expression is
    substituted exactly first). Every free symbol must get a value; symbols of ``grid``
    that ``expr`` does not use are ignored. A point where the float formula is not finite
    is refused as the exact path would refuse it (:func:`refuse_not_finite`).

    >>> import numpy as np
    >>> from symroof.symbols import n, b
    >>> sweep(2*n/(3*b), {n: np.array([3, 6])}, subs={b: 2}).tolist()
    [1.0, 2.0]
    """
    np, run = _NUMPY or _load_numpy()
    e, fixed, scalars, by_name = _prepared(expr, subs)
    keys = grid_symbols(grid, by_name, fixed, "sweep")
    values = [_grid_values(np, grid[k], k) for k in keys.values()]
    shape = np.broadcast_shapes(*(np.shape(v) for v in values))
    (out,) = run((e,), (*keys, *fixed), (*values, *scalars), shape)
    if not np.isfinite(out).all():
        refuse_not_finite(e, fixed, list(keys), values, shape, out, "sweep")
    return out


_NUMPY: tuple[Any, Any] | None = None  # (numpy, lambdified.run) once a sweep has run


def _grid_values(np: Any, values: object, key: object) -> Any:
    """A grid's values as a float64 array: real numbers only (no strings, bytes, None,
    mappings, complex numbers or booleans), each finite check left to the caller."""
    if isinstance(values, (str, bytes, bytearray, Mapping)) or values is None:
        raise SymroofError(f"sweep grid {key}: expected an array of real numbers, got "
                           f"{type(values).__name__} {shown(values)}")
    try:
        arr = np.asarray(values)
    except (ValueError, TypeError) as err:  # ragged nesting
        raise SymroofError(f"sweep grid {key}: expected an array of real numbers ({err})") \
            from None
    if arr.dtype.kind == "O" and all(_real(v) for v in arr.flat):  # Fractions, SymPy numbers
        try:
            return arr.astype(np.float64)
        except (TypeError, ValueError, OverflowError):
            pass
    if arr.dtype.kind not in "iuf":   # object, str, complex, bool, datetime...
        raise SymroofError(f"sweep grid {key}: expected an array of real numbers, got "
                           f"{arr.dtype} values {shown(values)}")
    return arr.astype(np.float64)


def _real(v: object) -> bool:
    """A real number that is not a bool: an int, float, Fraction or real SymPy number."""
    if isinstance(v, bool) or v is None:
        return False
    if isinstance(v, sp.Basic):
        return bool(v.is_number and v.is_real)
    return isinstance(v, numbers.Real)


def _load_numpy() -> tuple[Any, Any]:
    """numpy and the compiled functions, loaded by the first sweep, not by every command."""
    global _NUMPY
    import numpy  # here, not at the top: see the docstring

    from symroof.compiled.lambdified import run  # likewise

    _NUMPY = (numpy, run)
    return _NUMPY


def grid_symbols(grid: object, by_name: Mapping[str, sp.Symbol],
                 fixed: Mapping[sp.Symbol, sp.Expr], what: str) -> dict[sp.Symbol, object]:
    """The free symbols (``by_name``) that ``grid`` gives values for, each with its key in
    ``grid``, in ``grid``'s order: keys that are not a free symbol, or one that ``fixed``
    (values of free symbols only) or an earlier key gives, are passed over; a free symbol
    given by neither is an error."""
    if not isinstance(grid, Mapping):
        raise SymroofError(f"{what} grid: expected a mapping of symbols to arrays, got "
                           f"{type(grid).__name__}")
    keys: dict[sp.Symbol, object] = {}
    for key in grid:
        sym = by_name.get(key) if isinstance(key, str) else key
        if not isinstance(sym, sp.Symbol) or by_name.get(sym.name) != sym or sym in fixed \
                or sym in keys:  # not a symbol of expr (or given already)
            continue
        keys[sym] = key
    if len(keys) + len(fixed) < len(by_name):  # fixed gives only symbols of by_name
        missing = set(by_name.values()).difference(keys, fixed)
        raise SymroofError(f"{what}: no values for {', '.join(sorted(m.name for m in missing))}")
    return keys


def refuse_not_finite(e: sp.Expr, fixed: Mapping[sp.Symbol, sp.Expr], keys: Sequence[sp.Symbol],
                      values: Sequence[Any], shape: tuple[int, ...], out: Any, what: str) -> None:
    """Raise for the first point where ``out`` is not finite: the exact path's error there
    (a division by zero, named), or a value past float64's range."""
    import numpy as np  # only a sweep's results come here (see sweep)

    i = np.unravel_index(int(np.argmin(np.isfinite(out))), shape) if shape else ()
    at = {k: as_expr(np.broadcast_to(v, shape)[i].item(), k.name) for k, v in zip(keys, values)}
    exact = evaluate(e, {**fixed, **at})  # raises where the formula is undefined there
    where = ", ".join(f"{k}={v}" for k, v in at.items())
    raise SymroofError(f"{what}: the value at {where} is past float64's range "
                       f"({sp.N(exact, 6)}); use the exact path (symroof.evaluate)")


_Prepared = tuple[sp.Expr, dict[sp.Symbol, sp.Expr], tuple[float, ...], dict[str, sp.Symbol]]
_PREPARED: OrderedDict[object, _Prepared] = OrderedDict()
_LOCK = threading.Lock()


def forget_prepared() -> None:
    """Forget the formulas :func:`sweep` has checked (:func:`symroof.compiled.cache_clear`)."""
    with _LOCK:
        _PREPARED.clear()


def _prepared(expr: object, subs: Mapping[object, object] | None) -> _Prepared:
    """``expr`` checked (a SymPy value, within the size limit) with ``subs`` checked as
    the exact path checks them, its free symbols and their names; kept per (expression,
    subs), so a sweep repeated over new arrays does no SymPy work."""
    key: object = None
    found = None
    if subs is None or isinstance(subs, Mapping):  # anything else: refused below
        try:
            key = (type(expr), expr, () if subs is None else tuple(
                (type(k), k, type(v), v) for k, v in subs.items()))
            found = _PREPARED.get(key)
        except TypeError:  # unhashable values (the checks below refuse them)
            key = None
    if found is not None:
        return found
    e = as_expr(expr, "expression")
    fixed = symbol_map(e, subs)  # the exact path's checks of subs, and its errors
    if any(v.free_symbols or not v.is_Rational for v in fixed.values()):
        e, fixed = evaluate(e, subs), {}  # an expression as a value: substitute exactly
    fixed = {k: v for k, v in fixed.items() if k in e.free_symbols}
    check_expr(e, "sweep", ())  # the size limit: lambdify compiles the whole expression
    found = (e, fixed, tuple(float(v) for v in fixed.values()),
             {x.name: x for x in e.free_symbols})
    if key is not None:
        from symroof.compiled.lambdified import MAXSIZE  # loaded by sweep already: as many as it keeps

        with _LOCK:
            _PREPARED[key] = found
            while len(_PREPARED) > MAXSIZE:
                _PREPARED.popitem(last=False)
    return found


def _si(value: sp.Expr, unit: str, prefix: bool = True) -> str:
    """``value`` as a person reads it: 4 significant figures with a decimal prefix (an
    expression with free symbols as it is)."""
    if not isinstance(value, sp.Expr) or value.free_symbols or not value.is_number:
        return str(value)
    number = float(value)
    if number == 0 or not prefix:
        return f"{number:.4g} {unit}"
    name, power = units.prefix(number, top=15, bottom=-9)   # the one table, P to n
    return f"{number / float(sp.Integer(10)**power):.4g} {name.replace('µ', 'u')}{unit}"


@dataclass(frozen=True)
class Roofline(Rich):
    """The roofline bound of a workload on a chip, at given values of its symbols.

    Times are in seconds, per device (a sharded workload is one device's). Memory and
    compute overlap perfectly in ``time_s``; the link is a roof of its own, added to it
    (``communication_time_s``, not overlapped); ``time_overlapped_s`` overlaps all three
    and ``time_serial_s`` none. A pipelined step runs ``microbatches`` through ``pp``
    stages: ``step_time_s`` is ``(m + p - 1)`` runs, divided by ``efficiency`` (the
    fraction of the bound a real system achieves; 1 by default, seed 001 puts real
    systems at 0.6-0.75). Where symbols remain free, the fields are expressions and
    ``bound`` is None (see ``symroof.regimes``).
    """

    hardware: str
    precision: Precision
    level: str
    flops: sp.Expr
    bytes: sp.Expr
    intensity: sp.Expr
    peak: sp.Expr                # FLOP/s (in the workload's FLOP convention)
    bandwidth: sp.Expr           # bytes/s of the memory level
    ridge: sp.Expr               # peak / bandwidth, FLOP per byte
    tokens: sp.Expr | None
    communication: sp.Expr = _ZERO          # bytes a device sends over its link per run
    link: str | None = None                 # the interconnect collectives run over
    link_bandwidth: sp.Expr | None = None   # bytes/s one direction of it carries
    tp: sp.Expr = _ONE                      # tensor-parallel devices
    pp: sp.Expr = _ONE                      # pipeline stages
    microbatches: sp.Expr = _ONE            # micro-batches of a step (one run each)
    sequences: sp.Expr | None = None        # sequences one run serves (B of a micro-batch)
    efficiency: sp.Expr = _ONE              # achieved fraction of the bound
    memory: DeviceMemory | None = None      # what one device holds, against its capacity
    link_latency_s: sp.Expr = _ZERO         # alpha: the collectives' latency per run
    collective: str = "ring"                # the collectives' algorithm (CollectiveAlgorithm)

    def __repr__(self) -> str:
        """For people: floats with units (the exact values stay in the attributes).

        >>> from symroof import workloads
        >>> from symroof.symbols import n, b
        >>> roofline(workloads.gemm(n, n, n), "h100-sxm", subs={n: 8192, b: 2})
        Roofline(h100-sxm bf16 hbm: F = 1.1 TFLOP, Q = 402.7 MB, I = 2731 FLOP/B, ridge = 295.3 FLOP/B, time = 1.111 ms, compute-bound)
        """
        parts = [f"F = {_si(self.flops, 'FLOP')}", f"Q = {_si(self.bytes, 'B')}",
                 f"I = {_si(self.intensity, 'FLOP/B', prefix=False)}",
                 f"ridge = {_si(self.ridge, 'FLOP/B', prefix=False)}"]
        if self.tp != 1 or self.pp != 1:
            parts.append(f"tp = {self.tp}, pp = {self.pp}")
        if self.communication != 0:
            parts.append(f"sent = {_si(self.communication, 'B')}")
        parts.append(f"time = {_si(self.time_s, 's')}")
        bound = self.bound
        if bound is not None:
            parts.append(f"{bound}-bound")
        return f"Roofline({self.hardware} {self.precision} {self.level}: {', '.join(parts)})"

    @property
    def attainable(self) -> sp.Expr:
        """Attainable FLOP/s: ``min(peak, bandwidth * intensity)``."""
        return sp.Min(self.peak, self.bandwidth * self.intensity)

    @property
    def compute_time_s(self) -> sp.Expr:
        """F / peak: the time at the flat roof."""
        return self.flops / self.peak

    @property
    def memory_time_s(self) -> sp.Expr:
        """Q / bandwidth: the time on the slope."""
        return self.bytes / self.bandwidth

    @property
    def communication_time_s(self) -> sp.Expr:
        """Bytes sent / one direction of the link, plus the collectives' latency (the
        alpha-beta model; 0 for a workload on one device)."""
        if self.communication == 0 or self.link_bandwidth is None:
            return _ZERO
        return self.communication / self.link_bandwidth + self.link_latency_s

    @cached_property
    def time_s(self) -> sp.Expr:
        """``max(F/peak, Q/bandwidth)`` (memory and compute overlap perfectly), plus the
        communication time (not overlapped)."""
        return _max(self.compute_time_s, self.memory_time_s) + self.communication_time_s

    @property
    def time_overlapped_s(self) -> sp.Expr:
        """``max(F/peak, Q/bandwidth, communication)``: the link overlapped too."""
        return _max(self.compute_time_s, self.memory_time_s, self.communication_time_s)

    @property
    def time_serial_s(self) -> sp.Expr:
        """``F/peak + Q/bandwidth + communication``: no overlap at all."""
        return self.compute_time_s + self.memory_time_s + self.communication_time_s

    @property
    def bound(self) -> str | None:
        """'compute', 'memory' or 'balanced' (exactly at the ridge); None if undecidable."""
        diff = self.intensity - self.ridge
        if diff.free_symbols:
            return None
        return "memory" if diff < 0 else "compute" if diff > 0 else "balanced"

    @property
    def margin(self) -> sp.Expr:
        """How far from the ridge: ridge/I when memory-bound, I/ridge otherwise."""
        return self.ridge / self.intensity if self.bound == "memory" else self.intensity / self.ridge

    @property
    def bubble(self) -> sp.Expr:
        """(p - 1)/(m + p - 1): the idle share of a synchronous pipelined step."""
        return (self.pp - 1) / (self.microbatches + self.pp - 1)

    @property
    def step_time_s(self) -> sp.Expr:
        """One step at ``efficiency``: ``(m + p - 1) time_s / efficiency``; a decode step's
        inter-token latency, a prefill's time to first token."""
        return self.time_s * (self.microbatches + self.pp - 1) / self.efficiency

    @property
    def tokens_per_s(self) -> sp.Expr | None:
        """Tokens per second over all sequences (None for workloads without tokens)."""
        if self.tokens is None:
            return None
        return self.tokens * self.microbatches / self.step_time_s

    @property
    def tokens_per_sequence(self) -> sp.Expr | None:
        """Tokens each sequence gets per step (decode: 1; prefill: its prompt)."""
        if self.tokens is None or self.sequences is None:
            return None
        return self.tokens / self.sequences

    @property
    def tokens_per_s_per_user(self) -> sp.Expr | None:
        """Tokens per second each sequence gets (decode: 1 / inter-token latency)."""
        per = self.tokens_per_sequence
        return None if per is None else per / self.step_time_s

    @property
    def limiter(self) -> str | None:
        """Which roof takes longest: 'compute', 'memory' or 'communication'."""
        times = {"compute": self.compute_time_s, "memory": self.memory_time_s,
                 "communication": self.communication_time_s}
        if any(t.free_symbols for t in times.values()):
            return None
        return max(times, key=lambda k: (times[k], k == "memory"))

    @property
    def fits(self) -> bool | None:
        """Whether what one device holds fits its memory (None: unknown)."""
        return None if self.memory is None else self.memory.fits


def workload_symbols(workload: Analysis) -> frozenset[sp.Symbol]:
    """The symbols of a workload's F, Q and tokens: those values may be given for."""
    free = workload.flops.free_symbols | workload.bytes.free_symbols
    if workload.tokens is not None:
        free |= workload.tokens.free_symbols
    return frozenset(x for x in free if isinstance(x, sp.Symbol))


def workload_values(workload: Analysis, subs: Mapping[object, object] | None,
                    precision: Precision | str) -> dict[sp.Symbol, sp.Expr]:
    """``subs`` checked against a workload's symbols (a name or symbol it does not use is
    an error naming those it does; dimensions must be positive integers, and the values
    must leave every dimension of its graph a positive size), with ``b`` from
    ``precision`` unless given."""
    if not isinstance(workload, Analysis):
        raise SymroofError(f"expected a workload (Analysis), got {type(workload).__name__}")
    free = workload_symbols(workload)
    names = {s.name for s in free}
    if subs is not None and not isinstance(subs, Mapping):
        raise SymroofError(f"subs: expected a mapping of symbols to values, got "
                           f"{type(subs).__name__}")
    unknown = [k for k in (subs or {}) if (isinstance(k, str) and k not in names)
               or (isinstance(k, sp.Symbol) and k not in free and k.name not in names)]
    if unknown:
        shown = ", ".join(repr(k) if isinstance(k, str) else str(k) for k in unknown)
        raise SymroofError(f"subs: {shown} is not a symbol of {workload.graph.name!r} "
                           f"(its symbols: {', '.join(sorted(names))})")
    values = symbol_map(sp.Add(*free), subs, integers=True)
    if _b in free and _b not in values:
        values[_b] = Precision.parse(precision).bytes
    check_domain(workload, values)
    return values


def _sizes(workload: Analysis) -> list[tuple[sp.Expr, str]]:
    """Each tensor dimension that is not a plain symbol or number, and each factor of one
    that is a sum (``H - R + 1``), with where it comes from: all must stay positive."""
    found: dict[sp.Expr, str] = {}
    for t in sorted(workload.graph.tensors, key=lambda x: x.name):
        for i, d in enumerate(t.shape):
            if d.is_Symbol or d.is_number:
                continue
            where = f"tensor {t.name!r} dimension {i} ({d})"
            for f in _factors(d):  # each factor first: the message names the culprit
                if not (f.is_Symbol or f.is_number or f == d):
                    found.setdefault(f, where)
            found.setdefault(d, where)
    return list(found.items())


def _factors(d: sp.Expr) -> list[sp.Expr]:
    """The factors of a product, with the bases of its powers: (H - R + 1)**2 -> H - R + 1."""
    if isinstance(d, sp.Mul):
        return [f for a in d.args for f in _factors(a)]
    if isinstance(d, sp.Pow) and d.exp.is_Integer:
        return _factors(d.base)
    return [d]


def check_domain(workload: Analysis, values: Mapping[sp.Symbol, sp.Expr]) -> None:
    """Refuse values that make a dimension of the workload's graph zero, negative or
    fractional: a kernel larger than its input, a stride that does not divide.

    >>> from symroof.symbols import H, dim
    >>> from symroof.workloads import conv2d
    >>> R = dim("R")
    >>> check_domain(conv2d(1, 1, H, H, 1, R), {H: 3, R: 5})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    symroof.errors.SymroofError: conv2d-explicit: H - R + 1 is -1 at H=3, R=5, in tensor 'Y' dimension 1 (...); expected a positive size (these values leave the workload empty)
    """
    if not values:
        return
    for size, where in _sizes(workload):
        if not size.free_symbols <= set(values):
            continue
        v = substitute(size, values, where)
        whole = where.endswith(f"({size})")
        if v.is_positive and (v.is_integer or not whole):
            continue
        at = ", ".join(f"{k}={values[k]}" for k in sorted(size.free_symbols, key=str))
        expected = "a positive integer" if whole and v.is_positive else "a positive size"
        raise SymroofError(f"{workload.graph.name}: {size} is {v} at {at}, in {where}; "
                           f"expected {expected} (these values leave the workload "
                           f"{'fractional' if v.is_positive else 'empty'})")


def roofline(workload: Analysis, hw: HardwareSpec | str, *,
             precision: Precision | str = Precision.BF16,
             subs: Mapping[object, object] | None = None, unit: str | None = None,
             level: str | None = None, efficiency: object = 1, link: str | None = None,
             reserve: object = 0, kv_cache: object | None = None,
             footprint: bool = True, collective: str = "ring",
             latency: bool = True) -> Roofline:
    """Bound ``workload`` on chip ``hw`` (a spec, its name or its file) at ``precision``.

    The peak is taken in the workload's FLOP convention (a chip whose vendor counts a
    MAC as 2 FLOPs reports half the rate to a workload that counts MACs once). If the
    workload's bytes per value ``b`` is free and not in ``subs``, it is set from
    ``precision`` (bf16: 2 bytes). A sharded workload's communication runs over ``link``
    (default: the chip's fastest interconnect, per direction). ``efficiency`` scales the
    serving figures (step time, tokens/s); ``reserve`` is the share of the memory kept
    back when judging the fit; ``kv_cache`` (bytes, in the workload's symbols) is the
    cache a device holds where the graph reads none (a prefill writes it); without
    ``footprint`` (a training step, whose memory is :mod:`symroof.training`'s) ``memory``
    is None. A sharded workload's collectives run as ``collective`` (``"ring"``, default;
    ``"tree"``, ``"full"``: :class:`symroof.passes.shard.CollectiveAlgorithm`) and, on a
    link whose chip file gives ``latency_us``, cost their latency too (the alpha of
    alpha-beta, NCCL's model): ``base_latency_us`` once per collective plus
    ``latency_us`` per step. ``latency=False`` keeps the bandwidth term alone (the
    convention of analyses that ignore it, as the seed documents do).
    """
    if not isinstance(workload, Analysis):
        raise SymroofError(f"roofline: expected a workload (Analysis), got {type(workload).__name__}")
    spec = hardware.resolve(hw)
    values = workload_values(workload, subs, precision)
    return roofline_at(workload, spec, values, Precision.parse(precision), unit=unit,
                       level=level, efficiency=efficiency, link=link, reserve=reserve,
                       kv_cache=kv_cache, footprint=footprint, collective=collective,
                       latency=latency)


def roofline_at(workload: Analysis, spec: HardwareSpec, values: Mapping[sp.Symbol, sp.Expr],
                peak: Precision, *, unit: str | None = None, level: str | None = None,
                efficiency: object = 1, link: str | None = None, reserve: object = 0,
                kv_cache: object | None = None, footprint: bool = True,
                collective: str = "ring", latency: bool = True) -> Roofline:
    """:func:`roofline` at ``values`` already checked (:func:`workload_values`, or a
    request's rows, :mod:`symroof.request`), ``b`` among them where it is free, with the
    compute peak at ``peak``: nothing is checked again."""
    ops_per_mac = workload.convention.flop_count.ops_per_mac
    rate = spec.peak(peak, unit=unit, ops_per_mac=ops_per_mac)
    bw = spec.bandwidth(level)
    f = _at(workload.flops, values)
    q = _at(workload.bytes, values)
    if q == 0:
        raise SymroofError(f"roofline: workload {workload.graph.name!r} moves no counted bytes")
    tokens = None if workload.tokens is None else _at(workload.tokens, values)
    lay = sharding(workload.graph)
    sent = _at(workload.cost.bytes_by_kind.get(Kind.COMMUNICATION, _ZERO), values)
    chosen = None if sent == 0 else choose_link(spec, link, why=f"tp {lay.tp}, pp {lay.pp}")
    if not isinstance(latency, bool):
        raise SymroofError(f"latency: expected true or false, got {latency!r}")
    alg = option(CollectiveAlgorithm, collective, "collective")
    alpha = _ZERO
    if chosen is not None:
        wire, steps, count = (_at(x, values) for x in collective_terms(workload.graph, alg))
        sent = wire
        if latency and chosen.step_latency_s is not None:
            alpha = steps * chosen.step_latency_s + count * (chosen.base_latency_s or 0)
    seqs = entry_sequences(workload.graph) if tokens is not None else None
    return Roofline(
        hardware=spec.name, precision=peak, level=level or spec.main_memory, flops=f, bytes=q,
        intensity=sp.cancel(f / q), peak=rate, bandwidth=bw, ridge=rate / bw, tokens=tokens,
        communication=sent, link=None if chosen is None else chosen.name,
        link_bandwidth=None if chosen is None else chosen.per_direction, tp=lay.tp, pp=lay.pp,
        microbatches=lay.microbatches, sequences=None if seqs is None else _at(seqs, values),
        efficiency=fraction(efficiency, "efficiency", zero=False),
        memory=device_memory(workload, spec, values, level=level, microbatches=lay.microbatches,
                             reserve=fraction(reserve, "reserve", zero=True),
                             kv_cache=kv_cache) if footprint else None,
        link_latency_s=alpha, collective=alg.value)


@dataclass(frozen=True)
class Point:
    """A workload at one assignment of its symbols: F, Q, I, and the roofline on a chip."""

    values: Mapping[sp.Symbol, sp.Expr]
    flops: sp.Expr
    bytes: sp.Expr
    intensity: sp.Expr
    roofline: Roofline | None = None


def points(workload: Analysis, rows: Iterable[Mapping[sp.Symbol, sp.Expr]], *,
           hw: HardwareSpec | str | None = None, precision: Precision | str = Precision.BF16,
           unit: str | None = None, level: str | None = None, efficiency: object = 1,
           link: str | None = None, reserve: object = 0,
           kv_cache: object | None = None, footprint: bool = True) -> Iterator[Point]:
    """``workload`` at each row of values (exact), with its roofline on ``hw`` if given
    (the keyword arguments after ``level`` are :func:`roofline`'s); each row is checked
    (:func:`workload_values`) as it comes."""
    spec = None if hw is None else hardware.resolve(hw)
    peak = Precision.parse(precision)
    for row in rows:
        values = workload_values(workload, row, peak)
        yield from points_at(workload, [{k: values[k] for k in row}], spec=spec, peak=peak,
                             b=values.get(_b), unit=unit, level=level,
                             efficiency=efficiency, link=link, reserve=reserve,
                             kv_cache=kv_cache, footprint=footprint)


def points_at(workload: Analysis, rows: Iterable[Mapping[sp.Symbol, sp.Expr]], *,
              spec: HardwareSpec | None, peak: Precision, b: sp.Expr | None = None,
              **options: Any) -> Iterator[Point]:
    """:func:`points` of rows already checked (a request's, :mod:`symroof.request`):
    nothing is checked again. ``b`` is the bytes per value the roofline takes where a row
    leaves it free (F, Q and I stay at the row as given); ``options`` are
    :func:`roofline_at`'s."""
    for row in rows:
        filled = row if b is None or _b in row else {**row, _b: b}
        r = None if spec is None else roofline_at(workload, spec, filled, peak, **options)
        yield Point(dict(row), _at(workload.flops, row), _at(workload.bytes, row),
                    _at(workload.intensity, row), r)


def product(sets: Mapping[sp.Symbol, Sequence[sp.Expr]], what: str = "sets",
            fill: Mapping[sp.Symbol, sp.Expr] | None = None) -> Iterator[dict[sp.Symbol, sp.Expr]]:
    """One row per combination of the values, in the order given, each with ``fill``
    after its values, made one at a time; their number is checked against the rows limit
    before the first is made.

    >>> from symroof.symbols import B, S
    >>> list(product({B: (1, 2), S: (8,)}))
    [{B: 1, S: 8}, {B: 2, S: 8}]
    """
    keys = list(sets)
    check_rows([(k.name, len(sets[k])) for k in keys], what)
    extra = dict(fill or {})
    return ({**dict(zip(keys, combo)), **extra}
            for combo in itertools.product(*(sets[k] for k in keys)))


def check_rows_domain(workload: Analysis, rows: Iterable[Mapping[sp.Symbol, sp.Expr]]) -> None:
    """Every row's values leave the workload's sizes positive (:func:`check_domain`),
    checked before the first row is evaluated."""
    for row in rows:
        check_domain(workload, row)

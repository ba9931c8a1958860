"""Compiled numbers: derive once, then evaluate at numpy speed over arrays of points.

``lambdify`` turns an expression into Python source over numpy and compiles it (about a
millisecond); :func:`function` does that once per (expressions, argument order) and
keeps the result in a bounded LRU cache, so that equal expressions, however they were
built, share one compiled function. :func:`sweep` (``sr.sweep``) evaluates one
expression over a grid; :func:`rooflines` a workload's roofline on a chip (F, Q, I,
times, tokens/s, bound) over a grid; :func:`points` the rows of ``symroof eval``.
Results are float64 and agree with the exact path (``roofline(subs=)``, which stays the
exact one) to 1e-12 relative (tests/test_compiled.py); a point where the float formula
is not finite is refused as the exact path would refuse it.

>>> import numpy as np
>>> from symroof.symbols import B, S
>>> from symroof.workloads import decode
>>> from symroof.models import get
>>> r = rooflines(decode(get("llama-2-7b"), B, S), "h100-sxm",
...               {B: np.array([1, 64])[:, None], S: np.array([1024, 4096])[None, :]})
>>> r.bound.tolist()
[['memory', 'memory'], ['memory', 'memory']]
>>> np.round(r.tokens_per_s, 1).tolist()
[[243.6, 218.1], [4506.6, 1423.1]]

Large sweeps run chunked on an existing engine: :func:`blocks` maps the same compiled
function over the blocks of dask arrays (``pip install 'symroof[dask]'``), on this
machine's cores or a ``dask.distributed`` cluster.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import sympy as sp
from sympy.printing.numpy import NumPyPrinter

from symroof import hardware
from symroof.analysis import Analysis
from symroof.budget import check_expr
from symroof.errors import SymroofError
from symroof.evaluate import (Point, Roofline, check_domain, evaluate, roofline, symbol_map,
                              points as exact_points)
from symroof.hardware import HardwareSpec
from symroof.ir import as_expr
from symroof.symbols import b as _b

__all__ = ["function", "cache_info", "cache_clear", "CacheInfo", "MAXSIZE", "sweep",
           "rooflines", "Rooflines", "points", "NumericPoint", "NumericRoofline", "blocks"]

#: Compiled functions kept (least recently used dropped first).
MAXSIZE = 512


class CacheInfo(NamedTuple):
    """Hits, misses and size of the compiled-function cache."""

    hits: int
    misses: int
    size: int
    maxsize: int


class _Printer(NumPyPrinter):
    """numpy source for an expression; ``Min``/``Max`` as nested ``minimum``/``maximum``,
    which broadcast (numpy's ``amin`` over a tuple needs arrays of one shape)."""

    def _nested(self, fn: str, args: Sequence[sp.Expr]) -> str:
        out = self._print(args[-1])
        for a in reversed(args[:-1]):
            out = f"{self._module_format('numpy.' + fn)}({self._print(a)}, {out})"
        return out

    def _print_Min(self, expr: sp.Min) -> str:
        return self._nested("minimum", expr.args)

    def _print_Max(self, expr: sp.Max) -> str:
        return self._nested("maximum", expr.args)


_CACHE: OrderedDict[tuple[tuple[sp.Expr, ...], tuple[sp.Symbol, ...]], Callable[..., Any]] = \
    OrderedDict()
_LOCK = threading.Lock()
_STATS = {"hits": 0, "misses": 0}


def function(exprs: Sequence[sp.Expr], args: Sequence[sp.Symbol]) -> Callable[..., Any]:
    """``exprs`` compiled to one numpy function of ``args`` returning a tuple, lambdified
    once per (expressions, argument order); equal expressions share it.

    >>> from symroof.symbols import n, b
    >>> f = function((2*n/(3*b),), (n, b))
    >>> f(np.array([3.0, 6.0]), 2.0)[0].tolist(), function((2*n/(3*b),), (n, b)) is f
    ([1.0, 2.0], True)
    """
    key = (tuple(exprs), tuple(args))
    with _LOCK:
        found = _CACHE.get(key)
        if found is not None:
            _CACHE.move_to_end(key)
            _STATS["hits"] += 1
            return found
    # several formulas share their common parts (a roofline's time_s inside tokens_per_s)
    fn = sp.lambdify(key[1], key[0], modules="numpy", printer=_Printer, dummify=False,
                     docstring_limit=0, cse=len(key[0]) > 1)
    with _LOCK:
        _STATS["misses"] += 1
        _CACHE[key] = fn
        while len(_CACHE) > MAXSIZE:
            _CACHE.popitem(last=False)
    return fn


def cache_info() -> CacheInfo:
    """How the compiled-function cache has served so far."""
    with _LOCK:
        return CacheInfo(_STATS["hits"], _STATS["misses"], len(_CACHE), MAXSIZE)


def cache_clear() -> None:
    """Forget every compiled function (and the counts)."""
    with _LOCK:
        _CACHE.clear()
        _PREPARED.clear()
        _STATS.update(hits=0, misses=0)


def _run(exprs: tuple[sp.Expr, ...], args: Sequence[sp.Symbol], values: Sequence[Any],
         shape: tuple[int, ...]) -> list[np.ndarray]:
    """``exprs`` at ``values`` (arrays broadcasting to ``shape``, or floats), float64
    arrays of that shape (not finite where the formula is not)."""
    with np.errstate(all="ignore"):  # a bad point is found below, not warned about
        found = function(exprs, args)(*values)
    return [x if type(x) is np.ndarray and x.shape == shape and x.dtype == np.float64
            else np.broadcast_to(np.asarray(x, dtype=np.float64), shape) for x in found]


# -- sweep ----------------------------------------------------------------------------


def sweep(expr: object, grid: Mapping[object, object], *,
          subs: Mapping[object, object] | None = None) -> np.ndarray:
    """``expr`` over numpy arrays of values (float64), compiled once per expression.

    ``grid`` maps symbols (or their names) to arrays that broadcast together, e.g.
    ``{B: B_values[:, None], S: S_values[None, :]}`` for a B x S table; ``subs`` fixes
    the other symbols (numbers go in as they are; a value that is an expression is
    substituted exactly first). Every free symbol must get a value; symbols of ``grid``
    that ``expr`` does not use are ignored.

    >>> from symroof.symbols import n, b
    >>> sweep(2*n/(3*b), {n: np.array([3, 6])}, subs={b: 2}).tolist()
    [1.0, 2.0]
    """
    if not isinstance(grid, Mapping):
        raise SymroofError(f"sweep grid: expected a mapping of symbols to arrays, got "
                           f"{type(grid).__name__}")
    e, fixed, scalars, by_name = _prepared(expr, subs)
    keys: dict[sp.Symbol, None] = {}
    values: list[Any] = []
    for key, arr in grid.items():
        sym = by_name.get(key) if isinstance(key, str) else key
        if not isinstance(sym, sp.Symbol) or by_name.get(sym.name) != sym or sym in fixed \
                or sym in keys:  # not a symbol of expr (or given already)
            continue
        keys[sym] = None
        values.append(np.asarray(arr, dtype=np.float64))
    if len(keys) + len(fixed) < len(by_name):
        missing = set(by_name.values()) - set(keys) - set(fixed)
        raise SymroofError(f"sweep: no values for {', '.join(sorted(m.name for m in missing))}")
    shape = np.broadcast_shapes(*(np.shape(v) for v in values))
    (out,) = _run((e,), (*keys, *fixed), (*values, *scalars), shape)
    if not np.isfinite(out).all():
        _refuse(e, fixed, list(keys), values, shape, out, "sweep")
    return out


_Prepared = tuple[sp.Expr, dict[sp.Symbol, sp.Expr], tuple[float, ...], dict[str, sp.Symbol]]
_PREPARED: OrderedDict[object, _Prepared] = OrderedDict()


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
        with _LOCK:
            _PREPARED[key] = found
            while len(_PREPARED) > MAXSIZE:
                _PREPARED.popitem(last=False)
    return found


def _refuse(e: sp.Expr, fixed: Mapping[sp.Symbol, sp.Expr], keys: Sequence[sp.Symbol],
            values: Sequence[Any], shape: tuple[int, ...], out: np.ndarray, what: str) -> None:
    """Raise for the first point where ``out`` is not finite: the exact path's error there
    (a division by zero, named), or a value past float64's range."""
    i = np.unravel_index(int(np.argmin(np.isfinite(out))), shape) if shape else ()
    at = {k: as_expr(np.broadcast_to(v, shape)[i].item(), k.name) for k, v in zip(keys, values)}
    exact = evaluate(e, {**fixed, **at})  # raises where the formula is undefined there
    where = ", ".join(f"{k}={v}" for k, v in at.items())
    raise SymroofError(f"{what}: the value at {where} is past float64's range "
                       f"({sp.N(exact, 6)}); use the exact path (symroof.evaluate)")


# -- rooflines --------------------------------------------------------------------------

#: A roofline's figures that are numbers at a point (what :class:`Rooflines` evaluates).
FIGURES = ("flops", "bytes", "intensity", "tokens", "compute_time_s", "memory_time_s",
           "time_s", "time_serial_s", "attainable", "tokens_per_s")

_PER_WORKLOAD: weakref.WeakKeyDictionary[Analysis, dict[Any, Any]] = weakref.WeakKeyDictionary()


def _free(workload: Analysis) -> frozenset[sp.Symbol]:
    """The symbols of a workload's F, Q and tokens (kept per workload)."""
    per = _PER_WORKLOAD.setdefault(workload, {})
    if "free" not in per:
        free = workload.flops.free_symbols | workload.bytes.free_symbols
        per["free"] = frozenset(free | (workload.tokens.free_symbols
                                        if workload.tokens is not None else set()))
    return per["free"]


def _symbolic(workload: Analysis, spec: HardwareSpec, precision: str, unit: str | None,
              level: str | None, own_b: bool
              ) -> tuple[Roofline, frozenset[sp.Symbol], dict[str, sp.Expr]]:
    """The exact path's roofline with the workload's symbols free (its formulas), the
    symbols it uses, and its figures' formulas as they are asked for; made once per
    workload, chip and options (``own_b``: the grid gives ``b``)."""
    per = _PER_WORKLOAD.setdefault(workload, {})
    key = (spec.name, precision, unit, level, own_b)
    found = per.get(key)
    if found is None or (found[0] is not spec and found[0] != spec):
        r = roofline(workload, spec, precision=precision, unit=unit, level=level,
                     subs={_b: _b} if own_b else None)
        free = r.flops.free_symbols | r.bytes.free_symbols | (
            r.tokens.free_symbols if r.tokens is not None else set())
        found = per[key] = (spec, r, frozenset(free), {})
    return found[1], found[2], found[3]


@dataclass(frozen=True, eq=False)
class Rooflines:
    """A workload's roofline on a chip over a grid of points, each figure an array.

    ``roofline`` holds the exact formulas (its symbols free), ``symbols`` and ``values``
    the grid. A figure (``FIGURES``, or any numeric property of
    :class:`~symroof.evaluate.Roofline`) is computed when asked for; :meth:`figures`
    computes several in one compiled call.
    """

    roofline: Roofline
    symbols: tuple[sp.Symbol, ...]
    values: tuple[Any, ...]
    shape: tuple[int, ...]
    exprs: dict[str, sp.Expr]  # each figure's formula, shared by every grid of the roofline

    def figures(self, *names: str) -> tuple[np.ndarray, ...]:
        """The named figures as float64 arrays of the grid's shape."""
        exprs = []
        for name in names:
            if name not in self.exprs:
                value = getattr(self.roofline, name, None)
                if isinstance(value, bool) or not isinstance(value, (sp.Expr, int)):
                    raise SymroofError(f"rooflines: {name!r} is not a numeric figure of a "
                                       f"roofline (figures: {', '.join(FIGURES)})")
                self.exprs[name] = sp.Integer(value) if isinstance(value, int) else value
            exprs.append(self.exprs[name])
        found = _run(tuple(exprs), self.symbols, self.values, self.shape)
        for e, arr in zip(exprs, found):
            if not np.isfinite(arr).all():
                _refuse(e, {}, self.symbols, self.values, self.shape, arr, "rooflines")
        return tuple(found)

    def __getattr__(self, name: str) -> np.ndarray:
        if name.startswith("_") or name in ("roofline", "symbols", "values", "shape", "exprs"):
            raise AttributeError(name)
        return self.figures(name)[0]

    @property
    def bound(self) -> np.ndarray:
        """'memory', 'compute' or 'balanced' (exactly at the ridge) per point."""
        (i,) = self.figures("intensity")
        ridge = self.roofline.ridge
        out = np.where(i < float(ridge), "memory", "compute").astype(object)
        near = np.abs(i - float(ridge)) <= 1e-12 * float(ridge)  # float rounding: ask exactly
        for idx in zip(*np.nonzero(near)):
            at = {s: as_expr(np.broadcast_to(v, self.shape)[idx].item(), s.name)
                  for s, v in zip(self.symbols, self.values)}
            d = evaluate(self.roofline.intensity - ridge, at)
            out[idx] = "memory" if d < 0 else "compute" if d > 0 else "balanced"
        return out


def rooflines(workload: Analysis, hw: HardwareSpec | str, grid: Mapping[object, object], *,
              precision: str = "bf16", unit: str | None = None,
              level: str | None = None) -> Rooflines:
    """``workload`` on chip ``hw`` at every point of ``grid`` (symbols or their names to
    arrays that broadcast together, or to numbers), vectorised and compiled once.

    As :func:`~symroof.evaluate.roofline` at each point: ``b`` comes from ``precision``
    unless the grid gives it; a name the workload does not use is an error; dimensions
    must be positive integers and leave every size of the graph positive.
    """
    if not isinstance(workload, Analysis):
        raise SymroofError(f"rooflines: expected a workload (Analysis), got "
                           f"{type(workload).__name__}")
    spec = hardware.resolve(hw)
    symbols, values = _grid(workload, grid)
    r, free, exprs = _symbolic(workload, spec, precision, unit, level, _b in symbols)
    missing = free - set(symbols)
    if missing:
        raise SymroofError(f"rooflines: no values for "
                           f"{', '.join(sorted(m.name for m in missing))}")
    shape = np.broadcast_shapes(*(np.shape(v) for v in values))
    _check_domain(workload, symbols, values, shape)
    keep = [i for i, s in enumerate(symbols) if s in free]
    return Rooflines(r, tuple(symbols[i] for i in keep), tuple(values[i] for i in keep), shape,
                     exprs)


def _grid(workload: Analysis, grid: Mapping[object, object]
          ) -> tuple[tuple[sp.Symbol, ...], tuple[Any, ...]]:
    """The grid's symbols and float64 values, checked as a row of ``workload_values``:
    known names, finite positive values, positive integers for dimensions."""
    if not isinstance(grid, Mapping):
        raise SymroofError(f"rooflines grid: expected a mapping of symbols to arrays, got "
                           f"{type(grid).__name__}")
    free = _free(workload)
    by_name = {s.name: s for s in free}
    symbols: list[sp.Symbol] = []
    values: list[Any] = []
    for key, raw in grid.items():
        sym = by_name.get(key) if isinstance(key, str) else key
        if not isinstance(sym, sp.Symbol) or sym not in free:
            shown = repr(key) if isinstance(key, str) else str(key)
            raise SymroofError(f"grid: {shown} is not a symbol of {workload.graph.name!r} "
                               f"(its symbols: {', '.join(sorted(by_name))})")
        a = np.asarray(float(raw) if isinstance(raw, sp.Expr) else raw, dtype=np.float64)
        lo, hi = (a.min(), a.max()) if a.size else (1.0, 1.0)  # NaN fails both tests
        if not ((lo > 0 if sym.is_positive else lo > -np.inf) and hi < np.inf) or (
                sym.is_integer and (a % 1).any()):
            bad = ~np.isfinite(a) | ((a <= 0) if sym.is_positive else False)
            bad |= (a % 1 != 0) if sym.is_integer else False
            x = a[np.unravel_index(int(np.argmax(bad)), a.shape)]
            kind = "a positive integer (a dimension)" if sym.is_integer else "a positive number"
            raise SymroofError(f"value of {sym}: expected {kind}, got {x}")
        symbols.append(sym)
        values.append(a)
    return tuple(symbols), tuple(values)


def _sizes(workload: Analysis) -> tuple[sp.Expr, ...]:
    """Each tensor dimension of the graph that is not a plain symbol or number, and each
    factor of one (the base of a power): all must stay positive integers."""
    per = _PER_WORKLOAD.setdefault(workload, {})
    if "sizes" not in per:
        sizes: dict[sp.Expr, None] = {}
        for t in sorted(workload.graph.tensors, key=lambda x: x.name):
            for d in t.shape:
                for f in (*sp.Mul.make_args(d), d):
                    base = f.base if f.is_Pow and f.exp.is_Integer else f
                    if not (base.is_Symbol or base.is_number):
                        sizes[base] = None
        per["sizes"] = tuple(sizes)
    return per["sizes"]


def _check_domain(workload: Analysis, symbols: tuple[sp.Symbol, ...], values: tuple[Any, ...],
                  shape: tuple[int, ...]) -> None:
    """Refuse a grid that makes a size of the graph zero, negative or fractional: the
    first such point goes through the exact check, whose error names it."""
    sizes = tuple(s for s in _sizes(workload) if s.free_symbols <= set(symbols))
    if not sizes:
        return
    for size, arr in zip(sizes, _run(sizes, symbols, values, shape)):
        bad = ~(arr > 0) | (arr != np.floor(arr))
        if bad.any():
            i = np.unravel_index(int(np.argmax(bad)), shape)
            at = {s: as_expr(np.broadcast_to(v, shape)[i].item(), s.name)
                  for s, v in zip(symbols, values)}
            check_domain(workload, at)
            raise SymroofError(f"{workload.graph.name}: {size} is not a positive integer at "
                               f"{', '.join(f'{k}={v}' for k, v in at.items())}")


# -- rows, as symroof eval makes them -------------------------------------------------


@dataclass(frozen=True)
class NumericRoofline:
    """A :class:`~symroof.evaluate.Roofline` at one point in floats (the chip's peak,
    bandwidth and ridge stay exact), under the same names, so its formatters serve."""

    hardware: str
    precision: str
    level: str
    flops: float
    bytes: float
    intensity: float
    peak: sp.Expr
    bandwidth: sp.Expr
    ridge: sp.Expr
    tokens: float | None
    compute_time_s: float
    memory_time_s: float
    time_s: float
    time_serial_s: float
    attainable: float
    tokens_per_s: float | None
    bound: str

    @property
    def margin(self) -> float:
        """How far from the ridge: ridge/I when memory-bound, I/ridge otherwise."""
        r = float(self.ridge)
        return r / self.intensity if self.bound == "memory" else self.intensity / r


@dataclass(frozen=True)
class NumericPoint:
    """A workload at one row of values, in floats: F, Q, I and the roofline on a chip."""

    values: Mapping[sp.Symbol, sp.Expr]
    flops: float
    bytes: float
    intensity: float
    roofline: NumericRoofline | None = None


def points(workload: Analysis, rows: Iterable[Mapping[sp.Symbol, sp.Expr]], *,
           hw: HardwareSpec | str | None = None, precision: str = "bf16",
           unit: str | None = None, level: str | None = None
           ) -> Iterator[NumericPoint | Point]:
    """``workload`` at each row as :func:`symroof.evaluate.points` gives them (the same
    rows, order, checks and errors), the numbers in float64 from compiled formulas.

    A row whose values are not all numbers, or that leaves a symbol of F or Q free (or of
    the tokens, with ``hw``), is the exact :class:`~symroof.evaluate.Point`. Every row is
    checked before the first is yielded.
    """
    table = list(rows)
    spec = None if hw is None else hardware.resolve(hw)
    groups: dict[tuple[object, ...], list[int]] = {}
    for i, row in enumerate(table):
        groups.setdefault(tuple(row) if isinstance(row, Mapping) else (i,), []).append(i)
    out: dict[int, NumericPoint | Point] = {}
    for idx in groups.values():
        found: list[NumericPoint] | list[Point] | None = _numeric(
            workload, [table[i] for i in idx], spec, precision, unit, level)
        if found is None:  # the exact path: its checks, its errors, its exact numbers
            found = list(exact_points(workload, [table[i] for i in idx], hw=spec,
                                      precision=precision, unit=unit, level=level))
        out.update(zip(idx, found))
    for i in range(len(table)):
        yield out[i]


def _numeric(workload: Analysis, rows: list[Any], spec: HardwareSpec | None, precision: str,
             unit: str | None, level: str | None) -> list[NumericPoint] | None:
    """Rows giving the same symbols, in floats; None where the exact path must answer
    (values that are not numbers, symbols left free, or a row it would refuse)."""
    keys = tuple(rows[0]) if isinstance(rows[0], Mapping) else ()
    need = workload.flops.free_symbols | workload.bytes.free_symbols
    if spec is not None and workload.tokens is not None:
        need |= workload.tokens.free_symbols
    if not keys or not all(isinstance(k, sp.Symbol) for k in keys) or not need <= set(keys) \
            or not all(isinstance(v, sp.Expr) and v.is_Rational for r in rows for v in r.values()):
        return None
    list(exact_points(workload, rows[:1], precision=precision))  # names, exactly as it checks
    grid = {k: np.array([float(r[k]) for r in rows]) for k in keys}
    try:
        if spec is None:
            symbols, values = _grid(workload, grid)
            _check_domain(workload, symbols, values, (len(rows),))
            f, q = _run((workload.flops, workload.bytes), symbols, values, (len(rows),))
            with np.errstate(all="ignore"):
                i = f / q
            if not np.isfinite(i).all():
                return None
            return [NumericPoint(dict(r), float(f[j]), float(q[j]), float(i[j]))
                    for j, r in enumerate(rows)]
        r = rooflines(workload, spec, grid, precision=precision, unit=unit, level=level)
        names = [n for n in FIGURES if "tokens" not in n or r.roofline.tokens is not None]
        figs = dict(zip(names, r.figures(*names)))
        bound = r.bound
    except SymroofError:
        return None
    out = []
    for j, row in enumerate(rows):
        v = {k: float(a[j]) for k, a in figs.items()}
        nr = NumericRoofline(r.roofline.hardware, precision, r.roofline.level, v["flops"],
                             v["bytes"], v["intensity"], r.roofline.peak, r.roofline.bandwidth,
                             r.roofline.ridge, v.get("tokens"), v["compute_time_s"],
                             v["memory_time_s"], v["time_s"], v["time_serial_s"],
                             v["attainable"], v.get("tokens_per_s"), str(bound[j]))
        out.append(NumericPoint(dict(row), nr.flops, nr.bytes, nr.intensity, nr))
    return out


# -- scale: the same function over the blocks of dask arrays ---------------------------


def blocks(expr: object, grid: Mapping[object, object], *,
           subs: Mapping[object, object] | None = None) -> Any:
    """``expr`` over dask arrays (lazy): the compiled function of :func:`sweep` runs once
    per block, on the threads of this machine or the workers of a ``dask.distributed``
    cluster, so a grid of 10^9 points never has to fit in one memory.

    ``grid`` maps symbols to dask arrays (or numpy arrays, made one block each) that
    broadcast together; ``subs`` must give numbers. Needs the ``dask`` extra.
    """
    try:  # dask is an optional extra, needed only here: imported on first use
        import dask.array as da
    except ImportError:
        raise SymroofError("blocks: needs dask (pip install 'symroof[dask]')") from None
    if not isinstance(grid, Mapping):
        raise SymroofError(f"blocks grid: expected a mapping of symbols to arrays, got "
                           f"{type(grid).__name__}")
    e = as_expr(expr, "expression")
    fixed = symbol_map(e, subs)
    if any(v.free_symbols or not v.is_Rational for v in fixed.values()):
        raise SymroofError("blocks: subs must give numbers")
    check_expr(e, "blocks", ())
    by_name = {x.name: x for x in e.free_symbols}
    keys, arrays = [], []
    for key, arr in grid.items():
        sym = by_name.get(key) if isinstance(key, str) else key
        if sym is None or sym not in e.free_symbols or sym in fixed or sym in keys:
            continue
        keys.append(sym)
        arrays.append(da.asarray(arr).astype(np.float64))
    missing = e.free_symbols - set(keys) - set(fixed)
    if missing:
        raise SymroofError(f"blocks: no values for {', '.join(sorted(m.name for m in missing))}")
    fn = function((e,), (*keys, *fixed))
    scalars = [float(v) for v in fixed.values()]

    def block(*parts: np.ndarray) -> np.ndarray:
        with np.errstate(all="ignore"):
            (out,) = fn(*parts, *scalars)
        return np.broadcast_to(np.asarray(out, dtype=np.float64),
                               np.broadcast_shapes(*(p.shape for p in parts))).copy()

    arrays = list(da.broadcast_arrays(*arrays)) if arrays else []
    return da.map_blocks(block, *arrays, dtype=np.float64)

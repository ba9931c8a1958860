"""A workload's numbers at many points: its roofline over a grid, ``symroof eval``'s rows.

:func:`rooflines` evaluates the exact path's own roofline formulas (F, Q, I, times,
tokens/s, with the workload's symbols free) over a grid of values with compiled numpy
functions (:mod:`symroof.lambdified`); :func:`points` answers the rows of ``symroof
eval`` the same way. Both check their values as the exact path checks a row, and refuse
a point where a float formula is not finite as the exact path would. Use them through
:mod:`symroof.compiled`.

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
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import sympy as sp

from symroof import hardware
from symroof.analysis import Analysis
from symroof.errors import SymroofError
from symroof.evaluate import Point, Roofline, check_domain, evaluate, points as exact_points, roofline
from symroof.hardware import HardwareSpec
from symroof.ir import as_expr
from symroof.lambdified import run as _run
from symroof.symbols import b as _b

__all__ = ["FIGURES", "Rooflines", "rooflines", "NumericRoofline", "NumericPoint", "points",
           "refuse_not_finite"]


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
                refuse_not_finite(e, {}, self.symbols, self.values, self.shape, arr, "rooflines")
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


def refuse_not_finite(e: sp.Expr, fixed: Mapping[sp.Symbol, sp.Expr], keys: Sequence[sp.Symbol],
            values: Sequence[Any], shape: tuple[int, ...], out: np.ndarray, what: str) -> None:
    """Raise for the first point where ``out`` is not finite: the exact path's error there
    (a division by zero, named), or a value past float64's range."""
    i = np.unravel_index(int(np.argmin(np.isfinite(out))), shape) if shape else ()
    at = {k: as_expr(np.broadcast_to(v, shape)[i].item(), k.name) for k, v in zip(keys, values)}
    exact = evaluate(e, {**fixed, **at})  # raises where the formula is undefined there
    where = ", ".join(f"{k}={v}" for k, v in at.items())
    raise SymroofError(f"{what}: the value at {where} is past float64's range "
                       f"({sp.N(exact, 6)}); use the exact path (symroof.evaluate)")

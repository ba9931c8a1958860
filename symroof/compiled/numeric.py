"""A workload's numbers at many points: its roofline over a grid, ``symroof eval``'s rows.

:func:`rooflines` evaluates the exact path's own roofline formulas (F, Q, I, times,
tokens/s, with the workload's symbols free) over a grid of values with compiled numpy
functions (:mod:`symroof.compiled.lambdified`); :func:`points` answers the rows of ``symroof
eval`` the same way. Both check their values as the exact path checks a row, and refuse
a point where a float formula is not finite as the exact path would. Use them through
:mod:`symroof.compiled`.

The rows of ``symroof eval`` (the grid's example is :mod:`symroof.compiled`'s; its
corners are these two rows):

>>> from symroof.symbols import B, S
>>> from symroof.workloads import decode
>>> from symroof.models import get
>>> rows = points(decode(get("llama-2-7b"), B, S), [{B: 1, S: 1024}, {B: 64, S: 4096}],
...               hw="h100-sxm")
>>> [(p.roofline.bound, round(float(p.roofline.tokens_per_s), 1)) for p in rows]
[('memory', 243.6), ('memory', 1423.1)]
"""

from __future__ import annotations

import dataclasses
import weakref
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import sympy as sp

from symroof import hardware
from symroof.analysis import Analysis
from symroof.errors import SymroofError
from symroof.evaluate import (Point, Roofline, check_domain, evaluate, points as exact_points,
                              points_at, refuse_not_finite, roofline)
from symroof.evaluate import check_rows_domain as _exact_rows_domain
from symroof.hardware import HardwareSpec
from symroof.ir import as_expr
from symroof.compiled.lambdified import run as _run
from symroof.precision import Precision
from symroof.symbols import b as _b

__all__ = ["FIGURES", "Rooflines", "rooflines", "points", "refuse_not_finite",
           "check_rows_domain"]


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


def _symbolic(workload: Analysis, spec: HardwareSpec, precision: Precision, own_b: bool,
              options: Mapping[str, Any]
              ) -> tuple[Roofline, frozenset[sp.Symbol], dict[str, sp.Expr]]:
    """The exact path's roofline with the workload's symbols free (its formulas), the
    symbols it uses, and its figures' formulas as they are asked for; made once per
    workload, chip, precision and options (``own_b``: the grid gives ``b``)."""
    per = _PER_WORKLOAD.setdefault(workload, {})
    try:
        key: Any = (spec.name, precision, own_b, tuple(sorted(options.items())))
        found = per.get(key)
    except TypeError:  # an option that cannot be a key: made again each time
        key, found = None, None
    if found is None or (found[0] is not spec and found[0] != spec):
        r = roofline(workload, spec, precision=precision, subs={_b: _b} if own_b else None,
                     **options)
        free = r.flops.free_symbols | r.bytes.free_symbols | (
            r.tokens.free_symbols if r.tokens is not None else set())
        found = (spec, r, frozenset(free), {})
        if key is not None:
            per[key] = found
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
              precision: Precision | str = Precision.BF16, **options: Any) -> Rooflines:
    """``workload`` on chip ``hw`` at every point of ``grid`` (symbols or their names to
    arrays that broadcast together, or to numbers), vectorised and compiled once.

    As :func:`~symroof.evaluate.roofline` at each point (``options`` are its keyword
    arguments: ``unit``, ``level``, ``efficiency``, ...): ``b`` comes from ``precision``
    unless the grid gives it; a name the workload does not use is an error; dimensions
    must be positive integers and leave every size of the graph positive.
    """
    if not isinstance(workload, Analysis):
        raise SymroofError(f"rooflines: expected a workload (Analysis), got "
                           f"{type(workload).__name__}")
    return _rooflines(workload, hardware.resolve(hw), grid, Precision.parse(precision),
                      options, checked=False)


def _rooflines(workload: Analysis, spec: HardwareSpec, grid: Mapping[object, object],
               precision: Precision, options: Mapping[str, Any], *, checked: bool) -> Rooflines:
    """:func:`rooflines`; with ``checked``, the grid was checked already (a request's
    rows) and is not checked again."""
    symbols, values = _grid(workload, grid, checked=checked)
    r, free, exprs = _symbolic(workload, spec, precision, _b in symbols, options)
    missing = free - set(symbols)
    if missing:
        raise SymroofError(f"rooflines: no values for "
                           f"{', '.join(sorted(m.name for m in missing))}")
    shape = np.broadcast_shapes(*(np.shape(v) for v in values))
    if not checked:
        _check_domain(workload, symbols, values, shape)
    keep = [i for i, s in enumerate(symbols) if s in free]
    return Rooflines(r, tuple(symbols[i] for i in keep), tuple(values[i] for i in keep), shape,
                     exprs)


def _grid(workload: Analysis, grid: Mapping[object, object], *, checked: bool = False
          ) -> tuple[tuple[sp.Symbol, ...], tuple[Any, ...]]:
    """The grid's symbols and float64 values, checked as a row of ``workload_values``:
    known names, finite positive values, positive integers for dimensions (unless
    ``checked``: a request's rows, whose values :mod:`symroof.request` checked)."""
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
        symbols.append(sym)
        values.append(a)
        if checked:
            continue
        lo, hi = (a.min(), a.max()) if a.size else (1.0, 1.0)  # NaN fails both tests
        if not ((lo > 0 if sym.is_positive else lo > -np.inf) and hi < np.inf) or (
                sym.is_integer and (a % 1).any()):
            bad = ~np.isfinite(a) | ((a <= 0) if sym.is_positive else False)
            bad |= (a % 1 != 0) if sym.is_integer else False
            x = a[np.unravel_index(int(np.argmax(bad)), a.shape)]
            kind = "a positive integer (a dimension)" if sym.is_integer else "a positive number"
            raise SymroofError(f"value of {sym}: expected {kind}, got {x}")
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


def points(workload: Analysis, rows: Iterable[Mapping[sp.Symbol, sp.Expr]], *,
           hw: HardwareSpec | str | None = None, precision: Precision | str = Precision.BF16,
           checked: bool = False, **options: Any) -> Iterator[Point]:
    """``workload`` at each row as :func:`symroof.evaluate.points` gives them (the same
    rows, order, checks and errors, the same records and ``options``), the numbers
    evaluated in float64 from the compiled formulas (SymPy ``Float``; the chip's peak,
    bandwidth and ridge stay exact, and a point within rounding of the ridge gets its
    exact intensity, so that ``bound`` is decided exactly).

    Rows whose values are not all numbers, or that leave a symbol of F or Q free (or of
    the tokens, with ``hw``), or that the exact path would refuse, are the exact path's
    own points. Every row is checked before the first is yielded; with ``checked`` the
    rows were checked already (a request's, :mod:`symroof.request`: their values and the
    sizes they leave the graph) and nothing is checked again.
    """
    table = list(rows)
    spec = None if hw is None else hardware.resolve(hw)
    peak = Precision.parse(precision)
    groups: dict[tuple[object, ...], list[int]] = {}
    for i, row in enumerate(table):
        groups.setdefault(tuple(row) if isinstance(row, Mapping) else (i,), []).append(i)
    out: dict[int, Point] = {}
    for idx in groups.values():
        group = [table[i] for i in idx]
        found = _numeric(workload, group, spec, peak, options, checked)
        if found is None and checked:  # the exact path; the rows were checked already
            found = list(points_at(workload, group, spec=spec, peak=peak, **options))
        elif found is None:  # the exact path: its checks, its errors, its exact numbers
            found = list(exact_points(workload, group, hw=spec, precision=peak, **options))
        out.update(zip(idx, found))
    for i in range(len(table)):
        yield out[i]


def _numeric(workload: Analysis, rows: list[Any], spec: HardwareSpec | None,
             precision: Precision, options: Mapping[str, Any],
             checked: bool) -> list[Point] | None:
    """Rows giving the same symbols, in floats; None where the exact path must answer."""
    keys = tuple(rows[0]) if isinstance(rows[0], Mapping) else ()
    need = workload.flops.free_symbols | workload.bytes.free_symbols
    if spec is not None and workload.tokens is not None:
        need |= workload.tokens.free_symbols
    if not keys or not all(isinstance(k, sp.Symbol) for k in keys) or not need <= set(keys) \
            or not all(isinstance(v, sp.Expr) and v.is_Rational for r in rows for v in r.values()):
        return None
    if not checked:
        list(exact_points(workload, rows[:1], precision=precision))  # names, as it checks
    grid = {k: np.array([float(r[k]) for r in rows]) for k in keys}
    try:
        if spec is None:
            return _plain(workload, rows, grid, checked)
        return _with_roofline(_rooflines(workload, spec, grid, precision, options,
                                         checked=checked), rows)
    except SymroofError:
        return None


def check_rows_domain(workload: Analysis, rows: Iterable[Mapping[sp.Symbol, sp.Expr]]) -> None:
    """:func:`symroof.evaluate.check_rows_domain` over many rows at once: the sizes of the
    graph at every row from one compiled call; the first row that leaves one zero,
    negative or fractional goes through the exact check, whose error names it. Rows that
    are not all numbers over the same symbols are checked one at a time, exactly."""
    table = list(rows)
    keys = tuple(table[0]) if table else ()
    free = _free(workload)
    if not table or not all(isinstance(k, sp.Symbol) and k in free for k in keys) or any(
            tuple(r) != keys or not all(isinstance(v, sp.Expr) and v.is_Rational
                                        for v in r.values()) for r in table):
        _exact_rows_domain(workload, table)
        return
    grid = {k: np.array([float(r[k]) for r in table]) for k in keys}
    symbols, values = _grid(workload, grid, checked=True)
    _check_domain(workload, symbols, values, (len(table),))


def _counts(exprs: Sequence[sp.Expr]) -> list[frozenset[sp.Symbol] | None]:
    """The symbols of each formula that is a count (a polynomial with positive integer
    coefficients), None for the others. At integer values a count is an integer, and
    below 2**53 its float value is exact (no intermediate exceeds the result), so it is
    given as the exact Integer."""
    out: list[frozenset[sp.Symbol] | None] = []
    for e in exprs:
        poly = e.as_poly() if e.is_polynomial() and e.free_symbols else None
        count = poly is not None and all(c.is_Integer and c > 0 for c in poly.coeffs())
        out.append(frozenset(e.free_symbols) if count else None)
    return out


def _value(x: float, count: frozenset[sp.Symbol] | None, fractional: set[sp.Symbol]) -> sp.Expr:
    """A figure at a row: the exact Integer for a count whose symbols are integers there
    (``fractional``: the row's symbols that are not), else a Float."""
    x = float(x)  # numpy's float64 as Python's: SymPy converts those directly
    if count is not None and not count & fractional and abs(x) < 2**53:
        return sp.Integer(int(x))
    return sp.Float(x)


def _plain(workload: Analysis, rows: list[Any], grid: Mapping[sp.Symbol, np.ndarray],
           checked: bool) -> list[Point] | None:
    """F, Q and I of rows without a chip."""
    symbols, values = _grid(workload, grid, checked=checked)
    if not checked:
        _check_domain(workload, symbols, values, (len(rows),))
    f, q = _run((workload.flops, workload.bytes), symbols, values, (len(rows),))
    if not (np.isfinite(f).all() and np.isfinite(q).all()) or not q.all():
        return None
    counts = _counts((workload.flops, workload.bytes))
    out = []
    for j, r in enumerate(rows):
        frac = {k for k, v in r.items() if not v.is_Integer}
        fj, qj = _value(f[j], counts[0], frac), _value(q[j], counts[1], frac)
        out.append(Point(dict(r), fj, qj, sp.Float(float(f[j] / q[j])), None))
    return out


def _with_roofline(r: Rooflines, rows: list[Any]) -> list[Point]:
    """Each row's Roofline: the exact path's record, its formulas' fields (and its
    memory's) replaced by their values at the row."""
    sym = r.roofline
    fields = [f.name for f in dataclasses.fields(sym)
              if isinstance(getattr(sym, f.name), sp.Expr) and getattr(sym, f.name).free_symbols]
    mem = sym.memory
    parts = [] if mem is None else [
        f.name for f in dataclasses.fields(mem)
        if isinstance(getattr(mem, f.name), sp.Expr) and getattr(mem, f.name).free_symbols]
    exprs = tuple(getattr(sym, f) for f in fields) + tuple(getattr(mem, f) for f in parts)
    found = _run(exprs, r.symbols, r.values, r.shape)
    for e, arr in zip(exprs, found):
        if not np.isfinite(arr).all():
            refuse_not_finite(e, {}, r.symbols, r.values, r.shape, arr, "points")
    counts = _counts(exprs)
    ridge = float(sym.ridge)
    out = []
    for j, row in enumerate(rows):
        frac = {k for k, v in row.items() if not v.is_Integer}
        at = [_value(a[j], c, frac) for a, c in zip(found, counts)]
        changes: dict[str, Any] = dict(zip(fields, at))
        f, q = changes["flops"], changes["bytes"]
        if f.is_Integer and q.is_Integer:  # I = F/Q correctly rounded, as the exact path's
            changes["intensity"] = sp.Float(int(f) / int(q))
        if abs(float(changes["intensity"]) - ridge) <= 1e-12 * ridge:  # the bound, exactly
            changes["intensity"] = evaluate(sym.intensity, {s: row[s] for s in r.symbols})
        if mem is not None and parts:
            changes["memory"] = dataclasses.replace(mem, **dict(zip(parts, at[len(fields):])))
        point = dataclasses.replace(sym, **changes)
        out.append(Point(dict(row), point.flops, point.bytes, point.intensity, point))
    return out

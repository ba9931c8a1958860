"""Compiled numbers: derive once, then evaluate at numpy speed over arrays of points.

``lambdify`` turns an expression into Python source over numpy and compiles it (about a
millisecond); :func:`function` (:mod:`symroof.lambdified`) does that once per
(expressions, argument order) and keeps the result in a bounded LRU cache, so that equal
expressions, however they were built, share one compiled function. :func:`sweep`
(``sr.sweep``) evaluates one expression over a grid; :func:`rooflines` a workload's
roofline on a chip (F, Q, I, times, tokens/s, bound) over a grid; :func:`points` the
rows of ``symroof eval`` (both from :mod:`symroof.numeric`).
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
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

import numpy as np
import sympy as sp

from symroof.budget import check_expr
from symroof.errors import SymroofError
from symroof.evaluate import evaluate, symbol_map
from symroof.ir import as_expr
from symroof.lambdified import MAXSIZE, CacheInfo, cache_info, function, run as _run
from symroof.lambdified import cache_clear as _forget_functions
from symroof.numeric import FIGURES, Rooflines, points, rooflines
from symroof.numeric import refuse_not_finite as _refuse

__all__ = ["function", "cache_info", "cache_clear", "CacheInfo", "MAXSIZE", "sweep",
           "rooflines", "Rooflines", "FIGURES", "points", "blocks"]

_LOCK = threading.Lock()


def cache_clear() -> None:
    """Forget every compiled function, every prepared formula, and the counts."""
    _forget_functions()
    with _LOCK:
        _PREPARED.clear()


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
        out = np.asarray(out, dtype=np.float64)
        shape = np.broadcast_shapes(*(p.shape for p in parts))
        return out if out.shape == shape else np.broadcast_to(out, shape).copy()

    if not arrays:
        return da.from_array(np.asarray(block(), dtype=np.float64))
    ndim = max(a.ndim for a in arrays)  # numpy's broadcasting, block by block: a (B, 1)
    arrays = [a.reshape((1,) * (ndim - a.ndim) + a.shape) for a in arrays]  # by (1, S) grid
    chunks = da.core.broadcast_chunks(*(a.chunks for a in arrays))  # is computed per block
    return da.map_blocks(block, *arrays, dtype=np.float64, chunks=chunks)

"""Compiled numbers: derive once, then evaluate at numpy speed over arrays of points.

The package holds the numeric path: :mod:`~symroof.compiled.lambdified` (``lambdify`` once
per formula, cached), :mod:`~symroof.compiled.numeric` (a workload's roofline and ``symroof
eval``'s rows over a grid) and, here, the sweeps and the chunked runs over Dask.

``lambdify`` turns an expression into Python source over numpy and compiles it (about a
millisecond); :func:`function` (:mod:`symroof.compiled.lambdified`) does that once per
(expressions, argument order) and keeps the result in a bounded LRU cache, so that equal
expressions, however they were built, share one compiled function. :func:`sweep`
(``sr.sweep``, from :mod:`symroof.evaluate`) evaluates one expression over a grid; :func:`rooflines` a workload's
roofline on a chip (F, Q, I, times, tokens/s, bound) over a grid; :func:`points` the
rows of ``symroof eval`` (both from :mod:`symroof.compiled.numeric`).
Results are float64 and agree with the exact path (``roofline(subs=)``, which stays the
exact one) to 1e-12 relative (tests/engine/test_compiled.py); a point where the float formula
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

from collections.abc import Mapping
from typing import Any

import numpy as np

from symroof.budget import check_expr
from symroof.errors import SymroofError
from symroof.evaluate import forget_prepared, grid_symbols, sweep, symbol_map
from symroof.ir import as_expr
from symroof.compiled.lambdified import MAXSIZE, CacheInfo, cache_info, function
from symroof.compiled.lambdified import cache_clear as _forget_functions
from symroof.compiled.numeric import FIGURES, Rooflines, points, rooflines

__all__ = ["function", "cache_info", "cache_clear", "CacheInfo", "MAXSIZE", "sweep",
           "rooflines", "Rooflines", "FIGURES", "points", "blocks"]

def cache_clear() -> None:
    """Forget every compiled function, every prepared formula, and the counts."""
    _forget_functions()
    forget_prepared()


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
    e = as_expr(expr, "expression")
    fixed = symbol_map(e, subs)
    if any(v.free_symbols or not v.is_Rational for v in fixed.values()):
        raise SymroofError("blocks: subs must give numbers")
    fixed = {k: v for k, v in fixed.items() if k in e.free_symbols}
    check_expr(e, "blocks", ())
    keys = grid_symbols(grid, {x.name: x for x in e.free_symbols}, fixed, "blocks")
    arrays = [da.asarray(grid[k]).astype(np.float64) for k in keys.values()]
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

"""Compiled numeric functions: ``lambdify`` once per (expressions, argument order).

``lambdify`` turns expressions into Python source over numpy and compiles it (about a
millisecond); :func:`function` does that once and keeps the result in a bounded LRU
cache, so that equal expressions, however they were built, share one compiled function.
:mod:`symroof.compiled` evaluates formulas with it; this module needs nothing of the
library, so any layer may use it (in a function: importing it loads its package).

>>> import numpy as np
>>> from symroof.symbols import n, b
>>> f = function((2*n/(3*b),), (n, b))
>>> f(np.array([3.0, 6.0]), 2.0)[0].tolist(), function((2*n/(3*b),), (n, b)) is f
([1.0, 2.0], True)
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np
import sympy as sp
from sympy.printing.numpy import NumPyPrinter

__all__ = ["function", "run", "cache_info", "cache_clear", "CacheInfo", "MAXSIZE"]

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
    once per (expressions, argument order); equal expressions share it."""
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
        _STATS.update(hits=0, misses=0)


def run(exprs: tuple[sp.Expr, ...], args: Sequence[sp.Symbol], values: Sequence[Any],
        shape: tuple[int, ...]) -> list[np.ndarray]:
    """``exprs`` at ``values`` (arrays broadcasting to ``shape``, or floats), float64
    arrays of that shape (not finite where the formula is not)."""
    with np.errstate(all="ignore"):  # a bad point is found below, not warned about
        found = function(exprs, args)(*values)
    return [x if type(x) is np.ndarray and x.shape == shape and x.dtype == np.float64
            else np.broadcast_to(np.asarray(x, dtype=np.float64), shape) for x in found]

"""The only place symroof makes symbols.

Dimensions are positive integers; bytes per value are positive (not integer: a 4-bit
value is 1/2 byte). Two symbols with the same name and different assumptions are
different SymPy objects that print alike, so every symbol comes from the two factories
below, and names are never parsed from strings (SymPy's parser turns ``S``, ``N``,
``E``, ``I`` and ``Q`` into built-ins).

>>> from symroof.symbols import M, N, K, b
>>> (2*M*N*K / (b*(M*K + K*N + M*N))).subs({M: 1, N: 1, K: 1, b: 1})
2/3
>>> dim("S") is S
True
"""

from __future__ import annotations

from functools import cache

import sympy as sp

from symroof.errors import SymroofError

__all__ = [
    "dim", "bytes_symbol", "quantity", "CANONICAL",
    "M", "N", "K", "n", "B", "S", "L", "D", "H", "G", "d_h", "d_ff", "V", "P", "b", "T",
    "C", "t",
]

_DIM_NAMES = ("M", "N", "K", "n", "B", "S", "L", "D", "H", "G", "d_h", "d_ff", "V", "P",
              "T", "C", "t")


def _check_name(name: object) -> None:
    if not isinstance(name, str) or not name.isidentifier():
        raise SymroofError(f"symbol name {name!r}: expected an identifier such as 'd_kv'")


def dim(name: str) -> sp.Symbol:
    """A dimension (a count of elements, layers, tokens): a positive integer symbol."""
    _check_name(name)  # before the cache, which would hash an unhashable argument
    return _dim(name)


@cache
def _dim(name: str) -> sp.Symbol:
    _check_name(name)
    if name == "b":
        raise SymroofError("symbol 'b' is bytes per value, not a dimension")
    return sp.Symbol(name, positive=True, integer=True)


def bytes_symbol(name: str = "b") -> sp.Symbol:
    """Bytes per value of a tensor kind (e.g. ``b_w`` for weights): a positive symbol."""
    _check_name(name)  # before the cache, which would hash an unhashable argument
    return _bytes_symbol(name)


@cache
def _bytes_symbol(name: str) -> sp.Symbol:
    _check_name(name)
    if name in _DIM_NAMES:
        raise SymroofError(f"symbol {name!r} is a dimension, not bytes per value")
    return sp.Symbol(name, positive=True)


def quantity(name: str) -> sp.Symbol:
    """A positive real quantity that is not a count (peak FLOP/s, bandwidth, capacity)."""
    _check_name(name)  # before the cache, which would hash an unhashable argument
    return _quantity(name)


@cache
def _quantity(name: str) -> sp.Symbol:
    _check_name(name)
    if name in _DIM_NAMES or name == "b":
        raise SymroofError(f"symbol {name!r} is already a canonical dimension or byte size")
    return sp.Symbol(name, positive=True)


M, N, K, n, B, S, L, D, H, G, d_h, d_ff, V, P, T, C, t = (dim(x) for x in _DIM_NAMES)
b = bytes_symbol("b")

#: name -> symbol for every canonical symbol (the safe parser's base table).
CANONICAL: dict[str, sp.Symbol] = {s.name: s for s in (*(dim(x) for x in _DIM_NAMES), b)}

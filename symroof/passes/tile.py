"""The tiling pass: traffic of a blocked schedule, beyond compulsory.

A tensor is re-read once per iteration of each tiled loop above its reuse point that
does not index it: ``reads(T) = bytes(T) * prod(D_d / t_d)`` over tiled loops d that do
not index T. GEMMs are scheduled output-stationary (a tile of C stays on chip for its
whole K loop), so tiling M and N re-reads B and A, and tiling K re-reads nothing.
Exact division (t_d divides D_d) is the default and is stated as an assumption; with
``exact=False`` the counts use ceil-div (padding), for numbers only, never for solvers.

>>> from symroof.symbols import M, N, K, T
>>> from symroof.workloads import gemm
>>> from symroof.analysis import analyze
>>> tiled = analyze(tile(gemm(M, N, K).graph, {M: T, N: T}))
>>> tiled.bytes
2*K*M*N*b/T + M*N*b
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import sympy as sp

from symroof.errors import SymroofError
from symroof.ir import Gemm, Graph, as_dim

__all__ = ["Tile", "tile", "gemm_loops", "inner_loop_intensity", "tile_for_ridge",
           "largest_square_tile", "waves"]


def gemm_loops(op: Gemm) -> dict[str, sp.Expr]:
    """The loop extents of a GEMM: 'M', 'N', 'K' (batch dims are not tiled here)."""
    _, m, n, k = op.dims
    return {"M": m, "N": n, "K": k}


# which operands each GEMM loop indexes (A: M x K, B: K x N, C: M x N)
_INDEXES = {"M": ("a", "out"), "N": ("b", "out"), "K": ("a", "b")}


@dataclass(frozen=True)
class Tile:
    """Tile loops of every GEMM whose extent matches a key of ``tiles`` (Graph -> Graph)."""

    tiles: tuple[tuple[sp.Expr, sp.Expr], ...]
    exact: bool = True
    name: str = "tile"

    def apply(self, graph: Graph) -> Graph:
        """A new graph; ``graph`` is not changed."""
        g = graph.copy()
        sizes = dict(self.tiles)
        assumptions = list(g.meta.get("assumptions", ()))  # type: ignore[arg-type]
        for op in g.ops:
            if not isinstance(op, Gemm):
                continue
            loops = gemm_loops(op)
            factor = {"a": sp.Integer(1), "b": sp.Integer(1)}
            for loop, extent in loops.items():
                t = _match(sizes, extent)
                if t is None or loop == "K":  # output-stationary: K re-reads nothing
                    continue
                trips = extent / t if self.exact else sp.ceiling(extent / t)
                if self.exact and trips.is_number and not trips.is_integer:
                    raise SymroofError(f"tile: {t} does not divide {extent} in gemm "
                                       f"{op.name!r}; use exact=False for ceil-div (padding)")
                if self.exact and not (extent / t).is_integer:
                    note = f"tile {t} divides {extent} exactly"
                    if note not in assumptions:
                        assumptions.append(note)
                for operand in ("a", "b"):
                    if operand not in _INDEXES[loop]:
                        factor[operand] *= trips
            for operand, f in factor.items():
                t_ = getattr(op, operand)
                if f != 1:
                    g.set_edge_crossings(t_, op, g.crossings(t_, op) * f)
        g.meta["assumptions"] = tuple(assumptions)
        g.meta["tiles"] = tuple(self.tiles)
        return g


def _match(sizes: Mapping[sp.Expr, sp.Expr], extent: sp.Expr) -> sp.Expr | None:
    for dim, t in sizes.items():
        if dim == extent or sp.expand(dim - extent) == 0:
            return t
    return None


def tile(graph: Graph, tiles: Mapping[object, object], *, exact: bool = True) -> Graph:
    """``graph`` with its GEMM loops tiled: ``tiles`` maps a loop extent (a dimension
    such as ``M`` or ``B*S``) to its tile size (a number or symbol)."""
    pairs = []
    for dim, t in tiles.items():
        d = as_dim(dim, "tile dimension")
        pairs.append((d, as_dim(t, f"tile size for {d}")))
    return Tile(tuple(pairs), exact).apply(graph)


def inner_loop_intensity(tile_m: object, tile_n: object, b: object) -> sp.Expr:
    """Intensity of the inner loop of an output-stationary GEMM tile t_m x t_n.

    Each K step loads a t_m column slice of A and a t_n row slice of B (``(t_m+t_n) b``
    bytes) and feeds ``t_m t_n`` MACs (``2 t_m t_n`` FLOPs): ``2 t_m t_n / ((t_m+t_n) b)``,
    ``T/b`` for a square tile.
    """
    tm, tn = as_dim(tile_m, "tile_m"), as_dim(tile_n, "tile_n")
    return sp.factor_terms(sp.cancel(2 * tm * tn / ((tm + tn) * b)))  # type: ignore[operator]


def tile_for_ridge(ridge: object, b: object) -> sp.Expr:
    """The smallest square tile whose inner loop clears ``ridge``: T/b >= ridge, T = ridge*b."""
    from symroof.solve import crossover

    t = sp.Dummy("T", positive=True, integer=True)
    roots = crossover(inner_loop_intensity(t, t, b), ridge, t)
    if len(roots) != 1:
        raise SymroofError(f"tile_for_ridge: no unique tile for ridge {ridge}")
    value = roots[0].value
    return sp.ceiling(value) if value.is_number else value  # a whole tile


def largest_square_tile(capacity: object, *, accumulator_bytes: object = 4, b: object = 2,
                        staging: bool = True) -> sp.Expr:
    """The largest T whose T x T accumulators (plus one K-slice of A and B, 2 T b bytes,
    when ``staging``) fit in ``capacity`` bytes (floored when numeric)."""
    from symroof.solve import crossover

    t = sp.Dummy("T", positive=True)
    need = t ** 2 * accumulator_bytes + (2 * t * b if staging else 0)  # type: ignore[operator]
    roots = crossover(need, capacity, t)  # a quadratic with positive terms: one positive root
    if len(roots) != 1:
        raise SymroofError(f"largest_square_tile: nothing fits in {capacity} bytes")
    root = roots[0].value
    if not root.is_number:
        return root
    if root < 1:
        raise SymroofError(f"largest_square_tile: not even a 1 x 1 tile fits in {capacity} bytes")
    return sp.floor(root)


def waves(tiles: object, units: object) -> sp.Expr:
    """Waves of tiles over ``units`` parallel units (SMs): ceil(tiles / units).

    Wave quantization for numbers; keep it out of anything passed to a solver.
    """
    return sp.ceiling(sp.Rational(1) * tiles / units)  # type: ignore[operator]

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
from symroof.ir import Gemm, Graph, OpGroup, as_dim, require_graph

__all__ = ["Tile", "tile", "tile_pass", "gemm_loops"]


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
        assumptions = list(g.provenance.assumptions)
        for op in g.ops:
            if op.group is not OpGroup.CONTRACTION:
                continue
            loops = gemm_loops(op)  # type: ignore[arg-type]
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
        g.record(assumptions=tuple(assumptions), tiles=g.provenance.tiles + self.tiles)
        return g


def _match(sizes: Mapping[sp.Expr, sp.Expr], extent: sp.Expr) -> sp.Expr | None:
    for dim, t in sizes.items():
        if dim == extent or sp.expand(dim - extent) == 0:
            return t
    return None


def tile(graph: Graph, tiles: Mapping[object, object], *, exact: bool = True) -> Graph:
    """``graph`` with its GEMM loops tiled: ``tiles`` maps a loop extent (a dimension
    such as ``M`` or ``B*S``) to its tile size (a number or symbol)."""
    require_graph(graph, "tile")
    return tile_pass(tiles, exact=exact).apply(graph)


def tile_pass(tiles: Mapping[object, object], *, exact: bool = True) -> Tile:
    """The tiling pass of ``tiles`` (checked as :func:`tile` checks them): a stage of a
    pipeline."""
    if not isinstance(tiles, Mapping):
        raise SymroofError(f"tile: expected a mapping of loop extent to tile size, e.g. "
                           f"{{M: T}}, got {type(tiles).__name__}")
    pairs = []
    for dim, t in tiles.items():
        d = as_dim(dim, "tile dimension")
        pairs.append((d, as_dim(t, f"tile size for {d}")))
    return Tile(tuple(pairs), exact)

"""The fusion pass: a group of ops runs as one kernel, its internal tensors stay on chip.

Fusion never changes FLOPs. It lowers traffic by exactly the crossings of the tensors it
keeps on chip: a tensor produced and consumed only inside the group is neither written
nor read; a tensor produced inside and also used outside is written once but read by
the group from chip; an input read by several ops of the group is read once. The
result records each group and the on-chip capacity its internal tensors need, as a
condition. Rules for elementwise chains, GEMM epilogues and attention are the same rule.

A group is given by the names of its ops (a claim's ``fuse =``, a scan kernel whose ops
a builder lists) or found by a :class:`~symroof.ir.pattern.Pattern` over op groups: the
pass matches each pattern on the graph it is given, so a workload built from new layers
is fused by its structure (a GEMM and its bias add, FlashAttention's region).

>>> from symroof.symbols import n
>>> from symroof.ir import Graph
>>> from symroof.analysis import analyze
>>> g = Graph("chain")
>>> y = g.elementwise(g.elementwise(g.elementwise(g.input("x", (n,)), name="a"), name="b"), name="c")
>>> g.output(y)
>>> analyze(g).intensity, analyze(fuse(g, [{"a", "b", "c"}])).intensity
(1/(2*b), 3/(2*b))
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import sympy as sp

from symroof.errors import SymroofError
from symroof.ir import FusedGroup, Graph, Node, Op, Tensor, require_graph
from symroof.ir.pattern import GEMM_EPILOGUE, Pattern

__all__ = ["Fuse", "FusedGroup", "Pattern", "GEMM_EPILOGUE", "fuse", "fuse_pass",
           "unfuse"]  # FusedGroup, Pattern, GEMM_EPILOGUE: re-exported from symroof.ir


@dataclass(frozen=True)
class Fuse:
    """Fuse each group of op names, and each region a pattern matches, into one kernel
    (a Graph -> Graph pass).

    A pattern's match that shares an op with a named group or an earlier match is left
    alone. The groups are applied in the order the graph's ops were added (the order of
    the op that completes each group); named groups keep their order among themselves.
    """

    groups: tuple[frozenset[str], ...]
    tile_capacity: tuple[sp.Expr | None, ...] = ()
    name: str = "fuse"
    patterns: tuple[Pattern, ...] = ()

    @property
    def wanted(self) -> bool:
        """Whether the pass has anything to look for (named groups or patterns)."""
        return bool(self.groups or self.patterns)

    def apply(self, graph: Graph) -> Graph:
        """A new graph; ``graph`` is not changed."""
        g = graph.copy()
        fused = list(g.provenance.fused)
        for group, tile in self.kernels(g):
            ops = [_op(g, name, self.name) for name in sorted(group)]
            fused.append(_fuse_group(g, ops, tile))
        g.record(fused=tuple(fused))
        return g

    def kernels(self, graph: Graph) -> list[tuple[frozenset[str], sp.Expr | None]]:
        """The groups this pass fuses in ``graph``, in order, with their tiles."""
        named = [(group, self.tile_capacity[i] if i < len(self.tile_capacity) else None)
                 for i, group in enumerate(self.groups)]
        if not self.patterns:
            return named
        at = {op.name: i for i, op in enumerate(graph.ops_in_order())}
        claimed = {name for group, _ in named for name in group}
        found = []
        for pattern in self.patterns:
            for group, tile in pattern.matches(graph):
                if not group & claimed:
                    claimed |= group
                    found.append((max(at[n] for n in group), group, tile))
        found.sort(key=lambda f: f[0])
        out: list[tuple[frozenset[str], sp.Expr | None]] = []
        for group, tile in named:
            end = max((at[n] for n in group if n in at), default=-1)
            while found and found[0][0] < end:
                out.append(found.pop(0)[1:])
            out.append((group, tile))
        out.extend(f[1:] for f in found)
        return out


def _op(g: Graph, name: str, pass_name: str) -> Op:
    node = g.node(name)
    if not isinstance(node, Op):
        raise SymroofError(f"{pass_name}: {name!r} is a tensor, expected an op name")
    return node


def _fuse_group(g: Graph, ops: list[Op], tile: sp.Expr | None) -> FusedGroup:
    members = set(ops)
    outputs = set(g.outputs)
    internal: list[Tensor] = []
    seen_inputs: set[Tensor] = set()
    restore: list[tuple[Node, Node, sp.Expr]] = []

    def on_chip(src: Node, dst: Node) -> None:
        restore.append((src, dst, g.crossings(src, dst)))
        g.set_edge_crossings(src, dst, 0)

    for op in sorted(ops, key=lambda o: o.name):
        for t in op.inputs:
            producer = g.producer(t)
            if producer in members or t in seen_inputs:
                on_chip(t, op)   # produced in the group, or already brought in by it
            else:
                seen_inputs.add(t)
        for t in op.outputs:
            consumers = set(g.consumers(t))
            if consumers and consumers <= members and t not in outputs:
                on_chip(op, t)   # never leaves the chip
                internal.append(t)
    capacity = sp.Add(*(t.nbytes for t in internal))
    name = "+".join(o.name for o in ops)
    return FusedGroup(name, tuple(o.name for o in ops), tuple(t.name for t in internal),
                      capacity, tile, tuple(restore))


def _groups(groups: object, where: str) -> tuple[frozenset[str], ...]:
    """Groups of op names, checked: an iterable of iterables of strings."""
    if isinstance(groups, (str, bytes)) or not hasattr(groups, "__iter__"):
        raise SymroofError(f"{where}: expected groups of op names, e.g. [{{'a', 'b'}}], "
                           f"got {groups!r}")
    out = []
    for gr in groups:
        if isinstance(gr, (str, bytes)) or not hasattr(gr, "__iter__") or \
                not all(isinstance(n, str) for n in gr):
            raise SymroofError(f"{where}: a group is a set of op names, got {gr!r}")
        out.append(frozenset(gr))
    return tuple(out)


def fuse(graph: Graph, groups: Iterable[Iterable[str]], *,
         tile_capacity: Iterable[sp.Expr | None] = ()) -> Graph:
    """``graph`` with each group of op names fused into one kernel."""
    require_graph(graph, "fuse")
    return fuse_pass(groups, tile_capacity=tile_capacity).apply(graph)


def fuse_pass(groups: Iterable[Iterable[str]], *,
              tile_capacity: Iterable[sp.Expr | None] = ()) -> Fuse:
    """The fusion pass of ``groups`` of op names (checked as :func:`fuse` checks them): a
    stage of a pipeline."""
    gs = _groups(groups, "fuse")
    if any(not gr for gr in gs):
        raise SymroofError("fuse: a group must name at least one op")
    return Fuse(gs, tuple(tile_capacity))


def unfuse(graph: Graph, groups: Iterable[Iterable[str]]) -> Graph:
    """``graph`` with the named ops' fused groups undone: every crossing the fusion set
    to 0 gets its value from before (compulsory, tiled or a stated convention)."""
    g = require_graph(graph, "unfuse").copy()
    names = {n for gr in _groups(groups, "unfuse") for n in gr}
    for name in names:
        _op(g, name, "unfuse")
    kept = []
    for f in g.provenance.fused:
        if not set(f.ops) & names:
            kept.append(f)
            continue
        for src, dst, value in reversed(f.restore):
            g.set_edge_crossings(src, dst, value)
    g.record(fused=tuple(kept))
    return g


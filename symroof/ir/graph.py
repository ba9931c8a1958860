"""The Graph: ops and tensors on a networkx DiGraph, with a multiplicity per node.

Edges run tensor -> op (a read) and op -> tensor (a write); each edge carries a
crossing factor, the number of times that read or write crosses the memory boundary
(1 by default: compulsory traffic; 0 for a tensor kept on chip; a tiled loop's re-read
count after tiling). A block repeated ``L`` times is one subgraph whose nodes carry the
count ``L``; it is never unrolled.

>>> from symroof.symbols import B, D
>>> g = Graph("mlp")
>>> x = g.input("x", (B, D))
>>> w = g.weight("W1", (D, 4 * D))
>>> h = g.gemm(x, w, name="up")
>>> h.shape
(B, 4*D)
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import networkx as nx
import sympy as sp

from symroof.errors import SymroofError
from symroof.ir.nodes import (Elementwise, Gather, Gemm, Kind, Move, Node, Op, Reduce, Role,
                              Tensor, View, as_dim, as_expr, prod)
from symroof.ir.order import TrackedDiGraph, topological_order, version
from symroof.ir.provenance import Provenance
from symroof.options import Saves
from symroof.symbols import b as _b

__all__ = ["Graph", "require_graph"]


@dataclass
class _Scope:
    counts: list[sp.Expr] = field(default_factory=list)
    blocks: list[str] = field(default_factory=list)


class Graph:
    """Ops and tensors on a networkx DiGraph, with a multiplicity (count) per node.

    Builder methods add nodes and return the output tensor; ``with g.repeat(L):`` makes
    every node created inside count ``L`` times. Passes copy a graph and change the copy.
    """

    def __init__(self, name: str = "graph") -> None:
        self.name = name
        self.nx: nx.DiGraph = TrackedDiGraph()
        self._inputs: list[Tensor] = []
        self._outputs: list[Tensor] = []
        self._names: dict[str, Node] = {}
        self._scope = _Scope()
        self._provenance = Provenance()
        # the topological order and a passed validation, for the nx graph and version
        # they were computed at (a change of a node or an edge, or a new nx, drops them)
        self._order: tuple[object, int, tuple[Node, ...] | None] | None = None
        self._valid: tuple[object, int, int] | None = None

    # -- building ---------------------------------------------------------

    @contextlib.contextmanager
    def repeat(self, count: object, name: str = "block") -> Iterator[None]:
        """Nodes created inside count ``count`` times (nested blocks multiply)."""
        self._scope.counts.append(as_dim(count, f"repeat {name!r} count"))
        self._scope.blocks.append(name)
        try:
            yield
        finally:
            self._scope.counts.pop()
            self._scope.blocks.pop()

    def _count(self) -> sp.Expr:
        return prod(self._scope.counts)

    def _add_node(self, node: Node, count: sp.Expr | None = None, block: str | None = None) -> None:
        key = ("tensor " if isinstance(node, Tensor) else "op ") + node.name
        if key in self._names:
            raise SymroofError(f"graph {self.name!r}: {key!r} is defined twice")
        self._names[key] = node
        self.nx.add_node(node, count=self._count() if count is None else count,
                         block="/".join(self._scope.blocks) if block is None else block)

    def _declare(self, tensor: Tensor, count: object | None = None,
                 block: str | None = None) -> Tensor:
        self._add_node(tensor, None if count is None else as_dim(count, f"tensor {tensor.name!r} count"),
                       block)
        self._inputs.append(tensor)
        return tensor

    def input(self, name: str, shape: Sequence[object], *, kind: Kind | str = Kind.ACTIVATION,
              bytes_per_value: object = _b, count: object | None = None,
              block: str | None = None, role: Role | str = Role.VALUE) -> Tensor:
        """A tensor that comes from outside the graph (read from memory by its consumers).

        ``count`` and ``block`` default to the enclosing ``repeat`` scope.
        """
        try:
            k = Kind(kind)
        except ValueError:
            raise SymroofError(f"input {name!r} kind: expected one of "
                               f"{', '.join(x.value for x in Kind)}, got {kind!r}") from None
        return self._declare(Tensor(name, tuple(shape), k, bytes_per_value, role),  # type: ignore[arg-type]
                             count, block)

    def weight(self, name: str, shape: Sequence[object], *, bytes_per_value: object = _b) -> Tensor:
        """A parameter tensor (kind ``weight``)."""
        return self.input(name, shape, kind=Kind.WEIGHT, bytes_per_value=bytes_per_value)

    def kv_cache(self, name: str, shape: Sequence[object], *, bytes_per_value: object = _b) -> Tensor:
        """Cached keys or values (kind ``kv_cache``)."""
        return self.input(name, shape, kind=Kind.KV_CACHE, bytes_per_value=bytes_per_value)

    def add(self, op: Op, *, count: object | None = None, block: str | None = None) -> Op:
        """Add an op whose operands are already tensors of this graph (or new outputs).

        ``count`` and ``block`` default to the enclosing ``repeat`` scope; new output
        tensors get the same count.
        """
        if not isinstance(op, Op) or type(op) is Op:
            raise SymroofError(f"graph {self.name!r}: expected an op, got {op!r}")
        cnt = None if count is None else as_dim(count, f"op {op.name!r} count")
        what = f"{type(op).__name__.lower()} {op.name!r}"
        for t in op.inputs:
            if t not in self.nx:
                raise SymroofError(f"{what}: input {t.name!r} is not a tensor of graph "
                                   f"{self.name!r} (declare it with input(), weight() or kv_cache())")
        if f"op {op.name}" in self._names:
            raise SymroofError(f"graph {self.name!r}: 'op {op.name}' is defined twice")
        for t in op.outputs:  # check every output before changing anything
            if t in self.nx:
                if self.producer(t) is not None or t in self._inputs:
                    raise SymroofError(f"{what}: output {t.name!r} already has a producer")
            elif f"tensor {t.name}" in self._names:
                raise SymroofError(f"graph {self.name!r}: 'tensor {t.name}' is defined twice")
        self._add_node(op, cnt, block)
        for t in op.inputs:  # a read inherits the tensor's read crossings (set_crossings)
            self.nx.add_edge(t, op, crossings=self.nx.nodes[t].get("reads", sp.Integer(1)))
        for t in op.outputs:
            if t not in self.nx:
                self._add_node(t, cnt, block)
            self.nx.add_edge(op, t, crossings=sp.Integer(1))
        return op

    def _out(self, name: str, shape: Sequence[sp.Expr], like: Sequence[Tensor],
             kind: Kind | str | None, bytes_per_value: object | None) -> Tensor:
        acts = [t for t in like if t.kind == Kind.ACTIVATION] or list(like)
        return Tensor(name, tuple(shape), Kind(kind) if kind else Kind.ACTIVATION,
                      acts[0].bytes_per_value if bytes_per_value is None else bytes_per_value)

    def gemm(self, a: Tensor, b: Tensor, *, name: str, transpose_a: bool = False,
             transpose_b: bool = False, work_fraction: object = 1, kind: Kind | str | None = None,
             bytes_per_value: object | None = None) -> Tensor:
        """``a @ b`` (batched over leading dims); returns the output tensor named ``name``."""
        for t in (a, b):
            if len(t.shape) < 2:
                raise SymroofError(f"gemm {name!r}: operand {t.name!r} has rank {len(t.shape)}, "
                                   "expected >= 2")
        m = a.shape[-1] if transpose_a else a.shape[-2]
        n = b.shape[-2] if transpose_b else b.shape[-1]
        shape = (*(a.shape[:-2] or b.shape[:-2]), m, n)
        out = self._out(name, shape, (a, b), kind, bytes_per_value)
        self.add(Gemm(name, a, b, out, transpose_a, transpose_b, work_fraction))
        return out

    def elementwise(self, *xs: Tensor, name: str, flops_per_element: object = 1,
                    shape: Sequence[object] | None = None, kind: Kind | str | None = None,
                    bytes_per_value: object | None = None, linear: bool = False,
                    saves: Saves | str | None = None) -> Tensor:
        """An elementwise op over ``xs`` (output shape: the first input's, unless given)."""
        if not xs:
            raise SymroofError(f"elementwise {name!r}: expected at least one input")
        out = self._out(name, xs[0].shape if shape is None else shape, xs, kind, bytes_per_value)
        self.add(Elementwise(name, tuple(xs), out, flops_per_element, linear, saves))  # type: ignore[arg-type]
        return out

    def reduce(self, x: Tensor, *, name: str, axis: int = -1, flops_per_element: object = 1,
               keepdims: bool = False, bytes_per_value: object | None = None) -> Tensor:
        """Fold one axis of ``x``."""
        rank = len(x.shape)
        if not -rank <= axis < rank:
            raise SymroofError(f"reduce {name!r}: axis {axis} out of range for {x.name!r} "
                               f"of rank {rank}")
        ax = axis % rank
        shape = (*x.shape[:ax], *((1,) if keepdims else ()), *x.shape[ax + 1:])
        out = self._out(name, shape, (x,), None, bytes_per_value)
        self.add(Reduce(name, x, out, axis, flops_per_element))
        return out

    def gather(self, table: Tensor, rows: Sequence[object], *, name: str,
               bytes_per_value: object | None = None) -> Tensor:
        """Look up rows of ``table``; ``rows`` is the index shape, e.g. ``(B, S)``."""
        out = Tensor(name, (*tuple(rows), *table.shape[1:]), Kind.ACTIVATION,
                     table.bytes_per_value if bytes_per_value is None else bytes_per_value)
        self.add(Gather(name, table, out))
        return out

    def move(self, *xs: Tensor, name: str, shape: Sequence[object],
             kind: Kind | str | None = None, bytes_per_value: object | None = None,
             read_fraction: object = 1) -> Tensor:
        """Copy or rearrange ``xs`` into a new tensor of ``shape`` (no FLOPs)."""
        out = self._out(name, shape, xs, kind, bytes_per_value)
        self.add(Move(name, tuple(xs), out, read_fraction))
        return out

    def view(self, x: Tensor, shape: Sequence[object], *, name: str) -> Tensor:
        """``x`` reinterpreted with ``shape`` (same values, no traffic)."""
        out = Tensor(name, tuple(shape), x.kind, x.bytes_per_value)
        self.add(View(name, x, out))
        return out

    def output(self, *tensors: Tensor) -> None:
        """Mark tensors as results of the graph."""
        for t in tensors:
            if t not in self.nx:
                raise SymroofError(f"graph {self.name!r}: output {t.name!r} is not in the graph")
            self._outputs.append(t)

    def set_crossings(self, tensor: Tensor, *, writes: object | None = None,
                      reads: object | None = None) -> None:
        """How often ``tensor`` crosses the boundary: per write, and per read by each consumer.

        ``0`` keeps it on chip in that direction; the default 1 is compulsory traffic.
        Consumers added later read it at the same crossing count.
        """
        if not isinstance(tensor, Tensor):
            raise SymroofError(f"graph {self.name!r}: set_crossings expects a tensor, got "
                               f"{type(tensor).__name__} {getattr(tensor, 'name', tensor)!r}")
        if tensor not in self.nx:
            raise SymroofError(f"graph {self.name!r}: no tensor {tensor.name!r}")
        if writes is not None:
            w = as_expr(writes, f"tensor {tensor.name!r} writes")
            for op in self.nx.predecessors(tensor):
                self.nx.edges[op, tensor]["crossings"] = w
        if reads is not None:
            r = as_expr(reads, f"tensor {tensor.name!r} reads")
            self.nx.nodes[tensor]["reads"] = r
            for op in self.nx.successors(tensor):
                self.nx.edges[tensor, op]["crossings"] = r

    # -- provenance --------------------------------------------------------

    @property
    def provenance(self) -> Provenance:
        """What the builder and passes recorded about this graph (typed, immutable)."""
        return self._provenance

    def record(self, **changes: object) -> None:
        """Replace fields of this graph's provenance (a pass calls it on its copy)."""
        try:
            self._provenance = dataclasses.replace(self._provenance, **changes)  # type: ignore[arg-type]
        except TypeError as exc:
            raise SymroofError(f"graph {self.name!r}: cannot record {exc}") from None

    # -- queries -----------------------------------------------------------

    @property
    def inputs(self) -> tuple[Tensor, ...]:
        """Tensors declared with input(), weight() or kv_cache(), in declaration order."""
        return tuple(self._inputs)

    @property
    def outputs(self) -> tuple[Tensor, ...]:
        """Tensors marked with output()."""
        return tuple(self._outputs)

    def count(self, node: Node) -> sp.Expr:
        """How many times ``node`` occurs (the product of its enclosing repeat counts)."""
        return self.nx.nodes[node]["count"]

    def block(self, node: Node) -> str:
        """The repeat blocks around ``node``, outermost first ("layer", "" for none)."""
        return self.nx.nodes[node]["block"]

    def crossings(self, src: Node, dst: Node) -> sp.Expr:
        """The crossing factor of the read (tensor -> op) or write (op -> tensor) edge."""
        return self.nx.edges[src, dst]["crossings"]

    def set_edge_crossings(self, src: Node, dst: Node, value: object) -> None:
        """Set the crossing factor of one read (tensor -> op) or write (op -> tensor)."""
        if not self.nx.has_edge(src, dst):
            raise SymroofError(f"graph {self.name!r}: no edge {src.name!r} -> {dst.name!r}")
        self.nx.edges[src, dst]["crossings"] = as_expr(value, f"edge {src.name!r} -> {dst.name!r}")

    def producer(self, tensor: Tensor) -> Op | None:
        """The op that writes ``tensor`` (None for an input)."""
        preds = list(self.nx.predecessors(tensor))
        return preds[0] if preds else None

    def consumers(self, tensor: Tensor) -> tuple[Op, ...]:
        """The ops that read ``tensor``."""
        return tuple(self.nx.successors(tensor))

    def node(self, name: str) -> Node:
        """The op or tensor called ``name`` (ops first)."""
        for key in (f"op {name}", f"tensor {name}"):
            if key in self._names:
                return self._names[key]
        raise SymroofError(f"graph {self.name!r}: no op or tensor named {name!r}")

    @property
    def ops(self) -> tuple[Op, ...]:
        """Ops in a deterministic topological order (validates first)."""
        self.validate()
        order = self._sorted()
        assert order is not None  # validate() refused a cycle
        return tuple(n for n in order if isinstance(n, Op))

    def ops_in_order(self) -> tuple[Op, ...]:
        """Ops in the order they were added (a builder's reading order; a topological
        order too, since an op is added after the ops whose outputs it reads)."""
        self.validate()
        return tuple(n for n in self.nx.nodes if isinstance(n, Op))

    def _sorted(self) -> tuple[Node, ...] | None:
        """Every node in topological order, ties broken by name (None for a cycle),
        sorted once per version of the nx graph."""
        at = version(self.nx)
        if at is not None and self._order is not None and self._order[0] is self.nx \
                and self._order[1] == at:
            return self._order[2]
        order: tuple[Node, ...] | None = topological_order(  # type: ignore[assignment]
            self.nx, key=_name)
        if at is not None:
            self._order = (self.nx, at, order)
        return order

    @property
    def tensors(self) -> tuple[Tensor, ...]:
        """Every tensor of the graph."""
        return tuple(n for n in self.nx.nodes if isinstance(n, Tensor))

    def validate(self) -> None:
        """Raise SymroofError naming the node if the graph is malformed (a graph that
        passed is not checked again until a node or an edge changes)."""
        at = version(self.nx)
        key = None if at is None else (self.nx, at, len(self._inputs))
        if key is not None and self._valid is not None and self._valid[0] is self.nx \
                and self._valid[1:] == key[1:]:
            return
        if self._sorted() is None:
            cycle = nx.find_cycle(self.nx)
            names = " -> ".join(u.name for u, _ in cycle)
            raise SymroofError(f"graph {self.name!r}: cycle through {names}")
        declared = set(self._inputs)
        pred = self.nx.pred
        for t in self.tensors:
            if t not in declared and not pred[t]:
                raise SymroofError(f"graph {self.name!r}: tensor {t.name!r} has no producer "
                                   "and is not declared as an input")
        self._valid = key

    def copy(self, name: str | None = None) -> Graph:
        """An independent copy (passes change copies, never the graph they are given)."""
        g = Graph(self.name if name is None else name)
        g.nx = self.nx.copy()
        g._inputs = list(self._inputs)
        g._outputs = list(self._outputs)
        g._names = dict(self._names)
        g._provenance = self._provenance  # immutable: passes replace it, never change it
        return g

    def __repr__(self) -> str:
        n_ops = sum(isinstance(x, Op) for x in self.nx.nodes)
        return f"Graph({self.name!r}, {n_ops} ops, {len(self.tensors)} tensors)"


def _name(node: Node) -> str:
    return node.name


def require_graph(value: object, where: str) -> Graph:
    """``value`` if it is a Graph; a SymroofError naming ``where`` otherwise."""
    if not isinstance(value, Graph):
        raise SymroofError(f"{where}: expected a symroof Graph, got {type(value).__name__}")
    return value

"""The IR: frozen tensor and op nodes, and a Graph of them with multiplicities.

Nodes are plain data (frozen dataclasses with SymPy fields) used as networkx node keys.
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
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import ClassVar, Union

import networkx as nx
import sympy as sp

from symroof.errors import SymroofError
from symroof.symbols import b as _b

__all__ = [
    "Kind", "OpGroup", "Tensor", "Op", "Gemm", "Elementwise", "Reduce", "Gather", "Move", "View",
    "Graph", "as_expr", "as_dim", "prod",
]

Node = Union["Tensor", "Op"]


class Kind(StrEnum):
    """What a tensor holds; traffic conventions select tensors by kind."""

    WEIGHT = "weight"                    # parameters, read by the forward pass
    ACTIVATION = "activation"            # inputs and intermediates of the computation
    KV_CACHE = "kv_cache"                # keys and values kept across decode steps
    GRADIENT = "gradient"                # gradients of the loss (training)
    OPTIMIZER_STATE = "optimizer_state"  # master weights, moments (training)


class OpGroup(StrEnum):
    """Op families; cost conventions select ops by group, not by class."""

    CONTRACTION = "contraction"      # sums of products over a shared index (GEMM, conv as GEMM)
    ELEMENTWISE = "elementwise"      # one output per element from aligned inputs
    REDUCTION = "reduction"          # folds one axis (softmax denominators, norms)
    DATA_MOVEMENT = "data_movement"  # copies and rearranges values, no arithmetic


# ---------------------------------------------------------------------------
# leaf helpers


def as_expr(value: object, what: str) -> sp.Expr:
    """A SymPy number or expression from a Python number or SymPy object (never text)."""
    if isinstance(value, bool):
        raise SymroofError(f"{what}: expected a number or SymPy expression, got {value!r}")
    if isinstance(value, int):
        return sp.Integer(value)
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise SymroofError(f"{what}: expected a finite number, got {value!r}")
        return sp.Rational(repr(value))
    if isinstance(value, sp.Basic) and isinstance(value, sp.Expr):
        return value
    raise SymroofError(f"{what}: expected a number or SymPy expression, got {value!r}")


def as_dim(value: object, what: str) -> sp.Expr:
    """A dimension: a positive integer, or an expression not known to be otherwise."""
    expr = as_expr(value, what)
    if expr.is_number:
        if not (expr.is_integer and expr.is_positive):
            raise SymroofError(f"{what}: expected a positive integer dimension, got {expr}")
    elif expr.is_positive is False or expr.is_integer is False:
        raise SymroofError(
            f"{what}: expected a positive integer dimension, got {expr} "
            "(use symbols from symroof.symbols, which are positive integers)")
    return expr


def _as_bytes(value: object, what: str) -> sp.Expr:
    expr = as_expr(value, what)
    if expr.is_positive is False or expr.is_zero or (expr.is_number and not expr.is_positive):
        raise SymroofError(f"{what}: expected positive bytes per value, got {expr}")
    return expr


def prod(values: Iterable[sp.Expr]) -> sp.Expr:
    """The product of dimensions (1 for none)."""
    return sp.Mul(*values)


def _same(a: sp.Expr, c: sp.Expr) -> bool:
    return a == c or sp.expand(a - c) == 0


def _shape(shape: Sequence[object], what: str) -> tuple[sp.Expr, ...]:
    if isinstance(shape, (str, bytes)) or not isinstance(shape, Sequence):
        raise SymroofError(f"{what}: expected a shape (a tuple of dimensions), got {shape!r}")
    return tuple(as_dim(d, f"{what} dimension {i}") for i, d in enumerate(shape))


def _fmt(shape: Sequence[sp.Expr]) -> str:
    return "(" + ", ".join(str(d) for d in shape) + ")"


# ---------------------------------------------------------------------------
# nodes


@dataclass(frozen=True)
class Tensor:
    """A value with a symbolic shape, a kind and bytes per value.

    >>> from symroof.symbols import M, K
    >>> Tensor("A", (M, K), Kind.ACTIVATION, 2).nbytes
    2*K*M
    """

    name: str
    shape: tuple[sp.Expr, ...]
    kind: Kind = Kind.ACTIVATION
    bytes_per_value: sp.Expr = _b

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise SymroofError(f"tensor name: expected a non-empty string, got {self.name!r}")
        object.__setattr__(self, "shape", _shape(self.shape, f"tensor {self.name!r} shape"))
        try:
            object.__setattr__(self, "kind", Kind(self.kind))
        except ValueError:
            raise SymroofError(
                f"tensor {self.name!r} kind: expected one of "
                f"{', '.join(k.value for k in Kind)}, got {self.kind!r}") from None
        object.__setattr__(self, "bytes_per_value",
                           _as_bytes(self.bytes_per_value, f"tensor {self.name!r} bytes_per_value"))

    @property
    def numel(self) -> sp.Expr:
        """Number of values."""
        return prod(self.shape)

    @property
    def nbytes(self) -> sp.Expr:
        """Size in bytes."""
        return self.numel * self.bytes_per_value

    def __repr__(self) -> str:
        return f"Tensor({self.name!r}, {_fmt(self.shape)}, {self.kind.value})"


@dataclass(frozen=True)
class Op:
    """Base of all ops: a name; subclasses name their operand fields, write ``out``, and
    belong to a group."""

    name: str
    group: ClassVar[OpGroup]
    operands: ClassVar[tuple[str, ...]] = ()  # fields holding inputs (a tuple field: several)

    @property
    def inputs(self) -> tuple[Tensor, ...]:
        found: list[Tensor] = []
        for f in self.operands:
            value = getattr(self, f)
            found.extend(value if isinstance(value, tuple) else (value,))
        return tuple(found)

    @property
    def outputs(self) -> tuple[Tensor, ...]:
        return (self.out,)  # type: ignore[attr-defined]

    def _fail(self, message: str) -> SymroofError:
        return SymroofError(f"{type(self).__name__.lower()} {self.name!r}: {message}")


@dataclass(frozen=True)
class Gemm(Op):
    """``out[..., m, n] = sum_k a[..., m, k] * b[..., k, n]``, batched over leading dims.

    ``work_fraction`` is the fraction of the ``batch*M*N*K`` multiply-adds performed:
    1 for a dense product, 1/2 where a causal mask lets a kernel skip the masked half.
    """

    a: Tensor = None  # type: ignore[assignment]
    b: Tensor = None  # type: ignore[assignment]
    out: Tensor = None  # type: ignore[assignment]
    transpose_a: bool = False
    transpose_b: bool = False
    work_fraction: sp.Expr = sp.Integer(1)
    group: ClassVar[OpGroup] = OpGroup.CONTRACTION
    operands: ClassVar[tuple[str, ...]] = ("a", "b")

    def __post_init__(self) -> None:
        object.__setattr__(self, "work_fraction",
                           as_expr(self.work_fraction, f"gemm {self.name!r} work_fraction"))
        batch, m, n, k = self.dims
        if tuple(self.out.shape) != (*batch, m, n) and not (
                len(self.out.shape) == len(batch) + 2
                and all(_same(x, y) for x, y in zip(self.out.shape, (*batch, m, n)))):
            raise self._fail(f"output {self.out.name!r} has shape {_fmt(self.out.shape)}, "
                             f"expected {_fmt((*batch, m, n))}")

    @property
    def dims(self) -> tuple[tuple[sp.Expr, ...], sp.Expr, sp.Expr, sp.Expr]:
        """(batch dims, M, N, K), validated: ranks, inner dimensions, batch dims."""
        for t in (self.a, self.b):
            if len(t.shape) < 2:
                raise self._fail(f"operand {t.name!r} has rank {len(t.shape)}, expected >= 2")
        *batch_a, m, ka = self.a.shape
        if self.transpose_a:
            m, ka = ka, m
        *batch_b, kb, n = self.b.shape
        if self.transpose_b:
            kb, n = n, kb
        if not _same(ka, kb):
            raise self._fail(f"inner dimensions differ: {self.a.name!r} has {ka}, "
                             f"{self.b.name!r} has {kb}")
        if batch_a and batch_b and (len(batch_a) != len(batch_b) or not all(
                _same(x, y) for x, y in zip(batch_a, batch_b))):
            raise self._fail(f"batch dimensions differ: {_fmt(batch_a)} vs {_fmt(batch_b)}")
        return tuple(batch_a or batch_b), m, n, ka


@dataclass(frozen=True)
class Elementwise(Op):
    """One output value per element from inputs of the output's shape (or broadcast).

    ``linear`` marks a sum of its inputs (a residual or bias add): its gradient needs no
    saved input values.
    """

    xs: tuple[Tensor, ...] = ()
    out: Tensor = None  # type: ignore[assignment]
    flops_per_element: sp.Expr = sp.Integer(1)
    linear: bool = False
    group: ClassVar[OpGroup] = OpGroup.ELEMENTWISE
    operands: ClassVar[tuple[str, ...]] = ("xs",)

    def __post_init__(self) -> None:
        object.__setattr__(self, "flops_per_element", as_expr(
            self.flops_per_element, f"elementwise {self.name!r} flops_per_element"))
        if not self.xs:
            raise self._fail("expected at least one input")
        for x in self.xs:
            if len(x.shape) > len(self.out.shape) or not all(
                    d == 1 or _same(d, o) for d, o in zip(reversed(x.shape), reversed(self.out.shape))):
                raise self._fail(f"input {x.name!r} of shape {_fmt(x.shape)} does not broadcast "
                                 f"to the output shape {_fmt(self.out.shape)}")


@dataclass(frozen=True)
class Reduce(Op):
    """Folds axis ``axis`` of ``x``; ``flops_per_element`` per input element."""

    x: Tensor = None  # type: ignore[assignment]
    out: Tensor = None  # type: ignore[assignment]
    axis: int = -1
    flops_per_element: sp.Expr = sp.Integer(1)
    group: ClassVar[OpGroup] = OpGroup.REDUCTION
    operands: ClassVar[tuple[str, ...]] = ("x",)

    def __post_init__(self) -> None:
        object.__setattr__(self, "flops_per_element", as_expr(
            self.flops_per_element, f"reduce {self.name!r} flops_per_element"))
        rank = len(self.x.shape)
        if not -rank <= self.axis < rank:
            raise self._fail(f"axis {self.axis} out of range for {self.x.name!r} of rank {rank}")
        axis = self.axis % rank
        kept = (*self.x.shape[:axis], *self.x.shape[axis + 1:])
        keepdims = (*self.x.shape[:axis], 1, *self.x.shape[axis + 1:])
        if self.out.shape not in (kept, keepdims):
            raise self._fail(f"output shape {_fmt(self.out.shape)}, expected {_fmt(kept)}")


@dataclass(frozen=True)
class Gather(Op):
    """Rows of ``table`` picked by index (an embedding lookup): only those rows are read."""

    table: Tensor = None  # type: ignore[assignment]
    out: Tensor = None  # type: ignore[assignment]
    group: ClassVar[OpGroup] = OpGroup.DATA_MOVEMENT
    operands: ClassVar[tuple[str, ...]] = ("table",)

    def __post_init__(self) -> None:
        row = self.table.shape[1:]
        if len(self.out.shape) < len(row) or not all(
                _same(x, y) for x, y in zip(self.out.shape[len(self.out.shape) - len(row):], row)):
            raise self._fail(f"output shape {_fmt(self.out.shape)} must end in the table's "
                             f"row shape {_fmt(row)}")

    @property
    def rows(self) -> sp.Expr:
        """How many rows are looked up."""
        return prod(self.out.shape[: len(self.out.shape) - len(self.table.shape) + 1])


@dataclass(frozen=True)
class Move(Op):
    """Copies or rearranges values (im2col, a slice, a KV-cache append): no arithmetic.

    Each input is read once (``read_fraction`` of it: a slice of the last position reads
    1/S of its input) and the output written once.
    """

    xs: tuple[Tensor, ...] = ()
    out: Tensor = None  # type: ignore[assignment]
    read_fraction: sp.Expr = sp.Integer(1)
    group: ClassVar[OpGroup] = OpGroup.DATA_MOVEMENT
    operands: ClassVar[tuple[str, ...]] = ("xs",)

    def __post_init__(self) -> None:
        if not self.xs:
            raise self._fail("expected at least one input")
        object.__setattr__(self, "read_fraction",
                           as_expr(self.read_fraction, f"move {self.name!r} read_fraction"))


@dataclass(frozen=True)
class View(Op):
    """The same values under another shape (a reshape or head split): no FLOPs, no traffic."""

    x: Tensor = None  # type: ignore[assignment]
    out: Tensor = None  # type: ignore[assignment]
    group: ClassVar[OpGroup] = OpGroup.DATA_MOVEMENT
    operands: ClassVar[tuple[str, ...]] = ("x",)

    def __post_init__(self) -> None:
        if not _same(self.x.numel, self.out.numel):
            raise self._fail(f"{self.x.name!r} has {self.x.numel} values, the view "
                             f"{_fmt(self.out.shape)} has {self.out.numel}")


# ---------------------------------------------------------------------------
# graph


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
        self.nx = nx.DiGraph()
        self._inputs: list[Tensor] = []
        self._outputs: list[Tensor] = []
        self._names: dict[str, Node] = {}
        self._scope = _Scope()
        self.meta: dict[str, object] = {}

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
              block: str | None = None) -> Tensor:
        """A tensor that comes from outside the graph (read from memory by its consumers).

        ``count`` and ``block`` default to the enclosing ``repeat`` scope.
        """
        try:
            k = Kind(kind)
        except ValueError:
            raise SymroofError(f"input {name!r} kind: expected one of "
                               f"{', '.join(x.value for x in Kind)}, got {kind!r}") from None
        return self._declare(Tensor(name, tuple(shape), k, bytes_per_value), count, block)

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
                    bytes_per_value: object | None = None, linear: bool = False) -> Tensor:
        """An elementwise op over ``xs`` (output shape: the first input's, unless given)."""
        if not xs:
            raise SymroofError(f"elementwise {name!r}: expected at least one input")
        out = self._out(name, xs[0].shape if shape is None else shape, xs, kind, bytes_per_value)
        self.add(Elementwise(name, tuple(xs), out, flops_per_element, linear))
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
        order = nx.lexicographical_topological_sort(self.nx, key=lambda n: n.name)
        return tuple(n for n in order if isinstance(n, Op))

    @property
    def tensors(self) -> tuple[Tensor, ...]:
        """Every tensor of the graph."""
        return tuple(n for n in self.nx.nodes if isinstance(n, Tensor))

    def validate(self) -> None:
        """Raise SymroofError naming the node if the graph is malformed."""
        if not nx.is_directed_acyclic_graph(self.nx):
            cycle = nx.find_cycle(self.nx)
            names = " -> ".join(u.name for u, _ in cycle)
            raise SymroofError(f"graph {self.name!r}: cycle through {names}")
        declared = set(self._inputs)
        for t in self.tensors:
            if t not in declared and self.producer(t) is None:
                raise SymroofError(f"graph {self.name!r}: tensor {t.name!r} has no producer "
                                   "and is not declared as an input")

    def copy(self, name: str | None = None) -> Graph:
        """An independent copy (passes change copies, never the graph they are given)."""
        g = Graph(self.name if name is None else name)
        g.nx = self.nx.copy()
        g._inputs = list(self._inputs)
        g._outputs = list(self._outputs)
        g._names = dict(self._names)
        g.meta = dict(self.meta)
        return g

    def __repr__(self) -> str:
        n_ops = sum(isinstance(x, Op) for x in self.nx.nodes)
        return f"Graph({self.name!r}, {n_ops} ops, {len(self.tensors)} tensors)"

"""The sharding pass: one device's share of a graph under tensor and pipeline parallelism,
with the communication it costs.

Tensor parallelism over ``t`` devices splits weights, heads and KV heads as Megatron does
(:mod:`symroof.passes.tensor_parallel`: column- then row-parallel GEMMs, heads split,
KV heads replicated when ``t`` exceeds them, vocab-parallel embedding and LM head) and
adds a :class:`Collective` wherever partial sums must be summed: two all-reduces per
transformer layer (after attention's output projection and after the MLP), one after
the embedding lookup, and an all-gather of the logits. A ring all-reduce of ``n`` bytes
sends ``2(t-1)/t n`` bytes from each device, an all-gather of ``n`` bytes ``(t-1)/t n``;
those bytes are a tensor kind of their own (``Kind.COMMUNICATION``), so that they are a
roof of their own (the link), never counted as memory traffic.

Pipeline parallelism over ``p`` stages keeps the graph of the last stage, the busiest:
``L/p`` of each repeated block (rounded up where ``p`` does not divide), the final norm
and the LM head; what ran before the first block (the embedding) is on the first stage,
and this stage receives the activations entering its layers from the previous one (a
point-to-point send). The graph is one micro-batch; a step runs ``microbatches`` of
them, and a synchronous step takes ``(m + p - 1)`` micro-batch times, a bubble of
``(p - 1)/(m + p - 1)``.

>>> from symroof.symbols import B, D
>>> from symroof.ir import Graph
>>> from symroof.analysis import analyze
>>> g = Graph("mlp")
>>> h = g.gemm(g.input("x", (B, D)), g.weight("W_up", (D, 4 * D)), name="up")
>>> g.output(g.gemm(h, g.weight("W_down", (4 * D, D)), name="down"))
>>> a = analyze(shard(g, tp=4))
>>> a.cost.bytes_by_kind[Kind.COMMUNICATION]          # ring: 2 (4 - 1)/4 of B D b
3*B*D*b/2
>>> sharding(a.graph)
Sharding(tp=4, pp=1, microbatches=1)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from enum import StrEnum

import networkx as nx
import sympy as sp

from symroof.cost import MEMORY_KINDS
from symroof.errors import SymroofError
from symroof.ir import Gather, Graph, Kind, Op, Tensor, as_dim, as_expr, require_graph
from symroof.ir.collective import Collective, CollectiveKind  # in the IR; re-exported here
from symroof.ir.provenance import FusedGroup
from symroof.options import option
from symroof.passes.tensor_parallel import TensorParallelPlan, tensor_parallel_plan

__all__ = ["Shard", "shard", "Collective", "CollectiveKind", "CollectiveAlgorithm",
           "Sharding", "sharding", "stage_layers", "collective_terms", "MEMORY_KINDS"]

_ONE = sp.Integer(1)

#: Tensor kinds whose bytes cross the memory boundary: every kind but communication,
#: which crosses a link (a roof of its own). Count these as Q of a sharded graph.


class CollectiveAlgorithm(StrEnum):
    """How a collective's bytes travel (option ``collective``; default ring), after NCCL's
    tuning model (src/graph/tuning.cc) and its bus-bandwidth conventions (nccl-tests
    PERFORMANCE.md). Per device, for an all-reduce of ``n`` bytes over ``t`` devices:

    - ``ring``: sends 2(t-1)/t n in 2(t-1) steps (an all-gather: (t-1)/t n in t-1);
    - ``tree``: NCCL's tree (all-reduce only; other collectives run as a ring): its
      algorithm bandwidth is half the bus bandwidth, 2n sent, in 2(t-1) steps within a node;
    - ``full``: each device sends the full payload, n, in one step (the simple count
      several published analyses use).
    """

    RING = "ring"
    TREE = "tree"
    FULL = "full"


def _algorithm_terms(kind: CollectiveKind, algorithm: CollectiveAlgorithm,
                     t: sp.Expr) -> tuple[sp.Expr, sp.Expr]:
    """(bytes sent per byte of the payload, latency steps) of one collective."""
    if kind is CollectiveKind.SEND:
        return _ONE, _ONE
    if algorithm is CollectiveAlgorithm.FULL:
        return _ONE, _ONE
    if kind is CollectiveKind.ALL_REDUCE:
        factor = 2 * (t - 1) / t if algorithm is CollectiveAlgorithm.RING else sp.Integer(2)
        return factor, 2 * (t - 1)
    return (t - 1) / t, t - 1                      # all-gather: a ring in NCCL


def collective_terms(graph: Graph, algorithm: CollectiveAlgorithm | str = "ring"
                     ) -> tuple[sp.Expr, sp.Expr, sp.Expr]:
    """(bytes each device sends, latency steps, collectives) of a sharded graph's
    collectives under ``algorithm``, each collective times the repeats it runs in.

    >>> from symroof.symbols import B, D
    >>> from symroof.ir import Graph
    >>> g = Graph("mlp")
    >>> h = g.gemm(g.input("x", (B, D)), g.weight("W_up", (D, 4 * D)), name="up")
    >>> g.output(g.gemm(h, g.weight("W_down", (4 * D, D)), name="down"))
    >>> collective_terms(shard(g, tp=4), "ring")   # one all-reduce of B D b
    (3*B*D*b/2, 6, 1)
    >>> collective_terms(shard(g, tp=4), "full")[:2]
    (B*D*b, 1)
    """
    alg = option(CollectiveAlgorithm, algorithm, "collective")
    sent, steps, count = [], [], []
    for op in require_graph(graph, "collective_terms").ops:
        if not isinstance(op, Collective):
            continue
        n = graph.count(op.wire)
        factor, k = _algorithm_terms(op.kind, alg, op.tp)
        sent.append(n * op.wire.nbytes * factor)
        steps.append(n * k)
        count.append(n)
    return (sp.expand(sp.Add(*sent)), sp.expand(sp.Add(*steps)), sp.expand(sp.Add(*count)))


@dataclass(frozen=True)
class Sharding:
    """The layout a sharded graph runs under: tensor-parallel degree, pipeline stages,
    and micro-batches per step."""

    tp: sp.Expr = _ONE
    pp: sp.Expr = _ONE
    microbatches: sp.Expr = _ONE

    def __post_init__(self) -> None:
        for f in ("tp", "pp", "microbatches"):
            object.__setattr__(self, f, as_dim(getattr(self, f), f"sharding {f}"))

    @property
    def devices(self) -> sp.Expr:
        """tp x pp."""
        return self.tp * self.pp

    @property
    def bubble(self) -> sp.Expr:
        """(p - 1)/(m + p - 1): the idle fraction of a synchronous pipelined step."""
        return (self.pp - 1) / (self.microbatches + self.pp - 1)

    def __repr__(self) -> str:
        return f"Sharding(tp={self.tp}, pp={self.pp}, microbatches={self.microbatches})"


def sharding(graph: Graph) -> Sharding:
    """The layout recorded in ``graph``'s collectives (tp = pp = 1 when it has none)."""
    for op in require_graph(graph, "sharding").ops:
        if isinstance(op, Collective):
            return Sharding(op.tp, op.pp, op.microbatches)
    return Sharding()


def stage_layers(count: sp.Expr, pp: sp.Expr) -> sp.Expr:
    """Layers of a block of ``count`` on the busiest of ``pp`` stages: ceil(count/pp)."""
    q = count / pp
    return sp.ceiling(q) if q.is_number else q


@dataclass(frozen=True)
class Shard:
    """One device's share of a graph (a Graph -> Graph pass); see the module docstring.

    ``pins`` fixes the tensor-parallel split of named tensors, ``((name, ((axis,
    divisor), ...)), ...)``, for graphs whose reshapes the builder's names do not cover.
    """

    tp: sp.Expr = _ONE
    pp: sp.Expr = _ONE
    microbatches: sp.Expr = _ONE
    pins: tuple[tuple[str, tuple[tuple[int, sp.Expr], ...]], ...] = ()
    name: str = "shard"

    def __post_init__(self) -> None:
        for f in ("tp", "pp", "microbatches"):
            value = getattr(self, f)
            try:
                object.__setattr__(self, f, as_dim(value, f"shard {f}"))
            except SymroofError:
                raise SymroofError(f"shard {f}: expected a positive integer, got "
                                   f"{value!r}") from None
        if self.microbatches != 1 and self.pp == 1:
            raise SymroofError("shard microbatches: only with pipeline parallelism (pp > 1)")

    def apply(self, graph: Graph) -> Graph:
        """A new graph; ``graph`` is not changed."""
        g = require_graph(graph, "shard")
        if g.provenance.training is not None:
            raise SymroofError(f"shard: graph {g.name!r} has a backward pass; shard the "
                               "forward graph, then run backward")
        if any(isinstance(op, Collective) for op in g.ops):
            raise SymroofError(f"shard: graph {g.name!r} is sharded already")
        if self.tp == 1 and self.pp == 1:
            return g.copy()
        skip, entry, notes = _pipeline(g, self.pp)
        plan = tensor_parallel_plan(g, self.tp, skip=frozenset(skip),
                                    pins={n: dict(a) for n, a in self.pins}) \
            if self.tp != 1 else TensorParallelPlan(self.tp, {}, (), ())
        return _Rebuild(g, self, plan, skip, entry, (*notes, *plan.assumptions)).run()


def _pipeline(g: Graph, pp: sp.Expr) -> tuple[set[str], Tensor | None, tuple[str, ...]]:
    """The ops of earlier stages (what runs before the first repeated block) and the
    activation entering the layers, for ``pp > 1``."""
    if pp == 1:
        return set(), None, ()
    counts: dict[str, sp.Expr] = {}
    for op in g.ops:
        if g.block(op):
            counts.setdefault(g.block(op), g.count(op))
    if not counts:
        raise SymroofError(f"shard pp={pp}: graph {g.name!r} has no repeated layers to split")
    total = sp.Add(*counts.values())
    if (total - pp).is_negative:
        raise SymroofError(f"shard pp={pp}: more stages than the {total} layers of "
                           f"graph {g.name!r} (expected 1 to {total})")
    entries = sorted({t for t in g.tensors if not g.block(t) and t.kind == Kind.ACTIVATION
                      and any(g.block(c) for c in g.consumers(t))}, key=lambda t: t.name)
    if len(entries) != 1:
        raise SymroofError(f"shard pp={pp}: graph {g.name!r} has {len(entries)} tensors "
                           "entering its layers; expected one")
    entry = entries[0]
    skip = {n.name for n in nx.ancestors(g.nx, entry) if isinstance(n, Op)}
    notes = tuple(f"pp={pp}: the last stage holds {stage_layers(c, pp)} of the {c} layers "
                  f"of block {blk!r}" + ("" if (c / pp).is_integer or not (c / pp).is_number
                                         else " (the busiest stage)")
                  for blk, c in sorted(counts.items()))
    return skip, entry, notes


class _Rebuild:
    """The sharded graph, built anew through the Graph API from the old one and a plan."""

    def __init__(self, old: Graph, shard: Shard, plan: TensorParallelPlan, skip: set[str],
                 entry: Tensor | None, notes: tuple[str, ...]) -> None:
        self.old, self.s, self.plan, self.skip, self.entry = old, shard, plan, skip, entry
        self.notes = notes
        self.g = Graph(old.name)
        self.new: dict[str, Tensor] = {}   # old tensor name -> its tensor on this device
        self.seen: dict[str, Tensor] = {}  # what consumers read: the reduced value if any

    def run(self) -> Graph:
        old, g = self.old, self.g
        kept = [op for op in old.ops if op.name not in self.skip]
        needed = {x for op in kept for x in op.inputs} | set(old.outputs)
        for x in old.inputs:
            if x in needed and x is not self.entry:
                self.new[x.name] = g.input(x.name, self._shape(x), kind=x.kind,
                                           bytes_per_value=x.bytes_per_value,
                                           count=self._count(old.count(x), old.block(x)),
                                           block=old.block(x), role=x.role)
                self.seen[x.name] = self.new[x.name]
        if self.entry is not None:
            self._receive(self.entry)
        for op in kept:
            self._op(op)
        self._crossings(kept)
        outs = [self._final(x) for x in old.outputs]
        g.output(*outs)
        g.record(fused=tuple(self._fused(f) for f in old.provenance.fused),
                 tiles=old.provenance.tiles,
                 assumptions=(*old.provenance.assumptions,
                              *(n for n in self.notes if n not in old.provenance.assumptions)))
        return g

    # -- tensors -----------------------------------------------------------

    def _shape(self, x: Tensor) -> tuple[sp.Expr, ...]:
        axes = self.plan.splits.get(x.name, {})
        out = []
        for i, d in enumerate(x.shape):
            if i not in axes:
                out.append(d)
                continue
            q = d / axes[i]
            if q.is_number and not q.is_integer:
                q = sp.ceiling(q)  # a vocabulary padded to a multiple of the devices
            out.append(q)
        return tuple(out)

    def _count(self, count: sp.Expr, block: str) -> sp.Expr:
        return stage_layers(count, self.s.pp) if block else count

    def _tensor(self, x: Tensor) -> Tensor:
        if x.name not in self.new:
            self.new[x.name] = Tensor(x.name, self._shape(x), x.kind, x.bytes_per_value, x.role)
            self.seen[x.name] = self.new[x.name]
        return self.new[x.name]

    def _collective(self, kind: CollectiveKind, source: str, x: Tensor, out: Tensor,
                    count: sp.Expr, block: str) -> None:
        """``{source}:{kind}``, writing ``out`` and its bytes on the wire."""
        op = f"{source}:{kind.value}"
        wire = Tensor(f"{op}:bytes", out.shape if kind is not CollectiveKind.ALL_REDUCE
                      else x.shape, Kind.COMMUNICATION, x.bytes_per_value)
        self.g.add(Collective(op, x, out, wire, kind, self.s.tp, self.s.pp,
                              self.s.microbatches), count=count, block=block)

    def _receive(self, entry: Tensor) -> None:
        """The stage's input: the previous stage's activations, received."""
        shape = self._shape(entry)
        src = self.g.input(f"{entry.name}:previous_stage", shape, kind=Kind.ACTIVATION,
                           bytes_per_value=entry.bytes_per_value, count=self.old.count(entry),
                           block=self.old.block(entry))
        out = self._tensor(entry)
        self._collective(CollectiveKind.SEND, entry.name, src, out, self.old.count(entry),
                         self.old.block(entry))

    def _final(self, x: Tensor) -> Tensor:
        """A graph output as the device ends with it: whole logits are gathered."""
        if x.name not in self.plan.gather:
            return self.seen[x.name]
        full = Tensor(f"{x.name}:gathered", x.shape, x.kind, x.bytes_per_value, x.role)
        self._collective(CollectiveKind.ALL_GATHER, x.name, self.seen[x.name], full,
                         self._count(self.old.count(x), self.old.block(x)), self.old.block(x))
        return full

    # -- ops -----------------------------------------------------------------

    def _op(self, op: Op) -> None:
        old = self.old
        changes: dict[str, object] = {}
        for f in fields(op):
            value = getattr(op, f.name)
            if isinstance(value, Tensor):
                changes[f.name] = self.seen[value.name] if f.name in op.operands \
                    else self._tensor(value)
            elif isinstance(value, tuple) and value and all(isinstance(v, Tensor) for v in value):
                changes[f.name] = tuple(self.seen[v.name] for v in value)
        try:
            new = replace(op, **changes)  # type: ignore[arg-type]
        except SymroofError as err:
            raise SymroofError(f"shard: op {op.name!r} over tp={self.s.tp}: {err}") from None
        block = old.block(op)
        count = self._count(old.count(op), block)
        self.g.add(new, count=count, block=block)
        for y in op.outputs:
            if y.name in self.plan.reduce:
                part = self.new[y.name]
                whole = Tensor(f"{y.name}:reduced", part.shape, y.kind, y.bytes_per_value,
                               y.role)
                self._collective(CollectiveKind.ALL_REDUCE, y.name, part, whole, count, block)
                self.seen[y.name] = whole

    def _crossings(self, kept: list[Op]) -> None:
        """Every read and write crosses as it did; a vocab-parallel lookup reads on each
        device the rows of its block only (1/t of the lookups)."""
        old, g = self.old, self.g
        for x in old.tensors:
            reads = old.nx.nodes[x].get("reads")
            if reads is not None and x.name in self.seen:
                g.set_crossings(self.seen[x.name], reads=reads)
        for op in kept:
            new = g.node(op.name)
            for x in dict.fromkeys(op.inputs):
                c = old.crossings(x, op)
                if isinstance(op, Gather) and 0 in self.plan.splits.get(x.name, {}):
                    c = c / self.plan.splits[x.name][0]
                g.set_edge_crossings(self.seen[x.name], new, c)
            for y in op.outputs:
                g.set_edge_crossings(new, self.new[y.name], old.crossings(op, y))

    def _fused(self, f: FusedGroup) -> FusedGroup:
        """A fusion group in the new graph's nodes; its capacity at this device's shapes."""
        def node_of(n: object) -> object:
            name = getattr(n, "name", "")
            if isinstance(n, Tensor):
                return self.new.get(name, n)
            return self.g.node(name) if name not in self.skip else n

        inside = [self.new[n] for n in f.internal if n in self.new]
        restore = tuple((node_of(a), node_of(b), c) for a, b, c in f.restore)
        return replace(f, capacity=sp.Add(*(x.nbytes for x in inside)),
                       restore=restore)  # type: ignore[arg-type]


def shard(graph: Graph, *, tp: object = 1, pp: object = 1, microbatches: object = 1,
          pins: Mapping[str, Mapping[int, object]] | None = None) -> Graph:
    """``graph`` as one device runs it with ``tp``-way tensor parallelism and ``pp``
    pipeline stages (the last), ``microbatches`` per step (see :class:`Shard`)."""
    frozen = tuple((name, tuple((int(a), as_expr(d, f"pins {name}")) for a, d in axes.items()))
                   for name, axes in (pins or {}).items())
    return Shard(as_expr(tp, "shard tp"), as_expr(pp, "shard pp"),
                 as_expr(microbatches, "shard microbatches"), frozen).apply(
        require_graph(graph, "shard"))

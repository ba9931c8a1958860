"""The forward values a training graph's backward pass reads: what training keeps in
memory between the forward and the backward pass (saved for backward).

A value counts once, whatever reads it and through whichever views: three GEMMs that
read one norm's output keep one tensor. It counts once per copy the backward pass
reads: a layer's tensors once per layer, but a tensor that only the ops after the
layers read (the last layer's output, read by the final norm) once. Per-row fp32
statistics (a norm's mean and 1/sigma, FlashAttention's logsumexp) are marked, so that a
convention that leaves them out (Korthikanti et al. 2022) can.

>>> from symroof.symbols import M, N, K
>>> from symroof.ir import Graph
>>> from symroof.passes.backward import backward
>>> g = Graph("mlp")
>>> h = g.gemm(g.input("x", (M, K)), g.weight("W1", (K, N)), name="h")
>>> g.output(g.gemm(g.elementwise(h, name="gelu"), g.weight("W2", (N, K)), name="y"))
>>> [(s.tensor.name, s.readers) for s in saved_tensors(backward(g))]
[('gelu', ('dB:y',)), ('h', ('bwd:gelu:0',)), ('x', ('dB:h',))]
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

from symroof.errors import SymroofError
from symroof.ir import Graph, Kind, Op, Role, Tensor, View
from symroof.passes.backward import STATISTICS_PREFIX

__all__ = ["SavedTensor", "saved_tensors"]

_ONE = sp.Integer(1)


@dataclass(frozen=True)
class SavedTensor:
    """A forward value the backward pass reads: its storage, the copies kept (one per
    layer for a layer's tensor), its repeat block, whether it is a per-row statistic, and
    the backward ops that read it."""

    tensor: Tensor
    instances: sp.Expr
    block: str
    statistic: bool
    readers: tuple[str, ...]
    fraction: sp.Expr = _ONE  # of the tensor written (routed experts' rows: k/E)

    @property
    def nbytes(self) -> sp.Expr:
        """Bytes kept: copies x fraction written x the tensor's bytes."""
        return self.instances * self.fraction * self.tensor.nbytes

    @property
    def per_layer(self) -> bool:
        """One copy per repetition of its block (a layer's tensor), not a single one."""
        return bool(self.block) and self.instances != 1


def _storage(g: Graph, t: Tensor) -> Tensor:
    """The tensor whose values a view shows (views of a view resolved), as long as the
    view has as many copies as its source (a layer's own input is its own storage)."""
    op = g.producer(t)
    while isinstance(op, View) and sp.expand(g.count(op.x) - g.count(t)) == 0:
        t = op.x
        op = g.producer(t)
    return t


def _instances(g: Graph, t: Tensor, readers: list[Op]) -> sp.Expr:
    """Copies of ``t`` the readers need: all of them if a reader repeats with ``t``, one
    if only ops outside its block (count 1) read it."""
    count = g.count(t)
    counts = [g.count(op) for op in readers]
    if any(sp.expand(c - count) == 0 for c in counts) or not all(c == 1 for c in counts):
        return count
    return _ONE


def _fraction(g: Graph, t: Tensor) -> sp.Expr:
    op = g.producer(t)
    if op is None:
        return _ONE
    w = g.crossings(op, t)
    return w if w.is_number and 0 < w < 1 else _ONE


def saved_tensors(graph: Graph) -> tuple[SavedTensor, ...]:
    """Every forward value the backward pass of ``graph`` reads across the memory
    boundary, once per storage, sorted by name (recomputed values are not kept)."""
    training = graph.provenance.training
    if training is None:
        raise SymroofError(f"saved tensors: graph {graph.name!r} has no backward pass "
                           "(run symroof.passes.backward first)")
    forward = training.forward_ops
    found: dict[Tensor, SavedTensor] = {}
    for t in sorted(graph.tensors, key=lambda x: x.name):
        if t.kind != Kind.ACTIVATION or t.role is not Role.VALUE:
            continue
        producer = graph.producer(t)
        if producer is not None and producer.name not in forward:
            continue
        readers = [op for op in graph.consumers(t)
                   if op.name not in forward and graph.crossings(t, op) != 0]
        if not readers:
            continue
        store = _storage(graph, t)
        copies = _instances(graph, t, readers)
        names = tuple(sorted(op.name for op in readers))
        before = found.get(store)
        if before is not None:
            if sp.expand(copies - graph.count(store)) != 0:
                copies = before.instances
            names = tuple(sorted(set(names) | set(before.readers)))
        found[store] = SavedTensor(store, copies, graph.block(store),
                                   store.name.startswith(STATISTICS_PREFIX), names,
                                   _fraction(graph, store))
    return tuple(found[t] for t in sorted(found, key=lambda x: x.name))

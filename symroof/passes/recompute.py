"""Which forward ops a recompute strategy runs again in the backward pass, read from the
shape of the forward graph (no op names).

- The *attention core* is a product of two activations (QK^T: neither operand is a
  weight) and the ops that lead from it, without another product, to the next product
  of two activations (softmax, dropout, the product with V). ``selective`` recomputes
  the values of all of it but the last product, whose output the next layer keeps, and
  runs that product again too (Korthikanti et al. 2022 recompute "the QK^T matrix
  multiply, the softmax, softmax dropout, and attention over V").
- A *layer* is the ops of a repeated block. ``full`` keeps each layer's input (the view
  that gives each repetition its own input: it reads a tensor from outside the block)
  (and the last layer's output, which the ops after the block read) and recomputes, and
  runs again, every other op of the block, as activation checkpointing re-runs a
  layer's forward.

A value is recomputed once, whatever reads it: under ``full`` with fused attention,
FlashAttention's backward reads the layer's recomputed QK^T (a real kernel computes it
once more, so the hardware FLOPs are one QK^T per layer low there).

>>> from symroof.models import transformer
>>> from symroof.workloads.layers import forward_graph
>>> g = forward_graph(transformer(layers=2, d_model=8, heads=2), batch=1, seq=4, fused=False)
>>> sorted(recomputed_ops(g, Recompute.SELECTIVE).ops), sorted(recomputed_ops(g, "selective").eager)
(['scores', 'softmax'], ['pv', 'scores', 'softmax'])
>>> sorted(recomputed_ops(g, "full").ops)[:4]
['act', 'down', 'k_heads', 'k_proj']
"""

from __future__ import annotations

from dataclasses import dataclass

from symroof.ir import Gemm, Graph, Kind, Op, View
from symroof.options import Recompute, option

__all__ = ["RecomputeSet", "recomputed_ops", "attention_cores"]


@dataclass(frozen=True)
class RecomputeSet:
    """Forward ops whose outputs the backward pass recomputes instead of reading
    (``ops``), and those that run again whether or not their outputs are read
    (``eager``: a checkpointed block re-runs in full)."""

    ops: frozenset[str] = frozenset()
    eager: frozenset[str] = frozenset()


def _activation_product(op: Op) -> bool:
    return isinstance(op, Gemm) and op.a.kind != Kind.WEIGHT and op.b.kind != Kind.WEIGHT


def attention_cores(graph: Graph) -> tuple[frozenset[str], frozenset[str]]:
    """(the ops of every attention core, the products of two activations that end them)."""
    core: set[str] = set()
    ends: set[str] = set()
    for op in graph.ops:
        if not _activation_product(op):
            continue
        seen: set[Op] = set()
        stack = [c for t in op.outputs for c in graph.consumers(t)]
        found: set[Op] = set()
        while stack:
            nxt = stack.pop()
            if nxt in seen:
                continue
            seen.add(nxt)
            if isinstance(nxt, Gemm):
                if _activation_product(nxt):
                    found.add(nxt)
                continue
            stack.extend(c for t in nxt.outputs for c in graph.consumers(t))
        if found:
            core.add(op.name)
            core.update(o.name for o in seen if not isinstance(o, Gemm))
            ends.update(o.name for o in found)
    return frozenset(core), frozenset(ends)


def _layer_ops(graph: Graph) -> frozenset[str]:
    """Ops of repeated blocks, but the views that give each repetition its input and the
    ops whose outputs are read after the block (the last layer's output)."""
    found = set()
    for op in graph.ops:
        block = graph.block(op)
        if not block:
            continue
        if isinstance(op, View) and graph.block(op.x) != block:
            continue  # the layer's input: kept
        if any(graph.block(c) != block for t in op.outputs for c in graph.consumers(t)):
            continue  # read after the layers: kept
        found.add(op.name)
    return frozenset(found)


def recomputed_ops(graph: Graph, strategy: Recompute | bool | str) -> RecomputeSet:
    """What ``strategy`` recomputes in the backward pass of ``graph`` (the on-chip values
    of fused kernels aside, which every strategy but ``none`` recomputes)."""
    mode = option(Recompute, strategy, "recompute")
    if mode is Recompute.SELECTIVE:
        core, ends = attention_cores(graph)
        return RecomputeSet(core, core | ends)
    if mode is Recompute.FULL:
        layer = _layer_ops(graph)
        return RecomputeSet(layer, layer)
    return RecomputeSet()

"""Attention as a graph: the core (QK^T, softmax, PV) and the one-layer workload.

The core is two batched GEMMs around a softmax over the scores. Whether the S x S
scores and probabilities cross the memory boundary is said per tensor (crossing counts),
so fused (FlashAttention), the textbook unfused kernels, and the seed simulation's
"materialize once" are three settings of the same graph.

>>> from symroof.symbols import S, D, H
>>> attention(S, D, H).intensity      # fused, causal: 2 S^2 D / (4 S D b)
S/(2*b)
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

from symroof.analysis import Analysis, analyze
from symroof.ir import Graph, OpGroup, Tensor, as_dim
from symroof.options import Causal, FlopCount, OpsCounted, Unfused, option, renamed
from symroof.passes.fuse import Fuse
from symroof.symbols import b as _b
from symroof.symbols import dim

__all__ = ["attention", "attention_core", "ElementwiseFlops", "causal_fraction", "FusionGroup",
           "fuse_groups", "op_groups", "flash_tile_bytes"]

#: Ops a builder wants fused into one kernel, and the on-chip bytes a streaming kernel
#: needs (None: the group's internal tensors are held whole). Builders collect these and
#: apply them with the fusion pass when the graph is complete.
FusionGroup = tuple[frozenset[str], sp.Expr | None]


@dataclass(frozen=True)
class ElementwiseFlops:
    """FLOPs per element of the non-contraction work (counted only with ``ops="all"``)."""

    softmax: int = 5      # per score: scale, max, subtract-and-exp, sum, divide
    layernorm: int = 8    # mean, subtract, square, sum, rsqrt-scale, gamma, beta, ...
    rmsnorm: int = 4      # square, sum, rsqrt-scale, gamma
    gelu: int = 8         # tanh approximation
    silu: int = 4         # x * sigmoid(x)
    relu: int = 1
    residual: int = 1     # one add per element
    gate: int = 1         # the SwiGLU product act(gate) * up
    rotary: int = 3       # x*cos + rotate(x)*sin
    bias: int = 1


def causal_fraction(causal: Causal | bool | str, seq: sp.Expr) -> sp.Expr:
    """Fraction of the QK^T (and PV) products a causal kernel performs over ``seq`` queries."""
    mode = option(Causal, causal, "causal")
    if mode is Causal.NONE:
        return sp.Integer(1)
    if mode is Causal.HALF:
        return sp.Rational(1, 2)
    return (seq + 1) / (2 * seq)


def attention_core(g: Graph, q: Tensor, k: Tensor, v: Tensor, *, work_fraction: sp.Expr,
                   fused: bool, unfused: Unfused | str = Unfused.WRITE_AND_READ,
                   softmax_flops: object = ElementwiseFlops.softmax,
                   prefix: str = "") -> tuple[Tensor, FusionGroup | None]:
    """Add ``softmax(q k^T) v`` to ``g``; returns the output in q's grouped layout and,
    when ``fused``, the FlashAttention kernel for the caller to fuse.

    ``q`` is (batch, kv_heads, q_per_kv * seq, head_dim) -- the query heads that share a
    KV head are folded into the GEMM's M -- and ``k``, ``v`` are
    (batch, kv_heads, context, head_dim). ``softmax_flops`` per score covers scaling,
    masking, max, exp, sum and divide; it counts only when elementwise work counts.
    """
    mode = option(Unfused, unfused, "unfused")
    scores = g.gemm(q, k, transpose_b=True, work_fraction=work_fraction, name=f"{prefix}scores")
    probs = g.elementwise(scores, name=f"{prefix}softmax", flops_per_element=softmax_flops)
    out = g.gemm(probs, v, work_fraction=work_fraction, name=f"{prefix}pv")
    if fused:  # FlashAttention: one kernel that streams K and V through on-chip tiles
        return out, (frozenset({scores.name, probs.name, out.name}),
                     flash_tile_bytes(q.shape[-1], q.bytes_per_value))
    if mode is Unfused.MATERIALIZE_ONCE:
        g.set_crossings(scores, writes=1, reads=0)
        g.set_crossings(probs, writes=0, reads=0)
    return out, None


def flash_tile_bytes(head_dim: sp.Expr, b: sp.Expr) -> sp.Expr:
    """On-chip bytes of one FlashAttention step: Q and O blocks of B_r rows, K and V
    blocks of B_c rows (``(2 B_r + 2 B_c) d_h b``) and a B_r x B_c fp32 score tile."""
    br, bc = dim("B_r"), dim("B_c")
    return (2 * br + 2 * bc) * head_dim * b + 4 * br * bc


def fuse_groups(g: Graph, groups: list[FusionGroup]) -> Graph:
    """``g`` with the builder's fusion groups applied by the fusion pass."""
    if not groups:
        return g
    return Fuse(tuple(grp for grp, _ in groups), tuple(tile for _, tile in groups)).apply(g)


@renamed(flops="flop_count", S="seq", D="d_model")
def attention(seq: object, d_model: object, heads: object, *, head_dim: object | None = None,
              kv_heads: object | None = None, batch: object = 1,
              causal: Causal | bool | str = Causal.HALF, fused: bool = True,
              unfused: Unfused | str = Unfused.WRITE_AND_READ, projections: bool = False,
              b: object = _b, ops: OpsCounted | str = OpsCounted.CONTRACTIONS,
              flop_count: FlopCount | str = FlopCount.TWO_PER_MAC) -> Analysis:
    """One attention layer over ``seq`` tokens (prefill), width ``d_model``, ``heads`` heads.

    Without ``projections`` the inputs are Q, K, V and the output is O (fused traffic
    ``4SDb`` for multi-head attention); with them, the Q/K/V/output weight GEMMs are added
    and the input is the layer's activation x. ``ops="contractions"`` (default) counts
    the FLOPs of the GEMMs only, as the seeds do; ``"all"`` adds softmax work.
    """
    s_, d_ = as_dim(seq, "attention seq"), as_dim(d_model, "attention d_model")
    h_ = as_dim(heads, "attention heads")
    mode = option(Unfused, unfused, "unfused")
    hd = d_ / h_ if head_dim is None else as_dim(head_dim, "attention head_dim")
    g_ = h_ if kv_heads is None else as_dim(kv_heads, "attention kv_heads")
    bt = as_dim(batch, "attention batch")
    per = h_ / g_
    g = Graph("attention" + ("" if fused else f"-unfused-{mode.value}"))
    if projections:
        x = g.input("x", (bt, s_, d_), bytes_per_value=b)
        qf = g.gemm(x, g.weight("W_q", (d_, h_ * hd), bytes_per_value=b), name="q_proj")
        kf = g.gemm(x, g.weight("W_k", (d_, g_ * hd), bytes_per_value=b), name="k_proj")
        vf = g.gemm(x, g.weight("W_v", (d_, g_ * hd), bytes_per_value=b), name="v_proj")
        q = g.view(qf, (bt, g_, per * s_, hd), name="q")
        k = g.view(kf, (bt, g_, s_, hd), name="k")
        v = g.view(vf, (bt, g_, s_, hd), name="v")
    else:
        q = g.input("q", (bt, g_, per * s_, hd), bytes_per_value=b)
        k = g.input("k", (bt, g_, s_, hd), bytes_per_value=b)
        v = g.input("v", (bt, g_, s_, hd), bytes_per_value=b)
    o, kernel = attention_core(g, q, k, v, work_fraction=causal_fraction(causal, s_),
                               fused=fused, unfused=mode)
    if projections:
        of = g.view(o, (bt, s_, h_ * hd), name="o")
        o = g.gemm(of, g.weight("W_o", (h_ * hd, d_), bytes_per_value=b), name="o_proj")
    g.output(o)
    return analyze(fuse_groups(g, [kernel] if kernel else []), flop_count=flop_count,
                   ops=op_groups(ops), tokens=bt * s_)


def op_groups(ops: OpsCounted | str) -> frozenset[OpGroup]:
    """The op groups whose FLOPs count: contractions (GEMMs only) or all."""
    if option(OpsCounted, ops, "ops") is OpsCounted.CONTRACTIONS:
        return frozenset({OpGroup.CONTRACTION})
    return frozenset(OpGroup)


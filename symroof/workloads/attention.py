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
from symroof.cost import FlopCount
from symroof.errors import SymroofError
from symroof.ir import Graph, OpGroup, Tensor, as_dim
from symroof.symbols import b as _b
from symroof.symbols import dim

__all__ = ["attention", "attention_core", "ElementwiseFlops", "causal_fraction",
           "pending_fusions", "finish",
           "UNFUSED", "CAUSAL"]

#: How unfused kernels move the S x S matrices.
UNFUSED = {
    "write_and_read": "scores and probabilities are each written once and read once "
                      "(the chapter's text: +4 h S^2 b)",
    "materialize_once": "one S x S matrix crosses the boundary once "
                        "(the chapter's simulation: +h S^2 b)",
}

#: How a causal mask reduces the work of QK^T and PV.
CAUSAL = {
    False: "no mask: every query meets every key (PyTorch eager counts this)",
    True: "half: a causal kernel skips about half the products (the seeds)",
    "half": "half: a causal kernel skips about half the products (the seeds)",
    "exact": "exact: S(S+1)/2 of the S^2 query-key pairs are computed",
}


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


def causal_fraction(causal: bool | str, q_len: sp.Expr) -> sp.Expr:
    """Fraction of the QK^T (and PV) products a causal kernel performs."""
    if causal is False:
        return sp.Integer(1)
    if causal is True or causal == "half":
        return sp.Rational(1, 2)
    if causal == "exact":
        return (q_len + 1) / (2 * q_len)
    raise SymroofError(f"causal: expected True, False, 'half' or 'exact', got {causal!r}")


def attention_core(g: Graph, q: Tensor, k: Tensor, v: Tensor, *, work_fraction: sp.Expr,
                   fused: bool, unfused: str = "write_and_read", softmax_flops: object = ElementwiseFlops.softmax,
                   prefix: str = "") -> Tensor:
    """Add ``softmax(q k^T) v`` to ``g``; returns the output in q's grouped layout.

    ``q`` is (batch, kv_heads, q_per_kv * q_len, head_dim) -- the query heads that share a
    KV head are folded into the GEMM's M -- and ``k``, ``v`` are
    (batch, kv_heads, kv_len, head_dim). ``softmax_flops`` per score covers scaling,
    masking, max, exp, sum and divide; it counts only when elementwise work counts.
    """
    if unfused not in UNFUSED:
        raise SymroofError(f"unfused: expected one of {', '.join(UNFUSED)}, got {unfused!r}")
    scores = g.gemm(q, k, transpose_b=True, work_fraction=work_fraction, name=f"{prefix}scores")
    probs = g.elementwise(scores, name=f"{prefix}softmax", flops_per_element=softmax_flops)
    out = g.gemm(probs, v, work_fraction=work_fraction, name=f"{prefix}pv")
    if fused:  # FlashAttention: one kernel, applied by symroof.passes.fuse at the end
        pending_fusions(g).append(({scores.name, probs.name, out.name},
                                   flash_tile_bytes(q.shape[-1], q.bytes_per_value)))
    elif unfused == "materialize_once":
        g.set_crossings(scores, writes=1, reads=0)
        g.set_crossings(probs, writes=0, reads=0)
    return out


def flash_tile_bytes(head_dim: sp.Expr, b: sp.Expr) -> sp.Expr:
    """On-chip bytes of one FlashAttention step: Q and O blocks of B_r rows, K and V
    blocks of B_c rows (``(2 B_r + 2 B_c) d_h b``) and a B_r x B_c fp32 score tile."""
    br, bc = dim("B_r"), dim("B_c")
    return (2 * br + 2 * bc) * head_dim * b + 4 * br * bc


def pending_fusions(g: Graph) -> list[set[str] | tuple[set[str], sp.Expr]]:
    """Fusion groups a builder has queued on ``g``, each optionally with the on-chip
    bytes a streaming kernel needs (applied by :func:`finish`)."""
    return g.meta.setdefault("pending_fusions", [])  # type: ignore[return-value]


def finish(g: Graph) -> Graph:
    """Apply the queued fusion groups with the fusion pass; returns the fused graph."""
    from symroof.passes.fuse import fuse

    queued = g.meta.pop("pending_fusions", [])
    if not queued:
        return g
    groups = [q[0] if isinstance(q, tuple) else q for q in queued]  # type: ignore[union-attr]
    tiles = [q[1] if isinstance(q, tuple) else None for q in queued]  # type: ignore[union-attr]
    return fuse(g, groups, tile_capacity=tiles)


def attention(S: object, D: object, heads: object, *, head_dim: object | None = None,
              kv_heads: object | None = None, batch: object = 1, causal: bool | str = True,
              fused: bool = True, unfused: str = "write_and_read", projections: bool = False,
              b: object = _b, ops: str = "contractions",
              flops: FlopCount | str = FlopCount.TWO_PER_MAC) -> Analysis:
    """One attention layer over ``S`` tokens (prefill), width ``D``, ``heads`` heads.

    Without ``projections`` the inputs are Q, K, V and the output is O (fused traffic
    ``4SDb`` for multi-head attention); with them, the Q/K/V/output weight GEMMs are added
    and the input is the layer's activation x. ``ops="contractions"`` (default) counts
    the FLOPs of the GEMMs only, as the seeds do; ``"all"`` adds softmax work.
    """
    s_, d_, h_ = as_dim(S, "attention S"), as_dim(D, "attention D"), as_dim(heads, "attention heads")
    hd = d_ / h_ if head_dim is None else as_dim(head_dim, "attention head_dim")
    g_ = h_ if kv_heads is None else as_dim(kv_heads, "attention kv_heads")
    bt = as_dim(batch, "attention batch")
    per = h_ / g_
    g = Graph("attention" + ("" if fused else f"-unfused-{unfused}"))
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
    o = attention_core(g, q, k, v, work_fraction=causal_fraction(causal, s_), fused=fused,
                       unfused=unfused)
    if projections:
        of = g.view(o, (bt, s_, h_ * hd), name="o")
        o = g.gemm(of, g.weight("W_o", (h_ * hd, d_), bytes_per_value=b), name="o_proj")
    g.output(o)
    return analyze(finish(g), flops=flops, ops=op_groups(ops), tokens=bt * s_)


def op_groups(ops: str) -> frozenset[OpGroup]:
    """The op groups whose FLOPs count: "contractions" (GEMMs only) or "all"."""
    if ops == "contractions":
        return frozenset({OpGroup.CONTRACTION})
    if ops == "all":
        return frozenset(OpGroup)
    raise SymroofError(f"ops: expected 'contractions' or 'all', got {ops!r}")


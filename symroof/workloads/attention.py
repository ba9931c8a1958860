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

from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

import sympy as sp

from symroof.analysis import Analysis, analyze
from symroof.errors import SymroofError
from symroof.ir import Gemm, Graph, Op, OpGroup, Pattern, Step, Tensor, as_dim, as_expr
from symroof.options import (Causal, FlopCount, OpsCounted, Saves, Unfused, WindowKernel, WindowSpan,
                             option, renamed)
from symroof.passes.fuse import Fuse
from symroof.passes.pipeline import Pipeline
from symroof.symbols import b as _b
from symroof.symbols import dim

__all__ = ["attention", "attention_core", "ElementwiseFlops", "causal_fraction", "FusionGroup",
           "fuse_groups", "op_groups", "FLASH_ATTENTION", "flash_tile_bytes", "window_fraction",
           "window_span", "chunk_span", "chunk_pairs", "chunk_fraction"]

#: Ops a builder wants fused into one kernel, named, and the on-chip bytes a streaming
#: kernel needs (None: the group's internal tensors are held whole). Builders collect
#: these for kernels no pattern describes (a scan's ops) and apply them with their
#: patterns in the fusion pass when the graph is complete.
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
    relu2: int = 2        # relu, then square
    xielu: int = 12       # x > 0; a_p x x + beta x (4); (expm1(min(x, eps)) - x) a_n + beta x
    #                       (6); the select: both branches computed, as transformers does
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


def window_span(positions: sp.Expr, window: sp.Expr, span: WindowSpan | str,
                what: str = "positions") -> sp.Expr:
    """Positions a query attends on a layer with a window of ``window`` (the newest, itself,
    included: keys i - W < j <= i): ``min(positions, W)``, or ``W`` when ``span`` is
    ``"filled"`` (an assumption: refused when the numbers say otherwise).

    >>> from symroof.symbols import S, dim
    >>> window_span(S, dim("W"), "exact"), window_span(S, dim("W"), "filled"), window_span(3, 8, "exact")
    (Min(S, W), W, 3)
    """
    mode = option(WindowSpan, span, "window_span")
    p, w = as_expr(positions, what), as_expr(window, "window")
    if mode is WindowSpan.EXACT:
        return sp.Min(p, w)
    if (p - w).is_negative:
        raise SymroofError(f"window_span='filled' assumes {what} >= the window {w}, got {p}")
    return w


def window_fraction(causal: Causal | bool | str, seq: sp.Expr, window: sp.Expr,
                    span: WindowSpan | str = WindowSpan.EXACT) -> sp.Expr:
    """Fraction of the ``seq x seq`` QK^T (and PV) products a windowed kernel performs.

    Query i attends the ``w = min(i, W)`` keys i - W < j <= i. Over ``seq`` queries that is
    ``S w - w(w-1)/2`` pairs with ``w = min(S, W)`` (``causal="exact"``; S(S+1)/2 for
    S <= W), ``S w - w^2/2`` with ``"half"`` (the seeds' S^2/2 at W >= S), and the full
    S^2 with ``"none"`` (nothing skipped, as an eager kernel counts).

    >>> from symroof.symbols import S, dim
    >>> W = dim("W")
    >>> sp.expand(window_fraction("half", S, W, "filled") * S**2)
    S*W - W**2/2
    >>> window_fraction("exact", 8, 4) * 64    # 1 + 2 + 3 + 4 + 4 + 4 + 4 + 4
    26
    """
    mode = option(Causal, causal, "causal")
    if mode is Causal.NONE:
        return sp.Integer(1)
    w = window_span(seq, window, span, "seq")
    pairs = seq * w - (w**2 / 2 if mode is Causal.HALF else w * (w - 1) / 2)
    return pairs / seq**2


def chunk_span(positions: sp.Expr, window: sp.Expr, what: str = "positions") -> sp.Expr:
    """Keys the newest of ``positions`` queries attends on a chunked layer (chunks of
    ``window`` positions aligned to multiples of W; query i attends W floor(i/W) <= j <= i):
    ``positions - W floor((positions - 1)/W)``, from 1 at a chunk's first position to W at
    its last.

    >>> from symroof.symbols import S, dim
    >>> [chunk_span(p, 4) for p in range(1, 10)]
    [1, 2, 3, 4, 1, 2, 3, 4, 1]
    >>> chunk_span(S, dim("W"))
    S - W*floor((S - 1)/W)
    """
    p, w = as_expr(positions, what), as_expr(window, "window")
    return p - w * sp.floor((p - 1) / w)


def chunk_fraction(causal: Causal | bool | str, seq: sp.Expr, window: sp.Expr,
                   span: WindowSpan | str = WindowSpan.EXACT) -> sp.Expr:
    """Fraction of the ``seq x seq`` QK^T (and PV) products a chunked kernel performs.

    Query i attends the ``i mod W + 1`` keys of its chunk. Over ``seq = qW + r`` queries
    that is ``q W(W+1)/2 + r(r+1)/2`` pairs (``causal="exact"``), ``q W^2/2 + r^2/2``
    with ``"half"``, the full S^2 with ``"none"``. ``span="filled"`` assumes whole chunks
    (S a multiple of W: ``S (W+1)/2``, ``S W/2``; refused when the numbers say otherwise).
    A sliding window of W attends more: every query past the first W attends W keys.

    >>> from symroof.symbols import S, dim
    >>> chunk_fraction("exact", 10, 4) * 100        # 1+2+3+4 + 1+2+3+4 + 1+2
    23
    >>> sp.expand(chunk_fraction("exact", S, dim("W"), "filled") * S**2)
    S*W/2 + S/2
    """
    mode = option(Causal, causal, "causal")
    if mode is Causal.NONE:
        return sp.Integer(1)
    s, w = as_expr(seq, "seq"), as_expr(window, "window")
    one = 0 if mode is Causal.HALF else 1
    if option(WindowSpan, span, "window_span") is WindowSpan.FILLED:
        rest = sp.Mod(s, w)
        if rest.is_number and rest != 0:
            raise SymroofError(f"window_span='filled' assumes seq a multiple of the chunk {w}, "
                               f"got {s}")
        return (w + one) / (2 * s)
    return chunk_pairs(s, w, mode) / s**2


def chunk_pairs(seq: object, window: object, causal: Causal | bool | str = Causal.EXACT
                ) -> sp.Expr:
    """Query-key pairs of ``seq`` causal queries from position 0 on a chunked layer
    (chunks of ``window``): ``q W(W+1)/2 + r(r+1)/2`` with ``seq = qW + r`` (``"half"``:
    ``q W^2/2 + r^2/2``; ``"none"``: seq^2).

    >>> chunk_pairs(10, 4), chunk_pairs(0, 4), chunk_pairs(10, 4, "half")
    (23, 0, 18)
    """
    mode = option(Causal, causal, "causal")
    s, w = as_expr(seq, "seq"), as_expr(window, "window")
    if mode is Causal.NONE:
        return s**2
    one = 0 if mode is Causal.HALF else 1
    q = sp.floor(s / w)
    r = s - w * q
    return (q * w * (w + one) + r * (r + one)) / 2


def attention_core(g: Graph, q: Tensor, k: Tensor, v: Tensor, *, work_fraction: sp.Expr,
                   fused: bool, unfused: Unfused | str = Unfused.WRITE_AND_READ,
                   softmax_flops: object = ElementwiseFlops.softmax,
                   prefix: str = "", sinks: Tensor | None = None
                   ) -> tuple[Tensor, FusionGroup | None]:
    """Add ``softmax(q k^T) v`` to ``g``; returns the output in q's grouped layout and,
    when ``fused``, the FlashAttention kernel for the caller to fuse.

    ``q`` is (batch, kv_heads, q_per_kv * seq, head_dim) -- the query heads that share a
    KV head are folded into the GEMM's M -- and ``k``, ``v`` are
    (batch, kv_heads, context, head_dim). ``softmax_flops`` per score covers scaling,
    masking, max, exp, sum and divide; it counts only when elementwise work counts.
    ``sinks`` (kv_heads, q_per_kv, 1, 1), one learned logit per head that joins each
    softmax (gpt-oss), is read by the softmax over the scores split by head.
    """
    mode = option(Unfused, unfused, "unfused")
    scores = g.gemm(q, k, transpose_b=True, work_fraction=work_fraction, name=f"{prefix}scores")
    pre, ops = scores, [scores.name]
    if sinks is not None:  # the scores per query head, so that the per-head sinks broadcast
        *lead, rows, keys = scores.shape
        per = sinks.shape[-3]
        pre = g.view(scores, (*lead, per, rows / per, keys), name=f"{prefix}scores_by_head")
        ops.append(pre.name)
    probs = g.elementwise(pre, *(() if sinks is None else (sinks,)), name=f"{prefix}softmax",
                          flops_per_element=softmax_flops, saves=Saves.OUTPUT)
    post = probs
    ops.append(probs.name)
    if sinks is not None:
        post = g.view(probs, scores.shape, name=f"{prefix}probs")
        ops.append(post.name)
    out = g.gemm(post, v, work_fraction=work_fraction, name=f"{prefix}pv")
    if fused:  # FlashAttention: one kernel that streams K and V through on-chip tiles
        return out, (frozenset((*ops, out.name)),
                     flash_tile_bytes(q.shape[-1], q.bytes_per_value))
    if mode is Unfused.MATERIALIZE_ONCE:
        g.set_crossings(scores, writes=1, reads=0)
        g.set_crossings(pre, reads=0)
        g.set_crossings(probs, writes=0, reads=0)
        g.set_crossings(post, reads=0)
    return out, None


def flash_tile_bytes(head_dim: sp.Expr, b: sp.Expr) -> sp.Expr:
    """On-chip bytes of one FlashAttention step: Q and O blocks of B_r rows, K and V
    blocks of B_c rows (``(2 B_r + 2 B_c) d_h b``) and a B_r x B_c fp32 score tile."""
    br, bc = dim("B_r"), dim("B_c")
    return (2 * br + 2 * bc) * head_dim * b + 4 * br * bc


def _flash_tile(ops: tuple[Op, ...]) -> sp.Expr:
    """The FlashAttention tile of a matched region: its scores GEMM's query operand gives
    the head width and the bytes per value."""
    q = cast(Gemm, ops[0]).a
    return flash_tile_bytes(q.shape[-1], q.bytes_per_value)


#: FlashAttention as one kernel, by its structure: a GEMM of two activations (the
#: scores), elementwise ops and views (scaling, masks, softmax, sinks, dropout), and the
#: GEMM of the probabilities with the values; the scores stay on chip, in tiles.
FLASH_ATTENTION = Pattern(
    "flash attention", head=Step(OpGroup.CONTRACTION, weight=False),
    tail=Step(OpGroup.CONTRACTION, weight=False),
    body=frozenset({OpGroup.ELEMENTWISE, OpGroup.DATA_MOVEMENT}), heads=1, tile=_flash_tile)


def fusion(groups: list[FusionGroup], patterns: Sequence[Pattern] = ()) -> Fuse:
    """The fusion pass of a builder's patterns and its groups of named ops (with their
    on-chip tile capacities): a pipeline's first stage."""
    return Fuse(tuple(grp for grp, _ in groups), tuple(tile for _, tile in groups),
                patterns=tuple(patterns))


def fuse_groups(g: Graph, groups: list[FusionGroup],
                patterns: Sequence[Pattern] = ()) -> Graph:
    """``g`` with the builder's patterns and fusion groups applied by the fusion pass, in
    a pipeline of that one stage."""
    if not groups and not patterns:
        return g
    return Pipeline("fuse", (fusion(groups, patterns),)).apply(g)


@renamed(flops="flop_count", S="seq", D="d_model")
def attention(seq: object, d_model: object, heads: object, *, head_dim: object | None = None,
              kv_heads: object | None = None, batch: object = 1,
              causal: Causal | bool | str = Causal.HALF, fused: bool = True,
              unfused: Unfused | str = Unfused.WRITE_AND_READ, projections: bool = False,
              b: object = _b, ops: OpsCounted | str = OpsCounted.CONTRACTIONS,
              flop_count: FlopCount | str = FlopCount.TWO_PER_MAC, window: object | None = None,
              window_kernel: WindowKernel | str = WindowKernel.BAND,
              window_span: WindowSpan | str = WindowSpan.EXACT) -> Analysis:
    """One attention layer over ``seq`` tokens (prefill), width ``d_model``, ``heads`` heads.

    Without ``projections`` the inputs are Q, K, V and the output is O (fused traffic
    ``4SDb`` for multi-head attention); with them, the Q/K/V/output weight GEMMs are added
    and the input is the layer's activation x. ``ops="contractions"`` (default) counts
    the FLOPs of the GEMMs only, as the seeds do; ``"all"`` adds softmax work.
    With a sliding ``window`` W, a ``window_kernel="band"`` kernel does the pairs of
    :func:`window_fraction` (about S W instead of S^2/2 per head); ``"masked"`` does the
    causal count and masks the window off.
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
    frac = causal_fraction(causal, s_)
    if window is not None and option(WindowKernel, window_kernel,
                                     "window_kernel") is WindowKernel.BAND:
        frac = window_fraction(causal, s_, as_dim(window, "attention window"), window_span)
    o, kernel = attention_core(g, q, k, v, work_fraction=frac, fused=fused, unfused=mode)
    if projections:
        of = g.view(o, (bt, s_, h_ * hd), name="o")
        o = g.gemm(of, g.weight("W_o", (h_ * hd, d_), bytes_per_value=b), name="o_proj")
    g.output(o)
    return analyze(fuse_groups(g, [], [FLASH_ATTENTION] if kernel else []),
                   flop_count=flop_count,
                   ops=op_groups(ops), tokens=bt * s_)


def op_groups(ops: OpsCounted | str) -> frozenset[OpGroup]:
    """The op groups whose FLOPs count: contractions (GEMMs only) or all."""
    if option(OpsCounted, ops, "ops") is OpsCounted.CONTRACTIONS:
        return frozenset({OpGroup.CONTRACTION})
    return frozenset(OpGroup)


"""Multi-head latent attention (DeepSeek-V2/V3) as a graph, both ways to run it.

A token's keys and values are cached as one latent ``c`` of ``d_c`` values plus a
rotary key of ``d_r`` values shared by all heads: ``d_c + d_r`` per token per layer,
whatever the heads. The query comes through a low-rank path (``d -> d_q -> H (d_n +
d_r)``) or one projection. Two ways to attend:

- **naive** (prefill, training, and transformers' decode): up-project K (``W_UK``) and
  V (``W_UV``) from every attended latent, then attention at ``d_n + d_r`` per head;
  per attended position ``2 d_c H (d_n + d_v) + 2 H (d_n + d_r + d_v)`` FLOPs.
- **absorbed** (DeepSeek's and FlashMLA's decode): fold ``W_UK`` into the query and
  ``W_UV`` after attention, and score against the cached latent itself; per position
  ``2 H (2 d_c + d_r)`` FLOPs, plus ``2 H d_c (d_n + d_v)`` once per token.

Both read the same ``d_c + d_r`` cached values per position.

>>> from symroof.models import get
>>> from symroof.symbols import b
>>> get("deepseek-v3").kv_bytes_per_token.subs(b, 2)   # (512 + 64) * 61 layers * 2 B
70272
"""

from __future__ import annotations

import sympy as sp

from symroof.ir import Kind, Pattern, Tensor
from symroof.options import LatentDecode, Saves, Unfused
from symroof.workloads.attention import FLASH_ATTENTION, attention_core, flash_tile_bytes
from symroof.workloads.builder import Builder

__all__ = ["latent_attention", "LATENT_ATTENTION"]

#: Absorbed latent attention as one kernel: FlashAttention's structure with two scores
#: GEMMs (on the latent and on the rotary key) summed before the softmax. Its tile is
#: the builder's (the latent's width and the cache's bytes per value).
LATENT_ATTENTION = Pattern("latent attention", FLASH_ATTENTION.head, FLASH_ATTENTION.tail,
                           FLASH_ATTENTION.body, heads=2)


def latent_attention(b: Builder, h: Tensor, *, batch: sp.Expr, seq: sp.Expr, span: sp.Expr,
                     decode: bool, work_fraction: sp.Expr, mode: LatentDecode, fused: bool,
                     unfused: Unfused, kv_write: bool) -> Tensor:
    """Latent attention of the normed input ``h`` (batch, seq, d) over ``span`` positions;
    returns the output projection's result. ``mode`` applies to decode only."""
    g, m, fl = b.g, b.m, b.fl
    lat = m.latent
    assert lat is not None  # the caller checks
    heads, d = m.heads, m.d_model
    dc, dn, dr, dv = lat.kv_rank, lat.nope_dim, lat.rope_dim, lat.v_dim
    qk = dn + dr
    if lat.q_rank is None:
        q = b.linear(h, "W_q", d, heads * qk, "q_proj", False)
    else:
        qa = b.rms(b.linear(h, "W_dq", d, lat.q_rank, "q_down", m.qkv_bias), "q_norm",
                   lat.q_rank)
        q = b.linear(qa, "W_uq", lat.q_rank, heads * qk, "q_up", False)
    # qkv_bias: the down-projections' biases (transformers' attention_bias on q_a_proj
    # and kv_a_proj_with_mqa; a query without the low-rank path has none)
    c = b.rms(b.linear(h, "W_dkv", d, dc, "kv_down", m.qkv_bias), "kv_norm", dc)
    kr = b.linear(h, "W_kr", d, dr, "k_rope_proj", m.qkv_bias)
    if m.positions == "rotary":  # rotary on the d_r rotary part of each head and on k^R
        q = g.elementwise(q, name=b.n("rope_q"), saves=Saves.NOTHING,
                          flops_per_element=fl.rotary * dr / qk)
        kr = g.elementwise(kr, name=b.n("rope_k"), saves=Saves.NOTHING,
                           flops_per_element=fl.rotary)
    if decode:
        c_src = g.kv_cache(b.n("latent_cache"), (batch, 1, span, dc), bytes_per_value=m.kv_bytes)
        r_src = g.kv_cache(b.n("k_rope_cache"), (batch, 1, span, dr), bytes_per_value=m.kv_bytes)
        _append(b, ((c, "latent_append", dc), (kr, "k_rope_append", dr)), batch, kv_write)
    else:
        c_src = g.view(c, (batch, 1, seq, dc), name=b.n("latent"))
        r_src = g.view(kr, (batch, 1, seq, dr), name=b.n("k_rope"))
    if decode and mode is LatentDecode.ABSORBED:
        o = _absorbed(b, q, c_src, r_src, batch=batch, seq=seq)
    else:
        o = _naive(b, q, c_src, r_src, batch=batch, seq=seq, span=span,
                   work_fraction=work_fraction, fused=fused, unfused=unfused)
    return b.linear(o, "W_o", heads * dv, d, "o_proj", m.o_bias)


def _append(b: Builder, new: tuple[tuple[Tensor, str, sp.Expr], ...], batch: sp.Expr,
            kv_write: bool) -> None:
    """The new token's latent and rotary key: written into the cache, or left as outputs."""
    g, m = b.g, b.m
    if not kv_write:
        g.output(*(t for t, _, _ in new))
        return
    for t, name, width in new:  # straight from the projection into the cache
        g.output(g.move(t, name=b.n(name), shape=(batch, 1, 1, width), kind=Kind.KV_CACHE,
                        bytes_per_value=m.kv_bytes))
        g.set_crossings(t, writes=0, reads=0)


def _naive(b: Builder, q: Tensor, c_src: Tensor, r_src: Tensor, *, batch: sp.Expr,
           seq: sp.Expr, span: sp.Expr, work_fraction: sp.Expr, fused: bool,
           unfused: Unfused) -> Tensor:
    """K and V up-projected from every attended latent (one GEMM over W_UK and W_UV:
    the latent is read once), the rotary key joined to every head, then attention."""
    g, m = b.g, b.m
    lat = m.latent
    assert lat is not None
    heads, dc, dn, dr, dv = m.heads, lat.kv_rank, lat.nope_dim, lat.rope_dim, lat.v_dim
    k_up = g.gemm(c_src, b.weight("W_uk", (dc, heads * dn)), name=b.n("k_up"))
    v_up = g.gemm(c_src, b.weight("W_uv", (dc, heads * dv)), name=b.n("v_up"))
    b.fusions.append((frozenset({k_up.name, v_up.name}), None))  # transformers' kv_b_proj
    k_nope = g.view(k_up, (batch, heads, span, dn), name=b.n("k_nope"))
    k = g.move(k_nope, r_src, name=b.n("k_heads"), shape=(batch, heads, span, dn + dr))
    v = g.view(v_up, (batch, heads, span, dv), name=b.n("v_heads"))
    qh = g.view(q, (batch, heads, seq, dn + dr), name=b.n("q_heads"))
    o, kernel = attention_core(g, qh, k, v, work_fraction=work_fraction, fused=fused,
                               unfused=unfused, softmax_flops=b.fl.softmax, prefix=b.prefix)
    if kernel is not None:
        b.want(FLASH_ATTENTION)
    return g.view(o, (batch, seq, heads * dv), name=b.n("o_heads"))


def _absorbed(b: Builder, q: Tensor, c_src: Tensor, r_src: Tensor, *, batch: sp.Expr,
              seq: sp.Expr) -> Tensor:
    """W_UK folded into the query, scores on the latent and the rotary key, probabilities
    times the latent, W_UV after: one kernel that reads each cached value once."""
    g, m, fl = b.g, b.m, b.fl
    lat = m.latent
    assert lat is not None
    heads, dc, dn, dr, dv = m.heads, lat.kv_rank, lat.nope_dim, lat.rope_dim, lat.v_dim
    rows = batch * seq
    q_nope = g.move(q, name=b.n("q_nope"), shape=(heads, rows, dn), read_fraction=dn / (dn + dr))
    q_rope = g.move(q, name=b.n("q_rope"), shape=(batch, 1, heads * seq, dr),
                    read_fraction=dr / (dn + dr))
    q_lat = g.gemm(q_nope, b.weight("W_uk", (heads, dn, dc)), name=b.n("q_absorb"))
    q_lat = g.view(q_lat, (batch, 1, heads * seq, dc), name=b.n("q_latent"))
    s_lat = g.gemm(q_lat, c_src, transpose_b=True, name=b.n("scores_latent"))
    s_rope = g.gemm(q_rope, r_src, transpose_b=True, name=b.n("scores_rope"))
    scores = g.elementwise(s_lat, s_rope, name=b.n("scores"), flops_per_element=fl.residual,
                           linear=True)
    probs = g.elementwise(scores, name=b.n("softmax"), flops_per_element=fl.softmax)
    o_lat = g.gemm(probs, c_src, name=b.n("pv"))
    b.want(LATENT_ATTENTION.with_tile(flash_tile_bytes(dc + dr, m.kv_bytes)))
    o_lat = g.view(o_lat, (heads, rows, dc), name=b.n("o_latent"))
    o = g.gemm(o_lat, b.weight("W_uv", (heads, dc, dv)), name=b.n("o_absorb"))
    return g.view(o, (batch, seq, heads * dv), name=b.n("o_heads"))

"""The forward graph of a transformer description, layer by layer.

Each kind of layer (:class:`LayerGroup`: full or windowed attention, a mixture of
experts or a dense MLP) is built once inside ``Graph.repeat(count)``; embeddings, the
final norm and the LM head sit outside. The fusion groups the builder wants
(FlashAttention, GEMM epilogues) are collected while building and applied by the fusion
pass at the end. The model description is read as its data, a
:class:`~symroof.workloads.shape.ModelShape`, so this module needs nothing from
``symroof.models`` (which builds on it to count parameters).

>>> from symroof.models import transformer
>>> from symroof.symbols import L, D, H
>>> g = forward_graph(transformer(layers=L, d_model=D, heads=H), batch=1, seq=1)
>>> sorted({t.name for t in g.inputs})
['W_down', 'W_k', 'W_o', 'W_q', 'W_up', 'W_v', 'x']
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import sympy as sp

from symroof.errors import SymroofError
from symroof.ir import Graph, Kind, Tensor, as_dim
from symroof.options import (Causal, ExpertReads, LatentDecode, Logits, Saves, Unfused, WindowKernel,
                             WindowSpan, option)
from symroof.passes.fuse import Fuse
from symroof.passes.pipeline import Pipeline
from symroof.workloads.attention import (FLASH_ATTENTION, ElementwiseFlops, attention_core,
                                         causal_fraction, chunk_fraction, chunk_pairs,
                                         chunk_span, window_fraction, window_span)
from symroof.workloads.builder import (Builder, LayerGroup, LatentShape, TransformerShape, kv_dim,
                                      q_dim)
from symroof.workloads.dropout import attention_core_with_dropout
from symroof.workloads.experts import moe_mlp
from symroof.workloads.latent import latent_attention
from symroof.workloads.recurrent import (deltanet_mixer, lightning_mixer, mamba1_mixer,
                                         mamba2_mixer, short_conv_mixer)
from symroof.workloads.shape import HybridShape, ModelShape
from symroof.workloads.zamba import zamba_layer

# TransformerShape and LatentShape: the old names of ModelShape and LatentAttention, kept
# importable from here for code that imports them
__all__ = ["TransformerShape", "LatentShape", "LayerGroup", "Choices", "forward_graph",
           "weight_tensors", "kv_cache_tensors"]


@dataclass(frozen=True)
class Choices:
    """The counting conventions a forward graph is built under (each a named option)."""

    causal: Causal = Causal.HALF
    fused: bool = True
    unfused: Unfused = Unfused.WRITE_AND_READ
    kv_write: bool = False
    window_kernel: WindowKernel = WindowKernel.BAND
    window_span: WindowSpan = WindowSpan.EXACT
    latent: LatentDecode = LatentDecode.ABSORBED
    expert_reads: ExpertReads = ExpertReads.EXPECTED
    dropout: bool = False  # the model's dropouts run (training graphs)

    def __post_init__(self) -> None:
        for f, enum in (("causal", Causal), ("unfused", Unfused), ("window_kernel", WindowKernel),
                        ("window_span", WindowSpan), ("latent", LatentDecode),
                        ("expert_reads", ExpertReads)):
            object.__setattr__(self, f, option(enum, getattr(self, f), f))


def _attention(b: Builder, h: Tensor, grp: LayerGroup, *, batch: sp.Expr, seq: sp.Expr,
               context: sp.Expr, decode: bool, c: Choices) -> Tensor:
    """Q, K, V projections, attention over the layer's span, the output projection."""
    g, m, fl = b.g, b.m, b.fl
    window = m.window if grp.windowed else None
    # a decode step reads at most the window's positions; prefill computes K and V for all
    span = context if window is None or not decode else window_span(context, window,
                                                                    c.window_span, "context")
    chunked = window is not None and m.chunked and c.window_kernel is WindowKernel.BAND
    if decode and chunked:   # the new queries attend their chunks' keys of the buffer
        frac = _chunk_decode_fraction(seq, context, window, span, c)
    elif decode:
        frac = sp.Integer(1)
    elif chunked:
        frac = chunk_fraction(c.causal, seq, window, c.window_span)
    elif window is not None and c.window_kernel is WindowKernel.BAND:
        frac = window_fraction(c.causal, seq, window, c.window_span)
    else:
        frac = causal_fraction(c.causal, seq)
    attn_dropout = c.dropout and m.attention_dropout != 0
    if m.latent is not None:
        if attn_dropout:
            raise SymroofError(f"model {m.name!r} attention_dropout: not modelled with latent "
                               "attention (set it to 0)")
        return latent_attention(b, h, batch=batch, seq=seq, span=span, decode=decode,
                                work_fraction=frac, mode=c.latent, fused=c.fused,
                                unfused=c.unfused, kv_write=c.kv_write)
    per = m.heads / m.kv_heads
    q = b.linear(h, "W_q", m.d_model, q_dim(m), "q_proj", m.qkv_bias)
    # Qwen3-Next: an output gate sigmoid(h W_g) per query channel (q_proj twice as wide)
    gate = b.linear(h, "W_q_gate", m.d_model, q_dim(m), "q_gate_proj", m.qkv_bias) \
        if isinstance(m, HybridShape) and m.attn_output_gate else None
    k = b.linear(h, "W_k", m.d_model, kv_dim(m), "k_proj", m.qkv_bias)
    v = b.linear(h, "W_v", m.d_model, kv_dim(m), "v_proj", m.qkv_bias)
    if m.qk_norm == "head":  # RMSNorm over each head's values (Qwen3, Gemma 3)
        q = b.rms(g.view(q, (batch, seq, m.heads, m.head_dim), name=b.n("q_split")),
                  "q_norm", m.head_dim)
        k = b.rms(g.view(k, (batch, seq, m.kv_heads, m.head_dim), name=b.n("k_split")),
                  "k_norm", m.head_dim)
    elif m.qk_norm == "full":  # over all of Q and all of K (OLMoE)
        q, k = b.rms(q, "q_norm", q_dim(m)), b.rms(k, "k_norm", kv_dim(m))
    elif m.qk_norm == "heads":  # over each head, a gain per head and value (Cohere)
        q, k = (_per_head_norm(b, t, n, heads, batch, seq) for t, n, heads in
                ((q, "q", m.heads), (k, "k", m.kv_heads)))
    # a share of the layers may rotate (SmolLM3's, Cohere 2's, Llama 4's layers without
    # rotary): their elementwise FLOPs at that share, each layer kind alike
    share = 1 if m.rotary_layers is None else m.rotary_layers / m.layers
    if m.qk_norm == "l2":  # Llama 4: no gains, over each head, on its rotary layers
        q, k = (g.elementwise(t, name=b.n(f"{n}_norm"), saves=Saves.RMS_NORM,
                              flops_per_element=(fl.rmsnorm - 1) * share)
                for t, n in ((q, "q"), (k, "k")))
    if m.query_temperature:  # Llama 4: queries scaled by position on the layers without rotary
        q = g.elementwise(q, name=b.n("q_temperature"), saves=Saves.NOTHING,
                          flops_per_element=1 - share)
    if m.positions == "rotary":
        q = g.elementwise(q, name=b.n("rope_q"), saves=Saves.NOTHING,
                          flops_per_element=fl.rotary * share)
        k = g.elementwise(k, name=b.n("rope_k"), saves=Saves.NOTHING,
                           flops_per_element=fl.rotary * share)
    qh = g.view(q, (batch, m.kv_heads, per * seq, m.head_dim), name=b.n("q_heads"))
    kv_shape = (batch, m.kv_heads, span, m.head_dim)
    if decode:
        kc = g.kv_cache(b.n("k_cache"), kv_shape, bytes_per_value=m.kv_bytes)
        vc = g.kv_cache(b.n("v_cache"), kv_shape, bytes_per_value=m.kv_bytes)
        if c.kv_write:  # the new entries go straight from the projection into the cache
            for new, nm in ((k, "k_append"), (v, "v_append")):
                g.output(g.move(new, name=b.n(nm), shape=(batch, m.kv_heads, 1, m.head_dim),
                                kind=Kind.KV_CACHE, bytes_per_value=m.kv_bytes))
                g.set_crossings(new, writes=0, reads=0)
        else:
            g.output(k, v)
        k, v = kc, vc
    else:
        k = g.view(k, kv_shape, name=b.n("k_heads"))
        v = g.view(v, kv_shape, name=b.n("v_heads"))
    sinks = b.weight("sinks", (m.kv_heads, per, 1, 1)) if m.sinks else None
    if attn_dropout:
        o, kernel = attention_core_with_dropout(b, qh, k, v, work_fraction=frac, fused=c.fused,
                                                unfused=c.unfused, sinks=sinks)
    else:
        o, kernel = attention_core(g, qh, k, v, work_fraction=frac, fused=c.fused,
                                   unfused=c.unfused, softmax_flops=fl.softmax,
                                   prefix=b.prefix, sinks=sinks)
    if kernel is not None:
        b.want(FLASH_ATTENTION)
    o = g.view(o, (batch, seq, q_dim(m)), name=b.n("o_heads"))
    if gate is not None:
        o = g.elementwise(o, gate, name=b.n("attn_gate"), flops_per_element=fl.gate + 4)
    return b.linear(o, "W_o", q_dim(m), m.d_model, "o_proj", m.o_bias)


def _chunk_decode_fraction(seq: sp.Expr, context: sp.Expr, window: sp.Expr, span: sp.Expr,
                           c: Choices) -> sp.Expr:
    """Share of the ``seq x span`` scores the newest ``seq`` queries (positions up to
    ``context``) of a chunked layer compute: their chunks' keys, ``P(context) -
    P(context - seq)`` pairs with ``P(n)`` the pairs of a causal chunked prefill of n."""
    if c.window_span is WindowSpan.FILLED:
        raise SymroofError("window_span='filled' does not say which position of its chunk a "
                           "decode step is at; use window_span='exact', or "
                           "window_kernel='masked' (the whole buffer, as an eager kernel)")
    if seq == 1:
        return chunk_span(context, window, "context") / span
    return (chunk_pairs(context, window) - chunk_pairs(context - seq, window)) / (seq * span)


def _per_head_norm(b: Builder, t: Tensor, name: str, heads: sp.Expr, batch: sp.Expr,
                   seq: sp.Expr) -> Tensor:
    """A norm over each head's values with a gain per head and value (heads x head_dim)."""
    m = b.m
    split = b.g.view(t, (batch, seq, heads, m.head_dim), name=b.n(f"{name}_split"))
    gain = b.weight(f"{name}_norm.weight", (heads, m.head_dim))
    per = b.fl.layernorm if m.norm == "layernorm" else b.fl.rmsnorm
    return b.g.elementwise(split, gain, name=b.n(f"{name}_norm"), flops_per_element=per,
                           saves=Saves.NORM if m.norm == "layernorm" else Saves.RMS_NORM)


def _mixer(b: Builder, h: Tensor, grp: LayerGroup, *, batch: sp.Expr, seq: sp.Expr,
           context: sp.Expr, decode: bool, c: Choices) -> Tensor:
    """The layer's token mixer (:data:`MIXERS`): attention, a Mamba-2 mixer, both on the
    same input with their outputs summed (Falcon-H1), or a short-convolution block."""
    if grp.mixer == "attention":
        return _attention(b, h, grp, batch=batch, seq=seq, context=context, decode=decode, c=c)
    if grp.mixer == "shortconv":
        return short_conv_mixer(b, h, batch=batch, seq=seq, decode=decode)
    if grp.mixer == "mamba1":
        return mamba1_mixer(b, h, batch=batch, seq=seq, decode=decode)
    if grp.mixer == "deltanet":
        return deltanet_mixer(b, h, batch=batch, seq=seq, decode=decode)
    if grp.mixer == "lightning":
        return lightning_mixer(b, h, batch=batch, seq=seq, decode=decode)
    ssm = mamba2_mixer(b, h, batch=batch, seq=seq, decode=decode)
    if grp.mixer == "mamba2":
        return ssm
    a = _attention(b, h, grp, batch=batch, seq=seq, context=context, decode=decode, c=c)
    return b.g.elementwise(a, ssm, name=b.n("mixer_sum"), flops_per_element=b.fl.residual,
                           linear=True)


def _layer(b: Builder, x: Tensor, grp: LayerGroup, *, batch: sp.Expr, seq: sp.Expr,
           context: sp.Expr, decode: bool, c: Choices) -> Tensor:
    """One layer: norm, attention, residual; norm, MLP (or experts), residual. Gemma's
    extra norms after attention and after the MLP come with ``post_norms``."""
    g, m, fl = b.g, b.m, b.fl
    if grp.mixer == "zamba":  # Zamba2: a shared block, then a Mamba-2 layer (zamba.py)
        return zamba_layer(b, x, grp, batch=batch, seq=seq, context=context, decode=decode,
                           causal=c.causal, fused=c.fused, unfused=c.unfused,
                           training=c.dropout)
    x = g.view(x, x.shape, name=b.n("layer_input"))  # each of the layers has its own input
    if m.parallel:
        return _parallel_layer(b, x, grp, batch=batch, seq=seq, context=context,
                               decode=decode, c=c)
    if grp.mixer != "none":
        a = _mixer(b, b.norm(x, "attn_norm"), grp, batch=batch, seq=seq, context=context,
                   decode=decode, c=c)
        if m.post_norms:
            a = b.norm(a, "post_attn_norm")
        if c.dropout:
            a = b.dropout(a, "attn_out_dropout", m.hidden_dropout)
        x = g.elementwise(x, a, name=b.n("residual_attn"), flops_per_element=fl.residual,
                          linear=True)
    if not grp.ffn:  # a hybrid's mixer-only layer
        return x
    h = b.norm(x, "mlp_norm")
    if grp.moe:
        y = moe_mlp(b, h, batch, seq, c.expert_reads)
    else:
        y = b.dense_mlp(h, m.d_ff)
    if m.post_norms:
        y = b.norm(y, "post_mlp_norm")
    if c.dropout:
        y = b.dropout(y, "mlp_out_dropout", m.hidden_dropout)
    return g.elementwise(x, y, name=b.n("residual_mlp"), flops_per_element=fl.residual,
                         linear=True)


def _parallel_layer(b: Builder, x: Tensor, grp: LayerGroup, *, batch: sp.Expr, seq: sp.Expr,
                    context: sp.Expr, decode: bool, c: Choices) -> Tensor:
    """Attention and the MLP side by side off one norm, both added to the input (Cohere,
    GPT-J): x + attn(norm(x)) + mlp(norm(x))."""
    g, m, fl = b.g, b.m, b.fl
    if m.post_norms or (c.dropout and m.hidden_dropout != 0):
        raise SymroofError(f"model {m.name!r} parallel: not modelled with post_norms or "
                           "hidden_dropout")
    h = b.norm(x, "attn_norm")
    a = _attention(b, h, grp, batch=batch, seq=seq, context=context, decode=decode, c=c)
    y = moe_mlp(b, h, batch, seq, c.expert_reads) if grp.moe else b.dense_mlp(h, m.d_ff)
    x = g.elementwise(x, a, name=b.n("residual_attn"), flops_per_element=fl.residual,
                      linear=True)
    return g.elementwise(x, y, name=b.n("residual_mlp"), flops_per_element=fl.residual,
                         linear=True)


def _check_positions(m: ModelShape, positions: sp.Expr, what: str) -> None:
    """A learned position table has ``max_positions`` rows: a longer sequence has none."""
    limit = m.max_positions
    if m.positions != "learned" or limit is None:
        return
    if (positions - limit).is_positive:
        raise SymroofError(f"{what} {positions} exceeds the {limit} positions of model "
                           f"{m.name!r}'s learned position table (max_positions)")


def forward_graph(m: ModelShape, *, batch: object, seq: object,
                  context: object | None = None, decode: bool = False,
                  causal: Causal | bool | str = Causal.HALF, fused: bool = True,
                  unfused: Unfused | str = Unfused.WRITE_AND_READ,
                  logits: Logits | str = Logits.ALL, kv_write: bool = False,
                  flops_per_element: ElementwiseFlops = ElementwiseFlops(),
                  name: str | None = None, window_kernel: WindowKernel | str = WindowKernel.BAND,
                  window_span: WindowSpan | str = WindowSpan.EXACT,
                  latent: LatentDecode | str = LatentDecode.ABSORBED,
                  expert_reads: ExpertReads | str = ExpertReads.EXPECTED,
                  dropout: bool = False) -> Graph:
    """The forward graph of ``m`` (see :func:`forward`) through its pipeline's fusion
    stage."""
    g, fuse = forward(m, batch=batch, seq=seq, context=context, decode=decode, causal=causal,
                      fused=fused, unfused=unfused, logits=logits, kv_write=kv_write,
                      flops_per_element=flops_per_element, name=name,
                      window_kernel=window_kernel, window_span=window_span, latent=latent,
                      expert_reads=expert_reads, dropout=dropout)
    return Pipeline(g.name, (fuse,)).apply(g) if fuse.wanted else g


def forward(m: ModelShape, *, batch: object, seq: object,
           context: object | None = None, decode: bool = False,
           causal: Causal | bool | str = Causal.HALF, fused: bool = True,
           unfused: Unfused | str = Unfused.WRITE_AND_READ,
           logits: Logits | str = Logits.ALL, kv_write: bool = False,
           flops_per_element: ElementwiseFlops = ElementwiseFlops(),
           name: str | None = None, window_kernel: WindowKernel | str = WindowKernel.BAND,
           window_span: WindowSpan | str = WindowSpan.EXACT,
           latent: LatentDecode | str = LatentDecode.ABSORBED,
           expert_reads: ExpertReads | str = ExpertReads.EXPECTED,
           dropout: bool = False) -> tuple[Graph, Fuse]:
    """The forward graph of ``m`` as built (each op its own kernel) and the fusion pass
    its builder queued (attention's kernel, with what stays on chip): the graph and the
    first stage of the workload's pipeline. ``seq`` new tokens per sequence attending to
    ``context`` positions (prefill: ``context = seq``; decode: ``seq = 1``). With
    ``dropout`` (training), the model's dropouts run: on the embedding and each sublayer's
    output (``hidden_dropout``) and on the attention probabilities (``attention_dropout``).
    ``expert_reads`` defaults to ``"expected"`` as every builder's does (a training step
    asks for ``"all"``: :func:`symroof.workloads.transformer.training_graph`)."""
    if not isinstance(m, ModelShape):
        raise SymroofError(f"expected a transformer model, got {type(m).__name__}")
    lg = option(Logits, logits, "logits")
    c = Choices(causal, fused, unfused, kv_write, window_kernel,  # type: ignore[arg-type]
                window_span, latent, expert_reads, dropout)  # type: ignore[arg-type]
    bt, sq = as_dim(batch, "batch"), as_dim(seq, "seq")
    ctx = sq if context is None else as_dim(context, "context")
    _check_positions(m, ctx, "context" if decode else "seq")
    g = Graph(name or f"{m.name}-{'decode' if decode else 'prefill'}")
    build = Builder(g, m, flops_per_element)
    table: Tensor | None = None
    if m.vocab is not None:
        table = g.weight("embed", (m.vocab, m.d_model), bytes_per_value=m.weight_bytes)
        x = g.gather(table, (bt, sq), name="tokens", bytes_per_value=m.activation_bytes)
    else:
        x = g.input("x", (bt, sq, m.d_model), bytes_per_value=m.activation_bytes)
    if m.positions == "learned":
        assert m.max_positions is not None  # the description validates it
        wpe = g.weight("pos_embed", (m.max_positions, m.d_model), bytes_per_value=m.weight_bytes)
        pos = g.gather(wpe, (sq,), name="positions", bytes_per_value=m.activation_bytes)
        x = g.elementwise(x, pos, name="add_positions",
                          flops_per_element=flops_per_element.residual, linear=True)
    if c.dropout:
        x = build.dropout(x, "embed_dropout", m.hidden_dropout)
    if m.window is not None and c.window_span is WindowSpan.FILLED:
        what = "context" if decode else "seq"
        g.record(assumptions=(*g.provenance.assumptions,
                              f"window_span='filled': {what} >= window {m.window}"))
    for grp in m.layer_groups:
        build.prefix = grp.prefix
        with g.repeat(grp.count, grp.block):
            x = _layer(build, x, grp, batch=bt, seq=sq, context=ctx, decode=decode, c=c)
    build.prefix = ""
    x = build.norm(x, "final_norm")
    if lg is Logits.NONE or table is None:
        g.output(x)
        return g, build.fusion()
    if lg is Logits.LAST and sq != 1:
        x = g.move(x, name="last_token", shape=(bt, 1, m.d_model), read_fraction=1 / sq)
    if m.tied_embeddings:
        out = g.gemm(x, table, transpose_b=True, name="lm_head")
    else:
        w = g.weight("W_lm", (m.d_model, m.vocab), bytes_per_value=m.weight_bytes)
        out = g.gemm(x, w, name="lm_head")
    g.output(out)
    return g, build.fusion()


def _inputs_of_kind(g: Graph, kind: Kind) -> Iterator[tuple[Tensor, sp.Expr]]:
    return ((t, g.count(t)) for t in g.inputs if t.kind == kind)


def weight_tensors(m: ModelShape) -> list[tuple[Tensor, sp.Expr]]:
    """Every weight tensor of ``m`` with how many times it occurs (layers for per-layer ones)."""
    return list(_inputs_of_kind(forward_graph(m, batch=1, seq=1), Kind.WEIGHT))


def kv_cache_tensors(m: ModelShape, context: object = 1) -> list[tuple[Tensor, sp.Expr]]:
    """The KV-cache tensors of a decode step of one sequence at ``context`` positions (a
    windowed layer holds at most its window), with counts."""
    g = forward_graph(m, batch=1, seq=1, context=context, decode=True, logits=Logits.NONE)
    return list(_inputs_of_kind(g, Kind.KV_CACHE))

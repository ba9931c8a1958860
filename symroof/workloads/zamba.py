"""Zamba2's hybrid layers: a shared transformer block reused at every hybrid layer.

A Zamba2 model (transformers 5.24's ``modeling_zamba2.py``) is a stack of Mamba-2
layers; at its hybrid layers a *shared* transformer block runs first. Its input is the
hidden state concatenated with the token embeddings (2 d_model wide): an RMSNorm over the
2d values, attention whose Q, K, V project from 2d (heads of 2d / H) and whose output
projection goes back to d, an RMSNorm, a gated MLP (one ``gate_up`` projection to 2 F).
Each use adds its own low-rank adapters (LoRA-like, rank r) to Q, K and V
(``use_shared_attention_adapter``) and to ``gate_up`` (always, in 5.24), then its own
d x d ``linear``. The block's output t enters the Mamba-2 layer's input only: the layer
computes ``x + mamba(norm(x + t))`` (the residual skips t).

``num_mem_blocks`` M blocks alternate over the hybrid layers (1, 2, 1, 2, ...): their
weights are declared once with count M (parameters and weight bytes M times a block),
while every use's ops read them (FLOPs and weight reads per use, as the reference
re-reads them each time). The per-use adapters and linear are the layer's own.

Zamba (v1) has the same hybrid layer with one shared block, no adapters and no rotary,
and Mamba-1 layers (``mamba1`` widths) in place of Mamba-2.

Convention named here: the concatenation is a copy (:meth:`Graph.move`) that reads the
hidden state and the embeddings and writes the 2d-wide input of the norm.
"""

from __future__ import annotations

import sympy as sp

from symroof.errors import SymroofError
from symroof.ir import Graph, Kind, Tensor
from symroof.options import Saves
from symroof.workloads.attention import FLASH_ATTENTION, attention_core, causal_fraction
from symroof.workloads.builder import Builder, LayerGroup
# the shared blocks' widths: data below the workloads, beside the mixers'; this is one of
# their public paths
from symroof.workloads.mixers import SharedBlocks
from symroof.workloads.recurrent import mamba1_mixer, mamba2_mixer
from symroof.workloads.shape import HybridShape

__all__ = ["SharedBlocks", "zamba_layer"]

#: The names the token embeddings may carry in a forward graph, most derived first.
_EMBEDDINGS = ("embed_dropout", "add_positions", "tokens", "x")


def _embeddings(g: Graph) -> Tensor:
    """The token embeddings, the second input every hybrid layer reads."""
    tensors = {t.name: t for t in g.nx if isinstance(t, Tensor)}
    for name in _EMBEDDINGS:
        if name in tensors:
            return tensors[name]
    raise SymroofError(f"graph {g.name!r}: a Zamba2 hybrid layer needs the token embeddings")


def _shared(b: Builder, z: SharedBlocks, name: str, shape: tuple[sp.Expr, ...]) -> Tensor:
    """A weight of the shared blocks: declared once with count M, read by every use."""
    return b.g.input(b.n(f"shared.{name}"), shape, kind=Kind.WEIGHT,
                     bytes_per_value=b.m.weight_bytes, count=z.mem_blocks, block="shared")


def _adapted(b: Builder, z: SharedBlocks, h: Tensor, w: Tensor, name: str, d_in: sp.Expr,
             d_out: sp.Expr, adapter: bool) -> Tensor:
    """``h W`` (shared W) plus, with ``adapter``, this use's ``(h A) B`` of rank r."""
    g = b.g
    y = g.gemm(h, w, name=b.n(name))
    if not adapter:
        return y
    r = z.adapter_rank
    lo = b.linear(h, f"{name}_adapter_A", d_in, r, f"{name}_adapter_down", False)
    hi = b.linear(lo, f"{name}_adapter_B", r, d_out, f"{name}_adapter_up", False)
    return g.elementwise(y, hi, name=b.n(f"{name}+adapter"), flops_per_element=b.fl.residual,
                         linear=True)


def _shared_attention(b: Builder, z: SharedBlocks, h: Tensor, *, batch: sp.Expr,
                      seq: sp.Expr, context: sp.Expr, decode: bool, causal: object,
                      fused: bool, unfused: object) -> Tensor:
    g, m, fl = b.g, b.m, b.fl
    d2 = 2 * m.d_model
    qd, kvd = m.heads * m.head_dim, m.kv_heads * m.head_dim
    if z.attention_adapter and (sp.expand(qd - d2) != 0 or sp.expand(kvd - d2) != 0):
        raise SymroofError(f"model {m.name!r} zamba use_shared_attention_adapter: the "
                           f"adapters add 2 d_model = {d2} values to Q ({qd}) and K, V "
                           f"({kvd}); num_key_value_heads must equal num_attention_heads")
    q = _adapted(b, z, h, _shared(b, z, "W_q", (d2, qd)), "q_proj", d2, qd,
                 z.attention_adapter)
    k = _adapted(b, z, h, _shared(b, z, "W_k", (d2, kvd)), "k_proj", d2, kvd,
                 z.attention_adapter)
    v = _adapted(b, z, h, _shared(b, z, "W_v", (d2, kvd)), "v_proj", d2, kvd,
                 z.attention_adapter)
    if z.rope:
        q = g.elementwise(q, name=b.n("rope_q"), saves=Saves.NOTHING, flops_per_element=fl.rotary)
        k = g.elementwise(k, name=b.n("rope_k"), saves=Saves.NOTHING, flops_per_element=fl.rotary)
    per = m.heads / m.kv_heads
    qh = g.view(q, (batch, m.kv_heads, per * seq, m.head_dim), name=b.n("q_heads"))
    kv_shape = (batch, m.kv_heads, context, m.head_dim)
    if decode:
        kc = g.kv_cache(b.n("k_cache"), kv_shape, bytes_per_value=m.kv_bytes)
        vc = g.kv_cache(b.n("v_cache"), kv_shape, bytes_per_value=m.kv_bytes)
        g.output(k, v)
        k, v, frac = kc, vc, sp.Integer(1)
    else:
        k = g.view(k, kv_shape, name=b.n("k_heads"))
        v = g.view(v, kv_shape, name=b.n("v_heads"))
        frac = causal_fraction(causal, seq)  # type: ignore[arg-type]
    o, kernel = attention_core(g, qh, k, v, work_fraction=frac, fused=fused,
                               unfused=unfused, softmax_flops=fl.softmax,  # type: ignore[arg-type]
                               prefix=b.prefix)
    if kernel is not None:
        b.want(FLASH_ATTENTION)
    o = g.view(o, (batch, seq, qd), name=b.n("o_heads"))
    return g.gemm(o, _shared(b, z, "W_o", (qd, m.d_model)), name=b.n("o_proj"))


def _shared_norm(b: Builder, z: SharedBlocks, x: Tensor, name: str, width: sp.Expr) -> Tensor:
    gain = _shared(b, z, f"{name}.weight", (width,))
    return b.g.elementwise(x, gain, name=b.n(name), flops_per_element=b.fl.rmsnorm,
                           saves=Saves.RMS_NORM)


def zamba_layer(b: Builder, x: Tensor, grp: LayerGroup, *, batch: sp.Expr, seq: sp.Expr,
                context: sp.Expr, decode: bool, causal: object, fused: bool,
                unfused: object, training: bool = False) -> Tensor:
    """One Zamba2 hybrid layer on the residual stream ``x``: the shared block on
    [x, embeddings], this use's linear, then ``x + mamba(norm(x + t))``. ``training``
    (a training graph, with its dropouts) is refused."""
    g, m, fl = b.g, b.m, b.fl
    if training:
        raise SymroofError(f"model {m.name!r}: training graphs of Zamba2 are not modelled "
                           "(the backward pass does not sum the gradients that the token "
                           "embeddings and the shared blocks' weights receive at every use)")
    if not (isinstance(m, HybridShape) and isinstance(m.zamba, SharedBlocks)):
        raise SymroofError(f"model {m.name!r} zamba: a zamba layer group needs the shared "
                           "blocks' widths (symroof.workloads.zamba.SharedBlocks)")
    z = m.zamba
    if m.norm != "rmsnorm":
        raise SymroofError(f"model {m.name!r} norm: Zamba2's shared blocks use rmsnorm, got "
                           f"{m.norm!r}")
    x = g.view(x, x.shape, name=b.n("layer_input"))
    d, d2 = m.d_model, 2 * m.d_model
    cat = g.move(x, _embeddings(g), name=b.n("concat"), shape=(batch, seq, d2))
    h = _shared_norm(b, z, cat, "input_norm", d2)
    a = _shared_attention(b, z, h, batch=batch, seq=seq, context=context, decode=decode,
                          causal=causal, fused=fused, unfused=unfused)
    h = _shared_norm(b, z, a, "pre_ff_norm", d)
    f = m.d_ff
    gu = _adapted(b, z, h, _shared(b, z, "W_gate_up", (d, 2 * f)), "gate_up", d, 2 * f,
                  z.mlp_adapter)
    # act(gate) * up over the two halves of gate_up: a fold of the pair axis, the
    # activation and the product per output value (half of that per value read)
    pair = g.view(gu, (batch, seq, 2, f), name=b.n("gate_up_halves"))
    act = getattr(fl, str(m.activation))
    y = g.reduce(pair, name=b.n("act"), axis=-2,
                 flops_per_element=sp.Rational(act + fl.gate, 2))
    y = g.gemm(y, _shared(b, z, "W_down", (f, d)), name=b.n("down"))
    t = b.linear(y, "W_linear", d, d, "linear", False)     # this use's own projection
    u = g.elementwise(x, t, name=b.n("add_shared"), flops_per_element=fl.residual,
                      linear=True)
    # Zamba2: Mamba-2; Zamba: Mamba-1 (the model's mamba1 widths)
    mixer = mamba1_mixer if m.mamba1 is not None else mamba2_mixer
    s = mixer(b, b.norm(u, "mamba_norm"), batch=batch, seq=seq, decode=decode)
    return g.elementwise(x, s, name=b.n("residual_mamba"), flops_per_element=fl.residual,
                         linear=True)

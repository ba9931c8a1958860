"""Transformer workloads as graphs: prefill, one decode step, and training.

One layer is built once inside ``Graph.repeat(layers)``; embeddings, the final norm and
the LM head sit outside it. FLOPs and bytes come from the cost interpreter; nothing
here is a closed form.

Counting conventions (each a named option):

- ``ops="contractions"`` (default): FLOPs of GEMMs only, as the seeds and PyTorch's
  counter count; ``ops="all"`` adds softmax, norms, activations, residual adds at the
  per-element FLOPs of :class:`ElementwiseFlops`.
- ``causal``: ``True``/``"half"`` (default, the seeds: a kernel skips about half),
  ``"exact"`` (S(S+1)/2 pairs), ``False`` (full S x S, as PyTorch's eager attention).
- The input embedding is a gather: only the looked-up rows are read.

>>> from symroof.models import transformer
>>> from symroof.symbols import L, D, H, B, S
>>> dec = decode(transformer(layers=L, d_model=D, heads=H), batch=B, context=S)
>>> dec.flops
24*B*D**2*L + 4*B*D*L*S
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

from symroof.analysis import Analysis, analyze
from symroof.cost import FlopCount
from symroof.errors import SymroofError
from symroof.ir import Elementwise, Graph, Kind, Tensor, as_dim
from symroof.models.config import TransformerModel
from symroof.workloads.attention import (ElementwiseFlops, attention_core, causal_fraction,
                                         finish, op_groups, pending_fusions)

__all__ = ["prefill", "decode", "training", "training_graph", "forward_graph", "weight_tensors",
           "ElementwiseFlops", "DECODE_TRAFFIC", "ADAM"]


#: Which tensor kinds count toward a decode step's traffic.
DECODE_TRAFFIC = {
    "seed": frozenset({Kind.WEIGHT, Kind.KV_CACHE}),   # activations resident (the seeds)
    "full": frozenset(Kind),                            # activations cross too
}


def _linear(g: Graph, m: TransformerModel, x: Tensor, w_name: str, d_in: sp.Expr,
            d_out: sp.Expr, name: str, bias: bool, fl: ElementwiseFlops,
            experts: sp.Expr | None = None, share: sp.Expr = sp.Integer(1)) -> Tensor:
    """``x @ W (+ bias)``; a bias add is fused into the GEMM as its epilogue.

    With ``experts``, W is (experts, d_in, d_out) and each token row meets ``share`` of
    the experts (the GEMM does that fraction of the dense work).
    """
    shape = (d_in, d_out) if experts is None else (experts, d_in, d_out)
    y = g.gemm(x, g.weight(w_name, shape, bytes_per_value=m.weight_bytes), name=name,
               work_fraction=share)
    if bias:
        bshape = (d_out,) if experts is None else (experts, 1, d_out)
        bvec = g.weight(f"{w_name}.bias", bshape, bytes_per_value=m.weight_bytes)
        out = g.elementwise(y, bvec, name=f"{name}+bias", flops_per_element=fl.bias * share,
                           linear=True)
        pending_fusions(g).append({name, out.name})  # the bias add is the GEMM's epilogue
        y = out
    if share != 1:
        g.set_crossings(y, writes=share, reads=share)
    return y


def _norm(g: Graph, m: TransformerModel, x: Tensor, name: str, fl: ElementwiseFlops) -> Tensor:
    if m.norm is None:
        return x
    params = [g.weight(f"{name}.weight", (m.d_model,), bytes_per_value=m.weight_bytes)]
    if m.norm == "layernorm":
        params.append(g.weight(f"{name}.bias", (m.d_model,), bytes_per_value=m.weight_bytes))
    per = fl.layernorm if m.norm == "layernorm" else fl.rmsnorm
    return g.elementwise(x, *params, name=name, flops_per_element=per)


def _mlp(g: Graph, m: TransformerModel, x: Tensor, batch: sp.Expr, q_len: sp.Expr,
         fl: ElementwiseFlops) -> Tensor:
    """The MLP; a mixture of experts routes each token to ``experts_per_token`` experts.

    MoE tensors are laid out per expert, (experts, tokens, width), of which each token
    fills ``k/E``: the expert GEMMs do that fraction of the dense work and the routed
    activations cross the boundary at that fraction. Every expert's weights are read
    (true once batch x k exceeds the expert count; an upper bound below that).
    """
    act = getattr(fl, m.activation)
    e, share, router = None, sp.Integer(1), None
    if m.experts != 1:
        router = g.gemm(x, g.weight("W_router", (m.d_model, m.experts),
                                    bytes_per_value=m.weight_bytes), name="router")
        e, share = m.experts, m.experts_per_token / m.experts
        x = g.move(x, name="dispatch", shape=(e, batch * q_len, m.d_model))
        g.set_crossings(x, writes=share, reads=share)
    up = _linear(g, m, x, "W_up", m.d_model, m.d_ff, "up", m.mlp_bias, fl, e, share)
    if m.mlp == "gated":
        gate = _linear(g, m, x, "W_gate", m.d_model, m.d_ff, "gate", m.mlp_bias, fl, e, share)
        h = g.elementwise(gate, up, name="act", flops_per_element=(act + fl.gate) * share)
    else:
        h = g.elementwise(up, name="act", flops_per_element=act * share)
    if share != 1:
        g.set_crossings(h, writes=share, reads=share)
    y = _linear(g, m, h, "W_down", m.d_ff, m.d_model, "down", m.mlp_bias, fl, e, share)
    if e is not None:  # expert outputs weighted by the router's gates and summed
        y = g.move(y, router, name="combine", shape=(batch, q_len, m.d_model))
    return y


def _layer(g: Graph, m: TransformerModel, x: Tensor, *, batch: sp.Expr, q_len: sp.Expr,
           kv_len: sp.Expr, decode: bool, causal: bool | str, fused: bool, unfused: str,
           kv_write: bool, fl: ElementwiseFlops) -> Tensor:
    per = m.heads / m.kv_heads
    x = g.view(x, x.shape, name="layer_input")  # each of the layers has its own input
    h = _norm(g, m, x, "attn_norm", fl)
    q = _linear(g, m, h, "W_q", m.d_model, m.q_dim, "q_proj", m.qkv_bias, fl)
    k = _linear(g, m, h, "W_k", m.d_model, m.kv_dim, "k_proj", m.qkv_bias, fl)
    v = _linear(g, m, h, "W_v", m.d_model, m.kv_dim, "v_proj", m.qkv_bias, fl)
    if m.positions == "rotary":
        q = g.elementwise(q, name="rope_q", flops_per_element=fl.rotary)
        k = g.elementwise(k, name="rope_k", flops_per_element=fl.rotary)
    qh = g.view(q, (batch, m.kv_heads, per * q_len, m.head_dim), name="q_heads")
    if decode:
        kc = g.kv_cache("k_cache", (batch, m.kv_heads, kv_len, m.head_dim), bytes_per_value=m.kv_bytes)
        vc = g.kv_cache("v_cache", (batch, m.kv_heads, kv_len, m.head_dim), bytes_per_value=m.kv_bytes)
        if kv_write:  # the new entries go straight from the projection into the cache
            for new, nm in ((k, "k_append"), (v, "v_append")):
                g.output(g.move(new, name=nm, shape=(batch, m.kv_heads, 1, m.head_dim),
                                kind=Kind.KV_CACHE, bytes_per_value=m.kv_bytes))
                g.set_crossings(new, writes=0, reads=0)
        else:
            g.output(k, v)
        k, v = kc, vc
    else:
        k = g.view(k, (batch, m.kv_heads, kv_len, m.head_dim), name="k_heads")
        v = g.view(v, (batch, m.kv_heads, kv_len, m.head_dim), name="v_heads")
    frac = sp.Integer(1) if decode else causal_fraction(causal, q_len)
    o = attention_core(g, qh, k, v, work_fraction=frac, fused=fused, unfused=unfused,
                       softmax_flops=fl.softmax, prefix="")
    o = g.view(o, (batch, q_len, m.q_dim), name="o_heads")
    a = _linear(g, m, o, "W_o", m.q_dim, m.d_model, "o_proj", m.o_bias, fl)
    x = g.elementwise(x, a, name="residual_attn", flops_per_element=fl.residual,
                     linear=True)
    h = _norm(g, m, x, "mlp_norm", fl)
    y = _mlp(g, m, h, batch, q_len, fl)
    return g.elementwise(x, y, name="residual_mlp", flops_per_element=fl.residual,
                          linear=True)


def forward_graph(m: TransformerModel, *, batch: object, q_len: object, kv_len: object | None = None,
                  decode: bool = False, causal: bool | str = True, fused: bool = True,
                  unfused: str = "write_and_read", logits: str = "all", kv_write: bool = False,
                  flops_per_element: ElementwiseFlops = ElementwiseFlops(),
                  name: str | None = None) -> Graph:
    """The forward graph of ``m`` over ``q_len`` new tokens per sequence attending to
    ``kv_len`` positions (prefill: ``kv_len = q_len``; decode: ``q_len = 1``)."""
    if not isinstance(m, TransformerModel):
        raise SymroofError(f"expected a transformer model, got {type(m).__name__}")
    if logits not in ("all", "last", "none"):
        raise SymroofError(f"logits: expected 'all', 'last' or 'none', got {logits!r}")
    bt, ql = as_dim(batch, "batch"), as_dim(q_len, "tokens")
    kl = ql if kv_len is None else as_dim(kv_len, "context")
    fl = flops_per_element
    g = Graph(name or f"{m.name}-{'decode' if decode else 'prefill'}")
    if m.vocab is not None:
        table = g.weight("embed", (m.vocab, m.d_model), bytes_per_value=m.weight_bytes)
        x = g.gather(table, (bt, ql), name="tokens", bytes_per_value=m.activation_bytes)
    else:
        table = None
        x = g.input("x", (bt, ql, m.d_model), bytes_per_value=m.activation_bytes)
    if m.positions == "learned":
        wpe = g.weight("pos_embed", (m.max_positions, m.d_model), bytes_per_value=m.weight_bytes)
        pos = g.gather(wpe, (ql,), name="positions", bytes_per_value=m.activation_bytes)
        x = g.elementwise(x, pos, name="add_positions", flops_per_element=fl.residual,
                          linear=True)
    with g.repeat(m.layers, "layer"):
        x = _layer(g, m, x, batch=bt, q_len=ql, kv_len=kl, decode=decode, causal=causal,
                   fused=fused, unfused=unfused, kv_write=kv_write, fl=fl)
    x = _norm(g, m, x, "final_norm", fl)
    if logits == "none" or m.vocab is None:
        g.output(x)
        return finish(g)
    if logits == "last" and ql != 1:
        x = g.move(x, name="last_token", shape=(bt, 1, m.d_model), read_fraction=1 / ql)
    if m.tied_embeddings:
        out = g.gemm(x, table, transpose_b=True, name="lm_head")  # type: ignore[arg-type]
    else:
        w = g.weight("W_lm", (m.d_model, m.vocab), bytes_per_value=m.weight_bytes)
        out = g.gemm(x, w, name="lm_head")
    g.output(out)
    return finish(g)


def weight_tensors(m: TransformerModel) -> list[tuple[Tensor, sp.Expr]]:
    """Every weight tensor of ``m`` with how many times it occurs (layers for per-layer ones)."""
    g = forward_graph(m, batch=1, q_len=1, logits="all")
    return [(t, g.count(t)) for t in g.inputs if t.kind == Kind.WEIGHT]


def prefill(model: TransformerModel, batch: object, prompt: object, *, causal: bool | str = True,
            logits: str = "all", fused: bool = True, unfused: str = "write_and_read",
            ops: str = "contractions", flops: FlopCount | str = FlopCount.TWO_PER_MAC,
            flops_per_element: ElementwiseFlops = ElementwiseFlops()) -> Analysis:
    """One forward pass over ``batch x prompt`` tokens (attention fused by default).

    Traffic is compulsory traffic of every tensor kind (weights, activations).
    """
    g = forward_graph(model, batch=batch, q_len=prompt, causal=causal, fused=fused,
                      unfused=unfused, logits=logits, flops_per_element=flops_per_element)
    return analyze(g, flops=flops, ops=op_groups(ops), tokens=as_dim(batch, "batch") * as_dim(prompt, "prompt"))


def decode(model: TransformerModel, batch: object, context: object | None = None, *,
           past: object | None = None, traffic: str = "seed", kv_write: bool = False,
           logits: str = "all", ops: str = "contractions",
           flops: FlopCount | str = FlopCount.TWO_PER_MAC,
           flops_per_element: ElementwiseFlops = ElementwiseFlops()) -> Analysis:
    """One decode step: one new token per sequence attending to ``context`` cached positions.

    ``context`` counts the KV positions attended, the new token's included; give
    ``past`` instead for a step after ``past`` cached tokens (context = past + 1, as in a
    PyTorch step). Weights are read once per step whatever the batch; the KV cache is
    read every step. ``traffic="seed"`` (default) counts weights and KV cache, with
    activations resident on chip, as the seeds do; ``"full"`` counts activations too.
    ``kv_write=False`` (default, the seeds) leaves out the write of the new K/V entries.
    """
    if (context is None) == (past is None):
        raise SymroofError("decode: give exactly one of context (positions attended, the new "
                           "token included) and past (cached tokens before this step)")
    ctx = as_dim(context, "context") if past is None else as_dim(past, "past") + 1
    if traffic not in DECODE_TRAFFIC:
        raise SymroofError(f"decode traffic: expected one of {', '.join(DECODE_TRAFFIC)}, "
                           f"got {traffic!r}")
    g = forward_graph(model, batch=batch, q_len=1, kv_len=ctx, decode=True, logits=logits,
                      kv_write=kv_write, flops_per_element=flops_per_element)
    return analyze(g, flops=flops, ops=op_groups(ops), traffic=DECODE_TRAFFIC[traffic],
                   tokens=as_dim(batch, "batch"))


@dataclass(frozen=True)
class Optimizer:
    """An optimizer step as per-parameter elementwise work over its state."""

    name: str
    state_bytes: sp.Expr          # bytes of state per parameter
    flops_per_param: int          # FLOPs of one update per parameter
    source: str


#: Mixed-precision Adam: fp32 master weights, momentum and variance = 12 bytes per
#: parameter beside 2-byte weights and gradients (Rajbhandari et al., ZeRO, 2020).
ADAM = Optimizer("adam", sp.Integer(12), 12,
                 "m, v updates 7, bias-corrected step 5 FLOPs; state per ZeRO (2020)")


def training_graph(model: TransformerModel, batch: object, seq: object, *,
                   causal: bool | str = True, fused: bool = True, recompute: bool = True,
                   optimizer: Optimizer | None = ADAM,
                   flops_per_element: ElementwiseFlops = ElementwiseFlops()) -> Graph:
    """Forward over ``batch x seq`` tokens, its backward pass, and an optimizer step."""
    from symroof.passes.backward import backward

    fwd = forward_graph(model, batch=batch, q_len=seq, causal=causal, fused=fused,
                        logits="all", flops_per_element=flops_per_element,
                        name=f"{model.name}-train")
    g = backward(fwd, recompute=recompute)
    if optimizer is None:
        return g
    weights = {t.name: t for t in fwd.inputs if t.kind == Kind.WEIGHT}
    for wname, gname in g.meta["grads"].items():  # type: ignore[union-attr]
        w, grad = weights[wname], g.node(gname)
        cnt, blk = fwd.count(w), fwd.block(w)
        state = g.input(f"{optimizer.name}:{wname}", w.shape, kind=Kind.OPTIMIZER_STATE,
                        bytes_per_value=optimizer.state_bytes, count=cnt)
        new = Tensor(f"{optimizer.name}:{wname}'", w.shape, Kind.OPTIMIZER_STATE,
                     optimizer.state_bytes)
        g.add(Elementwise(f"{optimizer.name}_step:{wname}", (grad, state), new,  # type: ignore[arg-type]
                          optimizer.flops_per_param), count=cnt, block=blk)
        w_new = Tensor(f"{wname}'", w.shape, Kind.WEIGHT, w.bytes_per_value)
        g.add(Elementwise(f"cast:{wname}", (new,), w_new, 1), count=cnt, block=blk)
        g.set_crossings(new, reads=0)  # the cast reads the new master weights in registers
        g.output(new, w_new)
    return g


def training(model: TransformerModel, batch: object, seq: object, *, causal: bool | str = True,
             fused: bool = True, recompute: bool = True, optimizer: Optimizer | None = ADAM,
             ops: str = "contractions", flops: FlopCount | str = FlopCount.TWO_PER_MAC,
             flops_per_element: ElementwiseFlops = ElementwiseFlops()) -> Analysis:
    """One training step over ``batch x seq`` tokens: forward, backward, optimizer.

    Each GEMM gains a data-gradient and a weight-gradient GEMM of its own size, so the
    weight GEMMs cost 6 FLOPs per parameter per token. With ``fused`` attention and
    ``recompute`` (FlashAttention), the backward pass recomputes QK^T instead of saving
    the S x S matrices.
    """
    g = training_graph(model, batch, seq, causal=causal, fused=fused, recompute=recompute,
                       optimizer=optimizer, flops_per_element=flops_per_element)
    return analyze(g, flops=flops, ops=op_groups(ops),
                   tokens=as_dim(batch, "batch") * as_dim(seq, "seq"))

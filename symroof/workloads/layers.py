"""The forward graph of a transformer description, layer by layer.

One layer is built once inside ``Graph.repeat(layers)``; embeddings, the final norm and
the LM head sit outside it. The fusion groups the builder wants (FlashAttention, GEMM
epilogues) are collected while building and applied by the fusion pass at the end. The
model description is read through the :class:`TransformerShape` protocol, so this module
needs nothing from ``symroof.models`` (which builds on it to count parameters).

>>> from symroof.models import transformer
>>> from symroof.symbols import L, D, H
>>> g = forward_graph(transformer(layers=L, d_model=D, heads=H), batch=1, seq=1)
>>> sorted({t.name for t in g.inputs})
['W_down', 'W_k', 'W_o', 'W_q', 'W_up', 'W_v', 'x']
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import sympy as sp

from symroof.errors import SymroofError
from symroof.ir import Graph, Kind, Tensor, as_dim
from symroof.options import Causal, Logits, Unfused, option
from symroof.workloads.attention import (ElementwiseFlops, FusionGroup, attention_core,
                                         causal_fraction, fuse_groups)

__all__ = ["TransformerShape", "forward_graph", "weight_tensors", "kv_cache_tensors"]


@runtime_checkable
class TransformerShape(Protocol):
    """What the graph builder reads from a model description (``TransformerModel``)."""

    @property
    def name(self) -> str: ...

    @property
    def layers(self) -> sp.Expr: ...

    @property
    def d_model(self) -> sp.Expr: ...

    @property
    def heads(self) -> sp.Expr: ...

    @property
    def kv_heads(self) -> sp.Expr: ...

    @property
    def head_dim(self) -> sp.Expr: ...

    @property
    def d_ff(self) -> sp.Expr: ...

    @property
    def vocab(self) -> sp.Expr | None: ...

    @property
    def mlp(self) -> str: ...

    @property
    def activation(self) -> str: ...

    @property
    def norm(self) -> str | None: ...

    @property
    def tied_embeddings(self) -> bool: ...

    @property
    def qkv_bias(self) -> bool: ...

    @property
    def o_bias(self) -> bool: ...

    @property
    def mlp_bias(self) -> bool: ...

    @property
    def positions(self) -> str | None: ...

    @property
    def max_positions(self) -> sp.Expr | None: ...

    @property
    def experts(self) -> sp.Expr: ...

    @property
    def experts_per_token(self) -> sp.Expr: ...

    @property
    def weight_bytes(self) -> sp.Expr: ...

    @property
    def activation_bytes(self) -> sp.Expr: ...

    @property
    def kv_bytes(self) -> sp.Expr: ...

    @property
    def q_dim(self) -> sp.Expr: ...

    @property
    def kv_dim(self) -> sp.Expr: ...


@dataclass
class _Builder:
    """One graph under construction: the model, the FLOP table, and the kernels to fuse."""

    g: Graph
    m: TransformerShape
    fl: ElementwiseFlops
    fusions: list[FusionGroup] = field(default_factory=list)

    def linear(self, x: Tensor, w_name: str, d_in: sp.Expr, d_out: sp.Expr, name: str,
               bias: bool, experts: sp.Expr | None = None,
               share: sp.Expr = sp.Integer(1)) -> Tensor:
        """``x @ W (+ bias)``; a bias add is fused into the GEMM as its epilogue.

        With ``experts``, W is (experts, d_in, d_out) and each token row meets ``share`` of
        the experts (the GEMM does that fraction of the dense work).
        """
        g, m = self.g, self.m
        shape = (d_in, d_out) if experts is None else (experts, d_in, d_out)
        y = g.gemm(x, g.weight(w_name, shape, bytes_per_value=m.weight_bytes), name=name,
                   work_fraction=share)
        if bias:
            bshape = (d_out,) if experts is None else (experts, 1, d_out)
            bvec = g.weight(f"{w_name}.bias", bshape, bytes_per_value=m.weight_bytes)
            out = g.elementwise(y, bvec, name=f"{name}+bias",
                                flops_per_element=self.fl.bias * share, linear=True)
            self.fusions.append((frozenset({name, out.name}), None))  # the GEMM's epilogue
            y = out
        if share != 1:
            g.set_crossings(y, writes=share, reads=share)
        return y

    def norm(self, x: Tensor, name: str) -> Tensor:
        m = self.m
        if m.norm is None:
            return x
        params = [self.g.weight(f"{name}.weight", (m.d_model,), bytes_per_value=m.weight_bytes)]
        if m.norm == "layernorm":
            params.append(self.g.weight(f"{name}.bias", (m.d_model,),
                                        bytes_per_value=m.weight_bytes))
        per = self.fl.layernorm if m.norm == "layernorm" else self.fl.rmsnorm
        return self.g.elementwise(x, *params, name=name, flops_per_element=per)

    def mlp(self, x: Tensor, batch: sp.Expr, seq: sp.Expr) -> Tensor:
        """The MLP; a mixture of experts routes each token to ``experts_per_token`` experts.

        MoE tensors are laid out per expert, (experts, tokens, width), of which each token
        fills ``k/E``: the expert GEMMs do that fraction of the dense work and the routed
        activations cross the boundary at that fraction. Every expert's weights are read
        (true once batch x k exceeds the expert count; an upper bound below that).
        """
        g, m, fl = self.g, self.m, self.fl
        act = getattr(fl, str(m.activation))
        e, share, router = None, sp.Integer(1), None
        if m.experts != 1:
            router = g.gemm(x, g.weight("W_router", (m.d_model, m.experts),
                                        bytes_per_value=m.weight_bytes), name="router")
            e, share = m.experts, m.experts_per_token / m.experts
            x = g.move(x, name="dispatch", shape=(e, batch * seq, m.d_model))
            g.set_crossings(x, writes=share, reads=share)
        up = self.linear(x, "W_up", m.d_model, m.d_ff, "up", m.mlp_bias, e, share)
        if m.mlp == "gated":
            gate = self.linear(x, "W_gate", m.d_model, m.d_ff, "gate", m.mlp_bias, e, share)
            h = g.elementwise(gate, up, name="act", flops_per_element=(act + fl.gate) * share)
        else:
            h = g.elementwise(up, name="act", flops_per_element=act * share)
        if share != 1:
            g.set_crossings(h, writes=share, reads=share)
        y = self.linear(h, "W_down", m.d_ff, m.d_model, "down", m.mlp_bias, e, share)
        if router is not None:  # expert outputs weighted by the router's gates and summed
            y = g.move(y, router, name="combine", shape=(batch, seq, m.d_model))
        return y

    def layer(self, x: Tensor, *, batch: sp.Expr, seq: sp.Expr, context: sp.Expr,
              decode: bool, causal: Causal, fused: bool, unfused: Unfused,
              kv_write: bool) -> Tensor:
        g, m, fl = self.g, self.m, self.fl
        per = m.heads / m.kv_heads
        x = g.view(x, x.shape, name="layer_input")  # each of the layers has its own input
        h = self.norm(x, "attn_norm")
        q = self.linear(h, "W_q", m.d_model, m.q_dim, "q_proj", m.qkv_bias)
        k = self.linear(h, "W_k", m.d_model, m.kv_dim, "k_proj", m.qkv_bias)
        v = self.linear(h, "W_v", m.d_model, m.kv_dim, "v_proj", m.qkv_bias)
        if m.positions == "rotary":
            q = g.elementwise(q, name="rope_q", flops_per_element=fl.rotary)
            k = g.elementwise(k, name="rope_k", flops_per_element=fl.rotary)
        qh = g.view(q, (batch, m.kv_heads, per * seq, m.head_dim), name="q_heads")
        kv_shape = (batch, m.kv_heads, context, m.head_dim)
        if decode:
            kc = g.kv_cache("k_cache", kv_shape, bytes_per_value=m.kv_bytes)
            vc = g.kv_cache("v_cache", kv_shape, bytes_per_value=m.kv_bytes)
            if kv_write:  # the new entries go straight from the projection into the cache
                for new, nm in ((k, "k_append"), (v, "v_append")):
                    g.output(g.move(new, name=nm, shape=(batch, m.kv_heads, 1, m.head_dim),
                                    kind=Kind.KV_CACHE, bytes_per_value=m.kv_bytes))
                    g.set_crossings(new, writes=0, reads=0)
            else:
                g.output(k, v)
            k, v = kc, vc
        else:
            k = g.view(k, kv_shape, name="k_heads")
            v = g.view(v, kv_shape, name="v_heads")
        frac = sp.Integer(1) if decode else causal_fraction(causal, seq)
        o, kernel = attention_core(g, qh, k, v, work_fraction=frac, fused=fused,
                                   unfused=unfused, softmax_flops=fl.softmax)
        if kernel is not None:
            self.fusions.append(kernel)
        o = g.view(o, (batch, seq, m.q_dim), name="o_heads")
        a = self.linear(o, "W_o", m.q_dim, m.d_model, "o_proj", m.o_bias)
        x = g.elementwise(x, a, name="residual_attn", flops_per_element=fl.residual,
                          linear=True)
        y = self.mlp(self.norm(x, "mlp_norm"), batch, seq)
        return g.elementwise(x, y, name="residual_mlp", flops_per_element=fl.residual,
                             linear=True)


def forward_graph(m: TransformerShape, *, batch: object, seq: object,
                  context: object | None = None, decode: bool = False,
                  causal: Causal | bool | str = Causal.HALF, fused: bool = True,
                  unfused: Unfused | str = Unfused.WRITE_AND_READ,
                  logits: Logits | str = Logits.ALL, kv_write: bool = False,
                  flops_per_element: ElementwiseFlops = ElementwiseFlops(),
                  name: str | None = None) -> Graph:
    """The forward graph of ``m`` over ``seq`` new tokens per sequence attending to
    ``context`` positions (prefill: ``context = seq``; decode: ``seq = 1``)."""
    if not isinstance(m, TransformerShape):
        raise SymroofError(f"expected a transformer model, got {type(m).__name__}")
    lg = option(Logits, logits, "logits")
    bt, sq = as_dim(batch, "batch"), as_dim(seq, "seq")
    ctx = sq if context is None else as_dim(context, "context")
    g = Graph(name or f"{m.name}-{'decode' if decode else 'prefill'}")
    build = _Builder(g, m, flops_per_element)
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
    with g.repeat(m.layers, "layer"):
        x = build.layer(x, batch=bt, seq=sq, context=ctx, decode=decode,
                        causal=option(Causal, causal, "causal"), fused=fused,
                        unfused=option(Unfused, unfused, "unfused"), kv_write=kv_write)
    x = build.norm(x, "final_norm")
    if lg is Logits.NONE or table is None:
        g.output(x)
        return fuse_groups(g, build.fusions)
    if lg is Logits.LAST and sq != 1:
        x = g.move(x, name="last_token", shape=(bt, 1, m.d_model), read_fraction=1 / sq)
    if m.tied_embeddings:
        out = g.gemm(x, table, transpose_b=True, name="lm_head")
    else:
        w = g.weight("W_lm", (m.d_model, m.vocab), bytes_per_value=m.weight_bytes)
        out = g.gemm(x, w, name="lm_head")
    g.output(out)
    return fuse_groups(g, build.fusions)


def _inputs_of_kind(g: Graph, kind: Kind) -> Iterator[tuple[Tensor, sp.Expr]]:
    return ((t, g.count(t)) for t in g.inputs if t.kind == kind)


def weight_tensors(m: TransformerShape) -> list[tuple[Tensor, sp.Expr]]:
    """Every weight tensor of ``m`` with how many times it occurs (layers for per-layer ones)."""
    return list(_inputs_of_kind(forward_graph(m, batch=1, seq=1), Kind.WEIGHT))


def kv_cache_tensors(m: TransformerShape) -> list[tuple[Tensor, sp.Expr]]:
    """The KV-cache tensors of a decode step of one sequence at one position, with counts."""
    g = forward_graph(m, batch=1, seq=1, context=1, decode=True, logits=Logits.NONE)
    return list(_inputs_of_kind(g, Kind.KV_CACHE))

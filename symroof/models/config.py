"""Transformer model descriptions: shapes, attention span, MLP kind, norms and bytes per
tensor kind.

Every field may be a symbol, so the symbolic model the seeds reason about and a preset
with published numbers are the same description. Beyond the Llama shape a description
says which layers attend through a sliding window (``window``, ``window_layers``), how
its keys and values are compressed (``latent``: multi-head latent attention), and how a
mixture of experts is built (routed expert width, shared experts, dense layers).

>>> from symroof.symbols import L, D, H
>>> m = transformer(layers=L, d_model=D, heads=H, d_ff=4 * D)
>>> m.params
12*D**2*L
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from functools import cached_property

import sympy as sp

from symroof.errors import SymroofError
from symroof.ir import as_dim, as_expr
from symroof.options import Activation, MlpKind, Norm, Positions, QkNorm, WindowCache, option
from symroof.precision import bytes_per_value
from symroof.symbols import b as _b
from symroof.workloads.layers import kv_cache_tensors, weight_tensors
from symroof.workloads.shape import LatentAttention, ModelShape

__all__ = ["TransformerModel", "transformer", "LatentAttention"]


@dataclass(frozen=True)
class TransformerModel(ModelShape):
    """A decoder-only transformer. Build with :func:`transformer` or a preset.

    Its data (the fields, their checks, the layer groups) is a
    :class:`~symroof.workloads.shape.ModelShape`, which the workload builders read; a
    model adds the counts read off the graphs they build: parameters, bytes of the
    weights, KV-cache bytes, and the same model at other number formats.
    """

    # -- counts ------------------------------------------------------------

    @cached_property
    def kv_bytes_per_token(self) -> sp.Expr:
        """KV-cache bytes per token of context below any window, summed over the kv_cache
        tensors of a decode graph with one sequence and one position: 2 (K and V) *
        layers * kv_dim * kv_bytes (latent attention: layers * (d_c + d_r) * kv_bytes)."""
        return self.kv_cache_bytes(1)

    def kv_cache_bytes(self, context: object,
                       window_cache: WindowCache | str = WindowCache.WINDOW) -> sp.Expr:
        """KV-cache bytes of one sequence at ``context`` positions: a full layer holds all
        of them, a windowed layer at most ``window`` (a rolling buffer; with
        ``window_cache="window_minus_1"``, transformers' dynamic cache, at most W - 1: it
        joins the new position to them for the step).

        >>> from symroof.models import transformer
        >>> m = transformer(layers=2, d_model=8, heads=2, window=4)
        >>> m.kv_cache_bytes(100), m.kv_cache_bytes(100, "window_minus_1")
        (128*b, 96*b)

        >>> from symroof.models import get
        >>> from symroof.symbols import b
        >>> get("mistral-7b").kv_cache_bytes(32768).subs(b, 2) / 2**30   # 4096 kept
        1/2
        """
        m = self.as_cached(window_cache)
        return sp.expand(sp.Add(*(count * t.nbytes
                                  for t, count in kv_cache_tensors(m, context))))

    def as_cached(self, window_cache: WindowCache | str = WindowCache.WINDOW
                  ) -> TransformerModel:
        """The model whose windows are the positions a windowed layer's KV buffer holds
        under ``window_cache`` (itself for ``"window"`` or without a window; a window of
        W - 1 for ``"window_minus_1"``): what a memory count reads. Its attention
        arithmetic is not the model's (the step also attends the new position).

        >>> from symroof.models import get
        >>> get("mistral-7b").as_cached("window_minus_1").window
        4095
        """
        mode = option(WindowCache, window_cache, "window_cache")
        if mode is WindowCache.WINDOW or self.window is None:
            return self
        if self.window == 1:
            raise SymroofError(f"model {self.name!r} window_cache: a window of 1 keeps "
                               "no position (W - 1 = 0)")
        return replace(self, window=self.window - 1)

    def count_params(self, *, active: bool = False, input_embedding: bool = True) -> sp.Expr:
        """Parameters, summed over the weight tensors of the model's graph.

        ``active``: those one token touches, each routed expert weight (rank 3, experts
        first) at ``experts_per_token / experts`` of it; shared experts, dense layers,
        attention and embeddings whole. ``input_embedding=False`` leaves out the input
        embedding table and a learned position table (a tied table, which is also the LM
        head, stays): the convention of gpt-oss's published active counts.
        """
        total = []
        for t, count in weight_tensors(self):
            if not input_embedding and (t.name == "pos_embed" or (
                    t.name == "embed" and not self.tied_embeddings)):
                continue
            share = self.experts_per_token / self.experts if active and len(t.shape) == 3 else 1
            total.append(count * t.numel * share)
        return sp.expand(sp.Add(*total))

    @cached_property
    def params(self) -> sp.Expr:
        """Parameter count, summed over the weight tensors of the model's graph."""
        return self.count_params()

    @cached_property
    def active_params(self) -> sp.Expr:
        """Parameters one token touches: routed experts at experts_per_token of experts,
        everything else whole (input embedding included; see :meth:`count_params`)."""
        return self.count_params(active=True)

    @property
    def weight_bytes_total(self) -> sp.Expr:
        """Bytes of all weights: params * weight_bytes."""
        return self.params * self.weight_bytes

    # -- variants ------------------------------------------------------------

    def with_precision(self, *, weights: str | None = None, kv_cache: str | None = None,
                       activations: str | None = None) -> TransformerModel:
        """The same model with other number formats per tensor kind (names: bf16, fp8, int4...).

        >>> from symroof.models import get
        >>> get("llama-3-8b").with_precision(weights="int4", kv_cache="fp8").kv_bytes
        1
        """
        changes: dict[str, sp.Expr] = {}
        for field_name, prec in (("weight_bytes", weights), ("kv_bytes", kv_cache),
                                 ("activation_bytes", activations)):
            if prec is not None:
                changes[field_name] = bytes_per_value(prec)
        return replace(self, **changes)

    def with_bytes(self, value: object) -> TransformerModel:
        """The same model with one bytes-per-value (number or symbol) for every kind."""
        v = as_expr(value, f"model {self.name!r} bytes")
        return replace(self, weight_bytes=v, activation_bytes=v, kv_bytes=v)

    def replace(self, **changes: object) -> TransformerModel:
        """The same model with fields changed (validated again)."""
        known = {f.name for f in fields(self)}
        unknown = set(changes) - known
        if unknown:
            raise SymroofError(f"model {self.name!r}: unknown field(s) {', '.join(sorted(unknown))}")
        return replace(self, **changes)  # type: ignore[arg-type]


def transformer(*, layers: object, d_model: object, heads: object, kv_heads: object | None = None,
                head_dim: object | None = None, d_ff: object | None = None,
                vocab: object | None = None, mlp: MlpKind | str = MlpKind.PLAIN,
                activation: Activation | str | None = None, norm: Norm | str | None = None,
                tied_embeddings: bool = False, biases: bool = False,
                qkv_bias: bool = False, positions: Positions | str | None = None,
                max_positions: object | None = None, experts: object = 1,
                experts_per_token: object = 1, bytes_per_value: object = _b,
                name: str = "transformer", window: object | None = None,
                window_layers: object | None = None, expert_d_ff: object | None = None,
                shared_d_ff: object | None = None, shared_gate: bool = False,
                dense_layers: object = 0, window_dense_layers: object | None = None,
                router_bias: bool = False, qk_norm: QkNorm | str | None = None,
                post_norms: bool = False, sinks: bool = False,
                latent: LatentAttention | None = None, attention_dropout: object = 0,
                hidden_dropout: object = 0, dropout_mask_bytes: object = 1) -> TransformerModel:
    """A transformer description; defaults are the seeds' model (MHA, d_ff = 4D, plain MLP).

    ``head_dim`` defaults to d_model/heads (with ``latent``, to its d_n + d_r),
    ``kv_heads`` to heads (multi-head attention); ``biases=True`` gives every linear layer
    a bias, ``qkv_bias=True`` only Q, K and V. ``window`` with ``window_layers`` (default
    all) gives layers a sliding window; ``experts`` with ``expert_d_ff``, ``shared_d_ff``
    and ``dense_layers`` a mixture of experts (see :class:`TransformerModel`).
    ``attention_dropout`` and ``hidden_dropout`` (probabilities, 0: none) add dropout to
    training graphs, each with a mask of ``dropout_mask_bytes`` per value.
    """
    d = as_dim(d_model, f"model {name!r} d_model")
    h = as_dim(heads, f"model {name!r} heads")
    if head_dim is not None:
        hd: object = head_dim
    elif latent is not None:
        hd = latent.nope_dim + latent.rope_dim
    else:
        hd = d / h
    kind = option(MlpKind, mlp, f"model {name!r} mlp")
    return TransformerModel(
        name=name, layers=layers, d_model=d, heads=h,
        kv_heads=h if kv_heads is None else kv_heads, head_dim=hd,
        d_ff=4 * d if d_ff is None else d_ff, vocab=vocab, mlp=kind,
        activation=option(Activation, activation or ("silu" if kind is MlpKind.GATED else "gelu"),
                          f"model {name!r} activation"),
        norm=None if norm is None else option(Norm, norm, f"model {name!r} norm"),
        tied_embeddings=tied_embeddings, qkv_bias=biases or qkv_bias, o_bias=biases,
        mlp_bias=biases,
        positions=None if positions is None else option(Positions, positions,
                                                        f"model {name!r} positions"),
        max_positions=max_positions, experts=experts, experts_per_token=experts_per_token,
        weight_bytes=bytes_per_value, activation_bytes=bytes_per_value,
        kv_bytes=bytes_per_value, window=window, window_layers=window_layers,
        expert_d_ff=expert_d_ff, shared_d_ff=shared_d_ff, shared_gate=shared_gate,
        dense_layers=dense_layers, window_dense_layers=window_dense_layers,
        router_bias=router_bias, qk_norm=None if qk_norm is None else option(
            QkNorm, qk_norm, f"model {name!r} qk_norm"),
        post_norms=post_norms, sinks=sinks, latent=latent,
        attention_dropout=attention_dropout, hidden_dropout=hidden_dropout,
        dropout_mask_bytes=dropout_mask_bytes)

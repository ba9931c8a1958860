"""A model's memory footprint by part, serving or training (no chip, no sharding).

Per device and against a chip: :mod:`symroof.memory.fit`, :mod:`symroof.memory.capacity`.

>>> from symroof.models import get
>>> m = get("seed-6.4b").with_precision(weights="bf16", kv_cache="bf16", activations="bf16")
>>> memory(m, batch=1, context=1024).kv_cache
536870912
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

from symroof.errors import SymroofError
from symroof.ir import as_dim, as_expr
from symroof.models.config import TransformerModel
from symroof.options import Recompute, Statistics, WindowCache, option
from symroof.passes.optimizer import ADAM
from symroof.passes.saved import saved_tensors
from symroof.workloads.transformer import training_graph

__all__ = ["Footprint", "memory", "saved_activations"]


@dataclass(frozen=True)
class Footprint:
    """Bytes resident in memory, by part."""

    weights: sp.Expr
    kv_cache: sp.Expr
    activations: sp.Expr
    gradients: sp.Expr
    optimizer_state: sp.Expr

    @property
    def total(self) -> sp.Expr:
        return self.weights + self.kv_cache + self.activations + self.gradients + \
            self.optimizer_state


def saved_activations(model: TransformerModel, batch: object, seq: object, *,
                      fused: bool = True, recompute: Recompute | bool | str = Recompute.FLASH,
                      statistics: Statistics | str = Statistics.SAVED) -> sp.Expr:
    """Bytes of forward activations the backward pass reads back (saved for backward).

    Derived from the training graph (:func:`symroof.passes.saved.saved_tensors`): every
    forward value a backward op reads across the boundary, once per storage and per copy
    kept. ``recompute`` is the strategy (:class:`~symroof.options.Recompute`);
    ``statistics="ignored"`` leaves out per-row fp32 statistics (Korthikanti et al.).

    >>> from symroof.models import transformer
    >>> from symroof.symbols import L, D, H, B, S, b
    >>> m = transformer(layers=L, d_model=D, heads=H)
    >>> saved_activations(m, B, S, recompute="full")    # each layer's input
    B*D*L*S*b
    """
    g = training_graph(model, batch, seq, fused=fused, recompute=recompute, optimizer=None)
    keep_stats = option(Statistics, statistics, "statistics") is Statistics.SAVED
    return sp.expand(sp.Add(*(s.nbytes for s in saved_tensors(g)
                              if keep_stats or not s.statistic)))


def memory(model: TransformerModel, *, batch: object, context: object, training: bool = False,
           optimizer_state_bytes: object | None = None, fused: bool = True,
           recompute: Recompute | bool | str = Recompute.FLASH,
           statistics: Statistics | str = Statistics.SAVED,
           window_cache: WindowCache | str = WindowCache.WINDOW) -> Footprint:
    """Footprint of serving ``batch`` sequences of ``context`` tokens, or of training on them.

    Inference: weights plus the KV cache (2 * layers * kv_heads * head_dim * kv_bytes per
    token; a windowed layer holds at most its window of positions, ``window_cache``: W
    by default, W - 1 as transformers' dynamic cache keeps them; a latent-attention
    layer d_c + d_r values per token); its activations (one layer's transient tensors)
    are left at 0 here, as the seeds do. Training: weights, gradients at the weights' bytes, optimizer state at
    ``optimizer_state_bytes`` per parameter (default: the training step's Adam, 12), and the
    activations saved for the backward pass, derived from the training graph under the
    ``recompute`` strategy (see :func:`saved_activations`). Per device under tensor,
    pipeline and data parallelism: :func:`symroof.training.training_memory`.
    """
    if not isinstance(model, TransformerModel):
        raise SymroofError(f"memory: expected a transformer model, got {type(model).__name__}")
    bt, ctx = as_dim(batch, "batch"), as_dim(context, "context")
    weights = model.params * model.weight_bytes
    zero = sp.Integer(0)
    if not training:
        return Footprint(weights, model.kv_cache_bytes(ctx, window_cache) * bt, zero, zero,
                         zero)
    state = ADAM.state_bytes if optimizer_state_bytes is None else as_expr(
        optimizer_state_bytes, "memory optimizer_state_bytes")
    return Footprint(weights, zero, saved_activations(model, bt, ctx, fused=fused,
                                                      recompute=recompute,
                                                      statistics=statistics),
                     model.params * model.weight_bytes, model.params * state)

"""Attention with dropout on its probabilities (the training graph of a model with
``attention_dropout``): :func:`~symroof.workloads.attention.attention_core` with a
dropout between the softmax and the product with V.

The mask (``attn_dropout_mask``, ``dropout_mask_bytes`` per value) is one more S x S
tensor per head. Unfused, it is written once for the backward pass, as are the dropped
probabilities that the product with V reads (Korthikanti et al. 2022 count
``2as^2b + as^2b`` for them); fused, it stays on chip with the scores and is drawn again
in the backward pass from the generator's seed, as FlashAttention does.

>>> from symroof.models import transformer
>>> from symroof.workloads.layers import forward_graph
>>> m = transformer(layers=1, d_model=8, heads=2, attention_dropout=0.1)
>>> g = forward_graph(m, batch=1, seq=4, fused=False, dropout=True)
>>> [op.name for op in g.ops if "attn_dropout" in op.name]
['attn_dropout_mask', 'attn_dropout']
"""

from __future__ import annotations

from symroof.errors import SymroofError
from symroof.ir import Tensor
from symroof.options import Saves, Unfused, option
from symroof.workloads.attention import FusionGroup, flash_tile_bytes
from symroof.workloads.builder import Builder

__all__ = ["attention_core_with_dropout"]


def attention_core_with_dropout(b: Builder, q: Tensor, k: Tensor, v: Tensor, *,
                                work_fraction: object, fused: bool,
                                unfused: Unfused | str = Unfused.WRITE_AND_READ,
                                sinks: Tensor | None = None
                                ) -> tuple[Tensor, FusionGroup | None]:
    """``dropout(softmax(q k^T)) v`` in ``b``'s graph, with the shapes and the return of
    :func:`~symroof.workloads.attention.attention_core`."""
    g = b.g
    if option(Unfused, unfused, "unfused") is Unfused.MATERIALIZE_ONCE:
        raise SymroofError("attention_dropout: not modelled with unfused='materialize_once' "
                           "(the seed simulation's inference convention); use write_and_read")
    scores = g.gemm(q, k, transpose_b=True, work_fraction=work_fraction, name=b.n("scores"))
    pre, ops = scores, [scores.name]
    if sinks is not None:  # the scores per query head, so that the per-head sinks broadcast
        *lead, rows, keys = scores.shape
        per = sinks.shape[-3]
        pre = g.view(scores, (*lead, per, rows / per, keys), name=b.n("scores_by_head"))
        ops.append(pre.name)
    probs = g.elementwise(pre, *(() if sinks is None else (sinks,)), name=b.n("softmax"),
                          flops_per_element=b.fl.softmax, saves=Saves.OUTPUT)
    post = probs
    ops.append(probs.name)
    if sinks is not None:
        post = g.view(probs, scores.shape, name=b.n("probs"))
        ops.append(post.name)
    dropped = b.dropout(post, "attn_dropout", b.m.attention_dropout)
    ops += [b.n("attn_dropout_mask"), b.n("attn_dropout")]
    out = g.gemm(dropped, v, work_fraction=work_fraction, name=b.n("pv"))
    if not fused:
        return out, None
    return out, (frozenset((*ops, out.name)), flash_tile_bytes(q.shape[-1], q.bytes_per_value))

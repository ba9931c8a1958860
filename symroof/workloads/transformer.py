"""Transformer workloads as graphs: prefill, one decode step, and training.

The graphs come from :mod:`symroof.workloads.layers`; FLOPs and bytes from the cost
interpreter; nothing here is a closed form.

Counting conventions (each a named option):

- ``ops="contractions"`` (default): FLOPs of GEMMs only, as the seeds and PyTorch's
  counter count; ``ops="all"`` adds softmax, norms, activations, residual adds at the
  per-element FLOPs of :class:`ElementwiseFlops`.
- ``causal``: ``"half"`` (default, the seeds: a kernel skips about half; also True),
  ``"exact"`` (S(S+1)/2 pairs), ``"none"`` (full S x S, as PyTorch's eager attention;
  also False).
- ``traffic`` (decode): ``"weights_and_kv"`` (default: activations resident on chip, as
  the seeds model decode) or ``"all"``.
- ``window_kernel`` (prefill, training): a windowed layer's kernel visits only the band of
  W keys per query (``"band"``, default) or computes the causal span and masks it
  (``"masked"``); ``window_span``: ``"exact"`` (min(positions, W), default) or
  ``"filled"`` (W: the window is full, formulas without Min).
- ``latent`` (decode of latent attention): ``"absorbed"`` (default) or ``"naive"``.
- ``expert_reads``: which routed experts' weights a step reads (``"expected"``, default:
  the distinct experts the step's tokens are expected to touch; ``"all"``, ``"routed"``,
  ``"active"``).
- The input embedding is a gather: only the looked-up rows are read.

>>> from symroof.models import transformer
>>> from symroof.symbols import L, D, H, B, S
>>> dec = decode(transformer(layers=L, d_model=D, heads=H), batch=B, context=S)
>>> dec.flops
24*B*D**2*L + 4*B*D*L*S
"""

from __future__ import annotations

import sympy as sp

from symroof.analysis import Analysis, analyze
from symroof.cost import MEMORY_KINDS
from symroof.errors import SymroofError
from symroof.ir import Graph, Kind, as_dim, as_expr
from symroof.options import (Causal, DecodeTraffic, ExpertReads, FlopCount, LatentDecode,
                             Logits, OpsCounted, Recompute, Unfused, WindowKernel, WindowSpan,
                             option, renamed)
from symroof.passes.backward import Backward, Saves
from symroof.passes.optimizer import ADAM, Optimizer, OptimizerStep
from symroof.passes.fuse import Fuse
from symroof.passes.pipeline import Pass, Pipeline
from symroof.passes.shard import Shard
from symroof.workloads.attention import ElementwiseFlops, op_groups
from symroof.workloads.layers import forward, forward_graph, weight_tensors
from symroof.workloads.shape import ModelShape
from symroof.workloads.parallel import check_layout

__all__ = ["prefill", "decode", "training", "training_graph", "training_pipeline",
           "serving_pipeline",
           "forward_graph", "weight_tensors", "ElementwiseFlops", "DECODE_TRAFFIC", "ADAM",
           "Optimizer"]


#: Which tensor kinds count toward a decode step's traffic.
DECODE_TRAFFIC = {
    DecodeTraffic.WEIGHTS_AND_KV: frozenset({Kind.WEIGHT, Kind.KV_CACHE}),
    DecodeTraffic.ALL: MEMORY_KINDS,
}


def _model(model: object, what: str) -> ModelShape:
    if not isinstance(model, ModelShape):
        raise SymroofError(f"{what}: expected a transformer model (symroof.models.get or "
                           f"transformer), got {type(model).__name__}")
    return model


@renamed(prompt="seq", flops="flop_count")
def prefill(model: ModelShape, batch: object, seq: object, *,
            causal: Causal | bool | str = Causal.HALF, logits: Logits | str = Logits.ALL,
            fused: bool = True, unfused: Unfused | str = Unfused.WRITE_AND_READ,
            ops: OpsCounted | str = OpsCounted.CONTRACTIONS,
            flop_count: FlopCount | str = FlopCount.TWO_PER_MAC,
            flops_per_element: ElementwiseFlops = ElementwiseFlops(),
            window_kernel: WindowKernel | str = WindowKernel.BAND,
            window_span: WindowSpan | str = WindowSpan.EXACT,
            expert_reads: ExpertReads | str = ExpertReads.EXPECTED, tp: object = 1,
            pp: object = 1, microbatches: object = 1) -> Analysis:
    """One forward pass over ``batch x seq`` prompt tokens (attention fused by default).

    Traffic is compulsory traffic of every tensor kind (weights, activations). A windowed
    layer does about ``S W`` query-key pairs per head with a windowed kernel
    (``window_kernel="band"``); ``"masked"`` keeps the count of a kernel that computes
    the causal span and masks the window (with ``causal="none"``, PyTorch eager's S^2).
    With ``tp``, ``pp`` (and ``microbatches``) the graph is one device's (see
    :func:`decode`).
    """
    m = _model(model, "prefill")
    t, p, mb = check_layout(m, tp=tp, pp=pp, microbatches=microbatches)
    g, fuse = forward(m, batch=_micro(batch, mb), seq=seq, causal=causal,
                      fused=fused, unfused=unfused, logits=logits,
                      flops_per_element=flops_per_element, window_kernel=window_kernel,
                      window_span=window_span, expert_reads=expert_reads)
    sharded = t * p != 1
    g = serving_pipeline("prefill", fuse, tp=t, pp=p, microbatches=mb).apply(g)
    return analyze(g, flop_count=flop_count, ops=op_groups(ops),
                   traffic=MEMORY_KINDS if sharded else None,
                   tokens=_micro(batch, mb) * as_dim(seq, "seq"))


@renamed(flops="flop_count")
def decode(model: ModelShape, batch: object, context: object | None = None, *,
           past: object | None = None,
           traffic: DecodeTraffic | str = DecodeTraffic.WEIGHTS_AND_KV, kv_write: bool = False,
           logits: Logits | str = Logits.ALL, ops: OpsCounted | str = OpsCounted.CONTRACTIONS,
           flop_count: FlopCount | str = FlopCount.TWO_PER_MAC,
           flops_per_element: ElementwiseFlops = ElementwiseFlops(),
           window_span: WindowSpan | str = WindowSpan.EXACT,
           latent: LatentDecode | str = LatentDecode.ABSORBED,
           expert_reads: ExpertReads | str = ExpertReads.EXPECTED, tp: object = 1, pp: object = 1,
           microbatches: object = 1,
           window_kernel: WindowKernel | str = WindowKernel.BAND) -> Analysis:
    """One decode step: one new token per sequence attending to ``context`` cached positions.

    ``context`` counts the KV positions attended, the new token's included; give
    ``past`` instead for a step after ``past`` cached tokens (context = past + 1, as in a
    PyTorch step). Weights are read once per step whatever the batch; the KV cache is
    read every step. ``traffic="weights_and_kv"`` (default) counts weights and KV cache,
    with activations resident on chip, as the seeds do; ``"all"`` counts activations too.
    ``kv_write=False`` (default, the seeds) leaves out the write of the new K/V entries.
    ``past=0`` is a step on an empty cache (context 1). A windowed layer reads and attends
    ``min(context, W)`` positions (the new token is inside its window); latent attention
    runs ``latent="absorbed"`` (default) or ``"naive"`` (K and V up-projected from every
    cached latent, as transformers does). A chunked layer (Llama 4) reads the same buffer
    and attends its chunk's ``context - W floor((context - 1)/W)`` keys
    (``window_kernel="band"``, default) or, ``"masked"``, scores the whole buffer and
    masks, as an eager kernel does.

    ``tp`` (tensor parallel) and ``pp`` (pipeline stages) make the graph one device's,
    with its communication (:func:`symroof.passes.shard`): F and Q per device, the
    bytes each device sends in ``cost.bytes_by_kind[Kind.COMMUNICATION]`` (not in Q).
    With ``microbatches`` m the graph is one micro-batch of ``batch/m`` sequences on the
    last stage, and ``tokens`` are that micro-batch's.
    """
    if (context is None) == (past is None):
        raise SymroofError("decode: give exactly one of context (positions attended, the new "
                           "token included) and past (cached tokens before this step)")
    ctx = as_dim(context, "context") if past is None else _past(past) + 1
    kinds = DECODE_TRAFFIC[option(DecodeTraffic, traffic, "decode traffic")]
    m = _model(model, "decode")
    t, p, mb = check_layout(m, tp=tp, pp=pp, microbatches=microbatches)
    g, fuse = forward(m, batch=_micro(batch, mb), seq=1, context=ctx, decode=True,
                      logits=logits, kv_write=kv_write, flops_per_element=flops_per_element,
                      window_span=window_span, latent=latent, expert_reads=expert_reads,
                      window_kernel=window_kernel)
    g = serving_pipeline("decode", fuse, tp=t, pp=p, microbatches=mb).apply(g)
    if t * p != 1:
        kinds = kinds & MEMORY_KINDS
    return analyze(g, flop_count=flop_count, ops=op_groups(ops), traffic=kinds,
                   tokens=_micro(batch, mb))


def _micro(batch: object, microbatches: sp.Expr) -> sp.Expr:
    """Sequences of one micro-batch: ``batch / microbatches``, which must be whole."""
    bt = as_dim(batch, "batch")
    if microbatches == 1:
        return bt
    q = bt / microbatches
    if q.is_number and not q.is_integer:
        raise SymroofError(f"microbatches {microbatches}: does not divide the batch {bt}")
    return q


def _past(past: object) -> sp.Expr:
    """Cached positions before a step: 0 (an empty cache) or a dimension."""
    value = as_expr(past, "past")
    if value == 0:
        return sp.Integer(0)
    return as_dim(value, "past")


def serving_pipeline(name: str, fuse: Fuse, *, tp: sp.Expr, pp: sp.Expr,
                     microbatches: sp.Expr) -> Pipeline:
    """A forward workload's passes: its builder's fusion, then (on more than one device)
    one device's share with its communication. ``tp``, ``pp`` and ``microbatches`` are
    a checked layout (:func:`check_layout`)."""
    stages: tuple[Pass, ...] = (fuse,) if fuse.wanted else ()
    if tp * pp != 1:
        stages += (Shard(tp, pp, microbatches),)
    return Pipeline(name, stages)


def training_pipeline(*, recompute: Recompute | bool | str = Recompute.FLASH,
                      optimizer: Optimizer | None = ADAM,
                      saves: dict[str, Saves] | None = None) -> Pipeline:
    """The passes after the forward graph: backward, then the optimizer step. What each
    elementwise op's gradient reads is declared on the op by the builder; ``saves``
    overrides it by op name."""
    stages = (Backward(recompute=recompute, saves=saves or {}),) + (
        () if optimizer is None else (OptimizerStep(optimizer),))
    return Pipeline("training", stages)


def training_graph(model: ModelShape, batch: object, seq: object, *,
                   causal: Causal | bool | str = Causal.HALF, fused: bool = True,
                   recompute: Recompute | bool | str = Recompute.FLASH,
                   optimizer: Optimizer | None = ADAM,
                   flops_per_element: ElementwiseFlops = ElementwiseFlops(),
                   window_kernel: WindowKernel | str = WindowKernel.BAND,
                   window_span: WindowSpan | str = WindowSpan.EXACT) -> Graph:
    """Forward over ``batch x seq`` tokens (with the model's dropouts), its backward pass
    under the ``recompute`` strategy, and an optimizer step.

    A mixture of experts reads every expert's weights (``expert_reads="all"``, not the
    serving steps' ``"expected"``): the optimizer step reads and writes every expert
    whatever the routing, a training batch of ``T`` tokens leaves ``E (1 - k/E)^T``-small
    differences (below 1e-500 experts at ``T = 4096``, k/E = 1/4), and the step's
    formulas stay polynomial in B and S (the expected count puts them in an exponent)."""
    m = _model(model, "training")
    fwd, fuse = forward(m, batch=batch, seq=seq, causal=causal, fused=fused,
                        logits=Logits.ALL, flops_per_element=flops_per_element,
                        name=f"{m.name}-train", window_kernel=window_kernel,
                        window_span=window_span, expert_reads=ExpertReads.ALL, dropout=True)
    after = training_pipeline(recompute=recompute, optimizer=optimizer)
    stages = ((fuse,) if fuse.wanted else ()) + after.stages
    return Pipeline(after.name, stages).apply(fwd)


@renamed(flops="flop_count")
def training(model: ModelShape, batch: object, seq: object, *,
             causal: Causal | bool | str = Causal.HALF, fused: bool = True,
             recompute: Recompute | bool | str = Recompute.FLASH,
             optimizer: Optimizer | None = ADAM,
             ops: OpsCounted | str = OpsCounted.CONTRACTIONS,
             flop_count: FlopCount | str = FlopCount.TWO_PER_MAC,
             flops_per_element: ElementwiseFlops = ElementwiseFlops(),
             window_kernel: WindowKernel | str = WindowKernel.BAND,
             window_span: WindowSpan | str = WindowSpan.EXACT) -> Analysis:
    """One training step over ``batch x seq`` tokens: forward, backward, optimizer.

    Each GEMM gains a data-gradient and a weight-gradient GEMM of its own size, so the
    weight GEMMs cost 6 FLOPs per parameter per token. With ``fused`` attention and
    ``recompute="flash"`` (default; also True), the backward pass recomputes QK^T instead
    of saving the S x S matrices; ``"selective"`` recomputes the attention core (and runs
    its product with V again), ``"full"`` each layer's forward; ``"none"`` (also False)
    recomputes nothing. The FLOPs are the hardware's: recomputation included.
    """
    g = training_graph(model, batch, seq, causal=causal, fused=fused, recompute=recompute,
                       optimizer=optimizer, flops_per_element=flops_per_element,
                       window_kernel=window_kernel, window_span=window_span)
    return analyze(g, flop_count=flop_count, ops=op_groups(ops),
                   tokens=as_dim(batch, "batch") * as_dim(seq, "seq"))

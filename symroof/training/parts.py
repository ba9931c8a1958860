"""Per-part sums of a training graph: what the parallel memory formulas divide.

Each saved activation and each parameter of one micro-batch's training graph falls in
one part: the layers (all of them together), what comes before them (the embedding:
the first pipeline stage's), or after them (final norm, LM head: the last stage's); and
within a part, split over the ``t`` devices of a tensor-parallel group or whole on each.

Tensor parallelism is read from the forward graph as Megatron lays it out: a GEMM with a
weight splits its output when its input is whole (column parallel: Q, K, V, the MLP's
up and gate, the LM head) and makes it whole again when its input is split (row
parallel: the attention output and the MLP's down projection, then an all-reduce); any
other op's output is split when one of its inputs is. So a layer's norms, dropouts and
residual stream stay whole: Korthikanti et al.'s ``10sbh`` of ``sbh(10 + 24/t + 5as/(ht))``,
which sequence parallelism splits along the sequence. Weight matrices are split (a
vocabulary table too, as a vocab-parallel embedding; a position table is whole); a bias
or gain is split when the op reading it writes a split output.

>>> from symroof.models import transformer
>>> from symroof.symbols import L, D, H, B, S, b
>>> p = training_parts(transformer(layers=L, d_model=D, heads=H), B, S, statistics="ignored")
>>> p.layer_activations.split, p.layer_activations.whole
(12*B*D*L*S*b, 2*B*D*L*S*b)
"""

from __future__ import annotations

from dataclasses import dataclass

import networkx as nx
import sympy as sp

from symroof.errors import SymroofError
from symroof.ir import Gather, Gemm, Graph, Kind, Op, Tensor, as_expr
from symroof.options import Causal, Recompute, Statistics, option
from symroof.passes.backward import STATISTICS_PREFIX
from symroof.passes.saved import saved_tensors
from symroof.workloads.shape import ModelShape
from symroof.workloads.transformer import training_graph

__all__ = ["Part", "TrainingParts", "training_parts", "tensor_parallel_split"]

_ZERO = sp.Integer(0)


@dataclass(frozen=True)
class Part:
    """An amount split over a tensor-parallel group, and one whole on each device."""

    split: sp.Expr = _ZERO
    whole: sp.Expr = _ZERO

    @property
    def total(self) -> sp.Expr:
        """Both, on one device (no tensor parallelism)."""
        return self.split + self.whole

    def per_device(self, tp: object, sequence_parallel: bool = False) -> sp.Expr:
        """On one of ``tp`` devices: the split part over ``tp``; the whole part too with
        sequence parallelism."""
        t = as_expr(tp, "tp")
        return self.split / t + self.whole / (t if sequence_parallel else 1)

    def __add__(self, other: Part) -> Part:
        return Part(self.split + other.split, self.whole + other.whole)


@dataclass(frozen=True)
class TrainingParts:
    """One micro-batch's saved activation bytes and parameter counts by part: all layers
    together, before them (first pipeline stage), after them (last stage); ``shared_params``
    are in both end stages (a tied embedding); ``loss`` is the bytes the loss keeps (its
    fp32 logits, split like the vocabulary)."""

    layers: sp.Expr
    layer_activations: Part
    first_activations: Part
    last_activations: Part
    loss: sp.Expr
    layer_params: Part
    first_params: Part
    last_params: Part
    shared_params: Part


def tensor_parallel_split(graph: Graph) -> frozenset[Tensor]:
    """The forward activations a Megatron tensor-parallel layout splits over its devices."""
    training = graph.provenance.training
    split: set[Tensor] = set()
    for op in graph.ops:
        if training is not None and op.name not in training.forward_ops:
            continue
        acts = [t for t in op.inputs if t.kind != Kind.WEIGHT]
        if isinstance(op, Gemm) and len(acts) == 1:  # a weight GEMM: column or row parallel
            if acts[0] not in split:
                split.update(op.outputs)
        elif any(t in split for t in acts):
            split.update(op.outputs)
    return frozenset(split)


def _weight_split(g: Graph, w: Tensor, split: frozenset[Tensor], vocab: sp.Expr | None) -> bool:
    for op in g.consumers(w):
        if isinstance(op, Gather):
            return vocab is not None and sp.expand(w.shape[0] - vocab) == 0
        if len(w.shape) >= 2 and isinstance(op, Gemm):
            return True
        if any(o in split for o in op.outputs):
            return True
    return False


def _before(g: Graph, forward: frozenset[str]) -> set[object]:
    """Nodes from which a repeated block's ops are reached: what runs before the layers."""
    layer_ops = [op for op in g.ops if op.name in forward and g.block(op)]
    found: set[object] = set()
    for op in layer_ops:
        found.update(nx.ancestors(g.nx, op))
    return found


def _check(model: ModelShape) -> None:
    if not isinstance(model, ModelShape):
        raise SymroofError(f"training parts: expected a transformer model, got "
                           f"{type(model).__name__}")


def training_parts(model: ModelShape, batch: object, seq: object, *,
                   recompute: Recompute | bool | str = Recompute.FLASH, fused: bool = True,
                   causal: Causal | bool | str = Causal.HALF,
                   statistics: Statistics | str = Statistics.SAVED,
                   loss_logit_bytes: object = 4) -> TrainingParts:
    """The parts of one micro-batch of ``batch`` sequences of ``seq`` tokens, from the
    training graph under ``recompute``; ``loss_logit_bytes`` per logit the loss keeps
    (fp32, as Megatron's cross-entropy does; 0 to leave the loss out)."""
    _check(model)
    keep_stats = option(Statistics, statistics, "statistics") is Statistics.SAVED
    g = training_graph(model, batch, seq, recompute=recompute, fused=fused, causal=causal,
                       optimizer=None)
    assert g.provenance.training is not None  # the backward pass records it
    forward = g.provenance.training.forward_ops
    split = tensor_parallel_split(g)
    before = _before(g, forward)
    acts = {k: [_ZERO, _ZERO] for k in ("layer", "first", "last")}
    for s in saved_tensors(g):
        if s.statistic and not keep_stats:
            continue
        owner: Op | Tensor = s.tensor
        value = s.tensor
        if s.statistic:
            node = g.node(s.tensor.name.removeprefix(STATISTICS_PREFIX))
            assert isinstance(node, Op)  # statistics are named after their op
            owner, value = node, node.outputs[0]
        where = "layer" if s.per_layer else ("first" if owner in before else "last")
        acts[where][0 if value in split else 1] += s.nbytes
    params = {k: [_ZERO, _ZERO] for k in ("layer", "first", "last", "shared")}
    for w in g.inputs:
        if w.kind != Kind.WEIGHT:
            continue
        n = g.count(w) * w.numel
        col = 0 if _weight_split(g, w, split, model.vocab) else 1
        fwd_readers = [op for op in g.consumers(w) if op.name in forward]
        if g.block(w):
            params["layer"][col] += n
            continue
        early = [op in before for op in fwd_readers]
        key = "shared" if any(early) and not all(early) else ("first" if all(early) else "last")
        params[key][col] += n
    loss = _ZERO
    if model.vocab is not None:
        logits = [t for t in g.outputs if t.kind == Kind.ACTIVATION and t.role.value == "value"]
        loss = sp.Add(*(t.numel for t in logits)) * as_expr(loss_logit_bytes, "loss_logit_bytes")
    def part(pair: list[sp.Expr]) -> Part:
        return Part(sp.expand(pair[0]), sp.expand(pair[1]))

    return TrainingParts(
        layers=sp.Add(*(grp.count for grp in model.layer_groups)),
        layer_activations=part(acts["layer"]), first_activations=part(acts["first"]),
        last_activations=part(acts["last"]), loss=sp.expand(loss),
        layer_params=part(params["layer"]), first_params=part(params["first"]),
        last_params=part(params["last"]), shared_params=part(params["shared"]))

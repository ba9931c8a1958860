"""Training memory per device under a :class:`~symroof.training.layout.TrainingLayout`,
by part, from the per-part sums of the training graph.

A pipeline stage holds ``L/p`` layers. Its device keeps the stage's parameters split
over ``t`` (weights at the model's bytes, gradients at the same bytes, the optimizer's
state per parameter), each divided by ``d`` as the ZeRO stage says, and the saved
activations of the micro-batches in flight: under the 1F1B schedule the first stage
holds ``min(p, m)`` of them, each with its ``L/p`` layers and the embedding's part; the
last stage one, with the final norm, LM head and loss. A layer's split activations
divide by ``t``, its whole ones only under sequence parallelism (Korthikanti et al.,
"Reducing Activation Recomputation in Large Transformer Models", 2022).

>>> from symroof.models import transformer
>>> from symroof.symbols import L, D, H, B, S, b, t
>>> m = transformer(layers=L, d_model=D, heads=H, norm="layernorm", hidden_dropout=0.1,
...                 attention_dropout=0.1).with_bytes(2)
>>> mem = training_memory(m, batch=B, seq=S, layout=TrainingLayout(tp=t),
...                       recompute="none", statistics="ignored")
>>> sp.factor(mem.per_layer)
B*S*(10*D*t + 24*D + 5*H*S)/t
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

from symroof.errors import SymroofError
from symroof.hardware import HardwareSpec, resolve
from symroof.memory.fit import fits
from symroof.options import Causal, Recompute, Statistics, option
from symroof.passes.optimizer import ADAM, Optimizer
from symroof.training.layout import TrainingLayout
from symroof.training.parts import Part, TrainingParts, training_parts
from symroof.workloads.shape import ModelShape

__all__ = ["StageMemory", "TrainingMemory", "training_memory"]


@dataclass(frozen=True)
class StageMemory:
    """Bytes on one device of a pipeline stage (``first``, ``last``, or ``only`` when
    there is one stage), by part, and the micro-batches whose activations it holds."""

    stage: str
    params: sp.Expr
    weights: sp.Expr
    gradients: sp.Expr
    optimizer_state: sp.Expr
    activations: sp.Expr
    in_flight: sp.Expr

    @property
    def total(self) -> sp.Expr:
        """weights + gradients + optimizer state + activations."""
        return self.weights + self.gradients + self.optimizer_state + self.activations


@dataclass(frozen=True)
class TrainingMemory:
    """Memory per device of a training layout: each end stage's, the activations of one
    layer for one micro-batch on one device (``per_layer``: the textbook
    ``sbh(34 + 5as/h)`` and its parallel forms), and the parts they come from."""

    layout: TrainingLayout
    stages: tuple[StageMemory, ...]
    per_layer: sp.Expr
    parts: TrainingParts

    @property
    def peak(self) -> StageMemory:
        """The stage that needs the most (the first one when that is not decidable)."""
        best = self.stages[0]
        for s in self.stages[1:]:
            if (s.total - best.total).is_positive:
                best = s
        return best

    def fits(self, hw: HardwareSpec | str, level: str | None = None) -> bool | None:
        """Whether the busiest device fits in ``hw``'s memory (None when symbolic)."""
        cap = resolve(hw).capacity(level)
        if cap is None:
            raise SymroofError(f"training memory: {resolve(hw).name} has no published "
                               "capacity")
        return fits(self.peak.total, cap)   # the one fit rule


def _stage(name: str, acts: sp.Expr, params: Part, flight: sp.Expr, lay: TrainingLayout,
           weight_bytes: sp.Expr, opt: Optimizer) -> StageMemory:
    n = params.per_device(lay.tp)
    d = lay.dp
    return StageMemory(name, n,
                       n * weight_bytes / (d if lay.zero >= 3 else 1),
                       n * weight_bytes / (d if lay.zero >= 2 else 1),
                       n * opt.state_bytes / (d if lay.zero >= 1 else 1),
                       flight * acts, flight)


def _check(model: ModelShape, lay: TrainingLayout) -> None:
    if lay.tp != 1 and (model.experts != 1 or model.latent is not None):
        raise SymroofError(f"training memory: tensor parallelism of model {model.name!r} "
                           "(experts or latent attention) is not modelled; use tp=1")
    if lay.pp.is_number and model.layers.is_number and model.layers % lay.pp != 0:
        raise SymroofError(f"training layout pp: {lay.pp} stages do not divide the "
                           f"{model.layers} layers of model {model.name!r}")


def training_memory(model: ModelShape, *, batch: object, seq: object,
                    layout: TrainingLayout = TrainingLayout(),
                    recompute: Recompute | bool | str = Recompute.FLASH, fused: bool = True,
                    causal: Causal | bool | str = Causal.HALF,
                    statistics: Statistics | str = Statistics.SAVED,
                    optimizer: Optimizer = ADAM, loss_logit_bytes: object = 4
                    ) -> TrainingMemory:
    """Bytes per device of training ``model`` on micro-batches of ``batch`` sequences of
    ``seq`` tokens laid out as ``layout``, by part (see the module docstring)."""
    lay = layout if isinstance(layout, TrainingLayout) else None
    if lay is None:
        raise SymroofError(f"training memory layout: expected a TrainingLayout, got "
                           f"{type(layout).__name__}")
    if not isinstance(optimizer, Optimizer):
        raise SymroofError(f"training memory optimizer: expected an Optimizer, got "
                           f"{type(optimizer).__name__}")
    option(Statistics, statistics, "statistics")
    parts = training_parts(model, batch, seq, recompute=recompute, fused=fused, causal=causal,
                           statistics=statistics, loss_logit_bytes=loss_logit_bytes)
    _check(model, lay)
    t, p, sq = lay.tp, lay.pp, lay.sequence_parallel
    layer = parts.layer_activations.per_device(t, sq) / p
    first = parts.first_activations.per_device(t, sq)
    last = parts.last_activations.per_device(t, sq) + parts.loss / t
    wb = model.weight_bytes
    layer_params = Part(parts.layer_params.split / p, parts.layer_params.whole / p)
    if p == 1:
        stages: tuple[StageMemory, ...] = (
            _stage("only", layer + first + last,
                   layer_params + parts.first_params + parts.last_params + parts.shared_params,
                   sp.Integer(1), lay, wb, optimizer),)
    else:
        stages = (_stage("first", layer + first,
                         layer_params + parts.first_params + parts.shared_params,
                         lay.in_flight, lay, wb, optimizer),
                  _stage("last", layer + last,
                         layer_params + parts.last_params + parts.shared_params,
                         sp.Integer(1), lay, wb, optimizer))
    per_layer = sp.expand(parts.layer_activations.per_device(t, sq) / parts.layers)
    return TrainingMemory(lay, stages, per_layer, parts)

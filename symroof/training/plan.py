"""A training run on a chip, all at once: memory per device by part and whether it
fits, FLOPs per step, the pipeline bubble, and the days a token budget takes at a
stated MFU (what ``symroof train`` prints).

>>> p = plan_training("gpt3-175b", "a100-80gb", seq=2048, global_batch=64,
...                   layout=TrainingLayout(tp=8, pp=8, sequence_parallel=True),
...                   recompute="selective", tokens=300 * 10**9, mfu=sp.Rational(1, 2))
>>> p.fits, p.layout.micro_batches, round(float(p.time.days))
(True, 64, 369)
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import sympy as sp

from symroof.errors import SymroofError
from symroof.hardware import HardwareSpec, resolve
from symroof.ir import as_dim, as_expr
from symroof.models import TransformerModel
from symroof.models import resolve as resolve_model
from symroof.options import Bubble, Causal, Recompute, Statistics, option
from symroof.precision import Precision
from symroof.training.compute import (TrainingCompute, TrainingTime, training_compute,
                                      training_time)
from symroof.training.layout import TrainingLayout, bubble
from symroof.training.memory import TrainingMemory, training_memory

__all__ = ["TrainingPlan", "plan_training"]


@dataclass(frozen=True)
class TrainingPlan:
    """A run of ``model`` on ``hardware`` at ``precision``: micro-batches of
    ``micro_batch`` sequences of ``seq`` tokens laid out as ``layout``, with its memory,
    compute and (given a token budget and an MFU) time."""

    model: TransformerModel
    hardware: HardwareSpec
    precision: Precision
    recompute: Recompute
    layout: TrainingLayout
    micro_batch: sp.Expr
    seq: sp.Expr
    memory: TrainingMemory
    compute: TrainingCompute
    time: TrainingTime | None

    @property
    def capacity(self) -> sp.Expr:
        """Bytes of memory per chip."""
        cap = self.hardware.capacity()
        assert cap is not None  # plan_training refuses a chip without one
        return cap

    @property
    def fits(self) -> bool | None:
        """Whether the busiest device's memory fits in the chip's."""
        return self.memory.fits(self.hardware)

    @property
    def sequences_per_step(self) -> sp.Expr:
        """The global batch: micro_batch x micro-batches x dp."""
        m = self.layout.micro_batches
        assert m is not None  # plan_training sets it
        return self.micro_batch * m * self.layout.dp

    @property
    def tokens_per_step(self) -> sp.Expr:
        """Tokens of one optimizer step."""
        return self.sequences_per_step * self.seq

    @property
    def model_flops_per_step(self) -> sp.Expr:
        """Model FLOPs of one step (all devices)."""
        return self.compute.model_flops(self.tokens_per_step)

    @property
    def hardware_flops_per_step(self) -> sp.Expr:
        """Hardware FLOPs of one step (recomputation included)."""
        return self.compute.hardware_flops(self.tokens_per_step)

    def bubble(self, of: Bubble | str = Bubble.IDEAL) -> sp.Expr:
        """The pipeline bubble of a step (0 with one stage)."""
        m = self.layout.micro_batches
        assert m is not None  # plan_training sets it
        return bubble(self.layout.pp, m, of)


def _at_precision(m: TransformerModel, precision: Precision) -> TransformerModel:
    """``m`` with bytes per value set by ``precision`` where they are symbols."""
    b = precision.bytes
    changes = {f: b for f in ("weight_bytes", "activation_bytes", "kv_bytes")
               if getattr(m, f).free_symbols}
    return m.replace(**changes) if changes else m


def plan_training(model: TransformerModel | str, hardware: HardwareSpec | str, *, seq: object,
                  micro_batch: object = 1, global_batch: object | None = None,
                  layout: TrainingLayout = TrainingLayout(),
                  recompute: Recompute | bool | str = Recompute.FLASH, fused: bool = True,
                  causal: Causal | bool | str = Causal.HALF,
                  statistics: Statistics | str = Statistics.SAVED,
                  precision: Precision | str = Precision.BF16,
                  tokens: object | None = None, mfu: object | None = None) -> TrainingPlan:
    """Plan training ``model`` on ``hardware`` (see :class:`TrainingPlan`).

    ``global_batch`` (sequences per step) sets the micro-batches per pipeline,
    ``global_batch / (micro_batch x dp)``; without it the layout's ``micro_batches``, or
    ``pp`` (the fewest that fill the pipeline). ``tokens`` and ``mfu`` together give the
    time.
    """
    precision = Precision.parse(precision)  # at the boundary: a name becomes a Precision
    m = _at_precision(resolve_model(model) if isinstance(model, str) else model, precision)
    if not isinstance(m, TransformerModel):
        raise SymroofError(f"plan training: expected a transformer model, got "
                           f"{type(m).__name__}")
    hw = resolve(hardware)
    if hw.capacity() is None:
        raise SymroofError(f"plan training: {hw.name} has no published memory capacity")
    hw.peak(precision)  # refused here if the chip has no such precision
    mb, sq = as_dim(micro_batch, "micro_batch"), as_dim(seq, "seq")
    lay = layout
    if global_batch is not None:
        per = mb * lay.dp
        g = as_dim(global_batch, "global_batch")
        if not (g / per).is_integer:
            raise SymroofError(f"global_batch: {g} sequences do not split into micro-batches "
                               f"of {mb} on {lay.dp} data-parallel replicas")
        lay = replace(lay, micro_batches=g / per)
    elif lay.micro_batches is None:
        lay = replace(lay, micro_batches=lay.pp)
    mode = option(Recompute, recompute, "recompute")
    mem = training_memory(m, batch=mb, seq=sq, layout=lay, recompute=mode, fused=fused,
                          causal=causal, statistics=statistics)
    comp = training_compute(m, sq, recompute=mode, fused=fused, causal=causal)
    time = None
    if (tokens is None) != (mfu is None):
        raise SymroofError("plan training: give tokens and mfu together (or neither)")
    if tokens is not None:
        time = training_time(comp, tokens=as_expr(tokens, "tokens"), chips=lay.devices,
                             hardware=hw, precision=precision, mfu=mfu)
    return TrainingPlan(m, hw, precision, mode, lay, mb, sq, mem, comp, time)

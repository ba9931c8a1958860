"""Training compute and time: FLOPs per token from the training graph, the model's and
the hardware's, and how long a token budget takes on ``n`` chips at a stated
utilization.

*Model FLOPs* are a step's forward and backward passes with nothing recomputed (MFU
divides these by the time); *hardware FLOPs* add what the recompute strategy runs again
(HFU divides these). Both include attention's S-dependent work and the LM head, under
the graph's conventions (``causal``: ``"none"`` counts the full S x S products, as
Megatron's and PaLM's MFU formulas do; ``"half"``, the default, what a causal kernel
does). The optimizer step's elementwise work is not counted (contractions only).

>>> from symroof.models import transformer
>>> from symroof.symbols import L, D, H, S, V
>>> c = training_compute(transformer(layers=L, d_model=D, heads=H, vocab=V), S,
...                      recompute="full", fused=False, causal="none")
>>> sp.factor(c.model_flops_per_token), sp.factor(c.hardware_flops_per_token)
(6*D*(12*D*L + 2*L*S + V), 2*D*(48*D*L + 8*L*S + 3*V))
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

from symroof.errors import SymroofError
from symroof.hardware import HardwareSpec, resolve
from symroof.ir import as_dim, as_expr
from symroof.options import Causal, FlopCount, Recompute, option
from symroof.precision import Precision
from symroof.workloads.shape import ModelShape
from symroof.workloads.transformer import training

__all__ = ["TrainingCompute", "TrainingTime", "training_compute", "training_time",
           "SECONDS_PER_DAY"]

SECONDS_PER_DAY = 86_400


@dataclass(frozen=True)
class TrainingCompute:
    """FLOPs of training per token at sequence length ``seq``: the model's (MFU's) and the
    hardware's (HFU's: recomputation included), under ``recompute``."""

    seq: sp.Expr
    recompute: Recompute
    model_flops_per_token: sp.Expr
    hardware_flops_per_token: sp.Expr

    @property
    def recompute_flops_per_token(self) -> sp.Expr:
        """What recomputation adds: hardware minus model FLOPs."""
        return sp.expand(self.hardware_flops_per_token - self.model_flops_per_token)

    def model_flops(self, tokens: object) -> sp.Expr:
        """Model FLOPs of ``tokens`` tokens."""
        return self.model_flops_per_token * as_expr(tokens, "tokens")

    def hardware_flops(self, tokens: object) -> sp.Expr:
        """Hardware FLOPs of ``tokens`` tokens."""
        return self.hardware_flops_per_token * as_expr(tokens, "tokens")


def training_compute(model: ModelShape, seq: object, *,
                     recompute: Recompute | bool | str = Recompute.FLASH, fused: bool = True,
                     causal: Causal | bool | str = Causal.HALF,
                     flop_count: FlopCount | str = FlopCount.TWO_PER_MAC) -> TrainingCompute:
    """Model and hardware FLOPs per token of training ``model`` on sequences of ``seq``
    tokens (each from a training graph of one sequence)."""
    sq = as_dim(seq, "seq")
    mode = option(Recompute, recompute, "recompute")

    def per_token(strategy: Recompute) -> sp.Expr:
        step = training(model, 1, sq, recompute=strategy, fused=fused, causal=causal,
                        optimizer=None, flop_count=flop_count)
        return sp.expand(step.flops / sq)

    return TrainingCompute(sq, mode, per_token(Recompute.NONE), per_token(mode))


@dataclass(frozen=True)
class TrainingTime:
    """How long ``tokens`` tokens take on ``chips`` chips of ``peak`` FLOP/s each, at a
    model FLOPs utilization ``mfu`` (hardware FLOPs utilization ``hfu``)."""

    tokens: sp.Expr
    chips: sp.Expr
    peak: sp.Expr
    mfu: sp.Expr
    hfu: sp.Expr
    model_flops: sp.Expr
    hardware_flops: sp.Expr

    @property
    def seconds(self) -> sp.Expr:
        """model FLOPs / (chips x peak x MFU)."""
        return self.model_flops / (self.chips * self.peak * self.mfu)

    @property
    def days(self) -> sp.Expr:
        """The time in days of 86,400 s."""
        return self.seconds / SECONDS_PER_DAY


def _fraction(value: object, what: str) -> sp.Expr:
    v = as_expr(value, what)
    if v.is_number and not 0 < v <= 1:
        raise SymroofError(f"{what}: expected a utilization in (0, 1], got {v}")
    return v


def training_time(compute: TrainingCompute, *, tokens: object, chips: object,
                  hardware: HardwareSpec | str | None = None,
                  precision: Precision | str = Precision.BF16,
                  peak: object | None = None, mfu: object | None = None,
                  hfu: object | None = None) -> TrainingTime:
    """The time to train on ``tokens`` tokens with ``chips`` chips of ``hardware`` (its
    dense peak at ``precision``) or of ``peak`` FLOP/s, at a stated ``mfu`` or ``hfu``
    (exactly one): seconds = model FLOPs / (chips x peak x MFU) = hardware FLOPs /
    (chips x peak x HFU)."""
    if not isinstance(compute, TrainingCompute):
        raise SymroofError(f"training time: expected a TrainingCompute, got "
                           f"{type(compute).__name__}")
    if (hardware is None) == (peak is None):
        raise SymroofError("training time: give exactly one of hardware and peak")
    if (mfu is None) == (hfu is None):
        raise SymroofError("training time: give exactly one of mfu and hfu")
    rate = resolve(hardware).peak(Precision.parse(precision)) if hardware is not None else \
        as_expr(peak, "training time peak")
    if rate.is_number and not rate.is_positive:
        raise SymroofError(f"training time peak: expected a positive FLOP/s, got {rate}")
    n = as_dim(chips, "training time chips")
    tok = as_expr(tokens, "training time tokens")
    if tok.is_number and not tok.is_positive:
        raise SymroofError(f"training time tokens: expected a positive count, got {tok}")
    model, hw = compute.model_flops(tok), compute.hardware_flops(tok)
    ratio = compute.hardware_flops_per_token / compute.model_flops_per_token
    if mfu is not None:
        m = _fraction(mfu, "training time mfu")
        h = m * ratio
    else:
        h = _fraction(hfu, "training time hfu")
        m = h / ratio
    return TrainingTime(tok, n, rate, m, h, model, hw)

"""How a training run is laid out on devices, and the formulas that follow from the
layout alone: ZeRO's sharded state, the 1F1B schedule's micro-batches in flight, the
pipeline bubble.

Tensor parallelism (Megatron) splits each layer's matrices over ``tp`` devices; sequence
parallelism also splits the activations a tensor-parallel layer keeps whole (norms,
dropouts, the residual stream) along the sequence; pipeline parallelism gives each of
``pp`` stages ``L/pp`` layers; data parallelism runs ``dp`` replicas, whose optimizer
state (ZeRO stage 1), gradients (2) and parameters (3) ZeRO shards over the replicas
(Rajbhandari et al., "ZeRO: Memory Optimizations Toward Training Trillion Parameter
Models", 2020).

>>> from symroof.symbols import dim
>>> p, m = dim("p"), dim("m")
>>> bubble(p, m), bubble(p, m, "total")
((p - 1)/m, (p - 1)/(m + p - 1))
>>> float(zero_bytes(7_500_000_000, 64, 1) / 10**9)      # ZeRO's Figure 1: 31.4 GB
31.40625
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

from symroof.errors import SymroofError
from symroof.ir import as_dim, as_expr
from symroof.options import Bubble, option

__all__ = ["TrainingLayout", "zero_bytes", "bubble", "in_flight"]


@dataclass(frozen=True)
class TrainingLayout:
    """Tensor (``tp``), pipeline (``pp``) and data (``dp``) parallel degrees, the ZeRO
    stage (0: none; 1, 2, 3: optimizer state, then gradients, then parameters sharded
    over ``dp``), sequence parallelism, and the micro-batches each pipeline runs per
    step (``micro_batches``; None: at least ``pp``, so the first stage is full).

    >>> TrainingLayout(tp=8, pp=8).devices
    64
    """

    tp: sp.Expr = sp.Integer(1)
    pp: sp.Expr = sp.Integer(1)
    dp: sp.Expr = sp.Integer(1)
    zero: int = 0
    sequence_parallel: bool = False
    micro_batches: sp.Expr | None = None

    def __post_init__(self) -> None:
        for f in ("tp", "pp", "dp"):
            object.__setattr__(self, f, as_dim(getattr(self, f), f"training layout {f}"))
        if self.micro_batches is not None:
            object.__setattr__(self, "micro_batches",
                               as_dim(self.micro_batches, "training layout micro_batches"))
        if isinstance(self.zero, bool) or self.zero not in (0, 1, 2, 3):
            raise SymroofError(f"training layout zero: expected a ZeRO stage 0, 1, 2 or 3, "
                               f"got {self.zero!r}")
        if not isinstance(self.sequence_parallel, bool):
            raise SymroofError("training layout sequence_parallel: expected true or false, "
                               f"got {self.sequence_parallel!r}")

    @property
    def devices(self) -> sp.Expr:
        """tp x pp x dp."""
        return self.tp * self.pp * self.dp

    @property
    def in_flight(self) -> sp.Expr:
        """Micro-batches whose activations the first pipeline stage holds at once."""
        return in_flight(self.pp, self.micro_batches)


def zero_bytes(params: object, dp: object, stage: int, *, weight_bytes: object = 2,
               gradient_bytes: object = 2, state_bytes: object = 12) -> sp.Expr:
    """Bytes of model state per data-parallel replica with ZeRO ``stage`` over ``dp``
    replicas: weights, gradients and optimizer state (K = 12 for mixed-precision Adam),
    the state sharded at stage 1, the gradients too at 2, the weights too at 3.

    >>> from symroof.symbols import dim, K
    >>> zero_bytes(dim("Psi"), dim("N_d"), 3, state_bytes=K)
    K*Psi/N_d + 4*Psi/N_d
    """
    psi, d = as_expr(params, "zero params"), as_dim(dp, "zero dp")
    if isinstance(stage, bool) or stage not in (0, 1, 2, 3):
        raise SymroofError(f"zero stage: expected 0, 1, 2 or 3, got {stage!r}")
    w, g, k = (as_expr(v, f"zero {n}") for v, n in ((weight_bytes, "weight_bytes"),
                                                     (gradient_bytes, "gradient_bytes"),
                                                     (state_bytes, "state_bytes")))
    parts = ((w, stage >= 3), (g, stage >= 2), (k, stage >= 1))
    return sp.Add(*(b * psi / (d if sharded else 1) for b, sharded in parts))


def in_flight(pp: object, micro_batches: object | None = None) -> sp.Expr:
    """Micro-batches the first of ``pp`` stages holds under the 1F1B schedule: ``pp``
    (its forward passes run ahead of the first backward by the pipeline's depth), or
    ``m`` when a step has fewer (``min(pp, m)``; ``pp`` when ``m`` is not given)."""
    p = as_dim(pp, "pipeline stages")
    if micro_batches is None:
        return p
    m = as_dim(micro_batches, "micro_batches")
    return sp.Min(p, m)


def bubble(pp: object, micro_batches: object, of: Bubble | str = Bubble.IDEAL) -> sp.Expr:
    """The 1F1B (or GPipe) pipeline bubble of ``pp`` stages and ``m`` micro-batches per
    step: ``(p - 1)/m`` of the ideal time (``of="ideal"``, as Narayanan et al. 2021 print
    it), or ``(p - 1)/(m + p - 1)`` of the whole step (``of="total"``)."""
    p, m = as_dim(pp, "pipeline stages"), as_dim(micro_batches, "micro_batches")
    if option(Bubble, of, "bubble") is Bubble.IDEAL:
        return (p - 1) / m
    return (p - 1) / (m + p - 1)

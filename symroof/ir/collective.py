"""The collective op: what a device sends over its link for tensor and pipeline
parallelism (an all-reduce, an all-gather, a point-to-point send).

A collective reads ``x`` and writes ``out`` (the reduced, gathered or received value)
and ``wire``, a tensor of kind communication whose bytes, times :attr:`Collective.factor`,
each device sends: a ring all-reduce of ``n`` bytes over ``t`` devices sends
``2(t-1)/t n``, an all-gather ``(t-1)/t n``, a send ``n``. Its cost rule is in the one
table (:mod:`symroof.cost`); the sharding pass (:mod:`symroof.passes.shard`) adds
collectives, and its ``collective_terms`` gives their bytes under other algorithms.

>>> from symroof.symbols import B, D
>>> x = Tensor("h", (B, D), Kind.ACTIVATION, 2)
>>> wire = Tensor("h:bytes", (B, D), Kind.COMMUNICATION, 2)
>>> Collective("all_reduce", x, Tensor("h'", (B, D), Kind.ACTIVATION, 2), wire, tp=4).factor
3/2
"""

from __future__ import annotations

from enum import StrEnum
from typing import ClassVar

import sympy as sp

from symroof.ir.nodes import Kind, Op, OpGroup, Tensor, as_dim, node
from symroof.options import option

__all__ = ["Collective", "CollectiveKind"]

_ONE = sp.Integer(1)


class CollectiveKind(StrEnum):
    """What a collective does, and so how many bytes each device sends."""

    ALL_REDUCE = "all_reduce"  # ring: reduce-scatter then all-gather, 2(t-1)/t of the bytes
    ALL_GATHER = "all_gather"  # ring: (t-1)/t of the gathered bytes
    SEND = "send"              # point to point between pipeline stages: all of the bytes



@node
class Collective(Op):
    """A collective over the tensor-parallel group, or a send between pipeline stages.

    Reads ``x`` and writes ``out`` (the reduced, gathered or received value) and ``wire``,
    a tensor of kind communication whose bytes, times :attr:`factor`, are what each device
    sends over its link. ``tp``, ``pp`` and ``microbatches`` record the layout.
    """

    x: Tensor = None  # type: ignore[assignment]
    out: Tensor = None  # type: ignore[assignment]
    wire: Tensor = None  # type: ignore[assignment]
    kind: CollectiveKind = CollectiveKind.ALL_REDUCE
    tp: sp.Expr = _ONE
    pp: sp.Expr = _ONE
    microbatches: sp.Expr = _ONE
    group: ClassVar[OpGroup] = OpGroup.DATA_MOVEMENT
    operands: ClassVar[tuple[str, ...]] = ("x",)

    def _validate(self) -> None:
        if not isinstance(self.wire, Tensor) or self.wire.kind != Kind.COMMUNICATION:
            raise self._fail("field 'wire': expected a Tensor of kind communication")
        object.__setattr__(self, "kind", option(CollectiveKind, self.kind, "collective kind"))
        for f in ("tp", "pp", "microbatches"):
            object.__setattr__(self, f, as_dim(getattr(self, f), f"collective {self.name!r} {f}"))

    @property
    def outputs(self) -> tuple[Tensor, ...]:
        """The result and the bytes on the wire."""
        return (self.out, self.wire)

    @property
    def factor(self) -> sp.Expr:
        """Bytes each device sends per byte of ``wire``: 2(t-1)/t, (t-1)/t or 1."""
        t = self.tp
        if self.kind is CollectiveKind.ALL_REDUCE:
            return 2 * (t - 1) / t
        if self.kind is CollectiveKind.ALL_GATHER:
            return (t - 1) / t
        return _ONE

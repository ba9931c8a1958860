"""What builders and passes record about a graph, as typed, immutable values.

A pass never mutates the provenance of the graph it is given: it copies the graph and
replaces the copy's :class:`Provenance` with an updated one
(``graph.record(fused=...)``). Nothing here is pending work: a fusion group is recorded
when the fusion pass has applied it.

>>> Provenance().fused, Provenance().training is None
((), True)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING

import sympy as sp

if TYPE_CHECKING:  # annotations only: nodes.py defines them, and imports nothing from here
    from symroof.ir.nodes import Node

__all__ = ["FusedGroup", "Training", "Provenance"]


@dataclass(frozen=True)
class FusedGroup:
    """One fused kernel: its ops, the tensors it keeps on chip, and what that needs.

    ``capacity`` is the on-chip bytes the group's internal tensors need if held whole
    (the condition ``capacity <= C`` for on-chip memory C); a streaming kernel that
    tiles them (FlashAttention) needs only a tile of them, stated by ``tile_capacity``.
    ``restore`` keeps each crossing the fusion set to 0 with its value before, so that
    unfusing restores compulsory, tiled or conventional traffic exactly.
    """

    name: str
    ops: tuple[str, ...]
    internal: tuple[str, ...]
    capacity: sp.Expr
    tile_capacity: sp.Expr | None = None
    restore: tuple[tuple[Node, Node, sp.Expr], ...] = ()


@dataclass(frozen=True)
class Training:
    """What the backward pass added: which ops ran forward, each weight's gradient, and
    whether tensors a fused forward kept on chip were recomputed."""

    forward_ops: frozenset[str]
    gradients: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    recompute: bool = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "forward_ops", frozenset(self.forward_ops))
        object.__setattr__(self, "gradients", MappingProxyType(dict(self.gradients)))


@dataclass(frozen=True)
class Provenance:
    """The typed record of how a graph was made.

    - ``fused``: the fusion groups applied, in order;
    - ``tiles``: (loop extent, tile size) pairs of the tiling pass;
    - ``assumptions``: what passes assumed that the formulas do not show (exact division);
    - ``training``: set by the backward pass;
    - ``passes``: the names of the pipeline stages the graph went through, in order.
    """

    fused: tuple[FusedGroup, ...] = ()
    tiles: tuple[tuple[sp.Expr, sp.Expr], ...] = ()
    assumptions: tuple[str, ...] = ()
    training: Training | None = None
    passes: tuple[str, ...] = ()

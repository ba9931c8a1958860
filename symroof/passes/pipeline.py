"""The pass pipeline: passes run in one fixed order, each Graph -> Graph.

The order, and why each pass sits where it does:

1. ``fuse``: kernels come first; what stays on chip is a property of the forward kernels.
2. ``tile``: tiling multiplies the re-reads of what still crosses the boundary.
3. ``shard``: splits weights, heads and layers over devices and adds their communication.
4. ``backward``: gradients inherit the forward's kernels (on-chip tensors stay on chip,
   or are recomputed) and its sharding.
5. ``optimizer_step``: reads the gradients the backward pass recorded.

>>> from symroof.passes.fuse import Fuse
>>> from symroof.passes.backward import Backward
>>> Pipeline("training", (Backward(), Fuse(()))).names
Traceback (most recent call last):
...
symroof.errors.SymroofError: pipeline 'training': pass 'fuse' must run before 'backward'
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from symroof.errors import SymroofError
from symroof.ir import Graph

__all__ = ["Pass", "Pipeline", "ORDER"]

#: Pass names in the order they may run (see the module docstring for why).
ORDER = ("fuse", "tile", "shard", "backward", "optimizer_step")


class Pass(Protocol):
    """A graph pass: a frozen object with a ``name`` and one ``apply``."""

    @property
    def name(self) -> str: ...

    def apply(self, graph: Graph) -> Graph: ...


@dataclass(frozen=True)
class Pipeline:
    """Named passes, run in :data:`ORDER`; ``apply`` never changes the graph it is given."""

    name: str
    stages: tuple[Pass, ...]

    def __post_init__(self) -> None:
        rank = -1
        for stage in self.stages:
            if stage.name not in ORDER:
                raise SymroofError(f"pipeline {self.name!r}: unknown pass {stage.name!r}; "
                                   f"expected one of {', '.join(ORDER)}")
            if ORDER.index(stage.name) < rank:
                raise SymroofError(f"pipeline {self.name!r}: pass {stage.name!r} must run "
                                   f"before {ORDER[rank]!r}")
            rank = ORDER.index(stage.name)

    @property
    def names(self) -> tuple[str, ...]:
        """The stages' names, in order."""
        return tuple(s.name for s in self.stages)

    def apply(self, graph: Graph) -> Graph:
        """``graph`` through every stage; the result's provenance lists the stages
        (``provenance.passes``)."""
        for stage in self.stages:
            graph = stage.apply(graph)
        if self.stages:
            graph.record(passes=(*graph.provenance.passes, *self.names))
        return graph

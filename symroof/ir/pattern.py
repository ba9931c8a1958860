"""Fusion patterns: a kernel named by the structure of the ops it covers, not their names.

A :class:`Pattern` is a region of a graph that ends at one op (its ``tail``) and is found
by walking back from the tail's first operand through ops of the pattern's ``body``
groups until each path reaches a ``head`` op. Each step matches an op by its
:class:`~symroof.ir.OpGroup` and by what its operands are (a weight among them or not,
a linear elementwise sum), never by its class or name. Every tensor made inside the
region other than the tail's output must be read only inside it, so the region is one
kernel whose inner tensors can stay on chip. The fusion pass
(:class:`symroof.passes.fuse.Fuse`) matches its patterns on the graph it is given; a
workload built from new layers is fused by its structure.

Two patterns cover the kernels builders ask for: :data:`GEMM_EPILOGUE` (a GEMM and the
bias add that consumes it) and, in :mod:`symroof.workloads.attention`, FlashAttention
(scores GEMM, softmax and masks, probabilities-times-values GEMM).

>>> from symroof.symbols import M, N, K
>>> from symroof.ir import Graph
>>> g = Graph("linear")
>>> y = g.gemm(g.input("x", (M, K)), g.weight("W", (K, N)), name="proj")
>>> g.output(g.elementwise(y, g.weight("bias", (N,)), name="proj+bias", linear=True))
>>> [sorted(ops) for ops, _ in GEMM_EPILOGUE.matches(g)]
[['proj', 'proj+bias']]
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import sympy as sp

from symroof.errors import SymroofError
from symroof.ir.graph import Graph
from symroof.ir.nodes import Elementwise, Kind, Op, OpGroup, Tensor

__all__ = ["Step", "Pattern", "GEMM_EPILOGUE", "TileRule"]

#: What a matched kernel needs on chip when it streams tiles (None: its inner tensors
#: whole): a fixed size, or a rule of the matched ops (heads first, the tail last).
TileRule = Callable[[tuple[Op, ...]], sp.Expr]


@dataclass(frozen=True)
class Step:
    """One op of a pattern: its group and what its operands must be.

    ``weight``: True, one operand is a weight (a parameter); False, none is; None, either.
    ``linear``: for an elementwise op, whether it is a sum of its inputs (a bias or
    residual add); None, either.
    """

    group: OpGroup
    weight: bool | None = None
    linear: bool | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.group, OpGroup):
            raise SymroofError(f"pattern step group: expected an OpGroup, got {self.group!r}")

    def holds(self, op: Op) -> bool:
        """Whether ``op`` is an op of this step."""
        if op.group is not self.group:
            return False
        if self.weight is not None and \
                any(t.kind == Kind.WEIGHT for t in op.inputs) is not self.weight:
            return False
        if self.linear is not None and (not isinstance(op, Elementwise)
                                        or op.linear is not self.linear):
            return False
        return True


@dataclass(frozen=True)
class Pattern:
    """A kernel: ``head`` ops, then ops of the ``body`` groups, then one ``tail`` op.

    ``heads`` is how many head ops a match has (None: one or more). ``tile`` is the
    on-chip size the kernel needs when it streams tiles (an expression, or a rule of the
    matched ops); None when its inner tensors are held whole. ``operand`` is the tail's
    operand the walk starts from (0: the first, as a GEMM's ``a``; None: every one).
    """

    name: str
    head: Step
    tail: Step
    body: frozenset[OpGroup] = frozenset()
    heads: int | None = None
    tile: sp.Expr | TileRule | None = None
    operand: int | None = 0

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise SymroofError(f"pattern name: expected a non-empty string, got {self.name!r}")
        for what in ("head", "tail"):
            if not isinstance(getattr(self, what), Step):
                raise SymroofError(f"pattern {self.name!r} {what}: expected a Step, got "
                                   f"{getattr(self, what)!r}")
        object.__setattr__(self, "body", frozenset(self.body))
        if not all(isinstance(grp, OpGroup) for grp in self.body):
            raise SymroofError(f"pattern {self.name!r} body: expected OpGroups, got "
                               f"{sorted(map(str, self.body))}")

    def with_tile(self, tile: sp.Expr | TileRule | None) -> Pattern:
        """This pattern with another on-chip tile."""
        return Pattern(self.name, self.head, self.tail, self.body, self.heads, tile,
                       self.operand)

    def matches(self, graph: Graph) -> Iterator[tuple[frozenset[str], sp.Expr | None]]:
        """Each region of ``graph`` this pattern covers: its op names and its tile, in the
        order the graph's ops were added (of each region's tail)."""
        for op in graph.ops_in_order():
            if self.tail.holds(op):
                found = self._region(graph, op)
                if found is not None:
                    heads, ops = found
                    yield frozenset(o.name for o in ops), self._tile((*heads, op))

    def _region(self, g: Graph, tail: Op) -> tuple[tuple[Op, ...], list[Op]] | None:
        heads: list[Op] = []
        ops: list[Op] = [tail]
        seen: set[Op] = {tail}
        if self.operand is not None and self.operand >= len(tail.inputs):
            return None
        todo: list[Tensor] = list(tail.inputs if self.operand is None
                                  else tail.inputs[self.operand:self.operand + 1])
        while todo:
            producer = g.producer(todo.pop())
            if producer is None or producer in seen:
                continue            # an input of the graph (a weight, the sinks) or known
            seen.add(producer)
            if self.head.holds(producer):
                heads.append(producer)
            elif producer.group in self.body:
                todo.extend(producer.inputs)
            else:
                return None         # the path leaves the pattern before reaching a head
            ops.append(producer)
        if not heads or (self.heads is not None and len(heads) != self.heads):
            return None
        inside = set(ops)
        for op in ops:
            if op is not tail and not all(set(g.consumers(t)) <= inside and
                                          t not in g.outputs for t in op.outputs):
                return None         # an inner tensor is read outside: not one kernel
        return tuple(heads), ops

    def _tile(self, ops: tuple[Op, ...]) -> sp.Expr | None:
        if self.tile is None or isinstance(self.tile, sp.Expr):
            return self.tile
        return self.tile(ops)


#: A GEMM and the bias add that reads its output: the GEMM's epilogue.
GEMM_EPILOGUE = Pattern("gemm epilogue", head=Step(OpGroup.CONTRACTION),
                        tail=Step(OpGroup.ELEMENTWISE, weight=True, linear=True), heads=1)

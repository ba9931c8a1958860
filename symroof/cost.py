"""The Cost value, the counting convention, one cost rule per op type, and the interpreter.

A rule returns an op's FLOPs and, for each input, the fraction of it the op touches
(1 unless the op reads part of a tensor, as a gather does). The interpreter turns that
into bytes read and written through the graph's crossing factors and multiplicities.
An op type without a rule raises; nothing counts as zero by omission.

>>> from symroof.symbols import M, N, K
>>> from symroof.ir import Graph
>>> g = Graph("mm")
>>> c = g.gemm(g.input("A", (M, K)), g.weight("B", (K, N)), name="C")
>>> cost = interpret(g)
>>> cost.flops, cost.bytes
(2*K*M*N, K*M*b + K*N*b + M*N*b)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType
from typing import Any

import sympy as sp

from symroof.ir import (Collective, Elementwise, Gather, Gemm, Graph, Kind, Move, Op, OpGroup,
                        Reduce, View, prod)
from symroof.options import FlopCount, option
from symroof.rules import RuleTable

__all__ = ["Cost", "FlopCount", "Convention", "MEMORY_KINDS", "cost_rule", "op_cost", "op_costs", "interpret",
           "RULES"]

_ZERO = sp.Integer(0)
_ONE = sp.Integer(1)


def _times(a: Any, b: Any) -> Any:
    """``a * b``, skipping SymPy's multiplication where a factor is exactly 1 (most
    crossing factors, fractions touched and counts are): the same expression either
    way, since SymPy drops a factor of 1 (the order of the factors is kept, as it decides
    whether a number is distributed over a sum)."""
    if b is _ONE or (type(b) is int and b == 1):
        return a
    if a is _ONE or (type(a) is int and a == 1):
        return b
    return a * b


def _sum(terms: list[sp.Expr]) -> sp.Expr:
    """``Add(*terms)`` without SymPy's work for a single term (the same expression)."""
    return terms[0] if len(terms) == 1 else sp.Add(*terms)


def _freeze(d: Mapping[Kind, sp.Expr]) -> Mapping[Kind, sp.Expr]:
    return MappingProxyType({k: d[k] for k in Kind if k in d and d[k] != 0})


def _sum_by_kind(parts: Iterable[Mapping[Kind, sp.Expr]], scale: sp.Expr = _ONE
                 ) -> Mapping[Kind, sp.Expr]:
    """Per kind, one ``Add`` of every part's terms (pairwise sums would be quadratic)."""
    terms: dict[Kind, list[sp.Expr]] = {}
    for part in parts:
        for k, v in part.items():
            terms.setdefault(k, []).append(v)
    return _freeze({k: _times(scale, _sum(vs)) for k, vs in terms.items()})


@dataclass(frozen=True)
class Cost:
    """FLOPs and boundary traffic of some work, traffic broken down by tensor kind.

    >>> from symroof.symbols import n
    >>> (Cost(2*n) + Cost(n, read={Kind.WEIGHT: 4*n})).flops
    3*n
    """

    flops: sp.Expr = _ZERO                                          # arithmetic operations
    read: Mapping[Kind, sp.Expr] = field(default_factory=dict)      # bytes read across the boundary
    written: Mapping[Kind, sp.Expr] = field(default_factory=dict)   # bytes written across it

    def __post_init__(self) -> None:
        object.__setattr__(self, "read", _freeze(self.read))
        object.__setattr__(self, "written", _freeze(self.written))

    def __add__(self, other: Cost) -> Cost:
        if not isinstance(other, Cost):
            return NotImplemented
        return Cost.total((self, other))

    @staticmethod
    def total(costs: Iterable[Cost]) -> Cost:
        """The sum of ``costs``: one ``Add`` per field, linear in their number."""
        items = list(costs)
        return Cost(sp.Add(*(c.flops for c in items)), _sum_by_kind(c.read for c in items),
                    _sum_by_kind(c.written for c in items))

    def scaled(self, factor: sp.Expr) -> Cost:
        """This cost ``factor`` times over (a repeated block)."""
        return Cost(self.flops * factor, _sum_by_kind((self.read,), factor),
                    _sum_by_kind((self.written,), factor))

    def only(self, kinds: Iterable[Kind]) -> Cost:
        """The same FLOPs, with traffic of the given tensor kinds only."""
        keep = set(kinds)
        return Cost(self.flops, {k: v for k, v in self.read.items() if k in keep},
                    {k: v for k, v in self.written.items() if k in keep})

    @property
    def bytes_read(self) -> sp.Expr:
        """All bytes read."""
        return sp.Add(*self.read.values())

    @property
    def bytes_written(self) -> sp.Expr:
        """All bytes written."""
        return sp.Add(*self.written.values())

    @property
    def bytes(self) -> sp.Expr:
        """All traffic: bytes read plus bytes written."""
        return self.bytes_read + self.bytes_written

    @property
    def bytes_by_kind(self) -> Mapping[Kind, sp.Expr]:
        """Read plus written bytes per tensor kind."""
        return _sum_by_kind((self.read, self.written))


_ALL_GROUPS = frozenset(OpGroup)
#: Tensor kinds whose bytes cross a memory boundary (communication crosses a link instead,
#: and is a roof of its own); the default traffic of every convention.
MEMORY_KINDS = frozenset(Kind) - {Kind.COMMUNICATION}
_ALL_KINDS = MEMORY_KINDS


@dataclass(frozen=True)
class Convention:
    """Every counting choice behind a figure, named, with its default.

    - ``flop_count``: how a MAC counts (default two FLOPs).
    - ``ops``: which op groups' FLOPs count (default all; the transformer workloads count
      contractions only, as the seeds and PyTorch's counter do).
    - ``traffic``: which tensor kinds' bytes count toward Q (default all: compulsory
      traffic of every tensor; the seeds' decode model keeps activations resident).
    """

    flop_count: FlopCount = FlopCount.TWO_PER_MAC
    ops: frozenset[OpGroup] = _ALL_GROUPS
    traffic: frozenset[Kind] = _ALL_KINDS

    def __post_init__(self) -> None:
        object.__setattr__(self, "flop_count",
                           option(FlopCount, self.flop_count, "convention flop_count"))
        object.__setattr__(self, "ops", _enum_set(OpGroup, self.ops, "ops"))
        object.__setattr__(self, "traffic", _enum_set(Kind, self.traffic, "traffic"))

    @property
    def all_ops(self) -> bool:
        """Every op group's FLOPs count."""
        return self.ops == _ALL_GROUPS

    @property
    def all_traffic(self) -> bool:
        """Every tensor kind's bytes count."""
        return self.traffic == _ALL_KINDS


def _enum_set(enum: type[StrEnum], values: Iterable[object], what: str) -> frozenset[StrEnum]:
    if isinstance(values, str):
        values = (values,)
    return frozenset(option(enum, v, f"convention {what}") for v in values)


# ---------------------------------------------------------------------------
# rules: op -> (FLOPs, fraction of each operand touched, by tensor name; default 1)

#: A rule takes its own op type (hence Any) and the convention.
Rule = Callable[[Any, Convention], tuple[sp.Expr, Mapping[str, sp.Expr]]]
RULES: RuleTable[Rule] = RuleTable("cost", "symroof.cost.cost_rule")
cost_rule = RULES.register


@cost_rule(Gemm)
def _gemm(op: Gemm, conv: Convention) -> tuple[sp.Expr, Mapping[str, sp.Expr]]:
    batch, m, n, k = op.dims
    outputs = _times(_times(_times(prod(batch), m), n), op.work_fraction)
    per_output = {FlopCount.TWO_PER_MAC: lambda: 2 * k, FlopCount.ONE_PER_MAC: lambda: k,
                  FlopCount.EXACT: lambda: 2 * k - 1}[conv.flop_count]()
    return outputs * per_output, {}


@cost_rule(Elementwise)
def _elementwise(op: Elementwise, conv: Convention) -> tuple[sp.Expr, Mapping[str, sp.Expr]]:
    return _times(op.out.numel, op.flops_per_element), {}


@cost_rule(Reduce)
def _reduce(op: Reduce, conv: Convention) -> tuple[sp.Expr, Mapping[str, sp.Expr]]:
    return _times(op.x.numel, op.flops_per_element), {}


@cost_rule(Gather)
def _gather(op: Gather, conv: Convention) -> tuple[sp.Expr, Mapping[str, sp.Expr]]:
    # each lookup reads its row: rows / table rows of the table (no reuse between
    # lookups is assumed, so a batch with more tokens than the vocabulary reads more)
    return _ZERO, {op.table.name: op.rows / op.table.shape[0]}


@cost_rule(Move)
def _move(op: Move, conv: Convention) -> tuple[sp.Expr, Mapping[str, sp.Expr]]:
    return _ZERO, {x.name: op.read_fraction for x in op.xs}


@cost_rule(Collective)
def _collective(op: Collective, conv: Convention) -> tuple[sp.Expr, Mapping[str, sp.Expr]]:
    # no arithmetic is counted (a data-movement op); the wire carries factor x its bytes
    return _ZERO, {op.wire.name: op.factor}


@cost_rule(View)
def _view(op: View, conv: Convention) -> tuple[sp.Expr, Mapping[str, sp.Expr]]:
    # a reinterpretation: the values stay where they are
    return _ZERO, {op.x.name: _ZERO, op.out.name: _ZERO}


# ---------------------------------------------------------------------------
# interpreter


def op_cost(graph: Graph, op: Op, convention: Convention = Convention()) -> Cost:
    """The cost of all occurrences of ``op`` (its count times one occurrence)."""
    flops, touched = RULES.rule(op, f"graph {graph.name!r}")(op, convention)
    if op.group not in convention.ops:
        flops = _ZERO
    read: dict[Kind, list[sp.Expr]] = {}
    for t in dict.fromkeys(op.inputs):  # an operand used twice (x @ x^T) is read once
        amount = _times(_times(graph.crossings(t, op), touched.get(t.name, 1)), t.nbytes)
        read.setdefault(t.kind, []).append(amount)
    written: dict[Kind, list[sp.Expr]] = {}
    for t in op.outputs:
        amount = _times(_times(graph.crossings(op, t), touched.get(t.name, 1)), t.nbytes)
        written.setdefault(t.kind, []).append(amount)
    count = graph.count(op)
    return Cost(_times(flops, count), {k: _times(count, _sum(v)) for k, v in read.items()},
                {k: _times(count, _sum(v)) for k, v in written.items()})


def op_costs(graph: Graph, convention: Convention = Convention()) -> Mapping[str, Cost]:
    """The cost of every op of ``graph`` by op name, in topological order (the interpreter)."""
    return MappingProxyType({op.name: op_cost(graph, op, convention) for op in graph.ops})


def interpret(graph: Graph, convention: Convention = Convention()) -> Cost:
    """The total cost of a graph: the sum of every op's cost."""
    return Cost.total(op_costs(graph, convention).values())

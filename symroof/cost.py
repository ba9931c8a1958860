"""The Cost value, counting conventions, one cost rule per op type, and the interpreter.

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

import sympy as sp

from symroof.errors import SymroofError
from symroof.ir import Elementwise, Gather, Gemm, Graph, Kind, Move, Op, OpGroup, Reduce, View, prod

__all__ = ["Cost", "FlopCount", "Convention", "cost_rule", "op_cost", "interpret", "RULES"]

_ZERO = sp.Integer(0)


def _freeze(d: Mapping[Kind, sp.Expr]) -> Mapping[Kind, sp.Expr]:
    return MappingProxyType({k: d[k] for k in Kind if k in d and d[k] != 0})


def _merge(a: Mapping[Kind, sp.Expr], c: Mapping[Kind, sp.Expr], scale: sp.Expr = sp.Integer(1)
           ) -> Mapping[Kind, sp.Expr]:
    out = dict(a)
    for k, v in c.items():
        out[k] = out.get(k, _ZERO) + scale * v
    return _freeze(out)


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
        return Cost(self.flops + other.flops, _merge(self.read, other.read),
                    _merge(self.written, other.written))

    def scaled(self, factor: sp.Expr) -> Cost:
        """This cost ``factor`` times over (a repeated block)."""
        return Cost(self.flops * factor, _merge({}, self.read, factor),
                    _merge({}, self.written, factor))

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
        return _merge(self.read, self.written)


class FlopCount(StrEnum):
    """How a multiply-accumulate counts."""

    TWO_PER_MAC = "two_per_mac"  # a MAC is 2 FLOPs: 2MNK (Kaplan, Pope, vendor peaks); default
    ONE_PER_MAC = "one_per_mac"  # a MAC is 1 operation: MNK (ResNet-50's 3.8 G, the TPU paper)
    EXACT = "exact"              # K multiplies and K-1 adds per output: MN(2K-1)

    @property
    def ops_per_mac(self) -> int:
        """How the matching hardware peak counts a MAC (exact counts compare with 2)."""
        return 1 if self is FlopCount.ONE_PER_MAC else 2


_ALL_GROUPS = frozenset(OpGroup)
_ALL_KINDS = frozenset(Kind)


@dataclass(frozen=True)
class Convention:
    """Every counting choice behind a figure, named, with its default.

    - ``flops``: how a MAC counts (default two FLOPs).
    - ``ops``: which op groups' FLOPs count (default all; the transformer workloads count
      contractions only, as the seeds and PyTorch's counter do).
    - ``traffic``: which tensor kinds' bytes count toward Q (default all: compulsory
      traffic of every tensor; the seeds' decode model keeps activations resident).
    """

    flops: FlopCount = FlopCount.TWO_PER_MAC
    ops: frozenset[OpGroup] = _ALL_GROUPS
    traffic: frozenset[Kind] = _ALL_KINDS

    def __post_init__(self) -> None:
        try:
            object.__setattr__(self, "flops", FlopCount(self.flops))
        except ValueError:
            raise SymroofError(f"convention flops: expected one of "
                               f"{', '.join(f.value for f in FlopCount)}, got {self.flops!r}") from None
        object.__setattr__(self, "ops", _enum_set(OpGroup, self.ops, "ops"))
        object.__setattr__(self, "traffic", _enum_set(Kind, self.traffic, "traffic"))

    def describe(self) -> str:
        ops = "all ops" if self.ops == _ALL_GROUPS else "+".join(sorted(self.ops))
        kinds = "all tensors" if self.traffic == _ALL_KINDS else "+".join(sorted(self.traffic))
        return f"FLOPs: {self.flops.value}, {ops}; traffic: {kinds}"


def _enum_set(enum: type[StrEnum], values: Iterable[object], what: str) -> frozenset:
    if isinstance(values, str):
        values = (values,)
    try:
        return frozenset(enum(v) for v in values)
    except ValueError as exc:
        raise SymroofError(f"convention {what}: {exc}; expected some of "
                           f"{', '.join(e.value for e in enum)}") from None


# ---------------------------------------------------------------------------
# rules: op -> (FLOPs, fraction of each operand touched, by tensor name; default 1)

Rule = Callable[[Op, Convention], tuple[sp.Expr, Mapping[str, sp.Expr]]]
_RULES: dict[type[Op], Rule] = {}
RULES: Mapping[type[Op], Rule] = MappingProxyType(_RULES)


def cost_rule(op_type: type[Op]) -> Callable[[Rule], Rule]:
    """Register the cost rule of an op type (one per type)."""
    def register(rule: Rule) -> Rule:
        if op_type in _RULES:
            raise SymroofError(f"cost rule for {op_type.__name__} registered twice")
        _RULES[op_type] = rule
        return rule
    return register


@cost_rule(Gemm)
def _gemm(op: Gemm, conv: Convention) -> tuple[sp.Expr, Mapping[str, sp.Expr]]:
    batch, m, n, k = op.dims
    outputs = prod(batch) * m * n * op.work_fraction
    per_output = {FlopCount.TWO_PER_MAC: 2 * k, FlopCount.ONE_PER_MAC: k,
                  FlopCount.EXACT: 2 * k - 1}[conv.flops]
    return outputs * per_output, {}


@cost_rule(Elementwise)
def _elementwise(op: Elementwise, conv: Convention) -> tuple[sp.Expr, Mapping[str, sp.Expr]]:
    return op.out.numel * op.flops_per_element, {}


@cost_rule(Reduce)
def _reduce(op: Reduce, conv: Convention) -> tuple[sp.Expr, Mapping[str, sp.Expr]]:
    return op.x.numel * op.flops_per_element, {}


@cost_rule(Gather)
def _gather(op: Gather, conv: Convention) -> tuple[sp.Expr, Mapping[str, sp.Expr]]:
    # each lookup reads its row: rows / table rows of the table (no reuse between
    # lookups is assumed, so a batch with more tokens than the vocabulary reads more)
    return _ZERO, {op.table.name: op.rows / op.table.shape[0]}


@cost_rule(Move)
def _move(op: Move, conv: Convention) -> tuple[sp.Expr, Mapping[str, sp.Expr]]:
    return _ZERO, {x.name: op.read_fraction for x in op.xs}


@cost_rule(View)
def _view(op: View, conv: Convention) -> tuple[sp.Expr, Mapping[str, sp.Expr]]:
    # a reinterpretation: the values stay where they are
    return _ZERO, {op.x.name: _ZERO, op.out.name: _ZERO}


# ---------------------------------------------------------------------------
# interpreter


def op_cost(graph: Graph, op: Op, convention: Convention = Convention()) -> Cost:
    """The cost of all occurrences of ``op`` (its count times one occurrence)."""
    rule = _RULES.get(type(op))
    if rule is None:
        raise SymroofError(f"op {op.name!r}: no cost rule for {type(op).__name__} "
                           "(register one with symroof.cost.cost_rule)")
    flops, touched = rule(op, convention)
    if op.group not in convention.ops:
        flops = _ZERO
    read: dict[Kind, sp.Expr] = {}
    for t in dict.fromkeys(op.inputs):  # an operand used twice (x @ x^T) is read once
        amount = graph.crossings(t, op) * touched.get(t.name, 1) * t.nbytes
        read[t.kind] = read.get(t.kind, _ZERO) + amount
    written: dict[Kind, sp.Expr] = {}
    for t in op.outputs:
        amount = graph.crossings(op, t) * touched.get(t.name, 1) * t.nbytes
        written[t.kind] = written.get(t.kind, _ZERO) + amount
    return Cost(flops, read, written).scaled(graph.count(op))


def interpret(graph: Graph, convention: Convention = Convention()) -> Cost:
    """The total cost of a graph: the sum of every op's cost, in topological order."""
    total = Cost()
    for op in graph.ops:
        total = total + op_cost(graph, op, convention)
    return total

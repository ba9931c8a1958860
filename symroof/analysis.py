"""Analysis: a graph's costs under a convention, as SymPy expressions.

>>> from symroof.symbols import n
>>> from symroof.workloads import gemm
>>> gemm(n, n, n).intensity
2*n/(3*b)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property
from types import MappingProxyType

import sympy as sp
from sympy.core.mul import _keep_coeff
from sympy.polys.rings import PolyElement, sring

from symroof.cost import MEMORY_KINDS, Convention, Cost, op_costs
from symroof.errors import SymroofError
from symroof.ir import Graph, Kind, OpGroup, as_expr
from symroof.options import FlopCount, renamed
from symroof.rich import Rich

__all__ = ["Analysis", "Workload", "analyze", "graph_assumptions", "ratio"]


def ratio(num: sp.Expr, den: sp.Expr) -> sp.Expr:
    """``factor_terms(cancel(num/den))``: one fraction in lowest terms, common factors out.

    Two polynomials with rational coefficients (every FLOP and byte count of a graph
    without a fractional dimension) are cancelled in SymPy's polynomial ring directly,
    and with integer coefficients their content and common monomial are taken out there
    too: the same expression, without ``cancel``'s and ``factor_terms``' general passes
    (tests/engine/test_derive_speed.py compares the two structurally).

    >>> from symroof.symbols import n, b
    >>> ratio(2*n**3, 3*n**2*b), ratio(6*n**2 + 4*n, 2*n*b + 2*b)
    (2*n/(3*b), n*(3*n + 2)/(b*(n + 1)))
    """
    if num.is_polynomial() and den.is_polynomial() and (num.free_symbols or den.free_symbols):
        ring, (p, q) = sring((num, den))
        if ring.domain.is_ZZ or ring.domain.is_QQ:
            if not p:  # zero: cancel's answer
                return sp.Integer(0)
            p, q = p.cancel(q)
            if not (ring.domain.is_ZZ and len(p) > 1 and len(q) > 1):
                return sp.factor_terms(p.as_expr() / q.as_expr())
            cp, p = p.primitive()
            cq, q = q.primitive()
            return _keep_coeff(sp.Rational(cp, cq), sp.Mul(_factored(p), 1 / _factored(q)),
                               clear=False, sign=True)
    return sp.factor_terms(sp.cancel(num / den))


def _factored(p: PolyElement) -> sp.Expr:
    """``factor_terms`` of a primitive integer polynomial of two or more terms: its common
    monomial times the rest, the sign out where every term is negative."""
    common = tuple(min(e) for e in zip(*p.itermonoms()))
    rest = p.ring.from_dict({tuple(a - c for a, c in zip(m, common)): v for m, v in p.items()})
    sign = -1 if all(v < 0 for v in rest.itercoeffs()) else 1
    monomial = sp.Mul(*(g**e for g, e in zip(p.ring.symbols, common) if e))
    return _keep_coeff(sp.Integer(sign), monomial * (sign * rest).as_expr(), clear=False,
                       sign=True)


@dataclass(frozen=True, eq=False)
class Analysis(Rich):
    """FLOPs ``flops``, counted bytes ``bytes`` and ``intensity = flops/bytes`` of a graph.

    ``cost`` keeps every tensor kind; ``bytes`` and ``bytes_by_kind`` hold only the kinds
    the convention counts. ``tokens`` is how many tokens one run processes (for LM
    workloads: B in a decode step, B*S in a prefill), or None. ``assumptions`` are what
    the passes that made the graph assume (:func:`graph_assumptions`, read from its
    provenance: their one source); left out, they are derived from the graph.
    """

    graph: Graph
    convention: Convention = Convention()
    tokens: sp.Expr | None = None
    assumptions: tuple[str, ...] = None  # type: ignore[assignment]  # derived when left out

    def __post_init__(self) -> None:
        if self.assumptions is None:
            object.__setattr__(self, "assumptions", graph_assumptions(self.graph))

    @cached_property
    def per_op(self) -> Mapping[str, Cost]:
        """Cost of each op (all its occurrences), in topological order."""
        return op_costs(self.graph, self.convention)

    @cached_property
    def cost(self) -> Cost:
        """Total cost with traffic of every tensor kind."""
        return Cost.total(self.per_op.values())

    @cached_property
    def counted(self) -> Cost:
        """Total cost with traffic of the counted tensor kinds only."""
        return self.cost.only(self.convention.traffic)

    @property
    def flops(self) -> sp.Expr:
        """FLOPs of the counted op groups."""
        return self.counted.flops

    @property
    def bytes(self) -> sp.Expr:
        """Bytes of the counted tensor kinds crossing the boundary (read + written)."""
        return self.counted.bytes

    @property
    def bytes_read(self) -> sp.Expr:
        """Counted bytes read."""
        return self.counted.bytes_read

    @property
    def bytes_written(self) -> sp.Expr:
        """Counted bytes written."""
        return self.counted.bytes_written

    @property
    def bytes_by_kind(self) -> Mapping[Kind, sp.Expr]:
        """Counted bytes per tensor kind."""
        return self.counted.bytes_by_kind

    @cached_property
    def intensity(self) -> sp.Expr:
        """FLOPs per byte, as one cancelled fraction."""
        if self.bytes == 0:
            raise SymroofError(f"graph {self.graph.name!r}: no counted traffic, "
                               "so intensity is undefined")
        return ratio(self.flops, self.bytes)

    @cached_property
    def flops_by_operand(self) -> Mapping[str, sp.Expr]:
        """Contraction FLOPs split by operands: ``weight`` (a contraction that reads or
        writes a weight or its gradient) and ``activation`` (both operands activations,
        e.g. QK^T and PV). Kaplan's 2N and the attention term are these two parts."""
        parts: dict[str, list[sp.Expr]] = {"weight": [], "activation": []}
        for op in self.graph.ops:
            if op.group is not OpGroup.CONTRACTION:
                continue
            kinds = {t.kind for t in (*op.inputs, *op.outputs)}  # dW = A^T dC writes a gradient
            key = "weight" if kinds & {Kind.WEIGHT, Kind.GRADIENT} else "activation"
            parts[key].append(self.per_op[op.name].flops)
        return MappingProxyType({k: sp.Add(*v) for k, v in parts.items()})

    @cached_property
    def quantities(self) -> Mapping[str, sp.Expr]:
        """The named quantities of this workload, as claims and ``symroof solve`` name them:

        - ``F``, ``Q``, ``I``: FLOPs, counted bytes, intensity;
        - ``F_weights``: FLOPs of contractions with a weight operand (``flops_by_operand["weight"]``);
        - ``F_attention``: FLOPs of contractions of two activations, QK^T and PV
          (``flops_by_operand["activation"]``);
        - ``Q_<kind>``: counted bytes of each tensor kind (``Q_weight``, ``Q_kv_cache``, ...);
        - ``tokens``: tokens one run processes, where the workload has them.
        """
        rest = self._sums
        return MappingProxyType({"F": rest["F"], "Q": rest["Q"], "I": self.intensity,
                                 **{k: v for k, v in rest.items() if k not in ("F", "Q")}})

    @cached_property
    def _sums(self) -> Mapping[str, sp.Expr]:
        """:attr:`quantities` but ``I`` (the one that needs a cancel): a reader of one
        other quantity (a claim's ``q = "F"``) need not cancel the intensity."""
        q: dict[str, sp.Expr] = {"F": self.flops, "Q": self.bytes,
                                 "F_weights": self.flops_by_operand["weight"],
                                 "F_attention": self.flops_by_operand["activation"]}
        for kind in Kind:
            if kind in self.convention.traffic:
                q[f"Q_{kind.value}"] = self.bytes_by_kind.get(kind, sp.Integer(0))
        if self.tokens is not None:
            q["tokens"] = self.tokens
        return MappingProxyType(q)

    def op_intensity(self, name: str) -> sp.Expr:
        """Intensity of one op under this convention."""
        if name not in self.per_op:
            raise SymroofError(f"graph {self.graph.name!r}: no op named {name!r}")
        c = self.per_op[name].only(self.convention.traffic)
        return ratio(c.flops, c.bytes)

    @renamed(flops="flop_count")
    def with_convention(self, **changes: object) -> Analysis:
        """The same graph analysed under a changed convention (e.g. ``flop_count="exact"``)."""
        old = self.convention
        conv = Convention(flop_count=changes.pop("flop_count", old.flop_count),  # type: ignore[arg-type]
                          ops=changes.pop("ops", old.ops),  # type: ignore[arg-type]
                          traffic=changes.pop("traffic", old.traffic))  # type: ignore[arg-type]
        if changes:
            raise SymroofError(f"with_convention: unknown option(s) {', '.join(changes)}; "
                               "expected flop_count, ops, traffic")
        return Analysis(self.graph, conv, self.tokens)

    def subs(self, values: Mapping[sp.Symbol, object]) -> dict[str, sp.Expr]:
        """flops, bytes and intensity with ``values`` substituted (exact). Values that
        leave a dimension of the graph zero or negative (a kernel larger than its input)
        are refused, naming it: the counts would be negative or empty, not a workload."""
        if not isinstance(values, Mapping):
            raise SymroofError(f"{self.graph.name} subs: expected a mapping of symbols to "
                               f"values, got {type(values).__name__}")
        given = {k for k in values if isinstance(k, sp.Symbol)}
        for t in sorted(self.graph.tensors, key=lambda x: x.name):
            for i, d in enumerate(t.shape):
                if d.is_number or not d.free_symbols <= given:
                    continue
                factors = [a.base if isinstance(a, sp.Pow) else a
                           for a in (d.args if isinstance(d, sp.Mul) else ())]
                for f in (*factors, d):      # a factor first: it names the culprit
                    v = f.subs(values)
                    if f.free_symbols and v.is_number and v.is_positive is not True:
                        raise SymroofError(f"{self.graph.name}: {f} is {v} in tensor "
                                           f"{t.name!r} dimension {i}; expected a positive "
                                           "size (these values leave the workload empty)")
        return {"flops": self.flops.subs(values), "bytes": self.bytes.subs(values),
                "intensity": self.intensity.subs(values)}


#: Workload builders return an Analysis; the name reads better at call sites.
Workload = Analysis


@renamed(flops="flop_count")
def analyze(graph: Graph, *, flop_count: FlopCount | str = FlopCount.TWO_PER_MAC,
            ops: Iterable[OpGroup | str] | None = None,
            traffic: Iterable[Kind | str] | None = None,
            tokens: object | None = None) -> Analysis:
    """Analyse ``graph``: FLOPs, bytes and intensity under the named convention.

    >>> from symroof.symbols import B, D
    >>> g = Graph("relu")
    >>> y = g.elementwise(g.input("x", (B, D)), name="relu")
    >>> analyze(g).intensity
    1/(2*b)
    """
    if not isinstance(graph, Graph):
        raise SymroofError(f"analyze: expected a symroof Graph, got {type(graph).__name__}")
    graph.validate()
    conv = Convention(flop_count=flop_count,  # type: ignore[arg-type]
                      ops=frozenset(OpGroup) if ops is None else ops,  # type: ignore[arg-type]
                      traffic=MEMORY_KINDS if traffic is None else traffic)  # type: ignore[arg-type]
    return Analysis(graph, conv, None if tokens is None else as_expr(tokens, "tokens"))


def graph_assumptions(graph: Graph) -> tuple[str, ...]:
    """What the passes that made ``graph`` assume: exact tile division, and the on-chip
    capacity each fused group needs."""
    out = list(graph.provenance.assumptions)
    for f in graph.provenance.fused:
        if f.tile_capacity is not None:
            out.append(f"fused {f.name}: on-chip memory holds a tile of {f.tile_capacity} bytes")
        elif f.capacity != 0:
            out.append(f"fused {f.name}: on-chip memory holds {f.capacity} bytes")
    return tuple(out)

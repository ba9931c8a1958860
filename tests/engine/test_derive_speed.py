"""The derivation's shortcuts give exactly what the plain computation gives (issue 16).

Each shortcut is checked against the computation it replaces, structurally (``srepr``),
since printed formulas and golden files depend on the expression's shape and not only
on its value: the cached topological order against networkx's sort, the ring-based
intensity against ``factor_terms(cancel(F/Q))``, the cost interpreter's skipped
multiplications by one against the plain products. No test here times anything
(ratios live in benchmarks/).
"""

from __future__ import annotations

import pickle
import random

import networkx as nx
import pytest
import sympy as sp

import symroof as sr
from symroof.analysis import ratio
from symroof.cost import RULES, Convention, op_cost
from symroof.ir import Graph, Tensor
from symroof.ir.order import TrackedDiGraph, topological_order
from symroof.symbols import B, D, H, L, S, b, n

SYM = sr.models.transformer(layers=L, d_model=D, heads=H)


def _workloads() -> list[sr.Analysis]:
    w = sr.workloads
    return [w.gemm(n, n, n), w.attention(S, D, H, fused=False),
            w.prefill(SYM, B, S), w.decode(sr.models.get("llama-3-8b"), B, S),
            w.training(SYM, B, S), w.training(SYM, B, S, recompute="selective"),
            w.training(sr.models.get("llama-2-7b"), B, S, optimizer=None)]


WORKLOADS = _workloads()


@pytest.mark.parametrize("wl", WORKLOADS, ids=lambda w: w.graph.name)
def test_order_is_networkx_lexicographical_sort(wl: sr.Analysis) -> None:
    expected = tuple(nx.lexicographical_topological_sort(wl.graph.nx, key=lambda x: x.name))
    assert topological_order(wl.graph.nx, key=lambda x: x.name) == expected
    assert wl.graph.ops == tuple(x for x in expected if not isinstance(x, Tensor))


def test_ties_between_an_op_and_its_tensor_keep_insertion_order() -> None:
    g = Graph("ties")   # op "C" writes tensor "C": the same name, so insertion order decides
    c = g.gemm(g.input("A", (n, n)), g.weight("W", (n, n)), name="C")
    g.elementwise(c, name="A2")
    expected = tuple(nx.lexicographical_topological_sort(g.nx, key=lambda x: x.name))
    assert topological_order(g.nx, key=lambda x: x.name) == expected
    assert [x.name for x in expected] == ["A", "W", "C", "C", "A2", "A2"]


def test_cached_order_follows_every_change_of_the_nx_graph() -> None:
    g = Graph("mlp")
    x = g.input("x", (B, D))
    h = g.gemm(x, g.weight("W", (D, D)), name="h")
    y = g.elementwise(h, name="y")
    assert [op.name for op in g.ops] == ["h", "y"]
    assert isinstance(g.nx, TrackedDiGraph)
    before = g.nx.version
    g.nx.add_edge(y, g.node("h"))  # a cycle made behind the builders' back
    assert g.nx.version > before
    with pytest.raises(sr.SymroofError, match="cycle through"):
        g.validate()
    g.nx.remove_edge(y, g.node("h"))
    g.validate()
    orphan = Tensor("orphan", (B,))
    g.nx.add_node(orphan, count=sp.Integer(1), block="")  # same edge count, one more node
    with pytest.raises(sr.SymroofError, match="'orphan' has no producer"):
        g.validate()


def test_a_plain_digraph_put_in_place_is_sorted_every_time() -> None:
    g = Graph("plain")
    g.elementwise(g.input("x", (n,)), name="y")
    g.nx = nx.DiGraph(g.nx)  # does not count its changes: nothing is kept
    assert [op.name for op in g.ops] == ["y"]
    g.nx.add_edge(g.node("y"), g.node("x"))
    with pytest.raises(sr.SymroofError, match="cycle"):
        g.validate()


def test_pickled_nodes_leave_their_cached_hash_and_sizes_behind() -> None:
    t = Tensor("x", (B, S, D))
    hash(t), t.nbytes
    assert {"_hash", "_nbytes", "_numel"} <= set(t.__dict__)
    back = pickle.loads(pickle.dumps(t))
    assert back == t and not any(k.startswith("_") for k in back.__dict__)
    assert hash(back) == hash(t) and back.nbytes == B * S * D * b


def _plain_op_cost(graph: Graph, op: object, conv: Convention) -> tuple[object, ...]:
    """op_cost as it read before its multiplications by one were skipped."""
    flops, touched = RULES.rule(op, "test")(op, conv)  # type: ignore[arg-type]
    if op.group not in conv.ops:  # type: ignore[attr-defined]
        flops = sp.Integer(0)
    read: dict[object, list[sp.Expr]] = {}
    for t in dict.fromkeys(op.inputs):  # type: ignore[attr-defined]
        read.setdefault(t.kind, []).append(graph.crossings(t, op) * touched.get(t.name, 1)
                                           * t.numel * t.bytes_per_value)
    written: dict[object, list[sp.Expr]] = {}
    for t in op.outputs:  # type: ignore[attr-defined]
        written.setdefault(t.kind, []).append(graph.crossings(op, t) * touched.get(t.name, 1)
                                              * t.numel * t.bytes_per_value)
    count = graph.count(op)  # type: ignore[arg-type]
    return (sp.srepr(flops * count),
            sorted((k, sp.srepr(count * sp.Add(*v))) for k, v in read.items() if v),
            sorted((k, sp.srepr(count * sp.Add(*v))) for k, v in written.items() if v))


@pytest.mark.parametrize("wl", WORKLOADS, ids=lambda w: w.graph.name)
def test_op_costs_are_the_plain_products(wl: sr.Analysis) -> None:
    tiled = sr.passes.tile(sr.workloads.gemm(n, n, n).graph, {n: 64})  # crossings != 1
    for graph in (wl.graph, tiled):
        for op in graph.ops:
            c = op_cost(graph, op, wl.convention)
            plain = _plain_op_cost(graph, op, wl.convention)
            zero = sp.Integer(0)
            assert (sp.srepr(c.flops), sorted((k, sp.srepr(v)) for k, v in c.read.items()),
                    sorted((k, sp.srepr(v)) for k, v in c.written.items())) == (
                plain[0], [x for x in plain[1] if x[1] != sp.srepr(zero)],
                [x for x in plain[2] if x[1] != sp.srepr(zero)]), op.name


@pytest.mark.parametrize("wl", WORKLOADS, ids=lambda w: w.graph.name)
def test_intensity_is_factor_terms_of_cancel(wl: sr.Analysis) -> None:
    expected = sp.factor_terms(sp.cancel(wl.flops / wl.bytes))
    assert sp.srepr(wl.intensity) == sp.srepr(expected)
    for name in list(wl.per_op)[:12]:
        c = wl.per_op[name].only(wl.convention.traffic)
        if c.bytes != 0:
            assert sp.srepr(wl.op_intensity(name)) == sp.srepr(
                sp.factor_terms(sp.cancel(c.flops / c.bytes)))


def test_ratio_matches_cancel_on_random_polynomials() -> None:
    rng = random.Random(16)
    syms = (B, S, D, H, L, b, sp.Symbol("x"), sp.Symbol("y", negative=True))

    def poly() -> sp.Expr:
        terms = []
        for _ in range(rng.randint(1, 5)):
            coeff = sp.Rational(rng.choice([-3, -1, 1, 2, 6, 12, 72, 4096, -7, 10**20]),
                                rng.choice([1, 1, 1, 2, 3]))
            terms.append(coeff * sp.Mul(*(rng.choice(syms) ** rng.randint(0, 3)
                                           for _ in range(rng.randint(0, 3)))))
        return sp.Add(*terms)

    checked = 0
    for _ in range(100):
        common = poly()
        num, den = sp.expand(poly() * common), sp.expand(poly() * common)
        if den == 0:
            continue
        assert sp.srepr(ratio(num, den)) == sp.srepr(sp.factor_terms(sp.cancel(num / den))), (
            num, den)
        checked += 1
    assert checked > 80
    # not polynomials, or no symbols: the general path, the same answers
    for num, den in ((n + 1 / n, n * b), (sp.sqrt(2) * n, n), (sp.Integer(6), sp.Integer(4)),
                     (sp.Integer(0), n)):
        assert ratio(num, den) == sp.factor_terms(sp.cancel(num / den))

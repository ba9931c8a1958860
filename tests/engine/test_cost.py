"""The Cost value, conventions, crossings, and cost rules against brute-force loop nests."""

from __future__ import annotations

import random
from dataclasses import dataclass
from fractions import Fraction

import pytest
import sympy as sp

from oracles import loopnest
from symroof.testing import assert_formula_equal
from symroof.present.records import to_text
from symroof.analysis import analyze
from symroof.cost import RULES, Convention, Cost, FlopCount, cost_rule, interpret, op_cost
from symroof.errors import SymroofError
from symroof.ir import Elementwise, Gemm, Graph, Kind, Op, OpGroup, Tensor
from symroof.symbols import B, D, K, L, M, N, b, n
from symroof.workloads.basic import conv2d, elementwise, gemm




def as_fraction(x: sp.Expr) -> Fraction:
    """An exact SymPy number as a Fraction (fails on anything inexact or symbolic)."""
    assert isinstance(x, sp.Rational), x
    return Fraction(int(x.p), int(x.q))


# ---------------------------------------------------------------------------
# the Cost value

W, A = Kind.WEIGHT, Kind.ACTIVATION


def test_cost_add_merges_kinds():
    x = Cost(2 * n, read={W: 4 * n}, written={A: n})
    y = Cost(n, read={W: n, A: 3 * n}, written={Kind.KV_CACHE: 5})
    s = x + y
    assert_formula_equal(s.flops, 3 * n)
    assert_formula_equal(s.read[W], 5 * n)
    assert_formula_equal(s.read[A], 3 * n)
    assert_formula_equal(s.written[A], n)
    assert s.written[Kind.KV_CACHE] == 5
    # 5n + 3n read; n + 5 written
    assert_formula_equal(s.bytes, 9 * n + 5)
    assert_formula_equal(s.bytes_read, 8 * n)
    assert_formula_equal(s.bytes_written, n + 5)
    assert (x + Cost()).flops == x.flops and dict((x + Cost()).read) == dict(x.read)
    with pytest.raises(TypeError):
        x + 1  # type: ignore[operator]


def test_cost_scaled_only_and_bytes_by_kind():
    x = Cost(2 * n, read={W: 4 * n, A: n}, written={A: 2 * n})
    s = x.scaled(L)
    assert_formula_equal(s.flops, 2 * L * n)
    assert_formula_equal(s.read[W], 4 * L * n)
    assert_formula_equal(s.written[A], 2 * L * n)
    assert_formula_equal(s.bytes, L * x.bytes)
    by = x.bytes_by_kind
    assert_formula_equal(by[W], 4 * n)
    assert_formula_equal(by[A], 3 * n)  # A: 1 read + 2 written
    w_only = x.only([W])
    assert w_only.flops == x.flops                              # FLOPs kept
    assert_formula_equal(w_only.bytes, 4 * n)
    assert A not in w_only.bytes_by_kind
    assert x.only([]).bytes == 0


def test_cost_is_frozen_and_drops_zero_entries():
    x = Cost(n, read={W: 0, A: n})
    assert W not in x.read
    with pytest.raises(TypeError):
        x.read[W] = n  # type: ignore[index]
    with pytest.raises(AttributeError):
        x.flops = 3  # type: ignore[misc]
    assert Cost(n, read={W: n}) + Cost(0, read={W: -n}) == Cost(n)


# ---------------------------------------------------------------------------
# rules


@dataclass(frozen=True)
class Unruled(Op):
    """An op type with no registered cost rule."""

    x: Tensor = None  # type: ignore[assignment]
    out: Tensor = None  # type: ignore[assignment]
    group = OpGroup.ELEMENTWISE

    @property
    def inputs(self):
        return (self.x,)

    @property
    def outputs(self):
        return (self.out,)


def test_missing_rule_raises_never_zero():
    g = Graph("t")
    x = g.input("x", (n,))
    g.add(Unruled("mystery", x, Tensor("y", (n,))))
    with pytest.raises(SymroofError, match=r"op 'mystery': no cost rule for Unruled"):
        interpret(g)
    with pytest.raises(SymroofError, match=r"no cost rule for Unruled"):
        analyze(g).flops
    assert Unruled not in RULES


def test_subclass_of_a_ruled_op_is_not_silently_costed_as_its_parent():
    @dataclass(frozen=True)
    class FancyGemm(Gemm):
        pass

    g = Graph("t")
    a, w = g.input("A", (M, K)), g.weight("W", (K, N))
    g.add(FancyGemm("fg", a, w, Tensor("C", (M, N))))
    with pytest.raises(SymroofError, match=r"no cost rule for FancyGemm"):
        interpret(g)


def test_rule_registers_once():
    with pytest.raises(SymroofError, match=r"cost rule for Gemm registered twice"):
        cost_rule(Gemm)(lambda op, conv: (sp.Integer(0), {}))
    assert set(RULES) >= {Gemm, Elementwise}


def test_registered_rule_is_used():
    @dataclass(frozen=True)
    class Scaled(Unruled):
        pass

    g = Graph("t")
    x = g.input("x", (n,))
    g.add(Scaled("s", x, Tensor("y", (n,))))
    with RULES.scoped():                     # the rule is gone after the block
        @cost_rule(Scaled)
        def _scaled(op, conv):
            return 7 * op.out.numel, {}

        c = interpret(g)
    assert Scaled not in RULES
    assert_formula_equal(c.flops, 7 * n)
    assert_formula_equal(c.bytes, 2 * n * b)                    # 1 read + 1 write


# ---------------------------------------------------------------------------
# conventions


def mlp_graph() -> tuple[Graph, Tensor]:
    """x[M,K] @ W[K,N] -> h; relu(h) -> y. Returns the graph and h."""
    g = Graph("mlp")
    x = g.input("x", (M, K))
    h = g.gemm(x, g.weight("W", (K, N)), name="h")
    g.output(g.elementwise(h, name="y", flops_per_element=1))
    return g, h


@pytest.mark.parametrize("flops, per_output", [
    ("two_per_mac", 2 * K), ("one_per_mac", K), ("exact", 2 * K - 1),
    (FlopCount.EXACT, 2 * K - 1),
])
def test_flop_conventions(flops, per_output):
    g, _ = mlp_graph()
    a = analyze(g, flops=flops)
    # gemm: M*N outputs at per_output each; relu: M*N at 1 each
    assert_formula_equal(a.flops, M * N * per_output + M * N)
    # bytes do not depend on the FLOP convention: x + W + h written + h read + y written
    assert_formula_equal(a.bytes, b * (M * K + K * N + 3 * M * N))


def test_flop_convention_ops_per_mac():
    assert FlopCount.TWO_PER_MAC.ops_per_mac == 2
    assert FlopCount.ONE_PER_MAC.ops_per_mac == 1
    assert FlopCount.EXACT.ops_per_mac == 2


def test_ops_groups_filter_flops_only():
    g, _ = mlp_graph()
    full = analyze(g)
    contractions = analyze(g, ops=["contraction"])
    elementwise_only = analyze(g, ops=[OpGroup.ELEMENTWISE])
    assert_formula_equal(contractions.flops, 2 * M * N * K)
    assert_formula_equal(elementwise_only.flops, M * N)
    assert_formula_equal(contractions.flops + elementwise_only.flops, full.flops)
    assert_formula_equal(contractions.bytes, full.bytes)
    assert_formula_equal(elementwise_only.bytes, full.bytes)
    assert analyze(g, ops=[]).flops == 0


def test_traffic_kinds_filter_bytes_only():
    g, _ = mlp_graph()
    full = analyze(g)
    weights = analyze(g, traffic=["weight"])
    acts = analyze(g, traffic=[Kind.ACTIVATION])
    assert_formula_equal(weights.flops, full.flops)
    assert_formula_equal(acts.flops, full.flops)
    assert_formula_equal(weights.bytes, K * N * b)                       # W read once
    assert_formula_equal(acts.bytes, b * (M * K + 3 * M * N))           # x + h written/read + y
    assert_formula_equal(weights.bytes + acts.bytes, full.bytes)
    # the unfiltered cost is still available
    assert_formula_equal(weights.cost.bytes, full.bytes)
    assert_formula_equal(weights.intensity, sp.cancel(full.flops / (K * N * b)))
    with pytest.raises(SymroofError, match=r"no counted traffic"):
        analyze(g, traffic=["kv_cache"]).intensity


def test_convention_validation_and_description():
    with pytest.raises(SymroofError, match=r"convention flop_count: .*got 'three'"):
        Convention(flop_count="three")  # type: ignore[arg-type]
    with pytest.raises(SymroofError, match=r"convention traffic"):
        Convention(traffic=["weights"])  # type: ignore[arg-type]
    with pytest.raises(SymroofError, match=r"convention ops"):
        Convention(ops=["matmul"])  # type: ignore[arg-type]
    assert Convention(traffic="weight").traffic == frozenset({Kind.WEIGHT})
    assert to_text(Convention()) == "FLOPs: two_per_mac, all ops; traffic: all tensors"
    assert "contraction" in to_text(Convention(ops=["contraction"]))
    g, _ = mlp_graph()
    with pytest.raises(SymroofError, match=r"unknown option"):
        analyze(g).with_convention(flop="exact")


def test_with_convention_changes_only_what_is_named():
    g, _ = mlp_graph()
    a = analyze(g, traffic=["weight"])
    e = a.with_convention(flops="exact")
    assert e.convention.traffic == frozenset({Kind.WEIGHT})
    assert_formula_equal(a.flops - e.flops, M * N)                       # one add fewer per output


# ---------------------------------------------------------------------------
# crossings: fusion keeps a tensor on chip


def test_set_crossings_fused_vs_unfused():
    g, h = mlp_graph()
    fused = g.copy("fused")
    fused.set_crossings(h, writes=0, reads=0)
    u, f = analyze(g), analyze(fused)
    assert_formula_equal(u.flops, f.flops)
    # exactly h's traffic: 1 write + 1 read
    assert_formula_equal(u.bytes - f.bytes, 2 * h.nbytes)
    assert_formula_equal(u.bytes - f.bytes, 2 * M * N * b)
    assert_formula_equal(f.bytes, b * (M * K + K * N + M * N))


def test_set_crossings_one_direction_and_rereads():
    g, h = mlp_graph()
    base = analyze(g).bytes
    only_write = g.copy()
    only_write.set_crossings(h, writes=0)
    assert_formula_equal(base - analyze(only_write).bytes, h.nbytes)
    reread = g.copy()
    reread.set_crossings(h, reads=4)           # read 4 times instead of once
    assert_formula_equal(analyze(reread).bytes - base, 3 * h.nbytes)
    x = next(t for t in g.inputs if t.name == "x")
    sym = g.copy()
    sym.set_crossings(x, reads=N / 128)        # a tiled loop's re-read count
    assert_formula_equal(analyze(sym).bytes - base, (N / 128 - 1) * M * K * b)
    with pytest.raises(SymroofError, match=r"no tensor 'ghost'"):
        g.set_crossings(Tensor("ghost", (M,)), reads=0)


def test_set_crossings_reads_apply_to_consumers_added_later():
    g = Graph("t")
    x = g.input("x", (n,))
    g.set_crossings(x, reads=0)                  # x already resident on chip
    y = g.elementwise(x, name="y")
    z = g.elementwise(x, y, name="z")
    g.output(z)
    # x never read; y written + y read + z written
    assert_formula_equal(analyze(g).bytes, 3 * n * b)


def test_op_cost_includes_multiplicity():
    g = Graph("t")
    x = g.input("x", (B, D))
    with g.repeat(L):
        y = g.elementwise(x, name="y", flops_per_element=3)
    g.output(y)
    c = op_cost(g, g.node("y"))
    assert_formula_equal(c.flops, 3 * L * B * D)
    assert_formula_equal(c.bytes, 2 * L * B * D * b)     # (1 read + 1 write) per occurrence


# ---------------------------------------------------------------------------
# brute force: loop nests vs the rules

_SYMBOLIC_GEMM = {f: gemm(M, N, K, flops=f) for f in ("two_per_mac", "one_per_mac", "exact")}


def _gemm_shapes(count: int, seed: int) -> list[tuple[int, int, int, int]]:
    rng = random.Random(seed)
    return [(rng.randint(1, 6), rng.randint(1, 6), rng.randint(1, 6), rng.choice((1, 2, 4)))
            for _ in range(count)]


@pytest.mark.parametrize("m, nn, k, bpv", _gemm_shapes(50, seed=20240611))
def test_gemm_rule_matches_loop_nest(m, nn, k, bpv):
    rng = random.Random(m * 1000 + nn * 100 + k * 10 + bpv)
    a_mat, b_mat = loopnest.random_matrix(rng, m, k), loopnest.random_matrix(rng, k, nn)
    run = loopnest.matmul(a_mat, b_mat)
    assert run.result == loopnest.naive_matmul(a_mat, b_mat)     # it really multiplies
    cnt = run.counter
    # exact: K mults + (K-1) adds per output
    assert cnt.mults == m * nn * k and cnt.adds == m * nn * (k - 1) and cnt.macs == m * nn * k
    # compulsory traffic: every element of A and B read once, of C written once
    assert cnt.elements_read("A") == m * k and cnt.elements_read("B") == k * nn
    assert cnt.elements_written("C") == m * nn
    values = {M: m, N: nn, K: k, b: bpv}
    for conv, wl in _SYMBOLIC_GEMM.items():
        assert wl.flops.subs(values) == cnt.flops(conv), conv
        assert as_fraction(wl.bytes.subs(values)) == cnt.bytes(bpv)
    concrete = gemm(m, nn, k, b=bpv, flops="exact")                # numbers straight in
    assert concrete.flops == cnt.flops("exact")
    assert as_fraction(concrete.bytes) == cnt.bytes(bpv)
    assert as_fraction(concrete.intensity) == Fraction(cnt.flops("exact")) / cnt.bytes(bpv)


def test_loop_nest_counts_reuse_once():
    """The counter distinguishes loads from compulsory traffic: A is loaded N times over."""
    run = loopnest.matmul([[1, 2, 3]] * 4, [[1] * 5] * 3)          # M=4, K=3, N=5
    assert run.counter.load_events == 2 * 4 * 5 * 3                 # 2 loads per MAC
    assert run.counter.bytes(2) == 2 * (4 * 3 + 3 * 5 + 4 * 5)


@pytest.mark.parametrize("size, bpv", [(1, 1), (7, 2), (16, 4), (33, 2)])
def test_relu_rule_matches_loop_nest(size, bpv):
    rng = random.Random(size)
    x = [rng.randint(-9, 9) for _ in range(size)]
    run = loopnest.relu(x)
    assert run.result == [max(v, 0) for v in x]
    wl = elementwise(n)                                            # ReLU: 1 FLOP per element
    assert wl.flops.subs(n, size) == run.counter.flops("exact") == size
    # 1 read + 1 write per element
    assert as_fraction(wl.bytes.subs({n: size, b: bpv})) == run.counter.bytes(bpv) == 2 * size * bpv


_CONV_CASES = [
    # N, C, H, W, K, R, S, stride, padding, bytes per value
    (1, 1, 3, 3, 1, 1, 1, 1, 0, 1),
    (1, 2, 4, 4, 3, 3, 3, 1, 0, 2),
    (2, 1, 5, 4, 2, 3, 2, 1, 1, 2),
    (1, 3, 5, 5, 2, 3, 3, 2, 0, 4),       # stride 2 still touches every input pixel here
    (2, 2, 3, 3, 2, 2, 2, 1, 1, 1),
]


@pytest.mark.parametrize("case", _CONV_CASES)
def test_conv2d_explicit_and_implicit_match_loop_nests(case):
    n_, c_, h_, w_, k_, r_, s_, st, pad, bpv = case
    rng = random.Random(sum(case))
    x = loopnest.random_tensor4(rng, n_, c_, h_, w_)
    w = loopnest.random_tensor4(rng, k_, c_, r_, s_)
    ref = loopnest.naive_conv2d(x, w, stride=st, padding=pad)
    p_ = (h_ + 2 * pad - r_) // st + 1
    q_ = (w_ + 2 * pad - s_) // st + 1
    crs, npq = c_ * r_ * s_, n_ * p_ * q_
    for lowering in ("explicit", "implicit"):
        run = loopnest.conv2d_im2col(x, w, stride=st, padding=pad, lowering=lowering)
        assert run.result == ref, lowering
        cnt = run.counter
        assert cnt.elements_read("X") == n_ * c_ * h_ * w_     # every input pixel once
        assert cnt.elements_read("W") == k_ * crs
        assert cnt.elements_written("Y") == k_ * npq
        wl = conv2d(n_, c_, h_, w_, k_, (r_, s_), stride=st, padding=pad, lowering=lowering,
                    b=bpv, flops="exact")
        assert wl.flops == cnt.flops("exact")
        assert as_fraction(wl.bytes) == cnt.bytes(bpv), lowering
        two = conv2d(n_, c_, h_, w_, k_, (r_, s_), stride=st, padding=pad, lowering=lowering,
                     b=bpv)
        assert two.flops == cnt.flops("two_per_mac") == 2 * k_ * crs * npq
        if lowering == "explicit":
            # the column matrix: every element written once, read back once
            assert cnt.elements_written("COL") == cnt.elements_read("COL") == crs * npq
            explicit_bytes = cnt.bytes(bpv)
        else:
            assert cnt.elements_written("COL") == cnt.elements_read("COL") == 0
            assert cnt.bytes(bpv) == cnt.bytes(bpv, {"X", "W", "Y"})
            # implicit reads X and W and writes Y only: the difference is COL out and back
            assert explicit_bytes - cnt.bytes(bpv) == 2 * crs * npq * bpv

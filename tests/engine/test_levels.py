"""One roof per memory level (symroof/levels.py).

Seed 000, failure modes: "Using the wrong roof. If a working set fits in an on-chip level,
the DRAM roofline is the wrong bound; use that level's bandwidth." The MI300X has a
256 MiB Infinity Cache with a published 17.2 TB/s next to 5.3 TB/s of HBM: an elementwise
op repeated 100 times over a 32 MiB tensor keeps its 64 MiB working set on chip, so HBM
sees it once and the Infinity Cache roof binds; over a 1 GiB tensor it does not fit and
HBM binds.
"""

from __future__ import annotations

import pytest
import sympy as sp

from symroof.testing import assert_formula_equal
import symroof as sr
from oracles import simulator as sim
from symroof.analysis import analyze
from symroof.errors import SymroofError
from symroof.ir import Graph
from symroof.levels import level_roofline, working_set
from symroof.passes import fuse
from symroof.symbols import B, D, L, S, b, n

MiB = 2**20




def repeated_elementwise(elements: int | sp.Expr, reps: int | sp.Expr, *,
                         input_inside: bool = True) -> sr.Analysis:
    """``reps`` runs of y = relu(x) over the same tensor (a multiplicity, not unrolled)."""
    g = Graph("repeat-relu")
    if not input_inside:
        x = g.input("x", (elements,))
    with g.repeat(reps):
        if input_inside:
            x = g.input("x", (elements,))
        y = g.elementwise(x, name="relu")
    g.output(y)
    return analyze(g)


def roof(r, level: str):
    (x,) = [x for x in r.roofs if x.level == level]
    return x


@pytest.mark.parametrize("input_inside", [True, False])
def test_working_set_that_fits_makes_the_on_chip_level_bind(input_inside):
    elements = 16 * MiB                            # 32 MiB at bf16
    a = repeated_elementwise(elements, 100, input_inside=input_inside)
    q = a.bytes.xreplace({b: 2})
    assert q == 100 * 64 * MiB
    ws = working_set(a).xreplace({b: 2})
    assert ws == 64 * MiB                          # x and y once: buffers are reused
    r = level_roofline(a, "mi300x", precision="bf16")
    hw = sr.hardware.get("mi300x")
    assert hw.level("infinity_cache").capacity == 256 * MiB
    assert r.resident_in == "infinity_cache"
    assert r.binding == "infinity_cache"           # the DRAM roof is not binding
    hbm, ic = roof(r, "hbm"), roof(r, "infinity_cache")
    assert hbm.bytes == ws and ic.bytes == q       # HBM sees the working set once
    assert hbm.attainable > ic.attainable
    assert ic.time_s == q / hw.bandwidth("infinity_cache")
    assert r.time_s == ic.time_s > hbm.time_s
    # a DRAM-only roofline would have charged all the traffic to HBM
    assert q / hw.bandwidth("hbm") > r.time_s


def test_working_set_too_big_for_chip_makes_hbm_bind():
    a = repeated_elementwise(512 * MiB, 100)       # 1 GiB at bf16: 2 GiB working set
    r = level_roofline(a, "mi300x", precision="bf16")
    assert r.resident_in is None
    assert r.binding == "hbm"
    assert roof(r, "hbm").bytes == a.bytes.xreplace({b: 2})
    assert r.time_s == roof(r, "hbm").time_s


def test_symbolic_sizes_need_values():
    a = repeated_elementwise(n, 100)
    with pytest.raises(SymroofError):
        level_roofline(a, "mi300x")
    r = level_roofline(a, "mi300x", subs={n: 16 * MiB})
    assert r.resident_in == "infinity_cache"


def test_working_set_counts_weights_at_multiplicity():
    g = Graph("stack")
    x = g.input("x", (B, D))
    with g.repeat(L):
        w = g.weight("W", (D, D))
        kv = g.kv_cache("kv", (S, D))
        h = g.gemm(x, w, name="h")
        s = g.gemm(h, kv, transpose_b=True, name="s")
    g.output(s)
    a = analyze(g)
    # L weight matrices and L caches are distinct tensors; x, h and s are buffers (once)
    assert_formula_equal(working_set(a), L * D**2 * b + L * S * D * b + 2 * B * D * b + B * S * b)
    # traffic counts every occurrence: x read, h written and read, s written L times
    assert_formula_equal(a.bytes, L * (D**2 + S * D + 3 * B * D + B * S) * b)


def test_working_set_of_an_unrolled_stack_equals_the_repeated_one():
    reps = 3
    g = Graph("unrolled")
    x = g.input("x", (B, D))
    for i in range(reps):
        x = g.gemm(x, g.weight(f"W{i}", (D, D)), name=f"h{i}")
    g.output(x)
    # unrolled: every intermediate is its own tensor; repeated: weights count reps times
    unrolled = working_set(analyze(g))
    assert_formula_equal(unrolled, reps * D**2 * b + (reps + 1) * B * D * b)
    r = Graph("repeated")
    x = r.input("x", (B, D))
    with r.repeat(reps):
        y = r.gemm(x, r.weight("W", (D, D)), name="h")
    r.output(y)
    assert_formula_equal(working_set(analyze(r)) - unrolled, -(reps - 1) * B * D * b)


def test_fused_intermediates_leave_the_working_set():
    g = Graph("chain")
    t = g.input("x", (n,))
    for i in range(3):
        t = g.elementwise(t, name=f"op{i}")
    g.output(t)
    assert_formula_equal(working_set(analyze(g)), 4 * n * b)
    f = fuse(g, [{"op0", "op1", "op2"}])
    assert_formula_equal(working_set(analyze(f)), 2 * n * b)
    # matches the simulator: the fused chain moves exactly its working set
    xs = list(range(10))
    run = sim.elementwise_chain(xs, [abs, abs, abs], fused=True)
    assert run.elements == working_set(analyze(f)).xreplace({n: 10, b: 1})


def test_working_set_follows_the_traffic_convention():
    g = Graph("decode-like")
    x = g.input("x", (B, D))
    with g.repeat(L):
        h = g.gemm(x, g.weight("W", (D, D)), name="h")
    g.output(h)
    only_weights = analyze(g, traffic=["weight"])
    assert_formula_equal(working_set(only_weights), L * D**2 * b)

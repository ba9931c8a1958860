"""Single-kernel workloads (GEMM, GEMV, elementwise, conv2d) and the seeds' figures.

Every figure the seeds print for these kernels is derived here from the library, and
checked against a second computation written in plain Python fractions (the seeds'
own arithmetic) or against a SymPy limit.
"""

from __future__ import annotations

import random
from fractions import Fraction

import pytest
import sympy as sp

from oracles import loopnest
from symroof.testing import assert_formula_equal
from symroof.errors import SymroofError
from symroof.ir import Kind
from symroof.symbols import C, H, K, M, N, b, dim, n
from symroof.workloads.basic import conv2d, elementwise, gemm, gemv

oo = sp.oo
R, S_f, Wd, T_st = dim("R"), dim("S_f"), dim("W"), dim("T")
Nb = dim("N")   # batch of images (the same symbol as N; named for readability)




def seed_gemm_intensity(m: int, n_: int, k: int, bpv: int) -> Fraction:
    """The seeds' arithmetic: 2MNK / (b (MK + KN + MN))."""
    return Fraction(2 * m * n_ * k, bpv * (m * k + k * n_ + m * n_))


def at(expr: sp.Expr, **values: int) -> sp.Expr:
    table = {"M": M, "N": N, "K": K, "n": n, "b": b}
    return expr.subs({table[k]: v for k, v in values.items()})


# ---------------------------------------------------------------------------
# GEMM formulas


def test_gemm_formulas():
    g = gemm(M, N, K)
    assert_formula_equal(g.flops, 2 * M * N * K)
    # read A (M*K) + read B (K*N) + write C (M*N)
    assert_formula_equal(g.bytes, b * (M * K + K * N + M * N))
    assert_formula_equal(g.bytes_read, b * (M * K + K * N))
    assert_formula_equal(g.bytes_written, b * M * N)
    assert_formula_equal(g.intensity, 2 * M * N * K / (b * (M * K + K * N + M * N)))
    assert_formula_equal(g.bytes_by_kind[Kind.WEIGHT], K * N * b)
    assert_formula_equal(gemm(M, N, K, flops="one_per_mac").flops, M * N * K)
    assert_formula_equal(gemm(M, N, K, flops="exact").flops, M * N * (2 * K - 1))


def test_batched_gemm():
    Bt = dim("B")
    g = gemm(M, N, K, batch=Bt)
    assert_formula_equal(g.flops, 2 * Bt * M * N * K)
    # every operand is per batch element: B * (A + B + C)
    assert_formula_equal(g.bytes, Bt * b * (M * K + K * N + M * N))
    assert_formula_equal(g.intensity, gemm(M, N, K).intensity)     # batching independent products
    assert_formula_equal(gemm(M, N, K, batch=1).flops, 2 * M * N * K)


def test_square_gemm_intensity_is_2n_over_3b():
    sq = gemm(n, n, n)
    assert_formula_equal(sq.intensity, 2 * n / (3 * b))
    # second computation: the general formula at M = N = K = n, and its slope in n
    assert_formula_equal(gemm(M, N, K).intensity.subs({M: n, N: n, K: n}), 2 * n / (3 * b))
    assert sp.limit(sq.intensity / n, n, oo) == 2 / (3 * b)


def test_gemm_intensity_is_set_by_the_smallest_dimension():
    """2*min/(3b) <= I <= 2*min/b for every shape (1/I is a sum of three reciprocals)."""
    rng = random.Random(7)
    wl = gemm(M, N, K)
    for _ in range(40):
        m, n_, k = (rng.randint(1, 10**4) for _ in range(3))
        i = wl.intensity.subs({M: m, N: n_, K: k, b: 2})
        lo = min(m, n_, k)
        assert sp.Rational(2 * lo, 6) <= i <= sp.Rational(2 * lo, 2)
        assert i == sp.Rational(*seed_gemm_intensity(m, n_, k, 2).as_integer_ratio())


def test_skinny_gemm_tends_to_2N_over_b():
    wl = gemm(M, N, K)
    assert sp.limit(sp.limit(wl.intensity, M, oo), K, oo) == 2 * N / b
    assert sp.limit(sp.limit(wl.intensity, K, oo), M, oo) == 2 * N / b
    # "the MK term dominates the bytes"
    assert sp.limit(sp.limit(wl.bytes / (b * M * K), M, oo), K, oo) == 1


def test_gemv_is_gemm_with_M_1():
    v = gemv(N, K)
    assert_formula_equal(v.flops, 2 * N * K)
    # read x (K) + read W (K*N) + write y (N)
    assert_formula_equal(v.bytes, b * (K + K * N + N))
    assert_formula_equal(v.intensity, gemm(1, N, K).intensity)
    assert_formula_equal(v.intensity, gemm(M, N, K).intensity.subs(M, 1))


def test_gemv_intensity_tends_to_2_over_b():
    i = gemv(N, K).intensity
    assert sp.limit(sp.limit(i, N, oo), K, oo) == 2 / b
    assert sp.limit(sp.limit(i, K, oo), N, oo) == 2 / b
    assert sp.limit(i.subs(N, K), K, oo) == 2 / b
    # seed 000 writes the GEMV as N = 1: the same limit by symmetry
    assert sp.limit(sp.limit(gemm(M, 1, K).intensity, M, oo), K, oo) == 2 / b
    # strictly below 2/b at every finite size
    assert sp.cancel(2 / b - i).subs({N: 4096, K: 4096, b: 2}) > 0


# ---------------------------------------------------------------------------
# the seeds' figures


@pytest.mark.parametrize("m, n_, k, exact, printed, tolerance", [
    # seed 000: "an 8192^3 GEMM gives 2,731 FLOP/B; NVIDIA's guide reports 2,730"
    (8192, 8192, 8192, sp.Rational(8192, 3), 2731, 2e-4),
    (8192, 8192, 8192, sp.Rational(8192, 3), 2730, 3e-4),
    # seed 000: "NVIDIA's 8192 x 128 x 8192 example gives 124.1 FLOP/B"
    (8192, 128, 8192, sp.Rational(4096, 33), 124.1, 1e-3),
    # seed 000: "small GEMM 256^3 (85)"
    (256, 256, 256, sp.Rational(256, 3), 85, 4e-3),
    # seed 001 (FP16, n/3): "a 4096^3 matmul has intensity ~1365 FLOP/byte"
    (4096, 4096, 4096, sp.Rational(4096, 3), 1365, 3e-4),
    # seed 001: "A 1x4096x4096 GEMV (M=1) has I ... ~= 1.0"
    (1, 4096, 4096, sp.Rational(2048, 2049), 1.0, 5e-4),
])
def test_seed_gemm_figures(m, n_, k, exact, printed, tolerance):
    i = at(gemm(M, N, K).intensity, M=m, N=n_, K=k, b=2)
    assert i == exact
    assert Fraction(int(i.p), int(i.q)) == seed_gemm_intensity(m, n_, k, 2)
    assert float(i) == pytest.approx(printed, rel=tolerance)
    # the same figure from the builder with numbers passed straight in
    assert gemm(m, n_, k, b=2).intensity == exact


def test_seed_figures_to_printed_precision():
    big = float(gemm(8192, 8192, 8192, b=2).intensity)
    assert round(big, 1) == 2730.7
    assert round(float(gemm(8192, 128, 8192, b=2).intensity), 1) == 124.1
    assert round(float(gemm(256, 256, 256, b=2).intensity), 1) == 85.3
    assert int(gemm(4096, 4096, 4096, b=2).intensity) == 1365
    assert round(float(gemv(4096, 4096, b=2).intensity), 4) == 0.9995


def test_seed_square_gemm_n_over_3_at_two_bytes():
    """Seed 001: with FP16 bytes, I = MNK/(MK+KN+MN) and the square case is n/3."""
    assert_formula_equal(gemm(n, n, n).intensity.subs(b, 2), n / 3)
    assert_formula_equal(gemm(M, N, K, b=2).intensity, M * N * K / (M * K + K * N + M * N))


def test_seed_relu_over_16M_values():
    sixteen_m = 16 * 2**20
    relu = elementwise(sixteen_m)
    assert relu.flops == sixteen_m
    assert_formula_equal(relu.bytes, 2 * sixteen_m * b)         # 1 read + 1 write per value
    assert_formula_equal(relu.intensity, 1 / (2 * b))
    assert relu.intensity.subs(b, 2) == sp.Rational(1, 4)
    assert elementwise(sixteen_m, b=2).intensity == sp.Rational(1, 4)
    # size-independent: the symbolic intensity does not contain n
    assert_formula_equal(elementwise(n).intensity, 1 / (2 * b))
    assert n not in elementwise(n).intensity.free_symbols
    # second computation: the loop nest over a few values, scaled
    run = loopnest.relu([3, -1, 0, 5])
    assert Fraction(run.counter.flops("exact")) / run.counter.bytes(2) == Fraction(1, 4)


def test_seed_2x2x2_example():
    """Seed 001: 'The formula says 16, exact counting says 4 elements x 3 ops = 12.'"""
    assert gemm(2, 2, 2).flops == 16
    assert gemm(2, 2, 2, flops="exact").flops == 12
    run = loopnest.matmul([[1, 2], [3, 4]], [[5, 6], [7, 8]])
    assert run.result[0][0] == 19                      # 1*5 + 2*7
    assert run.result == [[19, 22], [43, 50]]
    assert run.counter.flops("exact") == 12            # 4 outputs x (2 mults + 1 add)
    assert run.counter.flops("two_per_mac") == 16


def test_seed_convention_gap_at_K_4096():
    two = gemm(M, N, K).flops
    exact = gemm(M, N, K, flops="exact").flops
    gap = sp.cancel((two - exact) / two)
    assert_formula_equal(gap, 1 / (2 * K))                      # (2K - (2K-1)) / (2K)
    at_4096 = gap.subs(K, 4096)
    assert at_4096 == sp.Rational(1, 8192)
    assert float(100 * at_4096) == pytest.approx(0.0122, rel=1e-3)   # percent
    assert float(at_4096) < 0.0002                     # within the seed's "0.02%"


# ---------------------------------------------------------------------------
# elementwise


def test_elementwise_inputs_and_flops_per_element():
    add = elementwise(n, inputs=2)
    assert_formula_equal(add.flops, n)
    assert_formula_equal(add.bytes, 3 * n * b)                  # 2 reads + 1 write
    assert_formula_equal(add.intensity, 1 / (3 * b))
    gelu = elementwise(n, flops_per_element=8)
    assert_formula_equal(gelu.intensity, 4 / b)                 # 8n / (2 n b)
    for bad in (0, -1, 1.5, True):
        with pytest.raises(SymroofError, match=r"elementwise inputs"):
            elementwise(n, inputs=bad)


# ---------------------------------------------------------------------------
# conv2d


def test_conv2d_explicit_and_implicit_formulas():
    ex = conv2d(Nb, C, H, Wd, K, (R, S_f))
    im = conv2d(Nb, C, H, Wd, K, (R, S_f), lowering="implicit")
    P, Q = H - R + 1, Wd - S_f + 1
    crs, npq = C * R * S_f, Nb * P * Q
    assert_formula_equal(ex.flops, 2 * K * crs * npq)
    assert_formula_equal(im.flops, ex.flops)
    x_b, w_b, y_b = Nb * C * H * Wd * b, K * crs * b, K * npq * b
    # implicit: read X + read W + write Y
    assert_formula_equal(im.bytes, x_b + w_b + y_b)
    # explicit: also write the column matrix and read it back
    assert_formula_equal(ex.bytes, x_b + w_b + y_b + 2 * crs * npq * b)
    assert sp.cancel(im.intensity - ex.intensity).subs(
        {Nb: 1, C: 3, H: 32, Wd: 32, K: 64, R: 3, S_f: 3, b: 2}) > 0


def test_conv2d_duplicates_each_input_up_to_RS_times():
    """Seed 000: im2col 'duplicates each input up to RS times'."""
    P, Q = H - R + 1, Wd - S_f + 1
    ratio = (C * R * S_f * Nb * P * Q) / (Nb * C * H * Wd)
    ex = conv2d(Nb, C, H, Wd, K, (R, S_f))
    col = next(t for t in ex.graph.tensors if t.name == "im2col")
    assert_formula_equal(col.numel / (Nb * C * H * Wd), ratio)
    assert sp.limit(sp.limit(ratio, H, oo), Wd, oo) == R * S_f


def test_conv2d_numbers_stride_and_padding():
    # 1 x 2 x 5 x 5 input, 3 filters of 3x3, stride 1, no padding: P = Q = 3
    ex = conv2d(1, 2, 5, 5, 3, 3, b=1)
    # FLOPs: 2 * K(3) * CRS(18) * NPQ(9)
    assert ex.flops == 2 * 3 * 18 * 9
    # X 50 + W 54 + Y 27 + COL written 162 + COL read 162
    assert ex.bytes == 50 + 54 + 27 + 2 * 162
    # padding 1 keeps 5x5; stride 2 takes floor((5 + 2 - 3)/2) + 1 = 3
    padded = conv2d(1, 2, 5, 5, 3, 3, padding=1, b=1, lowering="implicit")
    assert padded.flops == 2 * 3 * 18 * 25
    strided = conv2d(1, 2, 5, 5, 3, 3, padding=1, stride=2, b=1, lowering="implicit")
    assert strided.flops == 2 * 3 * 18 * 9
    # implicit: X 50 + W 54 + Y 27
    assert conv2d(1, 2, 5, 5, 3, 3, b=1, lowering="implicit").bytes == 50 + 54 + 27


def test_conv2d_symbolic_stride_is_an_assumption():
    wl = conv2d(Nb, C, H, Wd, K, (R, S_f), stride=T_st)
    assert any("divides" in a for a in wl.assumptions)
    assert_formula_equal(wl.flops, 2 * K * C * R * S_f * Nb * ((H - R) / T_st + 1) * ((Wd - S_f) / T_st + 1))


@pytest.mark.parametrize("kwargs, fragment", [
    (dict(lowering="winograd"), "conv2d lowering"),
    (dict(padding=-1), "conv2d padding"),
    (dict(padding=sp.Rational(1, 2)), "conv2d padding"),
    (dict(padding=0.5), "conv2d padding"),
    (dict(stride=0), "conv2d stride"),
])
def test_conv2d_bad_arguments(kwargs, fragment):
    with pytest.raises(SymroofError, match=fragment):
        conv2d(1, 2, 5, 5, 3, 3, **kwargs)


def test_conv2d_kernel_larger_than_input():
    with pytest.raises(SymroofError, match=r"conv2d height: kernel 7 is larger"):
        conv2d(1, 1, 5, 5, 1, 7)


def test_workloads_do_not_share_state():
    a = gemm(M, N, K)
    c = gemm(M, N, K)
    assert a.graph is not c.graph
    im = conv2d(1, 2, 5, 5, 3, 3, lowering="implicit")
    ex = conv2d(1, 2, 5, 5, 3, 3)
    assert im.bytes != ex.bytes

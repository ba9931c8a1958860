"""I/O lower bounds and known schedules' traffic (symroof/bounds.py) against the simulator.

- GEMM: any schedule with a fast memory of C words moves at least ~2MNK/sqrt(C) words; the
  output-stationary tile T = sqrt(C) attains it up to the MN output term; every tiling
  whose C tile fits (t_m t_n <= C) moves at least the bound (checked by simulation).
- Attention (seed 000, Under the hood 3): FlashAttention makes Theta(S^2 d^2 / M) HBM
  accesses, the standard algorithm Theta(S d + S^2); the standard count is the engine's
  unfused attention graph (write_and_read) per head, and FlashAttention's Algorithm 1
  count is the simulated Algorithm 1.
"""

from __future__ import annotations

import math
import random

import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from symroof.testing import assert_formula_equal
import symroof as sr
from oracles import simulator as sim
from symroof.analysis import analyze
from symroof.bounds import (flash_attention_hbm_accesses, gemm_io_lower_bound,
                            standard_attention_hbm_accesses)
from symroof.passes import tile
from symroof.symbols import C, H, K, M, N, S, T, d_h, dim
from symroof.workloads import attention, gemm

FAST = settings(max_examples=100, deadline=None)




def ones(rows: int, cols: int) -> list[list[int]]:
    return [[1] * cols for _ in range(rows)]


def at_least_bound(words: int, m: int, n: int, k: int, cap: int) -> bool:
    """words >= 2mnk/sqrt(cap), decided exactly (squares of positive integers)."""
    return words * words * cap >= (2 * m * n * k) ** 2


# ---------------------------------------------------------------------------
# GEMM


def test_gemm_lower_bound_formula():
    assert gemm_io_lower_bound(M, N, K, C) == 2 * M * N * K / sp.sqrt(C)
    assert gemm_io_lower_bound(4, 4, 4, 16) == 32


def test_square_tile_of_sqrt_c_meets_the_bound_up_to_the_output():
    tiled = analyze(tile(gemm(M, N, K, b=1).graph, {M: T, N: T})).bytes
    at_sqrt_c = tiled.xreplace({T: sp.sqrt(C)})
    assert_formula_equal(at_sqrt_c - gemm_io_lower_bound(M, N, K, C), M * N)


@FAST
@given(t=st.integers(1, 4), i=st.integers(1, 3), j=st.integers(1, 3), k=st.integers(1, 6))
def test_simulated_sqrt_c_tile_meets_the_bound(t, i, j, k):
    m, n, cap = t * i, t * j, t * t
    r = sim.gemm_scratchpad(ones(m, k), ones(k, n), tm=t, tn=t)
    assert r.elements - m * n == gemm_io_lower_bound(m, n, k, cap)


@FAST
@given(m=st.integers(1, 10), n=st.integers(1, 10), k=st.integers(1, 6), tm=st.integers(1, 10),
       tn=st.integers(1, 10), slack=st.integers(0, 30))
def test_bound_is_below_every_tiling_that_fits(m, n, k, tm, tn, slack):
    # the C tile (t_m t_n <= C) fits; the scratchpad itself also holds one K slice
    r = sim.gemm_scratchpad(ones(m, k), ones(k, n), tm=tm, tn=tn)
    for cap in (tm * tn + slack, sim.gemm_scratchpad_footprint(tm, tn)):
        assert at_least_bound(r.elements, m, n, k, cap)
    # square tiles with t^2 <= C, read from the closed form at numbers
    closed = analyze(tile(gemm(M, N, K, b=1).graph, {M: T, N: T}, exact=False)).bytes
    t = max(1, math.isqrt(tm * tn + slack))
    words = closed.xreplace({M: m, N: n, K: k, T: t})
    assert at_least_bound(int(words), m, n, k, t * t)


# ---------------------------------------------------------------------------
# attention


def test_standard_attention_count_is_the_unfused_graph_per_head():
    std = standard_attention_hbm_accesses(S, d_h)
    assert_formula_equal(std, 4 * S * d_h + 4 * S**2)
    one_head = attention(S, d_h, 1, causal=False, fused=False, b=1)
    assert_formula_equal(one_head.bytes, std)
    heads = attention(S, H * d_h, H, causal=False, fused=False, b=1)
    assert_formula_equal(heads.bytes, H * std)
    assert sr.theta(std) == S * d_h + S**2


@FAST
@given(s=st.integers(1, 7), d=st.integers(1, 4), seed=st.integers(0, 10**6))
def test_standard_attention_count_is_the_simulated_kernels(s, d, seed):
    rng = random.Random(seed)
    q, k, v = ([[rng.uniform(-1, 1) for _ in range(d)] for _ in range(s)] for _ in range(3))
    r = sim.attention_unfused(q, k, v)
    assert r.elements == standard_attention_hbm_accesses(s, d)


def test_flash_attention_count_and_its_leading_term():
    f = flash_attention_hbm_accesses(S, d_h, M)
    assert_formula_equal(f, 2 * S * d_h + 12 * S**2 * d_h**2 / M)
    # as on-chip memory shrinks, the S^2 d^2 / M term dominates
    assert sr.leading_term(f, M, 0) == 12 * S**2 * d_h**2 / M
    assert sr.limit(f / (S**2 * d_h**2 / M), M, 0) == 12
    # and it beats the standard algorithm by the factor ~ M / (3 d^2) once S >> d
    ratio = sr.limit(standard_attention_hbm_accesses(S, d_h) / f, S)
    assert_formula_equal(ratio, M / (3 * d_h**2))


def test_flash_attention_theta_with_small_sram():
    """Dao et al.: Theta(S^2 d^2 / M) for M << S d. symroof.theta documents ``small``
    pairs (x, y) as x << y with expansion "to first order in x/y", but
    symroof/solve.py ``theta`` never uses y: it substitutes x -> eps*x, keeps every term
    up to eps^1 and only drops a term whose ratio to another is a number over
    dimensions. So with M << S the S d term (ratio M/(S d) = (M/S)/d to the S^2 d^2/M
    term) survives and theta returns S*d_h + S**2*d_h**2/M."""
    f = flash_attention_hbm_accesses(S, d_h, M)
    assert sr.theta(f, small=[(M, S)]) == S**2 * d_h**2 / M


@settings(max_examples=60, deadline=None)
@given(d=st.integers(1, 3), bc=st.integers(1, 4), tc=st.integers(1, 4), seed=st.integers(0, 10**6))
def test_flash_attention_count_is_simulated_algorithm_1(d, bc, tc, seed):
    """Algorithm 1 with B_c = M/(4d) dividing S and B_r = min(B_c, d): the formula counts
    Q, K, V, O elements exactly (row statistics and the O initialisation excluded)."""
    s, m_sram = bc * tc, 4 * d * bc
    rng = random.Random(seed)
    q, k, v = ([[rng.uniform(-1, 1) for _ in range(d)] for _ in range(s)] for _ in range(3))
    r = sim.attention_flash_v1(q, k, v, block_q=min(bc, d), block_k=bc)
    ref = sim.reference_attention(q, k, v)
    assert all(abs(x - y) < 1e-9 for rr, rf in zip(r.value, ref) for x, y in zip(rr, rf))
    lo, st_ = r.traffic.loads, r.traffic.stores
    counted = lo["Q"] + lo["K"] + lo["V"] + lo["O"] + st_["O"] - s * d   # minus O's init
    assert counted == flash_attention_hbm_accesses(s, d, m_sram)
    # the ignored row statistics: l and m read and written once per pass (+ init)
    assert lo["l"] == lo["m"] == s * tc and st_["l"] == st_["m"] == s * (tc + 1)
    # FlashAttention-2's order (K, V re-streamed per query block of B_c rows) is within it
    fa2 = sim.attention_fused(q, k, v, block_q=bc, block_k=bc, kv_resident=False)
    assert fa2.elements <= flash_attention_hbm_accesses(s, d, m_sram)


def test_flash_attention_count_never_below_compulsory():
    """With on-chip memory M > 4 S d one key block covers all of S, so Algorithm 1 makes
    one pass: 2Sd + 3Sd = 5Sd (simulated below). flash_attention_hbm_accesses uses
    S / B_c = 4 S d / M passes (symroof/bounds.py, ``passes = s / block_c``), a fraction
    below 1, and returns less than the compulsory 4Sd of reading Q, K, V and writing O
    (here 3584 < 4096 for S = 64, d = 16, M = 8192). Passes should be at least one
    (ceil(S/B_c), or the M <= 4 S d range stated as the formula's condition)."""
    s, d, m_sram = 64, 16, 8192
    rng = random.Random(0)
    q, k, v = ([[rng.uniform(-1, 1) for _ in range(d)] for _ in range(s)] for _ in range(3))
    r = sim.attention_flash_v1(q, k, v, block_q=d, block_k=m_sram // (4 * d))
    lo, st_ = r.traffic.loads, r.traffic.stores
    assert lo["Q"] + lo["K"] + lo["V"] + lo["O"] + st_["O"] - s * d == 5 * s * d
    count = flash_attention_hbm_accesses(s, d, m_sram)
    assert count >= 4 * s * d, count


def test_fused_beats_standard_only_with_enough_sram():
    # per head at S = 4096, d = 128: the standard algorithm moves 4Sd + 4S^2 elements;
    # FlashAttention with 100K elements of SRAM moves fewer, with 1K elements more
    s, d = 4096, 128
    std = standard_attention_hbm_accesses(s, d)
    assert flash_attention_hbm_accesses(s, d, 100_000) < std
    assert flash_attention_hbm_accesses(s, d, 1_000) > std
    m_ = dim("m_sram")
    (x,) = sr.crossover(flash_attention_hbm_accesses(s, d, m_), std, m_)
    assert_formula_equal(x.value, sp.Rational(12 * s**2 * d**2, std - 2 * s * d))

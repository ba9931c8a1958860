"""The tiling pass and tile sizing against the brute-force scratchpad and LRU simulator.

Seed 000, "Under the hood" section 2: an output-stationary schedule keeps a T x T tile of
C on chip for its whole K loop and, per K step, loads a T x 1 slice of A and a 1 x T
slice of B: inner-loop intensity 2T^2/(2Tb) = T/b; clearing a ridge of 200 at b = 2 needs
T >= 400, a 400 x 400 tile of 32-bit accumulators, 640 KB.

The bound relating the closed forms to the simulator (b = 1, counts in elements):

- exact=True:  ``Q = MK*N/t_n + KN*M/t_m + MN``; when t_m | M and t_n | N it equals the
  simulator's loads + stores exactly. Otherwise it is a lower bound with
  ``Q <= sim < Q + K(M + N)`` (each ragged loop adds less than one extra pass).
- exact=False: ``Q = MK*ceil(N/t_n) + KN*ceil(M/t_m) + MN`` equals the simulator with
  ragged edge tiles (partial tiles load only what exists) exactly, and is an upper
  bound on it in general (a padded schedule, loading whole tiles, moves at least this).
"""

from __future__ import annotations

import math
import random

import pytest
import sympy as sp
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from symroof.testing import assert_formula_equal
import symroof as sr
from oracles import simulator as sim
from symroof.analysis import analyze
from symroof.errors import SymroofError
from symroof.ir import Kind
from symroof.passes import tile
from symroof.bounds import (inner_loop_intensity, largest_square_tile, tile_for_ridge,
                                 waves)
from symroof.symbols import K, M, N, T, b, dim
from symroof.workloads import gemm

FAST = settings(max_examples=100, deadline=None)

tm_, tn_, tk_ = dim("t_m"), dim("t_n"), dim("t_k")

_G1 = gemm(M, N, K, b=1).graph
EXACT = analyze(tile(_G1, {M: tm_, N: tn_}))
CEIL = analyze(tile(_G1, {M: tm_, N: tn_}, exact=False))
UNTILED = gemm(M, N, K, b=1)




def ones(rows: int, cols: int, rng: random.Random | None = None) -> list[list[int]]:
    if rng is None:
        return [[1] * cols for _ in range(rows)]
    return [[rng.randint(-4, 4) for _ in range(cols)] for _ in range(rows)]


def at(expr: sp.Expr, m: int, n: int, k: int, tm: int, tn: int) -> sp.Expr:
    return expr.xreplace({M: m, N: n, K: k, tm_: tm, tn_: tn})


# ---------------------------------------------------------------------------
# closed forms and what the pass records


def test_tiled_gemm_closed_forms():
    assert_formula_equal(EXACT.bytes, M * K * N / tn_ + K * N * M / tm_ + M * N)
    assert_formula_equal(CEIL.bytes, M * K * sp.ceiling(N / tn_) + K * N * sp.ceiling(M / tm_) + M * N)
    # by operand: A (activation) re-read per column tile, B (weight) per row tile
    assert_formula_equal(EXACT.cost.read[Kind.ACTIVATION], M * K * N / tn_)
    assert_formula_equal(EXACT.cost.read[Kind.WEIGHT], K * N * M / tm_)
    assert_formula_equal(EXACT.cost.written[Kind.ACTIVATION], M * N)
    # FLOPs are unchanged by tiling
    assert EXACT.flops == CEIL.flops == UNTILED.flops == 2 * M * N * K


def test_square_tile_matches_docstring_and_records_assumptions():
    g = gemm(M, N, K).graph
    tiled = tile(g, {M: T, N: T})
    a = analyze(tiled)
    assert_formula_equal(a.bytes, 2 * K * M * N * b / T + M * N * b)
    assumptions = tiled.provenance.assumptions
    assert "tile T divides M exactly" in assumptions
    assert "tile T divides N exactly" in assumptions
    assert tuple(tiled.provenance.tiles) == ((M, T), (N, T))
    # the pass never changes the graph it is given
    assert g.provenance.tiles == () and g.provenance.assumptions == ()
    assert_formula_equal(analyze(g).bytes, (M * K + K * N + M * N) * b)


def test_exact_false_uses_ceil_div_and_states_no_division():
    tiled = tile(gemm(M, N, K).graph, {M: T, N: T}, exact=False)
    q = analyze(tiled).bytes
    assert q.has(sp.ceiling)
    assert_formula_equal(q, b * (M * K * sp.ceiling(N / T) + K * N * sp.ceiling(M / T) + M * N))
    assert not any("divides" in x for x in tiled.provenance.assumptions)


def test_numeric_tiles_that_divide_need_no_assumption():
    tiled = tile(gemm(12, 20, 7, b=1).graph, {12: 4, 20: 5})
    assert tiled.provenance.assumptions == ()
    assert analyze(tiled).bytes == 12 * 7 * 4 + 7 * 20 * 3 + 12 * 20


def test_k_blocking_re_reads_nothing():
    assert_formula_equal(analyze(tile(_G1, {M: tm_, N: tn_, K: tk_})).bytes, EXACT.bytes)
    assert_formula_equal(analyze(tile(_G1, {K: tk_})).bytes, UNTILED.bytes)


def test_exact_tiling_with_numbers_that_do_not_divide_is_not_silently_below_compulsory():
    """exact=True with numeric tiles that do not divide (here a tile larger than the
    loop) records the false assumption "tile 16 divides 7 exactly" and returns
    fractional bytes below compulsory traffic. With numbers the pass can decide
    divisibility: it should refuse (SymroofError pointing at exact=False) or count
    whole passes; it must never report less than each operand crossing once."""
    g = gemm(7, 9, 4, b=1).graph
    compulsory = 7 * 4 + 4 * 9 + 7 * 9
    try:
        q = analyze(tile(g, {7: 16, 9: 16})).bytes
    except SymroofError:
        return
    assert q.is_integer and q >= compulsory, q


# ---------------------------------------------------------------------------
# against the scratchpad simulator


@FAST
@given(tm=st.integers(1, 5), tn=st.integers(1, 5), i=st.integers(1, 3), j=st.integers(1, 3),
       k=st.integers(1, 6), tk=st.integers(1, 7), seed=st.integers(0, 10**6))
def test_tiled_traffic_equals_scratchpad_when_tiles_divide(tm, tn, i, j, k, tk, seed):
    m, n = tm * i, tn * j
    rng = random.Random(seed)
    a, bm = ones(m, k, rng), ones(k, n, rng)
    r = sim.gemm_scratchpad(a, bm, tm=tm, tn=tn, tk=tk)
    assert r.value == sim.reference_matmul(a, bm)
    assert at(EXACT.bytes, m, n, k, tm, tn) == r.elements
    assert at(EXACT.cost.read[Kind.ACTIVATION], m, n, k, tm, tn) == r.traffic.loads["A"]
    assert at(EXACT.cost.read[Kind.WEIGHT], m, n, k, tm, tn) == r.traffic.loads["B"]
    assert at(EXACT.cost.written[Kind.ACTIVATION], m, n, k, tm, tn) == r.traffic.stores["C"]
    assert at(EXACT.flops, m, n, k, tm, tn) == 2 * r.macs
    assert at(CEIL.bytes, m, n, k, tm, tn) == r.elements


@FAST
@given(m=st.integers(1, 11), n=st.integers(1, 11), k=st.integers(1, 5), tm=st.integers(1, 12),
       tn=st.integers(1, 12), tk=st.integers(1, 6))
def test_ceil_div_traffic_bounds_the_ragged_scratchpad(m, n, k, tm, tn, tk):
    a, bm = ones(m, k), ones(k, n)
    ragged = sim.gemm_scratchpad(a, bm, tm=tm, tn=tn, tk=tk)
    padded = sim.gemm_scratchpad(a, bm, tm=tm, tn=tn, tk=tk, pad=True)
    assert ragged.value == padded.value == [[k] * n for _ in range(m)]
    exact = at(EXACT.bytes, m, n, k, tm, tn)
    ceil = at(CEIL.bytes, m, n, k, tm, tn)
    assert ceil.is_integer
    assert ceil == ragged.elements            # exact=False: partial tiles, exactly
    assert ragged.elements <= padded.elements  # and an upper bound on no padded schedule
    assert exact <= ragged.elements < exact + k * (m + n)   # exact=True: the stated bound
    assert (exact == ragged.elements) == (m % tm == 0 and n % tn == 0)


@FAST
@given(m=st.integers(1, 11), n=st.integers(1, 11), k=st.integers(1, 5), tm=st.integers(1, 12),
       tn=st.integers(1, 12))
def test_numeric_ceil_tiling_equals_scratchpad(m, n, k, tm, tn):
    # the pass matches loops by extent, so M and N must differ (or share one tile)
    assume(m != n or tm == tn)
    q = analyze(tile(gemm(m, n, k, b=1).graph, {m: tm, n: tn}, exact=False)).bytes
    assert q == sim.gemm_scratchpad(ones(m, k), ones(k, n), tm=tm, tn=tn).elements


# ---------------------------------------------------------------------------
# against an LRU cache replaying the exact address trace


@FAST
@given(m=st.integers(1, 7), n=st.integers(1, 7), k=st.integers(1, 7), tm=st.integers(1, 8),
       tn=st.integers(1, 8), slack=st.integers(0, 20))
def test_lru_holding_the_working_set_gives_compulsory_traffic(m, n, k, tm, tn, slack):
    cap = m * k + k * n + m * n + slack
    want = UNTILED.bytes.xreplace({M: m, N: n, K: k})
    a, bm = ones(m, k), ones(k, n)
    for run in (sim.gemm_naive_trace(a, bm, capacity=cap),
                sim.gemm_tiled_trace(a, bm, tm=tm, tn=tn, capacity=cap)):
        assert run.elements == want
        assert run.traffic.loads == {"A": m * k, "B": k * n}
        assert run.traffic.stores == {"C": m * n}


@FAST
@given(m=st.integers(1, 9), n=st.integers(1, 9), k=st.integers(1, 6), tm=st.integers(1, 9),
       tn=st.integers(1, 9), slack=st.integers(0, 10))
def test_lru_with_room_for_the_tile_does_no_worse_than_the_schedule(m, n, k, tm, tn, slack):
    """With room for the C tile plus two K steps of slices (LRU needs the slack that an
    explicit scratchpad does not), the cache keeps the tile resident: C is written back
    once, and the loads lie between compulsory and the tiled schedule's count."""
    tm, tn = min(tm, m), min(tn, n)
    cap = tm * tn + 2 * (tm + tn) + slack
    run = sim.gemm_tiled_trace(ones(m, k), ones(k, n), tm=tm, tn=tn, capacity=cap)
    assert run.traffic.stores == {"C": m * n}
    assert m * k + k * n <= run.loads <= at(CEIL.bytes, m, n, k, tm, tn) - m * n


# ---------------------------------------------------------------------------
# inner-loop intensity, tile sizing, waves


def test_inner_loop_intensity_is_t_over_b():
    assert inner_loop_intensity(T, T, b) == T / b
    assert_formula_equal(inner_loop_intensity(tm_, tn_, b), 2 * tm_ * tn_ / ((tm_ + tn_) * b))
    # the K -> oo limit of the tiled GEMM's intensity is the inner loop's
    square = analyze(tile(gemm(M, N, K).graph, {M: T, N: T}))
    assert sr.limit(square.intensity, K) == T / b
    rect = analyze(tile(gemm(M, N, K).graph, {M: tm_, N: tn_}))
    assert_formula_equal(sr.limit(rect.intensity, K), inner_loop_intensity(tm_, tn_, b))


@FAST
@given(tm=st.integers(1, 6), tn=st.integers(1, 6), k=st.integers(1, 8))
def test_inner_loop_intensity_matches_one_simulated_tile(tm, tn, k):
    # one tile: per K step t_m + t_n loads feed t_m t_n MACs; only C's store is extra
    r = sim.gemm_scratchpad(ones(tm, k), ones(k, tn), tm=tm, tn=tn)
    assert sp.Rational(2 * r.macs, r.loads) == inner_loop_intensity(tm, tn, 1)
    assert r.stores == tm * tn


def test_ridge_200_at_two_bytes_needs_400_and_640_kb():
    t = tile_for_ridge(200, 2)
    assert t == 400
    assert inner_loop_intensity(400, 400, 2) == 200
    assert inner_loop_intensity(399, 399, 2) < 200
    accumulators = t ** 2 * 4                      # 32-bit accumulators
    assert accumulators == 640_000                 # bytes
    assert accumulators / 1000 == 640              # "640 KB"
    assert largest_square_tile(640_000, staging=False) == 400


@settings(max_examples=40, deadline=None)
@given(ridge=st.integers(1, 3000), bb=st.sampled_from([1, 2, 4]))
def test_tile_for_ridge_is_ridge_times_b(ridge, bb):
    t = tile_for_ridge(ridge, bb)
    assert t == ridge * bb
    assert inner_loop_intensity(t, t, bb) == ridge
    if t > 1:
        assert inner_loop_intensity(t - 1, t - 1, bb) < ridge


def test_tile_for_ridge_is_a_whole_tile_at_fractional_bytes():
    """At 4-bit values (b = 1/2) a ridge of 201 needs T >= 100.5, so the smallest square
    tile is 101. tile_for_ridge returns 201/2, which is no tile: inner_loop_intensity
    itself refuses it as a dimension. (largest_square_tile floors numeric results;
    tile_for_ridge should take the ceiling.)"""
    half = sp.Rational(1, 2)
    t = tile_for_ridge(201, half)
    assert t.is_integer and t == 101, t
    assert inner_loop_intensity(t, t, half) >= 201 > inner_loop_intensity(t - 1, t - 1, half)


def _need(t: int, acc: int, bb: int, staging: bool) -> int:
    return t * t * acc + (2 * t * bb if staging else 0)


@settings(max_examples=60, deadline=None)
@given(cap=st.integers(1, 5_000_000), acc=st.sampled_from([2, 4]), bb=st.sampled_from([1, 2]),
       staging=st.booleans())
def test_largest_square_tile_is_the_largest_that_fits(cap, acc, bb, staging):
    assume(cap >= _need(1, acc, bb, staging))   # nothing fits: see the next test
    t = largest_square_tile(cap, accumulator_bytes=acc, b=bb, staging=staging)
    assert t.is_integer
    t = int(t)
    assert _need(t, acc, bb, staging) <= cap < _need(t + 1, acc, bb, staging)


@pytest.mark.parametrize("cap, kwargs", [(1, {"accumulator_bytes": 2, "staging": False}),
                                         (5, {}), (7, {"staging": True, "b": 2})])
def test_largest_square_tile_raises_when_not_even_one_fits(cap, kwargs):
    """Its docstring and error message promise 'nothing fits in N bytes'; for a capacity
    below one accumulator (plus staging) it returns a 0 x 0 tile instead."""
    with pytest.raises(SymroofError):
        largest_square_tile(cap, **kwargs)


def test_largest_square_tile_examples():
    # 256 KiB of accumulators + staging at b = 2: 255^2*4 + 2*255*2 = 261,120 <= 262,144
    assert largest_square_tile(256 * 1024) == 255
    assert largest_square_tile(640_000) == 399          # staging pushes 400 just out
    assert largest_square_tile(640_000 + 2 * 400 * 2) == 400


@FAST
@given(tiles=st.integers(1, 10_000), units=st.integers(1, 300))
def test_waves_is_ceil_div(tiles, units):
    assert waves(tiles, units) == -(-tiles // units)


def test_waves_quantization():
    assert waves(132, 132) == 1 and waves(133, 132) == 2
    # a 4096 x 4096 output in 256 x 128 tiles on 132 SMs: 512 tiles, 4 waves (3.88 ideal)
    tiles = math.ceil(4096 / 256) * math.ceil(4096 / 128)
    assert tiles == 512 and waves(tiles, 132) == 4
    assert waves(T, 132) == sp.ceiling(T / 132)

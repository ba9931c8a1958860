"""The brute-force memory simulator (tests/oracles/simulator.py) checked on its own terms.

The simulator is the oracle for test_tile, test_fuse and test_bounds, so before its counts
are compared with symroof it must (1) really compute: every kernel's values equal a naive
reference; (2) count what its docstring says, on cases small enough to count by hand; and
(3) enforce its capacity: a schedule that needs more on-chip room than it has fails.
"""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oracles import simulator as sim

FAST = settings(max_examples=60, deadline=None)


def rand_matrix(rng: random.Random, rows: int, cols: int) -> list[list[int]]:
    return [[rng.randint(-9, 9) for _ in range(cols)] for _ in range(rows)]


def rand_float(rng: random.Random, rows: int, cols: int) -> list[list[float]]:
    return [[rng.uniform(-2, 2) for _ in range(cols)] for _ in range(rows)]


def close(a: list[list[float]], c: list[list[float]], tol: float = 1e-9) -> bool:
    return len(a) == len(c) and all(
        len(x) == len(y) and all(abs(u - v) <= tol for u, v in zip(x, y)) for x, y in zip(a, c))


dims = st.integers(1, 8)


# ---------------------------------------------------------------------------
# GEMM kernels compute the product


@FAST
@given(m=dims, n=dims, k=dims, data=st.data())
def test_gemm_kernels_compute_the_product(m, n, k, data):
    rng = random.Random(data.draw(st.integers(0, 10**6)))
    a, b = rand_matrix(rng, m, k), rand_matrix(rng, k, n)
    ref = sim.reference_matmul(a, b)
    tm, tn, tk = data.draw(st.integers(1, m + 2)), data.draw(st.integers(1, n + 2)), \
        data.draw(st.integers(1, k + 2))
    pad = data.draw(st.booleans())
    r = sim.gemm_scratchpad(a, b, tm=tm, tn=tn, tk=tk, pad=pad)
    assert r.value == ref
    assert r.macs == m * n * k
    assert r.peak_on_chip <= sim.gemm_scratchpad_footprint(tm, tn, tk)
    cap = data.draw(st.one_of(st.none(), st.integers(1, 60)))
    for run in (sim.gemm_naive_trace(a, b, capacity=cap),
                sim.gemm_tiled_trace(a, b, tm=tm, tn=tn, capacity=cap)):
        assert run.value == ref
        assert run.macs == m * n * k


def test_gemm_scratchpad_hand_count():
    # 2 x 3 times 3 x 2 with 1 x 1 tiles: every C element reloads its row of A and its
    # column of B: A read N = 2 times, B read M = 2 times, C stored once.
    a, b = [[1, 2, 3], [4, 5, 6]], [[1, 0], [0, 1], [1, 1]]
    r = sim.gemm_scratchpad(a, b, tm=1, tn=1)
    assert r.value == [[4, 5], [10, 11]]
    assert r.traffic.loads == {"A": 12, "B": 12}
    assert r.traffic.stores == {"C": 4}
    assert r.peak_on_chip == 3                 # one accumulator + one A + one B
    # one tile covering everything: compulsory traffic
    r = sim.gemm_scratchpad(a, b, tm=2, tn=2, tk=3)
    assert r.traffic.loads == {"A": 6, "B": 6} and r.traffic.stores == {"C": 4}


def test_gemm_scratchpad_enforces_capacity():
    a, b = [[1, 2], [3, 4]], [[5, 6], [7, 8]]
    with pytest.raises(sim.CapacityError):
        sim.gemm_scratchpad(a, b, tm=2, tn=2, capacity=7)    # needs 4 + 2 + 2
    assert sim.gemm_scratchpad(a, b, tm=2, tn=2, capacity=8).value == [[19, 22], [43, 50]]


def test_scratchpad_refuses_values_not_on_chip():
    pad = sim.Scratchpad(sim.Memory(A={(0,): 1}), 4)
    with pytest.raises(AssertionError):
        pad.get("A", (0,))
    pad.load("A", (0,))
    assert pad.get("A", (0,)) == 1 and pad.traffic.loads == {"A": 1}


def test_padded_tiles_load_padding():
    a = [[1] * 3 for _ in range(5)]
    b = [[1] * 4 for _ in range(3)]
    ragged = sim.gemm_scratchpad(a, b, tm=2, tn=3)
    padded = sim.gemm_scratchpad(a, b, tm=2, tn=3, pad=True)
    assert ragged.value == padded.value == [[3] * 4 for _ in range(5)]
    # ceil(5/2) = 3 row tiles, ceil(4/3) = 2 column tiles
    assert ragged.traffic.loads == {"A": 5 * 3 * 2, "B": 3 * 4 * 3}
    assert padded.traffic.loads == {"A": 3 * 2 * 3 * 2, "B": 3 * 3 * 2 * 3}
    assert ragged.stores == padded.stores == 20


# ---------------------------------------------------------------------------
# the LRU cache


def test_lru_hand_trace():
    mem = sim.Memory(x={(i,): i for i in range(4)})
    c = sim.LRU(mem, 2)
    for i in (0, 1, 0, 2, 1):       # 0 miss, 1 miss, 0 hit, 2 miss (evicts 1), 1 miss (evicts 0)
        c.read("x", (i,))
    assert c.traffic.loads == {"x": 4}
    c.write("y", (0,), 7)            # allocate without fetch; evicts 2 (clean): no store
    assert c.traffic.stores == {}
    c.read("x", (3,))                # evicts 1 (clean)
    c.read("x", (0,))                # evicts y[0] (dirty): one store
    assert c.traffic.stores == {"y": 1} and mem.arrays["y"][(0,)] == 7
    c.write("z", (0,), 1)
    c.flush()
    assert c.traffic.stores == {"y": 1, "z": 1} and not c.lines


def test_lru_unbounded_is_compulsory():
    mem = sim.Memory(x={(i,): i for i in range(5)})
    c = sim.LRU(mem, None)
    for _ in range(3):
        for i in range(5):
            c.write("y", (i,), c.read("x", (i,)) * 2)
    c.flush()
    assert c.traffic.loads == {"x": 5} and c.traffic.stores == {"y": 5}
    assert c.accesses == 30


@FAST
@given(m=dims, n=dims, k=dims, cap=st.integers(1, 40))
def test_lru_never_below_compulsory(m, n, k, cap):
    a, b = [[1] * k for _ in range(m)], [[1] * n for _ in range(k)]
    for run in (sim.gemm_naive_trace(a, b, capacity=cap),
                sim.gemm_tiled_trace(a, b, tm=2, tn=3, capacity=cap)):
        assert run.traffic.loads["A"] >= m * k and run.traffic.loads["B"] >= k * n
        assert run.traffic.stores["C"] >= m * n


# ---------------------------------------------------------------------------
# attention


@FAST
@given(s=st.integers(1, 6), d=st.integers(1, 4), bq=st.integers(1, 7), bk=st.integers(1, 7),
       seed=st.integers(0, 10**6))
def test_attention_kernels_compute_attention(s, d, bq, bk, seed):
    rng = random.Random(seed)
    q, k, v = rand_float(rng, s, d), rand_float(rng, s, d), rand_float(rng, s, d)
    ref = sim.reference_attention(q, k, v)
    runs = [sim.attention_unfused(q, k, v),
            sim.attention_fused(q, k, v, block_q=bq, block_k=bk, kv_resident=True),
            sim.attention_fused(q, k, v, block_q=bq, block_k=bk, kv_resident=False),
            sim.attention_flash_v1(q, k, v, block_q=bq, block_k=bk)]
    for r in runs:
        assert close(r.value, ref)
        assert r.macs == 2 * s * s * d
    unf, res, stream, v1 = runs
    assert unf.traffic.loads == {"Q": s * d, "K": s * d, "S": s * s, "P": s * s, "V": s * d}
    assert unf.traffic.stores == {"S": s * s, "P": s * s, "O": s * d}
    assert res.traffic.loads == {"Q": s * d, "K": s * d, "V": s * d}
    assert res.traffic.stores == {"O": s * d}
    passes = math.ceil(s / bq)
    assert stream.traffic.loads == {"Q": s * d, "K": s * d * passes, "V": s * d * passes}
    tc = math.ceil(s / bk)
    assert v1.traffic.loads["K"] == v1.traffic.loads["V"] == s * d
    assert v1.traffic.loads["Q"] == v1.traffic.loads["O"] == s * d * tc
    assert v1.traffic.stores["O"] == s * d * (tc + 1)          # + the initialisation


def test_fused_attention_never_holds_the_score_matrix():
    rng = random.Random(3)
    s, d = 8, 2
    q, k, v = rand_float(rng, s, d), rand_float(rng, s, d), rand_float(rng, s, d)
    r = sim.attention_fused(q, k, v, block_q=2, block_k=2, kv_resident=False)
    assert r.peak_on_chip < s * s
    with pytest.raises(sim.CapacityError):
        sim.attention_fused(q, k, v, block_q=2, block_k=2, kv_resident=True, capacity=2 * s * d)


# ---------------------------------------------------------------------------
# elementwise chains and conv


@FAST
@given(xs=st.lists(st.integers(-50, 50), min_size=1, max_size=20))
def test_elementwise_chain(xs):
    ops = [lambda x: max(x, 0), lambda x: x + 3, lambda x: 2 * x]
    want = [2 * (max(x, 0) + 3) for x in xs]
    unf = sim.elementwise_chain(xs, ops, fused=False)
    fus = sim.elementwise_chain(xs, ops, fused=True)
    assert unf.value == fus.value == want
    n = len(xs)
    assert unf.traffic.loads == {"t0": n, "t1": n, "t2": n}
    assert unf.traffic.stores == {"t1": n, "t2": n, "t3": n}
    assert fus.traffic.loads == {"t0": n} and fus.traffic.stores == {"t3": n}
    assert unf.macs == fus.macs == 3 * n


@FAST
@given(nb=st.integers(1, 2), c=st.integers(1, 2), h=st.integers(1, 5), w=st.integers(1, 5),
       k=st.integers(1, 3), r=st.integers(1, 3), s=st.integers(1, 3), stride=st.integers(1, 3),
       padding=st.integers(0, 2), seed=st.integers(0, 10**6))
def test_conv2d_im2col_computes_the_convolution(nb, c, h, w, k, r, s, stride, padding, seed):
    if h + 2 * padding < r or w + 2 * padding < s:
        return
    rng = random.Random(seed)
    x = [[[[rng.randint(-3, 3) for _ in range(w)] for _ in range(h)] for _ in range(c)]
         for _ in range(nb)]
    f = [[[[rng.randint(-3, 3) for _ in range(s)] for _ in range(r)] for _ in range(c)]
         for _ in range(k)]
    ref = sim.reference_conv2d(x, f, stride=stride, padding=padding)
    ex = sim.conv2d_im2col(x, f, stride=stride, padding=padding, explicit=True)
    im = sim.conv2d_im2col(x, f, stride=stride, padding=padding, explicit=False)
    assert ex.value == im.value == ref
    assert ex.extra["x_max_copies"] <= r * s
    assert ex.extra["x_copies"] <= r * s * ex.extra["x_read"]
    assert ex.traffic.stores["col"] == ex.traffic.loads["col"] == ex.extra["col"]

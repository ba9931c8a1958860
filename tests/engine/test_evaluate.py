"""Numbers from formulas: exact evaluation, numpy sweeps, and roofline bounds on a chip.

Second computations are plain-Python ``Fraction`` arithmetic: the H100 datasheet figures
typed in, the models' config.json numbers, and the seed's own worked example (whose KV
term is recomputed here: the seed prints half of what its own product gives).
"""

from __future__ import annotations

import random
from fractions import Fraction

import numpy as np
import pytest
import sympy as sp

import symroof as sr
from symroof.errors import SymroofError
from symroof.ir import Kind
from symroof.symbols import B, K, M, N, S, b, n

H100_BF16 = Fraction("989.4") * 10**12      # FLOP/s, dense BF16 (datasheet)
H100_HBM = Fraction("3.35") * 10**12        # bytes/s, HBM3 (datasheet)
H100_RIDGE = H100_BF16 / H100_HBM           # 295.34 FLOP/B


def R(x: Fraction | int) -> sp.Rational:
    x = Fraction(x)
    return sp.Rational(x.numerator, x.denominator)


# ---------------------------------------------------------------------------
# evaluate


def test_evaluate_exact_rationals():
    gv = sr.workloads.gemv(N, K)
    v = sr.evaluate(gv.intensity, {N: 3, K: 5, b: sp.Rational(1, 2)})
    assert isinstance(v, sp.Rational) and v == sp.Rational(60, 23)
    assert v == R(Fraction(2 * 3 * 5) / (Fraction(1, 2) * (3 * 5 + 3 + 5)))   # 2NK/(b(NK+N+K))
    # string keys name free symbols; unused names are ignored
    assert sr.evaluate(gv.intensity, {"N": 3, "K": 5, "b": sp.Rational(1, 2), "S": 9}) == v
    # the seeds' square GEMM: 8192^3 at 2 bytes is 8192/3 = 2,730.67 (NVIDIA: 2,730)
    sq = sr.evaluate(sr.workloads.gemm(n, n, n).intensity, {n: 8192, b: 2})
    assert sq == sp.Rational(8192, 3)
    assert float(sq) == pytest.approx(2731, abs=0.5)
    # partial substitution stays symbolic and exact
    part = sr.evaluate(gv.intensity, {N: 4096})
    assert part.free_symbols == {K, b}
    assert sp.cancel(part - 8192 * K / (b * (4097 * K + 4096))) == 0


def test_evaluate_seed_decode_points():
    dec = sr.workloads.decode(sr.models.get("seed-6.4b"), batch=B, context=S)
    # seed: B = 1, S = 1024 gives 13.42e9 / 13.42e9 = 1.0
    assert sr.evaluate(dec.flops, {B: 1, S: 1024}) == 2 * 6442450944 + 4 * 32 * 1024 * 4096
    assert float(sr.evaluate(dec.flops, {B: 1, S: 1024})) == pytest.approx(13.42e9, rel=1e-3)
    assert float(sr.evaluate(dec.bytes, {B: 1, S: 1024, b: 2})) == pytest.approx(13.42e9, rel=1e-3)
    assert sr.evaluate(dec.intensity, {B: 1, S: 1024, b: 2}) == 1


def test_evaluate_division_by_zero():
    with pytest.raises(SymroofError, match="value of b: expected a positive number"):
        sr.evaluate(sr.workloads.gemm(n, n, n).intensity, {n: 8192, b: 0})
    with pytest.raises(SymroofError, match="division by zero"):
        sr.evaluate(1 / (n - 3), {n: 3})
    with pytest.raises(SymroofError, match="expected a positive"):  # refused before dividing
        sr.evaluate(sr.workloads.gemm(M, N, K).intensity, {M: 0, N: 0, K: 0, b: 2})
    # an expression that carries oo on purpose is not an error
    assert sr.evaluate(sp.oo * n, {n: 2}) == sp.oo


def test_evaluate_rejects_bad_keys():
    with pytest.raises(SymroofError):
        sr.evaluate(n / b, {n + 1: 2})


# ---------------------------------------------------------------------------
# sweep


def test_sweep_grid_matches_evaluate():
    dec = sr.workloads.decode(sr.models.get("seed-6.4b"), batch=B, context=S)
    Bs = np.arange(1, 1001)
    Ss = np.arange(1, 1001) * 64
    grid = sr.sweep(dec.intensity, {B: Bs[:, None], S: Ss[None, :]}, subs={b: 2})
    assert grid.shape == (1000, 1000)
    rng = random.Random(21)
    for _ in range(200):
        i, j = rng.randrange(1000), rng.randrange(1000)
        exact = sr.evaluate(dec.intensity, {B: int(Bs[i]), S: int(Ss[j]), b: 2})
        assert grid[i, j] == pytest.approx(float(exact), rel=1e-12)
    # corners, by hand: 2B(S + 24576)/(2(BS + 24576))
    for i, j in ((0, 0), (999, 999), (0, 999), (999, 0)):
        Bv, Sv = int(Bs[i]), int(Ss[j])
        assert grid[i, j] == pytest.approx(float(Fraction(Bv * (Sv + 24576), Bv * Sv + 24576)),
                                           rel=1e-12)
    # the seed's ceiling: every entry at S = 1024 is below 25 and rises with B
    col = sr.sweep(dec.intensity, {"B": Bs}, subs={S: 1024, b: 2})
    assert (col < 25).all() and (np.diff(col) > 0).all()


def test_sweep_missing_symbol_is_named():
    gv = sr.workloads.gemv(N, K)
    with pytest.raises(SymroofError, match=r"no values for K, b"):
        sr.sweep(gv.intensity, {N: np.arange(3)})
    with pytest.raises(SymroofError, match=r"\bb\b"):
        sr.sweep(gv.intensity, {N: np.arange(1, 4), K: np.arange(1, 4)})
    # a constant needs no grid
    assert float(sr.sweep(sp.Integer(3), {})) == 3.0


# ---------------------------------------------------------------------------
# roofline


def test_roofline_gemv_h100():
    r = sr.roofline(sr.workloads.gemv(N, K), "h100-sxm", subs={N: 8192, K: 8192})
    assert r.peak == R(H100_BF16) and r.bandwidth == R(H100_HBM) and r.ridge == R(H100_RIDGE)
    assert r.bound == "memory"
    intensity = Fraction(2 * 8192 * 8192, 2 * (8192 * 8192 + 8192 + 8192))   # 8192/8194
    assert r.intensity == R(intensity)
    assert r.margin == R(H100_RIDGE / intensity)
    assert float(r.margin) == pytest.approx(295.4, rel=1e-3)
    assert r.time_s == r.memory_time_s == R(Fraction(2 * (8192 * 8192 + 2 * 8192)) / H100_HBM)
    assert r.tokens_per_s is None


def test_roofline_llama_3_8b_decode_h100():
    m = sr.models.get("llama-3-8b")
    dec = sr.workloads.decode(m, batch=B, context=S)
    r = sr.roofline(dec, "h100-sxm", subs={B: 32, S: 2048})
    # engine, checked against config.json arithmetic: L=32, D=4096, kv_dim=1024,
    # d_ff=14336, vocab=128256, untied embeddings; the input embedding is a gather
    # (B rows read), norms are weights read but not GEMM operands
    Lc, Dc, kv, ff, V, Bc, Sc = 32, 4096, 1024, 14336, 128256, 32, 2048
    gemm_w = Lc * (2 * Dc * Dc + 2 * Dc * kv + 3 * Dc * ff) + Dc * V
    norms = Dc * (2 * Lc + 1)
    assert m.params == gemm_w + norms + V * Dc == 8030261248
    weight_bytes = 2 * (gemm_w + norms) + 2 * Bc * Dc
    kv_bytes = 2 * Lc * kv * 2 * Sc * Bc            # K and V, L layers, kv_dim, 2 bytes, S, B
    assert kv_bytes == 8_589_934_592
    assert r.bytes == weight_bytes + kv_bytes == 23_600_046_080
    assert float(r.bytes) == pytest.approx(23.6e9, rel=1e-3)
    assert r.flops == Bc * (2 * gemm_w + 4 * Lc * Sc * Dc) == 514_657_878_016
    assert r.bound == "memory"
    assert r.intensity == R(Fraction(r.flops, r.bytes))
    assert float(r.intensity) == pytest.approx(21.81, rel=1e-3)
    t = Fraction(int(r.bytes)) / H100_HBM
    assert r.time_s == R(t)
    assert float(r.time_s) == pytest.approx(7.045e-3, rel=1e-3)
    assert float(r.tokens_per_s) == pytest.approx(4542, rel=1e-3)
    assert r.tokens_per_s == R(Bc / t)
    assert r.time_serial_s == r.time_s + r.compute_time_s
    assert r.time_serial_s < 2 * r.time_s
    # per tensor kind, before numbers
    q = dec.bytes_by_kind
    assert sr.evaluate(q[Kind.KV_CACHE], {B: 32, S: 2048, b: 2}) == kv_bytes

    # The seed's worked example ("FLOPs = 547 GFLOPs, Bytes = 16e9 + 2*32*8*128*2*2048*32
    # = 16e9 + 4.3e9 = 20.3 GB, I = 27, T = 6.06 ms, 5,280 tok/s") has an arithmetic error:
    # its own KV product is 8.59e9 bytes (2^33), not the 4.3e9 (2^32) it prints.
    seed_flops = 32 * (2 * 8 * 10**9 + 4 * 32 * 2048 * 4096)
    assert float(seed_flops) == pytest.approx(547e9, rel=2e-3)
    seed_kv = 2 * 32 * 8 * 128 * 2 * 2048 * 32
    assert seed_kv == kv_bytes == 2**33
    assert seed_kv == pytest.approx(2 * 4.3e9, rel=0.01)       # twice what it prints
    printed = dict(bytes=20.3e9, intensity=27, t=6.06e-3, tps=5280)
    assert seed_flops / printed["bytes"] == pytest.approx(printed["intensity"], rel=0.01)
    assert printed["bytes"] / float(H100_HBM) == pytest.approx(printed["t"], rel=1e-3)
    assert 32 / printed["t"] == pytest.approx(printed["tps"], rel=1e-3)
    corrected = 16 * 10**9 + seed_kv                         # 24.59 GB
    assert corrected == pytest.approx(24.59e9, rel=1e-3)
    assert seed_flops / corrected == pytest.approx(22.22, rel=1e-3)
    assert corrected / float(H100_HBM) == pytest.approx(7.34e-3, rel=1e-3)
    # the engine sits below the corrected seed by the weights it does not read
    # (8.03e9 real parameters, 1.05e9 of them an embedding table gathered row by row)
    assert float(r.bytes) == pytest.approx(corrected, rel=0.05)
    assert float(r.bytes) != pytest.approx(printed["bytes"], rel=0.1)


def test_roofline_precision_and_symbols():
    dec = sr.workloads.decode(sr.models.get("llama-3-8b"), batch=B, context=S)
    r16 = sr.roofline(dec, "h100-sxm", subs={B: 32, S: 2048})
    r8 = sr.roofline(dec, "h100-sxm", precision="fp8", subs={B: 32, S: 2048})
    assert r8.bytes * 2 == r16.bytes and r8.flops == r16.flops
    assert r16.peak == R(H100_BF16)
    assert r8.peak == R(Fraction("1978.9") * 10**12)      # dense FP8, datasheet
    # free symbols: expressions, no bound
    rs = sr.roofline(dec, "h100-sxm", subs={S: 2048})
    assert rs.bound is None and rs.flops.free_symbols == {B}
    with pytest.raises(SymroofError):
        sr.roofline(dec.intensity, "h100-sxm")


# ---------------------------------------------------------------------------
# serving figures, the link roof and the memory fit (issue 11)


def test_one_device_roofline_keeps_its_meaning():
    """Without communication, time_s is max(F/peak, Q/bandwidth) exactly as before, and
    the serving figures reduce to it."""
    r = sr.roofline(sr.workloads.decode(sr.models.get("llama-3-8b"), B, S), "h100-sxm",
                    subs={B: 32, S: 2048})
    assert r.communication == 0 and r.communication_time_s == 0 and r.link is None
    assert r.time_s == sp.Max(r.compute_time_s, r.memory_time_s)
    assert r.time_overlapped_s == r.time_s == r.step_time_s
    assert r.tokens_per_s == r.tokens / r.time_s and r.sequences == 32
    assert r.tokens_per_sequence == 1 and r.tokens_per_s_per_user == 1 / r.time_s
    assert (r.tp, r.pp, r.microbatches, r.bubble, r.efficiency) == (1, 1, 1, 0, 1)
    assert r.limiter == "memory" and r.fits is True
    gemm = sr.roofline(sr.workloads.gemm(M, N, K), "h100-sxm", subs={M: 8, N: 8, K: 8})
    assert gemm.tokens_per_s_per_user is None and gemm.sequences is None


def test_memory_footprint_parts_by_hand():
    """Weights, KV cache and the largest kernel's activations of a decode step, counted
    from the model's config numbers (Llama-3-8B, bf16, B = 32, S = 2048)."""
    m = sr.models.get("llama-3-8b")
    r = sr.roofline(sr.workloads.decode(m, 32, 2048), "h100-sxm")
    assert r.memory.weights == m.params * 2                    # every table is held
    assert r.memory.kv_cache == 2 * 32 * 8 * 128 * 2 * 2048 * 32
    # the largest kernel: the LM head, reading 32 x 4096 and writing 32 x 128256 logits
    assert r.memory.activations == (32 * 4096 + 32 * 128256) * 2
    assert r.memory.capacity == 80 * 10**9 and r.memory.fits
    big = sr.roofline(sr.workloads.decode(sr.models.get("llama-3-70b"), 32, 2048), "h100-sxm")
    assert big.fits is False and big.memory.total > 80 * 10**9  # 141 GB of weights alone
    held = sr.roofline(sr.workloads.decode(m, 32, 2048), "h100-sxm", reserve=R(Fraction(7, 10)))
    assert held.memory.usable == 24 * 10**9 and held.fits is False
    free = sr.roofline(sr.workloads.decode(m, B, S), "h100-sxm")
    assert free.fits is None                                    # B, S free: undecided


def test_link_roof_and_pipeline_step():
    """A sharded step adds its communication to the overlapped memory/compute time; a
    pipelined step is (m + p - 1) micro-batch times at the efficiency."""
    m = sr.models.get("llama-3-8b")
    r = sr.roofline(sr.workloads.decode(m, 8, 1024, tp=4, pp=2, microbatches=2), "h100-sxm",
                    efficiency=R(Fraction(1, 2)))
    assert (r.tp, r.pp, r.microbatches) == (4, 2, 2) and r.link == "nvlink"
    assert r.link_bandwidth == 450 * 10**9
    assert r.link_latency_s > 0                                 # NCCL's latency, by default
    assert r.time_s == sp.Max(r.compute_time_s, r.memory_time_s) + \
        r.communication / (450 * 10**9) + r.link_latency_s
    assert r.bubble == sp.Rational(1, 3)
    assert r.step_time_s == 3 * r.time_s * 2                   # (2 + 2 - 1) runs, at 1/2
    assert r.tokens == 4 and r.tokens_per_s == 8 / r.step_time_s
    assert r.tokens_per_s_per_user == 1 / r.step_time_s
    pcie = sr.roofline(sr.workloads.decode(m, 8, 1024, tp=4), "h100-sxm", link="pcie")
    assert pcie.link_bandwidth == 64 * 10**9
    with pytest.raises(SymroofError, match="link 'ib'.*expected one of nvlink, pcie"):
        sr.roofline(sr.workloads.decode(m, 8, 1024, tp=4), "h100-sxm", link="ib")

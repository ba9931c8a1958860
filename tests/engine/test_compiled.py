"""The compiled numeric path (symroof/compiled/) against the exact one (issue 16).

Every float is compared with the exact path's number at the same point, computed
independently (``roofline(subs=)`` in rationals, then ``float``), to 1e-12 relative over
a seeded sample of workloads, chips, precisions and points; the rows of ``points``
against ``evaluate.points`` row by row, errors included. No test times anything.
"""

from __future__ import annotations

import random

import numpy as np
import pytest
import sympy as sp

import symroof as sr
from symroof import compiled
from symroof.compiled import lambdified
from symroof.errors import SymroofError
from symroof.evaluate import Point, evaluate, points as exact_points, roofline
from symroof.symbols import B, D, H, L, N, S, b, dim, n

RTOL = 1e-12
SYM = sr.models.transformer(layers=L, d_model=D, heads=H)
SHAPE = {L: 24, D: 2048, H: 16}   # the symbolic model at numbers, given in the grid


def _cases() -> list[tuple[str, sr.Analysis, dict[sp.Symbol, tuple[int, int]]]]:
    """(name, workload, symbol -> range of values) for the seeded sample."""
    w, m = sr.workloads, sr.models
    dims = {B: (1, 256), S: (1, 8192)}
    return [
        ("llama-2-7b decode", w.decode(m.get("llama-2-7b"), B, S), dims),
        ("llama-3-70b decode", w.decode(m.get("llama-3-70b"), B, S), dims),
        ("llama-3-8b prefill", w.prefill(m.get("llama-3-8b"), B, S), dims),
        ("symbolic training", w.training(SYM, B, S),
         {**dims, **{k: (v, v) for k, v in SHAPE.items()}}),
        ("gemm", w.gemm(n, n, n), {n: (1, 1 << 14)}),
        ("gemv", w.gemv(N, n), {N: (1, 1 << 14), n: (1, 1 << 14)}),
        ("attention unfused", w.attention(S, D, H, fused=False),   # D = H * head_dim
         {S: (1, 8192), H: (1, 64), D: (64, 256)}),
    ]


CASES = _cases()
FIGURES = ("flops", "bytes", "intensity", "tokens", "compute_time_s", "memory_time_s",
           "time_s", "time_serial_s", "attainable", "tokens_per_s")


def _close(got: float, exact: sp.Expr) -> bool:
    want = float(exact)
    return abs(got - want) <= RTOL * abs(want)


@pytest.mark.parametrize("name,wl,ranges", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("hw,precision", [("h100-sxm", "bf16"), ("a100-80gb", "fp32"),
                                          ("mi300x", "fp8")])
def test_rooflines_agree_with_the_exact_path(name: str, wl: sr.Analysis,
                                             ranges: dict[sp.Symbol, tuple[int, int]],
                                             hw: str, precision: str) -> None:
    rng = random.Random(f"{name}/{hw}/{precision}")
    count = 12
    grid = {k: np.array([rng.randint(lo, hi) for _ in range(count)]) for k, (lo, hi) in
            ranges.items()}
    if D in grid and H in grid and name.startswith("attention"):
        grid[D] = grid[D] * grid[H]  # heads divide the model width
    if wl is CASES[2][1] and precision == "fp8":
        grid[b] = np.full(count, 2)  # the grid may give b itself (fp8 peak, bf16 values)
    r = compiled.rooflines(wl, hw, grid, precision=precision)
    names = [f for f in FIGURES if "tokens" not in f or wl.tokens is not None]
    got = dict(zip(names, r.figures(*names)))
    bound = r.bound
    for i in range(count):
        subs = {k: int(v[i]) for k, v in grid.items()}
        exact = roofline(wl, hw, precision=precision, subs=subs)
        for f in names:
            assert _close(float(got[f][i]), getattr(exact, f)), (f, subs)
        assert bound[i] == exact.bound


def test_a_grid_broadcasts_and_the_figures_come_by_name() -> None:
    wl = CASES[0][1]
    Bs, Ss = np.arange(1, 17)[:, None], np.arange(128, 3841, 128)[None, :]
    r = compiled.rooflines(wl, "h100-sxm", {"B": Bs, "S": Ss})
    assert r.time_s.shape == r.tokens_per_s.shape == (16, 30)
    exact = roofline(wl, "h100-sxm", subs={B: 16, S: 3840})
    assert _close(float(r.time_s[15, 29]), exact.time_s)
    assert np.all(r.tokens_per_s == pytest.approx(np.broadcast_to(Bs, (16, 30)) / r.time_s,
                                                  rel=RTOL))
    with pytest.raises(SymroofError, match="'ridges' is not a numeric figure"):
        r.figures("ridges")


def test_bound_at_the_ridge_is_decided_exactly() -> None:
    # L4: 121 TFLOP/s bf16 over 300 GB/s, a ridge of 1210/3; a square GEMM at b = 2 has
    # I = n/3, so n = 1210 sits exactly on it and its neighbours on either side
    wl = sr.workloads.gemm(n, n, n)
    assert sr.hardware.get("l4").ridge("bf16") == sp.Rational(1210, 3)
    r = compiled.rooflines(wl, "l4", {n: np.array([1209, 1210, 1211])})
    assert r.bound.tolist() == ["memory", "balanced", "compute"]
    assert [roofline(wl, "l4", subs={n: k}).bound for k in (1209, 1210, 1211)] == \
        r.bound.tolist()


def test_grid_values_are_checked_as_the_exact_path_checks_them() -> None:
    wl = CASES[0][1]
    with pytest.raises(SymroofError, match="'Q' is not a symbol of 'llama-2-7b-decode'"):
        compiled.rooflines(wl, "h100-sxm", {"Q": np.arange(1, 3)})
    with pytest.raises(SymroofError, match="value of B: expected a positive integer"):
        compiled.rooflines(wl, "h100-sxm", {B: np.array([1, 0]), S: 8})
    with pytest.raises(SymroofError, match="value of S: expected a positive integer"):
        compiled.rooflines(wl, "h100-sxm", {B: 1, S: np.array([8.5])})
    with pytest.raises(SymroofError, match="no values for S"):
        compiled.rooflines(wl, "h100-sxm", {B: np.arange(1, 4)})
    with pytest.raises(SymroofError, match="expected a workload"):
        compiled.rooflines("decode", "h100-sxm", {})  # type: ignore[arg-type]
    with pytest.raises(SymroofError, match="unknown hardware"):
        compiled.rooflines(wl, "h100", {B: 1, S: 1})
    R = dim("R")
    conv = sr.workloads.conv2d(1, 1, H, H, 1, R)    # a kernel larger than its input
    with pytest.raises(SymroofError, match=r"H - R \+ 1 is -1 at H=3, R=5"):
        compiled.rooflines(conv, "h100-sxm", {H: np.array([8, 3]), R: np.array([3, 5])})


def test_points_are_the_exact_rows_in_floats() -> None:
    wl = CASES[0][1]
    rows = [{B: sp.Integer(x), S: sp.Integer(y), b: sp.Integer(2)}
            for x in (1, 8, 64) for y in (1, 512, 4096)]
    got = list(compiled.points(wl, rows, hw="h100-sxm"))
    want = list(exact_points(wl, rows, hw="h100-sxm"))
    assert len(got) == len(want) == 9
    for g, w in zip(got, want):
        assert type(g) is Point and g.values == w.values
        assert (g.flops, g.bytes) == (w.flops, w.bytes)  # counts below 2**53 come out exact
        assert isinstance(g.intensity, sp.Float) and float(g.intensity) == float(w.intensity)
        assert g.roofline is not None and w.roofline is not None
        for f in (*FIGURES, "time_overlapped_s", "step_time_s", "tokens_per_s_per_user",
                  "margin"):
            if getattr(w.roofline, f, None) is not None:
                assert _close(float(getattr(g.roofline, f)), getattr(w.roofline, f)), f
        for f in ("bound", "limiter", "fits", "hardware", "level", "peak", "ridge", "tp"):
            assert getattr(g.roofline, f, None) == getattr(w.roofline, f, None), f
        if w.roofline.memory is not None:
            assert _close(float(g.roofline.memory.total), w.roofline.memory.total)
    plain = list(compiled.points(wl, rows[:2]))   # no chip: F, Q, I only
    assert plain[0].roofline is None and _close(float(plain[1].intensity), want[1].intensity)


def test_points_decide_the_bound_exactly_at_the_ridge() -> None:
    wl = sr.workloads.gemm(n, n, n)                # I = n/3 at b = 2; the L4's ridge is 1210/3
    rows = [{n: sp.Integer(k), b: sp.Integer(2)} for k in (1209, 1210, 1211)]
    got = [p.roofline.bound for p in compiled.points(wl, rows, hw="l4")]
    assert got == [p.roofline.bound for p in exact_points(wl, rows, hw="l4")] == \
        ["memory", "balanced", "compute"]


def test_counts_are_exact_only_where_float64_holds_them() -> None:
    wl = sr.workloads.gemm(n, n, n)                       # F = 2n^3, Q = 3n^2 b
    rows = [{n: sp.Integer(1 << 17), b: sp.Integer(2)},   # F = 2**52: exact
            {n: sp.Integer(1 << 18), b: sp.Integer(2)},   # F = 2**55: past 2**53, a Float
            {n: sp.Integer(1 << 17), b: sp.Rational(1, 2)}]  # b not whole: Q a Float
    got = list(compiled.points(wl, rows))
    assert got[0].flops == 2**52 and got[0].flops.is_Integer and got[0].bytes.is_Integer
    assert isinstance(got[1].flops, sp.Float) and float(got[1].flops) == 2.0**55
    assert got[2].flops.is_Integer and isinstance(got[2].bytes, sp.Float)
    assert float(got[2].bytes) == 3 * 2**34 / 2


def test_rows_the_float_path_cannot_answer_are_the_exact_points() -> None:
    wl = CASES[0][1]
    rows = [{B: sp.Integer(4), S: sp.Integer(100)},          # b left free: F, Q in b
            {B: sp.Integer(2), S: 2 * n},                    # an expression as a value
            {B: sp.Integer(4), S: sp.Integer(100), b: sp.Integer(1)}]
    got = list(compiled.points(wl, rows))
    assert got[0].flops == evaluate(wl.flops, rows[0]) and got[0].bytes.has(b)
    assert got[1].flops == evaluate(wl.flops, rows[1])       # exact, in n
    assert got[2].flops == evaluate(wl.flops, rows[2]) and isinstance(got[2].intensity, sp.Float)


@pytest.mark.parametrize("bad,message", [
    ({sp.Symbol("B"): sp.Integer(1)}, "is not the B of the expression"),
    ({B: sp.Integer(0), S: sp.Integer(1), b: sp.Integer(2)}, "expected a positive integer"),
    ({B: sp.Integer(1), N: sp.Integer(1), b: sp.Integer(2)}, "is not a symbol of"),
])
def test_bad_rows_raise_the_exact_paths_error(bad: dict[sp.Symbol, sp.Expr], message: str
                                              ) -> None:
    wl = CASES[0][1]
    good = {B: sp.Integer(1), S: sp.Integer(2), b: sp.Integer(2)}
    with pytest.raises(SymroofError, match=message) as want:
        list(exact_points(wl, [good, bad], hw="h100-sxm"))
    with pytest.raises(SymroofError) as got:
        list(compiled.points(wl, [good, bad], hw="h100-sxm"))
    assert str(got.value) == str(want.value)


def test_sweep_agrees_with_exact_evaluation() -> None:
    dec = CASES[0][1]
    rng = np.random.default_rng(16)
    Bs, Ss = rng.integers(1, 512, 40), rng.integers(1, 32768, 40)
    got = sr.sweep(dec.intensity, {B: Bs, "S": Ss}, subs={b: 2})
    for i in range(40):
        assert _close(float(got[i]), evaluate(dec.intensity, {B: int(Bs[i]), S: int(Ss[i]),
                                                               b: 2}))
    # a value that is an expression is substituted exactly first
    with pytest.raises(SymroofError, match="no values for D"):
        sr.sweep(2 * n / (3 * b), {n: np.array([3.0])}, subs={b: 2 * D})
    assert sr.sweep(2 * n / (3 * b), {n: np.array([3.0]), D: np.array([1.0])},
                    subs={b: 2 * D}).tolist() == [1.0]


def test_sweep_refuses_points_where_the_formula_is_undefined() -> None:
    with pytest.raises(SymroofError, match="undefined at n=2"):
        sr.sweep(1 / (n - 2), {n: np.array([1.0, 2.0, 3.0])})
    with pytest.raises(SymroofError, match="past float64's range"):
        sr.sweep(n**200, {n: np.array([10.0**5])})


def test_min_and_max_broadcast() -> None:
    e = sp.Min(S, 4096) * B + sp.Max(B, 2, S / 1024)
    got = sr.sweep(e, {B: np.arange(1, 4)[:, None], S: np.array([100, 8192])[None, :]})
    want = [[float(e.subs({B: x, S: y})) for y in (100, 8192)] for x in (1, 2, 3)]
    assert got.tolist() == want


def test_equal_expressions_share_one_compiled_function(monkeypatch: pytest.MonkeyPatch) -> None:
    compiled.cache_clear()
    one = compiled.function((2 * n / (3 * b),), (n, b))
    other = compiled.function((sp.Rational(2, 3) * n * b**-1,), (n, b))  # built apart, equal
    assert one is other and compiled.cache_info()[:3] == (1, 1, 1)
    assert compiled.function((2 * n / (3 * b),), (b, n)) is not one   # argument order counts
    monkeypatch.setattr(lambdified, "MAXSIZE", 2)
    for k in range(5):
        compiled.function((n + k,), (n,))
    assert compiled.cache_info().size == 2                            # least recent dropped
    assert compiled.function((n + 4,), (n,)) is compiled.function((n + 4,), (n,))


def test_blocks_run_the_same_function_on_dask_chunks() -> None:
    da = pytest.importorskip("dask.array")
    dec = CASES[0][1]
    Bs = da.arange(1, 101, chunks=25)[:, None]
    Ss = da.arange(64, 64 * 51, 64, chunks=10)[None, :]
    lazy = compiled.blocks(dec.intensity, {B: Bs, S: Ss}, subs={b: 2})
    assert lazy.shape == (100, 50) and lazy.numblocks == (4, 5)
    want = sr.sweep(dec.intensity, {B: np.arange(1, 101)[:, None],
                                    S: np.arange(64, 64 * 51, 64)[None, :]}, subs={b: 2})
    assert np.allclose(lazy.compute(scheduler="synchronous"), want, rtol=RTOL, atol=0)
    with pytest.raises(SymroofError, match="subs must give numbers"):
        compiled.blocks(dec.intensity, {B: Bs, S: Ss}, subs={b: D})


def test_hardware_names_are_listed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    sr.hardware.get("h100-sxm")                 # listed and loaded once already

    def no_listing(*args: object) -> object:
        raise AssertionError("the hardware package was listed again")

    monkeypatch.setattr(sr.hardware.resources, "files", no_listing)
    assert sr.hardware.get("h100-sxm").name == "h100-sxm"
    assert "h100-sxm" in sr.hardware.names()
    with pytest.raises(SymroofError, match="unknown hardware 'h100-sxn'.*h100-sxm"):
        sr.hardware.get("h100-sxn")               # the message is made when raised

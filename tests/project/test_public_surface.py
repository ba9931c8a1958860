"""The public surface DESIGN.md promises (users' code calls these names); copied from it."""

from __future__ import annotations

import symroof as sr
from symroof.symbols import B, D, H, K, L, M, N, S, b
from symroof.testing import assert_formula_equal


def test_design_public_surface():
    g = sr.Graph("mlp")                                    # custom graphs
    x = g.input("x", (B, D))                               # an activation
    w = g.weight("W1", (D, 4 * D))
    h = g.gemm(x, w, name="up")
    y = g.elementwise(h, name="gelu", flops_per_element=8)
    g.output(y)
    a = sr.analyze(g)
    assert_formula_equal(a.flops, 8 * B * D**2 + 32 * B * D)
    assert set(a.bytes_by_kind) == {sr.Kind.ACTIVATION, sr.Kind.WEIGHT}
    assert a.intensity.free_symbols == {B, D, b}
    t = sr.analyze(sr.passes.tile(g, {B: 128, D: 128}))
    assert t.flops == a.flops
    for p in (sr.passes.fuse, sr.passes.tile, sr.passes.backward):
        assert callable(p)

    mm = sr.workloads.gemm(M, N, K)
    assert_formula_equal(mm.flops, 2 * M * N * K)
    assert mm.bytes is not None and mm.intensity is not None
    m = sr.models.get("seed-6.4b")
    assert m.params == 12 * 32 * 4096**2
    m = sr.models.transformer(layers=L, d_model=D, heads=H, d_ff=4 * D)
    dec = sr.workloads.decode(m, batch=B, context=S)
    assert_formula_equal(sr.limit(dec.intensity, B), (12 * D / S + 2) / b)
    (c,) = sr.crossover(dec.flops_by_operand["activation"], dec.flops_by_operand["weight"], S)
    assert_formula_equal(c.value, 6 * D)
    hw = sr.hardware.get("h100-sxm")
    r = sr.roofline(sr.workloads.decode(sr.models.get("seed-6.4b"), batch=B, context=S), hw,
                    precision="bf16", subs={B: 32, S: 2048})
    assert r.bound == "memory" and r.time_s > 0 and r.tokens_per_s > 0
    assert_formula_equal(sr.memory(m, batch=B, context=S).kv_cache, 2 * L * D * b * B * S)
    n = sr.capacity(sr.models.get("llama-3-70b"), hw, context=8192, tp=4)
    assert n > 0
    assert callable(sr.models.from_hf_config)

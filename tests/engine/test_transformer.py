"""Prefill and decode of transformer models (symroof.workloads.transformer) against the seeds.

Seed 000 section 4 (decode with a KV cache), the Kaplan per-token count and its
49,000-token crossover, seed 001's per-layer FLOP list and its prefill approximation.
Every engine figure is compared with a closed form typed in from the seeds, with
``sympy.limit`` for the asymptotes, or with a numeric loop.
"""

from __future__ import annotations

from fractions import Fraction

import pytest
import sympy as sp

from symroof.testing import assert_formula_equal
import symroof as sr
from symroof.errors import SymroofError
from symroof.ir import Kind
from symroof.models import get, transformer
from symroof.symbols import B, D, G, H, L, S, V, b, bytes_symbol, d_ff, d_h, dim
from symroof.workloads.transformer import decode, prefill

P_SEED = 12 * L * D**2
SEED_NUM = {L: 32, D: 4096, S: 1024, b: 2}




@pytest.fixture(scope="module")
def seed_model():
    return transformer(layers=L, d_model=D, heads=H)


@pytest.fixture(scope="module")
def seed_decode(seed_model):
    return decode(seed_model, B, S)


# ---------------------------------------------------------------------------
# decode, the seeds' convention (weights + KV cache; activations resident)


def test_decode_flops_and_bytes_symbolic(seed_decode):
    # seed 000: F = B (2P + 4 L S D),  Q = b P + 2 b B L S D, P = 12 L D^2
    assert_formula_equal(seed_decode.flops, B * (2 * P_SEED + 4 * L * S * D))
    assert_formula_equal(seed_decode.bytes, b * P_SEED + 2 * b * B * L * S * D)
    assert_formula_equal(seed_decode.bytes_by_kind[Kind.WEIGHT], b * P_SEED)
    assert_formula_equal(seed_decode.bytes_by_kind[Kind.KV_CACHE], 2 * b * B * L * S * D)
    assert Kind.ACTIVATION not in seed_decode.bytes_by_kind


def test_decode_intensity_at_batch_1_is_2_over_b(seed_decode):
    # "At B = 1, I ~ 2/b": for this model it is exact
    assert_formula_equal(seed_decode.intensity.subs(B, 1), 2 / b)
    assert seed_decode.intensity.subs({**SEED_NUM, B: 1}) == 1


def test_decode_intensity_seed_values(seed_decode):
    i64 = seed_decode.intensity.subs({**SEED_NUM, B: 64})
    # second computation: the seeds' numbers in exact fractions
    p = 12 * 32 * 4096**2
    f = 64 * (2 * p + 4 * 32 * 1024 * 4096)
    q = 2 * p + 2 * 2 * 64 * 32 * 1024 * 4096
    assert i64 == Fraction(f, q)
    assert float(i64) == pytest.approx(18.18, rel=1e-3)
    assert float(i64) == pytest.approx(18, abs=0.5)   # "With B = 64: I ~ 18"
    # B = 1: "(13.42 x 10^9) / (13.42 x 10^9) ~ 1.0"
    f1 = seed_decode.flops.subs({**SEED_NUM, B: 1})
    q1 = seed_decode.bytes.subs({**SEED_NUM, B: 1})
    assert float(f1) == pytest.approx(13.42e9, rel=1e-3)
    assert float(q1) == pytest.approx(13.42e9, rel=1e-3)


def test_decode_preset_equals_symbolic(seed_decode):
    preset = decode(get("seed-6.4b"), B, S)
    assert_formula_equal(preset.flops, seed_decode.flops.subs({L: 32, D: 4096}))
    assert_formula_equal(preset.bytes, seed_decode.bytes.subs({L: 32, D: 4096}))


def test_decode_limit_in_batch(seed_decode):
    expected = (12 * D / S + 2) / b
    engine = sr.limit(seed_decode.intensity, B)
    second = sp.limit(seed_decode.intensity, B, sp.oo)     # independent: SymPy's limit
    assert_formula_equal(engine, expected)
    assert_formula_equal(second, expected)
    # the seed's intermediate form (2P + 4LSD) / (2 b L S D)
    assert_formula_equal(expected, (2 * P_SEED + 4 * L * S * D) / (2 * b * L * S * D))
    assert engine.subs(SEED_NUM) == 25
    # numerically: a huge batch sits just under the ceiling
    assert float(seed_decode.intensity.subs({**SEED_NUM, B: 10**9})) == pytest.approx(25, rel=1e-6)


def test_decode_batch_512_at_8192_context_levels_off(seed_decode):
    # seed exercise: push B to 512 at S = 1,024 and 8,192; the ceiling is (12D/S + 2)/b
    for s, ceiling in ((1024, 25), (8192, 4)):
        vals = {L: 32, D: 4096, S: s, b: 2}
        assert (sp.limit(seed_decode.intensity.subs(vals), B, sp.oo)) == ceiling
        assert float(seed_decode.intensity.subs({**vals, B: 512})) < ceiling


def test_decode_gqa_divides_kv_term():
    mha = decode(transformer(layers=L, d_model=D, heads=H), B, S)
    gqa = decode(transformer(layers=L, d_model=D, heads=H, kv_heads=G), B, S)
    assert_formula_equal(gqa.bytes_by_kind[Kind.KV_CACHE], 2 * b * B * L * S * D * G / H)
    assert_formula_equal(mha.bytes_by_kind[Kind.KV_CACHE] / gqa.bytes_by_kind[Kind.KV_CACHE], H / G)
    # attention FLOPs still count all H query heads: 4 L S D per token
    assert_formula_equal(sp.Poly(sp.expand(gqa.flops), S).coeff_monomial(S), 4 * B * L * D)
    # the ceiling rises: the weight term over the smaller KV term
    p_gqa = L * (2 * D**2 + 2 * D * G * D / H + 8 * D**2)
    ceiling = sp.limit(gqa.intensity, B, sp.oo)
    assert_formula_equal(ceiling, (2 * p_gqa + 4 * L * S * D) / (2 * b * L * S * D * G / H))
    assert_formula_equal(sr.limit(gqa.intensity, B), ceiling)


def test_decode_mqa_raises_ceiling_by_heads():
    vals = {L: 32, D: 4096, S: 1024, b: 2}
    mha = decode(transformer(layers=32, d_model=4096, heads=32), B, S)
    mqa = decode(transformer(layers=32, d_model=4096, heads=32, kv_heads=1), B, S)
    # the attention part of the ceiling (2/b from 4LSD / 2bLSD) grows 32-fold
    c_mha = sp.limit(mha.intensity.subs(vals), B, sp.oo)
    c_mqa = sp.limit(mqa.intensity.subs(vals), B, sp.oo)
    assert c_mha == 25
    assert c_mqa > 25 * 16


def test_decode_full_traffic_adds_activations(seed_model, seed_decode):
    full = decode(seed_model, B, S, traffic="full")
    assert_formula_equal(full.flops, seed_decode.flops)
    extra = sp.expand(full.bytes - seed_decode.bytes)
    assert_formula_equal(extra, full.bytes_by_kind[Kind.ACTIVATION])
    # hand count per layer, in units of B D b (one new token per sequence):
    # q/k/v proj read x and write q, k, v (6); scores reads q (1); pv writes o (1);
    # o_proj reads o, writes a (2); residual reads x, a, writes x' (3);
    # up reads x', writes 4D (5); gelu reads and writes 4D (8); down reads 4D, writes D (5);
    # residual reads x', y, writes (3)  ->  34
    assert_formula_equal(extra, 34 * B * D * L * b)
    assert_formula_equal(full.bytes_by_kind[Kind.WEIGHT], seed_decode.bytes_by_kind[Kind.WEIGHT])
    assert_formula_equal(full.bytes_by_kind[Kind.KV_CACHE], seed_decode.bytes_by_kind[Kind.KV_CACHE])


def test_decode_kv_write_adds_new_entries():
    b_kv = bytes_symbol("b_kv")
    m = transformer(layers=L, d_model=D, heads=H, kv_heads=G, head_dim=d_h).replace(kv_bytes=b_kv)
    base = decode(m, B, S)
    written = decode(m, B, S, kv_write=True)
    # one new K and one new V row per layer, per sequence: 2 L G d_h B b_kv
    assert sp.expand(written.bytes - base.bytes) == sp.expand(2 * L * G * d_h * B * b_kv)
    assert_formula_equal(written.flops, base.flops)


def test_decode_past_is_context_minus_one(seed_model):
    p = dim("p")
    for kw in ({}, {"traffic": "full"}, {"kv_write": True}):
        a, c = decode(seed_model, B, past=p, **kw), decode(seed_model, B, p + 1, **kw)
        assert_formula_equal(a.flops, c.flops)
        assert_formula_equal(a.bytes, c.bytes)
    assert decode(get("seed-6.4b"), 2, past=7).flops == decode(get("seed-6.4b"), 2, 8).flops


def test_decode_needs_exactly_one_of_context_and_past(seed_model):
    with pytest.raises(SymroofError):
        decode(seed_model, B)
    with pytest.raises(SymroofError):
        decode(seed_model, B, S, past=S)
    with pytest.raises(SymroofError):
        decode(seed_model, B, S, traffic="some")


def test_decode_flops_per_token_do_not_depend_on_batch(seed_decode):
    assert B not in sp.cancel(seed_decode.flops / B).free_symbols
    assert seed_decode.tokens == B


# ---------------------------------------------------------------------------
# seed 001: per layer, per token, gated MLP with GQA


def test_seed_001_per_op_flops_gated_gqa():
    m = transformer(layers=L, d_model=D, heads=H, kv_heads=G, head_dim=d_h, d_ff=d_ff,
                    mlp="gated", vocab=V)
    dec = decode(m, 1, S)
    ops = {k: sp.expand(c.flops) for k, c in dec.per_op.items()}
    per_layer = {k: sp.cancel(v / L) for k, v in ops.items()}
    d, d_kv = D, G * d_h
    # QKV projection: 2 d (d + 2 d_kv), with d = n_heads d_head
    qkv = per_layer["q_proj"] + per_layer["k_proj"] + per_layer["v_proj"]
    assert_formula_equal(qkv, 2 * d * (H * d_h + 2 * d_kv))
    assert_formula_equal(qkv.subs(d_h, D / H), 2 * d * (d + 2 * G * D / H))
    # attention scores and attention @ V: 2 S d_head n_heads = 2 S d each
    assert_formula_equal(per_layer["scores"], 2 * S * d_h * H)
    assert_formula_equal(per_layer["pv"], 2 * S * d_h * H)
    assert_formula_equal(per_layer["scores"].subs(d_h, D / H), 2 * S * d)
    # output projection 2 d d
    assert_formula_equal(per_layer["o_proj"].subs(d_h, D / H), 2 * d * d)
    # FFN (SwiGLU, 3 matrices): 2 * 3 * d * d_ff
    assert_formula_equal(per_layer["gate"] + per_layer["up"] + per_layer["down"], 2 * 3 * d * d_ff)
    # LM head 2 d V, once (not per layer)
    assert_formula_equal(ops["lm_head"], 2 * d * V)
    # nothing else carries FLOPs under the contraction convention
    rest = set(ops) - {"q_proj", "k_proj", "v_proj", "scores", "pv", "o_proj", "gate", "up",
                       "down", "lm_head"}
    assert all(ops[k] == 0 for k in rest)
    assert_formula_equal(sum(ops.values()), dec.flops)


def test_seed_001_mha_collapses_to_2P_plus_4LSd(seed_model):
    # "For MHA with d_ff = 4d this collapses to 2 P + 4 L S d" (per token)
    dec = decode(seed_model, 1, S)
    assert_formula_equal(dec.flops, 2 * seed_model.params + 4 * L * S * D)


@pytest.mark.parametrize("name,seed_value", [("llama-3-8b", 30_500), ("llama-3-70b", 53_400)])
def test_seed_001_attention_flop_crossover(name, seed_value):
    # 2P = 4 L S d  ->  S = P / (2 L d), with P the model's parameter count
    m = get(name)
    sols = sr.crossover(2 * m.params, 4 * m.layers * S * m.d_model, S)
    assert len(sols) == 1
    value = sols[0].value
    assert value == sp.Rational(m.params, 2 * m.layers * m.d_model)
    assert float(value) == pytest.approx(seed_value, rel=0.01)


# ---------------------------------------------------------------------------
# Kaplan: forward FLOPs per token 2N + 2 n_layer n_ctx d_model


def test_kaplan_per_token_counts(seed_model):
    n = seed_model.params
    # Kaplan's 2 n_layer n_ctx d_model is the causal average: prefill with the masked
    # half skipped gives exactly that per token ...
    pre = prefill(seed_model, B, S, causal="half")
    assert_formula_equal(pre.flops / (B * S), 2 * n + 2 * L * S * D)
    # ... while one decode step at context n_ctx attends to all of it: 4 L S D per token
    dec = decode(seed_model, B, S)
    assert_formula_equal(dec.flops / B, 2 * n + 4 * L * S * D)
    # and the unmasked prefill rectangle also gives 4 L S D per token
    full = prefill(seed_model, B, S, causal=False)
    assert_formula_equal(full.flops / (B * S), 2 * n + 4 * L * S * D)


def test_exact_causal_prefill_is_the_average_of_decode_steps():
    # numeric loop: a prompt of s tokens costs what s decode steps at contexts 1..s cost
    m = get("seed-6.4b")
    for s in (1, 2, 7, 16):
        steps = sum(decode(m, 1, c).flops for c in range(1, s + 1))
        assert prefill(m, 1, s, causal="exact").flops == steps


def test_kaplan_crossover_gpt3_6_7b():
    # "d_model > n_ctx / 12": with N = 12 L D^2 the attention term 2 L n_ctx D equals 2N at
    # n_ctx = N / (L D) = 12 D = 49,152 ("about 49,000") for width 4,096, 32 layers
    m = transformer(layers=32, d_model=4096, heads=32)
    per_token = sp.expand(prefill(m, 1, S).flops / S)
    poly = sp.Poly(per_token, S)
    weights, attn = poly.coeff_monomial(1), poly.coeff_monomial(S) * S
    assert weights == 2 * m.params
    sols = sr.crossover(weights, attn, S)
    assert len(sols) == 1 and sols[0].value == m.params / (32 * 4096) == 12 * 4096 == 49_152
    assert float(sols[0].value) == pytest.approx(49_000, rel=0.01)


def test_kaplan_crossover_gpt3_6_7b_preset_non_embedding():
    # the preset with biases, norms and embeddings: Kaplan's N excludes embeddings
    m = get("gpt3-6.7b")
    embed = m.vocab * m.d_model + m.max_positions * m.d_model
    n = m.params - embed
    assert float(n / (m.layers * m.d_model)) == pytest.approx(49_000, rel=0.01)


# ---------------------------------------------------------------------------
# prefill


def test_prefill_seed_001_approximation(seed_model):
    # "prefill FLOPs ~ 2 P S + 2 L S^2 d" (causal: half the S x S products skipped)
    pre = prefill(seed_model, 1, S)
    assert_formula_equal(pre.flops, 2 * P_SEED * S + 2 * L * S**2 * D)
    assert_formula_equal(prefill(seed_model, B, S).flops, B * pre.flops)
    assert_formula_equal(prefill(seed_model, 1, S, causal=False).flops, 2 * P_SEED * S + 4 * L * S**2 * D)
    assert_formula_equal(prefill(seed_model, 1, S, causal="exact").flops,
                2 * P_SEED * S + 2 * L * S * (S + 1) * D)


def test_prefill_is_compute_bound_decode_is_not(seed_model):
    pre = prefill(seed_model, 1, S).intensity.subs(SEED_NUM)
    dec = decode(seed_model, 1, S).intensity.subs(SEED_NUM)
    assert pre > 100 * dec


def test_prefill_logits_last_vs_all():
    m = transformer(layers=L, d_model=D, heads=H, vocab=V)
    all_, last = prefill(m, B, S), prefill(m, B, S, logits="last")
    assert_formula_equal(all_.flops - last.flops, 2 * B * D * V * (S - 1))
    assert_formula_equal(last.flops, B * (2 * P_SEED * S + 2 * L * S**2 * D) + 2 * B * D * V)
    assert sp.expand(all_.bytes - last.bytes).subs({B: 1, S: 2, D: 8, V: 16, L: 1, b: 2}) > 0
    none = prefill(m, B, S, logits="none")
    assert_formula_equal(none.flops, B * (2 * P_SEED * S + 2 * L * S**2 * D))
    with pytest.raises(SymroofError):
        prefill(m, B, S, logits="first")


def test_prefill_unfused_attention_adds_4hS2b_per_layer(seed_model):
    fused, unfused = prefill(seed_model, B, S), prefill(seed_model, B, S, fused=False)
    assert_formula_equal(fused.flops, unfused.flops)
    assert_formula_equal(unfused.bytes - fused.bytes, 4 * H * S**2 * b * L * B)


def test_prefill_tokens(seed_model):
    assert prefill(seed_model, B, S).tokens == B * S


def test_gated_gqa_prefill_numeric_loop():
    # a numeric second computation: sum the per-layer matmuls of a small llama-like model
    m = transformer(layers=3, d_model=64, heads=4, kv_heads=2, d_ff=160, vocab=128, mlp="gated")
    for batch, s in ((1, 8), (2, 5)):
        t = batch * s
        hd = 16
        per_layer = (2 * t * 64 * (4 * hd + 2 * 2 * hd) + 2 * t * 64 * 64
                     + 2 * (2 * batch * 4 * s * s * hd) + 2 * t * 64 * 160 * 3)
        assert prefill(m, batch, s, causal=False).flops == 3 * per_layer + 2 * t * 64 * 128

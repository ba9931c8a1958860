"""Attention (symroof.workloads.attention) against seed 000, section 3 "Attention, fused and unfused".

Every figure is derived by the engine and checked against a second computation: the
seeds' closed forms typed in here, exact fractions of the seeds' arithmetic, or an
explicit loop over query/key pairs.
"""

from __future__ import annotations

from fractions import Fraction

import pytest
import sympy as sp

from symroof.testing import assert_formula_equal
from symroof.errors import SymroofError
from symroof.ir import Kind
from symroof.symbols import B, D, G, H, S, b
from symroof.workloads.attention import attention, causal_fraction

#: Seed 000's worked example: S = D = 4096, h = 32 heads, b = 2 bytes (16 bits).
SEED = {S: 4096, D: 4096, H: 32, b: 2}
CAUSAL_MODES = (True, "half", "exact", False)




# ---------------------------------------------------------------------------
# fused (FlashAttention)


def test_fused_causal_flops_bytes_intensity_symbolic():
    a = attention(S, D, H)
    # seed: FLOPs of QK^T and PV with the causal half skipped: 2 S^2 D
    assert_formula_equal(a.flops, 2 * S**2 * D)
    # seed: fused traffic, read Q, K, V and write O: 4 S D b
    assert_formula_equal(a.bytes, 4 * S * D * b)
    # seed: I = 2 S^2 D / (4 S D b) = S / (2b)
    assert_formula_equal(a.intensity, S / (2 * b))
    assert_formula_equal(a.intensity, a.flops / a.bytes)


def test_fused_causal_intensity_seed_value_is_1024():
    a = attention(S, D, H)
    value = a.intensity.subs(SEED)
    assert value == 1024
    # second computation: the seeds' arithmetic in exact fractions
    assert Fraction(2 * 4096**2 * 4096, 4 * 4096 * 4096 * 2) == 1024


def test_fused_bytes_do_not_grow_with_s_squared():
    a = attention(S, D, H)
    assert sp.degree(sp.expand(a.bytes), S) == 1
    assert sp.degree(sp.expand(a.flops), S) == 2


# ---------------------------------------------------------------------------
# unfused


def test_unfused_write_and_read_adds_exactly_4hS2b():
    fused, unfused = attention(S, D, H), attention(S, D, H, fused=False)
    assert sp.expand(unfused.bytes - fused.bytes) == 4 * H * S**2 * b
    # the extra traffic is activations (the S x S scores and probabilities)
    assert sp.expand(unfused.bytes_by_kind[Kind.ACTIVATION]
                     - fused.bytes_by_kind[Kind.ACTIVATION]) == 4 * H * S**2 * b


def test_unfused_write_and_read_seed_numbers():
    fused, unfused = attention(S, D, H), attention(S, D, H, fused=False)
    fused_bytes = fused.bytes.subs(SEED)
    extra = sp.expand(unfused.bytes - fused.bytes).subs(SEED)
    # "4.3 GB against 134 MB"
    assert fused_bytes == 134_217_728 == 4 * 4096 * 4096 * 2
    assert extra == 4_294_967_296 == 4 * 32 * 4096**2 * 2
    assert float(extra) == pytest.approx(4.3e9, rel=0.01)
    assert float(fused_bytes) == pytest.approx(134e6, rel=0.01)
    # "intensity drops to about 31 FLOP/B": 2 S^2 D / (4 S D b + 4 h S^2 b) = 1024/33
    value = unfused.intensity.subs(SEED)
    assert value == sp.Rational(1024, 33)
    assert Fraction(2 * 4096**3, 4 * 4096**2 * 2 + 4 * 32 * 4096**2 * 2) == Fraction(1024, 33)
    assert float(value) == pytest.approx(31.03, rel=1e-3)
    assert float(value) == pytest.approx(31, abs=0.5)


def test_unfused_materialize_once_seed_simulation_114():
    fused = attention(S, D, H)
    once = attention(S, D, H, fused=False, unfused="materialize_once")
    # the simulation materializes one S x S matrix per head, written once
    assert sp.expand(once.bytes - fused.bytes) == H * S**2 * b
    value = once.intensity.subs(SEED)
    assert value == Fraction(2 * 4096**3, 4 * 4096**2 * 2 + 32 * 4096**2 * 2)
    assert float(value) == pytest.approx(113.8, rel=1e-3)
    assert float(value) == pytest.approx(114, abs=0.5)   # "land at 114"


@pytest.mark.parametrize("causal", CAUSAL_MODES)
@pytest.mark.parametrize("unfused", ["write_and_read", "materialize_once"])
def test_fusion_changes_bytes_not_flops(causal, unfused):
    fused = attention(S, D, H, causal=causal)
    plain = attention(S, D, H, causal=causal, fused=False, unfused=unfused)
    assert_formula_equal(fused.flops, plain.flops)
    assert sp.expand(plain.bytes - fused.bytes).subs(SEED) > 0


# ---------------------------------------------------------------------------
# causal masking


def test_flops_by_causal_mode():
    assert_formula_equal(attention(S, D, H, causal=False).flops, 4 * S**2 * D)
    assert_formula_equal(attention(S, D, H, causal=True).flops, 2 * S**2 * D)
    assert_formula_equal(attention(S, D, H, causal="half").flops, 2 * S**2 * D)
    # exactly S(S+1)/2 of the S^2 query-key pairs
    assert_formula_equal(attention(S, D, H, causal="exact").flops, 4 * S**2 * D * (S * (S + 1) / 2) / S**2)
    assert_formula_equal(causal_fraction("exact", S), S * (S + 1) / 2 / S**2)
    assert causal_fraction(False, S) == 1 and causal_fraction(True, S) == sp.Rational(1, 2)


def _loop_attention_flops(s: int, heads: int, head_dim: int, causal: bool) -> int:
    """Count FLOPs pair by pair: each (query i, key j) met costs 2*head_dim for its score
    and 2*head_dim for its share of P @ V, per head."""
    total = 0
    for _ in range(heads):
        for i in range(s):
            for j in range(s):
                if causal and j > i:
                    continue
                total += 2 * head_dim + 2 * head_dim
    return total


@pytest.mark.parametrize("s,heads,head_dim", [(7, 2, 3), (5, 3, 4), (1, 1, 8)])
def test_exact_causal_and_full_match_a_pair_loop(s, heads, head_dim):
    d = heads * head_dim
    assert attention(s, d, heads, causal="exact").flops == _loop_attention_flops(s, heads, head_dim, True)
    assert attention(s, d, heads, causal=False).flops == _loop_attention_flops(s, heads, head_dim, False)


def test_causal_modes_half_vs_exact_converge():
    half, exact = attention(S, D, H, causal="half"), attention(S, D, H, causal="exact")
    assert_formula_equal(exact.flops / half.flops, (S + 1) / S)
    assert sp.limit(exact.flops / half.flops, S, sp.oo) == 1


# ---------------------------------------------------------------------------
# grouped-query attention, projections, batch


def test_gqa_divides_kv_bytes_by_heads_per_kv_head():
    mha, gqa = attention(S, D, H), attention(S, D, H, kv_heads=G)
    # Q and O stay at S D b each; K and V shrink to S D b G/H each
    assert_formula_equal(gqa.bytes, 2 * S * D * b + 2 * S * D * b * G / H)
    kv_mha = mha.bytes - 2 * S * D * b
    kv_gqa = gqa.bytes - 2 * S * D * b
    assert_formula_equal(kv_mha / kv_gqa, H / G)
    # FLOPs still count every query head
    assert_formula_equal(gqa.flops, mha.flops)


def test_mqa_numbers():
    mqa = attention(4096, 4096, 32, kv_heads=1)
    mha = attention(4096, 4096, 32)
    kv = lambda a: a.bytes - 2 * 4096 * 4096 * b  # noqa: E731
    assert sp.cancel(kv(mha) / kv(mqa)) == 32


def test_projections_add_8SD2_flops_for_mha():
    core, proj = attention(S, D, H), attention(S, D, H, projections=True)
    assert sp.expand(proj.flops - core.flops) == 8 * S * D**2
    # the four D x D weights are read once
    assert_formula_equal(proj.bytes_by_kind[Kind.WEIGHT], 4 * D**2 * b)


def test_projections_with_gqa():
    core = attention(S, D, H, kv_heads=G, projections=False)
    proj = attention(S, D, H, kv_heads=G, projections=True)
    # Q and O projections D x D; K and V projections D x (G D/H): 2 FLOPs per weight per token
    assert_formula_equal(proj.flops - core.flops, 2 * S * (2 * D**2 + 2 * D * G * D / H))


def test_batch_scales_flops_and_bytes():
    one, many = attention(S, D, H), attention(S, D, H, batch=B)
    assert_formula_equal(many.flops, B * one.flops)
    assert_formula_equal(many.bytes, B * one.bytes)
    assert_formula_equal(many.intensity, one.intensity)


def test_all_ops_adds_softmax_work_only():
    contractions, everything = attention(S, D, H), attention(S, D, H, ops="all")
    extra = sp.expand(everything.flops - contractions.flops)
    assert extra != 0
    assert sp.degree(extra, S) == 2 and sp.degree(extra, D) == 0   # per score, not per width


def test_one_flop_per_mac_halves_flops():
    assert_formula_equal(attention(S, D, H, flops="one_per_mac").flops, attention(S, D, H).flops / 2)


@pytest.mark.parametrize("kwargs", [
    {"unfused": "sometimes", "fused": False},
    {"causal": "quarter"},
    {"ops": "everything"},
])
def test_bad_options_raise(kwargs):
    with pytest.raises(SymroofError):
        attention(S, D, H, **kwargs)

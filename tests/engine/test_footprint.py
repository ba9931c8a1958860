"""Memory footprints and capacity (symroof.footprint): KV cache, weights, training state.

Seed 000: 537 MB of KV cache per 1,024-token sequence of the 6.4B model. Seed 001:
Llama-3-70B's weights equal its KV cache at about 437,500 token-slots, and "you will
run out of KV memory at 190 concurrent users at 8k context" for 70B at FP8 on 4 x H100.
Second computations: the seeds' arithmetic, and plain integer arithmetic from the
published shapes and the chip's 80 GB.
"""

from __future__ import annotations

import pytest
import sympy as sp

from symroof.testing import assert_formula_equal
from symroof import hardware
from symroof.errors import SymroofError
from symroof.footprint import capacity, memory, saved_activations
from symroof.models import get, transformer
from symroof.symbols import B, D, G, H, L, S, b

H100_BYTES = 80 * 10**9   # NVIDIA H100 SXM5: 80 GB of HBM3




# ---------------------------------------------------------------------------
# inference


def test_kv_cache_symbolic():
    m = transformer(layers=L, d_model=D, heads=H)
    f = memory(m, batch=B, context=S)
    assert_formula_equal(f.kv_cache, 2 * L * S * D * b * B)      # 2 (K and V) x L x S x D values
    assert_formula_equal(f.weights, 12 * L * D**2 * b)
    assert f.gradients == 0 and f.optimizer_state == 0
    assert_formula_equal(f.total, f.weights + f.kv_cache)
    gqa = memory(transformer(layers=L, d_model=D, heads=H, kv_heads=G), batch=B, context=S)
    assert_formula_equal(f.kv_cache / gqa.kv_cache, H / G)


def test_seed_kv_cache_537_mb_per_sequence():
    m = get("seed-6.4b").with_precision(weights="bf16", kv_cache="bf16", activations="bf16")
    f = memory(m, batch=1, context=1024)
    assert f.kv_cache == 536_870_912 == 2 * 32 * 1024 * 4096 * 2
    assert float(f.kv_cache) == pytest.approx(537e6, rel=1e-3)
    assert memory(m, batch=64, context=1024).kv_cache == 64 * f.kv_cache


def test_kv_precision_scales_cache():
    m = get("llama-3-70b")
    fp16 = memory(m.with_bytes(2), batch=1, context=8192).kv_cache
    fp8 = memory(m.with_precision(kv_cache="fp8"), batch=1, context=8192).kv_cache
    assert fp16 == 2 * fp8 == 327_680 * 8192


def test_llama_70b_weight_kv_crossover_token_slots():
    # seed 001: weight bytes 140 GB, KV 320 KB per token: equal at S B = 437,500
    m = get("llama-3-70b").with_bytes(2)
    slots = sp.symbols("slots", positive=True)
    f = memory(m, batch=1, context=1)
    solution = sp.solve(sp.Eq(f.weights, f.kv_cache * slots), slots)
    assert len(solution) == 1
    assert solution[0] == sp.Rational(2 * m.params, 327_680)
    assert float(solution[0]) == pytest.approx(437_500, rel=0.02)
    assert float(f.weights) == pytest.approx(140e9, rel=0.01)


# ---------------------------------------------------------------------------
# capacity


def test_llama_70b_fp8_capacity_on_4_h100():
    m = get("llama-3-70b").with_precision(weights="fp8", kv_cache="fp8")
    n = capacity(m, "h100-sxm", context=8192, tp=4)
    # second computation: (4 x 80 GB - 1 byte per weight) / (KV bytes per 8k sequence)
    kv_per_seq = 2 * 80 * 8 * 128 * 1 * 8192
    assert n == (4 * H100_BYTES - 70_553_706_496) // kv_per_seq == 185
    assert hardware.get("h100-sxm").capacity() == H100_BYTES
    # the seed says 190: the engine's 185 is within 3% of it
    assert abs(190 - n) / n < 0.03
    assert n < 190


def test_capacity_scales_with_tp_and_context():
    m = get("llama-3-70b").with_precision(weights="fp8", kv_cache="fp8")
    n8 = capacity(m, "h100-sxm", context=8192, tp=8)
    assert n8 == (8 * H100_BYTES - m.params) // (163_840 * 8192)
    n4k = capacity(m, "h100-sxm", context=4096, tp=4)
    assert n4k == (4 * H100_BYTES - m.params) // (163_840 * 4096)
    assert n4k >= 2 * capacity(m, "h100-sxm", context=8192, tp=4)


def test_capacity_symbolic_context():
    m = get("llama-3-70b").with_precision(weights="fp8", kv_cache="fp8")
    n = capacity(m, "h100-sxm", context=S, tp=4)
    # per device: the matrices split four ways, the 2L + 1 RMSNorm weight vectors whole on
    # each device (the sharded graph's count; 989,184 bytes more than params / 4)
    norms = (2 * 80 + 1) * 8192
    per_device = H100_BYTES - sp.Rational(m.params - norms, 4) - norms
    assert_formula_equal(n, per_device / (163_840 * S / 4))
    assert n.subs(S, 8192) < (4 * H100_BYTES - m.params) / (163_840 * 8192)


def test_capacity_is_never_negative_when_weights_do_not_fit():
    """70B at 16 bits (141 GB of weights) on one 80 GB H100: no sequence fits.

    The count of sequences that fit cannot be negative: expect 0 (or a SymroofError
    saying the weights do not fit), not -23.
    """
    m = get("llama-3-70b").with_bytes(2)
    try:
        n = capacity(m, "h100-sxm", context=8192, tp=1)
    except SymroofError as err:
        assert "fit" in str(err)
    else:
        assert n == 0, f"capacity returned {n}"


def test_capacity_past_the_kv_heads_keeps_a_whole_head_per_device():
    """tp = 16 on 8 KV heads: each device holds one whole KV head (two devices share it),
    so the count is what tp = 8 gives per device's weights, not twice it (the formula
    (tp * capacity - weights) / KV was 2x optimistic there). sr.capacity and ``symroof
    capacity`` are one count."""
    from symroof.serving import max_sequences
    m = get("llama-3-70b").with_precision(weights="fp8", kv_cache="fp8")
    n = capacity(m, "h100-sxm", context=8192, tp=16)
    per_device_kv = 2 * 80 * 1 * 128 * 1 * 8192          # one KV head per device
    assert n == (H100_BYTES - m.params / 16) // per_device_kv
    assert n < (16 * H100_BYTES - m.params) // (163_840 * 8192)
    assert n == max_sequences(m, "h100-sxm", context=8192, tp=16, precision="fp8").sequences


def test_capacity_refuses_a_tp_that_does_not_split_the_heads_as_the_cli_does(capsys):
    from tests.cli_run import run_error
    with pytest.raises(SymroofError, match="tp 3: does not split llama-3-70b"):
        capacity(get("llama-3-70b"), "h100-sxm", context=8192, tp=3)
    line = run_error(capsys, "capacity", "--model", "llama-3-70b", "--hardware", "h100-sxm",
                     "--context", "8192", "--tp", "3")
    assert "does not split llama-3-70b" in line


@pytest.mark.parametrize("tp", [0, -1, True, 2.0])
def test_capacity_rejects_bad_tp(tp):
    with pytest.raises(SymroofError, match="tp"):
        capacity(get("llama-3-8b").with_bytes(2), "h100-sxm", context=1024, tp=tp)


def test_capacity_unknown_chip_suggests():
    with pytest.raises(SymroofError, match="h100-sxm"):
        capacity(get("llama-3-8b").with_bytes(2), "h100", context=1024)


def test_memory_rejects_non_models():
    with pytest.raises(SymroofError):
        memory("llama-3-8b", batch=1, context=1)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------
# training


def test_training_footprint_16_bytes_per_parameter():
    m = get("seed-6.4b").with_bytes(2)
    f = memory(m, batch=1, context=1024, training=True)
    p = 6_442_450_944
    assert (f.weights, f.gradients, f.optimizer_state) == (2 * p, 2 * p, 12 * p)
    assert f.weights + f.gradients + f.optimizer_state == 16 * p
    assert f.kv_cache == 0 and f.activations > 0


def test_saved_activations_per_layer_hand_count():
    """Activations a training step keeps for the backward pass, FlashAttention recompute.

    Per layer, in units of B S D values, for the seeds' model (no norms, no dropout):
    the layer input x (read by dW_q, dW_k, dW_v) 1; Q, K, V (the recomputed QK^T and
    dP = dO V^T) 3; the attention output O (dW_o) 1; the residual x' (dW_up) 1; the up
    projection output (the GELU's backward) 4; the GELU output (dW_down) 4  ->  14.
    FlashAttention's backward also reads the logsumexp of each query's scores, one fp32 per
    query per head: 4 B S H bytes per layer (``statistics="ignored"`` leaves it out).
    (Korthikanti et al. 2022 count 34 s b h bytes per layer: the same 28 s b h at
    2 bytes, plus 4 s b h of LayerNorm inputs and 2 s b h of dropout masks; see
    tests/engine/test_training_memory.py.)
    """
    m = transformer(layers=L, d_model=D, heads=H)
    assert_formula_equal(saved_activations(m, B, S), 14 * B * S * D * L * b + 4 * B * S * H * L)
    assert_formula_equal(saved_activations(m, B, S, statistics="ignored"),
                         14 * B * S * D * L * b)


def test_saved_activations_grow_linearly_with_layers():
    """Every layer keeps its own input: two layers save twice what one saves."""
    one = saved_activations(transformer(layers=1, d_model=64, heads=4), 2, 16)
    two = saved_activations(transformer(layers=2, d_model=64, heads=4), 2, 16)
    four = saved_activations(transformer(layers=4, d_model=64, heads=4), 2, 16)
    assert_formula_equal(two, 2 * one)
    assert_formula_equal(four, 4 * one)


def test_saved_activations_unfused_keep_s_squared():
    m = transformer(layers=L, d_model=D, heads=H)
    fused = saved_activations(m, B, S, fused=True)
    unfused = saved_activations(m, B, S, fused=False)
    assert sp.degree(sp.expand(fused), S) == 1
    assert sp.degree(sp.expand(unfused), S) == 2


def test_capacity_of_a_preset_is_counted_at_the_precision():
    """A preset keeps b symbolic; capacity counts it at `precision` (bf16 by default).
    Llama-3-70B on 4 x H100 at 8k context: (320e9 - 70.55e9 * 2) / (327,680 * 8192)
    = 66.6 -> 66 at 16 bits; at fp8, (320e9 - 70.55e9) / (163,840 * 8192) = 185.9 -> 185."""
    m = get("llama-3-70b")
    assert capacity(m, "h100-sxm", context=8192, tp=4) == 66
    assert capacity(m, "h100-sxm", context=8192, tp=4, precision="fp8") == 185
    assert (320e9 - 70553706496 * 2) / (327680 * 8192) == pytest.approx(66.6, rel=1e-3)


def test_capacity_rejects_non_models():
    with pytest.raises(SymroofError, match="capacity: expected a transformer model, got str"):
        capacity("llama-3-8b", "h100-sxm", context=1024)  # type: ignore[arg-type]


def test_training_memory_under_each_recompute_strategy():
    """memory(training=True) takes the strategy: the seeds' model keeps 14 BSD values a
    layer with FlashAttention or selective recomputation, each layer's input with full,
    and the S x S probabilities too with none (unfused: the softmax's output)."""
    m = transformer(layers=L, d_model=D, heads=H)
    acts = {r: memory(m, batch=B, context=S, training=True, recompute=r,
                      statistics="ignored").activations
            for r in ("none", "flash", "selective", "full")}
    assert_formula_equal(acts["flash"], 14 * B * S * D * L * b)
    assert_formula_equal(acts["selective"], acts["flash"])
    assert_formula_equal(acts["full"], B * S * D * L * b)
    assert_formula_equal(acts["none"], 14 * B * S * D * L * b + B * H * S**2 * L * b)

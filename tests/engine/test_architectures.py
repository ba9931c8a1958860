"""Today's architectures (issue 12): sliding windows, latent attention, shared experts.

Every formula is checked against a second computation: a brute-force loop over query-key
pairs (windows), hand-written closed forms from the reference code (latent attention,
DeepSeek's ``inference/model.py``), exact enumeration of routings (expert reads), and
the figures of the issue, the papers and the model cards. The PyTorch counter's view of
the same models is ``tests/oracles/test_torch_oracle.py``; real config.json files are read in
``tests/engine/test_hf_families.py``.
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import pytest
import sympy as sp

import symroof as sr
from symroof.errors import SymroofError
from symroof.ir import Kind
from symroof.models import LatentAttention, get, llama_ffn, transformer
from symroof.present.records import to_text
from symroof.symbols import B, D, H, L, S, b, d_ff, dim
from symroof.testing import assert_close, assert_formula_equal
from symroof.workloads.attention import window_fraction
from symroof.workloads.experts import expert_read_fraction
from symroof.workloads.transformer import decode, prefill, training

W = dim("W")
BF16 = {b: 2}


# ---------------------------------------------------------------------------
# sliding windows: which keys a query attends


def _pairs(seq: int, window: int | None) -> int:
    """Brute force: query i attends keys j with i - W < j <= i (all j <= i without W)."""
    return sum(1 for i in range(seq) for j in range(seq)
               if j <= i and (window is None or j > i - window))


@pytest.mark.parametrize("seq,window", [(1, 4), (3, 4), (4, 4), (5, 4), (8, 4), (17, 5),
                                        (64, 16), (7, 1), (9, 9), (30, 100)])
def test_window_exact_pairs_match_a_loop(seq, window):
    assert window_fraction("exact", seq, window) * seq**2 == _pairs(seq, window)


def test_window_pair_formulas_symbolic():
    # S W - W(W-1)/2 once the window is full; the "half" analogue S W - W^2/2
    assert_formula_equal(window_fraction("exact", S, W, "filled") * S**2, S * W - W * (W - 1) / 2)
    assert_formula_equal(window_fraction("half", S, W, "filled") * S**2, S * W - W**2 / 2)
    # a window at least the sequence: the causal conventions themselves
    assert window_fraction("exact", 6, 10) == Fraction(7, 12)     # S(S+1)/2 / S^2
    assert window_fraction("half", 6, 10) == Fraction(1, 2)
    assert window_fraction("none", S, W) == 1                     # eager: the full rectangle


def test_window_filled_refuses_a_short_sequence():
    with pytest.raises(SymroofError, match="filled"):
        window_fraction("exact", 3, 4, "filled")
    with pytest.raises(SymroofError, match="window_span"):
        window_fraction("exact", 8, 4, "full")


def test_windowed_attention_intensity_tends_to_w_over_b():
    """A fused windowed kernel: F = 4 D (S W - W^2/2), Q = 4 S D b, so I -> W/b (not S/2b)."""
    a = sr.workloads.attention(S, D, H, window=W, window_span="filled")
    assert_formula_equal(a.flops, 4 * D * (S * W - W**2 / 2))
    assert_formula_equal(a.intensity, W * (2 * S - W) / (2 * S * b))
    assert_formula_equal(sr.limit(a.intensity, S), W / b)
    masked = sr.workloads.attention(S, D, H, window=W, window_kernel="masked")
    assert_formula_equal(masked.flops, sr.workloads.attention(S, D, H).flops)   # 2 S^2 D


# ---------------------------------------------------------------------------
# decode on a windowed layer: min(context, W) positions, the newest inside


@pytest.mark.parametrize("context", [1, 2, 3, 4, 5, 9, 4096, 4097, 32768])
def test_mistral_decode_attends_min_context_w(context):
    m = get("mistral-7b")
    full = m.replace(window=None)
    attended = min(context, 4096)          # keys j with i - W < j <= i, i = context - 1
    assert attended == sum(1 for j in range(context) if j > context - 1 - 4096)
    kv = decode(m, 1, context).bytes_by_kind[Kind.KV_CACHE]
    assert kv == 2 * 32 * 8 * 128 * attended * b
    assert decode(m, 1, context).flops == decode(full, 1, attended).flops


def test_issue_figures_mistral_at_32k():
    """Issue 12: every layer attending the whole past at 32k "doubles decode FLOPs and
    overstates bytes by a quarter" (batch 1, bf16)."""
    m = get("mistral-7b")
    windowed, full = decode(m, 1, 32768), decode(m.replace(window=None), 1, 32768)
    flops = full.flops / windowed.flops
    by = (full.bytes / windowed.bytes).subs(BF16)
    assert_close(float(flops), 1.91, rel=0.01)       # "doubles"
    assert_close(float(by), 1.25, rel=0.01)          # "a quarter"


def test_decode_window_symbolic_and_filled():
    m = transformer(layers=L, d_model=D, heads=H, window=W)
    dec = decode(m, B, S)
    assert_formula_equal(dec.flops, B * (24 * D**2 * L + 4 * D * L * sp.Min(S, W)))
    filled = decode(m, B, S, window_span="filled")
    assert_formula_equal(filled.flops, B * (24 * D**2 * L + 4 * D * L * W))
    assert any("context >= window" in a for a in filled.assumptions)
    # the seeds' ceiling with the window in place of the context: (12 D / W + 2) / b
    assert_formula_equal(sr.limit(filled.intensity, B), (12 * D / W + 2) / b)
    with pytest.raises(SymroofError, match="limit"):
        sr.limit(dec.intensity, B)           # Min(S, W): one limit per regime
    with pytest.raises(SymroofError, match="filled"):
        decode(get("mistral-7b"), 1, 100, window_span="filled")


def test_mixed_layers_gemma2():
    """Gemma-2-9B: 21 local layers (W = 4096) and 21 global ones."""
    m = get("gemma-2-9b")
    per_layer = 2 * 8 * 256 * 2                  # K and V, 8 KV heads of 256, bf16
    assert m.kv_bytes_per_token.subs(BF16) == 42 * per_layer
    assert m.kv_cache_bytes(8192).subs(BF16) == (21 * 8192 + 21 * 4096) * per_layer
    assert m.kv_cache_bytes(1000).subs(BF16) == 42 * 1000 * per_layer
    groups = {(g.windowed, int(g.count)) for g in m.layer_groups}
    assert groups == {(True, 21), (False, 21)}
    assert "window=4096 on 21 of 42 layers" in to_text(m)
    assert "window" not in to_text(get("llama-3-8b"))


def test_prefill_band_and_masked_kernels():
    m = transformer(layers=2, d_model=64, heads=4, window=4, window_layers=1)
    hd = 16
    full_layer = 4 * 4 * hd                       # 4 H hd per attended pair
    band = prefill(m, 1, 8, causal="exact").flops
    masked = prefill(m, 1, 8, causal="exact", window_kernel="masked").flops
    eager = prefill(m, 1, 8, causal="none", window_kernel="masked").flops
    assert masked - band == full_layer * (_pairs(8, None) - _pairs(8, 4))   # 36 - 26 pairs
    assert eager - masked == 2 * full_layer * (64 - 36)                    # both layers
    with pytest.raises(SymroofError, match="window_kernel"):
        prefill(m, 1, 8, window_kernel="dense")


def test_training_windowed_counts_band_pairs_three_times():
    """A training step does each attention product three times (forward, dQ/dK, dP/dV
    pairs), on the band only with a windowed kernel."""
    m = transformer(layers=1, d_model=64, heads=4, window=4)
    hd, pairs = 16, _pairs(8, 4)
    band = training(m, 1, 8, causal="exact", optimizer=None, recompute=False).flops
    masked = training(m, 1, 8, causal="exact", optimizer=None, recompute=False,
                      window_kernel="masked").flops
    assert masked - band == 3 * 4 * 4 * hd * (_pairs(8, None) - pairs)


def test_window_memory_and_capacity():
    """The cache of a windowed layer is a rolling buffer of W positions."""
    m = get("mistral-7b").with_precision(weights="bf16", kv_cache="bf16", activations="bf16")
    per_pos = 2 * 32 * 8 * 128 * 2
    assert sr.memory(m, batch=3, context=32768).kv_cache == 3 * 4096 * per_pos
    assert sr.memory(m, batch=3, context=1000).kv_cache == 3 * 1000 * per_pos
    hw = sr.hardware.get("h100-sxm")
    free = hw.capacity() - m.params * 2
    assert sr.capacity(m, hw, context=32768) == sp.floor(free / (4096 * per_pos))
    full = m.replace(window=None)
    assert sr.capacity(full, hw, context=32768) == sp.floor(free / (32768 * per_pos))
    assert sr.memory(m, batch=B, context=S).kv_cache == B * per_pos * sp.Min(S, 4096)


# ---------------------------------------------------------------------------
# multi-head latent attention

dc, dr, dn, dv, dq = (dim(x) for x in ("d_c", "d_r", "d_n", "d_v", "d_q"))


@pytest.fixture(scope="module")
def mla_model():
    mla = LatentAttention(kv_rank=dc, rope_dim=dr, nope_dim=dn, v_dim=dv, q_rank=dq)
    return transformer(layers=L, d_model=D, heads=H, d_ff=d_ff, mlp="gated", latent=mla)


def _mla_common():
    """Per token per layer, the work both ways share (DeepSeek inference/model.py):
    wq_a, wq_b, wkv_a (latent and rotary key), wo and the gated MLP."""
    return 2 * (D * dq + dq * H * (dn + dr)) + 2 * D * (dc + dr) + 2 * H * dv * D + 6 * D * d_ff


def test_mla_decode_absorbed_flops(mla_model):
    # attn_impl="absorb": q_nope W_UK, scores on latent + rotary key, probs x latent, x W_UV
    per = _mla_common() + 2 * H * dn * dc + 2 * H * S * (dc + dr) + 2 * H * S * dc + 2 * H * dc * dv
    assert_formula_equal(decode(mla_model, B, S).flops, B * L * per)


def test_mla_decode_naive_flops(mla_model):
    # transformers: kv_b_proj over every attended latent, then attention at d_n + d_r
    per = _mla_common() + 2 * S * dc * H * (dn + dv) + 2 * H * S * (dn + dr) + 2 * H * S * dv
    assert_formula_equal(decode(mla_model, B, S, latent="naive").flops, B * L * per)


def test_mla_bytes_are_the_latent_cache_both_ways(mla_model):
    absorbed, naive = decode(mla_model, B, S), decode(mla_model, B, S, latent="naive")
    for a in (absorbed, naive):
        assert_formula_equal(a.bytes_by_kind[Kind.KV_CACHE], B * L * S * (dc + dr) * b)
    assert_formula_equal(absorbed.bytes, naive.bytes)
    assert_formula_equal(mla_model.kv_bytes_per_token, L * (dc + dr) * b)


def test_mla_crossover_absorbed_wins_from_the_second_position(mla_model):
    absorbed, naive = decode(mla_model, B, S), decode(mla_model, B, S, latent="naive")
    [x] = sr.crossover(naive.flops, absorbed.flops, S)
    want = dc * (dn + dv) / (dc * (dn + dv) + dn + dv - 2 * dc)
    assert_formula_equal(x.value, want)
    v3 = {dc: 512, dn: 128, dv: 128}
    assert_close(float(want.subs(v3)), 131072 / 130304, rel=1e-12)    # 1.0059: S >= 2


def test_deepseek_v3_mla_cache_matches_the_paper():
    """"Insights into DeepSeek-V3" (arXiv 2505.09343) Table 1: KV cache per token, BF16:
    DeepSeek-V3 70.272 KB, Qwen-2.5-72B 327.680 KB, LLaMA-3.1-405B 516.096 KB."""
    assert get("deepseek-v3").kv_bytes_per_token.subs(BF16) == 70_272 == 576 * 61 * 2
    assert get("llama-3.1-405b").kv_bytes_per_token.subs(BF16) == 516_096
    qwen25_72b = transformer(layers=80, d_model=8192, heads=64, kv_heads=8, d_ff=29568,
                             mlp="gated")
    assert qwen25_72b.kv_bytes_per_token.subs(BF16) == 327_680


def test_deepseek_v3_decode_per_layer_attention_at_4096():
    """Per token per layer at S = 4096 (notes' figures from the reference code): absorbed
    1.52 GFLOP, transformers' re-expansion 138 GFLOP; a per-head cache would read 71x
    the bytes the latent does."""
    m = get("deepseek-v3")
    one = m.replace(layers=1, dense_layers=0)
    absorbed = decode(one, 1, 4096).flops - decode(one, 1, 1).flops
    naive = decode(one, 1, 4096, latent="naive").flops - decode(one, 1, 1, latent="naive").flops
    assert absorbed == 4095 * 2 * 128 * (2 * 512 + 64)
    assert naive == 4095 * (2 * 512 * 128 * 256 + 2 * 128 * (128 + 64 + 128))
    assert_close(float(decode(one, 1, 4096).per_op["scores_latent"].flops
                       + decode(one, 1, 4096).per_op["scores_rope"].flops
                       + decode(one, 1, 4096).per_op["pv"].flops), 1.141e9, rel=1e-3)
    per_head_cache = 128 * (128 + 64) + 128 * 128
    assert per_head_cache / 576 == pytest.approx(71.1, rel=1e-3)
    # absorbed decode attention per sequence: 2H(2 d_c + d_r) FLOPs per (d_c + d_r) b bytes
    assert_close(2 * 128 * (2 * 512 + 64) / (576 * 2), 241.8, rel=1e-3)


def test_mla_prefill_and_training_use_the_expanded_form(mla_model):
    pf = prefill(mla_model, B, S, causal="none")
    per = (_mla_common() + 2 * dc * H * (dn + dv) + 2 * H * S * (dn + dr) + 2 * H * S * dv)
    assert_formula_equal(pf.flops, B * S * L * per)
    small = get("deepseek-v3").replace(layers=2, dense_layers=1, vocab=None)
    t = training(small, 1, 8, causal="none", fused=False, optimizer=None).flops
    assert t == 3 * prefill(small, 1, 8, causal="none", fused=False).flops


# ---------------------------------------------------------------------------
# mixture of experts: shared experts, dense layers, top-k over many experts


def test_moe_with_shared_expert_and_dense_layers_params():
    E, k, fe, fs = (dim(x) for x in ("E", "k", "f_e", "f_s"))
    m = transformer(layers=L, d_model=D, heads=H, d_ff=d_ff, mlp="gated", experts=E,
                    experts_per_token=k, expert_d_ff=fe, shared_d_ff=fs, dense_layers=3)
    attn = 4 * D**2
    moe_layer = attn + D * E + E * 3 * D * fe + 3 * D * fs
    dense_layer = attn + 3 * D * d_ff
    assert_formula_equal(m.params, (L - 3) * moe_layer + 3 * dense_layer)
    active = (L - 3) * (attn + D * E + k * 3 * D * fe + 3 * D * fs) + 3 * dense_layer
    assert_formula_equal(m.active_params, active)
    dec = decode(m, B, S)
    per_token = 2 * active + 4 * D * L * S    # every parameter a token touches, twice
    assert_formula_equal(dec.flops, B * per_token)


def test_qwen2_moe_shared_gate():
    m = get("qwen1.5-moe-a2.7b")
    layer = prefill(m, 1, 1, causal="none")
    assert layer.per_op["shared_gate"].flops == 24 * 2 * 2048
    assert layer.per_op["shared.up"].flops == 24 * 2 * 2048 * 5632


def test_deepseek_v3_published_totals():
    """README: 671B total, 37B activated; the 14B multi-token-prediction module is not
    in the 671B (README_WEIGHTS) and not in the model."""
    m = get("deepseek-v3")
    assert m.params == 671_026_404_352
    assert round(float(m.params) / 1e9) == 671
    # "37B activated": truncated with the input embedding (37.55B), rounded without (36.63B)
    assert int(float(m.active_params) / 1e9) == 37
    without = m.count_params(active=True, input_embedding=False)
    assert round(float(without) / 1e9) == 37
    assert m.active_params - without == 129280 * 7168        # the 0.9B input embedding
    assert to_text(m).count("MLA") == 1 and "dense_layers=3" in to_text(m)


def test_active_params_of_the_other_moe_presets():
    """Which convention reproduces each published active count."""
    qwen3 = get("qwen3-30b-a3b")
    assert round(float(qwen3.params) / 1e9, 1) == 30.5
    assert int(float(qwen3.active_params) / 1e8) / 10 == 3.3      # 3.353B, truncated
    oss = get("gpt-oss-20b")
    assert round(float(oss.params) / 1e9, 2) == 20.91
    assert round(float(oss.count_params(active=True, input_embedding=False)) / 1e9, 2) == 3.61
    assert round(float(get("mixtral-8x7b").active_params) / 1e9, 1) == 12.9
    assert round(float(get("qwen1.5-moe-a2.7b").active_params) / 1e9, 1) == 2.7


def _distinct_experts(experts: int, k: int, tokens: int) -> Fraction:
    """Exact mean of the distinct experts ``tokens`` tokens route to, each token choosing
    ``k`` of ``experts`` uniformly: enumerate every routing."""
    choices = list(itertools.combinations(range(experts), k))
    routings = list(itertools.product(choices, repeat=tokens))
    return Fraction(sum(len(set().union(*r)) for r in routings), len(routings))


@pytest.mark.parametrize("experts,k,tokens", [(4, 2, 1), (4, 2, 2), (5, 2, 3), (6, 1, 4)])
def test_expected_expert_reads_enumerated(experts, k, tokens):
    frac = expert_read_fraction("expected", experts, k, tokens)
    assert frac * experts == _distinct_experts(experts, k, tokens)
    routed = expert_read_fraction("routed", experts, k, tokens)
    assert routed * experts == min(experts, k * tokens)   # the most any routing reads


def test_deepseek_v3_decode_weight_reads_by_convention():
    """expert_reads="all" reads all 256 experts' weights each step; "routed"
    the 8 a token is sent to (batch 1), all of them again once 64 x 8 >= 256."""
    m = get("deepseek-v3")
    routed_params = 58 * 256 * 3 * 7168 * 2048
    table = 129280 * 7168                        # the embedding gather reads its rows only
    every = decode(m, 1, 1024, expert_reads="all").bytes_by_kind[Kind.WEIGHT]
    assert every == (m.params - table + 7168) * b
    one = decode(m, 1, 1024, expert_reads="routed").bytes_by_kind[Kind.WEIGHT]
    assert every - one == routed_params * b * (1 - sp.Rational(8, 256))
    big = decode(m, 64, 1024, expert_reads="routed").bytes_by_kind[Kind.WEIGHT]
    assert big == every + 63 * 7168 * b
    expected = decode(m, 1, 1024, expert_reads="expected").bytes_by_kind[Kind.WEIGHT]
    assert expected == one                       # one token: exactly its 8 experts

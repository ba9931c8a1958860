"""Kimi-Linear: Kimi Delta Attention (a gated DeltaNet with a decay per key channel) beside
multi-head latent attention, DeepSeek-V3's experts with shared experts and dense first
layers, read from config.json.

The counts against PyTorch are the recorded fixture's (tests/fixtures/hybrid_flops.json,
entries ``kimi_linear/...``, reproduced by tests/oracles/test_hybrid_oracle.py); here:
what the oracle subtracts and why, the import of a config in the checkpoint's layout,
the closed forms of the per-channel decay against the per-head one, a numeric check of
the factorisation the per-channel scores rest on, and the refusals.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import sympy as sp

from symroof.errors import SymroofError
from symroof.models import GatedDeltaNet, from_hf_dict
from symroof.symbols import b
from symroof.workloads.recurrent import ScanChoices
from symroof.workloads.transformer import decode, prefill

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "hybrid_flops.json"
KIMI = [e for e in json.loads(FIXTURE.read_text())["entries"] if e["model"] == "kimi_linear"]

#: A config in the checkpoint's layout (linear_attn_config with 1-based layer lists,
#: first_k_dense_replace, the attribute_map names): Kimi-Linear-48B-A3B's widths.
FULL = [4, 8, 12, 16, 20, 24, 27]
CFG = {"model_type": "kimi_linear", "hidden_size": 2304, "num_hidden_layers": 27,
       "num_attention_heads": 32, "num_key_value_heads": 32, "intermediate_size": 9216,
       "moe_intermediate_size": 1024, "num_experts": 256, "num_experts_per_token": 8,
       "num_shared_experts": 1, "first_k_dense_replace": 1, "kv_lora_rank": 512,
       "qk_rope_head_dim": 64, "qk_nope_head_dim": 128, "v_head_dim": 128,
       "q_lora_rank": None, "mla_use_nope": True, "vocab_size": 163840,
       "tie_word_embeddings": False, "moe_layer_freq": 1, "hidden_act": "silu",
       "moe_router_activation_func": "sigmoid", "num_nextn_predict_layers": 0,
       "linear_attn_config": {"head_dim": 128, "num_heads": 32, "short_conv_kernel_size": 4,
                              "full_attn_layers": FULL,
                              "kda_layers": [i for i in range(1, 28) if i not in FULL]}}


def _kda_params(d: int, h: int, dk: int, k: int) -> int:
    """One KDA layer's parameters, counted here from transformers' module list: q, k, v
    projections, the depthwise conv over 3 H d_k (no bias), f_a (D x d_k), f_b, dt_bias
    (H d_k), A_log (H), b_proj (D x H), g_a, g_b, the o_norm gain (d_k), o_proj."""
    hd = h * dk
    return 3 * d * hd + 3 * hd * k + d * dk + dk * hd + hd + h + d * h + d * dk + dk * hd \
        + dk + hd * d


def _mla_params(d: int, h: int, dc: int, dr: int, dn: int, dv: int) -> int:
    return d * h * (dn + dr) + d * (dc + dr) + dc + dc * h * (dn + dv) + h * dv * d


def test_checkpoint_layout_is_read_exactly():
    m = from_hf_dict(CFG)
    got = sorted((g.mixer, int(g.count), g.moe) for g in m.groups)
    assert got == [("attention", 7, True), ("deltanet", 1, False), ("deltanet", 19, True)]
    dn = m.deltanet
    assert (dn.decay, dn.decay_rank, dn.out_gate_rank, dn.out_gate) == ("channel", 128, 128,
                                                                        "sigmoid")
    d, e, f, fe, vocab = 2304, 256, 9216, 1024, 163840
    mlp_dense, expert = 3 * d * f, 3 * d * fe
    moe = e * expert + expert + d * e          # routed, one shared, the router
    expect = (20 * _kda_params(d, 32, 128, 4) + 7 * _mla_params(d, 32, 512, 64, 128, 128)
              + mlp_dense + 26 * moe + 2 * 27 * d + d + 2 * vocab * d)
    assert m.params == expect == 49_122_675_072      # "48B": 49.1e9 with the embeddings
    active = expect - 26 * (e - 8) * expert
    assert m.count_params(active=True) == active
    # decode state: 20 KDA layers of H d_k d_v float32 values (transformers casts the
    # recurrent state to float32) and 3 H d_k x K conv inputs at the model's bytes;
    # K and V: 7 latent layers of d_c + d_r per token
    assert sp.expand(m.state_bytes_per_sequence - 20 * (32 * 128 * 128 * 4
                                                         + 3 * 32 * 128 * 4 * b)) == 0
    assert sp.expand(m.kv_bytes_per_token - 7 * (512 + 64) * b) == 0


def test_layer_pattern_sources_agree():
    """``layer_types`` (0-based), the 1-based lists and transformers' default give the
    same model where they say the same thing."""
    types = ["full_attention" if i + 1 in FULL else "linear_attention" for i in range(27)]
    flat = dict(CFG, layer_types=types)
    del flat["linear_attn_config"]
    flat.update(linear_head_dim=128, linear_num_heads=32, linear_conv_kernel_dim=4)
    assert from_hf_dict(flat).params == from_hf_dict(CFG).params
    dflt = {k: v for k, v in flat.items() if k != "layer_types"}
    # default: full attention on 0-based layers 4, 8, ..., 24 (6 of 27)
    assert sorted((g.mixer, int(g.count)) for g in from_hf_dict(dflt).groups if g.moe) == \
        [("attention", 6), ("deltanet", 20)]


def test_query_rank_and_attention_bias():
    """``q_lora_rank`` and ``attention_bias`` on the latent layer (transformers'
    KimiLinearAttention): q_a_proj (D x r, biased), its RMSNorm (r), q_b_proj (r x H
    (d_n + d_r)) for q_proj; biases on kv_a_proj_with_mqa (d_c + d_r) and o_proj (D)."""
    cfg = KIMI[0]["config"]
    base = from_hf_dict(cfg)
    m = from_hf_dict(dict(cfg, q_lora_rank=8, attention_bias=True))
    d, h, r, qk, dc, dr = 64, 4, 8, 16, 16, 8
    assert m.params - base.params == (d * r + r + r + r * h * qk - d * h * qk) + (dc + dr) + d
    assert m.latent.q_rank == 8 and m.qkv_bias and m.o_bias


def test_what_the_oracle_subtracts_for_kimi():
    """FlopCounterMode does not see KDA's chunk scores (elementwise products and sums
    with the per-channel decay mask) nor its decode step's three state products: under
    causal="none" 2 Q^2 d_k each for k_beta k^T and q k^T per head and chunk, and
    6 d_k d_v per head and token. The matmuls by (I + T)^-1 it does see."""
    assert len(KIMI) == 4
    for e in KIMI:
        cfg = e["config"]
        m = from_hf_dict(cfg).with_scan(ScanChoices.torch())
        h, dk = cfg["linear_num_heads"], cfg["linear_head_dim"]
        n_kda = cfg["layer_types"].count("linear_attention")
        if e["phase"] == "prefill":
            a = prefill(m, e["batch"], e["seq"], causal="none")
            chunks = math.ceil(e["seq"] / 64)
            unseen = ("delta_kk", "delta_qk")
            expect = e["batch"] * n_kda * chunks * h * 2 * (2 * 64 * 64 * dk)
            seen = sum(c.flops for n, c in a.per_op.items()
                       if n.rsplit(".", 1)[-1] in ("delta_solve_v", "delta_solve_k"))
            assert seen == e["batch"] * n_kda * chunks * h * 2 * 64 * 64 * 2 * dk
        else:
            a = decode(m, e["batch"], past=e["past"], latent="naive")
            unseen = ("step_read_k", "step_outer", "step_read_q")
            expect = e["batch"] * n_kda * 6 * h * dk * dk
        hidden = sum(c.flops for n, c in a.per_op.items()
                     if n.startswith("delta.") and n.rsplit(".", 1)[-1] in unseen)
        assert hidden == expect, e["id"]
        assert int(a.flops - hidden) == e["total_flops"], e["id"]


def test_channel_decay_against_head_decay():
    """The per-channel option changes the gate projections (low-rank f_a/f_b, g_a/g_b
    instead of a_proj and z_proj) and nothing else in the contractions: the chunked rule
    does the same GEMMs whatever the decay's shape."""
    m = from_hf_dict(KIMI[0]["config"])
    dn = m.deltanet
    head = m.replace(deltanet=GatedDeltaNet(dn.key_heads, dn.key_dim, dn.value_heads,
                                            dn.value_dim, conv_kernel=dn.conv_kernel,
                                            state_bytes=dn.state_bytes))
    d, h, dk, r = 64, 4, 8, 8
    n_kda, seq = 3, 64
    per_token = 2 * (d * r + r * h * dk - d * h) + 2 * (d * r + r * h * dk - d * h * dk)
    diff = prefill(m, 1, seq).flops - prefill(head, 1, seq).flops
    assert diff == n_kda * seq * per_token
    # the decay per channel: H d_k + H gate parameters against H + H
    assert m.params - head.params == n_kda * (
        (d * r + r * h * dk + h * dk + h) - (d * h + h + h) + (d * r + r * h * dk)
        - d * h * dk)


def test_per_channel_scores_factor_into_one_gemm():
    """The modelling claim behind the two score GEMMs: with a decay per channel,
    sum_c k_i[c] k_j[c] exp(G_i[c] - G_j[c]) (transformers' decay mask) equals
    (k_i exp(G_i)) . (k_j exp(-G_j)) (FLA's form), a Q x Q x d_k contraction."""
    rng = np.random.default_rng(0)
    q, dk = 6, 5
    k = rng.normal(size=(q, dk))
    g = -np.abs(rng.normal(size=(q, dk))) * 0.3
    big_g = np.cumsum(g, axis=0)
    mask = np.exp(big_g[:, None, :] - big_g[None, :, :])          # (i, j, c)
    direct = (k[:, None, :] * k[None, :, :] * mask).sum(-1)
    factored = (k * np.exp(big_g)) @ (k * np.exp(-big_g)).T
    assert np.allclose(np.tril(direct), np.tril(factored), rtol=1e-12, atol=1e-12)


def _bad(**changes):
    cfg = json.loads(json.dumps(CFG))
    lin = changes.pop("linear_attn_config", None)
    if lin is not None:
        cfg["linear_attn_config"].update(lin)
    cfg.update(changes)
    return cfg


@pytest.mark.parametrize("cfg, field", [
    (_bad(linear_attn_config={"kda_layers": CFG["linear_attn_config"]["kda_layers"][:-2]}),
     "full_attn_layers' and 'kda_layers' leave layers \\[25, 26\\]"),
    (_bad(linear_attn_config={"kda_layers": [1, 4]}), "kda_layers"),
    (_bad(linear_attn_config={"full_attn_layers": [0]}), "full_attn_layers"),
    (_bad(linear_attn_config={"use_full_rank_gate": True}), "use_full_rank_gate"),
    (_bad(linear_attn_config={"gate_lower_bound": -5.0}), "gate_lower_bound"),
    (_bad(mla_use_output_gate=True), "mla_use_output_gate"),
    (_bad(mla_use_nope=False), "mla_use_nope"),
    (_bad(hidden_act="situ"), "hidden_act"),
    (_bad(moe_layer_freq=2), "moe_layer_freq"),
    (_bad(num_nextn_predict_layers=1), "num_nextn_predict_layers"),
    (_bad(num_key_value_heads=8), "num_key_value_heads"),
    (_bad(mlp_layer_types=["dense"] * 3), "mlp_layer_types"),
    (_bad(num_experts=1), "num_experts"),
])
def test_refusals_name_the_field(cfg, field):
    with pytest.raises(SymroofError, match=field):
        from_hf_dict(cfg)


def test_gate_options_are_checked():
    with pytest.raises(SymroofError, match="decay 'row'"):
        GatedDeltaNet(4, 8, 4, 8, decay="row")
    with pytest.raises(SymroofError, match="decay_rank"):
        GatedDeltaNet(4, 8, 4, 8, decay="channel")
    with pytest.raises(SymroofError, match="out_gate 'tanh'"):
        GatedDeltaNet(4, 8, 4, 8, out_gate="tanh")


@pytest.mark.parametrize("phase", ["decode"])
def test_tensor_parallel_splits_kda_heads_as_vllm(phase):
    """tp=2 on the tiny Kimi-Linear (4 KDA heads of 8, 4 MLA heads): as vLLM's
    KimiDeltaAttention, the low-rank gates' down-projections f_a, g_a stay whole on every
    device, f_b, g_b, q, k, v, b, the conv, dt_bias and A_log split by heads, each head's
    state local; MLA's kv down-projection and the router stay whole. FLOPs halve but
    those replicated GEMMs."""
    m = from_hf_dict(KIMI[0]["config"])
    run = (lambda **kw: decode(m, 2, context=8, logits="none", **kw)) if phase == "decode" \
        else (lambda **kw: prefill(m, 2, 64, logits="none", **kw))
    one, two = run(), run(tp=2)
    whole = sum(c.flops for n, c in one.per_op.items() if n.rsplit(".", 1)[-1] in (
        "router", "f_a_proj", "g_a_proj", "kv_down", "k_rope_proj"))
    assert whole > 0 and two.flops == (one.flops - whole) / 2 + whole
    shapes = {t.name.removeprefix("delta.mlp."): t.shape for t in two.graph.inputs
              if t.name.startswith("delta.mlp.")}
    assert shapes["W_fa"] == shapes["W_ga"] == (64, 8)
    assert shapes["W_fb"] == shapes["W_gb"] == (8, 16)
    assert shapes["dt_bias"] == (2, 8) and shapes["A_log"] == (2, 1)
    if phase == "decode":
        assert shapes["ssm_state"] == (2, 2, 1, 8, 8)    # 2 heads of 8 x 8 per device

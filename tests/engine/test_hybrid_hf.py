"""config.json import of the state-space and hybrid families: layer patterns read from
each family's own fields, widths checked, unmodelled families and fields refused by name.
(Parameter counts against the models transformers builds: tests/oracles/test_hybrid_oracle.py.)
"""

from __future__ import annotations

import pytest

from symroof.errors import SymroofError
from symroof.models import from_hf_dict
from symroof.symbols import b

SSM = dict(mamba_n_heads=8, mamba_d_head=16, mamba_n_groups=2, mamba_d_state=16,
           mamba_chunk_size=4)
ATTN = dict(num_attention_heads=4, num_key_value_heads=2, vocab_size=100, hidden_size=64,
            intermediate_size=96)


def _kinds(m):
    return {(g.mixer, g.ffn, g.moe): g.count for g in m.layer_groups}


def test_mamba2():
    m = from_hf_dict({"model_type": "mamba2", "hidden_size": 64, "num_heads": 8, "head_dim": 16,
                      "state_size": 16, "n_groups": 2, "num_hidden_layers": 3,
                      "vocab_size": 100, "chunk_size": 8})
    assert _kinds(m) == {("mamba2", False, False): 3}
    assert (m.ssm.heads, m.ssm.head_dim, m.ssm.state, m.ssm.groups, m.ssm.chunk) == \
        (8, 16, 16, 2, 8)
    # 3 layers x (SSM state 8 x 16 x 16 + conv state 4 taps x (128 + 2 x 2 x 16))
    assert m.state_bytes_per_sequence == 3 * (8 * 16 * 16 + 4 * 192) * b


def test_bamba_reads_attn_layer_indices():
    m = from_hf_dict({"model_type": "bamba", **ATTN, **SSM, "num_hidden_layers": 5,
                      "attn_layer_indices": [1, 3]})
    assert _kinds(m) == {("mamba2", True, False): 3, ("attention", True, False): 2}
    assert m.positions == "rotary" and m.mlp == "gated"


def test_granite_hybrid_legacy_names_and_experts():
    m = from_hf_dict({"model_type": "granitemoehybrid", **ATTN, **SSM, "num_hidden_layers": 4,
                      "layer_types": ["mamba", "mamba", "attention", "mamba"],
                      "num_local_experts": 4, "num_experts_per_tok": 2,
                      "shared_intermediate_size": 48})
    assert _kinds(m) == {("mamba2", True, True): 3, ("attention", True, True): 1}
    assert (m.experts, m.shared_d_ff, m.positions) == (4, 48, None)
    dense = from_hf_dict({"model_type": "granitemoehybrid", **ATTN, **SSM,
                          "num_hidden_layers": 2, "num_local_experts": 0,
                          "shared_intermediate_size": 48})
    assert _kinds(dense) == {("mamba2", True, False): 2} and dense.d_ff == 48


def test_falcon_h1_runs_both_mixers_on_every_layer():
    m = from_hf_dict({"model_type": "falcon_h1", **ATTN, **SSM, "num_hidden_layers": 3,
                      "mamba_d_ssm": 128, "mamba_rms_norm": True})
    assert _kinds(m) == {("parallel", True, False): 3}
    assert m.ssm.gated_norm and m.ssm.inner == 128


def test_nemotron_h_pattern_string_and_list_agree():
    old = from_hf_dict({"model_type": "nemotron_h", **ATTN, "mamba_num_heads": 8,
                        "mamba_head_dim": 16, "n_groups": 2, "ssm_state_size": 16,
                        "hybrid_override_pattern": "M-M*-ME", "n_routed_experts": 4,
                        "num_experts_per_tok": 2, "moe_intermediate_size": 32,
                        "moe_shared_expert_intermediate_size": 48,
                        "mamba_ssm_cache_dtype": "float32"})
    new = from_hf_dict({"model_type": "nemotron_h", **ATTN, "mamba_num_heads": 8,
                        "mamba_head_dim": 16, "n_groups": 2, "ssm_state_size": 16,
                        "layers_block_type": ["linear_attention", "mlp", "linear_attention",
                                              "full_attention", "mlp", "linear_attention",
                                              "moe"],
                        "n_routed_experts": 4, "num_experts_per_tok": 2,
                        "moe_intermediate_size": 32, "moe_shared_expert_intermediate_size": 48,
                        "mamba_ssm_cache_dtype": "float32"})
    assert _kinds(old) == _kinds(new) == {("mamba2", False, False): 3,
                                          ("none", True, False): 2,
                                          ("attention", False, False): 1,
                                          ("none", True, True): 1}
    assert old.params == new.params
    assert old.ssm.state_bytes == 4   # the SSM state in fp32, the conv state at kv_bytes
    assert old.state_bytes_per_sequence == 3 * (8 * 16 * 16 * 4 + 4 * 192 * b)


def test_lfm2_conv_and_attention_layers_and_its_ffn_width():
    m = from_hf_dict({"model_type": "lfm2", **ATTN, "num_hidden_layers": 4,
                      "layer_types": ["conv", "conv", "full_attention", "conv"],
                      "intermediate_size": 300, "block_multiple_of": 32,
                      "block_ffn_dim_multiplier": 1.5})
    assert _kinds(m) == {("shortconv", True, False): 3, ("attention", True, False): 1}
    assert m.d_ff == 320  # int(1.5 x int(2 x 300 / 3)) = 300, rounded up to 32s
    assert (m.short_conv.conv_kernel, m.qk_norm, m.tied_embeddings) == (3, "head", True)
    # 3 conv layers x 3 taps x 64 channels
    assert m.state_bytes_per_sequence == 3 * 3 * 64 * b
    by_idx = from_hf_dict({"model_type": "lfm2", **ATTN, "num_hidden_layers": 4,
                           "full_attn_idxs": [2]})
    assert _kinds(by_idx) == _kinds(m)


def test_jamba_periods_and_offsets():
    m = from_hf_dict({"model_type": "jamba", **ATTN, "num_hidden_layers": 16,
                      "attn_layer_period": 8, "attn_layer_offset": 4, "expert_layer_period": 2,
                      "expert_layer_offset": 1, "num_experts": 4, "mamba_d_state": 16,
                      "mamba_dt_rank": "auto"})
    # layers 4 and 12 attention; odd layers experts: attention 4 dense, 12 dense
    assert _kinds(m) == {("mamba1", True, False): 6, ("mamba1", True, True): 8,
                         ("attention", True, False): 2}
    assert (m.mamba1.inner, m.mamba1.dt_rank, m.positions) == (128, 4, None)
    # 14 Mamba-1 layers x (SSM state 128 x 16 + conv state 4 taps x 128)
    assert m.state_bytes_per_sequence == 14 * (128 * 16 + 4 * 128) * b


def test_qwen3_next_linear_and_gated_attention_layers():
    m = from_hf_dict({"model_type": "qwen3_next", **ATTN, "num_hidden_layers": 8,
                      "head_dim": 16, "linear_num_key_heads": 2, "linear_key_head_dim": 8,
                      "linear_num_value_heads": 4, "linear_value_head_dim": 8,
                      "num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 32,
                      "shared_expert_intermediate_size": 48, "mlp_only_layers": [0]})
    # no layer_types: full attention on every 4th layer (transformers' default)
    assert _kinds(m) == {("deltanet", True, False): 1, ("deltanet", True, True): 5,
                         ("attention", True, True): 2}
    assert m.attn_output_gate and m.shared_gate and m.deltanet.chunk == 64
    # 6 DeltaNet layers x (4 value heads x 8 x 8 + 4 conv taps x (2 x 2 x 8 + 4 x 8))
    assert m.state_bytes_per_sequence == 6 * (4 * 8 * 8 + 4 * 64) * b


def test_olmo_hybrid_norms_over_all_heads_and_optional_rotary():
    m = from_hf_dict({"model_type": "olmo_hybrid", **ATTN, "num_hidden_layers": 4,
                      "linear_num_key_heads": 2, "linear_key_head_dim": 8,
                      "linear_num_value_heads": 4, "linear_value_head_dim": 8,
                      "rope_parameters": None})
    assert _kinds(m) == {("deltanet", True, False): 3, ("attention", True, False): 1}
    assert (m.qk_norm, m.positions, m.attn_output_gate) == ("full", None, False)


def test_every_family_the_issue_names_is_read_and_none_is_refused():
    """Issue 26's list (Mamba2, Jamba, Zamba2, Falcon-H1, Nemotron-H, Bamba,
    GraniteMoeHybrid, Qwen3-Next, LFM2, Kimi-Linear, OLMo-Hybrid) and MiniMax's lightning
    attention: each a hybrid family, none left in the refusals (Zamba, Zamba2 and
    Kimi-Linear were refused until they were modelled); an unknown hybrid-looking type is
    refused with its near names."""
    from symroof.models.hf_hybrid import HYBRID_FAMILIES, REFUSED
    named = {"mamba2", "jamba", "zamba2", "falcon_h1", "nemotron_h", "bamba",
             "granitemoehybrid", "qwen3_next", "lfm2", "kimi_linear", "olmo_hybrid", "minimax"}
    assert named <= set(HYBRID_FAMILIES) and REFUSED == {}
    with pytest.raises(SymroofError, match="unknown model_type 'zamba3' .*did you mean 'zamba"):
        from_hf_dict({"model_type": "zamba3", **ATTN, "num_hidden_layers": 2})


@pytest.mark.parametrize("cfg,field", [
    ({"model_type": "bamba", **ATTN, **SSM, "num_hidden_layers": 2,
      "layers_block_type": ["linear_attention"]}, "'layers_block_type' lists 1 layers"),
    ({"model_type": "granitemoehybrid", **ATTN, **SSM, "num_hidden_layers": 2,
      "layer_types": ["mamba", "gdn"]}, "'layer_types' lists gdn"),
    ({"model_type": "nemotron_h", **ATTN, "num_hidden_layers": 3, "mamba_num_heads": 8,
      "mamba_head_dim": 16, "layers_block_type": ["mlp", "mlp"]}, "cover every layer"),
    ({"model_type": "nemotron_h", **ATTN, "hybrid_override_pattern": "M-X"},
     "'hybrid_override_pattern' has"),
    ({"model_type": "bamba", **ATTN, **SSM, "num_hidden_layers": 2, "mamba_n_groups": 3},
     "'mamba_n_groups' 3 does not divide"),
    ({"model_type": "bamba", **ATTN, **SSM, "num_hidden_layers": 2, "mamba_d_head": 12},
     "'mamba_d_head' 12 = 96 must equal"),
    ({"model_type": "mamba2", "hidden_size": 64, "num_heads": 8, "head_dim": 32,
      "num_hidden_layers": 2, "vocab_size": 10}, "'head_dim' 32 = 256 must equal"),
    ({"model_type": "nemotron_h", **ATTN, "mamba_num_heads": 8, "mamba_head_dim": 16,
      "n_groups": 2, "hybrid_override_pattern": "ME", "moe_latent_size": 16},
     "'moe_latent_size'"),
    ({"model_type": "falcon_h1", **ATTN, **SSM, "num_hidden_layers": 2, "mamba_d_ssm": 128,
      "projectors_bias": True}, "'projectors_bias'"),
    ({"model_type": "bamba", **ATTN, **SSM, "num_hidden_layers": 2,
      "quantization_config": {"quant_method": "gptq"}}, "'quantization_config'"),
    ({"model_type": "jamba", **ATTN, "num_hidden_layers": 4, "attn_layer_period": 2,
      "attn_layer_offset": 2}, "'attn_layer_offset' 2 must be below its period 2"),
])
def test_bad_configs_name_the_field(cfg, field):
    with pytest.raises(SymroofError, match=field):
        from_hf_dict(cfg)


def test_nemotron_h_relu2_is_a_relu_and_a_multiply_under_ops_all():
    """ReLU^2 (transformers' ``ReLUSquaredActivation``: relu, then square) costs 2 FLOPs an
    element under ``ops="all"``, one more than a ReLU; contractions alone are unchanged."""
    from symroof.symbols import B, S
    from symroof.workloads.transformer import decode, prefill
    m = from_hf_dict({"model_type": "nemotron_h", **ATTN, "head_dim": 16, "mamba_num_heads": 8,
                      "mamba_head_dim": 16, "n_groups": 2, "ssm_state_size": 16,
                      "chunk_size": 4, "layers_block_type": ["linear_attention",
                                                             "full_attention", "mlp", "moe"],
                      "n_routed_experts": 4, "num_experts_per_tok": 2,
                      "moe_intermediate_size": 32, "moe_shared_expert_intermediate_size": 48})
    assert m.activation == "relu2"
    relu = m.replace(activation="relu")
    # activated values per token: the MLP's 96, 2 routed experts' 32 each, the shared 48
    per_token = 96 + 2 * 32 + 48
    assert prefill(m, B, 8, ops="all").flops - prefill(relu, B, 8, ops="all").flops \
        == 8 * B * per_token
    assert decode(m, B, context=S, ops="all").flops - \
        decode(relu, B, context=S, ops="all").flops == B * per_token
    assert prefill(m, B, 8).flops == prefill(relu, B, 8).flops


def test_falcon_mamba_is_mamba_with_weightless_dt_b_c_norms():
    """Falcon-Mamba: Mamba's layers plus RMSNorms on dt, B and C without gains (the same
    parameters; under ops="all" 3 FLOPs an element over R + 2N values a token and layer:
    square, sum, rsqrt-scale, no gamma); contractions alone are Mamba's."""
    from symroof.workloads.transformer import prefill
    cfg = {"hidden_size": 64, "state_size": 8, "num_hidden_layers": 2, "vocab_size": 100,
           "time_step_rank": 6}
    falcon = from_hf_dict({"model_type": "falcon_mamba", **cfg})
    mamba = from_hf_dict({"model_type": "mamba", **cfg})
    assert falcon.mamba1.norms and not falcon.mamba1.norm_weights
    assert falcon.params == mamba.params
    assert prefill(falcon, 2, 5).flops == prefill(mamba, 2, 5).flops
    extra = prefill(falcon, 2, 5, ops="all").flops - prefill(mamba, 2, 5, ops="all").flops
    assert extra == 2 * 5 * 2 * 3 * (6 + 2 * 8)


def test_lfm2_moe_dense_layers_then_experts():
    m = from_hf_dict({"model_type": "lfm2_moe", **ATTN, "num_hidden_layers": 4,
                      "num_dense_layers": 2, "num_experts": 8, "num_experts_per_tok": 2,
                      "moe_intermediate_size": 32,
                      "layer_types": ["conv", "full_attention", "conv", "conv"]})
    assert _kinds(m) == {("shortconv", True, False): 1, ("attention", True, False): 1,
                         ("shortconv", True, True): 2}
    assert (m.d_ff, m.experts, m.experts_per_token, m.expert_d_ff) == (96, 8, 2, 32)
    with pytest.raises(SymroofError, match="field 'layer_types' is required for lfm2_moe"):
        from_hf_dict({"model_type": "lfm2_moe", **ATTN, "num_hidden_layers": 4})

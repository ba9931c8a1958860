"""Model descriptions (symroof.models): the symbolic transformer, presets, precisions and
Hugging Face config.json import.

Parameter counts are checked against hand-written closed forms (the seeds' 12 L D^2 and
each family's per-layer weight list) and against the published totals of the real
models; KV-cache sizes against the seeds' figures.
"""

from __future__ import annotations

import json

import pytest
import sympy as sp

from symroof.testing import assert_formula_equal
from symroof.errors import SymroofError
from symroof.ir import Kind
from symroof.models import from_hf_config, from_hf_dict, get, names, resolve, transformer
from symroof.symbols import B, D, G, H, L, S, V, b, d_ff
from symroof.workloads.transformer import decode, weight_tensors




# ---------------------------------------------------------------------------
# the seeds' symbolic model


def test_symbolic_transformer_params_is_12LD2():
    m = transformer(layers=L, d_model=D, heads=H)
    assert_formula_equal(m.params, 12 * L * D**2)
    # the seed's derivation: Q, K, V, O (4 D^2) plus the two MLP matrices (2 D d_ff), d_ff = 4D
    assert_formula_equal(m.params, L * (4 * D**2 + 2 * D * (4 * D)))
    assert_formula_equal(m.head_dim, D / H)
    assert m.kv_heads == H
    assert_formula_equal(m.d_ff, 4 * D)


def test_seed_preset_params_exact():
    m = get("seed-6.4b")
    assert m.params == 6_442_450_944 == 12 * 32 * 4096**2
    assert float(m.params) == pytest.approx(6.44e9, rel=1e-3)   # "6.44 x 10^9"
    sym = transformer(layers=L, d_model=D, heads=H)
    assert sym.params.subs({L: 32, D: 4096}) == m.params


def test_gated_mlp_has_three_matrices():
    plain = transformer(layers=L, d_model=D, heads=H, d_ff=d_ff)
    gated = transformer(layers=L, d_model=D, heads=H, d_ff=d_ff, mlp="gated")
    assert_formula_equal(plain.params, L * (4 * D**2 + 2 * D * d_ff))
    assert_formula_equal(gated.params, L * (4 * D**2 + 3 * D * d_ff))
    mlp_weights = {t.name for t, _ in weight_tensors(gated) if t.name in {"W_up", "W_gate", "W_down"}}
    assert mlp_weights == {"W_up", "W_gate", "W_down"}
    assert gated.activation == "silu" and plain.activation == "gelu"


def test_gqa_params_and_kv_dim():
    m = transformer(layers=L, d_model=D, heads=H, kv_heads=G)
    assert_formula_equal(m.kv_dim, G * D / H)
    assert_formula_equal(m.params, L * (2 * D**2 + 2 * D * G * D / H + 8 * D**2))


def test_vocab_untied_and_tied():
    untied = transformer(layers=L, d_model=D, heads=H, vocab=V)
    tied = transformer(layers=L, d_model=D, heads=H, vocab=V, tied_embeddings=True)
    assert_formula_equal(untied.params, 12 * L * D**2 + 2 * V * D)
    assert_formula_equal(tied.params, 12 * L * D**2 + V * D)


# ---------------------------------------------------------------------------
# presets against published totals and a hand formula


def llama_params(layers, d, heads, kv, ff, vocab, *, tied=False, head_dim=None, qkv_bias=False,
                 o_bias=False, mlp_bias=False, experts=1):
    """Llama-family parameter count from its weight list (RMSNorm: one gain vector)."""
    hd = head_dim or d // heads
    q, kvd = heads * hd, kv * hd
    attn = d * q + 2 * d * kvd + q * d + (q + 2 * kvd if qkv_bias else 0) + (d if o_bias else 0)
    mlp = 3 * d * ff + (2 * ff + d if mlp_bias else 0)
    router = d * experts if experts > 1 else 0
    per_layer = attn + experts * mlp + router + 2 * d
    return layers * per_layer + d + vocab * d * (1 if tied else 2)


def gpt2_params(layers, d, vocab, positions, ff=None):
    """GPT-2 parameter count: LayerNorm gain and bias, biases on every linear, tied head."""
    ff = ff or 4 * d
    per_layer = (3 * d * d + 3 * d) + (d * d + d) + (d * ff + ff) + (ff * d + d) + 2 * 2 * d
    return layers * per_layer + 2 * d + vocab * d + positions * d


@pytest.mark.parametrize("name,published,hand", [
    ("llama-3-8b", 8_030_261_248, llama_params(32, 4096, 32, 8, 14336, 128256)),
    ("llama-3-70b", 70_553_706_496, llama_params(80, 8192, 64, 8, 28672, 128256)),
    ("llama-2-7b", 6_738_415_616, llama_params(32, 4096, 32, 32, 11008, 32000)),
    ("mistral-7b", 7_241_732_096, llama_params(32, 4096, 32, 8, 14336, 32000)),
    ("mixtral-8x7b", 46_702_792_704, llama_params(32, 4096, 32, 8, 14336, 32000, experts=8)),
    ("qwen2-7b", 7_615_616_512, llama_params(28, 3584, 28, 4, 18944, 152064, qkv_bias=True)),
    ("gpt2", 124_439_808, gpt2_params(12, 768, 50257, 1024)),
])
def test_preset_params_match_published_totals(name, published, hand):
    assert get(name).params == hand
    assert get(name).params == published


def test_llama_3_published_rounded_sizes():
    assert float(get("llama-3-8b").params) == pytest.approx(8.03e9, rel=1e-3)
    assert float(get("llama-3-70b").params) == pytest.approx(70.55e9, rel=1e-3)
    assert float(get("llama-3-70b").params) == pytest.approx(70.6e9, rel=1e-3)   # "70.6B"


def test_gpt3_presets_are_close_to_their_names():
    assert float(get("gpt3-175b").params) == pytest.approx(175e9, rel=5e-3)
    assert float(get("gpt3-6.7b").params) == pytest.approx(6.7e9, rel=1e-2)


# ---------------------------------------------------------------------------
# KV cache


def test_llama_3_70b_kv_per_token_327680_bytes():
    m = get("llama-3-70b")
    per_token = m.kv_bytes_per_token.subs(b, 2)
    assert per_token == 327_680 == 2 * 80 * 8 * 128 * 2
    assert per_token == 320 * 1024   # seed 001: "KV 320 KB/token"


def test_seed_kv_per_token_and_per_sequence():
    m = get("seed-6.4b")
    per_token = m.kv_bytes_per_token.subs(b, 2)
    assert per_token == 512 * 1024 == 2 * 32 * 4096 * 2            # 512 KiB per token
    assert per_token * 1024 == 536_870_912                         # per 1,024-token sequence
    assert float(per_token * 1024) == pytest.approx(537e6, rel=1e-3)   # "537 MB"


def test_symbolic_kv_per_token():
    assert_formula_equal(transformer(layers=L, d_model=D, heads=H).kv_bytes_per_token, 2 * L * D * b)
    assert_formula_equal(transformer(layers=L, d_model=D, heads=H, kv_heads=G).kv_bytes_per_token,
                2 * L * D * b * G / H)


# ---------------------------------------------------------------------------
# precisions


def test_with_precision_bytes_per_kind():
    m = get("llama-3-8b")
    q = m.with_precision(weights="int4", kv_cache="fp8", activations="bf16")
    assert q.weight_bytes == sp.Rational(1, 2)
    assert q.kv_bytes == 1
    assert q.activation_bytes == 2
    assert m.weight_bytes == b and m.kv_bytes == b   # the original is unchanged
    assert q.params == m.params


def test_with_precision_moves_decode_bytes():
    sym = transformer(layers=L, d_model=D, heads=H)
    q = sym.with_precision(weights="int4", kv_cache="fp8", activations="bf16")
    dec = decode(q, B, S)
    assert_formula_equal(dec.bytes_by_kind[Kind.WEIGHT], 12 * L * D**2 / 2)
    assert_formula_equal(dec.bytes_by_kind[Kind.KV_CACHE], 2 * L * S * D * B * 1)
    assert_formula_equal(dec.flops, decode(sym, B, S).flops)


def test_with_precision_rejects_unknown_format():
    with pytest.raises(SymroofError, match="fp7"):
        get("llama-3-8b").with_precision(weights="fp7")


# ---------------------------------------------------------------------------
# Hugging Face config.json


LLAMA_3_8B = {"model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32,
              "num_key_value_heads": 8, "intermediate_size": 14336, "num_hidden_layers": 32,
              "vocab_size": 128256, "max_position_embeddings": 8192, "rope_theta": 500000.0,
              "tie_word_embeddings": False, "rms_norm_eps": 1e-05, "attention_bias": False,
              "mlp_bias": False, "hidden_act": "silu", "head_dim": 128}
MISTRAL_7B = {"model_type": "mistral", "hidden_size": 4096, "num_attention_heads": 32,
              "num_key_value_heads": 8, "intermediate_size": 14336, "num_hidden_layers": 32,
              "vocab_size": 32000, "sliding_window": 4096, "tie_word_embeddings": False}
QWEN2_7B = {"model_type": "qwen2", "hidden_size": 3584, "num_attention_heads": 28,
            "num_key_value_heads": 4, "intermediate_size": 18944, "num_hidden_layers": 28,
            "vocab_size": 152064, "tie_word_embeddings": False}
MIXTRAL_8X7B = {"model_type": "mixtral", "hidden_size": 4096, "num_attention_heads": 32,
                "num_key_value_heads": 8, "intermediate_size": 14336, "num_hidden_layers": 32,
                "vocab_size": 32000, "num_local_experts": 8, "num_experts_per_tok": 2,
                "tie_word_embeddings": False}
GPT2 = {"model_type": "gpt2", "n_embd": 768, "n_head": 12, "n_layer": 12, "n_positions": 1024,
        "n_inner": None, "vocab_size": 50257, "activation_function": "gelu_new"}


def test_hf_llama():
    m = from_hf_dict(LLAMA_3_8B)
    assert (m.layers, m.d_model, m.heads, m.kv_heads, m.head_dim, m.d_ff, m.vocab) == \
        (32, 4096, 32, 8, 128, 14336, 128256)
    assert m.mlp == "gated" and m.norm == "rmsnorm" and m.positions == "rotary"
    assert not m.tied_embeddings and not m.qkv_bias
    assert m.params == get("llama-3-8b").params == 8_030_261_248


def test_hf_mistral():
    m = from_hf_dict(MISTRAL_7B)
    assert m.params == get("mistral-7b").params == llama_params(32, 4096, 32, 8, 14336, 32000)


def test_hf_qwen2_has_qkv_bias_only():
    m = from_hf_dict(QWEN2_7B)
    assert m.qkv_bias and not m.o_bias and not m.mlp_bias
    assert m.params == llama_params(28, 3584, 28, 4, 18944, 152064, qkv_bias=True)
    assert m.params == get("qwen2-7b").params
    names_ = {t.name for t, _ in weight_tensors(m)}
    assert {"W_q.bias", "W_k.bias", "W_v.bias"} <= names_ and "W_o.bias" not in names_


def test_hf_mixtral_experts():
    m = from_hf_dict(MIXTRAL_8X7B)
    assert m.experts == 8 and m.experts_per_token == 2
    assert m.params == llama_params(32, 4096, 32, 8, 14336, 32000, experts=8)
    assert m.params == get("mixtral-8x7b").params


def test_hf_gpt2():
    m = from_hf_dict(GPT2)
    assert m.d_ff == 4 * 768 and m.tied_embeddings and m.positions == "learned"
    assert m.max_positions == 1024 and m.norm == "layernorm" and m.mlp == "plain"
    assert m.params == gpt2_params(12, 768, 50257, 1024) == 124_439_808
    assert m.params == get("gpt2").params


def test_hf_llama_head_dim_independent_of_width():
    m = from_hf_dict({**LLAMA_3_8B, "hidden_size": 64, "num_attention_heads": 4,
                      "num_key_value_heads": 2, "head_dim": 24, "intermediate_size": 160,
                      "num_hidden_layers": 2, "vocab_size": 128})
    assert m.head_dim == 24 and m.q_dim == 96 and m.kv_dim == 48
    assert m.params == llama_params(2, 64, 4, 2, 160, 128, head_dim=24)


def test_hf_llama_biases():
    m = from_hf_dict({**LLAMA_3_8B, "attention_bias": True, "mlp_bias": True})
    assert m.qkv_bias and m.o_bias and m.mlp_bias
    assert m.params == llama_params(32, 4096, 32, 8, 14336, 128256, qkv_bias=True, o_bias=True,
                                    mlp_bias=True)


def test_from_hf_config_reads_a_file(tmp_path):
    d = tmp_path / "Meta-Llama-3-8B"
    d.mkdir()
    (d / "config.json").write_text(json.dumps(LLAMA_3_8B))
    m = from_hf_config(d / "config.json")
    assert m.name == "Meta-Llama-3-8B"
    assert m.params == 8_030_261_248
    other = tmp_path / "gpt2-small.json"
    other.write_text(json.dumps(GPT2))
    assert from_hf_config(other).name == "gpt2-small"
    assert resolve(str(other)).params == 124_439_808


def test_from_hf_config_bad_files(tmp_path):
    with pytest.raises(SymroofError, match="cannot read"):
        from_hf_config(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(SymroofError, match="not valid JSON"):
        from_hf_config(bad)
    arr = tmp_path / "list.json"
    arr.write_text("[1, 2]")
    with pytest.raises(SymroofError):
        from_hf_config(arr)


@pytest.mark.parametrize("model_type,suggested", [
    ("lama", "llama"), ("gpt-2", "gpt2"), ("mixtrall", "mixtral"), ("qwen", "qwen2"),
])
def test_unknown_model_type_suggests_close_names(model_type, suggested):
    with pytest.raises(SymroofError, match="unknown model_type") as err:
        from_hf_dict({**LLAMA_3_8B, "model_type": model_type})
    assert f"'{suggested}'" in str(err.value)
    assert "did you mean" in str(err.value)


def test_missing_model_type():
    cfg = dict(LLAMA_3_8B)
    del cfg["model_type"]
    with pytest.raises(SymroofError, match="model_type"):
        from_hf_dict(cfg)


@pytest.mark.parametrize("cfg,field", [
    (LLAMA_3_8B, "hidden_size"), (LLAMA_3_8B, "num_hidden_layers"),
    (LLAMA_3_8B, "vocab_size"), (LLAMA_3_8B, "intermediate_size"),
    (GPT2, "n_embd"), (GPT2, "n_positions"),
])
def test_missing_field_is_named(cfg, field):
    broken = {k: v for k, v in cfg.items() if k != field}
    with pytest.raises(SymroofError, match=f"'{field}'") as err:
        from_hf_dict(broken)
    assert "missing" in str(err.value)


@pytest.mark.parametrize("value", [True, False, "4096", -4096, 0, 4096.0, [4096]])
def test_ill_typed_int_field_is_named(value):
    with pytest.raises(SymroofError, match="'hidden_size'"):
        from_hf_dict({**LLAMA_3_8B, "hidden_size": value})


@pytest.mark.parametrize("field,value", [
    ("tie_word_embeddings", "yes"), ("attention_bias", 1), ("mlp_bias", "false"),
])
def test_ill_typed_bool_field_is_named(field, value):
    with pytest.raises(SymroofError, match=f"'{field}'"):
        from_hf_dict({**LLAMA_3_8B, field: value})


@pytest.mark.parametrize("field,value", [("n_head", -12), ("n_layer", True), ("n_inner", "3072")])
def test_ill_typed_gpt2_field_is_named(field, value):
    with pytest.raises(SymroofError, match=f"'{field}'"):
        from_hf_dict({**GPT2, field: value})


def test_kv_heads_must_divide_heads():
    with pytest.raises(SymroofError, match="num_key_value_heads"):  # the config.json field
        from_hf_dict({**LLAMA_3_8B, "num_key_value_heads": 7})


def test_not_a_mapping():
    with pytest.raises(SymroofError):
        from_hf_dict(["llama"])  # type: ignore[arg-type]


# ---------------------------------------------------------------------------
# preset lookup


@pytest.mark.parametrize("typo,suggested", [
    ("llama-3-8", "llama-3-8b"), ("seed-6.4", "seed-6.4b"), ("gpt3-175", "gpt3-175b"),
])
def test_unknown_preset_suggests_close_names(typo, suggested):
    with pytest.raises(SymroofError, match="unknown model") as err:
        get(typo)
    assert f"'{suggested}'" in str(err.value)


def test_preset_names_listed():
    assert {"seed-6.4b", "llama-3-8b", "llama-3-70b", "gpt3-175b", "gpt3-6.7b"} <= set(names())


@pytest.mark.parametrize("kwargs", [
    {"mlp": "swiglu"}, {"kv_heads": 5}, {"norm": "batchnorm"}, {"positions": "alibi"},
    {"positions": "learned"},             # learned positions need max_positions
    {"tied_embeddings": True},            # tying needs a vocab
    {"experts": 2, "experts_per_token": 3},
])
def test_transformer_rejects_bad_fields(kwargs):
    with pytest.raises(SymroofError):
        transformer(layers=2, d_model=64, heads=4, **kwargs)

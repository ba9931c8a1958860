"""Zamba2 (and Zamba): Mamba-2 (Mamba-1) layers and hybrid layers that run a shared
transformer block first.

The shared blocks' weights are counted once (``num_mem_blocks`` of them) in parameters
and weight bytes, while their FLOPs and weight reads count at every use; each use has its
own adapters and its own linear. Checked here against a count by hand of transformers
5.24's modules (the tiny model the hybrid oracle records: its PyTorch parameter count and
FlopCounterMode totals are in ``tests/fixtures/hybrid_flops.json``), and bad input.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import sympy as sp

from symroof.atlas.hybrid import state_vs_kv
from symroof.errors import SymroofError
from symroof.ir import Kind
from symroof.models import from_hf_dict
from symroof.symbols import b
from symroof.workloads.recurrent import ScanChoices
from symroof.workloads.transformer import decode, prefill, training_graph

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "hybrid_flops.json"
TINY = dict(model_type="zamba2", hidden_size=64, intermediate_size=96, num_attention_heads=4,
            vocab_size=100, n_mamba_heads=8, mamba_d_state=16, mamba_ngroups=2, chunk_size=4,
            num_hidden_layers=5, num_mem_blocks=2, use_shared_attention_adapter=True,
            adapter_rank=8, use_mem_rope=True,
            layers_block_type=["mamba", "hybrid", "mamba", "hybrid", "hybrid"])
D, F, V, R, HY, L = 64, 96, 100, 8, 3, 5
I, HS, N, G, K = 128, 8, 16, 2, 4     # Mamba-2: inner, heads, state, groups, conv taps


def _cfg(**changes):
    return {**TINY, **changes}


def _block() -> int:
    """One shared block's parameters: the 2D norm, Q K V from 2D, O to D, the norm, gate_up
    and down (no adapters: those are per use)."""
    return 2 * D + 3 * (2 * D) * (2 * D) + (2 * D) * D + D + D * 2 * F + F * D


def _per_use(attention_adapter: bool = True) -> int:
    """A hybrid layer's own parameters: adapters (Q, K, V; gate_up) and the linear."""
    attn = 3 * (2 * D * R + R * 2 * D) if attention_adapter else 0
    return attn + D * R + R * 2 * F + D * D


def _mamba_layer() -> int:
    conv = I + 2 * G * N
    return D + D * (I + conv + HS) + conv * K + conv + 3 * HS + I + I * D


def test_parameters_count_the_shared_blocks_once():
    """By hand from transformers' modules: embeddings (tied), L Mamba-2 layers, M blocks,
    a linear and adapters per hybrid layer, the final norm; the fixture's torch count."""
    expect = V * D + L * _mamba_layer() + 2 * _block() + HY * _per_use() + D
    m = from_hf_dict(TINY)
    assert m.params == expect == 347064
    recorded = {e["params"] for e in json.loads(FIXTURE.read_text())["entries"]
                if e["model"] == "zamba2"}
    assert recorded == {expect}


def test_flops_and_weight_reads_per_use_weight_bytes_once():
    """One block or three: the same FLOPs and the same weight reads in a decode step (every
    use reads its block), parameters one block apart per block; the decode step's weight
    reads are every use's block plus the rest, by hand."""
    one, two, three = (from_hf_dict(_cfg(num_mem_blocks=k)) for k in (1, 2, 3))
    assert two.params - one.params == _block() and three.params - two.params == _block()
    f1 = prefill(one, 2, 8).flops
    assert sp.cancel(prefill(three, 2, 8).flops - f1) == 0
    d1, d3 = decode(one, 1, past=7), decode(three, 1, past=7)
    assert sp.cancel(d1.flops - d3.flops) == 0
    reads = d1.bytes_by_kind[Kind.WEIGHT]
    assert sp.cancel(d3.bytes_by_kind[Kind.WEIGHT] - reads) == 0
    # the tied table: the LM head reads it whole, the lookup one row
    by_hand = (L * _mamba_layer() + HY * (_block() + _per_use()) + D + V * D + D) * b
    assert sp.expand(reads - by_hand) == 0


def test_adapters_cost_their_low_rank_products_per_use():
    """Q, K, V adapters: 3 (2D r + r 2D) parameters and 2 x that many FLOPs per token per
    hybrid layer (contractions), none of it shared."""
    on = from_hf_dict(TINY).with_scan(ScanChoices.torch())
    off = from_hf_dict(_cfg(use_shared_attention_adapter=False)).with_scan(ScanChoices.torch())
    per = 3 * (2 * D * R + R * 2 * D)
    assert on.params - off.params == HY * per
    assert prefill(on, 2, 8, causal="none").flops - prefill(off, 2, 8, causal="none").flops \
        == 2 * 2 * 8 * HY * per


def test_cache_holds_kv_at_hybrid_layers_states_at_every_layer():
    m = from_hf_dict(TINY)
    s = sp.Symbol("S", positive=True, integer=True)
    assert sp.expand(m.attention_kv_bytes(s) - HY * 2 * (2 * D) * s * b) == 0
    assert sp.expand(m.state_bytes_per_sequence
                     - L * ((I + 2 * G * N) * K + HS * (I // HS) * N) * b) == 0
    assert m.attention_layers == HY and m.ssm_layers == L


@pytest.mark.parametrize("changes, field", [
    (dict(add_bias_linear=True), "add_bias_linear"),
    (dict(layers_block_type=["mamba", "hybrid"]), "layers_block_type"),
    (dict(layers_block_type=["mamba", "attention", "mamba", "hybrid", "hybrid"]),
     "layers_block_type"),
    (dict(n_mamba_heads=5), "n_mamba_heads"),
    (dict(mamba_ngroups=3), "mamba_ngroups"),
    (dict(num_attention_heads=3), "num_attention_heads"),
    (dict(hidden_act="swish_beta"), "hidden_act"),
])
def test_bad_configs_name_the_field(changes, field):
    with pytest.raises(SymroofError, match=field):
        from_hf_dict(_cfg(**changes))


def test_grouped_kv_with_attention_adapters_is_refused():
    """The adapters add 2D values to K and V: transformers needs as many KV heads as
    heads when they are on."""
    with pytest.raises(SymroofError, match="num_key_value_heads"):
        from_hf_dict(_cfg(num_key_value_heads=2))
    grouped = from_hf_dict(_cfg(num_key_value_heads=2, use_shared_attention_adapter=False))
    assert sp.expand(grouped.attention_kv_bytes(1) - HY * 2 * D * b) == 0  # 2 heads of 32


def test_parallel_layouts_and_training_are_refused_by_name():
    m = from_hf_dict(TINY)
    with pytest.raises(SymroofError, match=r"pp 2: .*embeddings"):
        decode(m, 1, past=7, pp=2)
    with pytest.raises(SymroofError, match=r"tp 2: .*shared blocks"):
        prefill(m, 1, 8, tp=2)
    with pytest.raises(SymroofError, match="training graphs of Zamba2"):
        training_graph(m, 1, 8)


@pytest.mark.parametrize("changes, torch_params", [
    ({}, 2_481_848_336),
    (dict(use_shared_attention_adapter=True, num_mem_blocks=2), 2_687_639_056),
])
def test_full_size_parameters_match_torch(changes, torch_params):
    """transformers 5.24's ``Zamba2Config`` defaults (54 layers, 9 hybrid, d 2560), built
    on the meta device with ``Zamba2ForCausalLM`` (tied blocks counted once by
    ``model.parameters()``): the counts recorded here. With adapters and 2 blocks the
    difference is one block plus 9 uses' Q, K, V adapters of rank 128."""
    m = from_hf_dict({"model_type": "zamba2", **changes})
    assert m.params == torch_params
    d, f, r = 2560, 10240, 128
    block = 2 * d + 3 * (2 * d) ** 2 + 2 * d * d + d + 3 * d * f
    assert 2_687_639_056 - 2_481_848_336 == block + 9 * 3 * 2 * (2 * d * r)


def test_state_against_kv_crossover_of_the_default_config():
    """Zamba2Config's defaults: 54 Mamba-2 layers each hold (I + 2GN) K conv values and
    H P N state values (I = 5120, G = 1, N = 64, K = 4, 8 heads of 640); the 9 hybrid
    layers hold K and V 2 x 2560 wide per position: equal at S = 18828288 / 92160."""
    m = from_hf_dict({"model_type": "zamba2"})
    state = 54 * ((5120 + 2 * 64) * 4 + 8 * 640 * 64)
    assert sp.expand(m.state_bytes_per_sequence - state * b) == 0
    assert sp.expand(m.kv_bytes_per_token - 9 * 2 * 5120 * b) == 0
    (x,) = state_vs_kv(m)
    assert x.value == sp.Rational(state, 9 * 2 * 5120) == sp.Rational(2043, 10)


ZAMBA1 = dict(model_type="zamba", hidden_size=64, intermediate_size=96, num_attention_heads=4,
              num_key_value_heads=4, vocab_size=100, n_mamba_heads=2, mamba_d_state=8,
              mamba_dt_rank=8, num_hidden_layers=4,
              layers_block_type=["mamba", "hybrid", "mamba", "hybrid"])


def test_zamba_v1_parameters_by_hand_and_full_size():
    """Zamba (v1): multi-head Mamba-1 layers (x_proj and dt_proj per head: the same
    parameters as one head's), one shared block without adapters, a linear per use; the
    fixture's torch count, and ZambaConfig's defaults (76 layers, 13 hybrid, d 3712) on
    the meta device: 7,232,490,496."""
    i, n, r, k = 128, 8, 8, 4
    mamba = D + D * 2 * i + i * k + i + i * (r + 2 * n) + r * i + i + i * n + i + i * D
    block = 2 * D + 3 * (2 * D) ** 2 + 2 * D * D + D + 3 * D * F
    expect = V * D + 4 * mamba + block + 2 * D * D + D
    m = from_hf_dict(ZAMBA1)
    assert m.params == expect == 213248
    assert {e["params"] for e in json.loads(FIXTURE.read_text())["entries"]
            if e["model"] == "zamba"} == {expect}
    assert from_hf_dict({"model_type": "zamba"}).params == 7_232_490_496
    assert (m.attention_layers, m.ssm_layers) == (2, 4)


def test_zamba_v1_refusals_name_the_field():
    with pytest.raises(SymroofError, match="attention_hidden_size"):
        from_hf_dict({**ZAMBA1, "attention_hidden_size": 96})
    with pytest.raises(SymroofError, match="n_mamba_heads"):
        from_hf_dict({**ZAMBA1, "n_mamba_heads": 3})
    with pytest.raises(SymroofError, match="layers_block_type"):
        from_hf_dict({**ZAMBA1, "layers_block_type": ["mamba"]})

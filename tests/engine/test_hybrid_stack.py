"""Hybrid stacks: attention and Mamba-2 layers per layer group, prefill, decode, training,
memory, capacity and tensor parallelism.

The per-layer counts are written out by hand below (the arithmetic in comments); the
stack's totals must be those counts times each group's layers.
"""

from __future__ import annotations

import pytest
import sympy as sp

import symroof as sr
from symroof.errors import SymroofError
from symroof.ir import Kind
from symroof.models.hybrid import Mamba2, hybrid, pattern_groups
from symroof.symbols import B, D, H, L, S, b, dim
from symroof.workloads.builder import LayerGroup
from symroof.workloads.transformer import decode, prefill, training

A, G, F, HS, P, N, Q = (dim(n) for n in ("A", "G", "F", "H_s", "P", "N", "Q"))
HD = D / H


def _model(**kw):
    fields = dict(layers=L, d_model=D, heads=H, kv_heads=G, mlp="gated", d_ff=F,
                  ssm=Mamba2(heads=HS, head_dim=P, state=N, chunk=Q),
                  groups=(LayerGroup(A), LayerGroup(L - A, mixer="mamba2")))
    fields.update(kw)
    return hybrid(**fields)


def _state():  # per mamba layer and sequence: the SSM state and 4 taps of x, B and C
    return HS * P * N + 4 * (HS * P + 2 * N)


def test_decode_reads_kv_on_attention_layers_and_state_on_mamba_layers():
    m = _model()
    dec = decode(m, B, context=S, logits="none")
    kv = 2 * S * G * HD  # K and V of one attention layer and sequence
    assert sp.cancel(dec.bytes - m.params * b - B * b * (A * kv + 2 * (L - A) * _state())) == 0
    assert sp.cancel(dec.bytes_by_kind[Kind.KV_CACHE]
                     - B * b * (A * kv + 2 * (L - A) * _state())) == 0
    # FLOPs: attention layers 2 x (q, k, v, o weights) + 4 S D (scores and PV); mamba
    # layers their projections, conv and the step (2 H P N); every layer its MLP (3 D F)
    attn = 2 * (2 * D * D + 2 * D * G * HD) + 4 * S * D
    ssm = 2 * D * (2 * HS * P + 2 * N + HS) + 2 * HS * P * D + 8 * (HS * P + 2 * N) \
        + 2 * HS * P * N
    expect = B * (A * attn + (L - A) * ssm + L * 2 * 3 * D * F)
    assert sp.cancel(dec.flops - expect) == 0


def test_cache_split_into_state_and_kv():
    m = _model()
    assert sp.cancel(m.state_bytes_per_sequence - (L - A) * _state() * b) == 0
    assert sp.cancel(m.attention_kv_bytes(S) - A * 2 * S * G * HD * b) == 0
    assert sp.cancel(m.kv_bytes_per_token - A * 2 * G * HD * b) == 0
    mem = sr.memory(m, batch=B, context=S)
    assert sp.cancel(mem.kv_cache - B * (m.state_bytes_per_sequence
                                         + m.attention_kv_bytes(S))) == 0


def _small(**kw):
    fields = dict(layers=8, d_model=512, heads=8, kv_heads=2, mlp="gated", d_ff=1024,
                  vocab=1000, ssm=Mamba2(heads=16, head_dim=64, state=64, chunk=64, groups=2),
                  groups=(LayerGroup(2), LayerGroup(6, mixer="mamba2")))
    fields.update(kw)
    return hybrid(**fields)


def test_capacity_counts_state_bytes_per_sequence():
    m = _small()
    hw = sr.hardware.get("h100-sxm")
    n = sr.capacity(m, hw, context=8192)
    per_seq = (m.attention_kv_bytes(8192) + m.state_bytes_per_sequence).subs(b, 2)
    free = hw.capacity(None) - m.params * 2
    assert n * per_seq <= free < (n + 1) * per_seq
    # 2 attention layers x 2 (K, V) x 8192 x 2 KV heads x 64 x 2 B; 6 x state at 2 B
    assert per_seq == 2 * 2 * 8192 * 2 * 64 * 2 + 6 * (16 * 64 * 64 + 4 * (1024 + 256)) * 2


@pytest.mark.parametrize("phase", ["decode", "prefill"])
@pytest.mark.parametrize("choices", [{}, {"scan": "sequential"},
                                     {"passing": "quadratic", "cb": "head"}])
def test_tensor_parallel_splits_heads_and_groups(phase, choices):
    m = _small().with_scan(**choices)
    run = (lambda **k: decode(m, B, context=S, **k)) if phase == "decode" else \
        (lambda **k: prefill(m, B, 128, **k))
    one, two = run(), run(tp=2)
    assert sp.cancel(one.flops - 2 * two.flops) == 0  # every GEMM split in two
    w1, w2 = one.bytes_by_kind[Kind.WEIGHT], two.bytes_by_kind[Kind.WEIGHT]
    # every weight halves: the model has no d_model norms (which would be replicated),
    # the SSM's gated norm is per group and splits with the groups, the embedding by rows
    assert sp.expand(w1 - 2 * w2) == 0
    if phase == "decode":  # the state splits with the heads
        assert sp.cancel(one.bytes_by_kind[Kind.KV_CACHE]
                         - 2 * two.bytes_by_kind[Kind.KV_CACHE]) == 0


def test_tensor_parallel_must_split_the_ssm_groups():
    with pytest.raises(SymroofError,
                       match=r"tp 4: does not split .* expected one of 1, 2; layouts"):
        decode(_small(), 1, context=8, tp=4)


def test_parallel_mixer_sums_attention_and_mamba():
    side = _model(groups=(LayerGroup(L, mixer="parallel"),))
    alone = _model(groups=(LayerGroup(A), LayerGroup(L - A, mixer="mamba2")))
    both = decode(side, B, context=S, logits="none").flops
    split = decode(alone, B, context=S, logits="none").flops
    mlp = 2 * 3 * D * F * B
    # all layers attention + mamba == (A attention layers + L - A mamba layers) with A = L
    # for the attention part and A = 0 for the mamba part, each with one MLP per layer
    attn_all = split.subs(A, L)
    ssm_all = split.subs(A, 0)
    assert sp.cancel(both - (attn_all + ssm_all - L * mlp)) == 0


def test_mixer_only_and_mlp_only_layers():
    kinds = [("mamba2", "none")] * 4 + [("attention", "none")] + [("none", "dense")] * 3
    m = _small(groups=pattern_groups(kinds, moe_model=False))
    parts = {grp.prefix: grp.count for grp in m.layer_groups}
    assert parts == {"mamba.": 4, "no_mlp.": 1, "mlp_only.": 3}
    one = {k: _small(layers=1, groups=pattern_groups([k], moe_model=False))
           for k in set(kinds)}
    dec = decode(m, 3, context=100, logits="none").flops
    head = decode(one[("none", "dense")], 3, context=100, logits="none")  # no layer-free part
    assert dec == sum(kinds.count(k) * decode(x, 3, context=100, logits="none").flops
                      for k, x in one.items())
    assert head.flops == 3 * 2 * 3 * 512 * 1024


def test_training_runs_forward_backward_and_optimizer():
    m = _small()
    fwd, step = prefill(m, 2, 128), training(m, 2, 128)
    # each GEMM gains two of its size; attention recomputes its scores in the backward
    assert 3 * fwd.flops < step.flops < 3.2 * fwd.flops


@pytest.mark.parametrize("groups,field", [
    ((LayerGroup(2), LayerGroup(5, mixer="mamba2")), "cover 7 layers"),
    ((LayerGroup(8, mixer="mamba3"),), "mixer"),
    ((LayerGroup(8, mixer="none", ffn=False),), "neither mixer nor MLP"),
    ((LayerGroup(8, moe=True),), "experts"),
])
def test_bad_patterns_name_the_field(groups, field):
    with pytest.raises(SymroofError, match=field):
        _small(groups=groups)


def test_mamba_layers_need_ssm_widths():
    with pytest.raises(SymroofError, match="ssm"):
        _small(ssm=None)


def _stack(attn: int, mamba: int, window: object = None, windowed: int = 0):
    """d 64, 4 heads (2 KV) of 16; Mamba-2 8 heads of 16, state 16, 2 groups, chunk 8;
    ``windowed`` of the ``attn`` attention layers attend through ``window``."""
    groups = [LayerGroup(sp.Integer(n), windowed=w) for n, w in
              ((windowed, True), (attn - windowed, False)) if n]
    return hybrid(layers=attn + mamba, d_model=64, heads=4, kv_heads=2, d_ff=96, vocab=100,
                  window=window, ssm=Mamba2(heads=8, head_dim=16, state=16, groups=2, chunk=8),
                  groups=(*groups, LayerGroup(sp.Integer(mamba), mixer="mamba2")))


def test_windowed_attention_inside_a_hybrid():
    """Two of three attention layers attend through a window of 64 beside 3 Mamba-2
    layers: against the same stack without the window, a decode step reads K and V of
    min(S, 64) positions on those two (2 x 2 KV heads x 16 = 128 values a position
    fewer), does 4 x 4 heads x 16 = 256 FLOPs a position fewer on each, and the recurrent
    states do not change; a prefill's attention pairs are counted one by one below."""
    W = 64
    win, full = _stack(3, 3, window=W, windowed=2), _stack(3, 3)
    assert win.state_bytes_per_sequence == full.state_bytes_per_sequence
    assert sp.expand(win.attention_kv_bytes(S) - (64 * S + 128 * sp.Min(W, S)) * b) == 0
    d_win, d_full = (decode(m, B, context=S, logits="none") for m in (win, full))
    assert sp.expand(d_full.bytes - d_win.bytes - 128 * B * (S - sp.Min(W, S)) * b) == 0
    assert sp.expand(d_full.flops - d_win.flops - 2 * 256 * B * (S - sp.Min(W, S))) == 0
    # prefill, causal="exact": count the (query, key) pairs each layer attends, by brute force
    for seq in (40, 256):
        full_pairs = sum(i + 1 for i in range(seq))
        win_pairs = sum(min(i + 1, W) for i in range(seq))
        p_win, p_full = (prefill(m, 1, seq, causal="exact") for m in (win, full))
        assert p_full.flops - p_win.flops == 2 * 256 * (full_pairs - win_pairs)


@pytest.mark.parametrize("attn, mamba, half_attn, half_mamba, even", [
    (2, 4, 1, 2, True),    # 6 layers over 2 stages: each holds 1 attention and 2 Mamba-2
    (1, 3, 1, 2, False),   # an odd split: the busiest stage, ceil per group
])
def test_pipeline_across_mixed_groups(attn, mamba, half_attn, half_mamba, even):
    """pp=2 over attention and Mamba-2 groups: the last stage holds ceil(count / 2) layers
    of each group (a per-group convention: with odd counts this is the busiest stage a
    split could give), so its FLOPs are those of the smaller stack on one device, and its
    traffic differs from that stack's by a term that does not grow with the context (the
    first stage's embedding lookup): the KV and the states of its layers are the same."""
    m, stage = _stack(attn, mamba), _stack(half_attn, half_mamba)
    x, y = decode(m, B, context=S, pp=2), decode(stage, B, context=S)
    assert sp.expand(x.flops - y.flops) == 0
    assert S not in sp.expand(x.bytes - y.bytes).free_symbols
    x, y = prefill(m, B, 16, pp=2), prefill(stage, B, 16)
    assert sp.expand(x.flops - y.flops) == 0
    notes = " ".join(x.graph.provenance.assumptions)
    assert f"holds {half_mamba} of the {mamba} layers of block 'mamba_mlp_layer'" in notes
    assert ("busiest stage" in notes) is not even


def _jamba():
    from symroof.models import from_hf_dict
    return from_hf_dict({"model_type": "jamba", "hidden_size": 64, "intermediate_size": 96,
                         "num_attention_heads": 4, "num_key_value_heads": 2,
                         "vocab_size": 100, "num_hidden_layers": 4, "attn_layer_period": 2,
                         "attn_layer_offset": 1, "expert_layer_period": 2,
                         "expert_layer_offset": 0, "num_experts": 4, "num_experts_per_tok": 2,
                         "mamba_d_state": 8, "mamba_dt_rank": 8})


@pytest.mark.parametrize("phase", ["decode", "prefill"])
def test_tensor_parallel_splits_mamba1_channels_as_vllm(phase):
    """Jamba at tp=2: every GEMM of its Mamba-1 layers splits the I = 128 channels (in_proj
    and dt_proj by columns, x_proj and out_proj by rows, as vLLM's MambaMixer), so each
    device does half the FLOPs but the experts' router (replicated); x_proj's dt rank, B
    and C are partial sums, all-reduced (B x (8 + 8 + 8) values a layer and token); each
    device holds half of every Mamba-1 state."""
    m = _jamba()
    run = (lambda **kw: decode(m, 2, context=8, logits="none", **kw)) if phase == "decode" \
        else (lambda **kw: prefill(m, 2, 8, logits="none", **kw))
    one, two = run(), run(tp=2)
    router = sum(c.flops for n, c in one.per_op.items() if n.endswith(".router"))
    assert two.flops == (one.flops - router) / 2 + router
    g = two.graph
    reduced = {o.name.removeprefix("mamba1.mlp.").removesuffix(":all_reduce"): o.out.shape
               for o in g.ops if o.name.startswith("mamba1.") and o.name.endswith(":all_reduce")}
    tokens = 1 if phase == "decode" else 8
    assert {k: reduced[k] for k in ("dt_rank_proj", "B_proj", "C_proj")} == \
        {k: (2, tokens, 8) for k in ("dt_rank_proj", "B_proj", "C_proj")}
    if phase == "decode":
        (state,) = [t for t in g.inputs if t.name == "mamba1.mlp.ssm_state"]
        assert state.shape == (2, 1, 64, 1, 8)   # I/2 channels of N = 8


def test_tensor_parallel_must_split_the_mamba1_channels():
    from symroof.models.hybrid import Mamba1
    m = hybrid(layers=2, d_model=8, heads=4, d_ff=16, vocab=50,
               mamba1=Mamba1(inner=6, state=4, dt_rank=2),
               groups=(LayerGroup(sp.Integer(1)), LayerGroup(sp.Integer(1), mixer="mamba1")))
    with pytest.raises(SymroofError, match=r"tp 4: does not split"):
        decode(m, 1, context=8, tp=4)
    assert decode(m, 1, context=8, tp=2).flops > 0


def test_tensor_parallel_over_a_mamba1_language_model():
    """Falcon-Mamba (recorded tiny config, I = 128): every GEMM splits, so a device does
    exactly half the FLOPs at tp=2; the degrees offered are those dividing I and d."""
    import json
    from pathlib import Path

    from symroof.models import from_hf_dict
    from symroof.workloads.parallel import valid_tp
    data = json.loads((Path(__file__).parents[1] / "fixtures" / "hybrid_flops.json").read_text())
    m = from_hf_dict(next(e["config"] for e in data["entries"] if e["model"] == "falcon_mamba"))
    assert decode(m, 2, context=8, tp=2).flops * 2 == decode(m, 2, context=8).flops
    assert valid_tp(m) == (1, 2, 4, 8, 16, 32, 64)

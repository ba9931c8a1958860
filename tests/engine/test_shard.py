"""The shard pass: one device's graph under tensor and pipeline parallelism.

Second computation throughout: the same model described at one device's size (heads,
KV heads, widths and vocabulary divided by hand) and run through the unsharded builder
must give the sharded graph's FLOPs and weight and KV bytes; the communication is
counted by hand from the ring formulas.
"""

from __future__ import annotations

import dataclasses

import pytest
import sympy as sp

import symroof as sr
from symroof.errors import SymroofError
from symroof.ir import Graph, Kind
from symroof.models import TransformerModel, get, transformer
from symroof.passes import Collective, Shard, shard, sharding
from symroof.passes.pipeline import ORDER, Pipeline
from symroof.passes.shard import MEMORY_KINDS, CollectiveKind, stage_layers
from symroof.symbols import B, D, H, L, S, b, dim
from symroof.testing import assert_formula_equal
from symroof.workloads import decode, prefill
from symroof.workloads.layers import forward_graph
from symroof.workloads.parallel import check_layout, valid_tp

t = dim("t")
COMM = Kind.COMMUNICATION


def per_device(m: TransformerModel, tp: int) -> TransformerModel:
    """``m`` at one device's size, by hand: heads, widths and vocabulary over ``tp``; one KV
    head per device once ``tp`` exceeds them; latent attention's latent whole."""
    kv = m.kv_heads / tp if tp <= m.kv_heads else sp.Integer(1)
    changes = {"heads": m.heads / tp, "kv_heads": kv, "d_ff": m.d_ff / tp,
               "vocab": None if m.vocab is None else sp.ceiling(m.vocab / tp)}
    if m.expert_d_ff is not None:
        changes["expert_d_ff"] = m.expert_d_ff / tp
    if m.shared_d_ff is not None:
        changes["shared_d_ff"] = m.shared_d_ff / tp
    return dataclasses.replace(m, name=f"{m.name}/{tp}", **changes)


def tensor(g: Graph, name: str) -> sr.Tensor:
    """The tensor called ``name`` (an op may share it)."""
    return next(x for x in g.tensors if x.name == name)


def comm(a: sr.Analysis) -> sp.Expr:
    return a.cost.bytes_by_kind.get(COMM, sp.Integer(0))


# ---------------------------------------------------------------------------
# the seeds' model, symbolic in t


def test_seed_model_decode_splits_everything_t_ways():
    m = transformer(layers=L, d_model=D, heads=H)
    one, dev = decode(m, B, S), decode(m, B, S, tp=t)
    # every contraction and every weight of the seeds' model is split: F/t, Q/t
    assert_formula_equal(dev.flops, (24 * B * D**2 * L + 4 * B * D * L * S) / t)
    assert_formula_equal(dev.bytes, (12 * D**2 * L * b + 2 * B * D * L * S * b) / t)
    assert_formula_equal(dev.flops, one.flops / t)
    # two ring all-reduces of the B x D activations per layer: 2 L * 2(t-1)/t * B D b
    assert_formula_equal(comm(dev), 4 * L * B * D * b * (t - 1) / t)
    # the bytes on the link are not memory traffic
    assert COMM not in dev.convention.traffic
    # second computation: the model at one device's size, unsharded
    hand = decode(transformer(layers=L, d_model=D, heads=H / t, head_dim=D / H,
                              d_ff=4 * D / t), B, S)
    assert_formula_equal(dev.flops, hand.flops)
    assert_formula_equal(dev.bytes, hand.bytes)
    assert any("t divides" in a for a in dev.graph.provenance.assumptions)


def test_seed_model_prefill_has_two_all_reduces_per_layer():
    m = transformer(layers=L, d_model=D, heads=H)
    dev = prefill(m, B, S, tp=4)
    assert_formula_equal(comm(dev), 2 * L * sp.Rational(2 * 3, 4) * B * S * D * b)
    assert_formula_equal(dev.flops, prefill(m, B, S).flops / 4)
    reduces = [op for op in dev.graph.ops if isinstance(op, Collective)]
    assert {op.kind for op in reduces} == {CollectiveKind.ALL_REDUCE}
    assert sorted(op.name for op in reduces) == ["down:all_reduce", "o_proj:all_reduce"]
    assert all(dev.graph.count(op) == L for op in reduces)
    assert dev.convention.traffic == MEMORY_KINDS     # activations count, the link does not


# ---------------------------------------------------------------------------
# real models against their per-device descriptions


@pytest.mark.parametrize("name, tp", [("llama-3-70b", 8), ("llama-3-8b", 2),
                                      ("llama-3-8b", 16), ("mixtral-8x7b", 2),
                                      ("qwen1.5-moe-a2.7b", 4), ("deepseek-v3", 8),
                                      ("gemma-2-9b", 4), ("gpt-oss-20b", 8), ("qwen2-7b", 4)])
def test_sharded_decode_is_the_per_device_model(name, tp):
    m = get(name)
    dev, hand = decode(m, B, S, tp=tp), decode(per_device(m, tp), B, S)
    assert_formula_equal(dev.flops, hand.flops)
    assert_formula_equal(dev.bytes_by_kind[Kind.KV_CACHE], hand.bytes_by_kind[Kind.KV_CACHE])
    # weights: the same, but a vocab-parallel lookup reads each row on one device only
    row = B * m.d_model * m.weight_bytes
    assert_formula_equal(dev.bytes_by_kind[Kind.WEIGHT],
                         hand.bytes_by_kind[Kind.WEIGHT] - row + row / tp)


@pytest.mark.parametrize("name, tp", [("llama-3-8b", 4), ("mixtral-8x7b", 2),
                                      ("deepseek-v3", 4), ("gpt2", 4)])
def test_sharded_prefill_flops_are_the_per_device_model(name, tp):
    m = get(name)
    assert_formula_equal(prefill(m, B, S, tp=tp).flops, prefill(per_device(m, tp), B, S).flops)


def test_llama_3_70b_communication_by_hand():
    """Per decode step and device at TP = 8: 2 all-reduces per layer of B x 8192 values,
    one after the vocab-parallel embedding, and the all-gather of the logits."""
    dev = decode(get("llama-3-70b"), B, S, tp=8)
    ring = sp.Rational(2 * 7, 8)
    hand = (2 * 80 + 1) * ring * B * 8192 * b + sp.Rational(7, 8) * B * 128256 * b
    assert_formula_equal(comm(dev), hand)
    assert comm(dev).subs({B: 1, b: 2}) == 4840640          # 4.84 MB at B = 1, 16 bits
    gather = [op for op in dev.graph.ops if isinstance(op, Collective)
              and op.kind is CollectiveKind.ALL_GATHER]
    assert [op.name for op in gather] == ["lm_head:all_gather"]
    assert dev.graph.outputs[-1].shape == (B, 1, 128256)    # whole logits on every device


def test_kv_heads_replicated_past_their_count():
    m = get("llama-3-8b")                                   # 8 KV heads
    for tp in (8, 16, 32):
        g = decode(m, B, S, tp=tp).graph
        assert g.node("W_k").shape == (4096, 128)           # one KV head's columns
        assert g.node("k_cache").shape == (B, 1, S, 128)
        assert tensor(g, "q_heads").shape == (B, 1, 32 // tp, 128)
    notes = decode(m, B, S, tp=16).graph.provenance.assumptions
    assert "tp=16 exceeds the 8 KV heads: each device holds 1 KV head, each KV head is " \
           "replicated on 2 devices" in notes
    assert not decode(m, B, S, tp=8).graph.provenance.assumptions
    # KV bytes per device stop falling at tp = G
    kv = [decode(m, B, S, tp=tp).bytes_by_kind[Kind.KV_CACHE] for tp in (8, 16)]
    assert_formula_equal(kv[0], kv[1])


def test_moe_router_replicated_and_experts_split():
    g = decode(get("mixtral-8x7b"), B, S, tp=2).graph
    assert g.node("W_router").shape == (4096, 8)
    assert g.node("W_up").shape == (8, 4096, 7168)
    assert g.node("W_down").shape == (8, 7168, 4096)
    names = sorted(op.name for op in g.ops if isinstance(op, Collective))
    # the experts' partial sums are combined, then reduced once per layer
    assert names == ["combine:all_reduce", "lm_head:all_gather", "o_proj:all_reduce",
                     "tokens:all_reduce"]


def test_latent_attention_keeps_the_latent_cache_whole():
    m = get("deepseek-v3")
    one, dev = decode(m, B, S), decode(m, B, S, tp=8)
    # the latent (d_c + d_r per token) is shared by every head: each device holds all of it
    assert_formula_equal(dev.bytes_by_kind[Kind.KV_CACHE], one.bytes_by_kind[Kind.KV_CACHE])
    assert dev.graph.node("W_dkv").shape == one.graph.node("W_dkv").shape
    assert dev.graph.node("W_uk").shape == (16, 128, 512)


# ---------------------------------------------------------------------------
# pipeline stages


def test_pipeline_stage_holds_its_layers_and_receives_its_input():
    m = get("llama-3-70b")
    one, st = decode(m, B, S), decode(m, B, S, pp=2)
    g = st.graph
    assert g.count(g.node("q_proj")) == 40
    # the untied input embedding is on the first stage, the LM head on this one
    assert "embed" not in {x.name for x in g.inputs} and g.node("W_lm") is not None
    recv = g.node("tokens:send")
    assert isinstance(recv, Collective) and recv.kind is CollectiveKind.SEND
    assert_formula_equal(comm(st), B * 8192 * b)            # the activations, once
    # F: half the layers' contractions and the whole LM head
    head = 2 * B * 8192 * 128256
    assert_formula_equal(st.flops, (one.flops - head) / 2 + head)
    assert sharding(g) == sr.passes.Sharding(1, 2, 1)


def test_pipeline_busiest_stage_and_tied_embeddings():
    st = decode(get("llama-3-70b"), B, S, pp=3)
    assert st.graph.count(st.graph.node("q_proj")) == 27 == stage_layers(sp.Integer(80), 3)
    assert any("(the busiest stage)" in a for a in st.graph.provenance.assumptions)
    tied = decode(get("gpt2"), B, S, pp=2).graph            # the LM head reads the table
    assert "embed" in {x.name for x in tied.inputs}


def test_microbatches_make_the_graph_one_micro_batch():
    m = get("llama-3-8b")
    st = decode(m, 8, S, pp=2, microbatches=4)
    assert st.tokens == 2
    lay = sharding(st.graph)
    assert (lay.pp, lay.microbatches) == (2, 4) and lay.bubble == sp.Rational(1, 5)
    with pytest.raises(SymroofError, match="microbatches 3: does not divide the batch 8"):
        decode(m, 8, S, pp=2, microbatches=3)


def test_bubble_matches_a_simulated_synchronous_schedule():
    """(m + p - 1) stage times: each micro-batch starts a stage when it and the stage are
    free; the makespan is counted by a loop, not the formula."""
    for p in (1, 2, 4, 8):
        for m_ in (1, 2, 3, 8):
            free = [0] * p
            for _ in range(m_):
                t_ = 0
                for s in range(p):
                    t_ = max(t_, free[s]) + 1
                    free[s] = t_
            assert free[-1] == m_ + p - 1
            assert sr.passes.Sharding(1, p, m_).bubble == sp.Rational(p - 1, m_ + p - 1)


# ---------------------------------------------------------------------------
# the pass itself


def test_pass_order_and_purity():
    assert ORDER.index("shard") < ORDER.index("backward")
    g = forward_graph(get("llama-3-8b"), batch=B, seq=1, context=S, decode=True)
    before = sorted(x.name for x in g.tensors)
    out = Pipeline("serve", (Shard(2),)).apply(g)
    assert sorted(x.name for x in g.tensors) == before       # the input is not changed
    assert out is not g and sharding(out).tp == 2
    assert shard(g, tp=1).nx.number_of_nodes() == g.nx.number_of_nodes()


def test_collective_factors():
    x = sr.Tensor("x", (B, D))
    w = sr.Tensor("x:w", (B, D), Kind.COMMUNICATION)
    y = sr.Tensor("y", (B, D))
    assert Collective("ar", x, y, w, "all_reduce", t).factor == 2 * (t - 1) / t
    assert Collective("ag", x, y, w, "all_gather", t).factor == (t - 1) / t
    assert Collective("s", x, y, w, "send", 1, 2).factor == 1
    with pytest.raises(SymroofError, match="kind communication"):
        Collective("bad", x, y, y)


def test_bad_layouts_name_the_valid_choices():
    m = get("llama-3-70b")
    with pytest.raises(SymroofError, match="tp 6: does not split llama-3-70b .* expected one "
                       "of 1, 2, 4, 8, 16, 32, 64"):
        decode(m, B, S, tp=6)
    with pytest.raises(SymroofError, match="pp 81: more stages than the 80 layers"):
        decode(m, B, S, pp=81)
    for bad in (0, -2, sp.Rational(1, 2)):
        with pytest.raises(SymroofError, match="tp: expected a positive integer"):
            check_layout(m, tp=bad)
    assert valid_tp(get("mixtral-8x7b")) == (1, 2, 4, 8, 16, 32)


def test_custom_graphs_pin_what_the_pass_cannot_follow():
    g = Graph("odd")
    x = g.input("x", (B, D))
    h = g.gemm(x, g.weight("W_up", (D, 8)), name="up")
    v = g.view(h, (2, B, 4), name="folded")                 # no rule for this reshape
    g.output(g.elementwise(v, name="act"))
    with pytest.raises(SymroofError, match="view 'folded' reshapes a split tensor"):
        shard(g, tp=2)
    out = shard(g, tp=2, pins={"folded": {0: 2}})
    assert tensor(out, "folded").shape == (1, B, 4)
    assert tensor(out, "act:gathered").shape == (2, B, 4)   # the output, gathered whole
    assert sharding(out).tp == 2
    # a reshape that keeps the axes before the split is followed without a pin
    g2 = Graph("even")
    h2 = g2.gemm(g2.input("x", (B, D)), g2.weight("W_up", (D, 8)), name="up")
    g2.output(g2.view(h2, (B, 2, 4), name="heads"))
    assert tensor(shard(g2, tp=2), "heads").shape == (B, 1, 4)


def test_refuses_twice_and_after_backward():
    g = forward_graph(get("llama-3-8b"), batch=B, seq=1, context=S, decode=True)
    once = shard(g, tp=2)
    with pytest.raises(SymroofError, match="sharded already"):
        shard(once, tp=2)
    train = sr.workloads.training(transformer(layers=1, d_model=8, heads=2), 1, 4).graph
    with pytest.raises(SymroofError, match="backward pass"):
        shard(train, tp=2)
    with pytest.raises(SymroofError, match="microbatches: only with pipeline"):
        Shard(2, 1, 2)

"""Training (symroof.workloads.transformer.training and symroof.passes.backward).

Seed 000 section 5: 6N FLOPs per token, GPT-3 175B on 300B tokens (3.14e23 reported,
3.15e23 with the round 175e9), and 16 bytes per parameter for mixed-precision Adam.
Second computations: the forward pass run through the engine (training = 3 x forward,
plus FlashAttention's recomputed QK^T), the seeds' closed forms, and plain arithmetic.
"""

from __future__ import annotations

import pytest
import sympy as sp

from symroof.testing import assert_formula_equal
from symroof.errors import SymroofError
from symroof.ir import Graph, Kind, Role
from symroof.models import get, transformer
from symroof.passes.backward import backward
from symroof.symbols import B, D, G, H, K, L, M, N, S, V, b
from symroof.workloads.transformer import ADAM, forward_graph, prefill, training, training_graph
from symroof.footprint import memory

TOKENS_GPT3 = 300 * 10**9




MODELS = {
    "seed": lambda: transformer(layers=L, d_model=D, heads=H),
    "gqa-gated-rms-rotary": lambda: transformer(layers=L, d_model=D, heads=H, kv_heads=G,
                                                mlp="gated", vocab=V, norm="rmsnorm",
                                                positions="rotary"),
    "gpt2": lambda: get("gpt2"),
    "bias-tied-mqa": lambda: transformer(layers=2, d_model=48, heads=3, kv_heads=1, vocab=100,
                                         biases=True, tied_embeddings=True, mlp="gated"),
    "moe": lambda: transformer(layers=2, d_model=64, heads=4, kv_heads=2, mlp="gated", d_ff=96,
                               vocab=100, experts=4, experts_per_token=2),
}


# ---------------------------------------------------------------------------
# FLOPs


def test_weight_gemms_cost_6N_per_token():
    m = transformer(layers=L, d_model=D, heads=H)
    tr = training(m, B, S)
    poly = sp.Poly(sp.expand(tr.flops), S)
    # the part linear in S is the weight GEMMs: 6 FLOPs per weight per token
    assert_formula_equal(poly.coeff_monomial(S), 6 * m.params * B)
    assert_formula_equal(poly.coeff_monomial(S), 6 * 12 * L * D**2 * B)
    # and with a one-token sequence, everything but the attention core is 6N
    assert_formula_equal(training(m, B, 1).flops, B * (6 * 12 * L * D**2 + 7 * L * D))


def test_training_symbolic_closed_form():
    m = transformer(layers=L, d_model=D, heads=H)
    # forward 2N + 2 L S D per token (causal half); backward twice the forward;
    # FlashAttention recomputes QK^T once more (L S D per token, causal half)
    expected = 3 * B * S * (2 * 12 * L * D**2 + 2 * L * S * D) + B * L * S**2 * D
    assert_formula_equal(training(m, B, S).flops, expected)
    assert_formula_equal(training(m, B, S, fused=False).flops, 3 * B * S * (24 * L * D**2 + 2 * L * S * D))


@pytest.mark.parametrize("name", sorted(set(MODELS) - {"moe"}))
@pytest.mark.parametrize("causal", [True, False, "exact"])
def test_training_is_3x_forward_plus_recomputed_qk(name, causal):
    m = MODELS[name]()
    fwd = prefill(m, B, S, causal=causal)
    qk = fwd.per_op["scores"].flops                     # the forward's causal QK^T FLOPs
    assert qk != 0
    assert_formula_equal(training(m, B, S, causal=causal).flops, 3 * fwd.flops + qk)
    # unfused attention saves the S x S matrices instead: exactly 3 x forward
    assert_formula_equal(training(m, B, S, causal=causal, fused=False).flops, 3 * fwd.flops)
    # fused without recompute (S x S written out for backward): also 3 x forward
    assert_formula_equal(training(m, B, S, causal=causal, recompute=False).flops, 3 * fwd.flops)


def test_moe_router_is_trained():
    """The router's logits weight the experts' outputs, so the router GEMM has a backward
    (dX and dW_router, 2 x its forward FLOPs) like every other GEMM; PyTorch's counter
    agrees (tests/oracles/test_torch_oracle.py, the live Mixtral training step)."""
    m = MODELS["moe"]()
    fwd = prefill(m, B, S)
    router = fwd.per_op["router"].flops
    assert_formula_equal(router, 2 * B * S * 64 * 4 * 2)          # 2 T D E per layer, 2 layers
    qk = fwd.per_op["scores"].flops
    assert_formula_equal(training(m, B, S, fused=False).flops, 3 * fwd.flops)
    assert_formula_equal(training(m, B, S).flops, 3 * fwd.flops + qk)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_every_weight_receives_a_gradient_and_an_optimizer_step(name):
    m = MODELS[name]()
    fwd = forward_graph(m, batch=2, seq=8)
    weights = {t.name for t in fwd.inputs if t.kind == Kind.WEIGHT}
    g = training_graph(m, 2, 8)
    assert set(g.provenance.training.gradients) == weights
    state = sum(g.count(t) * t.numel for t in g.inputs if t.kind == Kind.OPTIMIZER_STATE)
    assert_formula_equal(state, m.params)


def test_backward_does_not_change_its_input():
    m = transformer(layers=L, d_model=D, heads=H)
    fwd = forward_graph(m, batch=B, seq=S)
    before = (len(fwd.nx.nodes), len(fwd.nx.edges), len(fwd.outputs))
    backward(fwd)
    assert (len(fwd.nx.nodes), len(fwd.nx.edges), len(fwd.outputs)) == before


# ---------------------------------------------------------------------------
# GPT-3 175B on 300B tokens


def test_gpt3_175b_training_compute():
    n = get("gpt3-175b").params
    paper = 6 * n * TOKENS_GPT3
    assert float(paper) == pytest.approx(3.14e23, rel=2e-3)          # what GPT-3's authors report
    check = 6 * 175 * 10**9 * TOKENS_GPT3
    assert check == 315 * 10**21                                      # the seed's check: 3.15e23
    gap = check - paper
    assert gap == 6 * (175 * 10**9 - n) * TOKENS_GPT3
    assert float(gap) == pytest.approx(7.13e20, rel=1e-2)
    assert 0 < float(gap) / float(check) < 3e-3


def test_gpt3_175b_engine_weight_flops_per_token():
    m = get("gpt3-175b")
    tr = training(m, 1, S)
    poly = sp.Poly(sp.expand(tr.flops), S)
    per_token_weights = poly.coeff_monomial(S)
    # 6 FLOPs per parameter that takes part in a GEMM (embeddings' positions, biases and
    # norms take part in no GEMM)
    assert float(per_token_weights / 6) == pytest.approx(float(m.params), rel=1e-3)
    assert float(per_token_weights * TOKENS_GPT3) == pytest.approx(3.14e23, rel=2e-3)
    # the context term: 3 x the causal forward (2 L D) plus the recompute (L D)
    assert poly.coeff_monomial(S**2) == 7 * 96 * 12288


# ---------------------------------------------------------------------------
# state: Adam and 16 bytes per parameter


def test_adam_state_is_12_bytes_per_parameter():
    assert ADAM.state_bytes == 12
    m = transformer(layers=L, d_model=D, heads=H)
    g = training_graph(m, B, S)
    state_bytes = sum(g.count(t) * t.nbytes for t in g.inputs if t.kind == Kind.OPTIMIZER_STATE)
    assert_formula_equal(state_bytes, 12 * m.params)


def test_training_traffic_of_state_and_gradients():
    m = transformer(layers=L, d_model=D, heads=H)
    tr = training(m, B, S)
    kinds = tr.bytes_by_kind
    # the optimizer reads its 12 bytes per parameter and writes them back once a step
    assert_formula_equal(kinds[Kind.OPTIMIZER_STATE], 2 * 12 * m.params)
    # each gradient is written by its weight-gradient GEMM and read by the optimizer
    assert_formula_equal(kinds[Kind.GRADIENT], 2 * b * m.params)


@pytest.mark.parametrize("name", ["seed-6.4b", "llama-3-8b", "gpt2"])
def test_training_memory_16_bytes_per_parameter(name):
    m = get(name).with_bytes(2)
    f = memory(m, batch=1, context=1024, training=True)
    p = m.params
    assert f.weights == 2 * p
    assert f.gradients == 2 * p
    assert f.optimizer_state == 12 * p
    assert (f.weights + f.gradients + f.optimizer_state) / p == 16
    assert f.kv_cache == 0


def test_training_memory_symbolic():
    m = transformer(layers=L, d_model=D, heads=H)
    f = memory(m, batch=B, context=S, training=True)
    assert_formula_equal(f.weights + f.gradients + f.optimizer_state, (2 * b + 12) * 12 * L * D**2)
    assert_formula_equal((f.weights + f.gradients + f.optimizer_state).subs(b, 2) / m.params, 16)


def test_weight_flops_of_a_training_step_are_6n_per_token():
    """flops_by_operand puts dW = A^T dC (two activations in, a gradient out) with the
    weights: 72 B S L D^2 = 6 (12 L D^2) per token; the attention part is the rest."""
    m = transformer(layers=L, d_model=D, heads=H)
    t = training(m, B, S)
    parts = t.flops_by_operand
    assert sp.expand(parts["weight"] - 6 * 12 * L * D**2 * B * S) == 0
    assert sp.expand(parts["weight"] + parts["activation"] - t.flops) == 0


def test_backward_refuses_a_graph_with_no_outputs():
    g = Graph("no-outputs")
    g.gemm(g.input("x", (M, K)), g.weight("W", (K, N)), name="y")   # y never marked output
    with pytest.raises(SymroofError, match=r"backward: graph 'no-outputs' has no outputs"):
        backward(g)


def test_backward_records_typed_provenance_and_roles():
    g = Graph("linear")
    g.output(g.gemm(g.input("x", (M, K)), g.weight("W", (K, N)), name="y"))
    t = backward(g)
    assert g.provenance.training is None                  # the input graph is unchanged
    assert t.provenance.training is not None
    assert t.provenance.training.forward_ops == {"y"}
    assert dict(t.provenance.training.gradients) == {"W": "d:W:y"}
    assert {x.name for x in t.tensors if x.role is Role.GRADIENT} == {"d:y", "d:W:y", "d:x:y"}
    with pytest.raises(SymroofError, match="already has a backward pass"):
        backward(t)


# ---------------------------------------------------------------------------
# recompute strategies and dropout


def test_recompute_flags_keep_their_meaning():
    """recompute=True is the FlashAttention strategy, False none: the flag's two settings."""
    m = transformer(layers=L, d_model=D, heads=H)
    assert_formula_equal(training(m, B, S, recompute=True).flops,
                         training(m, B, S, recompute="flash").flops)
    assert_formula_equal(training(m, B, S, recompute=False).flops,
                         training(m, B, S, recompute="none").flops)
    with pytest.raises(SymroofError, match="recompute: expected one of none, flash"):
        training(m, B, S, recompute="some")


@pytest.mark.parametrize("fused", [False, True])
def test_selective_and_full_recompute_flops(fused):
    """Selective recomputation runs the attention core's two products again (QK^T and
    the product with V); full recomputation the whole layer's forward. FlashAttention's
    own recomputed QK^T is that same recomputation (one copy, not two)."""
    m = transformer(layers=L, d_model=D, heads=H, vocab=V)
    fwd = prefill(m, B, S)
    core = fwd.per_op["scores"].flops + fwd.per_op["pv"].flops
    layer = fwd.flops - fwd.per_op["lm_head"].flops
    assert_formula_equal(training(m, B, S, fused=fused, recompute="selective").flops,
                         3 * fwd.flops + core)
    assert_formula_equal(training(m, B, S, fused=fused, recompute="full").flops,
                         3 * fwd.flops + layer)


def test_dropout_adds_no_contraction_flops():
    """Dropout is elementwise: a mask drawn and a product; contractions are unchanged, and
    with ops="all" each dropout costs its two passes forward and one backward."""
    plain = transformer(layers=L, d_model=D, heads=H)
    drop = transformer(layers=L, d_model=D, heads=H, attention_dropout=0.1, hidden_dropout=0.1)
    assert_formula_equal(training(drop, B, S).flops, training(plain, B, S).flops)
    extra = training(drop, B, S, ops="all", fused=False).flops - \
        training(plain, B, S, ops="all", fused=False).flops
    # per layer: attention dropout on B H S^2 values, two hidden dropouts on B S D; and the
    # input's dropout on B S D: forward mask 1 + apply 1, backward 1 per value
    assert_formula_equal(extra, 3 * (L * (B * H * S**2 + 2 * B * S * D) + B * S * D))


def test_dropout_only_in_training_graphs():
    """Serving runs no dropout: prefill of a model with dropout is the model's without."""
    plain = transformer(layers=L, d_model=D, heads=H)
    drop = transformer(layers=L, d_model=D, heads=H, attention_dropout=0.1, hidden_dropout=0.1)
    assert_formula_equal(prefill(drop, B, S).bytes, prefill(plain, B, S).bytes)


def test_dropout_fields_are_checked():
    for bad in (1, -0.1, 1.5):
        with pytest.raises(SymroofError, match="attention_dropout: expected a probability"):
            transformer(layers=2, d_model=8, heads=2, attention_dropout=bad)
    with pytest.raises(SymroofError, match="dropout_mask_bytes"):
        transformer(layers=2, d_model=8, heads=2, dropout_mask_bytes=0)
    latent = get("deepseek-v3").replace(attention_dropout=0.1)
    with pytest.raises(SymroofError, match="attention_dropout: not modelled with latent"):
        training_graph(latent, 1, 8)


def test_backward_saves_declarations():
    """What each elementwise op's gradient reads, declared per op: a softmax its output, so
    its input (the scores) is not kept; unknown op names and kinds are refused."""
    g = Graph("soft")
    s_ = g.gemm(g.input("q", (M, K)), g.input("k", (N, K)), transpose_b=True, name="scores")
    p_ = g.elementwise(s_, name="softmax", flops_per_element=5)
    g.output(g.gemm(p_, g.input("v", (N, K)), name="pv"))
    from symroof.passes.saved import saved_tensors
    default = {s.tensor.name for s in saved_tensors(backward(g))}
    declared = {s.tensor.name for s in saved_tensors(backward(g, saves={"softmax": "output"}))}
    assert default == {"q", "k", "v", "scores", "softmax"}   # reads its input: scores kept
    assert declared == {"q", "k", "v", "softmax"}
    with pytest.raises(SymroofError, match="saves names no op of graph 'soft': soft_max"):
        backward(g, saves={"soft_max": "output"})
    with pytest.raises(SymroofError, match=r"saves\['softmax'\]: expected one of inputs"):
        backward(g, saves={"softmax": "outputs"})
    with pytest.raises(SymroofError, match="backward: expected a Graph"):
        backward("graph")  # type: ignore[arg-type]

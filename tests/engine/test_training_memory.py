"""Training memory and time against the literature (symroof.training, symroof.passes.saved).

Korthikanti et al., "Reducing Activation Recomputation in Large Transformer Models"
(2022): activation bytes per layer and micro-batch, 16-bit activations, 1-byte dropout
masks, s = sequence, b = micro-batch, h = width, a = heads, t = tensor-parallel size:
sbh(34 + 5as/h) with no recomputation, 34sbh with selective recomputation, 2sbh with
full recomputation, sbh(10 + 24/t + 5as/(ht)) with tensor parallelism and
sbh(34/t + 5as/(ht)) with sequence parallelism too. Rajbhandari et al., "ZeRO" (2020):
(2 + 2 + K)Psi per device, K = 12 for mixed-precision Adam, sharded over N_d replicas by
stage. Narayanan et al., "Efficient Large-Scale Language Model Training on GPU Clusters
Using Megatron-LM" (2021): the 1F1B bubble (p - 1)/m, model FLOPs
72Bslh^2(1 + s/(6h) + V/(12hl)) and, recomputing every layer, 96Bslh^2(1 + s/(6h) +
V/(16lh)), and end-to-end time 8TP/(nX).

Second computations: the per-tensor enumeration of the paper (test below), plain
arithmetic from the published shapes, a brute-force 1F1B schedule simulation, and
PyTorch's saved-tensor hooks (tests/oracles/test_saved_tensors.py).
"""

from __future__ import annotations

import pytest
import sympy as sp

from symroof.errors import SymroofError
from symroof.ir import Graph
from symroof.models import get, transformer
from symroof.passes.backward import backward
from symroof.passes.saved import saved_tensors
from symroof.present.training import paper_text
from symroof.symbols import B, D, H, K, L, S, V, b, dim, t
from symroof.testing import assert_close, assert_formula_equal
from symroof.training import (N_D, PSI, TrainingLayout, bubble, in_flight, per_layer_form,
                              training_compute, training_memory, training_time, zero_bytes,
                              zero_form)

p, m, d = dim("p"), dim("m"), dim("d")
SBH = S * B * D


def gpt(dropout: float = 0.1, **kw: object):
    """Korthikanti et al.'s GPT layer: LayerNorm, biases, GELU MLP of 4h, dropout."""
    return transformer(layers=L, d_model=D, heads=H, norm="layernorm", biases=True,
                       attention_dropout=dropout, hidden_dropout=dropout, **kw).with_bytes(2)


def per_layer(model, layout=TrainingLayout(), recompute="none", **kw):
    return training_memory(model, batch=B, seq=S, layout=layout, recompute=recompute,
                           statistics="ignored", **kw).per_layer


# ---------------------------------------------------------------------------
# the published per-layer forms


def test_no_recomputation_is_sbh_34_plus_5as_over_h():
    """Section 4.1, with the paper's own enumeration as the second computation (bytes
    per s b h): attention: QKV input 2, Q and K 4, V 2, output projection input 2, its
    dropout mask 1 (11), softmax output 2as/h, its dropout mask as/h, the dropped
    probabilities 2as/h (5as/h); MLP: input 2, GELU input 8, GELU output 8, dropout mask 1
    (19); the two LayerNorms' inputs 4."""
    attention = 2 + 4 + 2 + 2 + 1
    mlp = 2 + 8 + 8 + 1
    norms = 2 + 2
    expected = SBH * (attention + mlp + norms) + SBH * 5 * H * S / D
    for fused in (False, True):   # fused attention that keeps nothing on chip saves the same
        assert_formula_equal(per_layer(gpt(), fused=fused), expected)
    assert_formula_equal(per_layer(gpt()), SBH * (34 + 5 * H * S / D))
    assert paper_text(per_layer_form(per_layer(gpt()))) == "sbh(34 + 5as/h)"
    # the count before the backward pass declared what each gradient reads
    wrong = SBH * (34 + 4 * H * S / D)
    assert sp.expand(per_layer(gpt()) - wrong) != 0


def test_without_dropout_the_masks_and_dropped_probabilities_go():
    """No dropout: two sbh masks fewer, and the product with V reads the softmax's own
    output (saved once): sbh(32 + 2as/h)."""
    assert_formula_equal(per_layer(gpt(dropout=0)), SBH * (32 + 2 * H * S / D))
    assert paper_text(per_layer_form(per_layer(gpt(dropout=0)))) == "sbh(32 + 2as/h)"


def test_activation_bytes_in_general_bytes_per_value():
    """At b bytes per value and 1-byte masks: sbh(16b + 2 + (2b + 1)as/h); 34 + 5as/h at b = 2."""
    m_b = transformer(layers=L, d_model=D, heads=H, norm="layernorm", biases=True,
                      attention_dropout=0.1, hidden_dropout=0.1)
    got = per_layer(m_b)
    assert_formula_equal(got, SBH * (16 * b + 2 + (2 * b + 1) * H * S / D))
    assert_formula_equal(got.subs(b, 2), SBH * (34 + 5 * H * S / D))


def test_selective_and_full_recomputation():
    """Section 5: selective recomputation keeps everything but the attention core, 34sbh;
    full recomputation keeps each layer's input, 2sbh."""
    assert_formula_equal(per_layer(gpt(), recompute="selective"), 34 * SBH)
    assert_formula_equal(per_layer(gpt(), recompute="full"), 2 * SBH)
    assert paper_text(per_layer_form(per_layer(gpt(), recompute="selective"))) == "34sbh"
    # FlashAttention keeps no S x S matrix either: the selective count, plus its
    # logsumexp (one fp32 per query per head) unless statistics are ignored
    flash = training_memory(gpt(), batch=B, seq=S, recompute="flash").per_layer
    assert_formula_equal(flash - per_layer(gpt(), recompute="selective"),
                         4 * B * S * H + 2 * 8 * B * S)   # + two LayerNorms' mean and 1/sigma


def test_tensor_and_sequence_parallel_forms():
    """Sections 4.2.1 and 4.2.2 and Table 2."""
    tp = TrainingLayout(tp=t)
    seq_par = TrainingLayout(tp=t, sequence_parallel=True)
    assert_formula_equal(per_layer(gpt(), tp), SBH * (10 + 24 / t + 5 * H * S / (D * t)))
    assert_formula_equal(per_layer(gpt(), seq_par), SBH * (34 / t + 5 * H * S / (D * t)))
    assert_formula_equal(per_layer(gpt(), tp, "selective"), SBH * (10 + 24 / t))
    assert_formula_equal(per_layer(gpt(), seq_par, "selective"), SBH * 34 / t)
    assert_formula_equal(per_layer(gpt(), tp, "full"), 2 * SBH)
    assert_formula_equal(per_layer(gpt(), seq_par, "full"), 2 * SBH / t)
    assert paper_text(per_layer_form(per_layer(gpt(), tp))) == "sbh(10 + 24/t + 5as/(ht))"
    assert paper_text(per_layer_form(per_layer(gpt(), seq_par))) == "sbh(34/t + 5as/(ht))"
    assert paper_text(per_layer_form(per_layer(gpt(), tp, "selective"))) == "sbh(10 + 24/t)"


def test_statistics_option():
    """statistics="saved" (default) counts LayerNorm's fp32 mean and 1/sigma per row, as
    PyTorch keeps them; "ignored" reproduces the paper's forms."""
    kept = training_memory(gpt(), batch=B, seq=S, recompute="none").per_layer
    assert_formula_equal(kept - per_layer(gpt()), 2 * 8 * B * S)
    with pytest.raises(SymroofError, match="statistics"):
        training_memory(gpt(), batch=B, seq=S, statistics="some")


# ---------------------------------------------------------------------------
# saved once: a brute-force enumeration of a small graph


def test_a_tensor_read_by_three_gemms_is_saved_once():
    g = Graph("qkv")
    x = g.input("x", (B, D))
    n = g.elementwise(x, g.weight("gain", (D,)), name="norm")
    outs = [g.gemm(n, g.weight(f"W_{c}", (D, D)), name=c) for c in "qkv"]
    g.output(*outs)
    saved = saved_tensors(backward(g))
    # by hand: norm's output (read by dW_q, dW_k, dW_v), the norm's input x
    assert [s.tensor.name for s in saved] == ["norm", "x"]
    assert saved[0].readers == ("dB:k", "dB:q", "dB:v")
    assert_formula_equal(sum(s.nbytes for s in saved), 2 * B * D * b)


def test_the_layer_output_is_the_next_layer_input():
    """L layers keep L layer inputs and the last output (read by the final norm): L + 1
    tensors of sbh, not 2L."""
    m = transformer(layers=L, d_model=D, heads=H, norm="layernorm")
    mem = training_memory(m, batch=B, seq=S, recompute="full", statistics="ignored")
    assert_formula_equal(mem.parts.layer_activations.total, L * SBH * b)
    assert_formula_equal(mem.parts.last_activations.total, SBH * b)   # the last output


# ---------------------------------------------------------------------------
# ZeRO


@pytest.mark.parametrize("stage,paper", [
    (0, (2 + 2 + K) * PSI),
    (1, 2 * PSI + 2 * PSI + K * PSI / N_D),
    (2, 2 * PSI + (2 + K) * PSI / N_D),
    (3, (2 + 2 + K) * PSI / N_D),
])
def test_zero_forms(stage, paper):
    """Rajbhandari et al. (2020), Figure 1: P_os, P_os+g, P_os+g+p."""
    assert_formula_equal(zero_bytes(PSI, N_D, stage, state_bytes=K), paper)
    assert_formula_equal(zero_form(stage), paper)


def test_zero_printed_as_the_paper():
    assert [paper_text(zero_form(s)) for s in range(4)] == [
        "(2 + 2 + K)Ψ", "2Ψ + 2Ψ + KΨ/N_d", "2Ψ + (2 + K)Ψ/N_d", "(2 + 2 + K)Ψ/N_d"]


def test_zero_figure_1_numbers():
    """7.5B parameters, N_d = 64, K = 12: 120 GB, 31.4 GB, 16.6 GB, 1.88 GB."""
    gb = [float(zero_bytes(7.5e9, 64, s)) / 1e9 for s in range(4)]
    assert gb[0] == 120
    assert [round(x, 1) for x in gb[1:3]] == [31.4, 16.6]
    assert round(gb[3], 2) == 1.88


def test_zero_in_the_training_memory():
    """Per device: weights, gradients and Adam's 12 bytes per parameter over t p, the
    optimizer state (1), gradients (2) and weights (3) also over d."""
    model = transformer(layers=L, d_model=D, heads=H).with_bytes(2)   # no embedding, no norms
    n = 12 * D**2 * L / (t * p)
    for zero, (w, g, o) in enumerate([(1, 1, 1), (1, 1, d), (1, d, d), (d, d, d)]):
        lay = TrainingLayout(tp=t, pp=p, dp=d, zero=zero)
        stage = training_memory(model, batch=B, seq=S, layout=lay).stages[0]
        assert_formula_equal(stage.weights, 2 * n / w)
        assert_formula_equal(stage.gradients, 2 * n / g)
        assert_formula_equal(stage.optimizer_state, 12 * n / o)
    with pytest.raises(SymroofError, match="ZeRO stage"):
        TrainingLayout(zero=4)


# ---------------------------------------------------------------------------
# pipeline: in-flight micro-batches and the bubble


def _simulate_1f1b(stages: int, micro: int, tf: int = 1, tb: int = 2) -> tuple[int, int]:
    """Brute force: run the 1F1B schedule op by op (a forward of micro-batch j on stage i
    after stage i - 1's; a backward after stage i + 1's and this stage's forward). Returns
    the step time and the most micro-batches the first stage holds at once."""
    orders = []
    for i in range(stages):
        warm = min(stages - i - 1, micro)
        seq = [("F", j) for j in range(warm)]
        f, bk = warm, 0
        while bk < micro:
            if f < micro:
                seq.append(("F", f))
                f += 1
            seq.append(("B", bk))
            bk += 1
        orders.append(seq)
    done: dict[tuple[str, int, int], int] = {}
    clock = [0] * stages
    pos = [0] * stages
    while any(pos[i] < len(orders[i]) for i in range(stages)):
        for i in range(stages):
            if pos[i] == len(orders[i]):
                continue
            kind, j = orders[i][pos[i]]
            dep = (("F", i - 1, j) if i else None) if kind == "F" else \
                (("B", i + 1, j) if i + 1 < stages else ("F", i, j))
            if dep is not None and dep not in done:
                continue
            start = max(clock[i], done.get(dep, 0) if dep else 0)
            clock[i] = start + (tf if kind == "F" else tb)
            done[(kind, i, j)] = clock[i]
            pos[i] += 1
    held, peak = 0, 0
    for kind, _ in orders[0]:
        held += 1 if kind == "F" else -1
        peak = max(peak, held)
    return max(clock), peak


@pytest.mark.parametrize("stages,micro", [(1, 4), (4, 8), (4, 4), (8, 3), (3, 16)])
def test_bubble_and_in_flight_against_a_schedule(stages, micro):
    time, held = _simulate_1f1b(stages, micro)
    ideal = micro * 3                      # m micro-batches of forward 1 + backward 2
    assert held == in_flight(stages, micro) == min(stages, micro)
    assert sp.Rational(time - ideal, ideal) == bubble(stages, micro)
    assert sp.Rational(time - ideal, time) == bubble(stages, micro, "total")


def test_bubble_forms():
    """Narayanan et al. (2021): (p - 1)/m of the ideal time; as a share of the whole
    step, (p - 1)/(m + p - 1)."""
    assert_formula_equal(bubble(p, m), (p - 1) / m)
    assert_formula_equal(bubble(p, m, "total"), (p - 1) / (m + p - 1))
    ideal = bubble(p, m)
    assert_formula_equal(bubble(p, m, "total"), ideal / (1 + ideal))
    assert paper_text(bubble(p, m), {p: "p", m: "m"}) == "(p - 1)/m"


def test_first_stage_holds_p_micro_batches_of_l_over_p_layers():
    """1F1B: the first stage keeps p micro-batches of its L/p layers: L layers' worth,
    whatever p (Section 4.2.3), plus the input dropout's mask per micro-batch."""
    lay = TrainingLayout(tp=t, pp=p, sequence_parallel=True)
    mem = training_memory(gpt(), batch=B, seq=S, layout=lay, recompute="selective",
                          statistics="ignored")
    first = mem.stages[0]
    assert first.stage == "first" and first.in_flight == p
    assert_formula_equal(first.activations, L * 34 * SBH / t + p * SBH / t)


# ---------------------------------------------------------------------------
# GPT-3 175B and Megatron-Turing NLG 530B on the papers' layouts

GPT3 = dict(s=2048, h=12288, a=96, layers=96, t=8, p=8)      # Korthikanti et al., Table 3
MTNLG = dict(s=2048, h=20480, a=128, layers=105, t=8, p=35)  # ibid. (Smith et al. 2022's shape)


def _mt_nlg():
    """Megatron-Turing NLG 530B (Smith et al., "Using DeepSpeed and Megatron to Train
    Megatron-Turing NLG 530B", 2022): 105 layers, width 20480, 128 heads, GPT-2's
    vocabulary, 2048 positions."""
    return transformer(name="mt-nlg-530b", layers=105, d_model=20480, heads=128, vocab=50257,
                       norm="layernorm", biases=True, positions="learned", max_positions=2048,
                       tied_embeddings=True)


@pytest.mark.parametrize("model,shape", [(lambda: get("gpt3-175b"), GPT3), (_mt_nlg, MTNLG)])
def test_five_times_less_activation_memory(model, shape):
    """Korthikanti et al.'s abstract: sequence parallelism with selective recomputation
    cuts activation memory about 5x from tensor parallelism alone (23/4.25 = 5.4 for
    GPT-3, 21/4.25 = 4.9 for MT-NLG)."""
    mdl = model().replace(attention_dropout=0.1, hidden_dropout=0.1).with_bytes(2)
    s, h, a, tp = shape["s"], shape["h"], shape["a"], shape["t"]
    sbh = s * h
    at = {B: 1, S: s}
    base = per_layer(mdl, TrainingLayout(tp=tp)).subs(at)
    best = per_layer(mdl, TrainingLayout(tp=tp, sequence_parallel=True), "selective").subs(at)
    assert base == sbh * (10 + sp.Rational(24, tp) + sp.Rational(5 * a * s, h * tp))
    assert best == sp.Rational(34 * sbh, tp)
    assert 4.9 < float(base / best) < 5.5


def test_gpt3_175b_per_gpu_memory():
    """GPT-3 175B, t = 8, p = 8, micro-batch 1, s = 2048, 16-bit weights and activations,
    dropout 0.1, Adam: the first stage holds 8 micro-batches of 12 layers. With sequence
    parallelism and selective recomputation it fits an 80 GB A100; with tensor
    parallelism alone and no recomputation it does not (why the paper needs them)."""
    s, h, a, layers, tp, pp = (GPT3[k] for k in ("s", "h", "a", "layers", "t", "p"))
    mdl = get("gpt3-175b").replace(attention_dropout=0.1, hidden_dropout=0.1).with_bytes(2)
    best = training_memory(mdl, batch=1, seq=s, layout=TrainingLayout(
        tp=tp, pp=pp, sequence_parallel=True), recompute="selective", statistics="ignored")
    first = best.peak
    assert first.stage == "first" and first.in_flight == pp
    # by hand: L x 34 sbh / t of layers, and p input-dropout masks of sbh / t
    assert first.activations == layers * 34 * s * h // tp + pp * s * h // tp
    # parameters on the first stage: 12 layers of 12h^2 + 13h (matrices and the Q, K, V
    # and up biases split over t; the output and down biases and norms whole), the
    # vocabulary table split, the position table whole
    per = layers // pp
    n = per * (12 * h * h + 7 * h) // tp + per * 6 * h + 50257 * h // tp + 2048 * h
    assert first.params == n
    assert first.weights == 2 * n and first.optimizer_state == 12 * n
    assert_close(float(first.total) / 1e9, 55.4, rel=1e-3)
    assert best.fits("a100-80gb") is True
    base = training_memory(mdl, batch=1, seq=s, layout=TrainingLayout(tp=tp, pp=pp),
                           recompute="none", statistics="ignored")
    assert base.peak.activations == layers * s * h * (10 + 24 // tp) + \
        layers * 5 * a * s * s // tp + pp * s * h
    assert base.fits("a100-80gb") is False
    assert_close(float(base.peak.total) / 1e9, 100.9, rel=1e-3)


def test_mt_nlg_530b_per_gpu_memory():
    """MT-NLG 530B on t = 8, p = 35 (3 layers a stage; 280 GPUs per replica), sequence
    parallelism and selective recomputation: the first stage holds 35 micro-batches, so
    105 layers of 34 sbh / t of activations, and 16 bytes per parameter of its 3 layers
    and the embeddings."""
    mdl = _mt_nlg().replace(attention_dropout=0.1, hidden_dropout=0.1).with_bytes(2)
    assert_close(float(mdl.params), 529.6e9, rel=1e-3)
    s, h, layers, tp, pp = (MTNLG[k] for k in ("s", "h", "layers", "t", "p"))
    mem = training_memory(mdl, batch=1, seq=s, layout=TrainingLayout(
        tp=tp, pp=pp, sequence_parallel=True), recompute="selective", statistics="ignored")
    first = mem.peak
    assert first.in_flight == 35
    assert first.activations == layers * 34 * s * h // tp + pp * s * h // tp
    assert_close(float(first.activations) / 1e9, 18.9, rel=1e-3)   # 18.72 of it the layers
    # parameters by hand, as for GPT-3: 3 layers, the vocabulary split, positions whole;
    # 9% above an even 1/280 share of the 529.6B, for the embeddings the first stage holds
    per = layers // pp
    n = per * (12 * h * h + 7 * h) // tp + per * 6 * h + 50257 * h // tp + 2048 * h
    assert first.params == n
    assert first.weights + first.gradients + first.optimizer_state == 16 * n
    assert_close(float(n) / (float(mdl.params) / (tp * pp)), 1.088, rel=1e-3)
    assert mem.fits("a100-80gb") is True
    # with ZeRO-1 over MT-NLG's own 16 replicas, Adam's 12 bytes per parameter spread out
    z1 = training_memory(mdl, batch=1, seq=s, layout=TrainingLayout(
        tp=tp, pp=pp, dp=16, zero=1, sequence_parallel=True), recompute="selective",
        statistics="ignored").peak
    assert z1.optimizer_state * 16 == first.optimizer_state


def test_pipeline_must_divide_the_layers():
    with pytest.raises(SymroofError, match="pp: 7 stages do not divide the 96 layers"):
        training_memory(get("gpt3-175b"), batch=1, seq=2048, layout=TrainingLayout(pp=7))


def test_tensor_parallel_moe_is_refused():
    moe = transformer(layers=2, d_model=64, heads=4, mlp="gated", d_ff=96, experts=4,
                      experts_per_token=2)
    with pytest.raises(SymroofError, match="tensor parallelism"):
        training_memory(moe, batch=1, seq=8, layout=TrainingLayout(tp=2))
    assert training_memory(moe, batch=1, seq=8).peak.activations > 0


# ---------------------------------------------------------------------------
# FLOPs and time


def test_model_and_hardware_flops_forms():
    """Narayanan et al. (2021) and Korthikanti et al. (2022): model FLOPs per iteration
    72Bslh^2(1 + s/(6h) + V/(12hl)); recomputing every layer, 96Bslh^2(1 + s/(6h) +
    V/(16lh)); selective recomputation adds the attention core's products once more,
    4Bs^2h per layer. Full S x S products (causal="none"), as the papers count."""
    model = transformer(layers=L, d_model=D, heads=H, vocab=V)
    kw = dict(fused=False, causal="none")
    full = training_compute(model, S, recompute="full", **kw)
    sel = training_compute(model, S, recompute="selective", **kw)
    mdl = 72 * B * S * L * D**2 * (1 + S / (6 * D) + V / (12 * D * L))
    assert_formula_equal(full.model_flops_per_token * B * S, mdl)
    assert_formula_equal(full.hardware_flops_per_token * B * S,
                         96 * B * S * L * D**2 * (1 + S / (6 * D) + V / (16 * L * D)))
    assert_formula_equal(sel.recompute_flops_per_token * B * S, 4 * B * S**2 * D * L)
    assert_formula_equal(sel.model_flops_per_token, full.model_flops_per_token)


def test_training_time_narayanan_gpt3():
    """Narayanan et al. (2021), Section 5.1: GPT-3 (175B) on 300B tokens with 1024 A100s
    at 140 teraFLOP/s each (full recomputation) takes 8TP/(nX) = 34 days. The engine's
    hardware FLOPs add attention and the LM head (2.7% more): 34.7 days."""
    model = get("gpt3-175b")
    c = training_compute(model, 2048, recompute="full", fused=False, causal="none")
    tm = training_time(c, tokens=300 * 10**9, chips=1024, hardware="a100-80gb",
                       hfu=sp.Rational(140, 312))
    paper = 8 * 300e9 * 175e9 / (1024 * 140e12) / 86400
    assert round(paper) == 34
    assert_close(float(tm.days), 34.73, rel=1e-3)
    assert_close(float(tm.days), paper, rel=0.03)
    # the same time from the MFU the run implies
    again = training_time(c, tokens=300 * 10**9, chips=1024, hardware="a100-80gb", mfu=tm.mfu)
    assert again.days == tm.days and again.hfu == sp.Rational(140, 312)


def test_training_time_narayanan_1t():
    """Ibid.: the 1T model (128 layers, width 25600, 160 heads) on 450B tokens with 3072
    GPUs at 163 teraFLOP/s: about 84 days."""
    model = transformer(name="1t", layers=128, d_model=25600, heads=160, vocab=51200,
                        norm="layernorm", biases=True, positions="learned",
                        max_positions=2048, tied_embeddings=True)
    c = training_compute(model, 2048, recompute="full", fused=False, causal="none")
    tm = training_time(c, tokens=450 * 10**9, chips=3072, peak=163 * 10**12, hfu=1)
    paper = 8 * 450e9 * float(model.params) / (3072 * 163e12) / 86400
    assert round(paper) == 84
    assert_close(float(tm.days), paper, rel=0.03)


def test_mfu_and_hfu():
    """MT-NLG 530B, Korthikanti et al.'s abstract: 54.2% MFU with selective recomputation
    against 42.1% with full recomputation, "29% faster"; HFU = MFU x hardware/model."""
    c_sel = training_compute(_mt_nlg(), 2048, recompute="selective", causal="none")
    c_full = training_compute(_mt_nlg(), 2048, recompute="full", causal="none")
    fast = training_time(c_sel, tokens=10**12, chips=2240, hardware="a100-80gb",
                         mfu=sp.Rational(542, 1000))
    slow = training_time(c_full, tokens=10**12, chips=2240, hardware="a100-80gb",
                         mfu=sp.Rational(421, 1000))
    assert round(float(slow.days / fast.days) - 1, 2) == 0.29
    assert fast.hfu == fast.mfu * c_sel.hardware_flops_per_token / c_sel.model_flops_per_token
    assert slow.hfu > slow.mfu * sp.Rational(4, 3) * 0.99      # full: ~4/3 of the model FLOPs


def test_training_time_refusals():
    c = training_compute(get("gpt2"), 1024)
    with pytest.raises(SymroofError, match="exactly one of mfu and hfu"):
        training_time(c, tokens=10**9, chips=8, hardware="h100-sxm")
    with pytest.raises(SymroofError, match="utilization"):
        training_time(c, tokens=10**9, chips=8, hardware="h100-sxm", mfu=2)
    with pytest.raises(SymroofError, match="chips"):
        training_time(c, tokens=10**9, chips=0, hardware="h100-sxm", mfu=0.5)

"""The hybrid crossovers: symbolic formulas against hand derivations, and Nemotron-H-8B's
numbers on an H100 checked by evaluating both sides at the solution."""

from __future__ import annotations

from pathlib import Path

import pytest
import sympy as sp

import symroof as sr
from symroof.atlas.hybrid import (CHUNK, RIDGE, all_attention, chunk_crossover, decode_bytes,
                                  decode_intensity, hybrid_crossovers, state_vs_kv)
from symroof.errors import SymroofError
from symroof.models import from_hf_config
from symroof.models.hybrid import Mamba2, hybrid
from symroof.symbols import B, D, H, L, S, b, dim
from symroof.workloads.builder import LayerGroup
from symroof.workloads.recurrent import ssd
from symroof.workloads.transformer import decode

A, G, HS, P, N = (dim(n) for n in ("A", "G", "H_s", "P", "N"))
CONFIG = Path(__file__).parents[1] / "fixtures" / "hybrid_configs" / "nemotron-h-8b-base-8k.json"


def _model():
    return hybrid(layers=L, d_model=D, heads=H, kv_heads=G, ssm=Mamba2(heads=HS, head_dim=P,
                  state=N), groups=(LayerGroup(A), LayerGroup(L - A, mixer="mamba2")))


def test_state_vs_kv_in_the_attention_fraction():
    (x,) = state_vs_kv(_model())
    state = HS * P * N + 4 * (HS * P + 2 * N)  # SSM state + 4 conv taps of x, B, C
    kv = 2 * G * D / H                         # K and V per token of one attention layer
    assert sp.cancel(x.value - (L - A) * state / (A * kv)) == 0
    alpha = dim("alpha")  # with A = alpha L: (1 - alpha)/alpha x state / kv
    assert sp.cancel(x.value.subs(A, alpha * L) - (1 - alpha) / alpha * state / kv) == 0


def test_decode_bytes_against_all_attention():
    m = _model()
    (x,) = decode_bytes(m)
    kv, state = 2 * G * D / H * b, (HS * P * N + 4 * (HS * P + 2 * N)) * b
    mine = decode(m, B, context=S, logits="none")
    other = decode(all_attention(m), B, context=S, logits="none")
    dw = (mine.bytes - other.bytes).subs(B, 0)  # the weight difference, any B
    # W_h + B A kv S + 2 B (L - A) state = W_a + B L kv S
    assert sp.cancel(x.value - (dw + 2 * B * (L - A) * state) / (B * (L - A) * kv)) == 0
    assert all_attention(m).ssm_layers == 0 and all_attention(m).attention_layers == L


def test_decode_intensity_limit():
    m = _model()
    lim, att = decode_intensity(m)
    f = decode(m, B, context=S, logits="none")
    per_seq_f, per_seq_q = sp.diff(f.flops, B), sp.diff(f.bytes, B)
    assert sp.cancel(lim - per_seq_f / per_seq_q) == 0
    # the all-attention ceiling falls as 1/S; the hybrid's tends to the attention layers'
    assert sp.limit(att.subs({A: 1}), S, sp.oo) == sp.limit(lim.subs({A: 1}), S, sp.oo)


def test_chunk_crossover_formula():
    m = _model()
    (x,) = chunk_crossover(m)
    # per token: G Q N + H Q P + 4 H P N FLOPs (causal half, scores per group), the fused
    # kernel reads x, B, C, dt and writes y: (2 H P + 2 G N + H) b bytes (G = 1 here)
    expect = (RIDGE * b * (2 * HS * P + 2 * N + HS) - 4 * HS * P * N) / (N + HS * P)
    assert sp.cancel(x.value - expect) == 0
    assert x.conditions  # a positive chunk only past 4 H P N / (R (2 H P + 2 N + H))


def test_nemotron_h_8b_on_h100():
    m = from_hf_config(CONFIG)
    assert m.params == 8_100_852_736  # transformers 5.24 on the meta device: the same
    assert (m.attention_layers, m.ssm_layers) == (4, 24)
    hw = sr.hardware.get("h100-sxm")
    r = hybrid_crossovers(m, hw)
    # 24 x (128 x 64 x 128 + 4 x (8192 + 2 x 8 x 128)) values of state against 4 x 2 x 8
    # x 128 of K and V per token: 26,148,864 / 8,192
    assert [x.value for x in r.state_vs_kv] == [3192]
    (db,) = r.decode_bytes
    for batch in (1, 64):
        s_star = db.value.subs(B, batch)
        q_h = decode(m, batch, context=S, logits="none").bytes.subs({b: 2, S: s_star})
        q_a = decode(all_attention(m), batch, context=S, logits="none").bytes.subs(
            {b: 2, S: s_star})
        assert q_h == q_a
    (q,) = r.chunk
    scan = ssd(2**20, 128, 64, 128, CHUNK, groups=8, b=2)
    ridge = hw.ridge("bf16")
    # at Q* the scan's intensity is the ridge, up to the per-head weights' bytes (which a
    # 2^20-token sequence makes 1e-7 of the traffic)
    assert abs(float(scan.intensity.subs(CHUNK, q.value) / ridge) - 1) < 1e-6
    assert 700 < q.value < 750 and m.ssm.chunk == 128  # the released chunk is memory-bound


def test_not_a_hybrid_is_refused():
    with pytest.raises(SymroofError, match="expected a hybrid model"):
        state_vs_kv(sr.models.get("llama-3-8b"))


@pytest.mark.parametrize("ridge", ["__import__('os').getcwd()", "295", None, float("nan")])
def test_a_ridge_that_is_not_a_number_is_refused_by_name(ridge):
    """The ridge is a value, never text to parse (it went through sympify before)."""
    with pytest.raises(SymroofError, match="chunk_crossover ridge"):
        chunk_crossover(_model(), ridge=ridge)

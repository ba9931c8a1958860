"""The gated DeltaNet mixer (Qwen3-Next's linear attention): formulas against a
brute-force chunked gated delta rule that really computes.

The brute force below shares no code with symroof: it runs the chunked (WY) form on
random numbers with explicit loops (the strictly lower system solved by forward
substitution, the chunk states carried from chunk to chunk), checks its output against
the recurrence S = exp(g) S + beta k (v - exp(g) S^T k)^T, o = S^T q, and counts every
multiply-add of its contractions; symroof's FLOPs (``causal="exact"``) must be twice that.
"""

from __future__ import annotations

import math
import random

import pytest
import sympy as sp

from symroof.errors import SymroofError
from symroof.models import GatedDeltaNet, hybrid
from symroof.symbols import B, D, H, L, S, b, dim
from symroof.workloads.builder import LayerGroup
from symroof.workloads.recurrent import deltanet_flops_per_token
from symroof.workloads.transformer import decode, prefill

HK, DK, HV, DV, Q = (dim(n) for n in ("H_k", "d_k", "H_v", "d_v", "Q"))


def _dot(a, c):
    return sum(x * y for x, y in zip(a, c))


def delta_bruteforce(seq, hk, dk, hv, dv, chunk, seed=0):
    """(multiply-adds of the chunked form's contractions, largest deviation from the
    recurrence) for one sequence."""
    rnd = random.Random(seed)
    per = hv // hk
    q = [[[rnd.uniform(-1, 1) for _ in range(dk)] for _ in range(hk)] for _ in range(seq)]
    k = [[[rnd.uniform(-1, 1) for _ in range(dk)] for _ in range(hk)] for _ in range(seq)]
    v = [[[rnd.uniform(-1, 1) for _ in range(dv)] for _ in range(hv)] for _ in range(seq)]
    gl = [[-rnd.uniform(0.05, 0.5) for _ in range(hv)] for _ in range(seq)]
    be = [[rnd.uniform(0.1, 0.9) for _ in range(hv)] for _ in range(seq)]
    ref = [[[0.0] * dv for _ in range(hv)] for _ in range(seq)]
    for h in range(hv):  # the recurrence
        kh, st = h // per, [[0.0] * dv for _ in range(dk)]
        for t in range(seq):
            e = math.exp(gl[t][h])
            st = [[e * x for x in row] for row in st]
            mem = [sum(st[i][j] * k[t][kh][i] for i in range(dk)) for j in range(dv)]
            delta = [(v[t][h][j] - mem[j]) * be[t][h] for j in range(dv)]
            st = [[st[i][j] + k[t][kh][i] * delta[j] for j in range(dv)] for i in range(dk)]
            ref[t][h] = [sum(st[i][j] * q[t][kh][i] for i in range(dk)) for j in range(dv)]
    nc = -(-seq // chunk)
    macs, dev = 0, 0.0
    for h in range(hv):
        kh, st = h // per, [[0.0] * dv for _ in range(dk)]
        for c in range(nc):
            idx = [c * chunk + i for i in range(chunk)]
            real = [t < seq for t in idx]
            kk = [k[t][kh] if r else [0.0] * dk for t, r in zip(idx, real)]
            qq = [q[t][kh] if r else [0.0] * dk for t, r in zip(idx, real)]
            vv = [v[t][h] if r else [0.0] * dv for t, r in zip(idx, real)]
            gg = [gl[t][h] if r else 0.0 for t, r in zip(idx, real)]
            bb = [be[t][h] if r else 0.0 for t, r in zip(idx, real)]
            cum = [sum(gg[:i + 1]) for i in range(chunk)]
            kb = [[x * bb[i] for x in kk[i]] for i in range(chunk)]
            tri, att = {}, {}
            for l_ in range(chunk):
                for s_ in range(l_ + 1):  # the lower triangle, diagonal included
                    dec = math.exp(cum[l_] - cum[s_])
                    tri[l_, s_] = _dot(kb[l_], kk[s_]) * dec
                    att[l_, s_] = _dot(qq[l_], kk[s_]) * dec
                    macs += 2 * dk
            rhs = [[vv[i][j] * bb[i] for j in range(dv)] + [kb[i][j] * math.exp(cum[i])
                                                             for j in range(dk)]
                   for i in range(chunk)]
            sol = []
            for l_ in range(chunk):  # (I + strictly lower T) x = rhs, column by column
                row = list(rhs[l_])
                for s_ in range(l_):
                    row = [row[j] - tri[l_, s_] * sol[s_][j] for j in range(dv + dk)]
                    macs += dv + dk
                sol.append(row)
            u = [r[:dv] for r in sol]
            w = [r[dv:] for r in sol]
            v_new = []
            for l_ in range(chunk):
                v_new.append([u[l_][j] - sum(w[l_][i] * st[i][j] for i in range(dk))
                              for j in range(dv)])
                macs += dk * dv
            for l_ in range(chunk):
                out = [math.exp(cum[l_]) * sum(qq[l_][i] * st[i][j] for i in range(dk))
                       for j in range(dv)]
                macs += dk * dv
                for s_ in range(l_ + 1):
                    out = [out[j] + att[l_, s_] * v_new[s_][j] for j in range(dv)]
                    macs += dv
                if real[l_]:
                    dev = max(dev, max(abs(x - y) for x, y in zip(out, ref[idx[l_]][h])))
            last = cum[-1]
            st = [[math.exp(last) * st[i][j] + sum(
                kk[t][i] * math.exp(last - cum[t]) * v_new[t][j] for t in range(chunk))
                for j in range(dv)] for i in range(dk)]
            macs += chunk * dk * dv
    return macs, dev


def _model(hk, dk, hv, dv, chunk, layers=1):
    return hybrid(layers=layers, d_model=8, heads=1, head_dim=8, d_ff=8,
                  groups=(LayerGroup(layers, mixer="deltanet", ffn=False),),
                  deltanet=GatedDeltaNet(hk, dk, hv, dv, chunk=chunk))


def _delta_flops(m, batch, seq):
    a = prefill(m, batch, seq, logits="none")
    return sp.Add(*(c.flops for name, c in a.per_op.items() if "delta_" in name))


@pytest.mark.parametrize("seq,hk,dk,hv,dv,chunk", [(8, 1, 3, 2, 2, 4), (7, 2, 2, 2, 3, 3)])
def test_chunked_delta_rule_flops_equal_a_brute_force(seq, hk, dk, hv, dv, chunk):
    macs, dev = delta_bruteforce(seq, hk, dk, hv, dv, chunk)
    assert dev < 1e-9  # the chunked form computes the recurrence
    m = _model(hk, dk, hv, dv, chunk).with_scan(causal="exact")
    assert _delta_flops(m, 1, seq) == 2 * macs
    assert _delta_flops(m, 2, seq) == 4 * macs


def test_formulas_and_the_decode_state():
    m = hybrid(layers=L, d_model=D, heads=H, groups=(LayerGroup(L, mixer="deltanet",
                                                                ffn=False),),
               deltanet=GatedDeltaNet(HK, DK, HV, DV, chunk=Q))
    per_token = _delta_flops(m, B, S) / (B * S * L)
    assert sp.cancel(per_token - deltanet_flops_per_token(HV, DK, DV, Q)) == 0
    dec = decode(m, B, context=S, logits="none")
    proj = 2 * D * (2 * HK * DK + 2 * HV * DV + 2 * HV) + 2 * HV * DV * D
    conv = 2 * 4 * (2 * HK * DK + HV * DV)  # K = 4 multiply-adds per channel of q, k, v
    assert sp.cancel(dec.flops - B * L * (proj + conv + 6 * HV * DK * DV)) == 0
    # the state: d_k x d_v per value head, 4 conv taps of q, k, v; read and written
    state = HV * DK * DV + 4 * (2 * HK * DK + HV * DV)
    assert sp.cancel(m.state_bytes_per_sequence - L * state * b) == 0
    assert sp.cancel(dec.bytes - m.params * b - 2 * B * L * state * b) == 0


def test_bad_widths_name_the_field():
    with pytest.raises(SymroofError, match="linear_num_key_heads 3: does not divide"):
        GatedDeltaNet(3, 4, 4, 4)
    with pytest.raises(SymroofError, match="chunk_size 16: larger than the sequence 8"):
        prefill(_model(1, 2, 1, 2, 16), 1, 8)


@pytest.mark.parametrize("phase", ["decode", "prefill"])
def test_tensor_parallel_splits_key_and_value_heads_as_vllm(phase):
    """Qwen3-Next (2 key heads, 4 value heads of 8) at tp=2, as vLLM's GatedDeltaNet
    splits it: each device one key head and its two value heads (projections and conv by
    columns, each head's rule, gates and norm local), the out-projection by rows; FLOPs
    halve but the replicated router and shared-expert gate, the mixer's only all-reduce is
    its out-projection's, and each device holds half the states."""
    import json
    from pathlib import Path

    from symroof.models import from_hf_dict
    data = json.loads((Path(__file__).parents[1] / "fixtures" / "hybrid_flops.json").read_text())
    cfg = next(e["config"] for e in data["entries"] if e["model"] == "qwen3_next")
    m = from_hf_dict(cfg)
    run = (lambda **kw: decode(m, 2, context=8, logits="none", **kw)) if phase == "decode" \
        else (lambda **kw: prefill(m, 2, 64, logits="none", **kw))
    one, two = run(), run(tp=2)
    whole = sum(c.flops for n, c in one.per_op.items()
                if n.rsplit(".", 1)[-1] in ("router", "shared_gate"))
    assert two.flops == (one.flops - whole) / 2 + whole
    g = two.graph
    reduced = {o.name for o in g.ops if o.name.startswith("delta.mlp.")
               and o.name.endswith(":all_reduce")}
    assert "delta.mlp.out_proj:all_reduce" in reduced
    assert not any(x in n for n in reduced for x in ("delta_", "step_", "conv_", "decay"))
    if phase == "decode":
        shapes = {t.name.rsplit(".", 1)[-1]: t.shape for t in g.inputs
                  if t.name.startswith("delta.mlp.") and t.name.endswith(("state", "_q"))}
        assert shapes["ssm_state"] == (2, 1, 2, 8, 8)   # 1 key head, 2 value heads of 8x8
        assert shapes["conv_state_q"][1] == 8            # half of q's 2 x 8 channels

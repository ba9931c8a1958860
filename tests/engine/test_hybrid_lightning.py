"""Lightning attention (MiniMax's linear attention) inside a hybrid: its blocked prefill
and its decode step against a brute-force blocked computation in pure Python that really
computes (checked against the plain recurrence) and counts its multiply-adds; MiniMax's
config.json read. (FlopCounterMode on a tiny MiniMax: tests/oracles/test_hybrid_oracle.py.)
"""

from __future__ import annotations

import random

import pytest
import sympy as sp

from symroof.errors import SymroofError
from symroof.models import from_hf_dict
from symroof.models.hybrid import LightningAttention, hybrid
from symroof.symbols import b
from symroof.workloads.builder import LayerGroup
from symroof.workloads.transformer import decode, prefill

_GEMMS = ("light_qk", "light_intra", "light_update", "light_inter")


def _blocked(q, k, v, lam, block, causal):
    """Lightning attention over one head, blocked as the reference does: the intra-block
    pairs (all Q x Q with causal=False, masked by the decay; j <= i with causal=True), the
    carried state read by each query and updated per position. Returns (outputs,
    multiply-adds of the four products)."""
    n, d = len(q), len(q[0])
    state = [[0.0] * d for _ in range(d)]
    out, macs = [], 0
    for s0 in range(0, n, block):
        idx = range(s0, min(s0 + block, n))
        for i in idx:
            o = [0.0] * d
            for j in idx:
                if causal and j > i:
                    continue
                score = sum(q[i][t] * k[j][t] for t in range(d))          # q k^T
                w = lam ** (i - j) if j <= i else 0.0
                o = [o[t] + score * w * v[j][t] for t in range(d)]        # scores v
                macs += 2 * d
            decay = lam ** (i - s0 + 1)                                    # q (decayed) S
            o = [o[t] + sum(q[i][u] * decay * state[u][t] for u in range(d))
                 for t in range(d)]
            macs += d * d
            out.append(o)
        end = idx[-1]
        new = [[lam ** len(idx) * state[u][t] for t in range(d)] for u in range(d)]
        for j in idx:                                                      # k^T v
            for u in range(d):
                for t in range(d):
                    new[u][t] += lam ** (end - j) * k[j][u] * v[j][t]
            macs += d * d
        state = new
    return out, macs


def _recurrent(q, k, v, lam):
    d = len(q[0])
    state = [[0.0] * d for _ in range(d)]
    out = []
    for i in range(len(q)):
        state = [[lam * state[u][t] + k[i][u] * v[i][t] for t in range(d)] for u in range(d)]
        out.append([sum(q[i][u] * state[u][t] for u in range(d)) for t in range(d)])
    return out


def _model(heads=2, head_dim=3, block=4, layers=2):
    return hybrid(layers=layers, d_model=8, heads=2, head_dim=4, d_ff=16, vocab=50,
                  lightning=LightningAttention(heads, head_dim, chunk=block),
                  groups=(LayerGroup(sp.Integer(1)),
                          LayerGroup(sp.Integer(layers - 1), mixer="lightning")))


@pytest.mark.parametrize("seq, causal", [(8, "none"), (12, "exact"), (10, "exact")])
def test_blocked_prefill_against_brute_force(seq, causal):
    rnd = random.Random(seq)
    h, d, q_blk = 2, 3, 4
    vec = [[rnd.uniform(-1, 1) for _ in range(d)] for _ in range(3 * seq)]
    q, k, v = vec[:seq], vec[seq:2 * seq], vec[2 * seq:]
    out, _ = _blocked(q, k, v, 0.9, q_blk, causal == "exact")
    ref = _recurrent(q, k, v, 0.9)
    assert max(abs(a - r) for o, p in zip(out, ref) for a, r in zip(o, p)) < 1e-9
    # symroof pads a last partial block whole (transformers' torch path computes it at
    # its size, hence the oracle's whole-block prompts): count over zero-padded inputs
    pad = -seq % q_blk
    zeros = [[0.0] * d] * pad
    _, macs = _blocked(q + zeros, k + zeros, v + zeros, 0.9, q_blk, causal == "exact")
    a = prefill(_model(h, d, q_blk).with_scan(causal=causal), 1, seq)
    mixer = sum(c.flops for name, c in a.per_op.items() if name.rsplit(".", 1)[-1] in _GEMMS)
    assert mixer == h * 2 * macs          # one lightning layer of h heads, 2 FLOPs a MAC


def test_decode_step_and_state():
    """A step: k^T v and q S, 2 d^2 multiply-adds a head; the state H d^2 values a layer,
    whatever the context (no KV on lightning layers)."""
    m = _model(2, 3, 4, layers=3)
    a = decode(m, 5, context=100)
    step = sum(c.flops for name, c in a.per_op.items()
               if name.rsplit(".", 1)[-1] in ("step_outer", "step_read_q"))
    assert step == 5 * 2 * 2 * (2 * 3 * 3) * 2      # B, layers, heads, 2 d^2 MACs, 2
    assert m.state_bytes_per_sequence == 2 * 2 * 3 * 3 * b
    assert sp.expand(m.attention_kv_bytes(100) - 1 * 2 * 2 * 4 * 100 * b) == 0


def test_minimax_config():
    m = from_hf_dict({"model_type": "minimax", "hidden_size": 64, "num_attention_heads": 4,
                      "num_key_value_heads": 2, "num_hidden_layers": 4, "vocab_size": 100,
                      "intermediate_size": 32, "block_size": 16, "num_local_experts": 4})
    kinds = {(g.mixer, g.moe): g.count for g in m.layer_groups}
    assert kinds == {("attention", True): 2, ("lightning", True): 2}  # alternating by default
    assert (m.lightning.heads, m.lightning.head_dim, m.lightning.chunk) == (4, 16, 16)
    with pytest.raises(SymroofError, match="field 'sliding_window' is set"):
        from_hf_dict({"model_type": "minimax", "hidden_size": 64, "num_attention_heads": 4,
                      "num_hidden_layers": 2, "vocab_size": 100, "intermediate_size": 32,
                      "sliding_window": 128})
    with pytest.raises(SymroofError, match="layer_types"):
        from_hf_dict({"model_type": "minimax", "hidden_size": 64, "num_attention_heads": 4,
                      "num_hidden_layers": 2, "vocab_size": 100, "intermediate_size": 32,
                      "layer_types": ["full_attention", "mamba"]})


@pytest.mark.parametrize("phase", ["decode", "prefill"])
def test_tensor_parallel_splits_lightning_heads(phase):
    """The recorded tiny MiniMax at tp=2 (4 heads of 16), as vLLM splits its linear
    attention: two heads a device, each head's state local; FLOPs halve but the replicated
    router; the mixer's only all-reduce is its out-projection's; half the state a device."""
    import json
    from pathlib import Path
    data = json.loads((Path(__file__).parents[1] / "fixtures" / "hybrid_flops.json").read_text())
    m = from_hf_dict(next(e["config"] for e in data["entries"] if e["model"] == "minimax"))
    run = (lambda **kw: decode(m, 2, context=8, logits="none", **kw)) if phase == "decode" \
        else (lambda **kw: prefill(m, 2, 8, logits="none", **kw))
    one, two = run(), run(tp=2)
    router = sum(c.flops for n, c in one.per_op.items() if n.rsplit(".", 1)[-1] == "router")
    assert two.flops == (one.flops - router) / 2 + router
    g = two.graph
    reduced = {o.name for o in g.ops if o.name.startswith("lightning.mlp.")
               and o.name.endswith(":all_reduce")}
    assert reduced == {"lightning.mlp.out_proj:all_reduce", "lightning.mlp.combine:all_reduce"}
    if phase == "decode":
        (state,) = [t for t in g.inputs if t.name == "lightning.mlp.ssm_state"]
        assert state.shape == (2, 2, 16, 16)

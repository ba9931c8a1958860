"""Hybrid and state-space models against PyTorch: FlopCounterMode, parameters, cache bytes.

(a) Recorded: every entry of ``tests/fixtures/hybrid_flops.json`` (tiny Mamba2, Bamba,
    GraniteMoeHybrid, Falcon-H1, Nemotron-H, LFM2, LFM2-MoE, Jamba, Mamba, Falcon-Mamba,
    Qwen3-Next, OLMo-Hybrid, MiniMax, Kimi-Linear, Zamba2 and Zamba models on transformers' pure-PyTorch paths; see
    ``tests/oracles/README.md``) is reproduced exactly from its config.json alone (the gated DeltaNet families: but for
    the ops in ``UNCOUNTED``, Kimi-Linear's in ``UNCOUNTED_KDA``): the parameter count, the FLOPs of a prefill and of a
    decode step, and the bytes of the cache object after the step (conv and SSM states,
    keys and values at 4 bytes). The counter's conventions are ``ScanChoices.torch()``
    plus eager attention's ``causal="none"``. Why each differs
    from symroof's default (the reference kernels'):

    - transformers repeats B and C per head and computes the scores ``C B^T`` per head
      (``cb="head"``); the kernels compute them once per group;
    - it computes every Q x Q pair of a chunk and masks (``causal="none"``); a causal
      kernel skips about half;
    - it passes the chunk states as one einsum over every (source, target) pair of the
      c + 1 chunk states (``passing="quadratic"``, (c + 1)^2 P N multiply-adds per head);
      the kernels scan the c chunks (elementwise, no contraction);
    - its conv1d is padded by K - 1 and computes S + K - 1 outputs before the slice, and
      its decode update convolves the K-wide state with the new input (2 outputs, the
      first dropped) (``conv_outputs="padded"``);
    - it pads a last partial chunk whole (symroof too, with numbers).
    ``test_default_conventions_differ_by_exactly_these_terms`` checks the sum of these
    differences on one entry.
(b) Live: one family is built and counted now at shapes the fixture does not hold (skipped
    without torch, a failure under CI, as in test_torch_oracle.py).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from symroof.models import from_hf_dict
from symroof.symbols import b
from symroof.workloads.recurrent import ScanChoices
from symroof.workloads.transformer import decode, prefill
from test_torch_oracle import _load, _require  # one skip-or-fail rule for both oracles

HERE = Path(__file__).resolve().parent
DATA = json.loads((HERE.parent / "fixtures" / "hybrid_flops.json").read_text())
ENTRIES = DATA["entries"]
FAMILIES = ("mamba2", "bamba", "granitemoehybrid", "falcon_h1", "nemotron_h", "lfm2", "jamba",
            "mamba", "qwen3_next", "olmo_hybrid", "falcon_mamba", "lfm2_moe", "minimax",
            "kimi_linear", "zamba2", "zamba")


def _model(config: dict):
    return from_hf_dict(config).with_scan(ScanChoices.torch())


#: Gated DeltaNet ops whose FLOPs PyTorch's counter cannot see (Qwen3-Next, OLMo-Hybrid):
#: the chunked rule solves the triangular systems with torch.linalg.solve_triangular, for which
#: FlopCounterMode has no formula (0 FLOPs), and its one-token step reads and updates the
#: state with elementwise products and sums (torch_recurrent_gated_delta_rule), not
#: matmuls. No counting convention of symroof's drops real work, so the test subtracts
#: exactly these ops' FLOPs, by name.
UNCOUNTED = ("delta_solve_v", "delta_solve_k", "step_read_k", "step_outer", "step_read_q")
#: Kimi Delta Attention (decay per key channel): its torch path computes both chunk score
#: products (k_beta k^T and q k^T, with the decay mask per channel) as elementwise products
#: and sums, which the counter does not see; it builds (I + T)^-1 by an elementwise loop
#: (not seen, not modelled: symroof's convention is the substitution applied to v_beta and
#: k_beta) and multiplies it by them with matmuls (seen: delta_solve_v/k are kept); its
#: decode step is elementwise as Qwen3-Next's (tests/engine/test_hybrid_kimi.py).
UNCOUNTED_KDA = ("delta_kk", "delta_qk", "step_read_k", "step_outer", "step_read_q")


def _analysis(model, e: dict):
    if e["phase"] == "prefill":
        return prefill(model, e["batch"], e["seq"], causal="none")
    # latent="naive": transformers' MLA decode up-projects every cached latent (Kimi)
    return decode(model, e["batch"], past=e["past"], latent="naive")


def _flops(model, e: dict) -> int:
    a = _analysis(model, e)
    kda = model.deltanet is not None and model.deltanet.decay == "channel"
    hidden = sum(c.flops for name, c in a.per_op.items()
                 if name.startswith("delta.") and name.rsplit(".", 1)[-1] in (
                     UNCOUNTED_KDA if kda else UNCOUNTED))
    return int(a.flops - hidden)


def test_fixture_covers_every_family():
    assert sorted({e["model"] for e in ENTRIES}) == sorted(FAMILIES)
    assert len(ENTRIES) == 4 * len(FAMILIES)  # each: 2 prefill + 2 decode shapes


@pytest.mark.parametrize("e", ENTRIES, ids=[e["id"] for e in ENTRIES])
def test_recorded_counts_are_reproduced(e):
    m = _model(e["config"])
    assert m.params == e["params"]
    assert _flops(m, e) == e["total_flops"]
    if e["phase"] == "decode":  # float32 cache after the step: past + 1 positions of K, V
        got = e["cache_bytes"]
        assert (m.state_bytes_per_sequence * e["batch"]).subs(b, 4) == \
            got["conv_state"] + got["ssm_state"]
        assert (m.attention_kv_bytes(e["past"] + 1) * e["batch"]).subs(b, 4) == got["kv"]


def test_default_conventions_differ_by_exactly_these_terms():
    (e,) = [x for x in ENTRIES if x["id"] == "mamba2/prefill/1x8"]
    cfg = e["config"]
    h, p, n, g, q, k = (cfg[f] for f in ("num_heads", "head_dim", "state_size", "n_groups",
                                          "chunk_size", "conv_kernel"))
    seq, layers = e["seq"], cfg["num_hidden_layers"]
    c = math.ceil(seq / q)
    conv = h * p + 2 * g * n
    per_layer = (2 * c * q * q * h * n - c * q * q * g * n          # scores per head, all pairs
                 + 2 * c * q * q * h * p - c * q * q * h * p        # diagonal blocks, all pairs
                 + 2 * h * (c + 1) ** 2 * p * n                     # quadratic state passing
                 + 2 * (k - 1) * conv * k)                          # padded conv outputs
    default = from_hf_dict(cfg)
    assert int(prefill(default, 1, seq, causal="none").flops) + layers * per_layer == \
        e["total_flops"]


def test_what_the_counter_cannot_see_in_the_deltanet_families():
    """The FLOPs subtracted for Qwen3-Next and OLMo-Hybrid are the triangular solves
    (dense Q x Q by (d_k + d_v) per value head and chunk under causal="none") and the
    decode step's three state products (6 d_k d_v per value head), on their gated
    DeltaNet layers."""
    for e in (x for x in ENTRIES if x["model"] in ("qwen3_next", "olmo_hybrid")):
        cfg = e["config"]
        hv, dk, dv = (cfg[f] for f in ("linear_num_value_heads", "linear_key_head_dim",
                                        "linear_value_head_dim"))
        a = _analysis(_model(cfg), e)
        n_delta = cfg["layer_types"].count("linear_attention")
        if e["phase"] == "prefill":
            chunks = math.ceil(e["seq"] / 64)
            expect = e["batch"] * n_delta * chunks * hv * 2 * 64 * 64 * (dk + dv)
        else:
            expect = e["batch"] * n_delta * 6 * hv * dk * dv
        assert int(a.flops) - _flops(_model(cfg), e) == expect, e["id"]


# ---------------------------------------------------------------------------
# (b) live


def test_live_bamba_at_new_shapes():
    """Bamba (attention and Mamba-2 layers, a padded last chunk): a prefill of 11 tokens
    (3 chunks of 4) and a decode step after 9, counted now."""
    _require("torch")
    _require("transformers")
    rec = _load("_symroof_record_hybrid", HERE / "record_hybrid_flops.py")
    rec.PREFILL_SHAPES, rec.DECODE_SHAPES = [(1, 11)], [(2, 9)]
    (name, cls, kwargs), = [s for s in rec.specs() if s[0] == "bamba"]
    for e in rec.record_model(name, cls, kwargs):
        m = _model(e["config"])
        assert m.params == e["params"]
        assert _flops(m, e) == e["total_flops"], e["id"]
        if e["phase"] == "decode":
            got = e["cache_bytes"]
            assert (m.state_bytes_per_sequence * 2).subs(b, 4) == \
                got["conv_state"] + got["ssm_state"]
            assert (m.attention_kv_bytes(10) * 2).subs(b, 4) == got["kv"]

"""The recorded PyTorch FLOP counts are reproduced exactly by formulas.py.

Pure Python: needs neither torch nor transformers (the fixture was recorded by
``tests/oracles/record_torch_flops.py``).
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
FIXTURE = HERE.parent / "fixtures" / "torch_flops.json"


def _load_formulas():
    spec = importlib.util.spec_from_file_location("_symroof_oracle_formulas", HERE / "formulas.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


formulas = _load_formulas()
DATA = json.loads(FIXTURE.read_text())
META = DATA["metadata"]
ENTRIES = DATA["entries"]
VERSION = META["transformers_version"]


def _nonzero(d: dict) -> dict:
    return {k: v for k, v in d.items() if v}


def test_metadata_complete():
    for key in ("torch_version", "transformers_version", "python_version", "date", "attn_implementation"):
        assert META[key], key
    assert META["attn_implementation"] == "eager"
    assert META["dtype"] == "float32"


OLD = [e for e in ENTRIES if e["family"] in ("llama", "gpt2")]
ARCH = [e for e in ENTRIES if e["family"] not in ("llama", "gpt2")]


def test_entries_cover_required_cases():
    ids = [e["id"] for e in ENTRIES]
    assert len(ids) == len(set(ids))
    assert ids == sorted(ids)
    kinds = {(e["model"], e["phase"]) for e in ENTRIES}
    for model in ("llama_gqa", "llama_mha", "llama_wide_heads", "gpt2"):
        for phase in ("prefill", "decode"):
            assert (model, phase) in kinds, (model, phase)
    by_model = {e["model"]: e["config"] for e in ENTRIES}
    gqa, mha, wide = by_model["llama_gqa"], by_model["llama_mha"], by_model["llama_wide_heads"]
    assert gqa["num_key_value_heads"] < gqa["num_attention_heads"]
    assert mha["num_key_value_heads"] == mha["num_attention_heads"]
    assert wide["num_attention_heads"] * wide["head_dim"] != wide["hidden_size"]
    for e in ENTRIES:
        if e["phase"] == "decode":
            assert e["kv_len"] == e["past"] + 1


@pytest.mark.parametrize("entry", ENTRIES, ids=[e["id"] for e in ENTRIES])
def test_total_reproduced(entry):
    assert formulas.expected_total(entry, VERSION) == entry["total_flops"]
    assert sum(entry["flops_by_op"].values()) == entry["total_flops"]


@pytest.mark.parametrize("entry", OLD, ids=[e["id"] for e in OLD])
def test_per_op_split_reproduced(entry):
    assert _nonzero(formulas.expected_by_op(entry, VERSION)) == entry["flops_by_op"]


@pytest.mark.parametrize("entry", OLD, ids=[e["id"] for e in OLD])
def test_lm_head_and_rotary_reproduced(entry):
    assert formulas.expected_by_module(entry, VERSION) == entry["flops_by_module"]


def test_newer_families_cover_every_phase_and_the_window():
    """Issue 12: every newer family at prefill, decode before, at and past the window
    (W = 4: past 0, 1, 3, 4, 7, 12) and one training step."""
    families = {e["family"] for e in ARCH}
    assert families == set(formulas.ARCH_FAMILIES)
    for model in {e["model"] for e in ARCH}:
        pasts = sorted(e["past"] for e in ARCH if e["model"] == model and e["phase"] == "decode")
        assert pasts == [0, 1, 3, 4, 7, 12], model
        phases = {e["phase"] for e in ARCH if e["model"] == model}
        assert phases == {"prefill", "decode", "train"}, model


def test_window_caches_hold_w_minus_1_between_steps():
    """The counter's model: transformers' DynamicSlidingWindowLayer keeps W - 1 positions
    after a step and joins the new one to them, so a step attends min(past + 1, W) keys;
    a full layer keeps them all."""
    for e in ARCH:
        if e["phase"] != "decode":
            continue
        windows = formulas.layer_windows(e["config"])
        held = e["cache_positions_after_step"]
        if e["family"].startswith("deepseek"):   # one latent cache per layer, never windowed
            assert held == [e["past"] + 1] * len(windows), e["id"]
            continue
        want = [e["past"] + 1 if w is None else min(e["past"] + 1, w - 1) for w in windows]
        assert held == want, e["id"]


@pytest.mark.parametrize("entry", ARCH, ids=[e["id"] for e in ARCH])
def test_newer_family_attention_is_the_bmm_and_lm_head_the_head(entry):
    """Eager attention is the counter's aten.bmm (QK^T and PV at every head: the full
    rectangle in prefill, min(past + 1, W) keys on a windowed layer in decode)."""
    if entry["phase"] == "train":
        return
    b, q_len, kv_len = formulas._shape(entry)
    cfg = entry["config"]
    bmm = 0
    for window in formulas.layer_windows(cfg):
        keys = kv_len if (window is None or q_len > 1) else min(kv_len, window)
        if cfg["model_type"].startswith("deepseek"):
            h = cfg["num_attention_heads"]
            dn, dr, dv = cfg["qk_nope_head_dim"], cfg["qk_rope_head_dim"], cfg["v_head_dim"]
            bmm += formulas.matmul(q_len, keys, dn + dr, b * h) + formulas.matmul(q_len, dv, keys, b * h)
        else:
            hd = cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]
            bmm += formulas.attention_core(b, cfg["num_attention_heads"], q_len, keys, hd)
    assert entry["flops_by_op"].get("aten.bmm", 0) == bmm
    assert entry["flops_by_module"]["lm_head"] == formulas.matmul(
        b * q_len, cfg["vocab_size"], cfg["hidden_size"])


# Totals measured with the same script under transformers 4.57.6 (torch
# 2.13.0+cpu), where the Llama rotary table is an aten.bmm of hd*Sq FLOPs once
# per forward (position_ids batch 1, so independent of the batch size).
TRANSFORMERS_4_57_6 = {
    "llama_gqa/decode/b1_p1": 189456,
    "llama_gqa/decode/b2_p15": 393232,
    "llama_gqa/decode/b4_p3": 761872,
    "llama_gqa/prefill/b1_s8": 1540224,
    "llama_gqa/prefill/b2_s16": 6291712,
    "llama_gqa/prefill/b3_s5": 2864720,
    "llama_wide_heads/decode/b4_p3": 864280,
    "llama_wide_heads/prefill/b2_s16": 7209344,
    "llama_wide_heads/prefill/b3_s5": 3252600,
}


@pytest.mark.parametrize("entry_id", sorted(TRANSFORMERS_4_57_6))
def test_rotary_matmul_of_older_transformers(entry_id):
    entry = next(e for e in ENTRIES if e["id"] == entry_id)
    assert formulas.expected_total(entry, "4.57.6") == TRANSFORMERS_4_57_6[entry_id]
    b, q_len = entry["batch"], entry.get("seq", 1)
    hd = entry["config"]["head_dim"]
    assert formulas.expected_total(entry, "4.57.6") - formulas.expected_total(entry, None) == hd * q_len
    assert formulas.rotary_flops(entry["config"], q_len, "4.57.6", position_batch=b) == b * hd * q_len


def test_rotary_cutover_version():
    assert formulas.rotary_is_matmul("4.57.6")
    assert formulas.rotary_is_matmul("5.14.1")
    assert not formulas.rotary_is_matmul("5.15.0")
    assert not formulas.rotary_is_matmul("5.24.0")
    assert not formulas.rotary_is_matmul(None)

"""symroof's FLOP counts against PyTorch's FlopCounterMode (an independent counter).

(a) Recorded: every entry of ``tests/fixtures/torch_flops.json`` (tiny Hugging Face models,
    eager attention; see ``tests/oracle/README.md``) must be reproduced exactly from its
    config.json alone: ``prefill(..., causal=False)`` (eager attention computes the full
    S x S rectangle; the mask is an add) and ``decode(..., past=p)``.
(b) Live: tiny models of other families and shapes than the fixture's are built with
    transformers and counted now, forward (prefill and one decode step) and one training
    step (forward + backward). Without torch/transformers this part is skipped, except
    when the environment variable CI is set: CI installs the ``oracle`` extra, so a
    missing torch there is a failure.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
from pathlib import Path

import pytest

from symroof.models import from_hf_dict
from symroof.workloads.transformer import decode, prefill, training

HERE = Path(__file__).resolve().parent
FIXTURE = HERE / "fixtures" / "torch_flops.json"
DATA = json.loads(FIXTURE.read_text())
ENTRIES = DATA["entries"]


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


formulas = _load("_symroof_torch_oracle_formulas", HERE / "oracle" / "formulas.py")


def _symroof_flops(config: dict, phase: str, batch: int, n: int) -> int:
    model = from_hf_dict(config)
    if phase == "prefill":
        return int(prefill(model, batch, n, causal=False).flops)
    return int(decode(model, batch, past=n).flops)


# ---------------------------------------------------------------------------
# (a) the recorded fixture


def test_fixture_is_complete():
    assert len(ENTRIES) == 40
    assert {e["phase"] for e in ENTRIES} == {"prefill", "decode"}
    assert {e["config"]["model_type"] for e in ENTRIES} == {"llama", "gpt2"}


@pytest.mark.parametrize("entry", ENTRIES, ids=[e["id"] for e in ENTRIES])
def test_recorded_torch_flops_exactly(entry):
    n = entry["seq"] if entry["phase"] == "prefill" else entry["past"]
    assert _symroof_flops(entry["config"], entry["phase"], entry["batch"], n) == entry["total_flops"]


@pytest.mark.parametrize("entry", ENTRIES, ids=[e["id"] for e in ENTRIES])
def test_recorded_lm_head_and_attention_split(entry):
    """The LM head and the attention products (the counter's aten.bmm) separately."""
    model = from_hf_dict(entry["config"])
    if entry["phase"] == "prefill":
        a = prefill(model, entry["batch"], entry["seq"], causal=False)
    else:
        a = decode(model, entry["batch"], past=entry["past"])
    assert a.per_op["lm_head"].flops == entry["flops_by_module"]["lm_head"]
    attention = a.per_op["scores"].flops + a.per_op["pv"].flops
    assert attention == entry["flops_by_op"]["aten.bmm"] - entry["flops_by_module"]["rotary_emb"]


# ---------------------------------------------------------------------------
# (b) live


def _require(module: str):
    try:
        return importlib.import_module(module)
    except ImportError as err:
        if os.environ.get("CI"):
            pytest.fail(f"CI is set but {module} is not importable ({err}); CI installs the "
                        "'oracle' extra (pip install -e '.[test,oracle]')")
        pytest.skip(f"{module} not installed (pip install -e '.[oracle]')")


def live():
    """torch, transformers and the recorder's helpers (count, random_ids, ...).

    Called inside each test (not a fixture) so that a missing torch under CI is a test
    failure, not a setup error.
    """
    torch = _require("torch")
    transformers = _require("transformers")
    global _REC
    if _REC is None:
        _REC = _load("_symroof_record_torch_flops", HERE / "oracle" / "record_torch_flops.py")
    return torch, transformers, _REC


_REC = None


# Shapes the fixture does not hold: (batch, seq) for prefill, (batch, past) for decode.
PREFILL_SHAPES = [(2, 7), (1, 11)]
DECODE_SHAPES = [(3, 6)]


def _configs(transformers):
    return {
        # QKV biases (no o_proj bias), MQA, 5 heads of 8, tied embeddings
        "qwen2": transformers.Qwen2Config(
            hidden_size=40, num_attention_heads=5, num_key_value_heads=1, intermediate_size=72,
            num_hidden_layers=2, vocab_size=90, max_position_embeddings=64,
            tie_word_embeddings=True),
        # mixture of experts: 4 experts, 2 per token, a router
        "mixtral": transformers.MixtralConfig(
            hidden_size=32, num_attention_heads=4, num_key_value_heads=2, intermediate_size=48,
            num_hidden_layers=2, vocab_size=80, max_position_embeddings=64,
            num_local_experts=4, num_experts_per_tok=2),
        # GPT-2 with an explicit n_inner and 3 layers
        "gpt2": transformers.GPT2Config(
            n_embd=48, n_head=6, n_layer=3, n_inner=100, vocab_size=64, n_positions=32,
            bos_token_id=0, eos_token_id=0),
    }


def _build(torch, transformers, config):
    """Eager attention and eager (looped, counted) MoE experts, float32, seeded."""
    torch.manual_seed(0)
    kwargs = {"attn_implementation": "eager"}
    try:  # grouped_mm experts (the default in transformers 5) are invisible to the counter
        model = transformers.AutoModelForCausalLM.from_config(
            config, experts_implementation="eager", **kwargs)
    except TypeError:  # older transformers: experts are always a loop
        model = transformers.AutoModelForCausalLM.from_config(config, **kwargs)
    assert getattr(model.config, "_attn_implementation", None) == "eager"
    return model.to("cpu").float().eval()


def _rotary(cfg: dict, q_len: int, version: str) -> int:
    """The rotary-table matmul older transformers count (0 since 5.15; see the README)."""
    if cfg["model_type"] == "gpt2":
        return 0
    return formulas.rotary_flops(cfg, q_len, version)


def _not_in_fixture(cfg: dict, phase: str, batch: int, n: int) -> bool:
    key = "seq" if phase == "prefill" else "past"
    return not any(e["config"] == cfg and e["phase"] == phase and e["batch"] == batch
                   and e[key] == n for e in ENTRIES)


@pytest.mark.parametrize("family", ["qwen2", "mixtral", "gpt2"])
def test_live_forward_flops_and_params(family):
    torch, transformers, rec = live()
    config = _configs(transformers)[family]
    model = _build(torch, transformers, config)
    cfg = rec.config_record(model.config)
    sym = from_hf_dict(cfg)
    # the parameter count, an independent check of the weight list
    assert sym.params == sum(p.numel() for p in model.parameters())
    version = transformers.__version__
    with torch.no_grad():
        for batch, seq in PREFILL_SHAPES:
            assert _not_in_fixture(cfg, "prefill", batch, seq)
            torch.manual_seed(1)
            ids = rec.random_ids(config.vocab_size, batch, seq)
            total, _, _, out = rec.count(model, input_ids=ids, use_cache=False)
            assert tuple(out.logits.shape) == (batch, seq, config.vocab_size)
            want = _symroof_flops(cfg, "prefill", batch, seq) + _rotary(cfg, seq, version)
            assert total == want, f"{family} prefill b{batch} s{seq}"
        kw = rec._cache_kwarg(model)
        for batch, past in DECODE_SHAPES:
            assert _not_in_fixture(cfg, "decode", batch, past)
            torch.manual_seed(2)
            pre = model(input_ids=rec.random_ids(config.vocab_size, batch, past), use_cache=True)
            cache = rec._get_cache(pre)
            new = rec.random_ids(config.vocab_size, batch, 1)
            total, _, _, out = rec.count(model, input_ids=new, use_cache=True, **{kw: cache})
            assert rec._get_cache(out).get_seq_length() == past + 1
            want = _symroof_flops(cfg, "decode", batch, past) + _rotary(cfg, 1, version)
            assert total == want, f"{family} decode b{batch} p{past}"


@pytest.mark.parametrize("family", ["qwen2", "mixtral", "gpt2"])
def test_live_training_step_flops(family):
    """Forward + backward of eager attention (S x S saved, nothing recomputed, no mask
    skipping) is symroof's training(causal=False, fused=False) without the optimizer."""
    torch, transformers, rec = live()
    from torch.utils.flop_counter import FlopCounterMode

    config = _configs(transformers)[family]
    model = _build(torch, transformers, config)
    cfg = rec.config_record(model.config)
    batch, seq = 2, 7
    torch.manual_seed(3)
    ids = rec.random_ids(config.vocab_size, batch, seq)
    counter = FlopCounterMode(display=False)
    with counter:
        out = model(input_ids=ids, use_cache=False)
        out.logits.sum().backward()
    total = int(counter.get_total_flops())
    sym = from_hf_dict(cfg)
    want = training(sym, batch, seq, causal=False, fused=False, optimizer=None).flops
    want += _rotary(cfg, seq, transformers.__version__)  # no gradient flows into positions
    assert total == want

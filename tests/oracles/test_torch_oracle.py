"""symroof's FLOP counts against PyTorch's FlopCounterMode (an independent counter).

(a) Recorded: every entry of ``tests/fixtures/torch_flops.json`` (tiny Hugging Face models,
    eager attention; see ``tests/oracles/README.md``) must be reproduced exactly from its
    config.json alone, under the conventions that match the counter:
    ``prefill(..., causal=False, window_kernel="masked")`` (eager attention computes the
    full S x S rectangle on every layer, windowed or not: the mask is an add),
    ``decode(..., past=p, latent="naive")`` (a windowed layer attends min(p + 1, W) keys;
    transformers up-projects every cached latent of latent attention), and
    ``training(..., causal=False, fused=False, optimizer=None, window_kernel="masked")``.
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
FIXTURE = HERE.parent / "fixtures" / "torch_flops.json"
DATA = json.loads(FIXTURE.read_text())
ENTRIES = DATA["entries"]


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


formulas = _load("_symroof_torch_oracle_formulas", HERE / "formulas.py")


def _analysis(config: dict, phase: str, batch: int, n: int):
    """symroof's analysis of a fixture entry under the counter's conventions."""
    model = from_hf_dict(config)
    if phase == "prefill":
        return prefill(model, batch, n, causal=False, window_kernel="masked")
    if phase == "decode":
        return decode(model, batch, past=n, latent="naive")
    return training(model, batch, n, causal=False, fused=False, optimizer=None,
                    window_kernel="masked")


def _symroof_flops(config: dict, phase: str, batch: int, n: int) -> int:
    return int(_analysis(config, phase, batch, n).flops)


def _n(entry: dict) -> int:
    return entry["past"] if entry["phase"] == "decode" else entry["seq"]


# ---------------------------------------------------------------------------
# (a) the recorded fixture

NEWER = ("mistral", "mixtral", "phi3", "qwen2", "qwen3", "qwen2_moe", "qwen3_moe", "gemma2",
         "gemma3_text", "olmoe", "gpt_oss", "deepseek_v2", "deepseek_v3")


def test_fixture_is_complete():
    assert len(ENTRIES) == 166
    assert {e["phase"] for e in ENTRIES} == {"prefill", "decode", "train"}
    assert {e["config"]["model_type"] for e in ENTRIES} == {"llama", "gpt2", *NEWER}
    assert DATA["metadata"]["experts_implementation"] == "eager"


@pytest.mark.parametrize("entry", ENTRIES, ids=[e["id"] for e in ENTRIES])
def test_recorded_torch_flops_exactly(entry):
    got = _symroof_flops(entry["config"], entry["phase"], entry["batch"], _n(entry))
    assert got == entry["total_flops"]


SPLIT = [e for e in ENTRIES if e["phase"] != "train"]


@pytest.mark.parametrize("entry", SPLIT, ids=[e["id"] for e in SPLIT])
def test_recorded_lm_head_and_attention_split(entry):
    """The LM head and the attention products (the counter's aten.bmm) separately; on a
    windowed layer in decode, the products of min(past + 1, W) keys."""
    a = _analysis(entry["config"], entry["phase"], entry["batch"], _n(entry))
    assert a.per_op["lm_head"].flops == entry["flops_by_module"]["lm_head"]
    attention = sum(c.flops for name, c in a.per_op.items()
                    if name.rsplit(".", 1)[-1] in ("scores", "pv"))
    assert attention == entry["flops_by_op"].get("aten.bmm", 0) - \
        entry["flops_by_module"]["rotary_emb"]


def test_recorded_window_steps_level_off_past_the_window():
    """Mistral-like, every layer windowed (W = 4): a decode step at past 3, 4 and 12
    costs the same (4 keys); the counter and symroof agree, and the default convention
    (band kernel, exact span) gives the same decode count."""
    steps = {e["past"]: e["total_flops"] for e in ENTRIES
             if e["model"] == "mistral_sw" and e["phase"] == "decode" and e["batch"] == 1}
    assert steps[3] == steps[4] == steps[12] > steps[1] > steps[0]
    cfg = next(e["config"] for e in ENTRIES if e["model"] == "mistral_sw")
    model = from_hf_dict(cfg)
    assert [int(decode(model, 1, past=p).flops) for p in (3, 4, 12)] == [steps[3]] * 3


def test_recorded_prefill_counts_the_masked_rectangle_not_the_band():
    """The counter's quirk: eager attention on a windowed layer computes all S^2 scores
    and masks them, so its prefill count is symroof's window_kernel="masked" with
    causal="none". A windowed kernel (the default band) does S W - W(W-1)/2 pairs per
    head with causal="exact": 8 * 4 - 6 = 26 of the 64 at S = 8, W = 4."""
    e = next(e for e in ENTRIES if e["id"] == "mistral_sw/prefill/b1_s8")
    model = from_hf_dict(e["config"])
    masked = prefill(model, 1, 8, causal="none", window_kernel="masked").flops
    band = prefill(model, 1, 8, causal="exact").flops
    assert masked == e["total_flops"]
    hd, heads, layers = 8, 4, 4
    assert masked - band == layers * 4 * heads * hd * (64 - 26)


def test_recorded_latent_decode_is_the_naive_way():
    """transformers re-expands every cached latent (kv_b_proj over past + 1 positions):
    symroof's latent="naive"; the absorbed way (the default) costs less from the second
    position on, and the difference is the re-expansion minus the absorption."""
    for e in ENTRIES:
        if e["model"] != "deepseek_v3_like" or e["phase"] != "decode" or e["past"] < 1:
            continue
        model = from_hf_dict(e["config"])
        naive = decode(model, e["batch"], past=e["past"], latent="naive").flops
        absorbed = decode(model, e["batch"], past=e["past"]).flops
        assert naive == e["total_flops"] > absorbed, e["id"]


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
        _REC = _load("_symroof_record_torch_flops", HERE / "record_torch_flops.py")
    return torch, transformers, _REC


_REC = None


# Shapes the fixture does not hold: (batch, seq) for prefill, (batch, past) for decode
# (the newer families' window is 4: past 2 is inside it, past 6 beyond it).
PREFILL_SHAPES = [(2, 7), (1, 11)]
DECODE_SHAPES = [(3, 6), (2, 2)]

#: The recorder's tiny models of the newer families (record_torch_flops.arch_specs).
ARCH_MODELS = ["mistral_sw", "mixtral_sw", "phi3_sw", "qwen2_sw_mwl2", "qwen3_sw_mwl1",
               "qwen3_qknorm", "qwen2_moe_shared", "qwen3_moe", "gemma2", "gemma3_text",
               "olmoe", "gpt_oss", "deepseek_v2_lite_like", "deepseek_v3_like"]
#: Live: the families of today's fixture and one model per new mechanism (alternating
#: windows with sinks and biased experts; latent attention with shared experts and dense
#: layers; a gated shared expert); the fixture holds all of them. Each newer family costs
#: seconds of imports, so the live part stays a sample.
LIVE = ["qwen2", "mixtral", "gpt2", "gpt_oss", "deepseek_v3_like", "qwen2_moe_shared"]


def _configs(transformers, rec):
    global _CONFIGS
    if _CONFIGS is None:
        _CONFIGS = _build_configs(transformers, rec)
    return _CONFIGS


_CONFIGS = None


def _build_configs(transformers, rec):
    arch = {name: config for name, _, config in rec.arch_specs()}
    assert sorted(arch) == sorted(ARCH_MODELS)
    if formulas.rotary_is_matmul(transformers.__version__):
        arch = {}  # older transformers count rotary tables their own way in these families
    return {**arch,
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


def _config(transformers, rec, family: str):
    configs = _configs(transformers, rec)
    if family not in configs:
        pytest.skip(f"{family}: transformers {transformers.__version__} counts its rotary "
                    "table as a matmul (before 5.15); the fixture holds 5.24's counts")
    return configs[family]


@pytest.mark.slow
@pytest.mark.parametrize("family", LIVE)
def test_live_forward_flops_and_params(family):
    torch, transformers, rec = live()
    config = _config(transformers, rec, family)
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


@pytest.mark.slow
@pytest.mark.parametrize("family", LIVE)
def test_live_training_step_flops(family):
    """Forward + backward of eager attention (S x S saved, nothing recomputed, no mask
    skipping, windows masked) is symroof's training(causal=False, fused=False,
    window_kernel="masked") without the optimizer."""
    torch, transformers, rec = live()
    from torch.utils.flop_counter import FlopCounterMode

    config = _config(transformers, rec, family)
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
    want = training(sym, batch, seq, causal=False, fused=False, optimizer=None,
                    window_kernel="masked").flops
    want += _rotary(cfg, seq, transformers.__version__)  # no gradient flows into positions
    assert total == want


@pytest.mark.slow
def test_live_newer_family_decode_step():
    """One of issue 25's families live (the fixture holds the rest): Cohere 2, a parallel
    attention || MLP block off one bias-free LayerNorm with sliding windows of 4 on some
    layers, at a shape the fixture does not hold (batch 3, 5 cached positions, past the
    window): its parameter count and a decode step's FLOPs against PyTorch's counter.
    Cheap where the live tests above ran (torch and transformers imported): one tiny model,
    one step."""
    torch, transformers, rec = live()
    spec = next(kw for name, _, kw in rec.family_specs() if name == "cohere2")
    config = transformers.AutoConfig.for_model("cohere2", **{**rec.FAMILY_BASE, **spec})
    model = rec.build_model(config)
    cfg = rec.config_record(model.config)
    assert from_hf_dict(cfg).params == sum(p.numel() for p in model.parameters())
    batch, past = 3, 5
    assert all(e["config"] != cfg for e in ENTRIES)       # not among the fixture's entries
    with torch.no_grad():
        torch.manual_seed(2)
        pre = model(input_ids=rec.random_ids(config.vocab_size, batch, past), use_cache=True)
        new = rec.random_ids(config.vocab_size, batch, 1)
        total, _, _, _ = rec.count(model, input_ids=new, use_cache=True,
                                   **{rec._cache_kwarg(model): rec._get_cache(pre)})
    want = _symroof_flops(cfg, "decode", batch, past) + _rotary(cfg, 1, transformers.__version__)
    assert total == want

"""Every decoder family, read exactly (issue 25): parameters and FLOPs of a tiny model of
each family against PyTorch, bias flags on and off, and the refused families refused by
name with the field that blocks them.

The numbers are the fixture's ``families`` records (``tests/fixtures/torch_flops.json``,
written by ``python tests/oracles/record_torch_flops.py --families``): for each family's
tiny model with odd sizes (d 40, 5 heads of 8, one KV head, width 56, 3 layers, vocab
97; 5 experts, 2 per token; windows of 4), built by transformers 5.24 with eager
attention and eager experts, ``sum(p.numel() for p in model.parameters())``, the bias
values its ``nn.Linear`` modules and expert bias tensors add per token (a walk of the
module tree), and FlopCounterMode's totals of a prefill (batch 2, 5 tokens) and two
decode steps (batch 1 past 6, beyond the window; batch 2 past 2). Each family is
recorded with its bias flags as transformers defaults them and with every flag it reads
flipped (``<model>_bias``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from symroof.errors import SymroofError
from symroof.models import from_hf_dict
from symroof.models.hf import FAMILIES, REFUSED_FAMILIES
from symroof.workloads.transformer import decode, prefill

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "torch_flops.json"
RECORDS = json.loads(FIXTURE.read_text())["families"]
BY_MODEL = {r["model"]: r for r in RECORDS}
#: Recorded models whose config sets a field symroof refuses (the field named).
REFUSED_CONFIGS = {"ernie4_5_moe_bias": "use_bias"}   # use_bias biases its LM head too
EXACT = [r for r in RECORDS if r["model"] not in REFUSED_CONFIGS]
REFUSED = [r for r in RECORDS if r["model"] in REFUSED_CONFIGS]


def _flops(model, count: dict, ops: str = "contractions") -> int:
    """symroof under the counter's conventions (eager attention: the full rectangle, a
    windowed or chunked layer masked; transformers' latent decode re-expands)."""
    if count["phase"] == "prefill":
        return int(prefill(model, count["batch"], count["seq"], causal=False,
                           window_kernel="masked", ops=ops).flops)
    return int(decode(model, count["batch"], past=count["past"], latent="naive",
                      window_kernel="masked", ops=ops).flops)


def _as_run(model, record: dict):
    """The model as the recorded code runs it: Llama 4's eager experts take every token
    (``experts_computed``: the unrouted ones weighted 0), so its routed FLOPs are those
    of experts_per_token = experts."""
    computed = record.get("experts_computed")
    return model if computed is None else model.replace(experts_per_token=computed)


@pytest.mark.parametrize("record", EXACT, ids=[r["model"] for r in EXACT])
def test_family_params_and_flops_equal_pytorch(record):
    """Parameters and the counter's totals; a flags-flipped twin's prefill only (its
    decode steps run the same projections, and suite time is short)."""
    model = from_hf_dict(record["config"])
    assert model.params == record["params"]
    counts = record["counts"][:1] if record["model"].endswith("_bias") else record["counts"]
    for count in counts:
        assert _flops(_as_run(model, record), count) == count["total_flops"], count


PAIRS = [(r["model"], r["model"] + "_bias") for r in EXACT
         if r["model"] + "_bias" in BY_MODEL and r["model"] + "_bias" not in REFUSED_CONFIGS]


def test_at_least_thirty_families_exact():
    """Every recorded family reads (and is listed), thirty and more."""
    families = {r["family"] for r in EXACT}
    assert families <= set(FAMILIES) and len(families) >= 30
    assert len(set(FAMILIES)) - len(families) == 1      # GPT-2: the entries' families
    assert not set(FAMILIES) & set(REFUSED_FAMILIES)


@pytest.mark.parametrize("off,on", PAIRS, ids=[p[0] for p in PAIRS])
def test_bias_flags_on_and_off(off, on):
    """Flipping the flags a family reads changes the parameters by the bias vectors
    PyTorch's model gained and, with ops='all', the FLOPs by one add per bias value per
    token (the module walk's count); the GEMMs' FLOPs stay the counter's."""
    a, b = BY_MODEL[off], BY_MODEL[on]
    ma, mb = from_hf_dict(a["config"]), from_hf_dict(b["config"])
    assert mb.params - ma.params == b["params"] - a["params"]
    ca, cb = a["counts"][0], b["counts"][0]   # the prefill
    tokens = ca["batch"] * ca["seq"]
    extra = tokens * (b["bias_adds_per_token"] - a["bias_adds_per_token"])
    assert _flops(_as_run(mb, b), cb, "all") - _flops(_as_run(ma, a), ca, "all") == extra


def test_the_flags_each_family_ignores_change_nothing():
    """transformers reads no attention_bias in Mistral, Mixtral and Phi-3 and no
    mlp_bias in Qwen2, Gemma 2 or OLMoE: the flipped model has PyTorch's count, the
    same as the unflipped one."""
    for family in ("mistral", "mixtral", "phi3"):
        a, b = BY_MODEL[family], BY_MODEL[family + "_bias"]
        assert b["config"]["attention_bias"] is True and b["params"] == a["params"]
        assert from_hf_dict(b["config"]).params == from_hf_dict(a["config"]).params
    for family in ("qwen2", "gemma2", "olmoe"):
        b = BY_MODEL[family + "_bias"]
        assert b["config"].get("mlp_bias") is True
        m = from_hf_dict(b["config"])
        assert not m.mlp_bias and m.params == b["params"]


@pytest.mark.parametrize("record", REFUSED, ids=[r["model"] for r in REFUSED])
def test_refused_configs_name_their_field(record):
    with pytest.raises(SymroofError, match=REFUSED_CONFIGS[record["model"]]) as err:
        from_hf_dict(record["config"], where="cfg.json")
    assert str(err.value).startswith("cfg.json")


BASE = {"hidden_size": 40, "num_attention_heads": 5, "num_key_value_heads": 1,
        "intermediate_size": 56, "num_hidden_layers": 3, "vocab_size": 97}


@pytest.mark.parametrize("family", sorted(REFUSED_FAMILIES))
def test_refused_families_are_refused_by_name(family):
    """A family whose cost the IR cannot express: its name and the blocking field."""
    field, _ = REFUSED_FAMILIES[family]
    with pytest.raises(SymroofError, match=field) as err:
        from_hf_dict({**BASE, "model_type": family}, where="cfg.json")
    assert repr(family) in str(err.value) and str(err.value).startswith("cfg.json")



ENTRIES = json.loads(FIXTURE.read_text())["entries"]
HELD = [e for e in ENTRIES if "cache_positions_after_step" in e and e["batch"] == 1
        and not e["family"].startswith("deepseek") and e["past"] in (1, 12)]


@pytest.mark.parametrize("entry", HELD, ids=[e["id"] for e in HELD])
def test_rolling_buffer_conventions_against_transformers_cache(entry):
    """The positions transformers' dynamic cache holds after a step (recorded per layer)
    are window_cache="window_minus_1"'s bytes; the default keeps W (one more position on
    each windowed layer once the context passes W - 1)."""
    from symroof.symbols import b

    m = from_hf_dict(entry["config"])
    per_position = 2 * m.kv_heads * m.head_dim * b           # K and V of one layer
    held = sum(entry["cache_positions_after_step"]) * per_position
    context = entry["past"] + 1
    assert m.kv_cache_bytes(context, "window_minus_1") == held
    extra = 0 if m.window is None or context < m.window else m.windowed_layers
    assert m.kv_cache_bytes(context) - held == extra * per_position

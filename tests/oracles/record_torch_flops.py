"""Record PyTorch's FLOP counts for tiny, randomly initialised HF causal LMs.

Writes ``tests/fixtures/torch_flops.json``: for every (model, phase, shape)
entry the total of ``torch.utils.flop_counter.FlopCounterMode`` and its
per-op breakdown at the "Global" level.  The fixture is checked (without
torch) by ``tests/oracles/test_fixture_consistency.py`` against the closed-form
formulas in ``tests/oracles/formulas.py``.

Nothing is downloaded: models are built from a config with random weights.

Usage (needs torch and transformers; not needed by the test suite)::

    python tests/oracles/record_torch_flops.py            # writes the fixture
    python tests/oracles/record_torch_flops.py --check    # also verify formulas
    python tests/oracles/record_torch_flops.py -o out.json
    python tests/oracles/record_torch_flops.py --families   # only the families' records
"""

from __future__ import annotations

import argparse
import datetime
import inspect
import json
import os
import platform
import sys
from pathlib import Path

# torch / transformers are imported lazily so that this module can be imported
# (e.g. by ``pytest --doctest-modules``) on machines without them.

HERE = Path(__file__).resolve().parent
DEFAULT_OUT = HERE.parent / "fixtures" / "torch_flops.json"

SEED = 0

PREFILL_SHAPES = [(1, 8), (2, 16), (3, 5), (1, 1)]  # (batch, seq)
DECODE_SHAPES = [(1, 8), (2, 15), (4, 3), (1, 1)]  # (batch, past)

# The architectures of issue 12 (windows, latent attention, shared experts, ...): a window
# of W = 4, so that decode steps before, at and past the window are all recorded; past = 0
# is a step on an empty cache. One training step (forward + backward) per model.
WINDOW = 4
ARCH_PREFILL_SHAPES = [(1, 8), (2, 5)]
ARCH_DECODE_SHAPES = [(1, 0), (1, 1), (1, 3), (1, 4), (2, 7), (1, 12)]
ARCH_TRAIN_SHAPES = [(2, 6)]

# Config fields that carry no information about the computation (or are not
# JSON friendly); everything else from ``config.to_dict()`` is recorded.
_DROP_CONFIG_KEYS = {"id2label", "label2id", "architectures", "_name_or_path", "transformers_version"}


def model_specs() -> list[tuple[str, str, object]]:
    """(name, family, config) for every model recorded."""
    from transformers import GPT2Config, LlamaConfig

    return [
        (
            "llama_gqa",
            "llama",
            LlamaConfig(
                hidden_size=64,
                num_attention_heads=4,
                num_key_value_heads=2,
                head_dim=16,
                intermediate_size=160,
                num_hidden_layers=2,
                vocab_size=128,
                max_position_embeddings=128,
                tie_word_embeddings=False,
            ),
        ),
        (
            "llama_mha",
            "llama",
            LlamaConfig(
                hidden_size=64,
                num_attention_heads=4,
                num_key_value_heads=4,
                head_dim=16,
                intermediate_size=160,
                num_hidden_layers=2,
                vocab_size=128,
                max_position_embeddings=128,
                tie_word_embeddings=False,
            ),
        ),
        (
            # H * head_dim = 96 != hidden_size = 64
            "llama_wide_heads",
            "llama",
            LlamaConfig(
                hidden_size=64,
                num_attention_heads=4,
                num_key_value_heads=2,
                head_dim=24,
                intermediate_size=160,
                num_hidden_layers=2,
                vocab_size=128,
                max_position_embeddings=128,
                tie_word_embeddings=False,
            ),
        ),
        (
            # biases on every projection, tied embeddings, 3 layers, MQA
            "llama_bias_tied_mqa",
            "llama",
            LlamaConfig(
                hidden_size=48,
                num_attention_heads=3,
                num_key_value_heads=1,
                head_dim=16,
                intermediate_size=112,
                num_hidden_layers=3,
                vocab_size=100,
                max_position_embeddings=128,
                attention_bias=True,
                mlp_bias=True,
                tie_word_embeddings=True,
            ),
        ),
        (
            "gpt2",
            "gpt2",
            GPT2Config(
                n_embd=64,
                n_head=4,
                n_layer=2,
                n_inner=None,  # -> 4 * n_embd
                vocab_size=128,
                n_positions=128,
                bos_token_id=0,
                eos_token_id=0,
            ),
        ),
    ]


def arch_specs() -> list[tuple[str, str, object]]:
    """(name, family = model_type, config) of the tiny models of the newer families."""
    from transformers import AutoConfig

    w = WINDOW
    base = dict(vocab_size=96, hidden_size=32, num_attention_heads=4, num_key_value_heads=2,
                num_hidden_layers=4, intermediate_size=48, max_position_embeddings=256,
                tie_word_embeddings=False, pad_token_id=0, bos_token_id=1, eos_token_id=2)
    mla = dict(num_key_value_heads=4, kv_lora_rank=16, qk_nope_head_dim=8, qk_rope_head_dim=4,
               v_head_dim=6, moe_intermediate_size=12, num_experts_per_tok=2)
    specs = [
        # every layer windowed
        ("mistral_sw", "mistral", dict(base, sliding_window=w)),
        ("mixtral_sw", "mixtral", dict(base, sliding_window=w, num_local_experts=4,
                                       num_experts_per_tok=2)),
        ("phi3_sw", "phi3", dict(base, sliding_window=w)),
        # layers from max_window_layers on windowed
        ("qwen2_sw_mwl2", "qwen2", dict(base, use_sliding_window=True, sliding_window=w,
                                        max_window_layers=2)),
        ("qwen3_sw_mwl1", "qwen3", dict(base, head_dim=8, use_sliding_window=True,
                                        sliding_window=w, max_window_layers=1)),
        # per-head q/k norms, head_dim 12 (H * hd = 48 != d = 32)
        ("qwen3_qknorm", "qwen3", dict(base, head_dim=12)),
        # a gated shared expert, one dense layer (mlp_only_layers), 6 experts of 16, top 2
        ("qwen2_moe_shared", "qwen2_moe", dict(base, num_experts=6, num_experts_per_tok=2,
                                               moe_intermediate_size=16,
                                               shared_expert_intermediate_size=40,
                                               mlp_only_layers=[1], decoder_sparse_step=1)),
        # MoE on every second layer (decoder_sparse_step 2), 8 experts, top 3
        ("qwen3_moe", "qwen3_moe", dict(base, head_dim=8, num_experts=8, num_experts_per_tok=3,
                                        moe_intermediate_size=16, decoder_sparse_step=2)),
        # local/global alternation: Gemma 2 even layers local, Gemma 3 two local to one global
        ("gemma2", "gemma2", dict(base, head_dim=16, sliding_window=w, query_pre_attn_scalar=16,
                                  tie_word_embeddings=True)),
        ("gemma3_text", "gemma3_text", dict(base, num_hidden_layers=6, head_dim=16,
                                            sliding_window=w, sliding_window_pattern=3,
                                            query_pre_attn_scalar=16, tie_word_embeddings=True)),
        # q/k norms over all heads, 8 experts of 16, top 2
        ("olmoe", "olmoe", dict(base, num_experts=8, num_experts_per_tok=2, intermediate_size=16)),
        # sinks, biases everywhere, even layers windowed, 4 experts of 16 with biases
        ("gpt_oss", "gpt_oss", dict(base, head_dim=8, num_local_experts=4, num_experts_per_tok=2,
                                    intermediate_size=16, sliding_window=w)),
        # latent attention without (V2-Lite) and with (V3) the query's low-rank path;
        # shared experts and the first layers dense
        ("deepseek_v2_lite_like", "deepseek_v2", dict(base, **mla, q_lora_rank=None,
                                                      n_routed_experts=6, n_shared_experts=2,
                                                      first_k_dense_replace=1,
                                                      topk_method="greedy")),
        ("deepseek_v3_like", "deepseek_v3", dict(base, **mla, q_lora_rank=20, n_routed_experts=8,
                                                 n_shared_experts=1, first_k_dense_replace=2,
                                                 n_group=2, topk_group=1)),
    ]
    return [(name, mt, AutoConfig.for_model(mt, **kw)) for name, mt, kw in specs]


#: Issue 25: one tiny model per decoder family with odd sizes (d 40, 5 heads of 8, 1 KV
#: head, width 56, 3 layers, vocab 97; MoE: 5 experts, 2 per token, width 24; windows of
#: 4), each bias flag off (the family's defaults) and, where the family reads one, on.
FAMILY_BASE = dict(vocab_size=97, hidden_size=40, num_attention_heads=5, num_key_value_heads=1,
                   head_dim=8, num_hidden_layers=3, intermediate_size=56,
                   max_position_embeddings=256, tie_word_embeddings=False, pad_token_id=0,
                   bos_token_id=1, eos_token_id=2)
FAMILY_PREFILL = [(2, 5)]
FAMILY_DECODE = [(1, 6), (2, 2)]
_ON = {"attention_bias": True, "mlp_bias": True}
_MLA = dict(num_key_value_heads=5, head_dim=4, kv_lora_rank=12, qk_nope_head_dim=6, qk_rope_head_dim=4,
            v_head_dim=7, moe_intermediate_size=24, num_experts_per_tok=2)


def family_specs() -> list[tuple[str, str, dict]]:
    """(name, model_type, config fields over FAMILY_BASE) of the families' tiny models."""
    w = WINDOW
    moe = dict(num_experts_per_tok=2)
    specs: list[tuple[str, str, dict]] = [
        ("llama", "llama", {}), ("mistral", "mistral", dict(sliding_window=w)),
        ("mixtral", "mixtral", dict(moe, num_local_experts=5)),
        ("phi3", "phi3", {}), ("qwen2", "qwen2", {}),
        ("qwen2_moe", "qwen2_moe", dict(moe, num_experts=5, moe_intermediate_size=24,
                                        shared_expert_intermediate_size=32)),
        ("qwen3", "qwen3", {}),
        ("qwen3_moe", "qwen3_moe", dict(moe, num_experts=5, moe_intermediate_size=24)),
        ("gemma2", "gemma2", dict(sliding_window=w, query_pre_attn_scalar=8)),
        ("gemma3_text", "gemma3_text", dict(sliding_window=w, sliding_window_pattern=2,
                                            query_pre_attn_scalar=8)),
        ("olmoe", "olmoe", dict(moe, num_experts=5, intermediate_size=24)),
        ("gpt_oss", "gpt_oss", dict(moe, num_local_experts=5, intermediate_size=24,
                                    sliding_window=w)),
        ("deepseek_v2", "deepseek_v2", dict(_MLA, q_lora_rank=None, n_routed_experts=5,
                                            n_shared_experts=1, first_k_dense_replace=1,
                                            topk_method="greedy")),
        ("deepseek_v3", "deepseek_v3", dict(_MLA, q_lora_rank=20, n_routed_experts=5,
                                            n_shared_experts=1, first_k_dense_replace=1,
                                            n_group=1, topk_group=1)),
        ("granite", "granite", {}),
        ("granitemoe", "granitemoe", dict(moe, num_local_experts=5)),
        ("granitemoeshared", "granitemoeshared", dict(moe, num_local_experts=5,
                                                      shared_intermediate_size=32)),
        ("olmo", "olmo", {}), ("olmo2", "olmo2", {}),
        ("olmo3", "olmo3", dict(sliding_window=w)),
        ("flex_olmo", "flex_olmo", dict(moe, num_experts=5)),
        ("cohere", "cohere", {}), ("cohere_qk", "cohere", dict(use_qk_norm=True)),
        ("cohere2", "cohere2", dict(sliding_window=w)),
        ("exaone4", "exaone4", dict(sliding_window=w, sliding_window_pattern=2)),
        ("smollm3", "smollm3", {}), ("helium", "helium", {}),
        ("cwm", "cwm", dict(sliding_window=w)), ("seed_oss", "seed_oss", {}),
        ("glm", "glm", {}), ("glm4", "glm4", {}),
        ("glm4_moe", "glm4_moe", dict(moe, n_routed_experts=5, n_shared_experts=1,
                                      moe_intermediate_size=24, first_k_dense_replace=1)),
        ("ernie4_5", "ernie4_5", {}),
        ("ernie4_5_moe", "ernie4_5_moe", dict(moe_k=2, moe_num_experts=5,
                                              moe_num_shared_experts=1,
                                              moe_intermediate_size=24, moe_layer_start_index=1)),
        ("hunyuan_v1_dense", "hunyuan_v1_dense", {}),
        ("hunyuan_v1_moe", "hunyuan_v1_moe", dict(num_experts=5, moe_topk=2,
                                                  moe_intermediate_size=24)),
        ("minimax_m2", "minimax_m2", dict(moe, num_local_experts=5)),
        ("gemma", "gemma", {}),
        ("solar_open", "solar_open", dict(moe, n_routed_experts=5, n_shared_experts=1,
                                          moe_intermediate_size=24)),
        ("dots1", "dots1", dict(moe, n_routed_experts=5, n_shared_experts=1,
                                moe_intermediate_size=24, first_k_dense_replace=1)),
        ("arcee", "arcee", {}), ("starcoder2", "starcoder2", {}), ("nemotron", "nemotron", {}),
        ("internlm3", "internlm3", {}),
        ("phimoe", "phimoe", dict(moe, num_local_experts=5, sliding_window=w)),
        ("vaultgemma", "vaultgemma", dict(sliding_window=w, query_pre_attn_scalar=8)),
        ("hyperclovax", "hyperclovax", {}),
        ("mellum", "mellum", dict(moe, num_experts=5, moe_intermediate_size=24, sliding_window=w,
                                  layer_types=["sliding_attention", "full_attention",
                                               "sliding_attention"],
                                  mlp_layer_types=["dense", "sparse", "sparse"])),
        ("granite_swa", "granite_swa", dict(sliding_window=w)),
        # xIELU's two learned scalars per layer
        ("apertus", "apertus", {}),
        # chunks of 4 on layers 0 and 1 (rotary), layer 2 global without rotary; layer 1
        # a mixture (5 experts of 24, 2 per token, a shared expert of 24), 0 and 2 dense
        # MLPs of intermediate_size_mlp 56
        ("llama4_text", "llama4_text", dict(moe, num_local_experts=5, intermediate_size=24,
                                            intermediate_size_mlp=56, attention_chunk_size=w,
                                            no_rope_layer_interval=3,
                                            interleave_moe_layer_step=2)),
    ]
    flips = {"qwen2_moe": {"qkv_bias": False}, "ernie4_5": {"use_bias": True},
             "ernie4_5_moe": {"use_bias": True}, "starcoder2": {"use_bias": False},
             "seed_oss": {"attention_bias": False, "attention_out_bias": True,
                          "mlp_bias": True},
             "gpt_oss": {"attention_bias": False}}
    out = []
    for name, mt, kw in specs:
        out.append((name, mt, kw))
        if name not in ("cohere_qk",):
            out.append((f"{name}_bias", mt, {**kw, **flips.get(name, _ON)}))
    return out


def bias_adds_per_token(model, config) -> int:
    """Bias values added per token: every nn.Linear bias once, and an expert's bias
    parameter (experts first) at experts-per-token of its experts: the elementwise FLOPs
    of the bias adds per token (an independent count from the module tree)."""
    import torch

    total = 0
    for mod_name, mod in model.named_modules():
        if isinstance(mod, torch.nn.Linear) and mod.bias is not None:
            total += mod.bias.numel()
        for p_name, p in mod.named_parameters(recurse=False):
            if p_name.endswith("_bias") and p.dim() == 2 and "expert" in mod_name:
                k = getattr(config, "num_experts_per_tok", None) or getattr(config, "moe_k", 1)
                total += p.numel() // p.shape[0] * k
    return total


#: Families whose modelling code runs every token through every routed expert (the
#: unrouted ones weighted 0): the counter sees all experts' FLOPs (recorded as
#: ``experts_computed``).
DENSE_EXPERT_FAMILIES = ("llama4_text",)


def record_families(shapes: bool = True, only: tuple[str, ...] = ()) -> list[dict]:
    """params, bias adds per token and the counter's totals of each family's tiny model
    (``only``: the records of these models alone)."""
    import torch
    from transformers import AutoConfig

    out = []
    for name, mt, kw in family_specs():
        if only and name not in only:
            continue
        config = AutoConfig.for_model(mt, **{**FAMILY_BASE, **kw})
        model = build_model(config)
        rec = {"model": name, "family": mt, "config": config_record(model.config),
               "params": sum(p.numel() for p in model.parameters()),
               "bias_adds_per_token": bias_adds_per_token(model, model.config), "counts": []}
        if mt in DENSE_EXPERT_FAMILIES:
            rec["experts_computed"] = model.config.num_local_experts
        if shapes:
            kwarg = _cache_kwarg(model)
            with torch.no_grad():
                for batch, seq in FAMILY_PREFILL:
                    torch.manual_seed(SEED)
                    total, _, _, _ = count(model, input_ids=random_ids(config.vocab_size,
                                                                       batch, seq),
                                           use_cache=False)
                    rec["counts"].append({"phase": "prefill", "batch": batch, "seq": seq,
                                          "total_flops": total})
                for batch, past in FAMILY_DECODE:
                    torch.manual_seed(SEED)
                    pre = model(input_ids=random_ids(config.vocab_size, batch, past),
                                use_cache=True)
                    total, _, _, _ = count(model, input_ids=random_ids(config.vocab_size,
                                                                       batch, 1),
                                           use_cache=True, **{kwarg: _get_cache(pre)})
                    rec["counts"].append({"phase": "decode", "batch": batch, "past": past,
                                          "total_flops": total})
        out.append(rec)
    return out


def config_record(config) -> dict:
    d = config.to_dict()
    out = {k: v for k, v in d.items() if k not in _DROP_CONFIG_KEYS}
    json.dumps(out, sort_keys=True)  # must be serialisable
    return out


def build_model(config):
    import torch
    from transformers import AutoModelForCausalLM

    torch.manual_seed(SEED)
    try:  # grouped_mm experts (transformers 5's default where it dispatches) count 0 FLOPs
        model = AutoModelForCausalLM.from_config(config, attn_implementation="eager",
                                                 experts_implementation="eager")
    except (TypeError, ValueError):  # a model without experts, or an older transformers
        model = AutoModelForCausalLM.from_config(config, attn_implementation="eager")
    model = model.to("cpu").float().eval()
    assert all(p.dtype == torch.float32 for p in model.parameters())
    impl = getattr(model.config, "_attn_implementation", None)
    assert impl == "eager", f"expected eager attention, got {impl!r}"
    return model


def _cache_kwarg(model) -> str:
    params = inspect.signature(model.forward).parameters
    return "cache" if "cache" in params else "past_key_values"


def _get_cache(output):
    for attr in ("cache", "past_key_values"):
        c = getattr(output, attr, None)
        if c is not None:
            return c
    raise RuntimeError("model output carries no KV cache")


def count(model, **kwargs):
    from torch.utils.flop_counter import FlopCounterMode

    counter = FlopCounterMode(display=False)
    with counter:
        out = model(**kwargs)
    total = int(counter.get_total_flops())
    counts = counter.get_flop_counts()
    per_op = {str(op): int(n) for op, n in counts.get("Global", {}).items()}
    assert sum(per_op.values()) == total
    # FLOPs under two modules the symbolic side must treat specially.
    per_module = {"lm_head": 0, "rotary_emb": 0}
    for mod, ops in counts.items():
        for key in per_module:
            if mod.endswith("." + key):
                per_module[key] += int(sum(ops.values()))
    return total, per_op, per_module, out


def random_ids(vocab: int, batch: int, seq: int):
    import torch

    return torch.randint(0, vocab, (batch, seq), dtype=torch.long)


def cache_positions(cache) -> list[int]:
    """Positions each layer of a cache holds (a windowed layer: at most its window)."""
    return [int(layer.keys.shape[-2]) for layer in getattr(cache, "layers", [])
            if getattr(layer, "keys", None) is not None]


def count_train(model, ids):
    """FLOPs of one forward and backward pass (loss: the sum of the logits)."""
    from torch.utils.flop_counter import FlopCounterMode

    counter = FlopCounterMode(display=False)
    with counter:
        out = model(input_ids=ids, use_cache=False)
        out.logits.sum().backward()
    model.zero_grad(set_to_none=True)
    per_op = {str(op): int(n) for op, n in counter.get_flop_counts().get("Global", {}).items()}
    return int(counter.get_total_flops()), per_op


def record_model(name: str, family: str, config, prefill_shapes=PREFILL_SHAPES,
                 decode_shapes=DECODE_SHAPES, train_shapes=()) -> list[dict]:
    import torch

    model = build_model(config)
    vocab = config.vocab_size
    cfg = config_record(model.config)
    entries = []
    for batch, seq in train_shapes:
        torch.manual_seed(SEED)
        total, per_op = count_train(model, random_ids(vocab, batch, seq))
        entries.append({"id": f"{name}/train/b{batch}_s{seq}", "model": name, "family": family,
                        "config": cfg, "phase": "train", "batch": batch, "seq": seq,
                        "total_flops": total, "flops_by_op": per_op})
    with torch.no_grad():
        for batch, seq in prefill_shapes:
            torch.manual_seed(SEED)
            ids = random_ids(vocab, batch, seq)
            total, per_op, per_module, out = count(model, input_ids=ids, use_cache=False)
            assert tuple(out.logits.shape) == (batch, seq, vocab), out.logits.shape
            entries.append(
                {
                    "id": f"{name}/prefill/b{batch}_s{seq}",
                    "model": name,
                    "family": family,
                    "config": cfg,
                    "phase": "prefill",
                    "batch": batch,
                    "seq": seq,
                    "total_flops": total,
                    "flops_by_op": per_op,
                    "flops_by_module": per_module,
                }
            )
        kw = _cache_kwarg(model)
        for batch, past in decode_shapes:
            torch.manual_seed(SEED)
            cached = {}
            if past:  # past = 0: a step on an empty cache
                pre = model(input_ids=random_ids(vocab, batch, past), use_cache=True)
                cached = {kw: _get_cache(pre)}
                assert cached[kw].get_seq_length() == past
            new = random_ids(vocab, batch, 1)
            total, per_op, per_module, out = count(model, input_ids=new, use_cache=True, **cached)
            assert tuple(out.logits.shape) == (batch, 1, vocab), out.logits.shape
            assert _get_cache(out).get_seq_length() == past + 1
            held = {} if decode_shapes is DECODE_SHAPES else {
                "cache_positions_after_step": cache_positions(_get_cache(out))}
            entries.append(
                {**held,
                    "id": f"{name}/decode/b{batch}_p{past}",
                    "model": name,
                    "family": family,
                    "config": cfg,
                    "phase": "decode",
                    "batch": batch,
                    "past": past,
                    "kv_len": past + 1,
                    "total_flops": total,
                    "flops_by_op": per_op,
                    "flops_by_module": per_module,
                }
            )
    return entries


def record() -> dict:
    import torch
    import transformers

    entries = []
    for name, family, config in model_specs():
        entries.extend(record_model(name, family, config))
    for name, family, config in arch_specs():
        entries.extend(record_model(name, family, config, ARCH_PREFILL_SHAPES,
                                    ARCH_DECODE_SHAPES, ARCH_TRAIN_SHAPES))
    entries.sort(key=lambda e: e["id"])
    return {
        "metadata": {
            "generator": "tests/oracles/record_torch_flops.py",
            "counter": "torch.utils.flop_counter.FlopCounterMode(display=False).get_total_flops()",
            "torch_version": torch.__version__,
            "transformers_version": transformers.__version__,
            "python_version": platform.python_version(),
            "date": datetime.date.today().isoformat(),
            "dtype": "float32",
            "device": "cpu",
            "attn_implementation": "eager",
            "experts_implementation": "eager",
            "seed": SEED,
            "notes": (
                "prefill: plain forward over input_ids (batch, seq), logits for every position, "
                "use_cache=False. decode: prefill of `past` tokens with use_cache=True outside the "
                "counter, then one counted step of 1 new token per sequence with the KV cache "
                "(kv_len = past + 1; past = 0: no cache). train: forward and backward of "
                "logits.sum() in one counter. flops_by_op is get_flop_counts()['Global']. The "
                "newer families' models use a sliding window of 4 where they have one; "
                "cache_positions_after_step lists the positions each layer's cache holds."
            ),
        },
        "entries": entries,
    }


def write(data: dict, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(data, sort_keys=True, indent=1) + "\n"
    path.write_text(text)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--check", action="store_true", help="verify totals against formulas.py")
    ap.add_argument("--families", action="store_true",
                    help="re-record only the fixture's 'families' records (issue 25); the "
                         "entries and their numbers stay as they are")
    ap.add_argument("--only", nargs="+", default=(), metavar="MODEL",
                    help="with --families: record these models alone, replacing their records "
                         "or appending them (the others stay as they are)")
    args = ap.parse_args(argv)
    if args.families:
        import transformers

        data = json.loads(args.out.read_text())
        if args.only:
            new = record_families(only=tuple(args.only))
            names = {r["model"] for r in new}
            data["families"] = [r for r in data["families"] if r["model"] not in names] + new
        else:
            data["families"] = record_families()
        data["metadata"]["families_transformers_version"] = transformers.__version__
        write(data, args.out)
        print(f"wrote {len(data['families'])} family records to {args.out}")
        return 0
    data = record()
    write(data, args.out)
    print(f"wrote {len(data['entries'])} entries to {args.out}")
    if args.check:
        sys.path.insert(0, str(HERE))
        import formulas

        bad = 0
        for e in data["entries"]:
            want = formulas.expected_total(e, data["metadata"]["transformers_version"])
            if want != e["total_flops"]:
                bad += 1
                print(f"MISMATCH {e['id']}: torch={e['total_flops']} formula={want}")
        print("formulas reproduce all totals" if not bad else f"{bad} mismatches")
        return 1 if bad else 0
    return 0


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    raise SystemExit(main())

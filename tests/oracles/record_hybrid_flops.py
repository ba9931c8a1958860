"""Record PyTorch's counts for tiny, randomly initialised hybrid and state-space LMs.

Writes ``tests/fixtures/hybrid_flops.json``: for every (model, phase, shape) the total
of ``torch.utils.flop_counter.FlopCounterMode`` and its per-op breakdown, the model's
parameter count, and after a decode step the bytes of its cache object (conv states,
SSM states, keys and values). Models run transformers' pure-PyTorch paths (no
``mamba_ssm`` / ``causal_conv1d`` kernels are installed: transformers says it falls back
to its reference implementation), float32, ``model.eval()``, ``torch.no_grad()``,
``attn_implementation="eager"``.

Nothing is downloaded: every model is built from a config with random weights.

Usage (needs torch and transformers; not needed by the test suite)::

    python tests/oracles/record_hybrid_flops.py            # writes the fixture
    python tests/oracles/record_hybrid_flops.py -o out.json
    python tests/oracles/record_hybrid_flops.py --only falcon_mamba   # one model, merged
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import sys
from pathlib import Path

# torch / transformers are imported lazily so that this module can be imported
# (e.g. by ``pytest --doctest-modules``) on machines without them.

HERE = Path(__file__).resolve().parent
DEFAULT_OUT = HERE.parent / "fixtures" / "hybrid_flops.json"
SEED = 0
CHUNK = 4
PREFILL_SHAPES = [(1, 8), (2, 10)]   # (batch, seq): 10 pads to 3 chunks of 4
DECODE_SHAPES = [(1, 7), (2, 4)]     # (batch, past): one counted step after `past` tokens
_DROP = {"id2label", "label2id", "architectures", "_name_or_path", "transformers_version"}

_SSM = dict(mamba_n_heads=8, mamba_d_head=16, mamba_n_groups=2, mamba_d_state=16,
            mamba_chunk_size=CHUNK)
_ATTN = dict(hidden_size=64, intermediate_size=96, num_attention_heads=4, num_key_value_heads=2,
             vocab_size=100)


def specs() -> list[tuple[str, str, dict]]:
    """(name, config class, keyword arguments) of every model recorded."""
    return [
        ("mamba2", "Mamba2Config", dict(hidden_size=64, num_heads=8, head_dim=16, n_groups=2,
                                        state_size=16, num_hidden_layers=2, vocab_size=100,
                                        chunk_size=CHUNK)),
        ("bamba", "BambaConfig", dict(_ATTN, **_SSM, num_hidden_layers=3, attn_layer_indices=[1])),
        ("granitemoehybrid", "GraniteMoeHybridConfig",
         dict(_ATTN, **_SSM, intermediate_size=32, shared_intermediate_size=48,
              num_hidden_layers=3, layer_types=["mamba", "attention", "mamba"],
              num_local_experts=4, num_experts_per_tok=2)),
        ("falcon_h1", "FalconH1Config", dict(_ATTN, **_SSM, num_hidden_layers=2, mamba_d_ssm=128)),
        ("nemotron_h", "NemotronHConfig",
         dict(_ATTN, head_dim=16, mamba_num_heads=8, mamba_head_dim=16, n_groups=2,
              ssm_state_size=16, chunk_size=CHUNK,
              layers_block_type=["linear_attention", "full_attention", "mlp", "moe"],
              n_routed_experts=4, num_experts_per_tok=2, moe_intermediate_size=32,
              moe_shared_expert_intermediate_size=48)),
        ("lfm2", "Lfm2Config", dict(_ATTN, num_hidden_layers=3, block_multiple_of=16,
                                    layer_types=["conv", "full_attention", "conv"])),
        ("lfm2_moe", "Lfm2MoeConfig", dict(_ATTN, num_hidden_layers=3, num_dense_layers=1,
                                           num_experts=4, num_experts_per_tok=2,
                                           moe_intermediate_size=32,
                                           layer_types=["conv", "full_attention", "conv"])),
        ("minimax", "MiniMaxConfig", dict(_ATTN, num_hidden_layers=3, block_size=CHUNK,
                                          num_local_experts=4, num_experts_per_tok=2,
                                          layer_types=["full_attention", "linear_attention",
                                                       "linear_attention"])),
        ("jamba", "JambaConfig", dict(_ATTN, num_hidden_layers=4, attn_layer_period=2,
                                      attn_layer_offset=1, expert_layer_period=2,
                                      expert_layer_offset=0, num_experts=4,
                                      num_experts_per_tok=2, mamba_d_state=8, mamba_dt_rank=8)),
        ("mamba", "MambaConfig", dict(hidden_size=64, state_size=8, num_hidden_layers=2,
                                      vocab_size=100, time_step_rank="auto")),
        ("falcon_mamba", "FalconMambaConfig", dict(hidden_size=64, state_size=8,
                                                   num_hidden_layers=2, vocab_size=100,
                                                   time_step_rank=6)),
        ("qwen3_next", "Qwen3NextConfig",
         dict(_ATTN, num_hidden_layers=4, head_dim=16, linear_num_key_heads=2,
              linear_key_head_dim=8, linear_num_value_heads=4, linear_value_head_dim=8,
              num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32,
              shared_expert_intermediate_size=48, mlp_only_layers=[0],
              layer_types=["linear_attention", "linear_attention", "full_attention",
                           "linear_attention"])),
        ("olmo_hybrid", "OlmoHybridConfig",
         dict(_ATTN, num_hidden_layers=3, linear_num_key_heads=2, linear_key_head_dim=8,
              linear_num_value_heads=4, linear_value_head_dim=8,
              pad_token_id=0, eos_token_id=1,
              layer_types=["linear_attention", "full_attention", "linear_attention"])),
        ("kimi_linear", "KimiLinearConfig",
         dict(_ATTN, num_key_value_heads=4, num_hidden_layers=4, kv_lora_rank=16,
              qk_rope_head_dim=8, qk_nope_head_dim=8, v_head_dim=8, q_lora_rank=None,
              linear_num_heads=4, linear_head_dim=8, linear_conv_kernel_dim=4,
              num_local_experts=4, num_experts_per_tok=2, moe_intermediate_size=16,
              n_shared_experts=1, n_group=1, topk_group=1, first_k_dense_replace=1,
              pad_token_id=0, bos_token_id=1, eos_token_id=2,
              layer_types=["linear_attention", "linear_attention", "full_attention",
                           "linear_attention"])),
        # shared blocks: 2 alternating over 3 hybrid layers, LoRA adapters on Q, K, V
        # and gate/up, rotary in the shared attention
        ("zamba2", "Zamba2Config",
         dict(hidden_size=64, intermediate_size=96, num_attention_heads=4, vocab_size=100,
              n_mamba_heads=8, mamba_d_state=16, mamba_ngroups=2, chunk_size=CHUNK,
              num_hidden_layers=5, num_mem_blocks=2, use_shared_attention_adapter=True,
              adapter_rank=8, use_mem_rope=True,
              layers_block_type=["mamba", "hybrid", "mamba", "hybrid", "hybrid"])),
        # Zamba (v1): multi-head Mamba-1 layers, one shared block (no adapters)
        ("zamba", "ZambaConfig",
         dict(hidden_size=64, intermediate_size=96, num_attention_heads=4, num_key_value_heads=4,
              vocab_size=100, n_mamba_heads=2, mamba_d_state=8, mamba_dt_rank=8,
              num_hidden_layers=4, layers_block_type=["mamba", "hybrid", "mamba", "hybrid"])),
    ]


def build(cls_name: str, kwargs: dict):
    import torch
    import transformers

    config = getattr(transformers, cls_name)(**kwargs)
    torch.manual_seed(SEED)
    model = transformers.AutoModelForCausalLM.from_config(
        config, attn_implementation="eager", experts_implementation="eager").float().eval()
    assert model.config._attn_implementation == "eager"
    return config, model


def count(model, **kwargs) -> tuple[int, dict[str, int], object]:
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    counter = FlopCounterMode(display=False)
    with torch.no_grad(), counter:
        out = model(**kwargs)
    by_op = {str(k): int(v) for k, v in counter.get_flop_counts()["Global"].items()}
    return int(counter.get_total_flops()), by_op, out


def cache_bytes(cache) -> dict[str, int]:
    """Bytes of the cache object's tensors by kind: conv states, SSM states, K and V."""
    import torch

    out = {"conv_state": 0, "ssm_state": 0, "kv": 0}
    for layer in cache.layers:
        for key, kind in (("conv_states", "conv_state"), ("recurrent_states", "ssm_state")):
            for t in getattr(layer, key, {}).values():
                if torch.is_tensor(t):
                    out[kind] += t.numel() * t.element_size()
        for key in ("keys", "values"):  # (MiniMax's linear caches: below)
            t = getattr(layer, key, None)
            if torch.is_tensor(t):
                out["kv"] += t.numel() * t.element_size()
    for t in getattr(cache, "linear_cache", []):  # MiniMax: a d x d state per head
        if torch.is_tensor(t):
            out["ssm_state"] += t.numel() * t.element_size()
    return out


def _cache(output):
    found = output.get("cache")
    return output.get("past_key_values") if found is None else found


#: Per-model prefill shapes: the gated DeltaNet torch paths chunk by 64 (a shorter prompt is
#: padded to a whole chunk, which symroof refuses), so its prompts are 64 and 70 tokens.
SHAPES = {"qwen3_next": [(1, 64), (2, 70)], "olmo_hybrid": [(1, 64), (2, 70)],
          # MiniMax's torch path computes a last partial block at its size (symroof pads it
          # whole, as the SSD): whole blocks of 4
          "minimax": [(1, 8), (2, 12)],
          # Kimi Delta Attention's torch path chunks by 64 as the gated DeltaNet's does
          "kimi_linear": [(1, 64), (2, 70)]}


def record_model(name: str, cls_name: str, kwargs: dict) -> list[dict]:
    import torch

    config, model = build(cls_name, kwargs)
    cfg = {k: v for k, v in config.to_dict().items() if k not in _DROP}
    params = sum(p.numel() for p in model.parameters())
    vocab = config.vocab_size
    entries = []
    for batch, seq in SHAPES.get(name, PREFILL_SHAPES):
        torch.manual_seed(SEED)
        ids = torch.randint(0, vocab, (batch, seq))
        total, by_op, _ = count(model, input_ids=ids, use_cache=False)
        entries.append(dict(id=f"{name}/prefill/{batch}x{seq}", model=name, phase="prefill",
                            batch=batch, seq=seq, params=params, total_flops=total,
                            flops_by_op=by_op, config=cfg))
    for batch, past in DECODE_SHAPES:
        torch.manual_seed(SEED)
        ids = torch.randint(0, vocab, (batch, past + 1))
        with torch.no_grad():
            first = model(input_ids=ids[:, :past], use_cache=True)
        # `cache=`: transformers 5.24's name; Mamba2 given the deprecated past_key_values
        # ignores it and runs the step as a fresh one-token prompt
        total, by_op, out = count(model, input_ids=ids[:, past:], use_cache=True,
                                  cache=_cache(first))
        entries.append(dict(id=f"{name}/decode/{batch}x{past}", model=name, phase="decode",
                            batch=batch, past=past, params=params, total_flops=total,
                            flops_by_op=by_op, cache_bytes=cache_bytes(_cache(out)),
                            config=cfg))
    return entries


def record(only: list[str] | None = None, keep: list[dict] | None = None) -> dict:
    """Every model of :func:`specs` (``only``: those named, the ``keep`` entries of the
    others left as they were)."""
    import torch
    import transformers

    entries = [e for name, cls, kw in specs() if not only or name in only
               for e in record_model(name, cls, kw)]
    if only:
        entries = [e for e in keep or [] if e["model"] not in only] + entries
    return {
        "meta": {
            "torch": torch.__version__, "transformers": transformers.__version__,
            "python": platform.python_version(), "seed": SEED, "dtype": "float32",
            "recorded": datetime.date.today().isoformat(),
            "counter": "torch.utils.flop_counter.FlopCounterMode(display=False)",
            "paths": "pure-PyTorch (torch_forward, causal_conv1d_fn/update reference)",
            "attn_implementation": "eager", "experts_implementation": "eager",
        },
        "entries": entries,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--only", action="append", metavar="MODEL",
                        help="record these models only, keeping the others' entries of --out")
    args = parser.parse_args(argv)
    keep = json.loads(args.out.read_text())["entries"] if args.only and args.out.exists() \
        else None
    data = record(args.only, keep)
    args.out.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    print(f"wrote {len(data['entries'])} entries to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

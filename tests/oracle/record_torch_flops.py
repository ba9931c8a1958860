"""Record PyTorch's FLOP counts for tiny, randomly initialised HF causal LMs.

Writes ``tests/fixtures/torch_flops.json``: for every (model, phase, shape)
entry the total of ``torch.utils.flop_counter.FlopCounterMode`` and its
per-op breakdown at the "Global" level.  The fixture is checked (without
torch) by ``tests/oracle/test_fixture_consistency.py`` against the closed-form
formulas in ``tests/oracle/formulas.py``.

Nothing is downloaded: models are built from a config with random weights.

Usage (needs torch and transformers; not needed by the test suite)::

    python tests/oracle/record_torch_flops.py            # writes the fixture
    python tests/oracle/record_torch_flops.py --check    # also verify formulas
    python tests/oracle/record_torch_flops.py -o out.json
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


def config_record(config) -> dict:
    d = config.to_dict()
    out = {k: v for k, v in d.items() if k not in _DROP_CONFIG_KEYS}
    json.dumps(out, sort_keys=True)  # must be serialisable
    return out


def build_model(config):
    import torch
    from transformers import AutoModelForCausalLM

    torch.manual_seed(SEED)
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


def record_model(name: str, family: str, config) -> list[dict]:
    import torch

    model = build_model(config)
    vocab = config.vocab_size
    cfg = config_record(model.config)
    entries = []
    with torch.no_grad():
        for batch, seq in PREFILL_SHAPES:
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
        for batch, past in DECODE_SHAPES:
            torch.manual_seed(SEED)
            ids = random_ids(vocab, batch, past)
            pre = model(input_ids=ids, use_cache=True)
            cache = _get_cache(pre)
            assert cache.get_seq_length() == past
            new = random_ids(vocab, batch, 1)
            total, per_op, per_module, out = count(model, input_ids=new, use_cache=True, **{kw: cache})
            assert tuple(out.logits.shape) == (batch, 1, vocab), out.logits.shape
            assert _get_cache(out).get_seq_length() == past + 1
            entries.append(
                {
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
    entries.sort(key=lambda e: e["id"])
    return {
        "metadata": {
            "generator": "tests/oracle/record_torch_flops.py",
            "counter": "torch.utils.flop_counter.FlopCounterMode(display=False).get_total_flops()",
            "torch_version": torch.__version__,
            "transformers_version": transformers.__version__,
            "python_version": platform.python_version(),
            "date": datetime.date.today().isoformat(),
            "dtype": "float32",
            "device": "cpu",
            "attn_implementation": "eager",
            "seed": SEED,
            "notes": (
                "prefill: plain forward over input_ids (batch, seq), logits for every position, "
                "use_cache=False. decode: prefill of `past` tokens with use_cache=True outside the "
                "counter, then one counted step of 1 new token per sequence with the KV cache "
                "(kv_len = past + 1). flops_by_op is get_flop_counts()['Global']."
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
    args = ap.parse_args(argv)
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

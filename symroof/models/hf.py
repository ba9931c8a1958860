"""Read a Hugging Face ``config.json`` into a :class:`TransformerModel`.

Families: Llama, Mistral, Qwen2, Mixtral (gated MLP, RMSNorm, rotary positions) and
GPT-2 (plain MLP, LayerNorm, learned positions, biases). An unknown architecture, a
missing field or a field of the wrong type is a SymroofError naming it.

>>> m = from_hf_dict({"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4,
...     "num_key_value_heads": 2, "intermediate_size": 160, "num_hidden_layers": 2,
...     "vocab_size": 128})
>>> m.kv_heads, m.head_dim
(2, 16)
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path

from symroof.errors import SymroofError, suggest
from symroof.models.config import TransformerModel, transformer

__all__ = ["from_hf_config", "from_hf_dict", "FAMILIES"]

_LLAMA_LIKE = ("llama", "mistral", "qwen2", "mixtral")
FAMILIES = (*_LLAMA_LIKE, "gpt2")


def _int(cfg: Mapping[str, object], key: str, where: str, default: object = ...) -> int:
    if key not in cfg or cfg[key] is None:
        if default is ...:
            raise SymroofError(f"{where}: missing field {key!r} (a positive integer)")
        return default  # type: ignore[return-value]
    value = cfg[key]
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise SymroofError(f"{where}: field {key!r} must be a positive integer, got {value!r}")
    return value


def _bool(cfg: Mapping[str, object], key: str, where: str, default: bool) -> bool:
    value = cfg.get(key, default)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise SymroofError(f"{where}: field {key!r} must be true or false, got {value!r}")
    return value


_FIELDS = {"kv_heads": "num_key_value_heads", "heads": "num_attention_heads",
           "head_dim": "head_dim (or hidden_size / num_attention_heads)",
           "experts_per_token": "num_experts_per_tok", "experts": "num_local_experts",
           "d_model": "hidden_size"}


def from_hf_dict(cfg: Mapping[str, object], name: str | None = None,
                 where: str = "config.json") -> TransformerModel:
    """A model from an already-parsed config.json mapping."""
    try:
        return _from_hf_dict(cfg, name, where)
    except SymroofError as exc:
        message = str(exc)
        if message.startswith(where):
            raise
        for field, key in _FIELDS.items():  # name the config.json field, not ours
            message = re.sub(rf"\b{field}\b", key, message, count=1) if field in message else message
        raise SymroofError(f"{where}: {message}") from None


def _from_hf_dict(cfg: Mapping[str, object], name: str | None, where: str) -> TransformerModel:
    if not isinstance(cfg, Mapping):
        raise SymroofError(f"{where}: expected a JSON object, got {type(cfg).__name__}")
    kind = cfg.get("model_type")
    if not isinstance(kind, str):
        raise SymroofError(f"{where}: missing field 'model_type' (one of {', '.join(FAMILIES)})")
    label = name or str(cfg.get("_name_or_path") or kind)
    if kind == "gpt2":
        d = _int(cfg, "n_embd", where)
        return transformer(
            name=label, layers=_int(cfg, "n_layer", where), d_model=d,
            heads=_int(cfg, "n_head", where), d_ff=_int(cfg, "n_inner", where, 4 * d),
            vocab=_int(cfg, "vocab_size", where), mlp="plain", activation="gelu",
            norm="layernorm", biases=True, positions="learned",
            max_positions=_int(cfg, "n_positions", where),
            tied_embeddings=_bool(cfg, "tie_word_embeddings", where, True))
    if kind not in _LLAMA_LIKE:
        raise SymroofError(f"{where}: unknown model_type {kind!r}{suggest(kind, FAMILIES)}; "
                           f"supported: {', '.join(FAMILIES)}")
    d = _int(cfg, "hidden_size", where)
    heads = _int(cfg, "num_attention_heads", where)
    experts = _int(cfg, "num_local_experts", where, 1) if kind == "mixtral" else 1
    attn_bias = _bool(cfg, "attention_bias", where, False)
    mlp_bias = _bool(cfg, "mlp_bias", where, False)
    m = transformer(
        name=label, layers=_int(cfg, "num_hidden_layers", where), d_model=d, heads=heads,
        kv_heads=_int(cfg, "num_key_value_heads", where, heads),
        head_dim=_int(cfg, "head_dim", where, None) or None,
        d_ff=_int(cfg, "intermediate_size", where), vocab=_int(cfg, "vocab_size", where),
        mlp="gated", activation="silu", norm="rmsnorm", positions="rotary",
        tied_embeddings=_bool(cfg, "tie_word_embeddings", where, False),
        qkv_bias=attn_bias or kind == "qwen2", experts=experts,
        experts_per_token=_int(cfg, "num_experts_per_tok", where, 1) if experts > 1 else 1)
    return m.replace(o_bias=attn_bias, mlp_bias=mlp_bias)


def from_hf_config(path: str | Path) -> TransformerModel:
    """A model from a Hugging Face ``config.json`` file (nothing is downloaded)."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SymroofError(f"{p}: cannot read config.json ({exc.__class__.__name__}: {exc})") from None
    try:
        cfg = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SymroofError(f"{p}: not valid JSON ({exc})") from None
    except RecursionError:
        raise SymroofError(f"{p}: not valid JSON (nested too deeply)") from None
    except ValueError:  # an integer past Python's digit limit
        hit = re.search(r'"([^"]{1,80})"\s*:\s*-?[0-9]{1000,}', text)
        what = f"field {hit.group(1)!r}" if hit else "a value"
        raise SymroofError(f"{p}: {what} is out of range (an integer of thousands of "
                           "digits)") from None
    return from_hf_dict(cfg, name=p.parent.name if p.name == "config.json" else p.stem, where=str(p))

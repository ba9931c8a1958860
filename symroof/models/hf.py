"""Read a Hugging Face ``config.json`` into a :class:`TransformerModel`.

Families (``model_type``): Llama, Mistral, Mixtral, Phi-3, Qwen2, Qwen2-MoE, Qwen3,
Qwen3-MoE, Gemma 2, Gemma 3 (text), OLMoE, gpt-oss, DeepSeek-V2, DeepSeek-V3 and GPT-2.
Which layers attend through a sliding window follows transformers 5.24: ``layer_types``
when the file lists them, else the family's rule (Mistral, Mixtral, Phi-3: every layer
when ``sliding_window`` is set; Qwen2 and Qwen3: layers from ``max_window_layers`` on,
only with ``use_sliding_window``; Gemma 2 and gpt-oss: even layers; Gemma 3: all but
every ``sliding_window_pattern``-th). An unknown architecture, a missing field or a
field of the wrong type is a SymroofError naming it; a field that changes the cost but
is not modelled (a quantization config, cross-attention, a vision tower, chunked
attention) is refused by name; fields that do not change the cost are ignored.

>>> m = from_hf_dict({"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4,
...     "num_key_value_heads": 2, "intermediate_size": 160, "num_hidden_layers": 2,
...     "vocab_size": 128})
>>> m.kv_heads, m.head_dim
(2, 16)
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

from symroof.errors import SymroofError, suggest
from symroof.files import read_text
from symroof.models.config import TransformerModel, transformer
from symroof.models.hf_fields import Fields, latent_of, moe_of, refuse, window_of
from symroof.models.hf_hybrid import HYBRID_FAMILIES, REFUSED, from_hybrid_fields
from symroof.models.latent import LatentAttention

__all__ = ["from_hf_config", "from_hf_dict", "FAMILIES", "IGNORABLE"]

_LLAMA_LIKE = ("llama", "mistral", "mixtral", "phi3", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe",
               "gemma2", "gemma3_text", "olmoe", "gpt_oss", "deepseek_v2", "deepseek_v3")
FAMILIES = (*_LLAMA_LIKE, "gpt2")

#: Refused fields a caller may name in ``ignore=`` (the parameters and FLOPs stay those of
#: the unquantised model; say its bytes per weight with ``with_precision``).
IGNORABLE = ("quantization_config",)

# transformers 5.24's head_dim where a family's config.json leaves it out (else d / heads)
_HEAD_DIM = {"qwen3": 128, "qwen3_moe": 128, "gemma2": 256, "gemma3_text": 256, "gpt_oss": 64}
_QK_NORM = {"qwen3": "head", "qwen3_moe": "head", "gemma3_text": "head", "olmoe": "full"}


def from_hf_dict(cfg: Mapping[str, object], name: str | None = None,
                 where: str = "config.json", *, ignore: Sequence[str] = ()) -> TransformerModel:
    """A model from an already-parsed config.json mapping.

    ``ignore`` names refused fields to accept anyway (only those in :data:`IGNORABLE`).
    """
    if not isinstance(ignore, (tuple, list)) or any(f not in IGNORABLE for f in ignore):
        raise SymroofError(f"ignore: expected a tuple of field names from "
                           f"{', '.join(IGNORABLE)}, got {ignore!r}")
    try:
        return _from_hf_dict(cfg, name, where, frozenset(ignore))
    except SymroofError as exc:
        message = str(exc)
        if message.startswith(where):
            raise
        kind = cfg.get("model_type") if isinstance(cfg, Mapping) else None
        for field, key in Fields.renames(str(kind)).items():  # name the config.json field
            message = re.sub(rf"\b{field}\b", key, message, count=1) if field in message else message
        raise SymroofError(f"{where}: {message}") from None


def _from_hf_dict(cfg: Mapping[str, object], name: str | None, where: str,
                  ignore: frozenset[str]) -> TransformerModel:
    if not isinstance(cfg, Mapping):
        raise SymroofError(f"{where}: expected a JSON object, got {type(cfg).__name__}")
    kind = cfg.get("model_type")
    if not isinstance(kind, str):
        raise SymroofError(f"{where}: missing field 'model_type' (one of {', '.join(FAMILIES)})")
    f = Fields(cfg, where)
    refuse(f, kind, ignore)
    label = name or str(cfg.get("_name_or_path") or kind)
    if kind == "gpt2":
        d = f.dim("n_embd")
        return transformer(
            name=label, layers=f.layers("n_layer"), d_model=d, heads=f.dim("n_head"),
            d_ff=f.dim("n_inner", 4 * d), vocab=f.dim("vocab_size"), mlp="plain",
            activation="gelu", norm="layernorm", biases=True, positions="learned",
            max_positions=f.dim("n_positions"), tied_embeddings=f.flag("tie_word_embeddings", True))
    if kind in HYBRID_FAMILIES or kind in REFUSED:  # state-space and hybrid families
        return from_hybrid_fields(cfg, kind, label, where)
    if kind not in _LLAMA_LIKE:
        raise SymroofError(f"{where}: unknown model_type {kind!r}{suggest(kind, FAMILIES)}; "
                           f"supported: {', '.join(FAMILIES)}")
    d = f.dim("hidden_size")
    heads = f.dim("num_attention_heads")
    layers = f.layers("num_hidden_layers")
    d_ff = f.dim("intermediate_size")
    latent: LatentAttention | None = latent_of(f) if kind.startswith("deepseek") else None
    # Qwen2's q, k, v biases are fixed (no o_proj bias), whatever attention_bias says
    attn_bias = kind not in ("qwen2", "qwen2_moe") and f.flag("attention_bias", kind == "gpt_oss")
    if latent is not None and attn_bias:
        raise SymroofError(f"{where}: field 'attention_bias' true is not modelled for latent "
                           "attention (no DeepSeek release sets it)")
    window, windowed = window_of(f, kind, layers)
    moe, dense = moe_of(f, kind, layers, d_ff)
    n_windowed = sum(windowed)
    if moe and window is not None and moe["dense_layers"]:
        moe["window_dense_layers"] = sum(w and x for w, x in zip(windowed, dense))
    m = transformer(
        name=label, layers=layers, d_model=d, heads=heads,
        kv_heads=heads if latent is not None else f.dim("num_key_value_heads", heads),
        head_dim=None if latent is not None else f.dim("head_dim", _HEAD_DIM.get(kind)),
        d_ff=d_ff, vocab=f.dim("vocab_size"), mlp="gated",
        activation="gelu" if kind.startswith("gemma") else "silu", norm="rmsnorm",
        positions="rotary", tied_embeddings=f.flag("tie_word_embeddings", kind.startswith("gemma")),
        qkv_bias=attn_bias or kind == "qwen2" or (kind == "qwen2_moe" and f.flag("qkv_bias", True)),
        window=window, window_layers=None if window is None or n_windowed == layers else n_windowed,
        qk_norm=_QK_NORM.get(kind), post_norms=kind.startswith("gemma"), sinks=kind == "gpt_oss",
        latent=latent, **moe)  # type: ignore[arg-type]
    return m.replace(o_bias=attn_bias, mlp_bias=f.flag("mlp_bias", kind == "gpt_oss"))


def from_hf_config(path: str | Path, *, ignore: Sequence[str] = ()) -> TransformerModel:
    """A model from a Hugging Face ``config.json`` file (nothing is downloaded)."""
    p = Path(path)
    text = read_text(p, "config.json")
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
    return from_hf_dict(cfg, name=p.parent.name if p.name == "config.json" else p.stem,
                        where=str(p), ignore=ignore)

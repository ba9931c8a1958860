"""Read a Hugging Face ``config.json`` into a :class:`TransformerModel`.

Families (``model_type``, :data:`FAMILIES`): GPT-2 and forty-odd of the Llama shape, from
Llama, Mistral, Qwen, Gemma, DeepSeek and gpt-oss to OLMo 1-3, Cohere 1-2, Granite (MoE,
shared, SWA), GLM, ERNIE 4.5, Hunyuan, EXAONE 4, SmolLM3, Seed-OSS, MiniMax-M2, dots1,
Apertus (xIELU) and Llama 4's text model (chunked attention, see ``chunked`` in
:class:`~symroof.workloads.shape.ModelShape`), each with its traits (:data:`_TRAITS`), biases (``hf_fields.BIASES``), experts and
windows; families the IR cannot express are refused by name (:data:`REFUSED_FAMILIES`).
Which layers attend through a sliding window follows transformers 5.24: ``layer_types``
when the file lists them, else the family's rule (Mistral, Mixtral, Phi-3: every layer
when ``sliding_window`` is set; Qwen2 and Qwen3: layers from ``max_window_layers`` on,
only with ``use_sliding_window``; Gemma 2 and gpt-oss: even layers; Gemma 3: all but
every ``sliding_window_pattern``-th). Biases follow each family's modelling code
(:data:`symroof.models.hf_fields.BIASES`): a flag the family does not read is ignored, as
transformers ignores it (Mistral's ``attention_bias``, Qwen2's ``mlp_bias``). An unknown
architecture, a missing field or a field of the wrong type is a SymroofError naming it;
a field that changes the cost but is not modelled (a quantization config,
cross-attention, a vision tower, chunked attention outside Llama 4) is refused by name; fields that do
not change the cost are ignored.

>>> m = from_hf_dict({"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4,
...     "num_key_value_heads": 2, "intermediate_size": 160, "num_hidden_layers": 2,
...     "vocab_size": 128})
>>> m.kv_heads, m.head_dim
(2, 16)
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

from symroof.errors import SymroofError, shown, suggest
from symroof.files import parse_json, read_text
from symroof.models.config import TransformerModel, transformer
from symroof.models.hf_fields import (Fields, biases_of, chunks_of, latent_of, moe_of, refuse,
                                      rotary_layers_of, window_of)
from symroof.models.hf_hybrid import HYBRID_FAMILIES, REFUSED, from_hybrid_fields
from symroof.models.latent import LatentAttention

__all__ = ["from_hf_config", "from_hf_dict", "FAMILIES", "IGNORABLE", "REFUSED_FAMILIES"]

#: Decoder families read as the Llama shape with the traits below (transformers 5.24's
#: modelling code for each): its norm, activation and MLP, tied embeddings, the head_dim
#: when the file leaves it out, query/key norms, Gemma's extra norms (GLM-4 has them too),
#: a parallel attention-and-MLP block (Cohere). A norm's place (OLMo 2 and EXAONE 4 norm
#: after each sublayer instead of before) changes neither parameters nor FLOPs.
_TRAITS: dict[str, dict[str, object]] = {
    "llama": {}, "mistral": {}, "mixtral": {}, "phi3": {}, "qwen2": {}, "qwen2_moe": {},
    "qwen3": {"head_dim": 128, "qk_norm": "head"},
    "qwen3_moe": {"head_dim": 128, "qk_norm": "head"},
    "gemma": {"head_dim": 256, "activation": "gelu", "tied": True},
    "gemma2": {"head_dim": 256, "activation": "gelu", "tied": True, "post_norms": True},
    "gemma3_text": {"head_dim": 256, "activation": "gelu", "tied": True, "post_norms": True,
                    "qk_norm": "head"},
    "olmoe": {"qk_norm": "full"}, "gpt_oss": {"head_dim": 64, "sinks": True},
    "deepseek_v2": {}, "deepseek_v3": {},
    "granite": {}, "granitemoe": {}, "granitemoeshared": {},
    # OLMo: a LayerNorm without gain or bias; OLMo 2/3: norms after each sublayer
    "olmo": {"norm": "layernorm", "norm_weight": False, "norm_bias": False},
    "olmo2": {"qk_norm": "full"}, "olmo3": {"qk_norm": "full"},
    "flex_olmo": {"qk_norm": "full"},
    # Cohere: attention and MLP side by side off one LayerNorm without bias
    "cohere": {"norm": "layernorm", "norm_bias": False, "parallel": True, "tied": True},
    "cohere2": {"norm": "layernorm", "norm_bias": False, "parallel": True, "tied": True},
    "exaone4": {"qk_norm": "head"}, "smollm3": {}, "helium": {"head_dim": 128},
    "cwm": {"head_dim": 128}, "seed_oss": {"head_dim": 128}, "glm": {"head_dim": 128},
    "glm4": {"head_dim": 128, "post_norms": True}, "glm4_moe": {},
    "ernie4_5": {"head_dim": 128, "tied": True}, "ernie4_5_moe": {"tied": True},
    "hunyuan_v1_dense": {"qk_norm": "head"}, "hunyuan_v1_moe": {"qk_norm": "head"},
    "minimax_m2": {"head_dim": 128, "qk_norm": "full"}, "solar_open": {"head_dim": 128},
    "dots1": {"qk_norm": "head"},
    "arcee": {"mlp": "plain", "activation": "relu2"},
    "starcoder2": {"norm": "layernorm", "mlp": "plain", "activation": "gelu", "tied": True},
    "nemotron": {"norm": "layernorm", "mlp": "plain", "activation": "relu2"},
    "internlm3": {"head_dim": 128}, "hyperclovax": {},
    "phimoe": {"norm": "layernorm"},
    "vaultgemma": {"head_dim": 256, "activation": "gelu", "tied": True},
    "mellum": {"head_dim": 128, "qk_norm": "head"},
    "granite_swa": {"sinks": True, "tied": True},
    # Apertus: up, xIELU (two learned scalars per layer), down
    "apertus": {"mlp": "plain", "activation": "xielu", "qk_norm": "head"},
    # Llama 4: chunked attention on the rotary layers, global NoPE layers, a sigmoid-routed
    # mixture with a shared expert interleaved with dense MLPs of intermediate_size_mlp
    "llama4_text": {"head_dim": 128},
}
_LLAMA_LIKE = tuple(_TRAITS)
FAMILIES = (*_LLAMA_LIKE, "gpt2")

#: Decoder families of transformers 5.24 whose cost symroof cannot express: model_type ->
#: (the field or part that blocks it, why). Refused by name, with that field.
REFUSED_FAMILIES: dict[str, tuple[str, str]] = {
    "jetmoe": ("num_local_experts", "a mixture of attention heads (MoA) besides the MLP "
               "experts is not modelled"),
    "bitnet": ("attn_sub_norm", "norms inside attention and the MLP (attn_sub_norm, "
               "ffn_sub_norm, no config field) are not modelled"),
    "deepseek_v32": ("index_topk", "sparse attention through an indexer (top-k positions "
                     "per query) is not modelled"),
    "longcat_flash": ("zero_expert_num", "two attentions per layer and zero-computation "
                      "experts are not modelled"),
    "afmoe": ("self_attn.gate_proj", "a sigmoid gate on each head's attention output "
              "(no config field) is not modelled"),
    "phi": ("lm_head.bias", "PhiForCausalLM's LM head always has a bias (no config field), "
            "which is not modelled"),
    "gpt_neox": ("use_parallel_residual", "two norms feeding attention and the MLP side by "
                 "side are not modelled"),
    "falcon": ("new_decoder_architecture", "Falcon's decoder variants (ALiBi, multi-query "
               "with parallel norms) are not modelled"),
    "bloom": ("alibi", "ALiBi positions and a norm after the embedding (no config field) "
              "are not modelled"),
    "dbrx": ("ffn_config", "DBRX's nested attention and FFN configs are not read"),
    "gemma3n_text": ("altup_num_inputs", "AltUp, Laurel blocks and per-layer embeddings are "
                     "not modelled"),
}

#: Refused fields a caller may name in ``ignore=`` (the parameters and FLOPs stay those of
#: the unquantised model; say its bytes per weight with ``with_precision``).
IGNORABLE = ("quantization_config",)



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
    if kind in REFUSED_FAMILIES:
        field, why = REFUSED_FAMILIES[kind]
        raise SymroofError(f"{where}: model_type {kind!r} is refused: {field}: {why}")
    if kind in HYBRID_FAMILIES or kind in REFUSED:  # state-space and hybrid families
        return from_hybrid_fields(cfg, kind, label, where)
    if kind not in _LLAMA_LIKE:
        known = (*FAMILIES, *HYBRID_FAMILIES)
        raise SymroofError(f"{where}: unknown model_type {kind!r}{suggest(kind, known)}; "
                           f"supported: {', '.join(known)}")
    d = f.dim("hidden_size")
    heads = f.dim("num_attention_heads")
    layers = f.layers("num_hidden_layers")
    d_ff = f.dim("intermediate_size_mlp", 16384) if kind == "llama4_text" else f.dim(
        "intermediate_size")
    latent: LatentAttention | None = latent_of(f) if kind.startswith("deepseek") else None
    biases = biases_of(f, kind)  # each flag only where the family's modelling code reads it
    window, windowed = chunks_of(f, layers) if kind == "llama4_text" else window_of(
        f, kind, layers)
    moe, dense = moe_of(f, kind, layers, d_ff)
    n_windowed = sum(windowed)
    if moe and window is not None and moe["dense_layers"]:
        moe["window_dense_layers"] = sum(w and x for w, x in zip(windowed, dense))
    t = _TRAITS[kind]
    activation = str(t.get("activation", "silu"))
    if kind == "apertus":
        activation = _apertus_activation(f)
    qk_norm = t.get("qk_norm")
    if kind in ("cohere", "glm4_moe") and f.flag("use_qk_norm", False):
        qk_norm = "heads" if kind == "cohere" else "head"
    if kind == "llama4_text" and f.flag("use_qk_norm", True):
        qk_norm = "l2"
    m = transformer(
        name=label, layers=layers, d_model=d, heads=heads,
        kv_heads=heads if latent is not None else f.dim("num_key_value_heads", heads),
        head_dim=None if latent is not None else f.dim("head_dim", t.get("head_dim")),
        d_ff=d_ff, vocab=f.dim("vocab_size"), mlp=str(t.get("mlp", "gated")),
        activation=activation, norm=str(t.get("norm", "rmsnorm")),
        positions="rotary", tied_embeddings=f.flag("tie_word_embeddings", t.get("tied") is True),
        qkv_bias=biases["qkv_bias"],
        window=window, window_layers=None if window is None or n_windowed == layers else n_windowed,
        qk_norm=qk_norm,  # type: ignore[arg-type]
        post_norms=t.get("post_norms") is True or (kind == "hyperclovax" and f.flag(
            "use_post_norm", True)),
        sinks=t.get("sinks") is True, latent=latent, **moe)  # type: ignore[arg-type]
    expert_bias = biases["expert_bias"] if moe else None
    rotary = rotary_layers_of(f, kind, layers, windowed)
    return m.replace(o_bias=biases["o_bias"], mlp_bias=biases["mlp_bias"],
                     expert_bias=None if expert_bias == biases["mlp_bias"] else expert_bias,
                     norm_weight=t.get("norm_weight", True), norm_bias=t.get("norm_bias"),
                     parallel=t.get("parallel") is True,
                     rotary_layers=None if rotary == layers else rotary,
                     chunked=kind == "llama4_text" and window is not None,
                     query_temperature=kind == "llama4_text" and f.flag(
                         "attn_temperature_tuning", True) and rotary < layers)


def _apertus_activation(f: Fields) -> str:
    """Apertus's ``hidden_act``: xIELU (its default) or an activation symroof counts."""
    act = f.cfg.get("hidden_act", "xielu")
    known = {"xielu": "xielu", "silu": "silu", "swish": "silu", "relu": "relu",
             "relu2": "relu2", "gelu_pytorch_tanh": "gelu", "gelu": "gelu"}
    if act not in known:
        raise SymroofError(f"{f.where}: field 'hidden_act' {act!r}: expected one of "
                           f"{', '.join(known)} for apertus")
    return known[str(act)]


def from_hf_config(path: str | Path, *, ignore: Sequence[str] = ()) -> TransformerModel:
    """A model from a Hugging Face ``config.json`` file (nothing is downloaded)."""
    if not isinstance(path, (str, os.PathLike)):
        raise SymroofError(f"config.json: expected a file path (a str or os.PathLike), got "
                           f"{type(path).__name__} {shown(path)}")
    p = Path(path)
    cfg = parse_json(read_text(p, "config.json"), str(p))
    return from_hf_dict(cfg, name=p.parent.name if p.name == "config.json" else p.stem,
                        where=str(p), ignore=ignore)

"""The fields of a Hugging Face ``config.json``, family by family: typed reads, the layer
pattern (sliding windows, dense layers of a mixture of experts), and the refusals.

Rules and defaults follow transformers 5.24 (``configuration_<family>.py``); the reader
is :mod:`symroof.models.hf`.

>>> f = Fields({"model_type": "gemma2", "num_hidden_layers": 4, "sliding_window": 8}, "cfg")
>>> window_of(f, "gemma2", 4)      # even layers local
(8, [True, False, True, False])
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from symroof.errors import SymroofError
from symroof.models.latent import LatentAttention

__all__ = ["Fields", "window_of", "moe_of", "latent_of", "refuse", "biases_of", "BIASES",
           "MAX_LAYERS", "chunks_of"]

#: The most layers a config.json may declare: the layer pattern is read per layer, and
#: published models have a few hundred at most.
MAX_LAYERS = 100_000

_MISSING: Any = object()

#: Mixture-of-experts families: (key for E, default E, default k, key for the routed width).
#: transformers aliases the expert count (``attribute_map``), and ``to_dict`` writes the
#: alias: Qwen3-MoE's ``num_experts`` comes back as ``num_local_experts``, so each family
#: reads either spelling (_EXPERT_ALIASES).
_MOE = {"mixtral": ("num_local_experts", 8, 2, "intermediate_size"),
        "olmoe": ("num_experts", 64, 8, "intermediate_size"),
        "gpt_oss": ("num_local_experts", 32, 4, "intermediate_size"),
        "qwen2_moe": ("num_experts", 60, 4, "moe_intermediate_size"),
        "qwen3_moe": ("num_experts", 128, 8, "moe_intermediate_size"),
        "deepseek_v2": ("n_routed_experts", 64, 6, "moe_intermediate_size"),
        "deepseek_v3": ("n_routed_experts", 256, 8, "moe_intermediate_size"),
        "granitemoe": ("num_local_experts", 8, 2, "intermediate_size"),
        "granitemoeshared": ("num_local_experts", 8, 2, "intermediate_size"),
        "flex_olmo": ("num_experts", 7, 5, "intermediate_size"),
        "glm4_moe": ("n_routed_experts", 128, 8, "moe_intermediate_size"),
        "ernie4_5_moe": ("moe_num_experts", 64, 6, "moe_intermediate_size"),
        "hunyuan_v1_moe": ("num_experts", 1, 1, "intermediate_size"),
        "minimax_m2": ("num_local_experts", 256, 8, "intermediate_size"),
        "solar_open": ("n_routed_experts", 128, 8, "moe_intermediate_size"),
        "dots1": ("n_routed_experts", 128, 8, "moe_intermediate_size"),
        "phimoe": ("num_local_experts", 16, 2, "intermediate_size"),
        "mellum": ("num_experts", 64, 8, "moe_intermediate_size"),
        "llama4_text": ("num_local_experts", 16, 1, "intermediate_size")}
_EXPERT_ALIASES = ("num_experts", "num_local_experts", "n_routed_experts")
#: The experts-per-token field where it is not ``num_experts_per_tok``.
_PER_TOKEN = {"ernie4_5_moe": "moe_k", "hunyuan_v1_moe": "moe_topk"}
#: Shared experts: n x the routed width (DeepSeek's rule) from this field and its default.
_SHARED_TIMES = {"deepseek_v2": ("n_shared_experts", 0), "deepseek_v3": ("n_shared_experts", 0),
                 "glm4_moe": ("n_shared_experts", 1), "solar_open": ("n_shared_experts", 1),
                 "dots1": ("n_shared_experts", 0),
                 "ernie4_5_moe": ("moe_num_shared_experts", 2)}
#: The first k layers dense (DeepSeek's rule): the field and its default.
_FIRST_DENSE = {"deepseek_v2": 0, "deepseek_v3": 0, "glm4_moe": 1, "dots1": 0}

#: Fields that change the cost in ways symroof does not model: refused by name when set.
_UNMODELLED = {
    "vision_config": "a vision tower (a multimodal wrapper; read its text_config alone)",
    "audio_config": "an audio tower (a multimodal wrapper; read its text_config alone)",
    "text_config": "a multimodal wrapper (read its text_config alone)",
    "is_encoder_decoder": "an encoder-decoder model",
    "add_cross_attention": "cross-attention",
    "cross_attention_hidden_size": "cross-attention",
    "cross_attention_layers": "cross-attention",
    "use_bidirectional_attention": "bidirectional (not causal) attention",
    "attention_chunk_size": "chunked attention",
    "num_kv_shared_layers": "KV caches shared between layers",
}


class Fields:
    """Typed reads of one config.json mapping; errors name the field and the file."""

    def __init__(self, cfg: Mapping[str, object], where: str) -> None:
        self.cfg, self.where = cfg, where

    def given(self, key: str) -> bool:
        """The field is present and neither null, false, 0 nor empty."""
        value = self.cfg.get(key)
        return value is not None and value is not False and value != 0 and value != [] \
            and value != {}

    def dim(self, key: str, default: Any = _MISSING) -> Any:
        """A positive integer (``default`` when missing or null; required without one)."""
        value = self.cfg.get(key)
        if value is None:
            if default is _MISSING:
                raise SymroofError(f"{self.where}: missing field {key!r} (a positive integer)")
            return default
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise SymroofError(f"{self.where}: field {key!r} must be a positive integer, got "
                               f"{value!r}")
        return value

    def layers(self, key: str) -> int:
        """A number of layers: a positive integer up to :data:`MAX_LAYERS`.

        >>> Fields({"num_hidden_layers": 10**12}, "cfg").layers("num_hidden_layers")
        Traceback (most recent call last):
        ...
        symroof.errors.SymroofError: cfg: field 'num_hidden_layers' 1,000,000,000,000: more than the limit of 100,000 layers
        """
        value = self.dim(key)
        if value > MAX_LAYERS:
            raise SymroofError(f"{self.where}: field {key!r} {value:,}: more than the limit of "
                               f"{MAX_LAYERS:,} layers")
        return int(value)

    def count(self, key: str, default: int = 0) -> int:
        """A non-negative integer (a number of layers or of shared experts)."""
        value = self.cfg.get(key, default)
        value = default if value is None else value
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise SymroofError(f"{self.where}: field {key!r} must be a non-negative integer, "
                               f"got {value!r}")
        return value

    def flag(self, key: str, default: bool) -> bool:
        """true or false (``default`` when missing or null)."""
        value = self.cfg.get(key, default)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise SymroofError(f"{self.where}: field {key!r} must be true or false, got {value!r}")
        return value

    def indices(self, key: str, layers: int) -> set[int]:
        """A list of layer indices, each in 0 .. layers - 1."""
        value = self.cfg.get(key) or []
        if not isinstance(value, list) or not all(
                isinstance(i, int) and not isinstance(i, bool) and 0 <= i < layers for i in value):
            raise SymroofError(f"{self.where}: field {key!r} must be a list of layer indices "
                               f"0 .. {layers - 1}, got {value!r}")
        return set(value)

    def kinds(self, key: str, layers: int, allowed: tuple[str, ...]) -> list[str] | None:
        """A list of ``layers`` entries, each one of ``allowed`` (None when missing or null):
        a per-layer pattern such as ``layer_types``."""
        value = self.cfg.get(key)
        if value is None:
            return None
        if not isinstance(value, list) or len(value) != layers or any(
                t not in allowed for t in value):
            odd = [t for t in value if t not in allowed] if isinstance(value, list) else []
            raise SymroofError(f"{self.where}: field {key!r} must list {layers} entries of "
                               f"{' or '.join(allowed)}; got {odd or value!r}"[:400])
        return [str(t) for t in value]

    @staticmethod
    def renames(kind: str) -> dict[str, str]:
        """symroof's field names -> this family's config.json keys, for error messages."""
        experts = _MOE.get(kind, ("num_local_experts",))[0]
        return {"kv_heads": "num_key_value_heads", "heads": "num_attention_heads",
                "head_dim": "head_dim (or hidden_size / num_attention_heads)",
                "experts_per_token": "num_experts_per_tok", "experts": experts,
                "d_model": "hidden_size"}


def refuse(f: Fields, kind: str, ignore: frozenset[str]) -> None:
    """Refuse, by name, a set field that changes the cost and is not modelled."""
    q = f.cfg.get("quantization_config")
    if q is not None and "quantization_config" not in ignore:
        method = q.get("quant_method") if isinstance(q, Mapping) else None
        raise SymroofError(
            f"{f.where}: field 'quantization_config' (quant_method {method!r}) sets the bytes "
            "of the stored weights, which symroof does not read from a config; pass "
            "ignore=('quantization_config',) to count the unquantised model and give its "
            "bytes per weight with with_precision(weights=...)")
    for key, what in _UNMODELLED.items():
        if f.given(key) and not (kind == "llama4_text" and key == "attention_chunk_size"):
            raise SymroofError(f"{f.where}: field {key!r} is set: {what} is not modelled")
    if kind.startswith("deepseek") and f.cfg.get("moe_layer_freq", 1) not in (1, None):
        raise SymroofError(f"{f.where}: field 'moe_layer_freq' {f.cfg['moe_layer_freq']!r}: "
                           "only 1 (every layer from first_k_dense_replace on) is modelled")
    if kind == "phimoe" and f.flag("lm_head_bias", False):
        raise SymroofError(f"{f.where}: field 'lm_head_bias' true is not modelled (a bias on "
                           "the LM head)")
    if kind == "ernie4_5_moe" and f.flag("use_bias", False):
        raise SymroofError(f"{f.where}: field 'use_bias' true is not modelled for ernie4_5_moe "
                           "(it biases the LM head too)")
    if kind == "hunyuan_v1_moe" and isinstance(f.cfg.get("moe_topk"), list):
        raise SymroofError(f"{f.where}: field 'moe_topk' as a list (a k per layer) is not "
                           "modelled")
    if kind == "qwen2_moe" and f.flag("use_sliding_window", False):
        raise SymroofError(f"{f.where}: field 'use_sliding_window' true is not modelled for "
                           "qwen2_moe (no release uses it; transformers' layer rule for it "
                           "disagrees with its documentation)")


#: Families whose every layer is windowed when ``sliding_window`` is set (no layer_types).
_EVERY_LAYER = ("mistral", "mixtral", "phi3", "qwen3_moe", "starcoder2", "phimoe")
#: Families with sliding-window layers in transformers 5.24 (the others ignore the fields).
_WINDOWED_FAMILIES = ("mistral", "mixtral", "phi3", "qwen2", "qwen3", "qwen2_moe", "qwen3_moe",
                      "gemma2", "gemma3_text", "gpt_oss", "olmo3", "cohere2", "exaone4",
                      "smollm3", "cwm", "dots1", "starcoder2", "phimoe", "vaultgemma",
                      "mellum", "granite_swa")


def window_of(f: Fields, kind: str, layers: int) -> tuple[int | None, list[bool]]:
    """The window W and, per layer, whether it is windowed (transformers 5.24's rules)."""
    default = {"mistral": 4096, "gemma2": 4096, "gemma3_text": 4096, "gpt_oss": 128,
               "olmo3": 4096, "cohere2": 4096, "exaone4": 4096, "cwm": 8192,
               "dots1": 4096, "vaultgemma": 4096, "mellum": 1024,
               "granite_swa": 128}.get(kind)
    if kind not in _WINDOWED_FAMILIES:
        return None, [False] * layers
    if kind == "smollm3" and not f.flag("use_sliding_window", False):
        return None, [False] * layers
    if kind in ("qwen2", "qwen3", "qwen2_moe", "qwen3_moe") and not f.flag("use_sliding_window",
                                                                           False):
        return None, [False] * layers  # a sliding_window value alone is inert
    # a missing field takes the family's default; an explicit null means no window
    window = f.dim("sliding_window", None) if "sliding_window" in f.cfg else default
    types = f.kinds("layer_types", layers, ("full_attention", "sliding_attention"))
    if types is not None:
        flags = [t == "sliding_attention" for t in types]
        if kind in _EVERY_LAYER and window is not None and not all(flags):
            raise SymroofError(f"{f.where}: field 'layer_types' lists full_attention layers, "
                               f"but transformers ignores layer_types for {kind} and windows "
                               "every layer when sliding_window is set")
    elif kind == "mellum":                                        # every layer full
        flags = [False] * layers
    elif kind == "granite_swa":
        flags = [i % 4 != 0 for i in range(layers)]               # every 4th global, from 0
    elif kind in ("gemma2", "gpt_oss", "vaultgemma"):
        flags = [(i + 1) % 2 == 1 for i in range(layers)]         # even layers local
    elif kind == "gemma3_text":
        pattern = f.dim("sliding_window_pattern", 6)
        flags = [(i + 1) % pattern != 0 for i in range(layers)]   # every pattern-th global
    elif kind in ("qwen2", "qwen3", "dots1"):
        first = f.count("max_window_layers", 62 if kind == "dots1" else 28)
        flags = [i >= first for i in range(layers)]               # the first ones full
    elif kind in ("olmo3", "cohere2", "exaone4"):                 # every pattern-th global
        key = "sliding_window_pattern"
        pattern = 4 if kind == "olmo3" or f.cfg.get(key) is None else f.dim(key)
        flags = [(i + 1) % pattern != 0 for i in range(layers)]
    elif kind == "cwm":
        flags = [i % 4 != 0 for i in range(layers)]               # every 4th global, from 0
    elif kind == "smollm3":                                       # the layers without rotary
        rotary = _rotary_flags(f, layers)
        flags = [not r for r in rotary]
    else:                                                         # every layer
        flags = [True] * layers
    if types is not None and any(flags) and window is None:
        raise SymroofError(f"{f.where}: field 'sliding_window' is null but layers are windowed "
                           "(layer_types lists sliding_attention)")
    if window is None or not any(flags):
        return None, [False] * layers
    return window, flags


def moe_of(f: Fields, kind: str, layers: int, d_ff: int) -> tuple[dict[str, object], list[bool]]:
    """A mixture of experts' fields for ``transformer(...)`` and, per layer, whether it is
    a dense MLP layer (empty fields and all-dense for a dense model)."""
    if kind not in _MOE:
        return {}, [True] * layers
    key, n_default, k_default, width_key = _MOE[kind]
    given = {k: f.dim(k) for k in _EXPERT_ALIASES if f.cfg.get(k) is not None}
    if len(set(given.values())) > 1:
        raise SymroofError(f"{f.where}: fields {', '.join(map(repr, given))} disagree "
                           f"({', '.join(map(str, given.values()))} experts)")
    key = next(iter(given), key)
    experts = f.dim(key, n_default)
    if experts == 1:
        raise SymroofError(f"{f.where}: field {key!r} 1: a mixture of one expert is not "
                           "modelled")
    if kind in _PER_TOKEN:
        per_token = f.dim(_PER_TOKEN[kind], k_default)
    else:
        per_token = f.dim("num_experts_per_tok", f.dim("experts_per_token", k_default)
                          if kind == "gpt_oss" else k_default)
    width = f.dim(width_key)
    out: dict[str, object] = {"experts": experts, "experts_per_token": per_token}
    if width != d_ff:
        out["expert_d_ff"] = width
    if kind == "qwen2_moe" and f.count("shared_expert_intermediate_size", 5632):
        out["shared_d_ff"] = f.dim("shared_expert_intermediate_size", 5632)
        out["shared_gate"] = True
    if kind in _SHARED_TIMES and f.count(*_SHARED_TIMES[kind]):
        out["shared_d_ff"] = f.count(*_SHARED_TIMES[kind]) * width
    if kind == "granitemoeshared" and f.count("shared_intermediate_size", 0):
        out["shared_d_ff"] = f.dim("shared_intermediate_size")
    if kind == "llama4_text":           # one shared expert of the routed width
        out["shared_d_ff"] = width
    if kind == "hunyuan_v1_moe":        # a shared MLP of intermediate_size on every layer
        out["shared_d_ff"] = d_ff
    if kind in ("gpt_oss", "ernie4_5_moe"):  # ERNIE: a learned score correction per expert
        out["router_bias"] = True
    if kind in ("qwen2_moe", "qwen3_moe"):
        only, step = f.indices("mlp_only_layers", layers), f.dim("decoder_sparse_step", 1)
        dense = [i in only or (i + 1) % step != 0 for i in range(layers)]
    elif kind == "mellum":            # mlp_layer_types: "dense" or "sparse" per layer
        types = f.kinds("mlp_layer_types", layers, ("dense", "sparse")) or ["sparse"] * layers
        dense = [t == "dense" for t in types]
    elif kind == "llama4_text":       # moe_layers, else every interleave_moe_layer_step-th
        step = f.dim("interleave_moe_layer_step", 1)
        listed = f.cfg.get("moe_layers")
        moe_layers = (f.indices("moe_layers", layers) if listed is not None
                      else set(range(step - 1, layers, step)))
        dense = [i not in moe_layers for i in range(layers)]
    elif kind in _FIRST_DENSE:
        first = f.count("first_k_dense_replace", _FIRST_DENSE[kind])
        dense = [i < first for i in range(layers)]
    elif kind == "ernie4_5_moe":      # every interval-th layer from start to end is MoE
        start, step = f.count("moe_layer_start_index", 1), f.dim("moe_layer_interval", 1)
        end = f.cfg.get("moe_layer_end_index", -1)
        if isinstance(end, bool) or not isinstance(end, int):
            raise SymroofError(f"{f.where}: field 'moe_layer_end_index' must be an integer, "
                               f"got {end!r}")
        end = layers - 1 if end < 0 else end
        dense = [not ((i + 1) % step == 0 and start <= i <= end) for i in range(layers)]
    else:
        dense = [False] * layers
    out["dense_layers"] = sum(dense)
    return out, dense


def latent_of(f: Fields) -> LatentAttention:
    """Multi-head latent attention's widths (DeepSeek-V2/V3; ``q_lora_rank`` may be null)."""
    return LatentAttention(kv_rank=f.dim("kv_lora_rank"), rope_dim=f.dim("qk_rope_head_dim"),
                           nope_dim=f.dim("qk_nope_head_dim"), v_dim=f.dim("v_head_dim"),
                           q_rank=f.dim("q_lora_rank", None))


#: Which config.json fields give a family's biases, as transformers 5.24's modelling code
#: reads them: per family (q/k/v, attention output, dense MLP and shared experts, routed
#: experts), each a field name (read with the default after it), True/False (fixed, the
#: field is not read), or "=name" (the same as an earlier part). A flag the family's code
#: does not read is ignored, as transformers ignores it.
_Rule = bool | str | tuple[str, bool]
_Biases = tuple[_Rule, _Rule, _Rule, _Rule]
#: The three rules most families share: attention_bias on q, k, v and o and no MLP
#: biases; the same plus mlp_bias on the MLP (and shared experts); no biases at all.
_ATTENTION: _Biases = (("attention_bias", False), "=qkv", False, False)
_ATTENTION_MLP: _Biases = (("attention_bias", False), "=qkv", ("mlp_bias", False), "=mlp")
_NONE: _Biases = (False, False, False, False)
BIASES: dict[str, _Biases] = {
    # attention_bias on q, k, v and o; mlp_bias on the MLP
    "llama": _ATTENTION_MLP,
    # no biases at all, whatever the file says
    "mistral": _NONE, "mixtral": _NONE,
    "phi3": _NONE,
    # q, k, v always biased (Qwen2), or by qkv_bias (Qwen2-MoE); never o_proj or the MLP
    "qwen2": (True, False, False, False), "qwen2_moe": (("qkv_bias", True), False, False, False),
    # attention_bias on q, k, v and o; no MLP biases
    "qwen3": _ATTENTION,
    "qwen3_moe": _ATTENTION,
    "gemma2": _ATTENTION,
    "gemma3_text": _ATTENTION,
    "olmoe": _ATTENTION,
    # attention_bias (default true) on q, k, v and o; the experts always biased
    "gpt_oss": (("attention_bias", True), "=qkv", True, True),
    # latent attention: attention_bias on q_a_proj, kv_a_proj_with_mqa and o_proj; V2's
    # mlp_bias on the dense MLP and the shared experts, never the routed experts
    "deepseek_v2": (("attention_bias", False), "=qkv", ("mlp_bias", False), False),
    "deepseek_v3": _ATTENTION,
    "gemma": _ATTENTION,
    "granite": _ATTENTION_MLP,
    "granitemoe": _ATTENTION,
    "granitemoeshared": _ATTENTION,
    "olmo": _ATTENTION,
    "olmo2": _ATTENTION,
    "olmo3": _ATTENTION,
    "flex_olmo": _ATTENTION,
    "cohere": _ATTENTION,
    "cohere2": _ATTENTION,
    "exaone4": _NONE,
    "smollm3": _ATTENTION_MLP,
    "helium": (("attention_bias", False), False, ("mlp_bias", False), "=mlp"),
    "cwm": (False, False, ("mlp_bias", False), "=mlp"),
    # Seed-OSS: attention_bias on q, k, v, attention_out_bias on o
    "seed_oss": (("attention_bias", True), ("attention_out_bias", False), ("mlp_bias", False),
                 "=mlp"),
    "glm": (("attention_bias", True), False, False, False),
    "glm4": (("attention_bias", True), False, False, False),
    "glm4_moe": (("attention_bias", False), False, False, False),
    # ERNIE 4.5: use_bias on every projection and MLP (the experts have none)
    "ernie4_5": (("use_bias", False), "=qkv", "=qkv", "=qkv"),
    "ernie4_5_moe": (("use_bias", False), "=qkv", "=qkv", False),
    "hunyuan_v1_dense": _ATTENTION,
    "hunyuan_v1_moe": _ATTENTION,
    "minimax_m2": _NONE,
    "solar_open": (("attention_bias", False), False, False, False),
    "dots1": _ATTENTION,
    "arcee": _ATTENTION_MLP,
    "starcoder2": (("use_bias", True), "=qkv", "=qkv", "=qkv"),
    "nemotron": _ATTENTION_MLP,
    "internlm3": _ATTENTION_MLP,
    "hyperclovax": _ATTENTION_MLP,
    "phimoe": _ATTENTION,
    "vaultgemma": _ATTENTION,
    "mellum": _ATTENTION,
    "granite_swa": _ATTENTION_MLP,
    "apertus": _ATTENTION,
    "llama4_text": _ATTENTION,
}


def biases_of(f: Fields, kind: str) -> dict[str, bool]:
    """``qkv_bias``, ``o_bias``, ``mlp_bias`` and ``expert_bias`` of a family (:data:`BIASES`).

    >>> biases_of(Fields({"attention_bias": True, "mlp_bias": True}, "cfg"), "mistral")
    {'qkv_bias': False, 'o_bias': False, 'mlp_bias': False, 'expert_bias': False}
    >>> biases_of(Fields({"mlp_bias": True}, "cfg"), "deepseek_v2")["expert_bias"]
    False
    """
    out: dict[str, bool] = {}
    names = ("qkv_bias", "o_bias", "mlp_bias", "expert_bias")
    for name, rule in zip(names, BIASES[kind]):
        if isinstance(rule, bool):
            out[name] = rule
        elif isinstance(rule, str):               # "=qkv": as an earlier part
            out[name] = out[f"{rule[1:]}_bias"]
        else:
            out[name] = f.flag(rule[0], rule[1])
    return out


def _rotary_flags(f: Fields, layers: int) -> list[bool]:
    """SmolLM3's ``no_rope_layers`` (1: the layer rotates), by default every
    ``no_rope_layer_interval``-th layer (4) without."""
    value = f.cfg.get("no_rope_layers")
    if value is None:
        step = f.dim("no_rope_layer_interval", 4)
        return [(i + 1) % step != 0 for i in range(layers)]
    if not isinstance(value, list) or len(value) != layers or any(
            v not in (0, 1) or isinstance(v, float) for v in value):
        raise SymroofError(f"{f.where}: field 'no_rope_layers' must list {layers} entries of 0 "
                           f"or 1, got {value!r}"[:300])
    return [v == 1 for v in value]


def chunks_of(f: Fields, layers: int) -> tuple[int | None, list[bool]]:
    """Llama 4's chunk size and, per layer, whether it attends in chunks (transformers
    5.24: ``layer_types`` when listed, else the layers with rotary, ``no_rope_layers`` 1,
    when ``attention_chunk_size`` is set; the others are global and without rotary)."""
    chunk = f.dim("attention_chunk_size", None) if "attention_chunk_size" in f.cfg else 8192
    types = f.kinds("layer_types", layers, ("full_attention", "chunked_attention"))
    if types is not None:
        flags = [t == "chunked_attention" for t in types]
        if any(flags) and chunk is None:
            raise SymroofError(f"{f.where}: field 'attention_chunk_size' is null but "
                               "layer_types lists chunked_attention layers")
    else:
        flags = [r and chunk is not None for r in _rotary_flags(f, layers)]
    if chunk is None or not any(flags):
        return None, [False] * layers
    return chunk, flags


def rotary_layers_of(f: Fields, kind: str, layers: int, windowed: list[bool]) -> int:
    """How many layers rotate queries and keys: SmolLM3's and Llama 4's ``no_rope_layers``;
    Cohere 2 and EXAONE 4 rotate on their windowed layers only (every layer when none is
    windowed)."""
    if kind in ("smollm3", "llama4_text"):
        return sum(_rotary_flags(f, layers))
    if kind in ("cohere2", "exaone4") and any(windowed):
        return sum(windowed)
    return layers

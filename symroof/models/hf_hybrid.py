"""Read the config.json of a state-space or hybrid family into a :class:`HybridModel`.

Families (``model_type``, transformers 5.24) and where each reads its layer pattern:

- ``mamba2``: every layer a Mamba-2 mixer (no attention, no MLP);
- ``bamba``: attention on ``attn_layer_indices`` (or ``layers_block_type``), Mamba-2
  elsewhere, a gated MLP on every layer;
- ``granitemoehybrid``: ``layer_types`` / ``layers_block_type`` (``mamba`` or
  ``attention``, the new names ``linear_attention`` / ``full_attention`` too); every
  layer routed experts (``num_local_experts``; none when 0) plus a shared gated MLP of
  ``shared_intermediate_size``;
- ``falcon_h1``: every layer attention and Mamba-2 side by side on the same normed input
  (their outputs summed), then a gated MLP;
- ``nemotron_h``: ``layers_block_type`` / ``layer_types`` or the legacy
  ``hybrid_override_pattern`` (``M`` Mamba-2, ``*`` attention, ``-`` MLP, ``E`` experts),
  each layer one block: a norm, the mixer or MLP, a residual; the MLP and the experts
  are not gated (ReLU^2: under ``ops="all"`` a ReLU and a multiply, 2 FLOPs an element);
- ``lfm2``: ``layer_types`` (``conv`` or ``full_attention``; else ``full_attn_idxs``):
  a gated short-convolution block (:class:`ShortConv`, ``conv_L_cache`` taps) or attention
  with per-head query/key norms, then a gated MLP whose width transformers adjusts
  (``block_auto_adjust_ff_dim``: 2/3 of ``intermediate_size``, times
  ``block_ffn_dim_multiplier``, rounded up to ``block_multiple_of``);
- ``lfm2_moe``: LFM2's blocks (``layer_types`` required), the first ``num_dense_layers``
  with a gated MLP of ``intermediate_size`` (not adjusted), the others routed experts
  (``num_experts``, ``num_experts_per_tok`` of ``moe_intermediate_size``; a sigmoid
  router, its ``expert_bias`` a buffer, not a parameter), no shared expert;
- ``qwen3_next``: ``layer_types`` (``linear_attention``: a gated DeltaNet,
  :class:`GatedDeltaNet`; ``full_attention``: attention with per-head q/k norms and an
  output gate); experts with a gated shared expert on every ``decoder_sparse_step``-th
  layer outside ``mlp_only_layers``, a gated MLP elsewhere;
- ``olmo_hybrid``: ``layer_types`` (gated DeltaNet or attention with q/k norms over all
  heads, rotary only with ``rope_parameters``); its attention layers put their norms
  after attention and after the MLP (OLMo 2), counted as the same two norms before them
  (the same parameters and the same work);
- ``minimax``: ``layer_types`` (``linear_attention``: lightning attention,
  :class:`LightningAttention`, blocks of ``block_size``; ``full_attention``: attention;
  default alternating, full first), routed experts on every layer (``num_local_experts``,
  ``num_experts_per_tok`` of ``intermediate_size``); its residual scales (``*_alpha_factor``,
  ``*_beta_factor``) are elementwise work outside the contractions, counted as plain
  residual adds under ``ops="all"``; ``sliding_window`` refused;
- ``kimi_linear``: ``layer_types`` or ``linear_attn_config``'s 1-based
  ``full_attn_layers`` / ``kda_layers`` (default: full attention on layers 4, 8, ...):
  Kimi Delta Attention (:class:`GatedDeltaNet` with ``decay="channel"``: the decay per
  key channel and the output gate through low-rank paths of the head width, a sigmoid
  gate) or multi-head latent attention without rotary; ``mlp_layer_types`` or the first
  ``first_k_dense_replace`` layers a gated MLP, the others routed experts
  (``num_experts``, ``num_experts_per_token`` of ``moe_intermediate_size``, a sigmoid
  router) plus ``num_shared_experts`` shared ones; fields of Moonshot's and Kimi-K3's
  configs that transformers 5.24 does not read and that change the cost are refused;
- ``mamba``: every layer a Mamba-1 mixer (:class:`Mamba1`, no dt/B/C norms);
- ``falcon_mamba``: Mamba's layers with RMSNorms on dt, B and C that have no gains
  (transformers' ``FalconMambaWeightlessRMSNorm``: its ones are a non-persistent buffer);
- ``zamba2``: ``layers_block_type`` (``mamba`` / ``linear_attention``: a Mamba-2 layer;
  ``hybrid``: a shared transformer block, then a Mamba-2 layer; default transformers
  5.24's 54-layer pattern): ``num_mem_blocks`` shared blocks alternate over the hybrid
  layers (attention over [hidden, embeddings], 2 ``hidden_size`` wide, heads of
  2 ``hidden_size`` / ``num_attention_heads``; a gated MLP of ``intermediate_size``),
  each use with its own adapters of ``adapter_rank`` (Q, K, V with
  ``use_shared_attention_adapter``; gate/up always) and its own linear
  (:mod:`symroof.workloads.zamba`); ``add_bias_linear`` true is refused;
- ``zamba``: Zamba (v1): multi-head Mamba-1 layers (``n_mamba_heads``: x_proj and
  dt_proj per head, the same FLOPs and parameters as one head's), and one shared block
  (no adapters, no rotary) at the ``hybrid`` layers of ``layers_block_type`` (default:
  two Mamba layers, a hybrid one, then ``attn_layer_period`` / ``attn_layer_offset``);
  ``attention_hidden_size`` other than 2 ``hidden_size`` is refused;
- ``jamba``: attention where ``layer % attn_layer_period == attn_layer_offset``, Mamba-1
  (:class:`Mamba1`) elsewhere; experts where ``layer % expert_layer_period ==
  expert_layer_offset``, a gated MLP elsewhere; no position embedding.

The Mamba-2 widths come from each family's own fields (``mamba_n_heads``,
``mamba_d_head``, ``mamba_d_state``, ... or Mamba2's ``num_heads``, ``head_dim``,
``state_size``, ...); heads x head width must equal the mixer's inner width (``expand x
hidden_size``, Falcon-H1's ``mamba_d_ssm``, Nemotron-H's heads x head width by
definition), and the groups must divide the heads: else a SymroofError naming the
fields. Families that use a mixer symroof does not model are refused by name
(:data:`REFUSED`); so are fields that change the cost and are not modelled.

>>> m = from_hybrid_fields({"model_type": "mamba2", "hidden_size": 64, "num_heads": 8,
...     "head_dim": 16, "expand": 2, "state_size": 16, "n_groups": 2,
...     "num_hidden_layers": 2, "vocab_size": 100}, "mamba2", "tiny")
>>> m.ssm.inner, m.ssm_layers, m.attention_layers
(128, 2, 0)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from symroof.errors import SymroofError
from symroof.models.hf_fields import Fields, latent_of
from symroof.models.hybrid import (GatedDeltaNet, HybridModel, LightningAttention, Mamba1,
                                   Mamba2, SharedBlocks, ShortConv, hybrid, pattern_groups)
from symroof.precision import bytes_per_value

__all__ = ["HYBRID_FAMILIES", "REFUSED", "from_hybrid_fields"]

HYBRID_FAMILIES = ("mamba2", "bamba", "granitemoehybrid", "falcon_h1", "nemotron_h", "lfm2",
                   "jamba", "mamba", "qwen3_next", "olmo_hybrid", "falcon_mamba",
                   "lfm2_moe", "minimax",
                   "kimi_linear", "zamba2", "zamba")

#: Families with a state-space or linear-attention mixer symroof does not model, and why
#: (none now: Zamba, Zamba2 and Kimi-Linear, once here, are modelled; kept for a family
#: transformers adds before symroof reads it).
REFUSED: dict[str, str] = {}

#: Each family's config.json keys for the Mamba-2 widths: heads, head width, state,
#: groups, conv taps, chunk, conv bias, projection bias.
_SSM_KEYS = {
    "mamba2": ("num_heads", "head_dim", "state_size", "n_groups", "conv_kernel", "chunk_size",
               "use_conv_bias", "use_bias"),
    "nemotron_h": ("mamba_num_heads", "mamba_head_dim", "ssm_state_size", "n_groups",
                   "conv_kernel", "chunk_size", "use_conv_bias", "mamba_proj_bias"),
}
_MAMBA_PREFIXED = ("mamba_n_heads", "mamba_d_head", "mamba_d_state", "mamba_n_groups",
                   "mamba_d_conv", "mamba_chunk_size", "mamba_conv_bias", "mamba_proj_bias")
#: transformers 5.24's defaults for the keys above, per family.
_SSM_DEFAULTS = {
    "mamba2": (128, 64, 128, 8, 4, 256, True, False),
    "nemotron_h": (128, 64, 128, 8, 4, 128, True, False),
    "bamba": (128, 64, 256, 1, 4, 256, True, False),
    "granitemoehybrid": (128, 64, 256, 1, 4, 256, True, False),
    "falcon_h1": (128, 8, 256, 1, 4, 256, True, False),
}
_LEGACY = {"mamba": "linear_attention", "attention": "full_attention"}
_NEMOTRON = {"M": "linear_attention", "*": "full_attention", "-": "mlp", "E": "moe"}
_DTYPES = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16"}


def _ssm(f: Fields, kind: str, d: int) -> Mamba2:
    keys = _SSM_KEYS.get(kind, _MAMBA_PREFIXED)
    dflt = _SSM_DEFAULTS[kind]
    heads, hd, state, groups, conv, chunk = (f.dim(k, v) for k, v in zip(keys[:6], dflt[:6]))
    conv_bias, proj_bias = f.flag(keys[6], dflt[6]), f.flag(keys[7], dflt[7])
    inner_key = "mamba_d_ssm" if kind == "falcon_h1" and f.cfg.get("mamba_d_ssm") is not None \
        else None
    if kind == "nemotron_h":
        inner = heads * hd
    elif inner_key is not None:
        inner = f.dim(inner_key)
    else:
        expand = f.cfg.get("mamba_expand" if kind in ("bamba", "granitemoehybrid", "falcon_h1")
                           else "expand", 2)
        if not isinstance(expand, (int, float)) or isinstance(expand, bool) or expand <= 0:
            raise SymroofError(f"{f.where}: field 'expand' must be a positive number, got "
                               f"{expand!r}")
        inner = int(expand * d)
        inner_key = f"{'mamba_' if kind != 'mamba2' else ''}expand x hidden_size"
    if heads * hd != inner:
        raise SymroofError(f"{f.where}: fields {keys[0]!r} {heads} x {keys[1]!r} {hd} = "
                           f"{heads * hd} must equal the mixer's inner width {inner_key} = "
                           f"{inner}")
    if heads % groups:
        raise SymroofError(f"{f.where}: field {keys[3]!r} {groups} does not divide the "
                           f"{heads} SSM heads ({keys[0]!r})")
    state_bytes = None
    cache = f.cfg.get("mamba_ssm_cache_dtype")
    if cache is not None:
        if cache not in _DTYPES:
            raise SymroofError(f"{f.where}: field 'mamba_ssm_cache_dtype' {cache!r}: expected "
                               f"one of {', '.join(_DTYPES)}")
        state_bytes = bytes_per_value(_DTYPES[cache])
    gated = f.flag("mamba_rms_norm", False) if kind == "falcon_h1" else True
    return Mamba2(heads=heads, head_dim=hd, state=state, groups=groups, conv_kernel=conv,
                  chunk=chunk, conv_bias=conv_bias, proj_bias=proj_bias, gated_norm=gated,
                  state_bytes=state_bytes)


def _types(f: Fields, kind: str, layers: int | None) -> list[str]:
    """Each layer's block type in transformers 5.24's names."""
    raw: object
    allowed: tuple[str, ...]
    if kind == "nemotron_h":
        raw = f.cfg.get("layers_block_type", f.cfg.get("layer_types"))
        key = "layers_block_type" if "layers_block_type" in f.cfg else "layer_types"
        pattern = f.cfg.get("hybrid_override_pattern")
        if raw is None and isinstance(pattern, str):
            key = "hybrid_override_pattern"
            bad = sorted(set(pattern) - set(_NEMOTRON))
            if bad:
                raise SymroofError(f"{f.where}: field 'hybrid_override_pattern' has {bad!r}; "
                                   f"expected characters of {''.join(_NEMOTRON)!r}")
            raw = [_NEMOTRON[c] for c in pattern]
        allowed = ("linear_attention", "full_attention", "mlp", "moe")
    elif kind == "bamba" and f.cfg.get("layers_block_type") is None:
        n = layers or 0
        key, idx = "attn_layer_indices", f.indices("attn_layer_indices", n)
        raw = ["full_attention" if i in idx else "linear_attention" for i in range(n)]
        allowed = ("linear_attention", "full_attention")
    else:
        key = "layers_block_type" if "layers_block_type" in f.cfg else "layer_types"
        raw = f.cfg.get(key)
        if raw is None:
            raw = ["linear_attention"] * (layers or 0)
        allowed = ("linear_attention", "full_attention")
    if not isinstance(raw, list) or not raw:
        raise SymroofError(f"{f.where}: field {key!r} must be a list of layer types, got "
                           f"{raw!r}"[:300])
    types = [_LEGACY.get(t, t) if isinstance(t, str) else t for t in raw]
    odd = sorted({str(t) for t in types if t not in allowed})
    if odd:
        raise SymroofError(f"{f.where}: field {key!r} lists {', '.join(odd)}; expected "
                           f"{', '.join(allowed)}"[:300])
    if layers is not None and len(types) != layers:
        raise SymroofError(f"{f.where}: field {key!r} lists {len(types)} layers, "
                           f"'num_hidden_layers' is {layers}: the layer pattern must cover "
                           "every layer")
    return types


def _refuse(f: Fields, kind: str) -> None:
    if kind == "nemotron_h" and f.given("moe_latent_size"):
        raise SymroofError(f"{f.where}: field 'moe_latent_size' is set: experts on a latent "
                           "projection are not modelled")
    if kind == "nemotron_h" and f.given("sliding_window"):
        raise SymroofError(f"{f.where}: field 'sliding_window' is set: windowed attention in "
                           "a hybrid is not modelled")
    if kind == "nemotron_h" and f.given("num_nextn_predict_layers"):
        raise SymroofError(f"{f.where}: field 'num_nextn_predict_layers' is set: "
                           "multi-token prediction layers are not modelled")
    if kind == "falcon_h1" and f.flag("projectors_bias", False):
        raise SymroofError(f"{f.where}: field 'projectors_bias' true is not modelled")


def from_hybrid_fields(cfg: Mapping[str, object], kind: str, label: str,
                       where: str = "config.json") -> HybridModel:
    """A hybrid model from a parsed config.json of one of :data:`HYBRID_FAMILIES` (the
    general refusals of :mod:`symroof.models.hf_fields` are the caller's)."""
    if kind in REFUSED:
        raise SymroofError(f"{where}: model_type {kind!r} is not modelled: {REFUSED[kind]}")
    f = Fields(cfg, where)
    _refuse(f, kind)
    if kind in ("lfm2", "lfm2_moe"):
        return _lfm2(f, label, moe=kind == "lfm2_moe")
    if kind == "minimax":
        return _minimax(f, label)
    if kind == "kimi_linear":
        return _kimi_linear(f, label)
    if kind in ("zamba2", "zamba"):
        return _zamba2(f, label) if kind == "zamba2" else _zamba(f, label)
    if kind in ("qwen3_next", "olmo_hybrid"):
        return _qwen3_next(f, label) if kind == "qwen3_next" else _olmo_hybrid(f, label)
    if kind in ("jamba", "mamba", "falcon_mamba"):
        return _jamba(f, label) if kind == "jamba" else _mamba1(f, label,
                                                               kind == "falcon_mamba")
    d = f.dim("hidden_size")
    given = f.cfg.get("num_hidden_layers")
    layers = None if kind == "nemotron_h" and given is None else f.layers("num_hidden_layers")
    types = _types(f, kind, layers)
    ssm = _ssm(f, kind, d)
    common = dict(name=label, layers=len(types), d_model=d, vocab=f.dim("vocab_size"),
                  norm="rmsnorm",
                  tied_embeddings=f.flag("tie_word_embeddings", False), ssm=ssm)
    if kind == "mamba2":
        if any(t != "linear_attention" for t in types):
            raise SymroofError(f"{where}: field 'layer_types': mamba2 has only Mamba-2 layers")
        return hybrid(heads=ssm.heads, head_dim=ssm.head_dim, d_ff=d,
                      groups=pattern_groups([("mamba2", "none")] * len(types),
                                            moe_model=False), **common)
    heads = f.dim("num_attention_heads")
    attn = dict(heads=heads, kv_heads=f.dim("num_key_value_heads", heads),
                head_dim=f.dim("head_dim", d // heads), qkv_bias=f.flag("attention_bias", False))
    mixer = {"linear_attention": "mamba2", "full_attention": "attention"}
    if kind == "falcon_h1":
        kinds = [("parallel", "dense")] * len(types)
        extra = dict(d_ff=f.dim("intermediate_size"), mlp="gated", positions="rotary")
    elif kind == "bamba":
        kinds = [(mixer[t], "dense") for t in types]
        extra = dict(d_ff=f.dim("intermediate_size"), mlp="gated", positions="rotary")
    elif kind == "granitemoehybrid":
        e = f.count("num_local_experts", 8)
        mlp = "moe" if e > 0 else "dense"
        kinds = [(mixer[t], mlp) for t in types]
        rope = f.cfg.get("position_embedding_type") == "rope"
        extra = dict(mlp="gated", positions="rotary" if rope else None)
        if e > 0:
            extra.update(d_ff=f.dim("intermediate_size"), experts=e,
                         experts_per_token=f.dim("num_experts_per_tok", 2),
                         shared_d_ff=f.dim("shared_intermediate_size", 1024))
        else:
            extra.update(d_ff=f.dim("shared_intermediate_size", 1024))
    else:  # nemotron_h: one block per layer
        block = {"linear_attention": ("mamba2", "none"), "full_attention": ("attention", "none"),
                 "mlp": ("none", "dense"), "moe": ("none", "moe")}
        kinds = [block[t] for t in types]
        extra = dict(d_ff=f.dim("intermediate_size"), mlp="plain", activation="relu2",
                     positions=None)
        if any(k[1] == "moe" for k in kinds):
            shared = f.count("n_shared_experts", 1) * f.dim("moe_shared_expert_intermediate_size",
                                                            7688)
            extra.update(experts=f.dim("n_routed_experts", 8),
                         experts_per_token=f.dim("num_experts_per_tok", 2),
                         expert_d_ff=f.dim("moe_intermediate_size", 7688),
                         **({"shared_d_ff": shared} if shared else {}))
        attn["qkv_bias"] = f.flag("attention_bias", False)
    moe = any(k[1] == "moe" for k in kinds)
    model = hybrid(groups=pattern_groups(kinds, moe_model=moe, what=f"{where} layer pattern"),
                   **common, **attn, **extra)
    out = model.replace(o_bias=attn["qkv_bias"], mlp_bias=f.flag("mlp_bias", False))
    assert isinstance(out, HybridModel)  # replace keeps the class
    return out


def _lfm2_ffn(f: Fields) -> int:
    """LFM2's MLP width as transformers 5.24 derives it from ``intermediate_size``."""
    width = f.dim("intermediate_size", 12288)
    if not f.flag("block_auto_adjust_ff_dim", True):
        return width
    width = int(2 * width / 3)
    mult = f.cfg.get("block_ffn_dim_multiplier", 1.0)
    if mult is not None:
        if isinstance(mult, bool) or not isinstance(mult, (int, float)) or mult <= 0:
            raise SymroofError(f"{f.where}: field 'block_ffn_dim_multiplier' must be a "
                               f"positive number, got {mult!r}")
        step = f.dim("block_multiple_of", 256)
        width = step * ((int(mult * width) + step - 1) // step)
    return width


def _lfm2(f: Fields, label: str, moe: bool = False) -> HybridModel:
    layers = f.layers("num_hidden_layers")
    types = f.kinds("layer_types", layers, ("conv", "full_attention"))
    if types is None and moe:  # transformers 5.24 indexes config.layer_types per layer
        raise SymroofError(f"{f.where}: field 'layer_types' is required for lfm2_moe (conv "
                           "or full_attention per layer)")
    if types is None:
        idx = f.indices("full_attn_idxs", layers) if "full_attn_idxs" in f.cfg \
            else set(range(layers))
        types = ["full_attention" if i in idx else "conv" for i in range(layers)]
    d, heads = f.dim("hidden_size"), f.dim("num_attention_heads")
    extra: dict[str, Any] = {}
    mlp = ["dense"] * layers
    if moe:  # the first num_dense_layers dense (intermediate_size as it is), experts after
        dense = f.count("num_dense_layers", 2)
        mlp = ["dense" if i < dense else "moe" for i in range(layers)]
        if dense < layers:
            extra = dict(experts=f.dim("num_experts", 32),
                         experts_per_token=f.dim("num_experts_per_tok", 4),
                         expert_d_ff=f.dim("moe_intermediate_size", 1792))
            if extra["experts"] == 1:
                raise SymroofError(f"{f.where}: field 'num_experts' 1: a mixture of one "
                                   "expert is not modelled")
    kinds = [("attention" if t == "full_attention" else "shortconv", k)
             for t, k in zip(types, mlp)]
    conv = ShortConv(conv_kernel=f.dim("conv_L_cache", 3), conv_bias=f.flag("conv_bias", False))
    tied = f.flag("tie_word_embeddings", f.flag("tie_embedding", True))
    return hybrid(name=label, layers=layers, d_model=d, heads=heads,
                  kv_heads=f.dim("num_key_value_heads", heads),
                  head_dim=f.dim("head_dim", d // heads),
                  d_ff=f.dim("intermediate_size", 7168) if moe else _lfm2_ffn(f),
                  vocab=f.dim("vocab_size"), mlp="gated", norm="rmsnorm",
                  positions="rotary", qk_norm="head", tied_embeddings=tied, short_conv=conv,
                  groups=pattern_groups(kinds, moe_model=bool(extra),
                                        what=f"{f.where} layer pattern"), **extra)


def _dt_rank(f: Fields, key: str, d: int) -> int:
    rank = f.cfg.get(key, "auto")
    if rank == "auto":
        rank = -(-d // 16)  # transformers: math.ceil(hidden_size / 16)
    if isinstance(rank, bool) or not isinstance(rank, int) or rank <= 0:
        raise SymroofError(f"{f.where}: field {key!r} must be a positive integer or 'auto', "
                           f"got {rank!r}")
    return rank


def _mamba1(f: Fields, label: str, weightless_norms: bool = False) -> HybridModel:
    layers, d = f.layers("num_hidden_layers"), f.dim("hidden_size")
    inner = f.dim("intermediate_size", f.dim("expand", 2) * d)
    mixer = Mamba1(inner=inner, state=f.dim("state_size", 16),
                   dt_rank=_dt_rank(f, "time_step_rank", d),
                   conv_kernel=f.dim("conv_kernel", 4), conv_bias=f.flag("use_conv_bias", True),
                   proj_bias=f.flag("use_bias", False), norms=weightless_norms,
                   norm_weights=False)
    # no attention: the I channels stand in for the heads (unused), so that tensor-parallel
    # degrees are checked against the channels the Mamba-1 layers split (as mamba2())
    return hybrid(name=label, layers=layers, d_model=d, heads=inner, head_dim=1, d_ff=d,
                  vocab=f.dim("vocab_size"), norm="rmsnorm",
                  tied_embeddings=f.flag("tie_word_embeddings", True), mamba1=mixer,
                  groups=pattern_groups([("mamba1", "none")] * layers, moe_model=False))


def _jamba(f: Fields, label: str) -> HybridModel:
    layers = f.layers("num_hidden_layers")
    d, heads = f.dim("hidden_size"), f.dim("num_attention_heads")
    ap, ao = f.dim("attn_layer_period", 8), f.count("attn_layer_offset", 4)
    ep, eo = f.dim("expert_layer_period", 2), f.count("expert_layer_offset", 1)
    for key, period, offset in (("attn_layer_offset", ap, ao), ("expert_layer_offset", ep, eo)):
        if offset >= period:
            raise SymroofError(f"{f.where}: field {key!r} {offset} must be below its period "
                               f"{period}")
    experts = f.dim("num_experts", 16)
    moe = experts > 1
    kinds = [("attention" if i % ap == ao else "mamba1",
              "moe" if moe and i % ep == eo else "dense") for i in range(layers)]
    rank = _dt_rank(f, "mamba_dt_rank", d) if "mamba_dt_rank" in f.cfg else 256
    expand = f.dim("mamba_expand", 2)
    mixer = Mamba1(inner=expand * d, state=f.dim("mamba_d_state", 16), dt_rank=rank,
                   conv_kernel=f.dim("mamba_d_conv", 4), conv_bias=f.flag("mamba_conv_bias", True),
                   proj_bias=f.flag("mamba_proj_bias", False))
    extra: dict[str, Any] = {}
    if moe and any(k[1] == "moe" for k in kinds):
        extra = dict(experts=experts, experts_per_token=f.dim("num_experts_per_tok", 2))
    return hybrid(name=label, layers=layers, d_model=d, heads=heads,
                  kv_heads=f.dim("num_key_value_heads", heads), d_ff=f.dim("intermediate_size"),
                  vocab=f.dim("vocab_size"), mlp="gated", norm="rmsnorm", positions=None,
                  tied_embeddings=f.flag("tie_word_embeddings", False), mamba1=mixer,
                  groups=pattern_groups(kinds, moe_model=bool(extra),
                                        what=f"{f.where} layer pattern"), **extra)


def _qwen3_next(f: Fields, label: str) -> HybridModel:
    layers = f.layers("num_hidden_layers")
    types = _linear_types(f, layers)
    d, heads = f.dim("hidden_size"), f.dim("num_attention_heads")
    experts = f.count("num_experts", 512)
    step = f.dim("decoder_sparse_step", 1)
    only = f.indices("mlp_only_layers", layers)
    moe_at = [experts > 0 and i not in only and (i + 1) % step == 0 for i in range(layers)]
    kinds = [("attention" if t == "full_attention" else "deltanet", "moe" if e else "dense")
             for t, e in zip(types, moe_at)]
    extra: dict[str, Any] = {}
    if any(moe_at):
        if experts == 1:
            raise SymroofError(f"{f.where}: field 'num_experts' 1: a mixture of one expert is "
                               "not modelled")
        extra = dict(experts=experts, experts_per_token=f.dim("num_experts_per_tok", 10),
                     expert_d_ff=f.dim("moe_intermediate_size", 512))
        shared = f.count("shared_expert_intermediate_size", 512)
        if shared:
            extra.update(shared_d_ff=shared, shared_gate=True)
        if extra["expert_d_ff"] == f.dim("intermediate_size"):
            del extra["expert_d_ff"]
    delta = GatedDeltaNet(f.dim("linear_num_key_heads", 16), f.dim("linear_key_head_dim", 128),
                          f.dim("linear_num_value_heads", 32),
                          f.dim("linear_value_head_dim", 128),
                          conv_kernel=f.dim("linear_conv_kernel_dim", 4), chunk=64)
    bias = f.flag("attention_bias", False)
    model = hybrid(name=label, layers=layers, d_model=d, heads=heads,
                   kv_heads=f.dim("num_key_value_heads", heads),
                   head_dim=f.dim("head_dim", 256), d_ff=f.dim("intermediate_size"),
                   vocab=f.dim("vocab_size"), mlp="gated", norm="rmsnorm",
                   positions="rotary", qk_norm="head", qkv_bias=bias,
                   tied_embeddings=f.flag("tie_word_embeddings", False), deltanet=delta,
                   attn_output_gate=True,
                   groups=pattern_groups(kinds, moe_model=bool(extra),
                                         what=f"{f.where} layer pattern"), **extra)
    out = model.replace(o_bias=bias)
    assert isinstance(out, HybridModel)  # replace keeps the class
    return out


def _linear_types(f: Fields, layers: int) -> list[str]:
    # transformers 5.24's default: full attention every 4th layer
    return f.kinds("layer_types", layers, ("linear_attention", "full_attention")) or [
        "full_attention" if (i + 1) % 4 == 0 else "linear_attention" for i in range(layers)]


def _olmo_hybrid(f: Fields, label: str) -> HybridModel:
    layers = f.layers("num_hidden_layers")
    types = _linear_types(f, layers)
    d, heads = f.dim("hidden_size"), f.dim("num_attention_heads")
    rope = f.cfg.get("rope_parameters")
    rotary = isinstance(rope, Mapping) and rope.get("rope_theta") is not None
    delta = GatedDeltaNet(f.dim("linear_num_key_heads", 30), f.dim("linear_key_head_dim", 96),
                          f.dim("linear_num_value_heads", 30),
                          f.dim("linear_value_head_dim", 192),
                          conv_kernel=f.dim("linear_conv_kernel_dim", 4), chunk=64)
    bias = f.flag("attention_bias", False)
    kinds = [("attention" if t == "full_attention" else "deltanet", "dense") for t in types]
    model = hybrid(name=label, layers=layers, d_model=d, heads=heads,
                   kv_heads=f.dim("num_key_value_heads", heads),
                   head_dim=f.dim("head_dim", d // heads), d_ff=f.dim("intermediate_size"),
                   vocab=f.dim("vocab_size"), mlp="gated", norm="rmsnorm",
                   positions="rotary" if rotary else None, qk_norm="full", qkv_bias=bias,
                   tied_embeddings=f.flag("tie_word_embeddings", False), deltanet=delta,
                   groups=pattern_groups(kinds, moe_model=False,
                                         what=f"{f.where} layer pattern"))
    out = model.replace(o_bias=bias)
    assert isinstance(out, HybridModel)  # replace keeps the class
    return out


def _minimax(f: Fields, label: str) -> HybridModel:
    if f.given("sliding_window"):
        raise SymroofError(f"{f.where}: field 'sliding_window' is set: windowed attention in "
                           "a MiniMax hybrid is not modelled")
    layers = f.layers("num_hidden_layers")
    # transformers 5.24's default: full attention on the even layers (0, 2, ...)
    types = _linear_types(f, layers) if f.cfg.get("layer_types") is not None else [
        "full_attention" if (i + 1) % 2 else "linear_attention" for i in range(layers)]
    d, heads = f.dim("hidden_size"), f.dim("num_attention_heads")
    head_dim = f.dim("head_dim", d // heads) if f.cfg.get("head_dim") is not None \
        else d // heads
    experts = f.dim("num_local_experts", 8)
    if experts == 1:
        raise SymroofError(f"{f.where}: field 'num_local_experts' 1: a mixture of one expert "
                           "is not modelled")
    kinds = [("attention" if t == "full_attention" else "lightning", "moe") for t in types]
    light = LightningAttention(heads, head_dim, chunk=f.dim("block_size", 256))
    return hybrid(name=label, layers=layers, d_model=d, heads=heads,
                  kv_heads=f.dim("num_key_value_heads", heads), head_dim=head_dim,
                  d_ff=f.dim("intermediate_size"), vocab=f.dim("vocab_size"), mlp="gated",
                  norm="rmsnorm", positions="rotary", experts=experts,
                  experts_per_token=f.dim("num_experts_per_tok", 2),
                  tied_embeddings=f.flag("tie_word_embeddings", False), lightning=light,
                  groups=pattern_groups(kinds, moe_model=True,
                                        what=f"{f.where} layer pattern"))


# --- Kimi-Linear (model_type kimi_linear) ---------------------------------------------

#: Kimi-Linear's config.json fields that change the cost in a way symroof does not model
#: (Moonshot's checkpoints and the Kimi-K3 text configs that reuse the model_type; none is
#: read by transformers 5.24's KimiLinear), with what each would need.
_KIMI_REFUSED = {
    "mla_use_output_gate": "a gate on the latent attention's output is not modelled",
    "attn_res_block_size": "attention residual blocks are not modelled",
    "routed_expert_hidden_size": "routed experts on a projected width are not modelled",
    "latent_moe_use_norm": "experts on a normed latent projection are not modelled",
    "num_nextn_predict_layers": "multi-token prediction layers are not modelled",
}
_KIMI_LINEAR_REFUSED = {
    "use_full_rank_gate": "full-rank decay and output gates (transformers' are low-rank)",
    "gate_lower_bound": "a lower-bounded (sigmoid) decay gate",
}


def _kimi_sub(f: Fields) -> Fields:
    """The checkpoint's ``linear_attn_config`` (it takes precedence over the flat
    ``linear_*`` fields, as transformers 5.24 reads it)."""
    sub = f.cfg.get("linear_attn_config") or {}
    if not isinstance(sub, Mapping):
        raise SymroofError(f"{f.where}: field 'linear_attn_config' must be an object, got "
                           f"{sub!r}"[:300])
    return Fields(sub, f"{f.where} linear_attn_config")


def _kimi_types(f: Fields, lin: Fields, layers: int) -> list[str]:
    """Each layer's mixer: ``layer_types``, else ``linear_attn_config``'s 1-based
    ``full_attn_layers`` and ``kda_layers`` (both, covering every layer once), else
    transformers' default (full attention on layers 4, 8, ...)."""
    if f.cfg.get("layer_types") is not None:
        return _linear_types(f, layers)
    full, kda = lin.cfg.get("full_attn_layers"), lin.cfg.get("kda_layers")
    if full is None or kda is None:
        return ["full_attention" if i and i % 4 == 0 else "linear_attention"
                for i in range(layers)]
    types: list[str | None] = [None] * layers
    for key, ids, kind in (("full_attn_layers", full, "full_attention"),
                           ("kda_layers", kda, "linear_attention")):
        if not isinstance(ids, list) or not all(
                isinstance(i, int) and not isinstance(i, bool) and 1 <= i <= layers
                for i in ids):
            raise SymroofError(f"{lin.where}: field {key!r} must list layer numbers 1 .. "
                               f"{layers}, got {ids!r}"[:300])
        for i in ids:
            if types[i - 1] is not None:
                raise SymroofError(f"{lin.where}: field {key!r}: layer {i} is listed twice")
            types[i - 1] = kind
    missing = [i + 1 for i, t in enumerate(types) if t is None]
    if missing:
        raise SymroofError(f"{lin.where}: fields 'full_attn_layers' and 'kda_layers' leave "
                           f"layers {missing[:8]} uncovered: the layer pattern must cover "
                           "every layer")
    return [str(t) for t in types]


def _kimi_mlp_types(f: Fields, layers: int) -> list[str]:
    """``mlp_layer_types`` (dense or sparse), else the first ``first_k_dense_replace``
    (default 1) layers dense."""
    types = f.kinds("mlp_layer_types", layers, ("dense", "sparse"))
    if types is None:
        first = f.count("first_k_dense_replace", 1)
        return ["dense" if i < first else "sparse" for i in range(layers)]
    return types


def _kimi_linear(f: Fields, label: str) -> HybridModel:
    """Kimi-Linear: Kimi Delta Attention (a gated DeltaNet whose decay is per key channel,
    ``decay="channel"``) and multi-head latent attention without rotary (transformers 5.24
    applies none: ``mla_use_nope``), DeepSeek-V3's experts with shared experts after the
    first dense layers."""
    lin = _kimi_sub(f)
    for key, why in _KIMI_REFUSED.items():
        if f.given(key):
            raise SymroofError(f"{f.where}: field {key!r} is set: {why}")
    for key, why in _KIMI_LINEAR_REFUSED.items():
        if lin.given(key):
            raise SymroofError(f"{lin.where}: field {key!r} is set: {why} is not modelled")
    if f.cfg.get("mla_use_nope", True) is not True:
        raise SymroofError(f"{f.where}: field 'mla_use_nope' {f.cfg.get('mla_use_nope')!r}: "
                           "rotary latent attention in Kimi-Linear is not modelled "
                           "(transformers 5.24 applies no rotary)")
    act = f.cfg.get("hidden_act", "silu")
    if act != "silu":
        raise SymroofError(f"{f.where}: field 'hidden_act' {act!r}: only silu is modelled "
                           "(the conv's activation and the MLPs')")
    router = f.cfg.get("moe_router_activation_func", "sigmoid")
    if router != "sigmoid":
        raise SymroofError(f"{f.where}: field 'moe_router_activation_func' {router!r}: "
                           "only sigmoid is modelled")
    if f.cfg.get("moe_layer_freq", 1) != 1:
        raise SymroofError(f"{f.where}: field 'moe_layer_freq' {f.cfg.get('moe_layer_freq')!r}"
                           ": only 1 (experts on every layer after the dense ones) is modelled")
    layers = f.layers("num_hidden_layers")
    types = _kimi_types(f, lin, layers)
    mlps = _kimi_mlp_types(f, layers)
    d, heads = f.dim("hidden_size"), f.dim("num_attention_heads")
    kv_heads = f.dim("num_key_value_heads", heads)
    if kv_heads != heads:
        raise SymroofError(f"{f.where}: field 'num_key_value_heads' {kv_heads}: latent "
                           f"attention keeps every head (expected {heads}, "
                           "num_attention_heads)")

    def alias(new: str, old: str, default: int, positive: bool = True) -> int:
        key = new if f.cfg.get(new) is not None else old  # transformers' attribute_map
        return f.dim(key, default) if positive else f.count(key, default)

    hd = lin.dim("head_dim", f.dim("linear_head_dim", 128))
    nh = lin.dim("num_heads", f.dim("linear_num_heads", 32))
    conv = lin.dim("short_conv_kernel_size", f.dim("linear_conv_kernel_dim", 4))
    # the state is kept in float32 whatever the model's precision: transformers 5.24 casts
    # it (update_recurrent_state(state.to(float32))), as FLA's chunk_kda returns it
    kda = GatedDeltaNet(nh, hd, nh, hd, conv_kernel=conv, chunk=64, decay="channel",
                        decay_rank=hd, out_gate_rank=hd, out_gate="sigmoid",
                        state_bytes=bytes_per_value("fp32"))
    extra: dict[str, Any] = {}
    if "sparse" in mlps:
        experts = alias("num_experts", "num_local_experts", 256)
        if experts == 1:
            raise SymroofError(f"{f.where}: field 'num_experts' 1: a mixture of one expert is "
                               "not modelled")
        extra = dict(experts=experts,
                     experts_per_token=alias("num_experts_per_token", "num_experts_per_tok", 8),
                     expert_d_ff=f.dim("moe_intermediate_size", 1024))
        shared = alias("num_shared_experts", "n_shared_experts", 1, positive=False)
        if shared:
            extra["shared_d_ff"] = shared * extra["expert_d_ff"]
        if extra["expert_d_ff"] == f.dim("intermediate_size", 9216):
            del extra["expert_d_ff"]
    kinds = [("attention" if t == "full_attention" else "deltanet",
              "moe" if m == "sparse" else "dense") for t, m in zip(types, mlps)]
    bias = f.flag("attention_bias", False)
    model = hybrid(name=label, layers=layers, d_model=d, heads=heads, kv_heads=heads,
                   d_ff=f.dim("intermediate_size", 9216), vocab=f.dim("vocab_size"),
                   mlp="gated", norm="rmsnorm", positions=None, qkv_bias=bias,
                   latent=latent_of(f), deltanet=kda,
                   tied_embeddings=f.flag("tie_word_embeddings", False),
                   groups=pattern_groups(kinds, moe_model=bool(extra),
                                         what=f"{f.where} layer pattern"), **extra)
    out = model.replace(o_bias=bias)
    assert isinstance(out, HybridModel)  # replace keeps the class
    return out


#: Zamba2's default layer pattern (transformers 5.24, 54 layers).
_ZAMBA2_TYPES = (["mamba"] + (["mamba"] * 5 + ["hybrid"]) * 7 + ["mamba"] * 4 + ["hybrid"]
                 + ["mamba"] * 3 + ["hybrid"] + ["mamba"] * 2)
_ZAMBA2_ACT = {"gelu": "gelu", "gelu_pytorch_tanh": "gelu", "gelu_new": "gelu", "silu": "silu"}


def _zamba_types(f: Fields, layers: int) -> list[str] | None:
    """Zamba's and Zamba2's ``layers_block_type`` (else ``layer_types``): mamba (also
    linear_attention) or hybrid per layer; None when neither is given."""
    key = "layers_block_type" if "layers_block_type" in f.cfg else "layer_types"
    return f.kinds(key, layers, ("mamba", "linear_attention", "hybrid"))


def _zamba_mixer_heads(f: Fields, d: int, default: int) -> tuple[int, int]:
    """Both Zambas' SSM heads (``n_mamba_heads``) and the mixer's inner width
    ``mamba_expand`` x ``hidden_size``, which the heads must divide."""
    ssm_heads, inner = f.dim("n_mamba_heads", default), f.dim("mamba_expand", 2) * d
    if inner % ssm_heads:
        raise SymroofError(f"{f.where}: field 'n_mamba_heads' {ssm_heads} does not divide the "
                           f"mixer's inner width mamba_expand x hidden_size = {inner}")
    return ssm_heads, inner


def _zamba_activation(f: Fields) -> str:
    """Both Zambas' ``hidden_act`` as symroof's activation (default gelu)."""
    act = f.cfg.get("hidden_act", "gelu")
    if act not in _ZAMBA2_ACT:
        raise SymroofError(f"{f.where}: field 'hidden_act' {act!r}: expected one of "
                           f"{', '.join(_ZAMBA2_ACT)}")
    return _ZAMBA2_ACT[act]


def _zamba2(f: Fields, label: str) -> HybridModel:
    """Zamba2 (transformers 5.24's ``Zamba2Config`` defaults): Mamba-2 layers and hybrid
    layers that run a shared transformer block first."""
    if f.flag("add_bias_linear", False):
        raise SymroofError(f"{f.where}: field 'add_bias_linear' true (biases on the Mamba-2 "
                           "and shared MLP projections) is not modelled")
    layers = f.layers("num_hidden_layers") if f.cfg.get("num_hidden_layers") is not None else 54
    types = _zamba_types(f, layers) or list(_ZAMBA2_TYPES)
    d, heads = f.dim("hidden_size", 2560), f.dim("num_attention_heads", 32)
    if (2 * d) % heads:
        raise SymroofError(f"{f.where}: field 'num_attention_heads' {heads} does not divide "
                           f"the shared attention's 2 x hidden_size = {2 * d}")
    ssm_heads, inner = _zamba_mixer_heads(f, d, 8)
    groups = f.dim("mamba_ngroups", 1)
    if ssm_heads % groups:
        raise SymroofError(f"{f.where}: field 'mamba_ngroups' {groups} does not divide the "
                           f"{ssm_heads} SSM heads ('n_mamba_heads')")
    act = _zamba_activation(f)
    # transformers 5.24's conv1d always has a bias (use_conv_bias is not read)
    ssm = Mamba2(heads=ssm_heads, head_dim=inner // ssm_heads,
                 state=f.dim("mamba_d_state", 64), groups=groups,
                 conv_kernel=f.dim("mamba_d_conv", 4), chunk=f.dim("chunk_size", 256),
                 conv_bias=True, proj_bias=False)
    shared = SharedBlocks(mem_blocks=f.dim("num_mem_blocks", 1),
                          adapter_rank=f.dim("adapter_rank", 128),
                          attention_adapter=f.flag("use_shared_attention_adapter", False),
                          rope=f.flag("use_mem_rope", False))
    kv = f.dim("num_key_value_heads", heads)
    if shared.attention_adapter and kv != heads:
        raise SymroofError(f"{f.where}: field 'num_key_value_heads' {kv}: the Q, K, V adapters "
                           f"(use_shared_attention_adapter) add 2 x hidden_size values to K "
                           f"and V, so it must equal num_attention_heads {heads}")
    kinds = [("zamba" if t == "hybrid" else "mamba2", "none") for t in types]
    return hybrid(name=label, layers=layers, d_model=d, heads=heads,
                  kv_heads=kv, head_dim=2 * d // heads,
                  d_ff=f.dim("intermediate_size", 4 * d), vocab=f.dim("vocab_size", 32000),
                  mlp="gated", activation=act, norm="rmsnorm", positions=None,
                  tied_embeddings=f.flag("tie_word_embeddings", True), ssm=ssm, zamba=shared,
                  groups=pattern_groups(kinds, moe_model=False,
                                        what=f"{f.where} layer pattern"))


def _zamba(f: Fields, label: str) -> HybridModel:
    """Zamba (v1, transformers 5.24's ``ZambaConfig`` defaults)."""
    layers = f.layers("num_hidden_layers") if f.cfg.get("num_hidden_layers") is not None \
        else 76
    d = f.dim("hidden_size", 3712)
    if f.dim("attention_hidden_size", 2 * d) != 2 * d:
        raise SymroofError(f"{f.where}: field 'attention_hidden_size' must be 2 x hidden_size "
                           f"= {2 * d} (the hidden state and the embeddings concatenated)")
    types = _zamba_types(f, layers)
    if types is None:
        period, offset = f.dim("attn_layer_period", 6), f.count("attn_layer_offset", 4)
        types = ["mamba", "mamba", "hybrid"] + [
            "hybrid" if i % period == offset else "mamba" for i in range(layers - 3)]
    heads = f.dim("num_attention_heads", 16)
    _, inner = _zamba_mixer_heads(f, d, 2)
    act = _zamba_activation(f)
    mixer = Mamba1(inner=inner, state=f.dim("mamba_d_state", 16),
                   dt_rank=_dt_rank(f, "mamba_dt_rank", d),
                   conv_kernel=f.dim("mamba_d_conv", 4), conv_bias=f.flag("mamba_conv_bias", True),
                   proj_bias=f.flag("mamba_proj_bias", False), norms=False)
    kinds = [("zamba" if t == "hybrid" else "mamba1", "none") for t in types]
    return hybrid(name=label, layers=layers, d_model=d, heads=heads,
                  kv_heads=f.dim("num_key_value_heads", 16),
                  head_dim=f.dim("attention_head_dim", 2 * d // heads),
                  d_ff=f.dim("intermediate_size", 14848), vocab=f.dim("vocab_size", 32000),
                  mlp="gated", activation=act, norm="rmsnorm", positions=None,
                  tied_embeddings=f.flag("tie_word_embeddings", True), mamba1=mixer,
                  zamba=SharedBlocks(mlp_adapter=False),
                  groups=pattern_groups(kinds, moe_model=False,
                                        what=f"{f.where} layer pattern"))

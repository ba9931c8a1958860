"""A model's data as the workload builders read it: the fields of a transformer
description, their checks, and the structure derived from them (its layer groups, the
widths of Q, K and V).

:class:`ModelShape` sits below the workloads so that they read a model without knowing
what is built on it; ``symroof.models.TransformerModel`` is a :class:`ModelShape` that
adds the counts (parameters, bytes, KV-cache bytes) read off the graphs the workloads
build. :class:`LayerGroup` is one kind of layer and how many of it there are, and
:class:`LatentAttention` the widths of multi-head latent attention. :class:`HybridShape`
is a hybrid's data: a :class:`ModelShape` with a layer pattern and its token mixers'
widths (``symroof.models.hybrid.HybridModel`` adds the counts).

>>> m = ModelShape("m", layers=4, d_model=64, heads=4, kv_heads=2, head_dim=16, d_ff=256,
...                window=8, window_layers=2)
>>> m.kv_dim, [(g.count, g.prefix) for g in m.layer_groups]
(32, [(2, ''), (2, 'local.')])
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property

import sympy as sp

from symroof.errors import SymroofError
from symroof.ir import as_dim, as_expr
from symroof.options import Activation, MlpKind, Norm, Positions, QkNorm, option
from symroof.symbols import b as _b
from symroof.workloads.mixers import (GatedDeltaNet, LightningAttention, Mamba1, Mamba2,
                                      SharedBlocks, ShortConv)

__all__ = ["ModelShape", "HybridShape", "LatentAttention", "LayerGroup", "MIXERS",
           "RECURRENT_MIXERS"]

_ZERO = sp.Integer(0)


#: Token mixers a layer group may run, with the prefix of their ops and weights (hybrid
#: models, :mod:`symroof.workloads.recurrent`): attention; a Mamba-2 (SSD) mixer; both
#: side by side on the same normed input, their outputs summed (Falcon-H1); an LFM2
#: short-convolution block; a Mamba-1 (selective scan) mixer (Jamba); a gated DeltaNet
#: (Qwen3-Next's linear attention); lightning attention (MiniMax's linear attention); none
#: (a layer that is only an MLP, as Nemotron-H's); Zamba2's hybrid layer (a shared
#: transformer block, then a Mamba-2 mixer: :mod:`symroof.workloads.zamba`).
MIXERS = {"attention": "", "mamba2": "mamba.", "parallel": "parallel.", "shortconv": "conv.",
          "mamba1": "mamba1.", "deltanet": "delta.", "lightning": "lightning.",
          "none": "mlp_only.", "zamba": "zamba."}
#: The mixers with a recurrent part (conv or scan states): all but attention alone and none.
RECURRENT_MIXERS = frozenset(MIXERS) - {"attention", "none"}


@dataclass(frozen=True)
class LayerGroup:
    """``count`` layers of one kind: windowed attention or not, a mixture of experts or a
    dense MLP. ``prefix`` names its ops and weights ("" for the model's main kind).
    A hybrid model's groups also say their token ``mixer`` (:data:`MIXERS`) and whether
    the layer has an MLP at all (``ffn``)."""

    count: sp.Expr
    windowed: bool = False
    moe: bool = False
    dense_in_moe: bool = False   # a dense MLP layer of a mixture-of-experts model
    mixer: str = "attention"     # a key of MIXERS
    ffn: bool = True             # the layer has an MLP (or experts) after its mixer

    @property
    def prefix(self) -> str:
        """``local.`` for windowed layers, ``dense.`` for a MoE model's dense layers (a
        hybrid's: ``mamba.`` (``mamba.mlp.`` with an MLP), ``parallel.``, ``mlp_only.``,
        ``no_mlp.`` before them)."""
        if self.mixer in ("mamba2", "mamba1", "deltanet", "lightning", "zamba"):  # an MLP: say so
            ffn = "mlp." if self.ffn else ""
        else:
            ffn = "" if self.ffn else "no_mlp."
        return (MIXERS[self.mixer] + ffn + ("local." if self.windowed else "")
                + ("dense." if self.dense_in_moe else ""))

    @property
    def block(self) -> str:
        """The repeat block's name: ``layer``, ``local_layer``, ``dense_layer``, ..."""
        return self.prefix.replace(".", "_") + "layer"


@dataclass(frozen=True)
class LatentAttention:
    """The widths of multi-head latent attention (d_c, d_r, d_n, d_v, d_q)."""

    kv_rank: sp.Expr             # d_c: the compressed latent cached per token
    rope_dim: sp.Expr            # d_r: the decoupled rotary key, shared by every head
    nope_dim: sp.Expr            # d_n: per-head query and key width without rotary
    v_dim: sp.Expr               # d_v: per-head value width
    q_rank: sp.Expr | None = None  # d_q: the query's low-rank width (None: a full projection)

    def __post_init__(self) -> None:
        for f in ("kv_rank", "rope_dim", "nope_dim", "v_dim", "q_rank"):
            value = getattr(self, f)
            if value is not None or f != "q_rank":
                object.__setattr__(self, f, as_dim(value, f"latent attention {f}"))

    @property
    def cached_per_token(self) -> sp.Expr:
        """Values cached per token per layer: the latent and the rotary key, d_c + d_r."""
        return self.kv_rank + self.rope_dim


@dataclass(frozen=True)
class ModelShape:
    """A decoder-only transformer's data: what the workload builders read. A model is
    built as ``symroof.models.TransformerModel`` (with :func:`symroof.models.transformer`
    or a preset), which adds the counts; every field may be a symbol.

    Bytes per value are per tensor kind: ``weight_bytes``, ``activation_bytes`` and
    ``kv_bytes`` (the symbol ``b`` for all three unless set). A windowed layer attends the
    ``window`` newest positions, itself included (keys i - W < j <= i), and caches at
    most ``window`` positions; ``window_layers`` of the layers are windowed (all when
    None). A mixture of experts (``experts > 1``) routes each token to
    ``experts_per_token`` experts of width ``expert_d_ff`` (``d_ff`` when None), adds a
    shared expert of width ``shared_d_ff`` if set, and keeps ``dense_layers`` layers with
    a dense MLP of width ``d_ff`` (``window_dense_layers`` of them windowed). Norms have a
    gain unless ``norm_weight`` is false (OLMo) and a bias as ``norm_bias`` says (None: a
    layernorm has one); ``parallel`` runs attention and the MLP side by side off one norm
    (Cohere); ``rotary_layers`` of the layers rotate q and k (None: all; SmolLM3).
    ``chunked``: the windowed layers attend in chunks instead (Llama 4's chunked attention):
    query i attends the keys of its own chunk of ``window`` positions, ``W floor(i/W) <= j
    <= i``; their KV buffer is the window's (at most W positions, as transformers keeps it).
    ``query_temperature``: the layers without rotary scale each query by a function of its
    position (Llama 4's attention temperature tuning; one FLOP per query value).
    """

    name: str
    layers: sp.Expr
    d_model: sp.Expr
    heads: sp.Expr
    kv_heads: sp.Expr
    head_dim: sp.Expr
    d_ff: sp.Expr
    vocab: sp.Expr | None = None
    mlp: MlpKind = MlpKind.PLAIN
    activation: Activation = Activation.GELU
    norm: Norm | None = None
    tied_embeddings: bool = False
    qkv_bias: bool = False        # Q, K, V projections have biases (GPT-2, Qwen2)
    o_bias: bool = False          # the attention output projection has a bias (GPT-2)
    mlp_bias: bool = False        # the MLP (and expert) matrices have biases (GPT-2, gpt-oss)
    positions: Positions | None = None
    max_positions: sp.Expr | None = None
    experts: sp.Expr = sp.Integer(1)            # MLP experts per layer (MoE)
    experts_per_token: sp.Expr = sp.Integer(1)  # experts each token is routed to
    weight_bytes: sp.Expr = _b
    activation_bytes: sp.Expr = _b
    kv_bytes: sp.Expr = _b
    window: sp.Expr | None = None               # sliding window W (None: every layer full)
    window_layers: sp.Expr | None = None        # layers with the window (None: all)
    expert_d_ff: sp.Expr | None = None          # routed expert width (None: d_ff)
    shared_d_ff: sp.Expr | None = None          # shared expert width (None: no shared expert)
    shared_gate: bool = False                   # a sigmoid gate d -> 1 on it (Qwen2-MoE)
    dense_layers: sp.Expr = _ZERO               # MoE: layers with a dense MLP of d_ff
    window_dense_layers: sp.Expr | None = None  # MoE: dense layers that are windowed
    router_bias: bool = False                   # the router has a bias (gpt-oss)
    qk_norm: QkNorm | None = None               # norms on queries and keys (Qwen3, OLMoE)
    post_norms: bool = False                    # norms after attention and MLP too (Gemma)
    sinks: bool = False                         # a learned sink logit per head (gpt-oss)
    latent: LatentAttention | None = None       # multi-head latent attention (DeepSeek)
    attention_dropout: sp.Expr = _ZERO          # dropout on the attention probabilities (training)
    hidden_dropout: sp.Expr = _ZERO             # on the embedding and each sublayer's output
    dropout_mask_bytes: sp.Expr = sp.Integer(1)  # bytes per mask value (PyTorch keeps a bool)
    expert_bias: bool | None = None             # routed experts' biases (None: as mlp_bias)
    norm_weight: bool = True                    # each norm has a gain (OLMo's LayerNorm: none)
    norm_bias: bool | None = None               # a norm's bias (None: layernorm yes, rmsnorm no)
    parallel: bool = False                      # attention and MLP side by side off one norm
    rotary_layers: sp.Expr | None = None        # layers that rotate q and k (None: all)
    chunked: bool = False                       # windowed layers attend their own chunk of
    #                                             W positions (Llama 4), not the W newest
    query_temperature: bool = False             # queries scaled by their position on the
    #                                             layers without rotary (Llama 4)

    def __post_init__(self) -> None:
        where = f"model {self.name!r}"
        for f in ("layers", "d_model", "heads", "kv_heads", "head_dim", "d_ff", "experts",
                  "experts_per_token"):
            object.__setattr__(self, f, as_dim(getattr(self, f), f"{where} {f}"))
        for f in ("vocab", "max_positions", "window", "window_layers", "expert_d_ff",
                  "shared_d_ff", "window_dense_layers"):
            if getattr(self, f) is not None:
                object.__setattr__(self, f, _count(getattr(self, f), f"{where} {f}",
                                                   zero=f.endswith("layers")))
        object.__setattr__(self, "dense_layers",
                           _count(self.dense_layers, f"{where} dense_layers", zero=True))
        for f in ("weight_bytes", "activation_bytes", "kv_bytes"):
            v = as_expr(getattr(self, f), f"{where} {f}")
            if v.is_positive is False or (v.is_number and not v.is_positive):
                raise SymroofError(f"{where} {f}: expected positive bytes per value, got {v}")
            object.__setattr__(self, f, v)
        for f, enum, optional in (("mlp", MlpKind, False), ("activation", Activation, False),
                                  ("norm", Norm, True), ("positions", Positions, True),
                                  ("qk_norm", QkNorm, True)):
            value = getattr(self, f)
            if not (optional and value is None):
                object.__setattr__(self, f, option(enum, value, f"{where} {f}"))
        for f in ("tied_embeddings", "qkv_bias", "o_bias", "mlp_bias", "shared_gate",
                  "router_bias", "post_norms", "sinks", "norm_weight", "parallel", "chunked",
                  "query_temperature"):
            if not isinstance(getattr(self, f), bool):
                raise SymroofError(f"{where} {f}: expected true or false, got "
                                   f"{getattr(self, f)!r}")
        for f in ("expert_bias", "norm_bias"):
            if getattr(self, f) is not None and not isinstance(getattr(self, f), bool):
                raise SymroofError(f"{where} {f}: expected true, false or None, got "
                                   f"{getattr(self, f)!r}")
        if self.rotary_layers is not None:
            object.__setattr__(self, "rotary_layers", _count(self.rotary_layers,
                                                             f"{where} rotary_layers", zero=True))
            if self.positions != "rotary":
                raise SymroofError(f"{where} rotary_layers: needs rotary positions")
            _at_most(self.rotary_layers, self.layers, f"{where}: rotary_layers "
                     f"{self.rotary_layers} exceeds layers {self.layers}")
        if self.latent is not None and not isinstance(self.latent, LatentAttention):
            raise SymroofError(f"{where} latent: expected a LatentAttention, got "
                               f"{type(self.latent).__name__}")
        _divides(self.kv_heads, self.heads, f"{where}: kv_heads {self.kv_heads} must divide "
                 f"heads {self.heads}")
        _divides(self.experts_per_token, self.experts, f"{where}: experts_per_token "
                 f"{self.experts_per_token} exceeds experts {self.experts}", le=True)
        if self.positions == "learned" and self.max_positions is None:
            raise SymroofError(f"{where} max_positions: required with learned positions")
        if self.tied_embeddings and self.vocab is None:
            raise SymroofError(f"{where} tied_embeddings: needs a vocab")
        self._check_layer_counts(where)
        self._check_dropout(where)

    def _check_dropout(self, where: str) -> None:
        """Dropout probabilities are numbers in [0, 1); mask bytes are positive."""
        for f in ("attention_dropout", "hidden_dropout"):
            v = as_expr(getattr(self, f), f"{where} {f}")
            if not v.is_number or v.is_negative or not (v < 1):
                raise SymroofError(f"{where} {f}: expected a probability 0 <= p < 1, got {v}")
            object.__setattr__(self, f, v)
        v = as_expr(self.dropout_mask_bytes, f"{where} dropout_mask_bytes")
        if v.is_positive is not True:
            raise SymroofError(f"{where} dropout_mask_bytes: expected positive bytes per "
                               f"value, got {v}")
        object.__setattr__(self, "dropout_mask_bytes", v)

    def _check_layer_counts(self, where: str) -> None:
        moe = self.experts != 1
        for f, needs in (("window_layers", "a window"), ("window_dense_layers", "a window"),
                         ("chunked", "a window (the chunk size)")):
            if getattr(self, f) not in (None, False) and self.window is None:
                raise SymroofError(f"{where} {f}: needs {needs}")
        for f in ("expert_d_ff", "shared_d_ff", "window_dense_layers"):
            if getattr(self, f) is not None and not moe:
                raise SymroofError(f"{where} {f}: needs a mixture of experts (experts > 1)")
        if (self.shared_gate and self.shared_d_ff is None) or (self.router_bias and not moe):
            raise SymroofError(f"{where}: shared_gate needs shared_d_ff, router_bias needs "
                               "experts > 1")
        if self.dense_layers != 0 and not moe:
            raise SymroofError(f"{where} dense_layers: needs a mixture of experts (every "
                               "layer of a dense model is dense)")
        _at_most(self.window_layers, self.layers, f"{where}: window_layers "
                 f"{self.window_layers} exceeds layers {self.layers}")
        _at_most(self.dense_layers, self.layers, f"{where}: dense_layers {self.dense_layers} "
                 f"exceeds layers {self.layers}")
        if self.latent is not None and self.kv_heads != self.heads:
            raise SymroofError(f"{where}: latent attention keeps every head (kv_heads = heads)")
        for count in (g.count for g in self.layer_groups):
            if count.is_negative:
                raise SymroofError(f"{where}: window_dense_layers does not fit window_layers "
                                   f"{self.window_layers} and dense_layers {self.dense_layers}")

    # -- derived -----------------------------------------------------------

    @property
    def kv_dim(self) -> sp.Expr:
        """Width of K (and of V): kv_heads * head_dim."""
        return self.kv_heads * self.head_dim

    @property
    def q_dim(self) -> sp.Expr:
        """Width of Q and of the attention output: heads * head_dim."""
        return self.heads * self.head_dim

    @property
    def routed_d_ff(self) -> sp.Expr:
        """Width of each routed expert's MLP (``expert_d_ff``, else ``d_ff``)."""
        return self.d_ff if self.expert_d_ff is None else self.expert_d_ff

    @property
    def routed_bias(self) -> bool:
        """Whether the routed experts' matrices have biases (``expert_bias``, else
        ``mlp_bias``): DeepSeek-V2 biases its dense MLP and shared experts only."""
        return self.mlp_bias if self.expert_bias is None else self.expert_bias

    @property
    def windowed_layers(self) -> sp.Expr:
        """How many layers attend through the window (0 without one)."""
        if self.window is None:
            return _ZERO
        return self.layers if self.window_layers is None else self.window_layers

    @cached_property
    def layer_groups(self) -> tuple[LayerGroup, ...]:
        """The kinds of layer and how many of each: (full | windowed) x (MoE | dense)."""
        moe = self.experts != 1
        wl, dl = self.windowed_layers, self.dense_layers if moe else _ZERO
        wd = self.window_dense_layers
        if wd is None:
            wd = dl if sp.expand(wl - self.layers) == 0 else _ZERO
            if wl != 0 and dl != 0 and sp.expand(wl - self.layers) != 0:
                raise SymroofError(f"model {self.name!r} window_dense_layers: give how many of "
                                   f"the {dl} dense layers are windowed")
        kinds = ((self.layers - wl - dl + wd, False, moe, False), (dl - wd, False, False, True),
                 (wl - wd, True, moe, False), (wd, True, False, True))
        return tuple(LayerGroup(sp.expand(n), w, e, d) for n, w, e, d in kinds
                     if sp.expand(n) != 0)


@dataclass(frozen=True)
class HybridShape(ModelShape):
    """A hybrid model's data: a :class:`ModelShape` whose layers fall into ``groups`` (a
    layer pattern, which must cover every layer) by token mixer and MLP, with the widths of
    the mixers its groups run (:mod:`symroof.workloads.mixers`): ``ssm`` (Mamba-2),
    ``short_conv``, ``mamba1``, ``deltanet``, ``lightning``, ``zamba`` (Zamba2's shared
    blocks); ``attn_output_gate``: sigmoid(x W_g) times attention's output (Qwen3-Next).
    ``symroof.models.hybrid.HybridModel`` is one with the counts; the builders read this.
    """

    ssm: Mamba2 | None = None
    groups: tuple[LayerGroup, ...] = ()
    short_conv: ShortConv | None = None
    mamba1: Mamba1 | None = None
    deltanet: GatedDeltaNet | None = None
    attn_output_gate: bool = False  # sigmoid(x W_g) times attention's output (Qwen3-Next)
    lightning: LightningAttention | None = None
    zamba: SharedBlocks | None = None  # Zamba2's shared transformer blocks

    def __post_init__(self) -> None:
        where = f"model {self.name!r}"
        if isinstance(self.groups, (tuple, list)):
            object.__setattr__(self, "groups", tuple(
                replace(g, count=as_dim(g.count, f"{where} layer pattern count"))
                if isinstance(g, LayerGroup) else g for g in self.groups))
        super().__post_init__()
        if self.ssm is not None and not isinstance(self.ssm, Mamba2):
            raise SymroofError(f"{where} ssm: expected a Mamba2, got {type(self.ssm).__name__}")
        if not isinstance(self.groups, tuple) or not self.groups:
            raise SymroofError(f"{where} layer pattern: expected a tuple of layer groups")
        seen: set[str] = set()
        for grp in self.groups:
            self._check_group(grp, where)
            if grp.prefix in seen:
                raise SymroofError(f"{where} layer pattern: two groups of the kind "
                                   f"{grp.prefix!r} (merge their counts)")
            seen.add(grp.prefix)
        covered = sp.expand(sp.Add(*(grp.count for grp in self.groups)))
        if sp.expand(covered - self.layers) != 0:
            raise SymroofError(f"{where} layer pattern: its groups cover {covered} layers, "
                               f"the model has {self.layers} (num_hidden_layers)")

    def _check_group(self, grp: LayerGroup, where: str) -> None:
        if not isinstance(grp, LayerGroup):
            raise SymroofError(f"{where} layer pattern: expected LayerGroup entries, got "
                               f"{type(grp).__name__}")
        if grp.mixer not in MIXERS:
            raise SymroofError(f"{where} layer pattern mixer {grp.mixer!r}: expected one of "
                               f"{', '.join(MIXERS)}")
        if grp.mixer in ("mamba2", "parallel") and self.ssm is None:
            raise SymroofError(f"{where} ssm: {grp.mixer} layers need the Mamba-2 widths")
        if grp.mixer == "shortconv" and not isinstance(self.short_conv, ShortConv):
            raise SymroofError(f"{where} short_conv: shortconv layers need a ShortConv")
        if grp.mixer == "mamba1" and not isinstance(self.mamba1, Mamba1):
            raise SymroofError(f"{where} mamba1: mamba1 layers need the Mamba-1 widths")
        if grp.mixer == "deltanet" and not isinstance(self.deltanet, GatedDeltaNet):
            raise SymroofError(f"{where} deltanet: deltanet layers need a GatedDeltaNet")
        if grp.mixer == "lightning" and not isinstance(self.lightning, LightningAttention):
            raise SymroofError(f"{where} lightning: lightning layers need a "
                               "LightningAttention")
        if grp.mixer == "zamba":
            self._check_zamba(where)
        if grp.mixer == "none" and not grp.ffn:
            raise SymroofError(f"{where} layer pattern: a layer with neither mixer nor MLP")
        if grp.moe and self.experts == 1:
            raise SymroofError(f"{where} layer pattern: an experts layer needs experts > 1")
        if grp.windowed and self.window is None:
            raise SymroofError(f"{where} layer pattern: a windowed layer needs a window")
        if as_expr(grp.count, f"{where} layer pattern count").is_positive is False:
            raise SymroofError(f"{where} layer pattern: a group of {grp.count} layers")

    def _check_zamba(self, where: str) -> None:
        """Zamba2's hybrid layers: the shared blocks, the Mamba-2 widths, no MLP after."""
        if not isinstance(self.zamba, SharedBlocks):
            raise SymroofError(f"{where} zamba: zamba layers need the shared blocks "
                               "(SharedBlocks)")
        if self.ssm is None and self.mamba1 is None:
            raise SymroofError(f"{where} ssm: zamba layers need the Mamba-2 (or Mamba-1) "
                               "widths")
        if any(g.mixer == "zamba" and g.ffn for g in self.groups):
            raise SymroofError(f"{where} layer pattern: a zamba layer's MLP is in its shared "
                               "block (ffn false)")

    @cached_property
    def layer_groups(self) -> tuple[LayerGroup, ...]:
        """The layer pattern's groups."""
        return self.groups


def _count(value: object, what: str, zero: bool) -> sp.Expr:
    """A dimension, or (``zero``) a count of layers that may be 0."""
    if zero and as_expr(value, what) == 0:
        return _ZERO
    return as_dim(value, what)


def _divides(small: sp.Expr, big: sp.Expr, message: str, le: bool = False) -> None:
    if small.is_number and big.is_number:
        ok = small <= big if le else (big % small == 0)
        if not ok:
            raise SymroofError(message)


def _at_most(small: sp.Expr | None, big: sp.Expr, message: str) -> None:
    if small is not None and (small - big).is_positive:
        raise SymroofError(message)

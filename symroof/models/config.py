"""Transformer model descriptions: shapes, attention span, MLP kind, norms and bytes per
tensor kind.

Every field may be a symbol, so the symbolic model the seeds reason about and a preset
with published numbers are the same description. Beyond the Llama shape a description
says which layers attend through a sliding window (``window``, ``window_layers``), how
its keys and values are compressed (``latent``: multi-head latent attention), and how a
mixture of experts is built (routed expert width, shared experts, dense layers).

>>> from symroof.symbols import L, D, H
>>> m = transformer(layers=L, d_model=D, heads=H, d_ff=4 * D)
>>> m.params
12*D**2*L
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from functools import cached_property

import sympy as sp

from symroof.errors import SymroofError
from symroof.ir import as_dim, as_expr
from symroof.models.latent import LatentAttention
from symroof.options import Activation, MlpKind, Norm, Positions, QkNorm, WindowCache, option
from symroof.precision import bytes_per_value
from symroof.symbols import b as _b
from symroof.workloads import builder as widths
from symroof.workloads.layers import LayerGroup, kv_cache_tensors, weight_tensors

__all__ = ["TransformerModel", "transformer", "LatentAttention"]

_ZERO = sp.Integer(0)


@dataclass(frozen=True)
class TransformerModel:
    """A decoder-only transformer. Build with :func:`transformer` or a preset.

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
                  "router_bias", "post_norms", "sinks", "norm_weight", "parallel"):
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
        for f, needs in (("window_layers", "a window"), ("window_dense_layers", "a window")):
            if getattr(self, f) is not None and self.window is None:
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
        return widths.kv_dim(self)

    @property
    def q_dim(self) -> sp.Expr:
        """Width of Q and of the attention output: heads * head_dim."""
        return widths.q_dim(self)

    @property
    def routed_d_ff(self) -> sp.Expr:
        """Width of each routed expert's MLP (``expert_d_ff``, else ``d_ff``)."""
        return widths.routed_d_ff(self)

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

    @cached_property
    def kv_bytes_per_token(self) -> sp.Expr:
        """KV-cache bytes per token of context below any window, summed over the kv_cache
        tensors of a decode graph with one sequence and one position: 2 (K and V) *
        layers * kv_dim * kv_bytes (latent attention: layers * (d_c + d_r) * kv_bytes)."""
        return self.kv_cache_bytes(1)

    def kv_cache_bytes(self, context: object,
                       window_cache: WindowCache | str = WindowCache.WINDOW) -> sp.Expr:
        """KV-cache bytes of one sequence at ``context`` positions: a full layer holds all
        of them, a windowed layer at most ``window`` (a rolling buffer; with
        ``window_cache="window_minus_1"``, transformers' dynamic cache, at most W - 1: it
        joins the new position to them for the step).

        >>> from symroof.models import transformer
        >>> m = transformer(layers=2, d_model=8, heads=2, window=4)
        >>> m.kv_cache_bytes(100), m.kv_cache_bytes(100, "window_minus_1")
        (128*b, 96*b)

        >>> from symroof.models import get
        >>> from symroof.symbols import b
        >>> get("mistral-7b").kv_cache_bytes(32768).subs(b, 2) / 2**30   # 4096 kept
        1/2
        """
        m = self.as_cached(window_cache)
        return sp.expand(sp.Add(*(count * t.nbytes
                                  for t, count in kv_cache_tensors(m, context))))

    def as_cached(self, window_cache: WindowCache | str = WindowCache.WINDOW
                  ) -> TransformerModel:
        """The model whose windows are the positions a windowed layer's KV buffer holds
        under ``window_cache`` (itself for ``"window"`` or without a window; a window of
        W - 1 for ``"window_minus_1"``): what a memory count reads. Its attention
        arithmetic is not the model's (the step also attends the new position).

        >>> from symroof.models import get
        >>> get("mistral-7b").as_cached("window_minus_1").window
        4095
        """
        mode = option(WindowCache, window_cache, "window_cache")
        if mode is WindowCache.WINDOW or self.window is None:
            return self
        if self.window == 1:
            raise SymroofError(f"model {self.name!r} window_cache: a window of 1 keeps "
                               "no position (W - 1 = 0)")
        return replace(self, window=self.window - 1)

    def count_params(self, *, active: bool = False, input_embedding: bool = True) -> sp.Expr:
        """Parameters, summed over the weight tensors of the model's graph.

        ``active``: those one token touches, each routed expert weight (rank 3, experts
        first) at ``experts_per_token / experts`` of it; shared experts, dense layers,
        attention and embeddings whole. ``input_embedding=False`` leaves out the input
        embedding table and a learned position table (a tied table, which is also the LM
        head, stays): the convention of gpt-oss's published active counts.
        """
        total = []
        for t, count in weight_tensors(self):
            if not input_embedding and (t.name == "pos_embed" or (
                    t.name == "embed" and not self.tied_embeddings)):
                continue
            share = self.experts_per_token / self.experts if active and len(t.shape) == 3 else 1
            total.append(count * t.numel * share)
        return sp.expand(sp.Add(*total))

    @cached_property
    def params(self) -> sp.Expr:
        """Parameter count, summed over the weight tensors of the model's graph."""
        return self.count_params()

    @cached_property
    def active_params(self) -> sp.Expr:
        """Parameters one token touches: routed experts at experts_per_token of experts,
        everything else whole (input embedding included; see :meth:`count_params`)."""
        return self.count_params(active=True)

    @property
    def weight_bytes_total(self) -> sp.Expr:
        """Bytes of all weights: params * weight_bytes."""
        return self.params * self.weight_bytes

    # -- variants ------------------------------------------------------------

    def with_precision(self, *, weights: str | None = None, kv_cache: str | None = None,
                       activations: str | None = None) -> TransformerModel:
        """The same model with other number formats per tensor kind (names: bf16, fp8, int4...).

        >>> from symroof.models import get
        >>> get("llama-3-8b").with_precision(weights="int4", kv_cache="fp8").kv_bytes
        1
        """
        changes: dict[str, sp.Expr] = {}
        for field_name, prec in (("weight_bytes", weights), ("kv_bytes", kv_cache),
                                 ("activation_bytes", activations)):
            if prec is not None:
                changes[field_name] = bytes_per_value(prec)
        return replace(self, **changes)

    def with_bytes(self, value: object) -> TransformerModel:
        """The same model with one bytes-per-value (number or symbol) for every kind."""
        v = as_expr(value, f"model {self.name!r} bytes")
        return replace(self, weight_bytes=v, activation_bytes=v, kv_bytes=v)

    def replace(self, **changes: object) -> TransformerModel:
        """The same model with fields changed (validated again)."""
        known = {f.name for f in fields(self)}
        unknown = set(changes) - known
        if unknown:
            raise SymroofError(f"model {self.name!r}: unknown field(s) {', '.join(sorted(unknown))}")
        return replace(self, **changes)  # type: ignore[arg-type]


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


def transformer(*, layers: object, d_model: object, heads: object, kv_heads: object | None = None,
                head_dim: object | None = None, d_ff: object | None = None,
                vocab: object | None = None, mlp: MlpKind | str = MlpKind.PLAIN,
                activation: Activation | str | None = None, norm: Norm | str | None = None,
                tied_embeddings: bool = False, biases: bool = False,
                qkv_bias: bool = False, positions: Positions | str | None = None,
                max_positions: object | None = None, experts: object = 1,
                experts_per_token: object = 1, bytes_per_value: object = _b,
                name: str = "transformer", window: object | None = None,
                window_layers: object | None = None, expert_d_ff: object | None = None,
                shared_d_ff: object | None = None, shared_gate: bool = False,
                dense_layers: object = 0, window_dense_layers: object | None = None,
                router_bias: bool = False, qk_norm: QkNorm | str | None = None,
                post_norms: bool = False, sinks: bool = False,
                latent: LatentAttention | None = None, attention_dropout: object = 0,
                hidden_dropout: object = 0, dropout_mask_bytes: object = 1) -> TransformerModel:
    """A transformer description; defaults are the seeds' model (MHA, d_ff = 4D, plain MLP).

    ``head_dim`` defaults to d_model/heads (with ``latent``, to its d_n + d_r),
    ``kv_heads`` to heads (multi-head attention); ``biases=True`` gives every linear layer
    a bias, ``qkv_bias=True`` only Q, K and V. ``window`` with ``window_layers`` (default
    all) gives layers a sliding window; ``experts`` with ``expert_d_ff``, ``shared_d_ff``
    and ``dense_layers`` a mixture of experts (see :class:`TransformerModel`).
    ``attention_dropout`` and ``hidden_dropout`` (probabilities, 0: none) add dropout to
    training graphs, each with a mask of ``dropout_mask_bytes`` per value.
    """
    d = as_dim(d_model, f"model {name!r} d_model")
    h = as_dim(heads, f"model {name!r} heads")
    if head_dim is not None:
        hd: object = head_dim
    elif latent is not None:
        hd = latent.nope_dim + latent.rope_dim
    else:
        hd = d / h
    kind = option(MlpKind, mlp, f"model {name!r} mlp")
    return TransformerModel(
        name=name, layers=layers, d_model=d, heads=h,
        kv_heads=h if kv_heads is None else kv_heads, head_dim=hd,
        d_ff=4 * d if d_ff is None else d_ff, vocab=vocab, mlp=kind,
        activation=option(Activation, activation or ("silu" if kind is MlpKind.GATED else "gelu"),
                          f"model {name!r} activation"),
        norm=None if norm is None else option(Norm, norm, f"model {name!r} norm"),
        tied_embeddings=tied_embeddings, qkv_bias=biases or qkv_bias, o_bias=biases,
        mlp_bias=biases,
        positions=None if positions is None else option(Positions, positions,
                                                        f"model {name!r} positions"),
        max_positions=max_positions, experts=experts, experts_per_token=experts_per_token,
        weight_bytes=bytes_per_value, activation_bytes=bytes_per_value,
        kv_bytes=bytes_per_value, window=window, window_layers=window_layers,
        expert_d_ff=expert_d_ff, shared_d_ff=shared_d_ff, shared_gate=shared_gate,
        dense_layers=dense_layers, window_dense_layers=window_dense_layers,
        router_bias=router_bias, qk_norm=None if qk_norm is None else option(
            QkNorm, qk_norm, f"model {name!r} qk_norm"),
        post_norms=post_norms, sinks=sinks, latent=latent,
        attention_dropout=attention_dropout, hidden_dropout=hidden_dropout,
        dropout_mask_bytes=dropout_mask_bytes)

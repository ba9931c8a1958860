"""Transformer model descriptions: shapes, MLP kind, norms and bytes per tensor kind.

Every field may be a symbol, so the symbolic model the seeds reason about and a preset
with published numbers are the same description.

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
from symroof.ir import Kind, as_dim, as_expr
from symroof.precision import bytes_per_value
from symroof.symbols import b as _b

__all__ = ["TransformerModel", "transformer", "MLP_KINDS", "NORMS", "ACTIVATIONS", "POSITIONS"]

MLP_KINDS = ("plain", "gated")              # 2 matrices (GELU MLP) or 3 (SwiGLU)
NORMS = (None, "layernorm", "rmsnorm")      # None: norms not modelled (the seeds' 12LD^2)
ACTIVATIONS = ("gelu", "silu", "relu")
POSITIONS = (None, "learned", "rotary")     # learned: a table of max_positions x D weights


@dataclass(frozen=True)
class TransformerModel:
    """A decoder-only transformer. Build with :func:`transformer` or a preset.

    Bytes per value are per tensor kind: ``weight_bytes``, ``activation_bytes`` and
    ``kv_bytes`` (the symbol ``b`` for all three unless set).
    """

    name: str
    layers: sp.Expr
    d_model: sp.Expr
    heads: sp.Expr
    kv_heads: sp.Expr
    head_dim: sp.Expr
    d_ff: sp.Expr
    vocab: sp.Expr | None = None
    mlp: str = "plain"
    activation: str = "gelu"
    norm: str | None = None
    tied_embeddings: bool = False
    qkv_bias: bool = False        # Q, K, V projections have biases (GPT-2, Qwen2)
    o_bias: bool = False          # the attention output projection has a bias (GPT-2)
    mlp_bias: bool = False        # the MLP matrices have biases (GPT-2)
    positions: str | None = None
    max_positions: sp.Expr | None = None
    experts: sp.Expr = sp.Integer(1)            # MLP experts per layer (MoE)
    experts_per_token: sp.Expr = sp.Integer(1)  # experts each token is routed to
    weight_bytes: sp.Expr = _b
    activation_bytes: sp.Expr = _b
    kv_bytes: sp.Expr = _b

    def __post_init__(self) -> None:
        where = f"model {self.name!r}"
        for f in ("layers", "d_model", "heads", "kv_heads", "head_dim", "d_ff", "experts",
                  "experts_per_token"):
            object.__setattr__(self, f, as_dim(getattr(self, f), f"{where} {f}"))
        for f in ("vocab", "max_positions"):
            if getattr(self, f) is not None:
                object.__setattr__(self, f, as_dim(getattr(self, f), f"{where} {f}"))
        for f in ("weight_bytes", "activation_bytes", "kv_bytes"):
            v = as_expr(getattr(self, f), f"{where} {f}")
            if v.is_positive is False or (v.is_number and not v.is_positive):
                raise SymroofError(f"{where} {f}: expected positive bytes per value, got {v}")
            object.__setattr__(self, f, v)
        for f, allowed in (("mlp", MLP_KINDS), ("norm", NORMS), ("activation", ACTIVATIONS),
                           ("positions", POSITIONS)):
            if getattr(self, f) not in allowed:
                raise SymroofError(f"{where} {f}: expected one of "
                                   f"{', '.join(map(str, allowed))}, got {getattr(self, f)!r}")
        _divides(self.kv_heads, self.heads, f"{where}: kv_heads {self.kv_heads} must divide "
                 f"heads {self.heads}")
        _divides(self.experts_per_token, self.experts, f"{where}: experts_per_token "
                 f"{self.experts_per_token} exceeds experts {self.experts}", le=True)
        if self.positions == "learned" and self.max_positions is None:
            raise SymroofError(f"{where} max_positions: required with learned positions")
        if self.tied_embeddings and self.vocab is None:
            raise SymroofError(f"{where} tied_embeddings: needs a vocab")

    # -- derived -----------------------------------------------------------

    @property
    def kv_dim(self) -> sp.Expr:
        """Width of K (and of V): kv_heads * head_dim."""
        return self.kv_heads * self.head_dim

    @property
    def q_dim(self) -> sp.Expr:
        """Width of Q and of the attention output: heads * head_dim."""
        return self.heads * self.head_dim

    @cached_property
    def kv_bytes_per_token(self) -> sp.Expr:
        """KV-cache bytes per token of context, summed over the kv_cache tensors of a decode
        graph with one sequence and one position: 2 (K and V) * layers * kv_dim * kv_bytes."""
        from symroof.workloads.transformer import forward_graph

        g = forward_graph(self, batch=1, q_len=1, kv_len=1, decode=True, logits="none")
        return sp.expand(sum((g.count(t) * t.nbytes for t in g.inputs
                              if t.kind == Kind.KV_CACHE), sp.Integer(0)))

    @cached_property
    def params(self) -> sp.Expr:
        """Parameter count, summed over the weight tensors of the model's graph."""
        from symroof.workloads.transformer import weight_tensors

        return sp.expand(sum((count * t.numel for t, count in weight_tensors(self)), sp.Integer(0)))

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
        return replace(self, **changes)  # type: ignore[arg-type]

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

    def describe(self) -> str:
        """One line: the shape that matters."""
        attn = "MHA" if self.kv_heads == self.heads else "MQA" if self.kv_heads == 1 else "GQA"
        return (f"{self.name}: L={self.layers} D={self.d_model} heads={self.heads} "
                f"kv_heads={self.kv_heads} ({attn}) head_dim={self.head_dim} d_ff={self.d_ff} "
                f"mlp={self.mlp} vocab={self.vocab}")


def _divides(small: sp.Expr, big: sp.Expr, message: str, le: bool = False) -> None:
    if small.is_number and big.is_number:
        ok = small <= big if le else (big % small == 0)
        if not ok:
            raise SymroofError(message)


def transformer(*, layers: object, d_model: object, heads: object, kv_heads: object | None = None,
                head_dim: object | None = None, d_ff: object | None = None,
                vocab: object | None = None, mlp: str = "plain", activation: str | None = None,
                norm: str | None = None, tied_embeddings: bool = False, biases: bool = False,
                qkv_bias: bool = False, positions: str | None = None,
                max_positions: object | None = None, experts: object = 1,
                experts_per_token: object = 1, bytes_per_value: object = _b,
                name: str = "transformer") -> TransformerModel:
    """A transformer description; defaults are the seeds' model (MHA, d_ff = 4D, plain MLP).

    ``head_dim`` defaults to d_model/heads, ``kv_heads`` to heads (multi-head attention);
    ``biases=True`` gives every linear layer a bias, ``qkv_bias=True`` only Q, K and V.
    """
    d = as_dim(d_model, f"model {name!r} d_model")
    h = as_dim(heads, f"model {name!r} heads")
    hd = d / h if head_dim is None else head_dim
    return TransformerModel(
        name=name, layers=layers, d_model=d, heads=h,  # type: ignore[arg-type]
        kv_heads=h if kv_heads is None else kv_heads, head_dim=hd,  # type: ignore[arg-type]
        d_ff=4 * d if d_ff is None else d_ff, vocab=vocab, mlp=mlp,  # type: ignore[arg-type]
        activation=activation or ("silu" if mlp == "gated" else "gelu"), norm=norm,
        tied_embeddings=tied_embeddings, qkv_bias=biases or qkv_bias, o_bias=biases,
        mlp_bias=biases, positions=positions,
        max_positions=max_positions, experts=experts, experts_per_token=experts_per_token,  # type: ignore[arg-type]
        weight_bytes=bytes_per_value, activation_bytes=bytes_per_value,  # type: ignore[arg-type]
        kv_bytes=bytes_per_value)  # type: ignore[arg-type]

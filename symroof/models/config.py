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
from symroof.ir import as_dim, as_expr
from symroof.options import Activation, MlpKind, Norm, Positions, option
from symroof.precision import bytes_per_value
from symroof.symbols import b as _b
from symroof.workloads.layers import kv_cache_tensors, weight_tensors

__all__ = ["TransformerModel", "transformer"]


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
    mlp: MlpKind = MlpKind.PLAIN
    activation: Activation = Activation.GELU
    norm: Norm | None = None
    tied_embeddings: bool = False
    qkv_bias: bool = False        # Q, K, V projections have biases (GPT-2, Qwen2)
    o_bias: bool = False          # the attention output projection has a bias (GPT-2)
    mlp_bias: bool = False        # the MLP matrices have biases (GPT-2)
    positions: Positions | None = None
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
        for f, enum, optional in (("mlp", MlpKind, False), ("activation", Activation, False),
                                  ("norm", Norm, True), ("positions", Positions, True)):
            value = getattr(self, f)
            if not (optional and value is None):
                object.__setattr__(self, f, option(enum, value, f"{where} {f}"))
        for f in ("tied_embeddings", "qkv_bias", "o_bias", "mlp_bias"):
            if not isinstance(getattr(self, f), bool):
                raise SymroofError(f"{where} {f}: expected true or false, got "
                                   f"{getattr(self, f)!r}")
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
        return sp.expand(sp.Add(*(count * t.nbytes for t, count in kv_cache_tensors(self))))

    @cached_property
    def params(self) -> sp.Expr:
        """Parameter count, summed over the weight tensors of the model's graph."""
        return sp.expand(sp.Add(*(count * t.numel for t, count in weight_tensors(self))))

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


def _divides(small: sp.Expr, big: sp.Expr, message: str, le: bool = False) -> None:
    if small.is_number and big.is_number:
        ok = small <= big if le else (big % small == 0)
        if not ok:
            raise SymroofError(message)


def transformer(*, layers: object, d_model: object, heads: object, kv_heads: object | None = None,
                head_dim: object | None = None, d_ff: object | None = None,
                vocab: object | None = None, mlp: MlpKind | str = MlpKind.PLAIN,
                activation: Activation | str | None = None, norm: Norm | str | None = None,
                tied_embeddings: bool = False, biases: bool = False,
                qkv_bias: bool = False, positions: Positions | str | None = None,
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
        kv_bytes=bytes_per_value)

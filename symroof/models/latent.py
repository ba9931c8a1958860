"""Multi-head latent attention's widths (DeepSeek-V2, DeepSeek-V3), as plain data.

A token's keys and values are cached as a latent of ``kv_rank`` values plus a rotary key
of ``rope_dim`` values that all heads share; each head's query and key have
``nope_dim + rope_dim`` values, its value ``v_dim``; the query comes through a low-rank
path of ``q_rank`` (None: one projection, as DeepSeek-V2-Lite).

>>> mla = LatentAttention(kv_rank=512, rope_dim=64, nope_dim=128, v_dim=128, q_rank=1536)
>>> mla.cached_per_token                  # d_c + d_r, whatever the heads
576
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

from symroof.ir import as_dim

__all__ = ["LatentAttention"]


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

"""Multi-head latent attention's widths (DeepSeek-V2, DeepSeek-V3), as plain data
(:class:`symroof.workloads.shape.LatentAttention`).

A token's keys and values are cached as a latent of ``kv_rank`` values plus a rotary key
of ``rope_dim`` values that all heads share; each head's query and key have
``nope_dim + rope_dim`` values, its value ``v_dim``; the query comes through a low-rank
path of ``q_rank`` (None: one projection, as DeepSeek-V2-Lite).

>>> mla = LatentAttention(kv_rank=512, rope_dim=64, nope_dim=128, v_dim=128, q_rank=1536)
>>> mla.cached_per_token                  # d_c + d_r, whatever the heads
576
"""

from __future__ import annotations

# The class lives below the workloads, beside the rest of a model's data (the builders
# read it); this is its public path.
from symroof.workloads.shape import LatentAttention

__all__ = ["LatentAttention"]

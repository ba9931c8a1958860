"""I/O lower bounds and the traffic of known schedules, as formulas in the fast-memory size.

- GEMM: any schedule of the ``M N K`` products with a fast memory of ``C`` words moves
  at least ``2 M N K / sqrt(C)`` words (Smith, Lowery, Langou, van de Geijn, "A Tight
  I/O Lower Bound for Matrix Multiplication", 2019, Theorem 1, leading term; the
  Hong-Kung family's earlier constants are smaller). A square output-stationary tile
  ``T = sqrt(C)`` attains ``2 M N K / T`` words: the tiled schedule meets the bound.
- Attention: FlashAttention makes ``Theta(S^2 d_h^2 / M)`` HBM accesses with on-chip
  memory of ``M`` elements, the standard algorithm ``Theta(S d_h + S^2)`` (Dao et al.,
  "FlashAttention", 2022, Theorem 2); the count below follows their Algorithm 1 with
  block sizes ``B_c = M/(4 d_h)`` and ``B_r = min(M/(4 d_h), d_h)``.

>>> from symroof.symbols import M, N, K, C
>>> gemm_io_lower_bound(M, N, K, C)
2*K*M*N/sqrt(C)
"""

from __future__ import annotations

import sympy as sp

from symroof.ir import as_dim, as_expr

__all__ = ["gemm_io_lower_bound", "flash_attention_hbm_accesses",
           "standard_attention_hbm_accesses"]


def gemm_io_lower_bound(m: object, n: object, k: object, capacity_words: object) -> sp.Expr:
    """Words any GEMM schedule moves with ``capacity_words`` of fast memory (leading term)."""
    mm, nn, kk = as_dim(m, "M"), as_dim(n, "N"), as_dim(k, "K")
    c = as_expr(capacity_words, "capacity")
    return 2 * mm * nn * kk / sp.sqrt(c)


def flash_attention_hbm_accesses(seq: object, head_dim: object, sram: object) -> sp.Expr:
    """Elements FlashAttention (Algorithm 1) reads and writes in HBM, per head.

    K and V are read once (``2 S d``); for each of the ``T_c = S / B_c`` key blocks, Q and
    O are read and O written (``3 S d`` each pass, plus the row statistics, ignored). With
    ``B_c = M / (4 d)`` this is ``2 S d + 12 S^2 d^2 / M``: Theta(S^2 d^2 / M) when
    ``M < S d`` (symbolically this assumes B_c divides S; numbers take whole passes). ``short_blocks`` is the B_r = d_h branch (M >= 4 d^2), not needed here.
    """
    s, d = as_dim(seq, "S"), as_dim(head_dim, "d_h")
    m = as_expr(sram, "M")
    block_c = m / (4 * d)
    passes = s / block_c
    if passes.is_number:  # whole passes, at least one (M > 4 S d holds all of K, V)
        passes = sp.Max(1, sp.ceiling(passes))
    return 2 * s * d + 3 * s * d * passes


def standard_attention_hbm_accesses(seq: object, head_dim: object) -> sp.Expr:
    """Elements the textbook kernels move per head: Q, K, V read, O written (4 S d), the
    S x S scores written and read back and the probabilities written and read: 4 S^2."""
    s, d = as_dim(seq, "S"), as_dim(head_dim, "d_h")
    return 4 * s * d + 4 * s ** 2

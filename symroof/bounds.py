"""I/O lower bounds, the traffic of known schedules, and tile sizing, as formulas in the
fast-memory size.

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

from symroof.errors import SymroofError
from symroof.ir import as_dim, as_expr
from symroof.solve import crossover

__all__ = ["gemm_io_lower_bound", "flash_attention_hbm_accesses",
           "standard_attention_hbm_accesses", "inner_loop_intensity", "tile_for_ridge",
           "largest_square_tile", "waves"]


def gemm_io_lower_bound(m: object, n: object, k: object, capacity_words: object) -> sp.Expr:
    """Words any GEMM schedule moves with ``capacity_words`` of fast memory (leading term)."""
    mm, nn, kk = as_dim(m, "M"), as_dim(n, "N"), as_dim(k, "K")
    c = as_dim(capacity_words, "capacity_words")  # a number of words: a positive integer
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


# ---------------------------------------------------------------------------
# tile sizing (the seed's tiling argument)


def inner_loop_intensity(tile_m: object, tile_n: object, b: object) -> sp.Expr:
    """Intensity of the inner loop of an output-stationary GEMM tile t_m x t_n.

    Each K step loads a t_m column slice of A and a t_n row slice of B (``(t_m+t_n) b``
    bytes) and feeds ``t_m t_n`` MACs (``2 t_m t_n`` FLOPs): ``2 t_m t_n / ((t_m+t_n) b)``,
    ``T/b`` for a square tile.
    """
    tm, tn = as_dim(tile_m, "tile_m"), as_dim(tile_n, "tile_n")
    return sp.factor_terms(sp.cancel(2 * tm * tn / ((tm + tn) * b)))


def tile_for_ridge(ridge: object, b: object) -> sp.Expr:
    """The smallest square tile whose inner loop clears ``ridge``: T/b >= ridge, T = ridge*b."""
    t = sp.Dummy("T", positive=True, integer=True)
    roots = crossover(inner_loop_intensity(t, t, b), ridge, t)
    if len(roots) != 1:
        raise SymroofError(f"tile_for_ridge: no unique tile for ridge {ridge}")
    value = roots[0].value
    return sp.ceiling(value) if value.is_number else value  # a whole tile


def largest_square_tile(capacity: object, *, accumulator_bytes: object = 4, b: object = 2,
                        staging: bool = True) -> sp.Expr:
    """The largest T whose T x T accumulators (plus one K-slice of A and B, 2 T b bytes,
    when ``staging``) fit in ``capacity`` bytes (floored when numeric)."""
    t = sp.Dummy("T", positive=True)
    need = t ** 2 * accumulator_bytes + (2 * t * b if staging else 0)
    roots = crossover(need, capacity, t)  # a quadratic with positive terms: one positive root
    if len(roots) != 1:
        raise SymroofError(f"largest_square_tile: nothing fits in {capacity} bytes")
    root = roots[0].value
    if not root.is_number:
        return root
    if root < 1:
        raise SymroofError(f"largest_square_tile: not even a 1 x 1 tile fits in {capacity} bytes")
    return sp.floor(root)


def waves(tiles: object, units: object) -> sp.Expr:
    """Waves of tiles over ``units`` parallel units (SMs): ceil(tiles / units).

    Wave quantization for numbers; keep it out of anything passed to a solver.
    """
    return sp.ceiling(as_dim(tiles, "waves tiles") / as_dim(units, "waves units"))

"""Single-kernel workloads: GEMM, GEMV, elementwise, and convolution lowered to GEMM.

>>> from symroof.symbols import M, N, K
>>> gemm(M, N, K).intensity
2*K*M*N/(b*(K*M + K*N + M*N))
"""

from __future__ import annotations

import sympy as sp

from symroof.analysis import Analysis, analyze
from symroof.errors import SymroofError, shown
from symroof.ir import Graph, OpGroup, Pattern, Step, as_dim, as_expr
from symroof.options import FlopCount, Lowering, option, renamed
from symroof.passes.fuse import Fuse
from symroof.passes.pipeline import Pipeline
from symroof.symbols import b as _b

__all__ = ["gemm", "gemv", "elementwise", "conv2d", "IMPLICIT_IM2COL"]

#: Implicit im2col: the data movement that lays out a GEMM's operand, done on the fly
#: inside the GEMM (the lowered matrix never leaves the chip).
IMPLICIT_IM2COL = Pattern("implicit im2col", head=Step(OpGroup.DATA_MOVEMENT),
                          tail=Step(OpGroup.CONTRACTION), heads=1, operand=None)


@renamed(flops="flop_count")
def gemm(M: object, N: object, K: object, *, b: object = _b, batch: object = 1,
         flop_count: FlopCount | str = FlopCount.TWO_PER_MAC) -> Analysis:
    """``C[M,N] = A[M,K] @ B[K,N]`` with every operand crossing the boundary once.

    ``batch`` > 1 makes it a batched GEMM over independent operands.
    """
    g = Graph("gemm")
    lead = () if as_dim(batch, "gemm batch") == 1 else (batch,)
    a = g.input("A", (*lead, M, K), bytes_per_value=b)
    w = g.weight("B", (*lead, K, N), bytes_per_value=b)
    g.output(g.gemm(a, w, name="C"))
    return analyze(g, flop_count=flop_count)


@renamed(flops="flop_count")
def gemv(N: object, K: object, *, b: object = _b,
         flop_count: FlopCount | str = FlopCount.TWO_PER_MAC) -> Analysis:
    """A matrix-vector product: the GEMM with ``M = 1`` (one input vector)."""
    return gemm(1, N, K, b=b, flop_count=flop_count)


def elementwise(n: object, *, flops_per_element: object = 1, inputs: int = 1,
                b: object = _b) -> Analysis:
    """``n`` outputs from ``inputs`` aligned inputs: each input read once, output written once.

    >>> from symroof.symbols import n
    >>> elementwise(n).intensity   # ReLU: 1 FLOP per element
    1/(2*b)
    """
    if not isinstance(inputs, int) or isinstance(inputs, bool) or inputs < 1:
        raise SymroofError(f"elementwise inputs: expected a positive integer, got {inputs!r}")
    g = Graph("elementwise")
    xs = [g.input(f"x{i}" if inputs > 1 else "x", (n,), bytes_per_value=b) for i in range(inputs)]
    g.output(g.elementwise(*xs, name="y", flops_per_element=flops_per_element))
    return analyze(g)


def _out_size(size: sp.Expr, kernel: sp.Expr, stride: sp.Expr, padding: sp.Expr,
              what: str, assumptions: list[str]) -> sp.Expr:
    span = size + 2 * padding - kernel
    if span.is_number and span < 0:
        raise SymroofError(f"conv2d {what}: kernel {shown(kernel)} is larger than the padded "
                           f"input {shown(size + 2 * padding)}")
    if span.is_number and stride.is_number:
        return sp.floor(span / stride) + 1  # numbers: PyTorch's output size
    if stride != 1:
        assumptions.append(f"stride {stride} divides {span} exactly")
    return span / stride + 1


@renamed(flops="flop_count")
def conv2d(batch: object, in_channels: object, height: object, width: object,
           out_channels: object, kernel: tuple[object, object] | object, *,
           stride: object = 1, padding: object = 0, lowering: Lowering | str = Lowering.EXPLICIT,
           b: object = _b, flop_count: FlopCount | str = FlopCount.TWO_PER_MAC) -> Analysis:
    """A 2-D convolution lowered through im2col to ``W[K, CRS] @ X_col[CRS, NPQ]``.

    ``lowering="explicit"`` writes the duplicated ``CRS x NPQ`` matrix to memory and reads
    it back; ``"implicit"`` builds it on the fly (the same graph with that matrix kept on
    chip), so only the input, the filters and the output cross the boundary.
    """
    low = option(Lowering, lowering, "conv2d lowering")
    if isinstance(kernel, (tuple, list)):
        if len(kernel) != 2:
            raise SymroofError(f"conv2d kernel: expected one size or a (height, width) pair, "
                               f"got {len(kernel)} values {shown(kernel)}")
        r, s = kernel
    else:
        r, s = kernel, kernel
    n_, c_, h_, w_, k_, r_, s_ = (as_dim(v, f"conv2d {f}") for v, f in zip(
        (batch, in_channels, height, width, out_channels, r, s),
        ("batch", "in_channels", "height", "width", "out_channels", "kernel height",
         "kernel width")))
    st, pad = as_dim(stride, "conv2d stride"), as_expr(padding, "conv2d padding")
    if pad.is_integer is False or pad.is_negative or (pad.is_number and not pad.is_integer) \
            or (not pad.is_number and pad.is_nonnegative is not True):
        raise SymroofError(f"conv2d padding: expected a non-negative integer, got {pad}")
    assumptions: list[str] = []
    p_ = _out_size(h_, r_, st, pad, "height", assumptions)
    q_ = _out_size(w_, s_, st, pad, "width", assumptions)
    g = Graph(f"conv2d-{low.value}")
    x = g.input("X", (n_, c_, h_, w_), bytes_per_value=b)
    f = g.weight("W", (k_, c_ * r_ * s_), bytes_per_value=b)
    col = g.move(x, name="im2col", shape=(c_ * r_ * s_, n_ * p_ * q_))
    g.output(g.gemm(f, col, name="Y"))
    if assumptions:   # what the output sizes assume, in the graph's provenance
        g.record(assumptions=(*g.provenance.assumptions, *assumptions))
    if low is Lowering.IMPLICIT:  # im2col on the fly: the lowering fused into the GEMM
        g = Pipeline("conv2d", (Fuse((), patterns=(IMPLICIT_IM2COL,)),)).apply(g)
    return analyze(g, flop_count=flop_count)

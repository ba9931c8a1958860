"""Brute-force counters: explicit Python loop nests that really compute, and count.

Each kernel here performs the computation on concrete values (random integers, so the
results can be checked exactly against a naive reference) while a :class:`Counter`
records every arithmetic operation and every element that moves between "memory" (the
:class:`Memory` arrays) and the "chip" (Python locals). Traffic is compulsory traffic:
an element that is read (or written) many times crosses the boundary once, so the
counter keeps *sets* of distinct ``(array, index)`` pairs.

These counters share no code with symroof; they are the independent second computation
that symroof's cost rules are compared against.

>>> c = matmul([[1, 2], [3, 4]], [[5, 6], [7, 8]])
>>> c.result
[[19, 22], [43, 50]]
>>> c.counter.mults, c.counter.adds, c.counter.macs
(8, 4, 8)
>>> c.counter.elements_read("A"), c.counter.elements_read("B"), c.counter.elements_written("C")
(4, 4, 4)
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from fractions import Fraction

__all__ = [
    "Counter", "Memory", "Run", "matmul", "naive_matmul", "relu", "conv2d_im2col",
    "naive_conv2d", "random_matrix", "random_tensor4",
]


@dataclass
class Counter:
    """What one run of a loop nest did."""

    mults: int = 0        # scalar multiplies
    adds: int = 0         # scalar adds (the first product of a dot product needs none)
    macs: int = 0         # multiply-accumulates: one per (output, k) pair
    other: int = 0        # other scalar ops (a ReLU's max)
    reads: set[tuple[str, tuple[int, ...]]] = field(default_factory=set)    # distinct
    writes: set[tuple[str, tuple[int, ...]]] = field(default_factory=set)   # distinct
    load_events: int = 0  # every load, repeated ones included (not compulsory traffic)

    def flops(self, convention: str) -> int:
        """FLOPs under a convention: 'exact' (mults + adds + other), 'two_per_mac', 'one_per_mac'."""
        if convention == "exact":
            return self.mults + self.adds + self.other
        if convention == "two_per_mac":
            return 2 * self.macs + self.other
        if convention == "one_per_mac":
            return self.macs + self.other
        raise ValueError(f"unknown convention {convention!r}")

    def elements_read(self, array: str | None = None) -> int:
        return sum(1 for a, _ in self.reads if array is None or a == array)

    def elements_written(self, array: str | None = None) -> int:
        return sum(1 for a, _ in self.writes if array is None or a == array)

    def bytes(self, bytes_per_value: int | Fraction, arrays: set[str] | None = None) -> Fraction:
        """Compulsory traffic in bytes: distinct elements read plus distinct elements written."""
        chosen = [x for x in (*self.reads, *self.writes) if arrays is None or x[0] in arrays]
        return Fraction(len(chosen)) * Fraction(bytes_per_value)


class Memory:
    """Named arrays in off-chip memory; every access is recorded in a Counter."""

    def __init__(self, counter: Counter, **arrays: dict[tuple[int, ...], int]) -> None:
        self.counter = counter
        self.arrays = {k: dict(v) for k, v in arrays.items()}

    def load(self, name: str, index: tuple[int, ...]) -> int:
        self.counter.reads.add((name, index))
        self.counter.load_events += 1
        return self.arrays[name][index]

    def store(self, name: str, index: tuple[int, ...], value: int) -> None:
        self.counter.writes.add((name, index))
        self.arrays.setdefault(name, {})[index] = value


@dataclass
class Run:
    result: object
    counter: Counter


def _as_dict(matrix: list[list[int]]) -> dict[tuple[int, ...], int]:
    return {(i, j): v for i, row in enumerate(matrix) for j, v in enumerate(row)}


def matmul(a: list[list[int]], b: list[list[int]]) -> Run:
    """``C = A @ B`` by the textbook triple loop: K multiplies and K-1 adds per output."""
    m, k_a = len(a), len(a[0])
    k_b, n = len(b), len(b[0])
    if k_a != k_b:
        raise ValueError(f"inner dimensions differ: {k_a} vs {k_b}")
    counter = Counter()
    mem = Memory(counter, A=_as_dict(a), B=_as_dict(b))
    for i in range(m):
        for j in range(n):
            acc = None
            for k in range(k_a):
                product = mem.load("A", (i, k)) * mem.load("B", (k, j))
                counter.mults += 1
                counter.macs += 1
                if acc is None:
                    acc = product
                else:
                    acc = acc + product
                    counter.adds += 1
            mem.store("C", (i, j), acc)
    c = mem.arrays["C"]
    return Run([[c[i, j] for j in range(n)] for i in range(m)], counter)


def naive_matmul(a: list[list[int]], b: list[list[int]]) -> list[list[int]]:
    """Reference product, written differently (sum over zip of a row and a column)."""
    cols = list(zip(*b))
    return [[sum(x * y for x, y in zip(row, col)) for col in cols] for row in a]


def relu(x: list[int]) -> Run:
    """``y = max(x, 0)`` elementwise: one op per element, one read and one write each."""
    counter = Counter()
    mem = Memory(counter, X={(i,): v for i, v in enumerate(x)})
    for i in range(len(x)):
        v = mem.load("X", (i,))
        counter.other += 1
        mem.store("Y", (i,), v if v > 0 else 0)
    y = mem.arrays["Y"]
    return Run([y[(i,)] for i in range(len(x))], counter)


def _out_size(size: int, kernel: int, stride: int, padding: int) -> int:
    return (size + 2 * padding - kernel) // stride + 1


def conv2d_im2col(x: list, w: list, *, stride: int = 1, padding: int = 0,
                  lowering: str = "explicit") -> Run:
    """Convolution of ``x[N][C][H][W]`` by ``w[K][C][R][S]`` lowered through im2col.

    ``explicit``: a first loop nest writes the column matrix ``COL[CRS, NPQ]`` to memory
    (padding positions are zeros that no load of X produced), then a GEMM loop nest
    ``W[K, CRS] @ COL`` reads it back. ``implicit``: the GEMM loop nest forms each column
    value on the fly from X, so only X, W and Y cross the boundary.
    Returns Y as ``[K][N*P*Q]`` (the GEMM's output layout).
    """
    if lowering not in ("explicit", "implicit"):
        raise ValueError(lowering)
    n_, c_, h_, w_ = len(x), len(x[0]), len(x[0][0]), len(x[0][0][0])
    k_, r_, s_ = len(w), len(w[0][0]), len(w[0][0][0])
    p_, q_ = _out_size(h_, r_, stride, padding), _out_size(w_, s_, stride, padding)
    counter = Counter()
    xs = {(a, c, h, ww): x[a][c][h][ww] for a in range(n_) for c in range(c_)
          for h in range(h_) for ww in range(w_)}
    wf = {(k, c * r_ * s_ + r * s_ + s): w[k][c][r][s] for k in range(k_) for c in range(c_)
          for r in range(r_) for s in range(s_)}          # the K x CRS filter matrix
    mem = Memory(counter, X=xs, W=wf)

    def x_value(row: int, col: int) -> int:
        c, rest = divmod(row, r_ * s_)
        r, s = divmod(rest, s_)
        a, rest = divmod(col, p_ * q_)
        p, q = divmod(rest, q_)
        h, ww = p * stride + r - padding, q * stride + s - padding
        if 0 <= h < h_ and 0 <= ww < w_:
            return mem.load("X", (a, c, h, ww))
        return 0  # padding: no memory access

    crs, npq = c_ * r_ * s_, n_ * p_ * q_
    if lowering == "explicit":
        for row in range(crs):
            for col in range(npq):
                mem.store("COL", (row, col), x_value(row, col))

        def operand(row: int, col: int) -> int:
            return mem.load("COL", (row, col))
    else:
        operand = x_value
    for k in range(k_):
        for col in range(npq):
            acc = None
            for row in range(crs):
                product = mem.load("W", (k, row)) * operand(row, col)
                counter.mults += 1
                counter.macs += 1
                if acc is None:
                    acc = product
                else:
                    acc += product
                    counter.adds += 1
            mem.store("Y", (k, col), acc)
    y = mem.arrays["Y"]
    return Run([[y[k, col] for col in range(npq)] for k in range(k_)], counter)


def naive_conv2d(x: list, w: list, *, stride: int = 1, padding: int = 0) -> list[list[int]]:
    """Direct convolution (no lowering), laid out as ``[K][N*P*Q]`` for comparison."""
    n_, c_, h_, w_ = len(x), len(x[0]), len(x[0][0]), len(x[0][0][0])
    k_, r_, s_ = len(w), len(w[0][0]), len(w[0][0][0])
    p_, q_ = _out_size(h_, r_, stride, padding), _out_size(w_, s_, stride, padding)

    def at(a: int, c: int, h: int, ww: int) -> int:
        return x[a][c][h][ww] if 0 <= h < h_ and 0 <= ww < w_ else 0

    return [[sum(w[k][c][r][s] * at(a, c, p * stride + r - padding, q * stride + s - padding)
                 for c in range(c_) for r in range(r_) for s in range(s_))
             for a in range(n_) for p in range(p_) for q in range(q_)]
            for k in range(k_)]


def random_matrix(rng: random.Random, rows: int, cols: int) -> list[list[int]]:
    return [[rng.randint(-9, 9) for _ in range(cols)] for _ in range(rows)]


def random_tensor4(rng: random.Random, d0: int, d1: int, d2: int, d3: int) -> list:
    return [[[[rng.randint(-9, 9) for _ in range(d3)] for _ in range(d2)] for _ in range(d1)]
            for _ in range(d0)]

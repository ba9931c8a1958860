"""A brute-force memory simulator: loop nests that really compute, counting every element
that moves between a slow memory and fast on-chip storage.

Two kinds of fast storage:

- :class:`Scratchpad`: an explicit buffer of ``capacity`` elements. A kernel ``load``s an
  element from slow memory (one load counted), computes only on resident values (``get``
  refuses anything not loaded), and ``store``s results (one store counted). Holding more
  than ``capacity`` elements at once raises :class:`CapacityError`, so a schedule's
  on-chip footprint is checked, not assumed.
- :class:`LRU`: a fully associative cache of ``capacity`` one-element lines with LRU
  replacement. A read miss is a load; a write allocates without fetching (the whole line
  is overwritten) and marks it dirty; a dirty eviction or the final ``flush`` is a store.
  ``capacity=None`` is unbounded (each distinct element loaded once: compulsory traffic
  of one kernel). Kernels touch memory only through ``read``/``write``, so the count is
  the count of the exact address trace of the loop nest.

Kernels (each returns a :class:`Result` with the computed values and the counts):

- GEMM: output-stationary tiles ``t_m x t_n`` on a scratchpad (a tile of C resident for
  the whole K loop, a ``t_m x t_k`` slice of A and ``t_k x t_n`` slice of B per K step;
  ragged edge tiles load only what exists, or, with ``pad=True``, whole padded slices);
  the naive ``ijk`` nest and the tiled nest replayed through an LRU cache.
- Attention (one head, no mask): unfused (scores and probabilities written to memory and
  read back by the next kernel), fused and streamed per query block (FlashAttention-2
  order; the S x S matrix never leaves the chip), and FlashAttention's Algorithm 1
  (outer loop over key blocks, O read and written per pass).
- Elementwise chains: each op its own kernel, or all fused into one.
- Conv2d through im2col: explicit (the column matrix written and read back) or implicit.

Nothing here imports symroof: it is the independent second computation.

>>> A = [[1, 2], [3, 4]]; B = [[5, 6], [7, 8]]
>>> r = gemm_scratchpad(A, B, tm=1, tn=2)
>>> r.value
[[19, 22], [43, 50]]
>>> r.loads, r.stores, r.macs          # A once (N/t_n = 1), B twice (M/t_m = 2), C once
(12, 4, 8)
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

__all__ = [
    "CapacityError", "Memory", "Scratchpad", "LRU", "Result",
    "reference_matmul", "gemm_scratchpad", "gemm_scratchpad_footprint", "gemm_naive_trace",
    "gemm_tiled_trace", "reference_attention", "attention_unfused", "attention_fused",
    "attention_flash_v1", "elementwise_chain", "reference_conv2d", "conv2d_im2col",
]

Index = tuple[int, ...]
Key = tuple[str, Index]


class CapacityError(RuntimeError):
    """A schedule tried to hold more elements on chip than the scratchpad has."""


# ---------------------------------------------------------------------------
# slow memory


class Memory:
    """Named arrays in slow memory (dicts from index tuples to values).

    Reading an index that does not exist returns 0 only when ``pad`` is asked for (a
    padded tile reading past the edge); otherwise it is an error.
    """

    def __init__(self, **arrays: dict[Index, object]) -> None:
        self.arrays: dict[str, dict[Index, object]] = {k: dict(v) for k, v in arrays.items()}

    def get(self, name: str, index: Index, *, pad: bool = False) -> object:
        arr = self.arrays[name]
        if index in arr:
            return arr[index]
        if pad:
            return 0
        raise KeyError(f"{name}{list(index)} does not exist")

    def put(self, name: str, index: Index, value: object) -> None:
        self.arrays.setdefault(name, {})[index] = value

    def matrix(self, name: str, rows: int, cols: int) -> list[list[object]]:
        arr = self.arrays[name]
        return [[arr[(i, j)] for j in range(cols)] for i in range(rows)]


def as_array(matrix: Sequence[Sequence[object]]) -> dict[Index, object]:
    return {(i, j): v for i, row in enumerate(matrix) for j, v in enumerate(row)}


# ---------------------------------------------------------------------------
# fast storage


@dataclass
class Traffic:
    """Elements moved, per array: loads (slow -> fast) and stores (fast -> slow)."""

    loads: dict[str, int] = field(default_factory=dict)
    stores: dict[str, int] = field(default_factory=dict)

    def load(self, name: str) -> None:
        self.loads[name] = self.loads.get(name, 0) + 1

    def store(self, name: str) -> None:
        self.stores[name] = self.stores.get(name, 0) + 1

    @property
    def total_loads(self) -> int:
        return sum(self.loads.values())

    @property
    def total_stores(self) -> int:
        return sum(self.stores.values())


class Scratchpad:
    """An explicit on-chip buffer of ``capacity`` elements (None: unbounded)."""

    def __init__(self, memory: Memory, capacity: int | None, traffic: Traffic | None = None,
                 *, pad: bool = False) -> None:
        self.memory = memory
        self.capacity = capacity
        self.traffic = traffic or Traffic()
        self.pad = pad
        self.resident: dict[Key, object] = {}
        self.peak = 0

    def _grow(self) -> None:
        self.peak = max(self.peak, len(self.resident))
        if self.capacity is not None and len(self.resident) > self.capacity:
            raise CapacityError(f"{len(self.resident)} elements on chip, capacity {self.capacity}")

    def load(self, name: str, index: Index) -> None:
        """Bring an element on chip (one load), even if it is already there."""
        self.traffic.load(name)
        self.resident[(name, index)] = self.memory.get(name, index, pad=self.pad)
        self._grow()

    def get(self, name: str, index: Index) -> object:
        """A resident value; computing on anything not on chip is an error."""
        try:
            return self.resident[(name, index)]
        except KeyError:
            raise AssertionError(f"{name}{list(index)} used but not on chip") from None

    def put(self, name: str, index: Index, value: object) -> None:
        """Create or update a value on chip (an accumulator): no traffic."""
        self.resident[(name, index)] = value
        self._grow()

    def store(self, name: str, index: Index) -> None:
        """Write a resident value to slow memory (one store)."""
        self.traffic.store(name)
        self.memory.put(name, index, self.get(name, index))

    def evict(self, name: str, index: Index) -> None:
        """Drop a value from chip without writing it back."""
        del self.resident[(name, index)]


class LRU:
    """A fully associative LRU cache of one-element lines (``capacity`` None: unbounded).

    Read miss: one load. Write: allocate without fetch, mark dirty. Evicting a dirty line
    or flushing it: one store. A kernel touches memory only through read and write.
    """

    def __init__(self, memory: Memory, capacity: int | None, traffic: Traffic | None = None) -> None:
        if capacity is not None and capacity < 1:
            raise ValueError("capacity must be at least 1")
        self.memory = memory
        self.capacity = capacity
        self.traffic = traffic or Traffic()
        self.lines: OrderedDict[Key, list] = OrderedDict()   # key -> [value, dirty]
        self.accesses = 0

    def _insert(self, key: Key, value: object, dirty: bool) -> None:
        if self.capacity is not None and len(self.lines) >= self.capacity:
            (name, index), (old, was_dirty) = self.lines.popitem(last=False)
            if was_dirty:
                self.traffic.store(name)
                self.memory.put(name, index, old)
        self.lines[key] = [value, dirty]

    def read(self, name: str, index: Index) -> object:
        self.accesses += 1
        key = (name, index)
        line = self.lines.get(key)
        if line is not None:
            self.lines.move_to_end(key)
            return line[0]
        self.traffic.load(name)
        value = self.memory.get(name, index)
        self._insert(key, value, False)
        return value

    def write(self, name: str, index: Index, value: object) -> None:
        self.accesses += 1
        key = (name, index)
        line = self.lines.get(key)
        if line is not None:
            line[0], line[1] = value, True
            self.lines.move_to_end(key)
            return
        self._insert(key, value, True)

    def flush(self) -> None:
        """Write back every dirty line and empty the cache (the end of a kernel)."""
        for (name, index), (value, dirty) in self.lines.items():
            if dirty:
                self.traffic.store(name)
                self.memory.put(name, index, value)
        self.lines.clear()


@dataclass
class Result:
    """What a simulated kernel computed and moved."""

    value: object
    traffic: Traffic
    macs: int = 0
    peak_on_chip: int = 0
    extra: dict[str, int] = field(default_factory=dict)

    @property
    def loads(self) -> int:
        return self.traffic.total_loads

    @property
    def stores(self) -> int:
        return self.traffic.total_stores

    @property
    def elements(self) -> int:
        """Every element moved: loads plus stores."""
        return self.loads + self.stores


# ---------------------------------------------------------------------------
# GEMM


def reference_matmul(a: Sequence[Sequence[object]], b: Sequence[Sequence[object]]) -> list[list[object]]:
    m, k, n = len(a), len(b), len(b[0])
    return [[sum(a[i][p] * b[p][j] for p in range(k)) for j in range(n)] for i in range(m)]


def _blocks(extent: int, tile: int) -> list[range]:
    return [range(s, min(s + tile, extent)) for s in range(0, extent, tile)]


def gemm_scratchpad_footprint(tm: int, tn: int, tk: int = 1) -> int:
    """Elements an output-stationary tile needs on chip: the C tile plus one K step."""
    return tm * tn + tm * tk + tk * tn


def gemm_scratchpad(a: Sequence[Sequence[object]], b: Sequence[Sequence[object]], *,
                    tm: int, tn: int, tk: int = 1, capacity: int | None = None,
                    pad: bool = False) -> Result:
    """``C = A B`` output-stationary on a scratchpad of ``capacity`` elements
    (default: exactly the tile's footprint).

    For each ``tm x tn`` tile of C (accumulators on chip for the whole K loop), for each
    K block of ``tk``: load the A slice (rows of the tile x the K block) and the B slice,
    do the MACs, drop the slices; then store the C tile. Ragged edge tiles load only the
    elements that exist; ``pad=True`` loads the whole padded slice (zeros past the edge)
    and still stores only the real C elements.
    """
    m, kk, n = len(a), len(b), len(b[0])
    assert all(len(row) == kk for row in a)
    mem = Memory(A=as_array(a), B=as_array(b))
    sp_ = Scratchpad(mem, gemm_scratchpad_footprint(tm, tn, tk) if capacity is None else capacity,
                     pad=pad)
    macs = 0
    for rows in _blocks(m, tm):
        for cols in _blocks(n, tn):
            for i in rows:
                for j in cols:
                    sp_.put("C", (i, j), 0)
            for ks in _blocks(kk, tk):
                a_rows = range(rows.start, rows.start + tm) if pad else rows
                b_cols = range(cols.start, cols.start + tn) if pad else cols
                k_range = range(ks.start, ks.start + tk) if pad else ks
                for i in a_rows:
                    for p in k_range:
                        sp_.load("A", (i, p))
                for p in k_range:
                    for j in b_cols:
                        sp_.load("B", (p, j))
                for i in rows:
                    for j in cols:
                        acc = sp_.get("C", (i, j))
                        for p in ks:
                            acc = acc + sp_.get("A", (i, p)) * sp_.get("B", (p, j))
                            macs += 1
                        sp_.put("C", (i, j), acc)
                for i in a_rows:
                    for p in k_range:
                        sp_.evict("A", (i, p))
                for p in k_range:
                    for j in b_cols:
                        sp_.evict("B", (p, j))
            for i in rows:
                for j in cols:
                    sp_.store("C", (i, j))
                    sp_.evict("C", (i, j))
    return Result(mem.matrix("C", m, n), sp_.traffic, macs, sp_.peak)


def gemm_naive_trace(a: Sequence[Sequence[object]], b: Sequence[Sequence[object]], *,
                     capacity: int | None) -> Result:
    """The naive ``ijk`` loop nest through an LRU cache (the dot product in a register,
    ``C[i][j]`` written once)."""
    m, kk, n = len(a), len(b), len(b[0])
    mem = Memory(A=as_array(a), B=as_array(b))
    cache = LRU(mem, capacity)
    macs = 0
    for i in range(m):
        for j in range(n):
            acc = 0
            for p in range(kk):
                acc = acc + cache.read("A", (i, p)) * cache.read("B", (p, j))
                macs += 1
            cache.write("C", (i, j), acc)
    cache.flush()
    return Result(mem.matrix("C", m, n), cache.traffic, macs)


def gemm_tiled_trace(a: Sequence[Sequence[object]], b: Sequence[Sequence[object]], *,
                     tm: int, tn: int, capacity: int | None) -> Result:
    """The output-stationary tiled nest through an LRU cache: the C tile is accumulated
    in memory locations (read-modify-write each K step), so whether it stays on chip
    is up to the cache."""
    m, kk, n = len(a), len(b), len(b[0])
    mem = Memory(A=as_array(a), B=as_array(b))
    cache = LRU(mem, capacity)
    macs = 0
    for rows in _blocks(m, tm):
        for cols in _blocks(n, tn):
            for p in range(kk):
                for i in rows:
                    x = cache.read("A", (i, p))
                    for j in cols:
                        prod = x * cache.read("B", (p, j))
                        macs += 1
                        acc = prod if p == 0 else cache.read("C", (i, j)) + prod
                        cache.write("C", (i, j), acc)
    cache.flush()
    return Result(mem.matrix("C", m, n), cache.traffic, macs)


# ---------------------------------------------------------------------------
# attention (one head, no mask)


def _softmax(row: Sequence[float]) -> list[float]:
    mx = max(row)
    e = [math.exp(x - mx) for x in row]
    s = sum(e)
    return [x / s for x in e]


def reference_attention(q: Sequence[Sequence[float]], k: Sequence[Sequence[float]],
                        v: Sequence[Sequence[float]]) -> list[list[float]]:
    """softmax(q k^T) v, row by row (no scaling, no mask)."""
    s, d = len(q), len(q[0])
    out = []
    for i in range(s):
        p = _softmax([sum(q[i][c] * k[j][c] for c in range(d)) for j in range(len(k))])
        out.append([sum(p[j] * v[j][c] for j in range(len(k))) for c in range(d)])
    return out


def attention_unfused(q: Sequence[Sequence[float]], k: Sequence[Sequence[float]],
                      v: Sequence[Sequence[float]]) -> Result:
    """The textbook three kernels, each with its own (unbounded, flushed) cache:
    ``scores = q k^T`` written; ``probs = softmax(scores)`` read and written;
    ``out = probs v`` read. Every kernel reads each input element once and writes each
    output element once (compulsory traffic per kernel)."""
    s, d = len(q), len(q[0])
    mem = Memory(Q=as_array(q), K=as_array(k), V=as_array(v))
    traffic = Traffic()
    macs = 0
    cache = LRU(mem, None, traffic)                       # kernel 1: scores
    for i in range(s):
        for j in range(s):
            acc = 0.0
            for c in range(d):
                acc += cache.read("Q", (i, c)) * cache.read("K", (j, c))
                macs += 1
            cache.write("S", (i, j), acc)
    cache.flush()
    cache = LRU(mem, None, traffic)                       # kernel 2: softmax
    for i in range(s):
        row = _softmax([cache.read("S", (i, j)) for j in range(s)])
        for j in range(s):
            cache.write("P", (i, j), row[j])
    cache.flush()
    cache = LRU(mem, None, traffic)                       # kernel 3: P V
    for i in range(s):
        for c in range(d):
            acc = 0.0
            for j in range(s):
                acc += cache.read("P", (i, j)) * cache.read("V", (j, c))
                macs += 1
            cache.write("O", (i, c), acc)
    cache.flush()
    return Result(mem.matrix("O", s, d), traffic, macs)


def attention_fused(q: Sequence[Sequence[float]], k: Sequence[Sequence[float]],
                    v: Sequence[Sequence[float]], *, block_q: int, block_k: int,
                    kv_resident: bool, capacity: int | None = None) -> Result:
    """One fused kernel on a scratchpad, FlashAttention-2 order: for each block of
    ``block_q`` query rows, load Q's rows, stream K and V in blocks of ``block_k`` rows
    with an online softmax (running max and sum per row), then store O's rows. The
    ``block_q x block_k`` scores live on chip only. With ``kv_resident`` K and V are
    loaded once and kept (capacity for all of them); otherwise they are re-streamed for
    every query block. ``capacity`` defaults to the schedule's own footprint (checked)."""
    s, d = len(q), len(q[0])
    mem = Memory(Q=as_array(q), K=as_array(k), V=as_array(v))
    need = (2 * s * d if kv_resident else 2 * block_k * d) + 2 * block_q * d \
        + block_q * block_k + 2 * block_q
    sp_ = Scratchpad(mem, need if capacity is None else capacity)
    macs = 0
    if kv_resident:
        for j in range(s):
            for c in range(d):
                sp_.load("K", (j, c))
                sp_.load("V", (j, c))
    for rows in _blocks(s, block_q):
        for i in rows:
            for c in range(d):
                sp_.load("Q", (i, c))
                sp_.put("O", (i, c), 0.0)
            sp_.put("m", (i,), -math.inf)
            sp_.put("l", (i,), 0.0)
        for keys in _blocks(s, block_k):
            if not kv_resident:
                for j in keys:
                    for c in range(d):
                        sp_.load("K", (j, c))
                        sp_.load("V", (j, c))
            for i in rows:
                for j in keys:
                    acc = 0.0
                    for c in range(d):
                        acc += sp_.get("Q", (i, c)) * sp_.get("K", (j, c))
                        macs += 1
                    sp_.put("S", (i, j), acc)
                m_old, l_old = sp_.get("m", (i,)), sp_.get("l", (i,))
                m_new = max(m_old, *(sp_.get("S", (i, j)) for j in keys))
                scale = math.exp(m_old - m_new) if m_old != -math.inf else 0.0
                p = {j: math.exp(sp_.get("S", (i, j)) - m_new) for j in keys}
                sp_.put("l", (i,), l_old * scale + sum(p.values()))
                sp_.put("m", (i,), m_new)
                for c in range(d):
                    acc = sp_.get("O", (i, c)) * scale
                    for j in keys:
                        acc += p[j] * sp_.get("V", (j, c))
                        macs += 1
                    sp_.put("O", (i, c), acc)
                for j in keys:
                    sp_.evict("S", (i, j))
            if not kv_resident:
                for j in keys:
                    for c in range(d):
                        sp_.evict("K", (j, c))
                        sp_.evict("V", (j, c))
        for i in rows:
            l_ = sp_.get("l", (i,))
            for c in range(d):
                sp_.put("O", (i, c), sp_.get("O", (i, c)) / l_)
                sp_.store("O", (i, c))
                sp_.evict("O", (i, c))
                sp_.evict("Q", (i, c))
            sp_.evict("m", (i,))
            sp_.evict("l", (i,))
    return Result(mem.matrix("O", s, d), sp_.traffic, macs, sp_.peak)


def attention_flash_v1(q: Sequence[Sequence[float]], k: Sequence[Sequence[float]],
                       v: Sequence[Sequence[float]], *, block_q: int, block_k: int) -> Result:
    """FlashAttention Algorithm 1 (Dao et al. 2022): O, l, m start in HBM (the
    initialisation stores are counted under ``extra['init']`` and also as stores of
    O/l/m); the outer loop walks key blocks (K_j, V_j loaded once), the inner loop query
    blocks: load Q_i, O_i, l_i, m_i, update on chip, store O_i, l_i, m_i."""
    s, d = len(q), len(q[0])
    mem = Memory(Q=as_array(q), K=as_array(k), V=as_array(v))
    sp_ = Scratchpad(mem, 2 * block_k * d + 2 * block_q * d + block_q * block_k + 2 * block_q)
    init = 0
    for i in range(s):                                    # line 2: initialise in HBM
        for c in range(d):
            mem.put("O", (i, c), 0.0)
            sp_.traffic.store("O")
            init += 1
        mem.put("l", (i,), 0.0)
        mem.put("m", (i,), -math.inf)
        sp_.traffic.store("l")
        sp_.traffic.store("m")
        init += 2
    macs = 0
    for keys in _blocks(s, block_k):
        for j in keys:
            for c in range(d):
                sp_.load("K", (j, c))
                sp_.load("V", (j, c))
        for rows in _blocks(s, block_q):
            for i in rows:
                for c in range(d):
                    sp_.load("Q", (i, c))
                    sp_.load("O", (i, c))
                sp_.load("l", (i,))
                sp_.load("m", (i,))
            for i in rows:
                sc = {}
                for j in keys:
                    acc = 0.0
                    for c in range(d):
                        acc += sp_.get("Q", (i, c)) * sp_.get("K", (j, c))
                        macs += 1
                    sp_.put("S", (i, j), acc)
                    sc[j] = acc
                m_blk = max(sc.values())
                p = {j: math.exp(sc[j] - m_blk) for j in keys}
                l_blk = sum(p.values())
                m_old, l_old = sp_.get("m", (i,)), sp_.get("l", (i,))
                m_new = max(m_old, m_blk)
                a_old = math.exp(m_old - m_new) if m_old != -math.inf else 0.0
                a_blk = math.exp(m_blk - m_new)
                l_new = a_old * l_old + a_blk * l_blk
                for c in range(d):
                    pv = 0.0
                    for j in keys:
                        pv += p[j] * sp_.get("V", (j, c))
                        macs += 1
                    sp_.put("O", (i, c), (l_old * a_old * sp_.get("O", (i, c)) + a_blk * pv) / l_new)
                sp_.put("l", (i,), l_new)
                sp_.put("m", (i,), m_new)
                for j in keys:
                    sp_.evict("S", (i, j))
            for i in rows:
                for c in range(d):
                    sp_.store("O", (i, c))
                    sp_.evict("O", (i, c))
                    sp_.evict("Q", (i, c))
                for name in ("l", "m"):
                    sp_.store(name, (i,))
                    sp_.evict(name, (i,))
        for j in keys:
            for c in range(d):
                sp_.evict("K", (j, c))
                sp_.evict("V", (j, c))
    return Result(mem.matrix("O", s, d), sp_.traffic, macs, sp_.peak, {"init": init})


# ---------------------------------------------------------------------------
# elementwise chains


def elementwise_chain(x: Sequence[object], ops: Sequence[Callable[[object], object]], *,
                      fused: bool) -> Result:
    """Apply ``ops`` in turn to every element of ``x``. Unfused: one kernel per op, each
    reading its input array and writing its output array. Fused: one kernel that reads x
    once and writes only the last result."""
    n = len(x)
    mem = Memory(t0={(i,): v for i, v in enumerate(x)})
    traffic = Traffic()
    flops = 0
    last = f"t{len(ops)}"
    if fused:
        cache = LRU(mem, 1, traffic)   # one element on chip is enough
        for i in range(n):
            val = cache.read("t0", (i,))
            for op in ops:
                val = op(val)
                flops += 1
            cache.write(last, (i,), val)
        cache.flush()
    else:
        for s, op in enumerate(ops):
            cache = LRU(mem, 1, traffic)
            for i in range(n):
                cache.write(f"t{s + 1}", (i,), op(cache.read(f"t{s}", (i,))))
                flops += 1
            cache.flush()
    return Result([mem.arrays[last][(i,)] for i in range(n)], traffic, flops)


# ---------------------------------------------------------------------------
# conv2d through im2col


def _conv_out(size: int, kernel: int, stride: int, padding: int) -> int:
    return (size + 2 * padding - kernel) // stride + 1


def reference_conv2d(x: list, w: list, *, stride: int = 1, padding: int = 0) -> list:
    """Direct convolution: x[n][c][h][w], w[k][c][r][s] -> y[n][k][p][q]."""
    nb, ch, hh, ww = len(x), len(x[0]), len(x[0][0]), len(x[0][0][0])
    ko, r_, s_ = len(w), len(w[0][0]), len(w[0][0][0])
    pp, qq = _conv_out(hh, r_, stride, padding), _conv_out(ww, s_, stride, padding)

    def px(n_, c, h, w_):
        return x[n_][c][h][w_] if 0 <= h < hh and 0 <= w_ < ww else 0

    return [[[[sum(w[k][c][r][s] * px(n_, c, p * stride + r - padding, q * stride + s - padding)
                   for c in range(ch) for r in range(r_) for s in range(s_))
               for q in range(qq)] for p in range(pp)] for k in range(ko)] for n_ in range(nb)]


def conv2d_im2col(x: list, w: list, *, stride: int = 1, padding: int = 0,
                  explicit: bool) -> Result:
    """Convolution as ``W[K, CRS] @ col[CRS, NPQ]``.

    Explicit: kernel 1 reads X and writes the whole column matrix (padding positions as
    zeros, each input pixel duplicated up to R*S times); kernel 2 reads W and the column
    matrix and writes Y. Implicit: one kernel builds each column on chip from X (each X
    element loaded once, unbounded cache) and writes Y. ``extra``: ``col`` column-matrix
    elements, ``x_read`` distinct X elements read, ``x_copies`` column entries copied
    from X (not padding), ``x_max_copies`` the most copies of any one X element."""
    nb, ch, hh, ww = len(x), len(x[0]), len(x[0][0]), len(x[0][0][0])
    ko, r_, s_ = len(w), len(w[0][0]), len(w[0][0][0])
    pp, qq = _conv_out(hh, r_, stride, padding), _conv_out(ww, s_, stride, padding)
    mem = Memory(X={(a, c, h, v): x[a][c][h][v] for a in range(nb) for c in range(ch)
                    for h in range(hh) for v in range(ww)},
                 W={(k, (c * r_ + r) * s_ + s): w[k][c][r][s] for k in range(ko)
                    for c in range(ch) for r in range(r_) for s in range(s_)})
    traffic = Traffic()
    rows, cols = ch * r_ * s_, nb * pp * qq
    uses: dict[Index, int] = {}      # column entries that copy each X element

    def column_value(cache: LRU, row: int, col: int) -> object:
        c, rs = divmod(row, r_ * s_)
        r, s = divmod(rs, s_)
        a, pq = divmod(col, pp * qq)
        p, q = divmod(pq, qq)
        h, v = p * stride + r - padding, q * stride + s - padding
        if not (0 <= h < hh and 0 <= v < ww):
            return 0                                      # padding: a zero, not a load
        uses[(a, c, h, v)] = uses.get((a, c, h, v), 0) + 1
        return cache.read("X", (a, c, h, v))

    macs = 0
    if explicit:
        cache = LRU(mem, None, traffic)                   # kernel 1: im2col
        for row in range(rows):
            for col in range(cols):
                cache.write("col", (row, col), column_value(cache, row, col))
        cache.flush()
        cache = LRU(mem, None, traffic)                   # kernel 2: GEMM
        for k in range(ko):
            for col in range(cols):
                acc = 0
                for row in range(rows):
                    acc += cache.read("W", (k, row)) * cache.read("col", (row, col))
                    macs += 1
                cache.write("Y", (k, col), acc)
        cache.flush()
    else:
        cache = LRU(mem, None, traffic)                   # one kernel, columns on chip
        for k in range(ko):
            for col in range(cols):
                acc = 0
                for row in range(rows):
                    acc += cache.read("W", (k, row)) * column_value(cache, row, col)
                    macs += 1
                cache.write("Y", (k, col), acc)
        cache.flush()
    y = [[[[mem.arrays["Y"][(k, (a * pp + p) * qq + q)] for q in range(qq)] for p in range(pp)]
          for k in range(ko)] for a in range(nb)]
    extra = {"col": rows * cols, "x_read": traffic.loads.get("X", 0),
             "x_copies": sum(uses.values()), "x_max_copies": max(uses.values(), default=0)}
    return Result(y, traffic, macs, extra=extra)

"""Pope et al. (2022)'s layouts (symroof.workloads.inference_layouts) against a brute
force: a feedforward layer run chip by chip on a small mesh with numpy, each collective
a ring that moves real array chunks between simulated chips, counting the values each
chip sends, and the layer's output checked equal to the unsharded one (so the schedule
is a correct layout, not only a byte count). Then the closed forms against the sources'
own formulas and the engine's shard pass."""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp

from symroof.errors import SymroofError
from symroof.ir import Graph
from symroof.models import get
from symroof.passes.shard import collective_terms, shard
from symroof.symbols import B, D, b
from symroof.workloads import decode
from symroof.workloads.inference_layouts import (InferenceLayout, accepting_layouts,
                                                 layout_communication)

BYTES = 2
RNG = np.random.default_rng(7)


class Mesh:
    """Chips with a count of the values each one has sent."""

    def __init__(self, n: int) -> None:
        self.sent = [0] * n

    def all_gather(self, members: list[int], chunks: list[np.ndarray], axis: int
                   ) -> np.ndarray:
        """Ring all-gather: step s, member r passes the chunk it got at step s-1 (its own
        at s = 0) to member r+1; every member ends with all chunks."""
        k = len(members)
        have = [{r: chunks[r]} for r in range(k)]
        for s in range(k - 1):
            for r in range(k):
                c = (r - s) % k
                self.sent[members[r]] += have[r][c].size
                have[(r + 1) % k][c] = have[r][c]
        outs = [np.concatenate([have[r][c] for c in range(k)], axis=axis) for r in range(k)]
        assert all(np.array_equal(o, outs[0]) for o in outs)
        return outs[0]

    def reduce_scatter(self, members: list[int], parts: list[np.ndarray], axis: int
                       ) -> list[np.ndarray]:
        """Ring reduce-scatter: step s, member r sends its running sum of chunk
        (r - s - 1) mod k to r+1, which adds its own; member r ends with chunk r summed."""
        k = len(members)
        acc = [np.array_split(p, k, axis=axis) for p in parts]
        for s in range(k - 1):
            moves = []
            for r in range(k):
                c = (r - s - 1) % k
                self.sent[members[r]] += acc[r][c].size
                moves.append(((r + 1) % k, c, acc[r][c]))
            for dst, c, val in moves:
                acc[dst][c] = acc[dst][c] + val
        return [acc[r][r] for r in range(k)]

    def all_reduce(self, members: list[int], parts: list[np.ndarray], axis: int
                   ) -> np.ndarray:
        """Ring all-reduce: a reduce-scatter, then an all-gather of the reduced chunks."""
        return self.all_gather(members, self.reduce_scatter(members, parts, axis), axis)


def _act(h: np.ndarray) -> np.ndarray:
    return np.maximum(h, 0)


def _reference(x, w_in, w_out, w_gate=None):
    h = x @ w_in
    return (_act(x @ w_gate) * h if w_gate is not None else _act(h)) @ w_out


def _weights(e, f, gated):
    w = [RNG.integers(-3, 4, (e, f)), RNG.integers(-3, 4, (f, e))]
    return (*w, RNG.integers(-3, 4, (e, f)) if gated else None)


def run_two_d(t, e, f, xx, yz, gated=False):
    """2D weight-stationary (X = 1: 1D) on an X x YZ mesh, chip (i, j) = i*yz + j:
    In[T, E_XYZ] -AG_YZ-> In[T, E_X]; x W_in[E_X, F_YZ] -> partial over X -AR_X->
    Tmp[T, F_YZ]; x W_out[F_YZ, E_X] -> partial over YZ -RS_YZ-> Out[T, E_XYZ]."""
    x = RNG.integers(-3, 4, (t, e))
    w_in, w_out, w_gate = _weights(e, f, gated)
    mesh = Mesh(xx * yz)
    ex = np.array_split(np.arange(e), xx)
    fy = np.array_split(np.arange(f), yz)
    out = np.zeros((t, e), dtype=x.dtype)
    gathered = {}
    for i in range(xx):                       # AG over YZ, one group per i
        group = [i * yz + j for j in range(yz)]
        pieces = np.array_split(ex[i], yz)
        gathered[i] = mesh.all_gather(group, [x[:, p] for p in pieces], axis=1)
    hidden = {}
    for j in range(yz):                       # AR over X, one group per j
        group = [i * yz + j for i in range(xx)]
        parts = [gathered[i] @ w_in[np.ix_(ex[i], fy[j])] for i in range(xx)]
        h = mesh.all_reduce(group, parts, axis=1)
        if gated:
            gparts = [gathered[i] @ w_gate[np.ix_(ex[i], fy[j])] for i in range(xx)]
            h = _act(mesh.all_reduce(group, gparts, axis=1)) * h
        else:
            h = _act(h)
        hidden[j] = h
    for i in range(xx):                       # RS over YZ
        group = [i * yz + j for j in range(yz)]
        parts = [hidden[j] @ w_out[np.ix_(fy[j], ex[i])] for j in range(yz)]
        for j, piece in zip(range(yz), mesh.reduce_scatter(group, parts, axis=1)):
            out[:, np.array_split(ex[i], yz)[j]] = piece
    assert np.array_equal(out, _reference(x, w_in, w_out, w_gate))
    return mesh.sent


def run_tensor(t, e, f, n):
    """Megatron: In replicated, W_in[E, F_n], W_out[F_n, E], one all-reduce."""
    x = RNG.integers(-3, 4, (t, e))
    w_in, w_out, _ = _weights(e, f, False)
    mesh = Mesh(n)
    fn = np.array_split(np.arange(f), n)
    parts = [_act(x @ w_in[:, fn[c]]) @ w_out[fn[c], :] for c in range(n)]
    out = mesh.all_reduce(list(range(n)), parts, axis=1)
    assert np.array_equal(out, _reference(x, w_in, w_out))
    return mesh.sent


def run_weight_gathered(t, e, f, xx, yz):
    """XYZ-weight-gathered: In[T_XYZ, E]; W stored [E_X, F_YZ] (W_out [F_YZ, E_X]) and
    all-gathered over all chips before the matmuls; no activation moves."""
    x = RNG.integers(-3, 4, (t, e))
    w_in, w_out, _ = _weights(e, f, False)
    n = xx * yz
    mesh = Mesh(n)
    ex = np.array_split(np.arange(e), xx)
    fy = np.array_split(np.arange(f), yz)
    blocks_in = [w_in[np.ix_(ex[c // yz], fy[c % yz])].ravel() for c in range(n)]
    blocks_out = [w_out[np.ix_(fy[c % yz], ex[c // yz])].ravel() for c in range(n)]
    flat_in = mesh.all_gather(list(range(n)), blocks_in, axis=0)
    flat_out = mesh.all_gather(list(range(n)), blocks_out, axis=0)
    full_in, full_out = np.zeros_like(w_in), np.zeros_like(w_out)
    pos = 0
    for c in range(n):                        # every chip rebuilds the same matrices
        ie, jf = ex[c // yz], fy[c % yz]
        full_in[np.ix_(ie, jf)] = flat_in[pos:pos + ie.size * jf.size].reshape(ie.size,
                                                                                 jf.size)
        full_out[np.ix_(jf, ie)] = flat_out[pos:pos + ie.size * jf.size].reshape(jf.size,
                                                                                   ie.size)
        pos += ie.size * jf.size
    rows = np.array_split(np.arange(t), n)
    out = np.concatenate([_reference(x[r], full_in, full_out) for r in rows])
    assert np.array_equal(out, _reference(x, w_in, w_out))
    return mesh.sent


def _formula(layout, t, e, f, n, x=None, matrices=2):
    c = layout_communication(layout, tokens=t, d_model=e, d_ff=f, chips=n, x=x,
                             matrices=matrices, bytes_per_value=BYTES)
    return c, c.sent


@pytest.mark.parametrize(("xx", "yz", "gated"), [(2, 3, False), (3, 2, False), (2, 2, True)])
def test_two_d_weight_stationary_bytes_equal_a_simulated_ring(xx, yz, gated):
    t, e, f = 5, 12, 18
    sent = run_two_d(t, e, f, xx, yz, gated)
    assert len(set(sent)) == 1                # every chip sends the same
    _, total = _formula("2d_weight_stationary", t, e, f, xx * yz, x=xx,
                        matrices=3 if gated else 2)
    assert total == sent[0] * BYTES


def test_one_d_weight_stationary_is_the_two_d_schedule_with_no_e_split():
    t, e, f, n = 5, 12, 18, 6
    sent = run_two_d(t, e, f, 1, n)
    _, total = _formula("1d_weight_stationary", t, e, f, n)
    assert total == sent[0] * BYTES == 2 * sp.Rational(n - 1, n) * t * e * BYTES


def test_tensor_parallel_bytes_equal_a_simulated_ring_and_the_shard_pass():
    t, e, f, n = 5, 12, 18, 6
    sent = run_tensor(t, e, f, n)
    _, total = _formula("tensor", t, e, f, n)
    assert total == sent[0] * BYTES
    # the engine's own pass on an MLP graph: the same bytes, symbolically
    g = Graph("mlp")
    h = g.gemm(g.input("x", (B, D)), g.weight("W_up", (D, 4 * D)), name="up")
    g.output(g.gemm(h, g.weight("W_down", (4 * D, D)), name="down"))
    lay = layout_communication("tensor", tokens=B, d_model=D, d_ff=4 * D, chips=4)
    assert sp.cancel(collective_terms(shard(g, tp=4))[0] - lay.sent) == 0


def test_weight_gathered_bytes_equal_a_simulated_ring_and_ignore_the_batch():
    e, f, xx, yz = 12, 18, 2, 3
    sent = run_weight_gathered(12, e, f, xx, yz)
    _, total = _formula("weight_gathered", 12, e, f, xx * yz)
    assert total == sent[0] * BYTES
    assert run_weight_gathered(24, e, f, xx, yz) == sent     # twice the batch: same bytes
    with pytest.raises(SymroofError, match="7 tokens do not split over 6 chips"):
        _formula("weight_gathered", 7, e, f, 6)


def test_the_closed_forms_agree_with_the_sources_formulas():
    """How to Scale Your Model (inference.md, Question 7; 'T_model parallel comms'):
    times over per-axis link bandwidth W, bf16, large groups ((k-1)/k -> 1), a
    collective over a group spanning several mesh axes using each axis' links."""
    X, YZ, W = sp.symbols("X YZ W", positive=True)
    F = sp.Symbol("F", positive=True)

    def book_time(c):
        return sp.Add(*(sp.limit(k.factor, k.group, sp.oo) * k.payload / k.axes / W
                        for k in c.collectives))

    two = layout_communication("2d_weight_stationary", tokens=B, d_model=D, d_ff=F,
                               chips=X * YZ, x=X, bytes_per_value=2)
    assert [k.group for k in two.collectives] == [YZ, X, YZ]
    expect = 2 * B * D / (2 * X * W) + 4 * B * F / (YZ * W) + 2 * B * D / (2 * X * W)
    assert sp.cancel(book_time(two) - expect) == 0
    one = layout_communication("1d_weight_stationary", tokens=B, d_model=D, d_ff=F,
                               chips=X, bytes_per_value=2)
    assert sp.cancel(book_time(one) - 4 * B * D / (3 * W)) == 0


def test_two_d_falls_below_one_d_past_the_books_crossover():
    """The book: with F = 4D, 2D beats 1D past N = 128 (3/4)^2 = 81 chips; in bytes
    (one axis per collective) it wins at 64 chips on a PaLM-like layer already."""
    e, f = 8192, 32768
    one = layout_communication("1d_weight_stationary", tokens=B, d_model=e, d_ff=f,
                               chips=64, bytes_per_value=2)
    two = layout_communication("2d_weight_stationary", tokens=B, d_model=e, d_ff=f,
                               chips=64, bytes_per_value=2)
    assert two.x == 4 and two.sent == 13824 * B and one.sent == 32256 * B
    small = layout_communication("2d_weight_stationary", tokens=B, d_model=e, d_ff=f,
                                 chips=4, bytes_per_value=2)
    assert small.x == 1     # at 4 chips no E split pays: 2D degenerates to 1D
    assert layout_communication("tensor", tokens=B, d_model=e, d_ff=f, chips=8).sent == \
        layout_communication("1d_weight_stationary", tokens=B, d_model=e, d_ff=f,
                             chips=8).sent == sp.Rational(7, 4) * B * e * b


def test_a_degree_tensor_parallelism_refuses_names_the_layouts_that_accept_it():
    m = get("llama-3-70b")
    with pytest.raises(SymroofError, match=r"tp 3: does not split llama-3-70b .* expected "
                       r"one of 1, 2, 4, 8, 16, 32, 64; layouts of Pope et al\. \(2022\) "
                       r"that run on 3 chips: weight_gathered \(a batch that is a multiple "
                       r"of 3\)$"):
        decode(m, 1, 128, tp=3)
    with pytest.raises(SymroofError, match=r"tp 128: .* 2d_weight_stationary \(2x64, 4x32, "
                       r"8x16, 16x8, 32x4, 64x2\); weight_gathered"):
        decode(m, 1, 128, tp=128)
    assert accepting_layouts(6, heads=6, d_model=12) == (
        "2d_weight_stationary (2x3, 3x2)", "weight_gathered (a batch that is a multiple of 6)")


def test_bad_layout_arguments_are_refused_by_name():
    with pytest.raises(SymroofError, match="layout"):
        layout_communication("3d", tokens=1, d_model=8, d_ff=8, chips=2)
    with pytest.raises(SymroofError, match="matrices"):
        layout_communication("tensor", tokens=1, d_model=8, d_ff=8, chips=2, matrices=4)
    with pytest.raises(SymroofError, match="x: only the 2d"):
        layout_communication("tensor", tokens=1, d_model=8, d_ff=8, chips=2, x=2)
    with pytest.raises(SymroofError, match="x 3: does not divide the 8 chips"):
        layout_communication("2d_weight_stationary", tokens=1, d_model=8, d_ff=8, chips=8,
                             x=3)
    assert InferenceLayout("weight_gathered") is InferenceLayout.WEIGHT_GATHERED

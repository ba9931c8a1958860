"""The fusion pass against the brute-force simulator and the seeds' fused/unfused figures.

Fusion never changes FLOPs; it lowers Q by exactly the crossings of the tensors it keeps
on chip. Checked here: elementwise chains (seed 001, common mistakes: fusing three
elementwise ops triples the chain's intensity), attention fused vs unfused at tiny sizes
against simulated kernels and at the seed's S = D = 4,096, h = 32, b = 2 (4.3 GB against
134 MB, intensity 1,024 -> about 31), the GEMM + bias epilogue, implicit im2col, the
fuse/unfuse round trip and FusedGroup's bookkeeping.
"""

from __future__ import annotations

import random

import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from oracles import simulator as sim
from symroof.testing import assert_formula_equal
from symroof.analysis import analyze
from symroof.errors import SymroofError
from symroof.ir import Graph
from symroof.passes import fuse, tile, unfuse
from symroof.passes.fuse import FusedGroup
from symroof.symbols import D, H, K, M, N, S, T, b, n
from symroof.workloads import attention, conv2d

FAST = settings(max_examples=100, deadline=None)




def chain(size: object, ops: int = 3, *, bpv: object = b) -> Graph:
    g = Graph("chain")
    t = g.input("x", (size,), bytes_per_value=bpv)
    for i in range(ops):
        t = g.elementwise(t, name=f"op{i}")
    g.output(t)
    return g


def chain_names(ops: int = 3) -> set[str]:
    return {f"op{i}" for i in range(ops)}


def tensor(g: Graph, name: str):
    (t,) = [x for x in g.tensors if x.name == name]
    return t


def crossings_of(g: Graph, name: str) -> sp.Expr:
    """Bytes tensor ``name`` moves in ``g``: its write and every read, times its count."""
    t = tensor(g, name)
    prod = g.producer(t)
    edges = [g.crossings(t, op) for op in g.consumers(t)]
    if prod is not None:
        edges.append(g.crossings(prod, t))
    return sp.Add(*edges) * t.nbytes * g.count(t)


# ---------------------------------------------------------------------------
# elementwise chains


def test_fusing_three_elementwise_ops_triples_the_intensity():
    g = chain(n)
    unf, fus = analyze(g), analyze(fuse(g, [chain_names()]))
    assert unf.flops == fus.flops == 3 * n
    assert_formula_equal(unf.bytes, 6 * n * b)
    assert_formula_equal(fus.bytes, 2 * n * b)
    assert unf.intensity == 1 / (2 * b) and fus.intensity == 3 / (2 * b)
    assert sp.cancel(fus.intensity / unf.intensity) == 3


@FAST
@given(size=st.integers(1, 40), ops=st.integers(1, 5), seed=st.integers(0, 10**6))
def test_elementwise_chain_matches_simulator(size, ops, seed):
    rng = random.Random(seed)
    xs = [rng.randint(-20, 20) for _ in range(size)]
    fns = [lambda v, c=c: 3 * v + c for c in range(ops)]
    want = xs
    for f in fns:
        want = [f(v) for v in want]
    g = chain(size, ops, bpv=1)
    unf_sim = sim.elementwise_chain(xs, fns, fused=False)
    fus_sim = sim.elementwise_chain(xs, fns, fused=True)
    assert unf_sim.value == fus_sim.value == want
    unf, fus = analyze(g), analyze(fuse(g, [chain_names(ops)]))
    assert unf.bytes == unf_sim.elements == 2 * ops * size
    assert fus.bytes == fus_sim.elements == 2 * size
    assert unf.flops == fus.flops == unf_sim.macs == fus_sim.macs
    # the fused intensity is `ops` times the unfused one
    assert fus.intensity == ops * unf.intensity


def test_partial_fusion_keeps_only_internal_tensors():
    g = chain(n, 3)
    f = fuse(g, [{"op0", "op1"}])
    (grp,) = f.provenance.fused
    assert grp.internal == ("op0",)           # op1's output is read by op2, outside
    assert_formula_equal(analyze(g).bytes - analyze(f).bytes, 2 * n * b)


def test_a_tensor_used_inside_and_outside_is_written_once_and_read_on_chip():
    g = Graph("fork")
    x = g.input("x", (n,))
    a = g.elementwise(x, name="a")
    g.output(g.elementwise(a, name="inside"), g.elementwise(a, name="outside"))
    f = fuse(g, [{"a", "inside"}])
    assert f.provenance.fused[0].internal == ()
    assert_formula_equal(analyze(g).bytes - analyze(f).bytes, n * b)     # the inside read only


def test_an_input_shared_inside_the_group_is_read_once():
    g = Graph("shared")
    x = g.input("x", (n,))
    y1 = g.elementwise(x, name="f")
    y2 = g.elementwise(x, name="g")
    g.output(g.elementwise(y1, y2, name="add"))
    f = fuse(g, [{"f", "g", "add"}])
    (grp,) = f.provenance.fused
    assert set(grp.internal) == {"f", "g"}
    # drop: x's second read, and f and g each written and read once
    assert_formula_equal(analyze(g).bytes - analyze(f).bytes, n * b + 2 * (2 * n * b))
    assert_formula_equal(analyze(f).bytes, 2 * n * b)


# ---------------------------------------------------------------------------
# Q falls by exactly the bytes kept on chip; capacity states them


def _groups_and_graphs():
    att = attention(S, D, H, fused=False, causal=False).graph
    g = Graph("mm-bias")
    h = g.gemm(g.input("x", (M, K)), g.weight("W", (K, N)), name="mm")
    g.output(g.elementwise(h, g.weight("bias_vec", (N,)), name="bias", linear=True))
    conv = conv2d(N, K, H, D, M, 3, lowering="explicit").graph
    return [(chain(n), [chain_names()]), (att, [{"scores", "softmax", "pv"}]),
            (g, [{"mm", "bias"}]), (conv, [{"im2col", "Y"}])]


@pytest.mark.parametrize("graph, groups", _groups_and_graphs())
def test_fusion_lowers_q_by_exactly_the_internal_tensors(graph, groups):
    fused = fuse(graph, groups)
    before, after = analyze(graph), analyze(fused)
    assert_formula_equal(before.flops, after.flops)                       # FLOPs unchanged
    kept = fused.provenance.fused
    assert len(kept) == len(groups)
    internal = [name for grp in kept for name in grp.internal]
    assert internal
    drop = sp.Add(*(crossings_of(graph, t) for t in internal))
    assert_formula_equal(before.bytes - after.bytes, drop)
    for grp in kept:
        assert isinstance(grp, FusedGroup)
        assert_formula_equal(grp.capacity, sp.Add(*(tensor(graph, t).nbytes for t in grp.internal)))
    # the pass never changes the graph it is given
    assert graph.provenance.fused == ()
    assert_formula_equal(analyze(graph).bytes, before.bytes)


@pytest.mark.parametrize("graph, groups", _groups_and_graphs())
def test_unfuse_of_fuse_restores_q_for_compulsory_graphs(graph, groups):
    back = unfuse(fuse(graph, groups), groups)
    assert_formula_equal(analyze(back).bytes, analyze(graph).bytes)
    assert_formula_equal(analyze(back).flops, analyze(graph).flops)
    assert back.provenance.fused == ()


def test_gemm_bias_epilogue():
    g = Graph("mm-bias")
    h = g.gemm(g.input("x", (M, K)), g.weight("W", (K, N)), name="mm")
    g.output(g.elementwise(h, g.weight("bias_vec", (N,)), name="bias", linear=True))
    unf, fus = analyze(g), analyze(fuse(g, [{"mm", "bias"}]))
    assert_formula_equal(unf.bytes, b * (M * K + K * N + N + 3 * M * N))
    assert_formula_equal(fus.bytes, b * (M * K + K * N + N + M * N))
    assert_formula_equal(unf.flops, fus.flops)
    assert_formula_equal(fus.flops, 2 * M * N * K + M * N)
    (grp,) = fus.graph.provenance.fused
    assert grp.ops == ("bias", "mm") and grp.internal == ("mm",)
    assert_formula_equal(grp.capacity, M * N * b)
    # the epilogue composes with tiling: the tiled GEMM's re-reads stay, the 2MN go
    tiled = tile(g, {M: T, N: T})
    both = analyze(fuse(tiled, [{"mm", "bias"}]))
    assert_formula_equal(analyze(tiled).bytes - both.bytes, 2 * M * N * b)
    assert_formula_equal(both.bytes, b * (2 * M * N * K / T + N + M * N))


@pytest.mark.parametrize("case", ["tiled gemm epilogue", "attention materialize_once"])
def test_unfuse_of_fuse_restores_q_exactly(case):
    """unfuse(fuse(g, groups), groups) must give back g's traffic. fuse overwrites edge
    crossings with 0 without remembering them, and unfuse (symroof/passes/fuse.py,
    ``unfuse``) resets every read and write of the named ops to 1, so any crossing that
    was not 1 before fusion is lost: a tiled GEMM's re-read factor (N/T, M/T) and the
    attention builder's materialize_once crossings (scores read 0, probs 0/0) come back
    as compulsory traffic."""
    if case == "tiled gemm epilogue":
        g = Graph("mm-bias")
        h = g.gemm(g.input("x", (M, K)), g.weight("W", (K, N)), name="mm")
        g.output(g.elementwise(h, g.weight("bias_vec", (N,)), name="bias", linear=True))
        g = tile(g, {M: T, N: T})
        groups = [{"mm", "bias"}]
    else:
        g = attention(S, D, H, fused=False, unfused="materialize_once").graph
        groups = [{"scores", "softmax", "pv"}]
    original = analyze(g).bytes
    round_trip = analyze(unfuse(fuse(g, groups), groups)).bytes
    assert_formula_equal(round_trip, original)


def test_fuse_rejects_bad_groups():
    g = chain(n)
    with pytest.raises(SymroofError):
        fuse(g, [set()])
    with pytest.raises(SymroofError):
        fuse(g, [{"x"}])                      # a tensor, not an op
    with pytest.raises(SymroofError):
        fuse(g, [{"nope"}])
    with pytest.raises(SymroofError):
        unfuse(g, [{"x"}])


# ---------------------------------------------------------------------------
# attention


@FAST
@given(s=st.integers(1, 6), d=st.integers(1, 4), bq=st.integers(1, 6), bk=st.integers(1, 6),
       seed=st.integers(0, 10**6))
def test_attention_per_head_matches_simulated_kernels(s, d, bq, bk, seed):
    rng = random.Random(seed)
    q, k, v = ([[rng.uniform(-1, 1) for _ in range(d)] for _ in range(s)] for _ in range(3))
    ref = sim.reference_attention(q, k, v)
    unf_sim = sim.attention_unfused(q, k, v)
    fus_sim = sim.attention_fused(q, k, v, block_q=bq, block_k=bk, kv_resident=True)
    stream = sim.attention_fused(q, k, v, block_q=bq, block_k=bk, kv_resident=False)
    for r in (unf_sim, fus_sim, stream):
        assert all(abs(x - y) < 1e-9 for rr, rf in zip(r.value, ref) for x, y in zip(rr, rf))
    unf = attention(s, d, 1, causal=False, fused=False, b=1)
    fus = attention(s, d, 1, causal=False, fused=True, b=1)
    assert unf.bytes == unf_sim.elements == 4 * s * d + 4 * s * s
    assert fus.bytes == fus_sim.elements == 4 * s * d
    # the fused count is compulsory: a kernel that re-streams K and V moves at least it
    assert stream.elements >= fus.bytes
    assert unf.flops == fus.flops == 2 * unf_sim.macs == 2 * fus_sim.macs


def test_attention_unfused_vs_fused_symbolic():
    unf = attention(S, D, H, causal=False, fused=False)
    fus = attention(S, D, H, causal=False, fused=True)
    assert_formula_equal(unf.bytes - fus.bytes, 4 * H * S**2 * b)
    assert_formula_equal(fus.bytes, 4 * S * D * b)
    assert_formula_equal(unf.flops, fus.flops)
    assert_formula_equal(fus.flops, 4 * S**2 * D)
    (grp,) = fus.graph.provenance.fused
    assert set(grp.internal) == {"scores", "softmax"}
    assert_formula_equal(grp.capacity, 2 * H * S**2 * b)


def test_seed_attention_numbers():
    """S = D = 4,096, h = 32, b = 2, causal: 4.3 GB more unfused against 134 MB fused;
    intensity 1,024 fused and about 31 unfused; FLOPs unchanged."""
    unf = attention(4096, 4096, 32, b=2, fused=False)
    fus = attention(4096, 4096, 32, b=2, fused=True)
    assert fus.bytes == 4 * 4096 * 4096 * 2 == 134_217_728
    assert round(int(fus.bytes) / 1e6) == 134
    extra = unf.bytes - fus.bytes
    assert extra == 4 * 32 * 4096**2 * 2
    assert round(int(extra) / 1e9, 1) == 4.3
    assert fus.intensity == 1024
    assert unf.intensity == sp.Rational(1024, 33) and round(float(unf.intensity)) == 31
    assert unf.flops == fus.flops == 2 * 4096**2 * 4096
    # the symbolic fused intensity with masking is S/(2b)
    assert attention(S, D, H).intensity == S / (2 * b)


# ---------------------------------------------------------------------------
# conv2d: explicit vs implicit im2col


conv_case = st.tuples(st.integers(1, 2), st.integers(1, 2), st.integers(1, 5), st.integers(1, 5),
                      st.integers(1, 3), st.integers(1, 3), st.integers(1, 3),
                      st.integers(0, 2), st.integers(0, 10**6))   # N C H W K R S pad seed


def _conv_inputs(nb, c, h, w, k, r, s, seed):
    rng = random.Random(seed)
    x = [[[[rng.randint(-3, 3) for _ in range(w)] for _ in range(h)] for _ in range(c)]
         for _ in range(nb)]
    f = [[[[rng.randint(-3, 3) for _ in range(s)] for _ in range(r)] for _ in range(c)]
         for _ in range(k)]
    return x, f


@settings(max_examples=60, deadline=None)
@given(case=conv_case, stride=st.integers(1, 3))
def test_conv2d_im2col_matches_simulator(case, stride):
    nb, c, h, w, k, r, s, pad, seed = case
    if h + 2 * pad < r or w + 2 * pad < s:
        return
    x, f = _conv_inputs(nb, c, h, w, k, r, s, seed)
    ref = sim.reference_conv2d(x, f, stride=stride, padding=pad)
    ex_sim = sim.conv2d_im2col(x, f, stride=stride, padding=pad, explicit=True)
    im_sim = sim.conv2d_im2col(x, f, stride=stride, padding=pad, explicit=False)
    assert ex_sim.value == im_sim.value == ref
    ex = conv2d(nb, c, h, w, k, (r, s), stride=stride, padding=pad, lowering="explicit", b=1)
    im = conv2d(nb, c, h, w, k, (r, s), stride=stride, padding=pad, lowering="implicit", b=1)
    assert ex.flops == im.flops == 2 * ex_sim.macs
    col = ex_sim.extra["col"]
    # the column matrix is written once and read once more than the implicit lowering
    assert ex.bytes - im.bytes == 2 * col == ex_sim.elements - im_sim.elements
    if stride == 1:      # every input pixel is used: compulsory X traffic is exact
        assert ex.bytes == ex_sim.elements
        assert im.bytes == im_sim.elements
    else:                # strides can skip pixels; symroof reads all of X (an upper bound)
        assert ex.bytes >= ex_sim.elements and im.bytes >= im_sim.elements
        assert ex.bytes - ex_sim.elements == nb * c * h * w - ex_sim.extra["x_read"]


def test_conv2d_same_padding_duplicates_each_input_r_s_times():
    # stride 1, 3 x 3, padding 1: the column matrix is exactly R*S copies of X's size
    x, f = _conv_inputs(1, 2, 4, 5, 2, 3, 3, 7)
    ex_sim = sim.conv2d_im2col(x, f, stride=1, padding=1, explicit=True)
    assert ex_sim.extra["col"] == 9 * 2 * 4 * 5
    assert ex_sim.extra["x_max_copies"] == 9
    ex = conv2d(1, 2, 4, 5, 2, 3, padding=1, lowering="explicit", b=1)
    im = conv2d(1, 2, 4, 5, 2, 3, padding=1, lowering="implicit", b=1)
    assert ex.bytes - im.bytes == 2 * 9 * 40
    (grp,) = im.graph.provenance.fused
    assert grp.internal == ("im2col",) and grp.capacity == 9 * 40

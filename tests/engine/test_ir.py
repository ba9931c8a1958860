"""The IR: tensor and op validation, graph validation, multiplicities, copies."""

from __future__ import annotations

import re
from dataclasses import dataclass

import pytest
import sympy as sp

from symroof.testing import assert_formula_equal
from symroof.analysis import analyze
from symroof.cost import interpret
from symroof.errors import SymroofError
from symroof.ir import (Elementwise, Gather, Gemm, Graph, Kind, Move, Op, OpGroup, Reduce,
                        Tensor, as_dim)
from symroof.symbols import B, D, G, H, K, L, M, N, S, V, b, d_h




def snapshot(g: Graph) -> tuple:
    """Everything an analysis could change: nodes with attributes, edges with attributes."""
    nodes = sorted(((repr(n), tuple(sorted(d.items()))) for n, d in g.nx.nodes(data=True)),
                   key=repr)
    edges = sorted(((repr(u), repr(v), tuple(sorted(d.items())))
                    for u, v, d in g.nx.edges(data=True)), key=repr)
    return nodes, edges, g.inputs, g.outputs, g.provenance


# ---------------------------------------------------------------------------
# tensors


@pytest.mark.parametrize("shape, fragment", [
    ((0, 4), "got 0"),
    ((M, -3), "got -3"),
    ((5 / 2, 4), "got 5/2"),
    ((1e-3,), "positive integer"),
    ((float("nan"),), "finite"),
    ((sp.Float(2.5), K), "positive integer"),
    ((sp.Rational(1, 2), K), "got 1/2"),
    ((M - M,), "got 0"),
    ((sp.Symbol("z", negative=True),), "positive integer"),
    ((sp.Symbol("r", integer=False),), "positive integer"),
    ((True, K), "expected a number"),
    ((M, "K"), "expected a number"),
])
def test_bad_dimension_names_the_tensor_and_dimension(shape, fragment):
    with pytest.raises(SymroofError) as err:
        Tensor("A", shape)
    msg = str(err.value)
    assert "tensor 'A'" in msg
    assert fragment in msg


@pytest.mark.parametrize("shape", ["MK", b"MK", 3, None, M])
def test_shape_that_is_not_a_sequence_names_the_tensor(shape):
    with pytest.raises(SymroofError, match=r"tensor 'A' shape: expected a shape"):
        Tensor("A", shape)


def test_bad_dimension_reports_its_position():
    with pytest.raises(SymroofError, match=r"tensor 'X' shape dimension 2"):
        Tensor("X", (B, S, 0))


@pytest.mark.parametrize("bpv", [0, -1, sp.Integer(0), sp.Symbol("q", negative=True)])
def test_bad_bytes_per_value_names_the_tensor(bpv):
    with pytest.raises(SymroofError, match=r"tensor 'A' bytes_per_value"):
        Tensor("A", (M, K), Kind.ACTIVATION, bpv)


def test_bad_kind_and_bad_name():
    with pytest.raises(SymroofError, match=r"tensor 'A' kind: .*got 'weights'"):
        Tensor("A", (M, K), "weights")
    with pytest.raises(SymroofError, match=r"tensor name"):
        Tensor("", (M, K))


def test_tensor_sizes():
    t = Tensor("W", (D, 4 * D), Kind.WEIGHT, sp.Rational(1, 2))   # a 4-bit weight
    assert_formula_equal(t.numel, 4 * D**2)
    assert_formula_equal(t.nbytes, 2 * D**2)                                 # 4*D**2 values / 2 per byte
    assert t.kind is Kind.WEIGHT
    assert Tensor("x", (M, K)).bytes_per_value == b                 # default: the symbol b
    # a float dimension that is a whole number becomes an exact integer
    assert Tensor("x", (4096.0, 2)).shape == (sp.Integer(4096), sp.Integer(2))
    # scalars (rank 0) hold one value
    assert Tensor("s", ()).numel == 1


def test_as_dim_accepts_symbolic_products_of_dimensions():
    assert as_dim(B * S, "x") == B * S
    assert as_dim(D / H, "x") == D / H          # not known to be an integer: accepted
    with pytest.raises(SymroofError):
        as_dim(sp.Integer(-2) * D, "x")         # known negative


# ---------------------------------------------------------------------------
# gemm


def test_gemm_shapes_and_transposes():
    g = Graph("t")
    a = g.input("A", (M, K))
    bt = g.weight("Bt", (N, K))
    at = g.input("At", (K, M))
    w = g.weight("W", (K, N))
    assert g.gemm(a, w, name="plain").shape == (M, N)
    assert g.gemm(a, bt, name="tb", transpose_b=True).shape == (M, N)
    assert g.gemm(at, w, name="ta", transpose_a=True).shape == (M, N)
    assert g.gemm(at, bt, name="tab", transpose_a=True, transpose_b=True).shape == (M, N)
    for name in ("plain", "tb", "ta", "tab"):
        batch, m, n, k = g.node(name).dims
        assert (batch, m, n, k) == ((), M, N, K)


def test_gemm_inner_mismatch_names_op_and_both_dims():
    g = Graph("t")
    a = g.input("A", (M, K))
    w = g.weight("W", (N, K))
    with pytest.raises(SymroofError) as err:
        g.gemm(a, w, name="proj")
    msg = str(err.value)
    assert msg.startswith("gemm 'proj'")
    assert "'A' has K" in msg and "'W' has N" in msg


def test_gemm_inner_mismatch_after_transpose():
    g = Graph("t")
    a = g.input("A", (M, K))
    w = g.weight("W", (K, N))
    with pytest.raises(SymroofError, match=r"gemm 'x'.*inner dimensions differ"):
        g.gemm(a, w, name="x", transpose_b=True)     # (M,K) @ (N,K): K vs N


def test_gemm_inner_dims_equal_up_to_algebra():
    g = Graph("t")
    a = g.input("A", (M, H * d_h))
    w = g.weight("W", (d_h * H, N))
    assert g.gemm(a, w, name="ok").shape == (M, N)


def test_gemm_batch_dims():
    g = Graph("t")
    q = g.input("Q", (B, H, S, d_h))
    k = g.input("Kc", (B, H, S, d_h))
    scores = g.gemm(q, k, name="scores", transpose_b=True)
    assert scores.shape == (B, H, S, S)
    assert g.node("scores").dims == ((B, H), S, S, d_h)
    shared = g.weight("Wshared", (d_h, D))          # no batch dims: broadcast over (B, H)
    assert g.gemm(q, shared, name="bc").shape == (B, H, S, D)
    other = g.input("O", (B, G, S, d_h))
    with pytest.raises(SymroofError) as err:
        g.gemm(q, other, name="bad", transpose_b=True)
    msg = str(err.value)
    assert "gemm 'bad'" in msg and "batch dimensions differ" in msg
    assert "(B, H)" in msg and "(B, G)" in msg
    with pytest.raises(SymroofError, match=r"gemm 'rank'.*rank 1"):
        g.gemm(g.input("v", (K,)), g.weight("W2", (K, N)), name="rank")


def test_gemm_output_shape_is_checked():
    a = Tensor("A", (M, K))
    w = Tensor("W", (K, N), Kind.WEIGHT)
    with pytest.raises(SymroofError, match=r"gemm 'c': output 'C' has shape \(N, M\)"):
        Gemm("c", a, w, Tensor("C", (N, M)))


# ---------------------------------------------------------------------------
# elementwise, reduce, gather, move


def test_elementwise_broadcasting():
    g = Graph("t")
    x = g.input("x", (B, S, D))
    bias = g.weight("bias", (D,))
    gate = g.input("gate", (B, 1, D))
    y = g.elementwise(x, bias, gate, name="y", flops_per_element=2)
    assert y.shape == (B, S, D)
    # the first input sets the output shape; a smaller first input needs an explicit shape
    with pytest.raises(SymroofError, match=r"elementwise 'z': input 'x' .* does not broadcast"):
        g.elementwise(bias, x, name="z")
    assert g.elementwise(bias, x, name="z2", shape=(B, S, D)).shape == (B, S, D)
    with pytest.raises(SymroofError, match=r"elementwise 'w': input 'row'"):
        g.elementwise(x, g.input("row", (S,)), name="w")       # (S,) against (..., D)
    with pytest.raises(SymroofError, match=r"elementwise 'v'"):
        g.elementwise(name="v")


def test_elementwise_broadcast_reads_each_input_once():
    g = Graph("t")
    x = g.input("x", (B, S, D))
    bias = g.weight("bias", (D,))
    g.output(g.elementwise(x, bias, name="y", flops_per_element=1))
    a = analyze(g)
    assert_formula_equal(a.flops, B * S * D)
    # reads: x (B*S*D) + bias (D); write: y (B*S*D)
    assert_formula_equal(a.bytes, b * (2 * B * S * D + D))
    assert_formula_equal(a.bytes_by_kind[Kind.WEIGHT], D * b)


@pytest.mark.parametrize("axis, keepdims, shape", [
    (-1, False, (B, S)), (1, False, (B, D)), (0, True, (1, S, D)), (-2, True, (B, 1, D)),
])
def test_reduce_axes_and_keepdims(axis, keepdims, shape):
    g = Graph("t")
    x = g.input("x", (B, S, D))
    y = g.reduce(x, name="r", axis=axis, keepdims=keepdims, flops_per_element=3)
    assert y.shape == shape
    g.output(y)
    a = analyze(g)
    assert_formula_equal(a.flops, 3 * B * S * D)                  # per input element
    # read x (B*S*D) + write the reduced tensor
    assert_formula_equal(a.bytes, b * (B * S * D + sp.Mul(*shape)))


def test_reduce_bad_axis_and_bad_output():
    g = Graph("t")
    x = g.input("x", (B, S, D))
    with pytest.raises(SymroofError, match=r"reduce 'r': axis 3 out of range for 'x'"):
        g.reduce(x, name="r", axis=3)
    with pytest.raises(SymroofError, match=r"reduce 'r2': axis -4"):
        g.reduce(x, name="r2", axis=-4)
    with pytest.raises(SymroofError, match=r"reduce 'r3': output shape \(B, D, S\)"):
        Reduce("r3", x, Tensor("o", (B, D, S)), axis=1)


def test_gather_reads_only_looked_up_rows():
    g = Graph("t")
    table = g.weight("E", (V, D))
    rows = g.gather(table, (B, S), name="emb")
    assert rows.shape == (B, S, D)
    assert_formula_equal(g.node("emb").rows, B * S)
    g.output(rows)
    a = analyze(g)
    assert a.flops == 0
    # read B*S rows of D values (not the V*D table) + write B*S*D
    assert_formula_equal(a.bytes_by_kind[Kind.WEIGHT], B * S * D * b)
    assert_formula_equal(a.bytes, 2 * B * S * D * b)
    with pytest.raises(SymroofError, match=r"gather 'bad': output shape \(B, S, H\)"):
        Gather("bad", table, Tensor("o", (B, S, H)))


def test_move_copies_without_flops():
    g = Graph("t")
    x = g.input("x", (B, S, D))
    y = g.move(x, name="t", shape=(B, D, S))
    g.output(y)
    a = analyze(g)
    assert a.flops == 0
    assert_formula_equal(a.bytes, 2 * B * S * D * b)              # 1 read + 1 write
    with pytest.raises(SymroofError, match=r"move 'm'"):
        Move("m", (), Tensor("o", (B,)))


# ---------------------------------------------------------------------------
# graph validation


@dataclass(frozen=True)
class Twin(Op):
    """A hand-made op with one input and two outputs."""

    x: Tensor = None  # type: ignore[assignment]
    y: Tensor = None  # type: ignore[assignment]
    z: Tensor = None  # type: ignore[assignment]
    group = OpGroup.DATA_MOVEMENT

    @property
    def inputs(self):
        return (self.x,)

    @property
    def outputs(self):
        return (self.y, self.z)


def test_cycle_is_reported_with_node_names():
    g = Graph("loop")
    x = g.input("x", (D,))
    y = Tensor("y", (D,))
    g.add(Elementwise("f", (x,), y))
    z = Tensor("z", (D,))
    g.add(Elementwise("h", (y,), z))
    # Graph.add refuses to close a loop (y already has a producer), so close it by hand
    g.nx.add_edge(g.node("h"), y, crossings=sp.Integer(1))
    with pytest.raises(SymroofError) as err:
        g.validate()
    msg = str(err.value)
    assert "graph 'loop'" in msg and "cycle" in msg
    assert re.search(r"\bh\b", msg) and re.search(r"\by\b", msg)   # the op and the tensor
    with pytest.raises(SymroofError, match="cycle"):
        analyze(g)
    with pytest.raises(SymroofError, match="cycle"):
        g.ops


def test_add_refuses_to_write_an_existing_tensor():
    g = Graph("t")
    x = g.input("x", (D,))
    y = g.elementwise(x, name="y")
    with pytest.raises(SymroofError, match=r"elementwise 'back': output 'x' already has a producer"):
        g.add(Elementwise("back", (y,), x))
    with pytest.raises(SymroofError, match=r"elementwise 'again': output 'y' already has a producer"):
        g.add(Elementwise("again", (x,), y))


def test_rejected_add_leaves_the_graph_unchanged():
    """A refused op must not stay half-added (its node and input edges in the graph)."""
    g = Graph("t")
    x = g.input("x", (D,))
    y = g.elementwise(x, name="y")
    g.output(y)
    before = snapshot(g)
    with pytest.raises(SymroofError):
        g.add(Elementwise("again", (x,), y))
    assert snapshot(g) == before
    assert [op.name for op in g.ops] == ["y"]
    assert_formula_equal(analyze(g).bytes, 2 * D * b)        # 1 read of x + 1 write of y
    # the refused name is still free
    g.add(Elementwise("again", (y,), Tensor("w", (D,))))


def test_rejected_multi_output_add_leaves_the_graph_unchanged():
    g = Graph("t")
    x = g.input("x", (D,))
    y = g.elementwise(x, name="y")
    before = snapshot(g)
    with pytest.raises(SymroofError):
        g.add(Twin("split", x, Tensor("fresh", (D,)), y))   # second output already produced
    assert snapshot(g) == before


def test_add_rejects_unknown_input_and_non_ops():
    g = Graph("t")
    stray = Tensor("stray", (D,))
    with pytest.raises(SymroofError, match=r"elementwise 'f': input 'stray' is not a tensor of graph 't'"):
        g.add(Elementwise("f", (stray,), Tensor("o", (D,))))
    with pytest.raises(SymroofError, match=r"expected an op"):
        g.add(stray)  # type: ignore[arg-type]


def test_tensor_without_producer_is_reported():
    g = Graph("orphan")
    g.input("x", (D,))
    t = Tensor("t", (D,))
    g.nx.add_node(t, count=sp.Integer(1), block="")   # bypass the builders on purpose
    with pytest.raises(SymroofError) as err:
        g.validate()
    msg = str(err.value)
    assert "graph 'orphan'" in msg and "'t'" in msg and "no producer" in msg
    with pytest.raises(SymroofError, match=r"'t' has no producer"):
        analyze(g)


def test_duplicate_names():
    g = Graph("dup")
    x = g.input("x", (D,))
    with pytest.raises(SymroofError, match=r"graph 'dup': 'tensor x' is defined twice"):
        g.input("x", (M,))
    g.elementwise(x, name="y")
    with pytest.raises(SymroofError, match=r"'op y' is defined twice"):
        g.add(Elementwise("y", (x,), Tensor("other", (D,))))
    with pytest.raises(SymroofError, match=r"'tensor y' is defined twice"):
        g.add(Elementwise("other", (x,), Tensor("y", (D,), Kind.GRADIENT)))
    # an op and its output tensor may share a name (gemm/elementwise builders do this)
    assert g.node("y") is not None
    with pytest.raises(SymroofError, match=r"no op or tensor named 'nope'"):
        g.node("nope")


def test_output_must_be_in_graph():
    g = Graph("t")
    with pytest.raises(SymroofError, match=r"output 'x' is not in the graph"):
        g.output(Tensor("x", (D,)))


def test_set_crossings_rejects_an_op():
    """set_crossings takes a tensor; given an op it would rewrite the op's read/write edges."""
    g = Graph("t")
    x = g.input("x", (M, K))
    h = g.gemm(x, g.weight("W", (K, N)), name="h")
    g.output(h)
    with pytest.raises(SymroofError):
        g.set_crossings(g.node("h"), writes=0)      # node('h') is the op, not the tensor


# ---------------------------------------------------------------------------
# multiplicity


def block_graph(count: object | None, inner: object | None = None) -> Graph:
    """x -> [gemm with W, relu (optionally repeated `inner` times)] -> out."""
    g = Graph("blocks")
    x = g.input("x", (B, D))

    def body() -> object:
        w = g.weight("W", (D, D))
        h = g.gemm(x, w, name="h")
        if inner is None:
            return g.elementwise(h, name="act", flops_per_element=1)
        with g.repeat(inner, name="inner"):
            return g.elementwise(h, name="act", flops_per_element=1)

    if count is None:
        y = body()
    else:
        with g.repeat(count, name="layer"):
            y = body()
    g.output(y)
    return g


def test_repeat_costs_count_times_one_block():
    one = analyze(block_graph(None))
    rep = analyze(block_graph(L))
    # one block: gemm 2*B*D*D + relu B*D
    assert_formula_equal(one.flops, 2 * B * D**2 + B * D)
    # x read + W read + h written + h read + act written
    assert_formula_equal(one.bytes, b * (B * D + D**2 + B * D + B * D + B * D))
    assert_formula_equal(rep.flops, L * one.flops)
    assert_formula_equal(rep.bytes, L * one.bytes)
    assert L in rep.flops.free_symbols and L in rep.bytes.free_symbols
    for kind, value in one.bytes_by_kind.items():
        assert_formula_equal(rep.bytes_by_kind[kind], L * value)


def test_nested_repeats_multiply():
    g = block_graph(L, inner=G)
    act = g.node("act")
    assert_formula_equal(g.count(act), L * G)
    assert_formula_equal(g.count(g.node("h")), L)
    assert g.block(act) == "layer/inner"
    a = analyze(g)
    # gemm L times; relu L*G times
    assert_formula_equal(a.flops, L * 2 * B * D**2 + L * G * B * D)
    # per layer: x + W + h written (B*D + D*D + B*D); per inner: h read + act written (2*B*D)
    assert_formula_equal(a.bytes, b * (L * (2 * B * D + D**2) + L * G * 2 * B * D))


def test_repeat_does_not_unroll():
    small, big = block_graph(2), block_graph(80)
    sym = block_graph(L)
    assert small.nx.number_of_nodes() == big.nx.number_of_nodes() == sym.nx.number_of_nodes()
    assert small.nx.number_of_edges() == big.nx.number_of_edges() == sym.nx.number_of_edges()
    assert len(big.ops) == 2
    f80, f2 = analyze(big).flops, analyze(small).flops
    assert sp.cancel(f80 / f2) == 40
    assert_formula_equal(analyze(sym).flops.subs(L, 80), f80)


def test_repeat_scope_ends_after_the_block():
    g = Graph("t")
    x = g.input("x", (D,))
    with g.repeat(L):
        y = g.elementwise(x, name="y")
    z = g.elementwise(y, name="z")
    assert g.count(g.node("y")) == L and g.count(g.node("z")) == 1
    with pytest.raises(RuntimeError):
        with g.repeat(L):
            raise RuntimeError("boom")
    g.elementwise(z, name="w")
    assert g.count(g.node("w")) == 1


@pytest.mark.parametrize("count", [0, -2, sp.Rational(1, 2), 1.5])
def test_repeat_count_must_be_a_positive_integer(count):
    g = Graph("t")
    with pytest.raises(SymroofError, match=r"repeat 'blk' count"):
        with g.repeat(count, name="blk"):
            pass


# ---------------------------------------------------------------------------
# copies and purity


def test_copy_is_independent():
    g = block_graph(L)
    h = next(t for t in g.tensors if t.name == "h")
    before = snapshot(g)
    c = g.copy("fused")
    assert c.name == "fused" and g.name == "blocks"
    c.set_crossings(h, writes=0, reads=0)
    extra = c.elementwise(c.outputs[0], name="extra")
    c.output(extra)
    c.record(assumptions=("changed",))
    assert snapshot(g) == before
    assert len(g.ops) == 2 and len(c.ops) == 3
    # original, per layer: x + W + h written + h read + act written
    assert_formula_equal(analyze(g).bytes, L * b * (4 * B * D + D**2))
    # copy: h stays on chip; plus the new op outside the block (1 read + 1 write)
    assert_formula_equal(analyze(c).bytes, L * b * (2 * B * D + D**2) + 2 * B * D * b)
    # and the copy's own names are independent: the original can reuse "extra"
    g.elementwise(g.outputs[0], name="extra")


def test_analyses_never_mutate_the_graph():
    g = block_graph(L, inner=G)
    h = next(t for t in g.tensors if t.name == "h")
    g.set_crossings(h, reads=3)                # a non-default crossing must survive too
    before = snapshot(g)
    a = analyze(g)
    _ = a.flops, a.bytes, a.intensity, a.bytes_by_kind, a.per_op, a.op_intensity("h")
    _ = a.with_convention(flops="exact", traffic=["weight"]).bytes
    _ = analyze(g, ops=["contraction"], traffic=["activation"]).flops
    _ = interpret(g)
    assert snapshot(g) == before


def test_ops_order_is_topological_and_deterministic():
    g = Graph("t")
    x = g.input("x", (D,))
    z = g.elementwise(x, name="z")
    a = g.elementwise(z, name="a")
    m = g.elementwise(x, name="m")
    g.output(a, m)
    names = [op.name for op in g.ops]
    assert names.index("z") < names.index("a")
    assert names == [op.name for op in g.copy().ops]

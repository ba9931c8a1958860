"""Fusions as patterns over op groups: the fusion pass finds its kernels by structure.

Checked here: the kernels the patterns find in model graphs are exactly the groups of
op names written out below by hand (the groups the builders used to queue by name), and
fusing those named groups gives the same F and Q (``cancel(a - b) == 0``); a graph built
by hand with other op names is fused by its structure; what a pattern must not match
(a residual add, a norm's gain, an MLP between two weight GEMMs, an inner tensor read
outside); named groups keep their order and win over an overlapping match; bad patterns
are refused naming the field.
"""

from __future__ import annotations

import pytest
import sympy as sp

from symroof.analysis import analyze
from symroof.errors import SymroofError
from symroof.ir import GEMM_EPILOGUE, Graph, OpGroup, Pattern, Step
from symroof.models import get
from symroof.passes.fuse import Fuse, fuse
from symroof.passes.pipeline import Pipeline
from symroof.symbols import B, D, S, b
from symroof.workloads.attention import FLASH_ATTENTION, attention
from symroof.workloads.basic import IMPLICIT_IM2COL
from symroof.workloads.layers import forward
from symroof.workloads.latent import LATENT_ATTENTION


def _fused(g: Graph, fuse_pass: Fuse) -> Graph:
    return Pipeline("fuse", (fuse_pass,)).apply(g)


def _same(a: Graph, c: Graph) -> None:
    x, y = analyze(a), analyze(c)
    assert sp.cancel(x.flops - y.flops) == 0
    assert sp.cancel(x.bytes - y.bytes) == 0


def _epilogues(prefix: str, *names: str) -> list[set[str]]:
    return [{prefix + n, f"{prefix}{n}+bias"} for n in names]


def _flash(prefix: str, sinks: bool) -> set[str]:
    ops = {"scores", "softmax", "pv"} | ({"scores_by_head", "probs"} if sinks else set())
    return {prefix + o for o in ops}


@pytest.mark.parametrize("name,decode", [("qwen2-7b", False), ("gpt-oss-20b", True),
                                         ("deepseek-v3", False)])
def test_patterns_find_the_named_kernels(name: str, decode: bool) -> None:
    m = get(name)
    g, f = forward(m, batch=B, seq=1 if decode else S, context=S if decode else None,
                   decode=decode)
    if name == "qwen2-7b":       # biases on q, k, v only; plain attention
        want = [*_epilogues("", "q_proj", "k_proj", "v_proj"), _flash("", False)]
    elif name == "gpt-oss-20b":  # biases everywhere, sinks; a local (windowed) layer group
        want = [grp for p in ("", "local.") for grp in (
            *_epilogues(p, "q_proj", "k_proj", "v_proj"), _flash(p, True),
            *_epilogues(p, "o_proj", "router", "up", "gate", "down"))]
    else:                        # MLA prefill: kv_b_proj named, attention by its pattern
        want = [grp for p in ("", "dense.") for grp in (
            {p + "k_up", p + "v_up"}, _flash(p, False))]
    found = _fused(g, f)
    assert [set(x.ops) for x in found.provenance.fused] == want
    named = _fused(g, Fuse(tuple(frozenset(w) for w in want),
                           tuple(x.tile_capacity for x in found.provenance.fused)))
    _same(found, named)
    assert named.provenance.fused == found.provenance.fused


def test_absorbed_latent_attention_has_two_heads() -> None:
    m = get("deepseek-v3")
    g, f = forward(m, batch=B, seq=1, context=S, decode=True)
    found = [x for x in _fused(g, f).provenance.fused if "pv" in x.ops]
    assert set(found[0].ops) == {"scores_latent", "scores_rope", "scores", "softmax", "pv"}
    assert FLASH_ATTENTION.heads == 1 and LATENT_ATTENTION.heads == 2
    assert not list(FLASH_ATTENTION.matches(g))   # two scores GEMMs: not plain attention
    lat = m.latent
    assert found[0].tile_capacity is not None and sp.cancel(
        found[0].tile_capacity - ((2 * sp.Symbol("B_r", positive=True, integer=True)
                                   + 2 * sp.Symbol("B_c", positive=True, integer=True))
                                  * (lat.kv_rank + lat.rope_dim) * m.kv_bytes
                                  + 4 * sp.Symbol("B_r", positive=True, integer=True)
                                  * sp.Symbol("B_c", positive=True, integer=True))) == 0


def _layer(names: dict[str, str]) -> Graph:
    """A biased projection then attention, built by hand under other op names."""
    g = Graph("hand")
    x = g.input("x", (S, D))
    q = g.gemm(x, g.weight("Wq", (D, D)), name=names["proj"])
    q = g.elementwise(q, g.weight("bq", (D,)), name=names["bias"], linear=True)
    k, v = g.input("k", (S, D)), g.input("v", (S, D))
    s = g.gemm(q, k, transpose_b=True, name=names["qk"])
    m = g.elementwise(s, name=names["mask"])
    p = g.elementwise(m, name=names["exp"])
    g.output(g.gemm(p, v, name=names["av"]))
    return g


def test_a_new_graph_is_fused_by_its_structure() -> None:
    names = dict(proj="P", bias="Pb", qk="QK", mask="M", exp="E", av="AV")
    g = _layer(names)
    by_pattern = _fused(g, Fuse((), patterns=(GEMM_EPILOGUE, FLASH_ATTENTION)))
    assert [set(f.ops) for f in by_pattern.provenance.fused] == [{"P", "Pb"},
                                                                 {"QK", "M", "E", "AV"}]
    by_name = fuse(g, [{"P", "Pb"}, {"QK", "M", "E", "AV"}])
    _same(by_pattern, by_name)
    # an independent count: fused, the S x S scores and both masks never cross; the
    # projection's output is written once (it leaves the epilogue) and read by QK
    plain, fused_q = analyze(g).bytes, analyze(by_pattern).bytes
    saved = sp.expand(plain - fused_q)
    assert sp.cancel(saved - b * (2 * S * D + 6 * S**2)) == 0


def test_what_a_pattern_must_not_match() -> None:
    g = Graph("neg")
    x = g.input("x", (S, D))
    h = g.gemm(x, g.weight("W1", (D, D)), name="up")
    r = g.elementwise(h, x, name="residual", linear=True)          # no weight: not a bias
    n = g.elementwise(r, g.weight("gain", (D,)), name="norm")       # not linear: a norm
    a = g.elementwise(g.gemm(n, g.weight("W2", (D, D)), name="mid"), name="act")
    g.output(g.gemm(a, g.weight("W3", (D, D)), name="down"))       # an MLP, not attention
    assert list(GEMM_EPILOGUE.matches(g)) == []
    assert list(FLASH_ATTENTION.matches(g)) == []
    # scores read outside the region (an output of the graph): not one kernel
    g2 = Graph("leak")
    s = g2.gemm(g2.input("q", (S, D)), g2.input("k", (S, D)), transpose_b=True, name="qk")
    g2.output(s, g2.gemm(g2.elementwise(s, name="sm"), g2.input("v", (S, D)), name="av"))
    assert list(FLASH_ATTENTION.matches(g2)) == []


def test_named_groups_win_and_keep_their_order() -> None:
    g = _layer(dict(proj="P", bias="Pb", qk="QK", mask="M", exp="E", av="AV"))
    f = Fuse((frozenset({"M", "E"}), frozenset({"P", "Pb"})),
             patterns=(FLASH_ATTENTION, GEMM_EPILOGUE))
    assert f.kernels(g) == [(frozenset({"M", "E"}), None), (frozenset({"P", "Pb"}), None)]
    assert Fuse(()).wanted is False and Fuse((), patterns=(GEMM_EPILOGUE,)).wanted


def test_workload_results_through_patterns() -> None:
    # FlashAttention's traffic 4 S D b (seed): found by the pattern, not by names
    a = attention(S, D, 8)
    assert sp.cancel(a.bytes - 4 * S * D * b) == 0
    assert [set(f.ops) for f in a.graph.provenance.fused] == [{"scores", "softmax", "pv"}]
    assert IMPLICIT_IM2COL.head.group is OpGroup.DATA_MOVEMENT


def test_bad_patterns_are_refused() -> None:
    with pytest.raises(SymroofError, match="pattern step group: expected an OpGroup"):
        Step("gemm")  # type: ignore[arg-type]
    with pytest.raises(SymroofError, match="pattern 'p' head: expected a Step"):
        Pattern("p", head=OpGroup.CONTRACTION, tail=Step(OpGroup.CONTRACTION))  # type: ignore[arg-type]
    with pytest.raises(SymroofError, match="pattern 'p' body: expected OpGroups"):
        Pattern("p", Step(OpGroup.CONTRACTION), Step(OpGroup.CONTRACTION), body={"x"})  # type: ignore[arg-type]

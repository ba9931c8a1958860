"""Every workload runs through the pass pipeline (issue 24): each registry entry names
the stages its builder may run, the graph records those it ran, and the pipeline's route
gives the same F, Q and communication as applying the passes by hand."""

from __future__ import annotations

import pytest
import sympy as sp

from symroof.analysis import analyze
from symroof.cost import MEMORY_KINDS
from symroof.ir import Kind
from symroof.models import get
from symroof.passes.pipeline import ORDER
from symroof.passes.shard import Shard
from symroof.symbols import B, S
from symroof.workloads import registry
from symroof.workloads.attention import op_groups
from symroof.workloads.layers import forward_graph
from symroof.options import OpsCounted


def _built(name: str, **layout: object):
    entry = registry.get(name)
    args = entry.arguments()
    if entry.model:
        args = (get("llama-3-8b"), *args)
    return entry, entry.build(*args, **layout)


@pytest.mark.parametrize("name", registry.names())
def test_each_graph_records_the_stages_it_ran_from_its_entrys_pipeline(name):
    entry, a = _built(name)
    ran = a.graph.provenance.passes
    assert list(ran) == [p for p in entry.pipeline if p in ran]      # in the entry's order
    assert all(p in ORDER for p in entry.pipeline)
    if entry.pipeline[:1] == ("fuse",) and name != "conv2d":   # conv2d's default: explicit
        assert ran[:1] == ("fuse",)           # the default kernels are fused ones


def test_implicit_im2col_is_the_fusion_stage_of_conv2d():
    entry = registry.get("conv2d")
    implicit = entry.build(*entry.arguments(), options={"lowering": "implicit"})
    explicit = entry.build(*entry.arguments())
    assert implicit.graph.provenance.passes == ("fuse",)
    assert explicit.graph.provenance.passes == ()
    assert sp.cancel(implicit.flops - explicit.flops) == 0      # fusion moves bytes only
    assert sp.cancel(implicit.bytes - explicit.bytes) != 0


@pytest.mark.parametrize("name", ["prefill", "decode"])
def test_a_sharded_workload_runs_fuse_then_shard(name):
    _, a = _built(name, tp=2, pp=2)
    assert a.graph.provenance.passes == ("fuse", "shard")


def test_the_pipeline_route_is_the_by_hand_route():
    """Second computation: the forward graph fused by forward_graph, then Shard applied by
    hand, as decode did before it ran a pipeline."""
    m = get("llama-3-70b")
    _, a = _built("decode", tp=4, pp=2)
    by_hand = Shard(sp.Integer(4), sp.Integer(2), sp.Integer(1)).apply(
        forward_graph(m, batch=B, seq=1, context=S, decode=True))
    b = analyze(by_hand, ops=op_groups(OpsCounted.CONTRACTIONS),
                traffic=frozenset({Kind.WEIGHT, Kind.KV_CACHE}) & MEMORY_KINDS, tokens=B)
    a70 = registry.get("decode").build(m, B, S, tp=4, pp=2)
    assert sp.cancel(a70.flops - b.flops) == 0
    assert sp.cancel(a70.bytes - b.bytes) == 0
    sent = Kind.COMMUNICATION
    assert sp.cancel(a70.cost.bytes_by_kind[sent] - b.cost.bytes_by_kind[sent]) == 0
    assert a.graph.provenance.passes == a70.graph.provenance.passes


def test_a_claims_fuse_and_tile_are_extra_stages_in_the_pipelines_order():
    from symroof.verify.recipe import Context, workload
    ctx = Context(declared={"T": sp.Symbol("T", positive=True, integer=True)})
    tiled = workload({"builder": "gemm", "args": ["M", "N", "K"], "tile": {"M": "T", "N": "T"}},
                     ctx, {}, "claim 'x'.value.workload")
    assert tiled.graph.provenance.passes == ("tile",)
    _, plain = _built("attention", options={"fused": False})
    both = workload({"builder": "attention", "args": ["S", "D", "H"],
                     "options": {"fused": False}, "fuse": [["scores", "softmax"]],
                     "tile": {"S": "T"}}, ctx, {}, "claim 'x'.value.workload")
    # given tile before fuse in the table, fusion still runs first
    assert both.graph.provenance.passes == ("fuse", "tile")
    assert plain.graph.provenance.passes == ()


def test_assumptions_have_one_source_the_graphs_provenance(capsys):
    """Analysis.assumptions is read from the graph (graph_assumptions), so a tiled copy
    says its tiles divide, a changed convention keeps them, conv2d's output-size
    assumptions travel in its graph, and ``symroof derive attention`` prints the fused
    kernel's on-chip capacity condition."""
    from symroof.analysis import graph_assumptions
    from symroof.passes.tile import tile
    from symroof.verify.recipe import Context, workload
    from symroof.cli import main
    _, att = _built("attention")
    assert att.assumptions == graph_assumptions(att.graph) != ()
    assert att.with_convention(flop_count="one_per_mac").assumptions == att.assumptions
    ctx = Context(declared={"T": sp.Symbol("T", positive=True, integer=True)})
    tiled = workload({"builder": "gemm", "args": ["M", "N", "K"], "tile": {"M": "T"}},
                     ctx, {}, "claim 'x'.value.workload")
    by_hand = tile(_built("gemm")[1].graph, {sp.Symbol("M", positive=True, integer=True):
                                             sp.Symbol("T", positive=True, integer=True)})
    assert tiled.assumptions == graph_assumptions(by_hand) != ()
    conv = registry.get("conv2d").build(*registry.get("conv2d").arguments(), stride=2)
    assert conv.assumptions == conv.graph.provenance.assumptions != ()
    assert main(["derive", "attention"]) == 0
    out = capsys.readouterr().out
    assert "assuming fused pv+scores+softmax: on-chip memory holds a tile of" in out

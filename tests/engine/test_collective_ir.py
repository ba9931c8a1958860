"""The collective op lives in the IR and its cost rule in the one cost table.

Checked here: ``Collective`` is one class whether reached from ``symroof.ir`` or the
sharding pass; the cost table holds its rule; a sharded MLP's link bytes equal the hand
count (a ring all-reduce of ``B D b`` over 4 devices sends ``3/2 B D b``) and, for a
sharded decode, the collectives' own sum (count x bytes x factor) that the sharding
pass's ``collective_terms`` computes separately; a wire of another kind is refused.
"""

from __future__ import annotations

import pytest
import sympy as sp

from symroof.analysis import analyze
from symroof.cost import RULES
from symroof.errors import SymroofError
from symroof.ir import Collective, CollectiveKind, Graph, Kind, Tensor
from symroof.models import get
from symroof.passes.shard import Collective as ShardCollective
from symroof.passes.shard import CollectiveKind as ShardKind
from symroof.passes.shard import collective_terms, shard
from symroof.symbols import B, D, S, b
from symroof.workloads import decode


def test_one_class_and_its_rule_in_the_table() -> None:
    assert ShardCollective is Collective and ShardKind is CollectiveKind
    assert Collective in RULES and Collective.__module__ == "symroof.ir.collective"


def test_link_bytes_against_hand_counts() -> None:
    g = Graph("mlp")
    h = g.gemm(g.input("x", (B, D)), g.weight("W_up", (D, 4 * D)), name="up")
    g.output(g.gemm(h, g.weight("W_down", (4 * D, D)), name="down"))
    a = analyze(shard(g, tp=4))
    assert sp.cancel(a.cost.bytes_by_kind[Kind.COMMUNICATION] - sp.Rational(3, 2) * B * D * b) == 0
    dec = decode(get("llama-3-8b"), batch=B, context=S, tp=8)
    by_op = sp.Add(*(dec.graph.count(op.wire) * op.wire.nbytes * op.factor
                     for op in dec.graph.ops if isinstance(op, Collective)))
    sent, _, _ = collective_terms(dec.graph, "ring")
    assert sp.cancel(dec.cost.bytes_by_kind[Kind.COMMUNICATION] - by_op) == 0
    assert sp.cancel(sent - by_op) == 0


def test_a_wire_of_another_kind_is_refused() -> None:
    x = Tensor("h", (B, D), Kind.ACTIVATION, 2)
    with pytest.raises(SymroofError, match="collective 'c': field 'wire': expected a Tensor "
                                           "of kind communication"):
        Collective("c", x, x, x)

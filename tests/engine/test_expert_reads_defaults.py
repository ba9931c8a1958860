"""One default for the routed experts a step reads: ``forward`` (and so speculative
decoding's verification) reads the expected distinct experts E (1 - (1 - k/E)^T) of its
T tokens, as decode, prefill and the request do; a training step reads all of them, by
choice (its docstring says why). Second computation: the expert bytes by hand."""

from __future__ import annotations

import inspect

import sympy as sp

from symroof import serving
from symroof.ir import Kind
from symroof.models import transformer
from symroof.options import ExpertReads
from symroof.request import make
from symroof.symbols import b
from symroof.workloads import decode, prefill
from symroof.workloads.layers import forward, forward_graph
from symroof.workloads.transformer import training_graph

E, K, D, FF, L = 8, 2, 32, 48, 2
EXPERT = 3 * D * FF            # gate, up, down of one expert


def _moe():
    return transformer(name="moe", layers=L, d_model=D, heads=4, d_ff=FF, mlp="gated",
                       experts=E, experts_per_token=K, vocab=64).with_precision(
        weights="bf16", kv_cache="bf16", activations="bf16")


def _expert_bytes(tokens: int) -> sp.Expr:
    """Every layer's experts' weights, at the expected distinct count, 2 bytes each."""
    return L * E * (1 - (1 - sp.Rational(K, E)) ** tokens) * EXPERT * 2


def _weights_minus_dense(g_bytes: sp.Expr, m, tokens: int) -> sp.Expr:
    """A step's weight bytes less all but the routed experts: every parameter once, but
    the input embedding only at its ``tokens`` rows (a gather)."""
    rest = (m.params - L * E * EXPERT - 64 * D + tokens * D) * 2
    return g_bytes - rest


def test_every_builder_defaults_to_the_expected_reads():
    for fn in (forward, forward_graph, decode, prefill, serving.speculative, make):
        assert inspect.signature(fn).parameters["expert_reads"].default == \
            ExpertReads.EXPECTED, fn.__name__
    m = _moe()
    g, _ = forward(m, batch=3, seq=1, context=16, decode=True)
    assert sp.expand(_weights_minus_dense(decode(m, 3, 16).cost.bytes_by_kind[Kind.WEIGHT], m, 3)
                     - _expert_bytes(3)) == 0
    # the unfused forward graph reads the same expert weights as the decode step
    reads = sum(g.count(t) * t.nbytes for t in g.tensors if t.kind == Kind.WEIGHT
                and len(t.shape) == 3)
    assert sp.expand(reads.subs(b, 2) - L * E * EXPERT * 2) == 0   # stored: all of them
    # (what a step reads is the crossings the builder sets: see the analyses above)


def test_speculative_verification_reads_the_experts_its_tokens_route_to():
    """k = 3 drafted tokens: the verification runs 4 tokens a sequence, batch 2: 8 tokens,
    8 (1 - (3/4)^8) = 7.20 experts a layer, where 'all' read 8."""
    m = _moe()
    ver = serving.verify_pass(m, 2, 16, sp.Integer(3), 1)
    expected = _weights_minus_dense(ver.cost.bytes_by_kind[Kind.WEIGHT], m, 8)
    assert sp.expand(expected - _expert_bytes(8)) == 0
    every = serving.verify_pass(m, 2, 16, sp.Integer(3), 1, expert_reads="all")
    assert _weights_minus_dense(every.cost.bytes_by_kind[Kind.WEIGHT], m, 8) == L * E * EXPERT * 2
    # the same 8 tokens as one decode step of batch 8: the same experts
    assert sp.expand(_weights_minus_dense(decode(m, 8, 16).cost.bytes_by_kind[Kind.WEIGHT], m, 8)
                     - _expert_bytes(8)) == 0


def test_training_reads_every_expert():
    m = _moe()
    g = training_graph(m, 1, 2, optimizer=None)
    routed = [t for t in g.tensors if t.kind == Kind.WEIGHT and len(t.shape) == 3]
    assert routed and all(t.shape[0] == E for t in routed)
    assert "expert_reads" not in inspect.signature(training_graph).parameters
    assert "all" in (training_graph.__doc__ or "")

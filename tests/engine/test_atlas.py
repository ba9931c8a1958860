"""Crossover atlas (symroof/atlas/): every crossover of a workload, found without being told
which terms to compare, with its conditions, sides, limits and the pairs that never cross.

The seed-001 tests find each of the seed's four crossovers in the atlas of the seeds'
symbolic decode (or of a family of it) and assert it as a formula, with a second,
independent computation: ``sympy.solve``, substitution back, or the roofline's own
``bound`` on either side of the crossing.
"""

from __future__ import annotations

import json
import os
import itertools
import subprocess
import sys
from fractions import Fraction
from types import SimpleNamespace
from pathlib import Path

import pytest
import sympy as sp

import symroof as sr
from symroof.atlas import RIDGE, AtlasBudget, Reason, Status, atlas, family
from symroof import budget
from symroof.atlas import solver as atlas_solver
from symroof.budget import limits
from symroof.cli import main
from symroof.errors import SymroofError
from symroof.ir import Kind
from symroof.parse import parse_expr
from symroof.present.atlas import atlas_doc, atlas_lines, atlas_table, reason_text
from symroof.present.commands import dumps
from symroof.precision import bytes_per_value
from symroof.symbols import CANONICAL, B, D, G, H, L, P, S, b, bytes_symbol, quantity
from symroof.testing import assert_close, assert_formula_equal

ROOT = Path(__file__).resolve().parents[2]
R = RIDGE
H100 = "R[h100-sxm bf16 hbm]"


@pytest.fixture(scope="module")
def seed_model():
    return sr.models.transformer(layers=L, d_model=D, heads=H)


@pytest.fixture(scope="module")
def seed_atlas(seed_model):
    dec = sr.workloads.decode(seed_model, B, S)
    return atlas(dec, over=[B, S], hardware="h100-sxm", precisions=["bf16"],
                 named={P: seed_model.params})


def _decode(model):
    return sr.workloads.decode(model, B, S)


# ---------------------------------------------------------------------------------------
# seed 001, crossover 1: attention FLOPs = weight FLOPs at S = P/(2LD)


def test_attention_flops_equal_weight_flops(seed_atlas, seed_model):
    e = seed_atlas.find("F_attention", "F_weights", S)
    assert e.status is Status.CROSSES and e.kind == "flops"
    (c,) = e.solutions
    assert c.always
    assert_formula_equal(c.value, 6 * D)                        # the exact graph form
    (t,) = e.textbook
    assert_formula_equal(t.value, P / (2 * L * D))              # the seed's form
    assert sr.text(t.value) == "P/(2*L*D)"
    assert_formula_equal(t.value.xreplace({P: seed_model.params}), c.value)
    # independent: sympy.solve on the seed's own terms, 4 L S D = 2 P
    assert sp.solve(sp.Eq(4 * L * S * D, 2 * P), S) == [t.value]
    # the seed's numbers from its round P: 8B -> 30,518 ("~30,500"), 70B -> 53,406
    assert t.value.xreplace({P: 8 * 10**9, L: 32, D: 4096}) == sp.Rational(
        Fraction(8 * 10**9, 2 * 32 * 4096).numerator, Fraction(8 * 10**9, 2 * 32 * 4096).denominator)
    assert_close(t.value.xreplace({P: 8 * 10**9, L: 32, D: 4096}), 30_500, rel=1e-3)
    assert_close(t.value.xreplace({P: 7 * 10**10, L: 80, D: 8192}), 53_400, rel=1e-3)
    # sides: weights dominate at short context, attention at long
    assert e.below.dominant == "F_weights" and "weight" in e.below.lever
    assert e.above.dominant == "F_attention" and "context" in e.above.lever
    assert [(x.to, x.value) for x in e.asymptotes] == [(0, 0), (sp.oo, sp.oo)]


def test_attention_weight_flops_never_cross_in_batch(seed_atlas):
    """Batching does not move the FLOP balance: both parts are proportional to B."""
    e = seed_atlas.find("F_attention", "F_weights", B)
    assert e.status is Status.NEVER and e.reason is Reason.PROPORTIONAL
    assert_formula_equal(e.detail, S / (6 * D))
    assert reason_text(e) == "both scale alike in B: F_attention/F_weights = S/(6*D) for every B"


def test_attention_crossover_of_llama_70b_from_its_graph():
    """README: the 70B's own graph gives 53,026 (the seed's round P, 53,400)."""
    a = atlas(_decode(sr.models.get("llama-3-70b")), over=[S], symbolic_ridge=False)
    (c,) = a.find("F_attention", "F_weights", S).solutions
    assert c.value == sp.Rational(265128, 5)
    # independent: weight-GEMM FLOPs by hand, 2 x (weights a GEMM reads), over 4 L D
    gemm_weights = 80 * (2 * 8192**2 + 2 * 8192 * 1024 + 3 * 8192 * 28672) + 8192 * 128256
    assert c.value == sp.Rational(2 * gemm_weights, 4 * 80 * 8192)


# ---------------------------------------------------------------------------------------
# seed 001, crossover 2: KV bytes = weight bytes along S*B = weight bytes / KV bytes per token


def test_kv_bytes_equal_weight_bytes(seed_atlas, seed_model):
    for var, other in ((S, B), (B, S)):
        e = seed_atlas.find("Q_kv_cache", "Q_weight", var)
        (c,) = e.solutions
        assert_formula_equal(c.value, 6 * D / other)
        invariant = next(i for i in e.invariants if i.value.free_symbols <= {D})
        assert invariant.product == B * S
        # S*B = weight bytes / KV bytes per token, both from the model
        assert_formula_equal(invariant.value,
                             seed_model.weight_bytes_total / seed_model.kv_bytes_per_token)
        assert_formula_equal(invariant.value, 6 * D)
        assert e.below.dominant == "Q_weight" and e.below.lever.startswith("quantize weights")
        assert e.above.dominant == "Q_kv_cache" and "GQA" in e.above.lever
    # with the weight bytes and KV bytes per token named, the invariant is the seed's ratio
    W, KV = quantity("W_bytes"), quantity("KV_per_token")
    named = atlas(_decode(seed_model), over=[B, S], symbolic_ridge=False,
                  named={W: seed_model.weight_bytes_total, KV: seed_model.kv_bytes_per_token})
    e = named.find("Q_kv_cache", "Q_weight", S)
    assert any(i.product == B * S and i.value == W / KV for i in e.invariants)


def test_kv_crossover_of_llama_70b_against_the_seed():
    """Seed: S*B = 140e9/320e3 = 437,500 ("320 KB" read as 320,000). The model: 141.1 GB
    of weights over 327,680 B of KV per token is 430,626. The decode graph reads every
    weight but the embedding table, of which it gathers B rows: S = (B + 8,484,257)/(20 B),
    so S*B = 424,213 + B/20; at B = 64: S = 6,628, where the seed says about 6,800."""
    m = sr.models.get("llama-3-70b")
    a = atlas(_decode(m), over=[B, S], symbolic_ridge=False)
    (c,) = a.find("Q_kv_cache", "Q_weight", S).solutions
    assert_formula_equal(c.value, (B + 8484257) / (20 * B))
    q = _decode(m).bytes_by_kind
    at64 = c.value.xreplace({B: 64})
    assert q[Kind.KV_CACHE].xreplace({B: 64, S: at64}) == q[Kind.WEIGHT].xreplace({B: 64})
    assert_close(at64, 6628.4, rel=1e-4)
    assert_close(Fraction(140 * 10**9, 320 * 10**3) / 64, 6836, rel=1e-3)   # the seed's
    total = m.weight_bytes_total / m.kv_bytes_per_token
    assert total == sp.Rational(8612513, 20)
    assert_close(total, 430_626, rel=1e-5)
    assert sr.limit(c.value * B, B, 0) == sp.Rational(8484257, 20)
    embedding = 128256 * 8192 * 2 / sp.Integer(327680)          # the table the step skips
    assert sp.Rational(8484257, 20) + embedding == total


# ---------------------------------------------------------------------------------------
# seed 001, crossover 3: the batch at which decode meets a ridge, and when it exists


def test_batch_meets_ridge_with_existence_condition(seed_atlas):
    e = seed_atlas.find("I", "R", B)
    (c,) = e.solutions
    assert_formula_equal(c.value, 6 * D * R * b / (12 * D + 2 * S - R * S * b))
    (cond,) = c.conditions
    assert isinstance(cond, sp.StrictLessThan) and cond.lhs == R
    ceiling = next(x.value for x in seed_atlas.limits if x.var == B and x.to == sp.oo)
    assert_formula_equal(ceiling, (12 * D / S + 2) / b)          # seed 000's ceiling
    assert_formula_equal(cond.rhs, ceiling)                      # exists iff R < ceiling
    # independent: sympy.solve of I = R
    dec = sr.workloads.decode(sr.models.transformer(layers=L, d_model=D, heads=H), B, S)
    (sol,) = sp.solve(sp.Eq(dec.intensity, R), B)
    assert_formula_equal(sol, c.value)
    assert e.below.bound == "memory" and e.above.bound == "compute"
    # in the seed's P: B = P R b / (2P + 4 L S D - 2 L S D R b)
    (t,) = e.textbook
    assert_formula_equal(t.value, P * R * b / (2 * P + 4 * L * S * D - 2 * L * S * D * R * b))


def test_batch_meets_h100_ridge_only_at_short_context(seed_atlas):
    """On an H100 at bf16 (ridge 19788/67 = 295 FLOP/B) a decode step of the 6.4B model
    turns compute-bound only below S = 402 D/19721 (83 tokens at D = 4096); at the seed's
    S = 1,024 (ceiling 25 FLOP/B) no batch gets there."""
    e = seed_atlas.find("I", H100, B)
    (c,) = e.solutions
    assert c.conditions == (sp.StrictLessThan(S, 402 * D / 19721),)
    assert c.at({D: 4096, S: 1024}) is None
    b_star = c.at({D: 4096, S: 64})
    assert b_star == sp.Rational(7598592, 6007)                  # 1,265 sequences
    dec = _decode(sr.models.get("seed-6.4b"))
    below, above = int(b_star), int(b_star) + 1                  # independent: the roofline
    assert sr.roofline(dec, "h100-sxm", subs={B: below, S: 64}).bound == "memory"
    assert sr.roofline(dec, "h100-sxm", subs={B: above, S: 64}).bound == "compute"


def test_crossover_no_seed_states(seed_atlas):
    """A crossover neither seed states: intensity = ridge solved in the context S.

    Seed 001 solves I = ridge only in the batch, and seed 000 gives the ceiling as B grows.
    The atlas also solves it in S: S = 6D(2B - Rb)/(B(Rb - 2)). As S -> 0 the intensity
    tends to 2B/b (a batch of GEMVs), so a decode step whose batch exceeds Rb/2 starts
    compute-bound and turns memory-bound as its context grows past that S; since B >= 1,
    the condition ``(2B - Rb)/(Rb - 2) > 0`` means Rb > 2 and B > Rb/2. On an H100 at
    bf16 that is B > 19788/67 (296 sequences), and even at B = 512 the context must stay
    under 35 tokens: decode at any real context is memory-bound at every batch.
    """
    e = seed_atlas.find("I", "R", S)
    (c,) = e.solutions
    assert_formula_equal(c.value, 6 * D * (2 * B - R * b) / (B * (R * b - 2)))
    (cond,) = c.conditions
    assert_formula_equal(cond.lhs, (2 * B - R * b) / (R * b - 2))
    assert cond.rhs == 0 and isinstance(cond, sp.StrictGreaterThan)
    assert e.below.bound == "compute" and e.above.bound == "memory"
    lim0 = next(x.value for x in seed_atlas.limits if x.var == S and x.to == 0)
    assert_formula_equal(lim0, 2 * B / b)
    chip = seed_atlas.find("I", H100, S)
    (h,) = chip.solutions
    assert h.conditions == (sp.StrictGreaterThan(B, sp.Rational(19788, 67)),)
    assert h.at({B: 296, D: 4096}) > 0 and h.at({B: 295, D: 4096}) is None
    s_star = h.at({B: 512, D: 4096})
    assert s_star == sp.Rational(696768, 19721)                   # 35.3 tokens
    dec = _decode(sr.models.get("seed-6.4b"))                     # independent: the roofline
    assert sr.roofline(dec, "h100-sxm", subs={B: 512, S: 35}).bound == "compute"
    assert sr.roofline(dec, "h100-sxm", subs={B: 512, S: 36}).bound == "memory"


# ---------------------------------------------------------------------------------------
# seed 001, crossover 4: INT4 weights help decode until the batch turns it compute-bound


def test_int4_weights_help_until_the_batch_is_compute_bound():
    """FP16 -> INT4 weights: up to 4x on memory-bound decode, ~0 once compute-bound.

    In the family atlas the batch where decode meets the H100's bf16 ridge moves from
    B16 (FP16 weights) to B4 < B16 (INT4 weights, compute still at bf16). Below B4 both
    are memory-bound and INT4 is faster by the ratio of bytes; past B16 both are
    compute-bound with the same FLOPs at the same peak, and INT4 gains nothing.
    """
    m = sr.models.get("seed-6.4b")
    general = _decode(m.replace(weight_bytes=bytes_symbol("b_w"), kv_bytes=sp.Integer(2)))
    members = {p: _decode(m.with_precision(weights=p, kv_cache="bf16"))
               for p in ("bf16", "fp8", "int4")}
    fam = family(members, over=[B, S], hardware="h100-sxm", precisions=["bf16"],
                 general=general, symbolic_ridge=False)
    row = fam.row("I", H100, B)
    (g,) = row.general.solutions
    stars = {}
    for name, e in zip(fam.names, row.entries):
        (c,) = e.solutions
        bw = bytes_per_value(name)
        assert_formula_equal(c.value, g.value.xreplace({bytes_symbol("b_w"): bw}))
        stars[name] = c.at({S: 64})
    assert stars["int4"] < stars["fp8"] < stars["bf16"]
    assert stars["bf16"] / stars["int4"] == 4     # B* = R Q_weight / (F - R Q_kv) per sequence

    def time_s(name, batch):
        return sr.roofline(members[name], "h100-sxm", subs={B: batch, S: 64}).time_s

    low, mid, high = 8, int((stars["int4"] + stars["bf16"]) / 2), int(stars["bf16"]) + 1
    at_low = {B: low, S: 64}                      # both memory-bound: the ratio of bytes, < 4
    ratio = members["bf16"].bytes.xreplace(at_low) / members["int4"].bytes.xreplace(at_low)
    assert time_s("bf16", low) / time_s("int4", low) == ratio
    assert_close(ratio, 3.77, rel=1e-3)           # 4x on the weights; the KV cache stays
    assert 1 < time_s("bf16", mid) / time_s("int4", mid) < 4
    assert time_s("bf16", high) == time_s("int4", high)                    # no help


def test_family_mha_against_gqa():
    """GQA with G KV heads: the KV = weight bytes curve moves by the model's own ratio."""
    mha = sr.models.transformer(layers=L, d_model=D, heads=H)
    gqa = sr.models.transformer(layers=L, d_model=D, heads=H, kv_heads=G)
    fam = family({"MHA": _decode(mha), "GQA": _decode(gqa)}, over=[S], symbolic_ridge=False)
    row = fam.row("Q_kv_cache", "Q_weight", S)
    for model, e in zip((mha, gqa), row.entries):
        (c,) = e.solutions
        assert_formula_equal(c.value * B, model.weight_bytes_total / model.kv_bytes_per_token)
    (g,) = row.entries[1].solutions
    assert_formula_equal(g.value, (10 * D * H + 2 * D * G) / (2 * B * G))


# ---------------------------------------------------------------------------------------
# never crosses


def _gemm_stack(layers=3):
    g = sr.Graph("gemm-stack")
    h = g.input("x", (B, D))
    for i in range(layers):
        h = g.gemm(h, g.weight(f"W{i}", (D, D)), name=f"mm{i}")
    g.output(h)
    return sr.analyze(g)


def test_gemm_stack_has_no_attention():
    a = atlas(_gemm_stack(), over=[B, D], hardware="h100-sxm", precisions=["bf16"])
    e = a.find("F_attention", "F_weights", B)
    assert e.var is None and e.status is Status.NEVER and e.reason is Reason.ZERO
    assert e.lhs_expr == 0 and reason_text(e) == "F_attention is 0 for this workload"
    for kind in ("Q_kv_cache", "Q_gradient", "Q_optimizer_state"):
        assert a.find(kind, "Q_weight", B).reason is Reason.ZERO
    # no entry for two parts that are both 0
    assert not any({e.lhs, e.rhs} == {"Q_kv_cache", "Q_gradient"} for e in a.entries)
    # by hand: activations x, 2 intermediates (written and read), the output: 6 B D b;
    # weights 3 D^2 b; equal at B = D/2
    (c,) = a.find("Q_activation", "Q_weight", B).solutions
    assert c.value == D / 2
    q = _gemm_stack().bytes_by_kind
    assert_formula_equal(q[Kind.ACTIVATION], 6 * B * D * b)
    assert_formula_equal(q[Kind.WEIGHT], 3 * D**2 * b)
    (r,) = a.find("I", "R", B).solutions
    assert_formula_equal(r.value, D * R * b / (2 * (D - R * b)))
    assert r.conditions == (sp.StrictLessThan(R, D / b),)


def test_one_sign_never_crosses():
    """A GEMM whose rows are always more than its width: activation bytes 2(B + D)D b
    exceed weight bytes D^2 b for every B and D."""
    g = sr.Graph("wide")
    g.output(g.gemm(g.input("x", (B + D, D)), g.weight("W", (D, D)), name="mm"))
    a = atlas(sr.analyze(g, traffic=["weight", "activation"]), over=[B, D])
    for var in (B, D):
        e = a.find("Q_activation", "Q_weight", var)
        assert e.status is Status.NEVER and e.reason is Reason.ONE_SIGN
        assert e.below.dominant == e.above.dominant == "Q_activation"
        assert reason_text(e) == f"Q_activation is larger for every {var}"


def test_a_workload_with_its_own_R_gets_another_ridge_symbol():
    """conv2d's kernel height is a dimension named R: the ridge becomes R_ridge."""
    conv = sr.workloads.conv2d(1, 3, 8, 8, 4, (sr.symbols.dim("R"), 3))
    a = atlas(conv, hardware="h100-sxm", precisions=["bf16"])
    (ridge, chip) = a.ridges
    assert ridge.value == quantity("R_ridge") and ridge.name == "R_ridge"
    assert chip.name == H100
    assert a.find("I", "R_ridge", sr.symbols.dim("R")).var == sr.symbols.dim("R")


def test_independent_of_the_variable():
    m = sr.models.transformer(layers=L, d_model=D, heads=H)
    a = atlas(sr.workloads.training(m, B, S), over=[B, S], symbolic_ridge=False)
    e = a.find("Q_optimizer_state", "Q_weight", B)
    assert e.reason is Reason.INDEPENDENT
    assert_formula_equal(e.detail, 8 / b)      # Adam: 16 bytes/param vs b bytes/param, as 8/b


# ---------------------------------------------------------------------------------------
# bounded


def _numerator_degree(lhs: sp.Expr, rhs: sp.Expr, var: sp.Symbol) -> int:
    return sp.Poly(sp.fraction(sp.cancel(sp.together(lhs - rhs)))[0], var).degree()


def test_training_atlas_is_bounded(monkeypatch):
    """The work is bounded by the atlas's own budget, not by how fast the machine is: each
    distinct pair is solved once, and the solver is only ever called on a polynomial
    within AtlasBudget.max_degree (a wrapper fails the test otherwise, in the forked child
    too: its AssertionError comes back as the pair's result)."""
    m = sr.models.transformer(layers=L, d_model=D, heads=H)
    tr = sr.workloads.training(m, B, S)
    solves: list[tuple[sp.Expr, sp.Expr, sp.Symbol]] = []
    max_degree = {"now": AtlasBudget().max_degree}
    real_guarded, real_crossover = atlas_solver.guarded, atlas_solver.crossover

    def counted(step, fn, base, left, right, v, named, **kw):
        solves.append((left, right, v))
        return real_guarded(step, fn, base, left, right, v, named, **kw)

    def within_budget(lhs, rhs, var):
        degree = _numerator_degree(lhs, rhs, var)
        assert degree <= max_degree["now"], f"solver called at degree {degree} in {var}"
        return real_crossover(lhs, rhs, var)

    monkeypatch.setattr(atlas_solver, "guarded", counted)
    monkeypatch.setattr(atlas_solver, "crossover", within_budget)
    full = atlas(tr, hardware=["h100-sxm", "mi300x"], precisions=["bf16", "fp8"])
    assert not full.unsolved
    # one solve per distinct pair and variable, none for pairs settled without solving
    assert solves and len(set(solves)) == len(solves)
    assert set(solves) == {(e.lhs_expr, e.rhs_expr, e.var) for e in full.entries
                           if e.var is not None}
    quadratic = [e for e in full.crossings if e.var == S and e.kind == "ridge"]
    assert quadratic and all(len(e.solutions) == 2 for e in quadratic)
    max_degree["now"] = 1
    # a budget of degree 1 reports those as unsolved, with the degree, and keeps the rest
    small = atlas(tr, hardware=["h100-sxm", "mi300x"], precisions=["bf16", "fp8"],
                  budget=AtlasBudget(max_degree=1))
    for e in small.unsolved:
        assert e.reason is Reason.DEGREE and e.detail == 2 and e.var == S and e.kind == "ridge"
    assert len(small.unsolved) == len(quadratic)
    assert len(small.crossings) == len(full.crossings) - len(quadratic)
    # no time left: every pair that needs solving says so
    none = atlas(tr, budget=AtlasBudget(seconds=0))
    assert none.unsolved and all(e.reason is Reason.TIME for e in none.unsolved)
    assert all(e.var is None for e in none.entries if e.status is not Status.UNSOLVED)
    # too many operations: refused before anything is expanded
    tiny = atlas(tr, budget=AtlasBudget(max_ops=3))
    assert any(e.reason is Reason.SIZE for e in tiny.unsolved)


def test_a_solver_refusal_is_reported_for_that_pair_only(monkeypatch, seed_model):
    """A solver stopped by symroof's limits (a BudgetError names the limit) leaves that
    pair unsolved, with the reason, and the atlas goes on."""
    class Refused(SymroofError):
        limit = "seconds"

    def refuse(lhs, rhs, var):
        if var == S:
            raise Refused("crossover: still running after 10 s; stopped at the seconds limit")
        return sr.crossover(lhs, rhs, var)

    monkeypatch.setattr(atlas_solver, "crossover", refuse)
    a = atlas(_decode(seed_model), over=[B, S])
    assert {(e.lhs, e.reason) for e in a.unsolved} == {
        ("F_attention", Reason.TIME), ("Q_kv_cache", Reason.TIME), ("I", Reason.TIME)}
    assert all(e.var == S for e in a.unsolved)
    assert {e.lhs for e in a.crossings} == {"Q_kv_cache", "I"}   # the pairs in B


def test_a_pair_past_the_seconds_limit_is_stopped_and_reported(monkeypatch, seed_model):
    """The guard of symroof.budget, for real: a pair whose solve never ends is stopped at
    the seconds limit in its forked child and reported as unsolved (TIME). The guard's
    clock is a fake on which every wait outlasts the limit, so the child is killed at
    its first wait, however fast or slow the machine."""
    def stuck(lhs, rhs, var):
        while True:
            pass

    monkeypatch.setattr(atlas_solver, "crossover", stuck)
    monkeypatch.setattr(atlas_solver, "light", lambda expr: False)   # take the guarded path
    monkeypatch.setattr(budget, "clock", itertools.count(0.0, 1e6).__next__)
    with limits(seconds=30):
        a = atlas(_decode(seed_model), over=[S], symbolic_ridge=False)
    assert [(e.lhs, e.status, e.reason) for e in a.entries] == [
        ("F_attention", Status.UNSOLVED, Reason.TIME), ("Q_kv_cache", Status.UNSOLVED, Reason.TIME)]


def test_high_degree_is_refused_before_anything_is_cancelled(monkeypatch):
    """Shapes of degree 12 in S: the degree is read off the expression tree before any
    expansion (in the solver, cancel, together and Poly fail the test if given an
    expression past the tree's bound while this atlas is built); S**k factors (roots at
    0) are divided out first."""
    bound = 4 * (AtlasBudget().max_degree + 1)

    def refusing(name):
        real = getattr(sp, name)

        def call(e, *args, **kwargs):
            for v in (B, S):
                degrees = atlas_solver.rational_degree(e, v)
                assert degrees is None or sum(degrees) <= bound, \
                    f"{name} of an expression of degree {sum(degrees)} in {v}"
            return real(e, *args, **kwargs)
        return call
    monkeypatch.setattr(atlas_solver, "sp", SimpleNamespace(
        **{**vars(sp), **{name: refusing(name) for name in ("cancel", "together", "Poly")}}))
    g = sr.Graph("deep")
    y = g.gemm(g.input("x", (B * S**3, D)), g.weight("W", (D, (S + B)**12)), name="mm")
    g.output(y)
    a = atlas(sr.analyze(g), over=[B, S])
    assert {e.reason for e in a.unsolved} <= {Reason.DEGREE}
    assert a.find("Q_activation", "Q_weight", S).status is Status.UNSOLVED
    # the detail is the tree's bound (numerator and denominator degrees of both sides)
    assert a.unsolved and all(e.detail > bound for e in a.unsolved)


# ---------------------------------------------------------------------------------------
# records, output, bad input


def test_json_formulas_read_back_and_output_is_deterministic(seed_atlas):
    doc = atlas_doc(seed_atlas, {D: 4096, S: 64, B: 512, b: 2})
    table = {**CANONICAL, "R": R, "P": P}
    for entry in doc["entries"]:
        found = seed_atlas.find(entry["lhs"], entry["rhs"],
                                None if entry["var"] is None else CANONICAL[entry["var"]])
        for text, c in zip(entry["solutions"], found.solutions):
            assert parse_expr(text["formula"], table) == c.value
    assert doc["counts"] == {"crosses": 7, "never": 1, "unsolved": 0}
    assert json.loads(dumps(doc)) == doc
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    argv = [sys.executable, "-m", "symroof", "atlas", "decode", "--hardware", "h100-sxm",
            "--set", "D=4096", "--json"]
    one = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=ROOT, check=True)
    env["PYTHONHASHSEED"] = "4242"
    two = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=ROOT, check=True)
    assert one.stdout == two.stdout and json.loads(one.stdout)["workload"] == "symbolic-decode"


def test_table_formats(seed_atlas):
    text_table = atlas_table(seed_atlas, {D: 4096, S: 64})
    assert "F_attention = F_weights" in text_table and "24576" in text_table
    md = atlas_table(seed_atlas, fmt="markdown")
    assert md.splitlines()[0] == "| crossover | in | solution | exists when | value |"
    assert r"F\_attention = F\_weights | $S$ | $S = 6 D$ ($S = \frac{P}{2 L D}$)" in md
    tex = atlas_table(seed_atlas, fmt="latex")
    assert tex.startswith(r"\begin{tabular}") and r"F\_attention" in tex
    html = atlas_table(seed_atlas, fmt="html")
    assert html.count("<tr>") == 1 + len([c for e in seed_atlas.crossings for c in e.solutions])
    lines = list(atlas_lines(seed_atlas))
    assert lines[:2] == ["atlas of transformer-decode over B, S", "names: P = 12*L*D**2"]
    assert any(line.startswith("never: F_attention = F_weights in B") for line in lines)
    with pytest.raises(SymroofError, match="format"):
        atlas_table(seed_atlas, fmt="rtf")


@pytest.mark.parametrize("call, match", [
    (lambda: atlas("decode"), "expected a workload"),
    (lambda: atlas(_decode(sr.models.get("seed-6.4b")), over=[D]), "not a symbol of"),
    (lambda: atlas(_decode(sr.models.get("seed-6.4b")), named={B: 1}), "named"),
    (lambda: atlas(_decode(sr.models.get("seed-6.4b")), precisions=["bf17"]), "precision"),
    (lambda: atlas(_decode(sr.models.get("seed-6.4b")), hardware="h1000"), "unknown hardware"),
    (lambda: atlas(_decode(sr.models.get("seed-6.4b")), hardware="l4", precisions=["fp64"]),
     "no chip"),
    (lambda: atlas(_decode(sr.models.get("seed-6.4b")), budget=3), "AtlasBudget"),
    (lambda: atlas(_decode(sr.models.get("seed-6.4b"))).find("F", "Q", B), "no entry"),
    (lambda: family({}), "mapping"),
    (lambda: AtlasBudget(max_degree=0), "max_degree"),
    (lambda: AtlasBudget(max_ops=2.5), "max_ops"),
    (lambda: AtlasBudget(seconds=float("nan")), "seconds"),
])
def test_bad_input(call, match):
    with pytest.raises(SymroofError, match=match):
        call()


# ---------------------------------------------------------------------------------------
# the command


def _cli(capsys, *argv):
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_cli_table_for_llama_70b(capsys):
    code, out, err = _cli(capsys, "atlas", "decode", "--model", "llama-3-70b",
                          "--hardware", "h100-sxm", "--hardware", "a100-80gb", "--set", "B=64")
    assert code == 0 and err == ""
    lines = out.splitlines()
    row = next(x for x in lines if x.startswith("F_attention = F_weights"))
    assert "S = 265128/5" in row and row.rstrip().endswith("53025.6")
    kv = next(x for x in lines if x.startswith("Q_kv_cache = Q_weight") and " S " in x)
    assert "(B + 8484257)/(20*B)" in kv and kv.rstrip().endswith("6628.38")
    assert any(x.startswith("I = R[a100-80gb bf16 hbm]") for x in lines)
    assert "never: F_attention = F_weights in B: both scale alike in B" in out


def test_cli_json_compare_and_textbook(capsys):
    code, out, _ = _cli(capsys, "atlas", "decode", "--model", "llama-3-70b",
                        "--hardware", "h100-sxm", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["over"] == ["B", "S"] and doc["ridges"][1]["name"] == H100
    code, out, _ = _cli(capsys, "atlas", "decode", "--textbook", "--over", "S")
    assert code == 0 and "S = 6*D (S = P/(2*L*D))" in out
    code, out, _ = _cli(capsys, "atlas", "decode", "--model", "seed-6.4b", "--compare",
                        "weights=bf16,int4", "--hardware", "h100-sxm", "--over", "S")
    assert code == 0 and out.splitlines()[0] == "family: bf16, int4 (at b=2)"
    row = next(x for x in out.splitlines() if x.startswith("Q_kv_cache = Q_weight"))
    assert "49152/(B*b)" in row and "12288/(B*b)" in row


def test_cli_compare_shows_how_the_ridge_batch_moves(capsys):
    """Seed 001's INT4 point as one command: at S = 64 on an H100, decode turns
    compute-bound at B = 1,265 with bf16 weights and at B = 316 with INT4 (4x fewer)."""
    code, out, _ = _cli(capsys, "atlas", "decode", "--model", "seed-6.4b", "--compare",
                        "weights=bf16,fp8,int4", "--hardware", "h100-sxm", "--over", "B",
                        "--set", "S=64")
    row = next(x for x in out.splitlines() if x.startswith(f"I = {H100}"))
    assert code == 0 and out.splitlines()[0] == "family: bf16, fp8, int4 (at S=64 b=2)"
    cells = [c for c in row.split("  ") if c.strip()][2:]       # after the pair and "B"
    assert [c.split(" = ")[-1] for c in cells] == ["1264.96", "632.478", "316.239"]


@pytest.mark.parametrize("argv, match", [
    (["--over", "X"], "--over 'X'"),
    (["--set", "M=3"], "(its symbols: B, D, L, S, b)"),
    (["--set", "B=1,2"], "one value per symbol"),
    (["--compare", "weights"], "KIND=P1,P2"),
    (["--compare", "weights=int3"], "precision 'int3'"),
    (["--hardware", "h1000"], "unknown hardware"),
    (["--max-degree", "9"], "--max-degree"),
    (["--atlas-seconds", "0"], "--atlas-seconds"),
    (["--model", "seed-6.4b", "--textbook"], "numeric parameter count"),
])
def test_cli_bad_input(capsys, argv, match):
    code, out, err = _cli(capsys, "atlas", "decode", *argv)
    assert code == 2 and out == ""
    assert err.startswith("symroof: error: ") and match in err and err.count("\n") == 1


def test_cli_compare_needs_a_model_workload(capsys):
    code, _, err = _cli(capsys, "atlas", "gemm", "--compare", "weights=bf16,int4")
    assert code == 2 and "need a model workload" in err

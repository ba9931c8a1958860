"""Solvers: limits, crossovers with their conditions, curves, regimes, sensitivity, theta.

Every solver result is substituted back into its equation at seeded random points
(positive integers for dimensions, positive rationals for bytes per value and other
quantities), and each family is checked against a second, independent computation:
``sympy.limit``, ``sympy.solve``, or a hand formula typed in from the seeds or from a
model's config.json numbers.
"""

from __future__ import annotations

import math
import random
from fractions import Fraction

import pytest
import sympy as sp

from symroof.testing import assert_formula_equal
import symroof as sr
from symroof.errors import SymroofError
from symroof.ir import Kind
from symroof.solve import positive_condition
from symroof.symbols import B, D, G, H, K, L, M, N, P, S, b, dim, n, quantity

oo = sp.oo
R = quantity("R")                  # a ridge point, FLOP/B (positive, not a count)

# H100 SXM datasheet figures, typed in independently of the TOML file.
H100_BF16 = Fraction("989.4") * 10**12
H100_HBM = Fraction("3.35") * 10**12
H100_RIDGE = H100_BF16 / H100_HBM  # 295.34... FLOP/B




def rand_point(rng: random.Random, symbols, lo: int = 1, hi: int = 10**5) -> dict:
    """Positive integers for dimensions, positive rationals for everything else."""
    out = {}
    for s in sorted(symbols, key=lambda x: x.name):
        if s.is_integer:
            out[s] = sp.Integer(rng.randint(lo, hi))
        else:
            out[s] = sp.Rational(rng.randint(1, 400), rng.randint(1, 64))
    return out


def check_root(lhs, rhs, root: sr.Crossover, *, seed: int, trials: int = 25,
               extra=()) -> int:
    """Substitute ``root`` back into ``lhs = rhs`` at random points where its conditions
    hold; returns how many points were checked."""
    rng = random.Random(seed)
    lhs, rhs = sp.sympify(lhs), sp.sympify(rhs)
    free = (lhs.free_symbols | rhs.free_symbols | root.value.free_symbols | set(extra)) - {root.var}
    checked = 0
    for _ in range(trials):
        pt = rand_point(rng, free)
        value = root.at(pt)
        if value is None:
            continue
        assert value.is_number
        assert value > 0, (root, pt)
        at = {**pt, root.var: value}
        diff = lhs.xreplace(at) - rhs.xreplace(at)
        assert sp.simplify(diff) == 0, (root, pt, diff)
        checked += 1
    return checked


@pytest.fixture(scope="module")
def sym_model():
    return sr.models.transformer(layers=L, d_model=D, heads=H)


@pytest.fixture(scope="module")
def sym_decode(sym_model):
    return sr.workloads.decode(sym_model, batch=B, context=S)


SEED_LIMIT = (12 * D / S + 2) / b          # the seeds' ceiling of decode intensity


# ---------------------------------------------------------------------------
# limit


def test_decode_limit_symbolic_model(sym_decode):
    I = sym_decode.intensity
    lim = sr.limit(I, B)
    assert sp.cancel(lim - SEED_LIMIT) == 0
    assert sp.cancel(lim - sp.limit(I, B, oo)) == 0          # independent: sympy.limit
    assert sr.text(lim) == "(12*D/S + 2)/b"
    assert sr.evaluate(lim, {D: 4096, S: 1024, b: 2}) == 25
    # the seeds' own form before P ~ 12 L D^2: (2P + 4LSD) / (2bLSD)
    assert_formula_equal(lim, ((2 * P + 4 * L * S * D) / (2 * b * L * S * D)).subs(P, 12 * L * D**2))
    # numerically the intensity approaches the limit from below at large batch
    rng = random.Random(11)
    for _ in range(20):
        pt = rand_point(rng, {D, S, b}, hi=10**4)
        far = sr.evaluate(I, {**pt, B: 10**12})
        assert float(far) == pytest.approx(float(lim.xreplace(pt)), rel=1e-6)
        assert far < lim.xreplace(pt)


def test_decode_limit_seed_preset():
    seed = sr.models.get("seed-6.4b")
    dec = sr.workloads.decode(seed, batch=B, context=S)
    lim = sr.limit(dec.intensity, B)
    assert_formula_equal(lim, SEED_LIMIT.subs(D, 4096))
    assert_formula_equal(lim, sp.limit(dec.intensity, B, oo))
    assert sr.evaluate(lim, {S: 1024, b: 2}) == 25
    assert sr.text(lim) == "(49152/S + 2)/b"
    # the seeds' B = 1 and B = 64 points at S = 1024, 16 bits: 1.0 and about 18
    assert sr.evaluate(dec.intensity, {B: 1, S: 1024, b: 2}) == 1
    assert float(sr.evaluate(dec.intensity, {B: 64, S: 1024, b: 2})) == pytest.approx(18.18, rel=1e-3)


def test_decode_limit_gqa_scales_kv_term():
    mg = sr.models.transformer(layers=L, d_model=D, heads=H, kv_heads=G)
    dec = sr.workloads.decode(mg, batch=B, context=S)
    lim = sr.limit(dec.intensity, B)
    # hand formula: the seeds' (2P + 4LSD) over KV bytes divided by h/g, with the
    # model's own parameter count (K and V projections shrink too)
    hand = (2 * mg.params + 4 * L * S * D) / (b * 2 * L * S * D * G / H)
    assert_formula_equal(lim, hand)
    assert_formula_equal(lim, sp.limit(dec.intensity, B, oo))
    assert_formula_equal(mg.params, 10 * L * D**2 + 2 * L * D**2 * G / H)
    # MHA (G = H) is the seeds' ceiling; MQA (G = 1) raises it by about H
    assert_formula_equal(lim.subs(G, H), SEED_LIMIT)
    assert_formula_equal(lim.subs(G, 1), (10 * D * H / S + 2 * D / S + 2 * H) / b)
    assert sr.text(lim) == "(10*D*H/(S*G) + 2*D/S + 2*H/G)/b"


def test_gemm_limits():
    g = sr.workloads.gemm(M, N, K)
    inner = sr.limit(g.intensity, M)
    assert_formula_equal(inner, 2 * K * N / (b * (K + N)))
    assert_formula_equal(inner, sp.limit(g.intensity, M, oo))
    skinny = sr.limit(inner, K)
    assert_formula_equal(skinny, 2 * N / b)
    assert_formula_equal(skinny, sp.limit(inner, K, oo))
    assert sr.text(skinny) == "2*N/b"
    # order does not matter
    assert_formula_equal(sr.limit(sr.limit(g.intensity, K), M), skinny)
    # the seeds' 8192 x 128 x 8192 example: 124.1 FLOP/B, close to 2N/b = 128
    v = sr.evaluate(g.intensity, {M: 8192, N: 128, K: 8192, b: 2})
    assert float(v) == pytest.approx(124.1, abs=0.05)
    gv = sr.workloads.gemv(N, K)
    two = sr.limit(sr.limit(gv.intensity, N), K)
    assert_formula_equal(two, 2 / b)
    assert sr.text(two) == "2/b"
    assert_formula_equal(two, sp.limit(sp.limit(gv.intensity, N, oo), K, oo))


def test_limit_to_zero_and_leading_term(sym_decode):
    I = sym_decode.intensity
    assert sr.limit(I, B, 0) == 0 == sp.limit(I, B, 0)
    assert_formula_equal(sr.limit(I, S, 0), 2 * B / b)
    assert_formula_equal(sp.limit(I, S, 0), 2 * B / b)
    assert_formula_equal(sr.limit(I, S), 2 / b)                  # long context: back to GEMV
    lt_oo = sr.leading_term(I, B)
    lt_0 = sr.leading_term(I, B, 0)
    assert_formula_equal(lt_oo, SEED_LIMIT)
    assert_formula_equal(lt_0, B * (6 * D + S) / (3 * D * b))
    # independent: the ratio to the leading term tends to 1
    assert sp.cancel(sp.limit(I / lt_oo, B, oo)) == 1
    assert sp.cancel(sp.limit(I / lt_0, B, 0)) == 1
    assert_formula_equal(sr.leading_term((B + 1) / B**2, B, 0), B**-2)
    assert_formula_equal(sr.leading_term((B + 1) / B**2, B), 1 / B)
    assert sr.leading_term(D * S, B) == D * S             # B does not occur
    # rational functions through leading terms, agreeing with sympy.limit
    for e, to in [((3 * B + 2) / (5 * B + 7), 0), ((3 * B + 2) / (5 * B + 7), oo),
                  (B**2 / (B + 1), oo), (1 / B, 0), (-B, oo), (B / (B + D), 0)]:
        assert sr.limit(e, B, to) == sp.limit(e, B, to), (e, to)
    assert sr.limit(sp.sqrt(B**2 + 1) / B, B) == 1        # non-rational: falls back


def test_limit_bad_input():
    with pytest.raises(SymroofError):
        sr.leading_term(B, B, 5)
    with pytest.raises(SymroofError):
        sr.limit(B, B + 1)


# ---------------------------------------------------------------------------
# crossover: attention FLOPs = weight FLOPs


def test_attention_weight_crossover_symbolic(sym_model):
    dec1 = sr.workloads.decode(sym_model, batch=1, context=S)
    parts = dec1.flops_by_operand
    assert_formula_equal(parts["activation"], 4 * L * S * D)
    assert_formula_equal(parts["weight"], 2 * sym_model.params)
    roots = sr.crossover(parts["activation"], parts["weight"], S)
    assert len(roots) == 1 and roots[0].always
    assert_formula_equal(roots[0].value, sym_model.params / (2 * L * D))
    assert_formula_equal(roots[0].value, 6 * D)
    assert check_root(parts["activation"], parts["weight"], roots[0], seed=1) == 25
    # the seeds' form, with P left as a symbol
    (c,) = sr.crossover(4 * L * S * D, 2 * P, S)
    assert_formula_equal(c.value, P / (2 * L * D))
    assert sr.text(c.value) == "P/(2*L*D)"
    assert sp.solve(sp.Eq(4 * L * S * D, 2 * P), S) == [c.value]
    assert check_root(4 * L * S * D, 2 * P, c, seed=2) == 25
    # Kaplan's 2 n_layer n_ctx d_model term: small while d_model > n_ctx / 12, i.e. the
    # crossover is at 12 D: about 49,000 tokens at width 4,096
    (k,) = sr.crossover(2 * L * S * D, 2 * 12 * L * D**2, S)
    assert_formula_equal(k.value, 12 * D)
    assert sr.evaluate(k.value, {D: 4096}) == 49152


# Weight-GEMM sizes per layer (q, k, v, o, gate, up, down) and the LM head, from the
# models' config.json numbers, typed in: (L, D, kv_dim, d_ff, vocab).
LLAMA = {"llama-3-8b": (32, 4096, 1024, 14336, 128256),
         "llama-3-70b": (80, 8192, 1024, 28672, 128256)}


@pytest.mark.parametrize("name,seed_P,seed_S,exact", [
    ("llama-3-8b", 8 * 10**9, 30_500, sp.Integer(28628)),
    ("llama-3-70b", 7 * 10**10, 53_400, sp.Rational(265128, 5)),
])
def test_attention_weight_crossover_llama(name, seed_P, seed_S, exact):
    Lc, Dc, kv, ff, V = LLAMA[name]
    # the seeds' arithmetic with the round parameter count: S = P / (2 L D)
    seed_value = Fraction(seed_P, 2 * Lc * Dc)
    assert float(seed_value) == pytest.approx(seed_S, rel=1e-3)
    (c,) = sr.crossover(4 * L * S * D, 2 * P, S)
    assert c.value.xreplace({P: seed_P, L: Lc, D: Dc}) == sp.Rational(seed_value.numerator,
                                                                     seed_value.denominator)
    # the exact value from the model's own graph
    m = sr.models.get(name)
    dec1 = sr.workloads.decode(m, batch=1, context=S)
    parts = dec1.flops_by_operand
    roots = sr.crossover(parts["activation"], parts["weight"], S)
    assert len(roots) == 1 and roots[0].always
    assert roots[0].value == exact
    # independent: weight-GEMM FLOPs 2 x (weights a GEMM reads), attention 4 L S D
    gemm_weights = Lc * (2 * Dc * Dc + 2 * Dc * kv + 3 * Dc * ff) + Dc * V
    hand = Fraction(2 * gemm_weights, 4 * Lc * Dc)
    assert roots[0].value == sp.Rational(hand.numerator, hand.denominator)
    assert parts["activation"].xreplace({S: exact}) == parts["weight"]
    # side by side: the round P shifts the seed's figure by a few percent
    assert float(exact) == pytest.approx(float(seed_value), rel=0.07)


# ---------------------------------------------------------------------------
# crossover: decode turns compute-bound


def test_decode_compute_bound_crossover(sym_decode):
    I = sym_decode.intensity
    roots = sr.crossover(I, R, B)
    assert len(roots) == 1
    (c,) = roots
    assert len(c.conditions) == 1
    cond = c.conditions[0]
    # R < (12 D + 2 S)/(S b): the asymptotic intensity exceeds the ridge
    assert isinstance(cond, sp.StrictLessThan) and cond.lhs == R
    assert_formula_equal(cond.rhs, (12 * D + 2 * S) / (S * b))
    assert_formula_equal(cond.rhs, SEED_LIMIT)
    # independent: sympy.solve
    (sol,) = sp.solve(sp.Eq(I, R), B)
    assert_formula_equal(sol, c.value)
    assert_formula_equal(c.value, 6 * D * R * b / (12 * D + 2 * S - R * S * b))
    # the condition holds iff the root is positive, at random points on both sides
    rng = random.Random(3)
    seen = {True: 0, False: 0}
    for _ in range(200):
        pt = rand_point(rng, {D, S, b}, hi=20000)
        ceiling = SEED_LIMIT.xreplace(pt)
        pt[R] = ceiling * sp.Rational(rng.randint(1, 199), 100)
        if pt[R] == ceiling:
            continue
        held = cond.xreplace(pt)
        assert held in (sp.true, sp.false)
        root = c.value.xreplace(pt)
        assert bool(held) == bool(root > 0), pt
        seen[bool(held)] += 1
        if held:
            assert c.at(pt) == root
            assert I.xreplace({**pt, B: root}) == pt[R]      # substituted back
        else:
            assert c.at(pt) is None
    assert min(seen.values()) > 40


def test_decode_compute_bound_numbers(sym_decode):
    I = sym_decode.intensity.xreplace({D: 4096, S: 1024, b: 2})   # ceiling 25
    assert sr.crossover(I, 295, B) == []           # below every typical ridge: never
    (c,) = sr.crossover(I, 20, B)
    assert c.value == 96 and c.always
    assert I.xreplace({B: 96}) == 20
    assert sp.solve(sp.Eq(I, 20), B) == [96]
    # the symbolic root with its condition, at the same numbers
    (s,) = sr.crossover(sym_decode.intensity, R, B)
    assert s.at({D: 4096, S: 1024, b: 2, R: 295}) is None
    assert s.at({D: 4096, S: 1024, b: 2, R: 20}) == 96
    # numeric bisection: I(B) is increasing in B, crossing 20 between 95 and 97
    lo, hi = Fraction(1), Fraction(10**6)
    f = sp.lambdify(B, I)
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if f(mid) < 20 else (lo, mid)
    assert float(lo) == pytest.approx(96, rel=1e-12)


def test_crossover_edge_cases():
    with pytest.raises(SymroofError):
        sr.crossover(B * S, B * S, B)                 # equal everywhere
    assert sr.crossover(B + 1, B, B) == []             # never equal
    assert sr.crossover(B + 5, 2, B) == []             # only at B = -3
    with pytest.raises(SymroofError):
        sr.crossover(sp.exp(B), 2, B)                  # not rational in B
    with pytest.raises(SymroofError):
        sr.crossover(B, 2, B + 1)
    # quadratic: both roots, each substituted back
    roots = sr.crossover(S**2 + 2, 3 * S, S)
    assert sorted(r.value for r in roots) == [1, 2]
    q = sr.crossover(S**2 - 2 * D * S + D**2, L, S)
    assert {sp.simplify(r.value - D) for r in q} == {sp.sqrt(L), -sp.sqrt(L)}
    for r in q:
        assert check_root(S**2 - 2 * D * S + D**2, L, r, seed=4, trials=10) >= 1
    # cubic through sympy.roots
    cubic = sr.crossover(S**3 - 6 * S**2 + 11 * S, 6, S)
    assert sorted(r.value for r in cubic) == [1, 2, 3]


def test_crossover_complex_roots_are_dropped():
    """A negative discriminant means no real crossing: no solutions, not a TypeError.

    Bug: solve.crossover passes each root to positive_condition, which ends in
    ``bool(sign * coeff * rest > 0)``; for a non-real root such as ``I`` SymPy raises
    ``TypeError: Invalid comparison of non-real I``.
    """
    assert sr.crossover(S**2 + 1, 0, S) == []
    assert sr.crossover(S**2 + S + 1, 0, S) == []
    # degree 5 through sympy.roots: (S^2 + S + 1)(S^3 - S^2 + 1), all roots non-real
    # or negative
    assert sr.crossover(S**5 + S + 1, 0, S) == []


# ---------------------------------------------------------------------------
# crossover_curve: KV-cache bytes = weight bytes


def test_kv_weight_curve_symbolic(sym_decode):
    q = sym_decode.bytes_by_kind
    assert_formula_equal(q[Kind.KV_CACHE], 2 * b * B * L * S * D)
    assert_formula_equal(q[Kind.WEIGHT], 12 * L * D**2 * b)
    (curve,) = sr.crossover_curve(q[Kind.KV_CACHE], q[Kind.WEIGHT], B, S)
    assert curve.x == B and curve.y == S and not curve.conditions
    assert_formula_equal(curve.expr, 6 * D / B)
    assert_formula_equal(curve.invariant, 6 * D)
    assert sr.text(curve.invariant) == "6*D"
    assert sp.solve(sp.Eq(q[Kind.KV_CACHE], q[Kind.WEIGHT]), S) == [curve.expr]
    rng = random.Random(5)
    for _ in range(20):
        pt = rand_point(rng, {B, D, L, b})
        at = {**pt, S: curve.expr.xreplace(pt)}
        assert q[Kind.KV_CACHE].xreplace(at) == q[Kind.WEIGHT].xreplace(at)


def test_kv_weight_curve_llama_3_70b():
    m = sr.models.get("llama-3-70b")
    # "320 KB" per token in the seed is 327,680 bytes = 320 KiB: the seed mixes units
    # (it divides by 320e3 below)
    assert m.kv_bytes_per_token.xreplace({b: 2}) == 327_680 == 320 * 1024
    # the seed's arithmetic: 140 GB / 320 KB = 437,500 token-slots
    (seed_curve,) = sr.crossover_curve(320_000 * S * B, 140 * 10**9, B, S)
    assert seed_curve.invariant == 437_500 == Fraction(140 * 10**9, 320 * 10**3)
    # the seed's example points lie near (not on) its curve
    assert 64 * 6_800 == pytest.approx(437_500, rel=0.01)
    assert 16 * 27_000 == pytest.approx(437_500, rel=0.02)
    # with the model's own parameter count at 2 bytes (141.1 GB) and 327,680 B/token
    w_total = m.params * 2
    assert w_total == 141_107_412_992
    (c1,) = sr.crossover_curve(m.kv_bytes_per_token.xreplace({b: 2}) * S * B, w_total, B, S)
    assert c1.invariant == sp.Rational(8612513, 20)
    assert float(c1.invariant) == pytest.approx(430_625.65, rel=1e-12)
    assert c1.invariant == sp.Rational(141_107_412_992, 327_680)          # hand
    # with the decode graph's own weight traffic: the embedding is a gather, so only B
    # of its rows are read; S*B is then not exactly constant
    dec = sr.workloads.decode(m.with_bytes(2), batch=B, context=S)
    q = dec.bytes_by_kind
    assert_formula_equal(q[Kind.WEIGHT], (m.params - 128256 * 8192) * 2 + 2 * 8192 * B)
    (c2,) = sr.crossover_curve(q[Kind.KV_CACHE], q[Kind.WEIGHT], B, S)
    assert_formula_equal(c2.expr, (B + 8484257) / (20 * B))
    assert c2.invariant is None                 # not a power law in B
    (solved,) = sp.solve(sp.Eq(q[Kind.KV_CACHE], q[Kind.WEIGHT]), S)   # SymPy's own solver
    assert_formula_equal(solved, c2.expr)
    for Bv in (1, 16, 64, 512, 4096):
        Sv = c2.expr.xreplace({B: Bv})
        assert q[Kind.KV_CACHE].xreplace({B: Bv, S: Sv}) == q[Kind.WEIGHT].xreplace({B: Bv})
    # at the seed's batch sizes the exact curve is within a few percent of its points
    assert float(c2.expr.xreplace({B: 64})) == pytest.approx(6_800, rel=0.03)
    assert float(c2.expr.xreplace({B: 16})) == pytest.approx(27_000, rel=0.03)


def test_curve_invariant_powers():
    assert sr.Curve(B, S, 5 * D / B**2).invariant == 5 * D
    assert sr.Curve(B, S, 3 * B).invariant == 3
    assert sr.Curve(B, S, D / (B + 1)).invariant is None


# ---------------------------------------------------------------------------
# no overlap is at most 2x the overlapped bound, with equality at the ridge


def test_no_overlap_at_most_twice_symbolic():
    F, Q, peak, bw, eps = (quantity(x) for x in ("F", "Q", "peak", "bw", "eps"))
    tc, tm = F / peak, Q / bw
    serial = tc + tm
    (eq,) = sr.crossover(tc, tm, F)                      # F/pi = Q/beta
    assert_formula_equal(eq.value / Q, peak / bw)                  # exactly at the ridge I = pi/beta
    # compute-bound branch (tc >= tm): serial/max = 1 + tm/tc; = 2 only at the ridge
    (c,) = sr.crossover(serial / tc, 2, F)
    assert_formula_equal(c.value, eq.value)
    # memory-bound branch (tm >= tc): serial/max = 1 + tc/tm
    (m,) = sr.crossover(serial / tm, 2, F)
    assert_formula_equal(m.value, eq.value)
    # ratio 2 + eps in the compute branch would need I below the ridge (outside it) ...
    (c_eps,) = sr.crossover(serial / tc, 2 + eps, F)
    assert positive_condition(peak / bw - c_eps.value / Q) is True
    # ... and in the memory branch I above the ridge (outside it): never more than 2x
    (m_eps,) = sr.crossover(serial / tm, 2 + eps, F)
    assert positive_condition(m_eps.value / Q - peak / bw) is True
    assert check_root(serial / tc, 2, c, seed=6) == 25


def test_no_overlap_roofline_fields():
    r = sr.roofline(sr.workloads.gemm(n, n, n), "h100-sxm")
    assert r.ridge == sp.Rational(H100_RIDGE.numerator, H100_RIDGE.denominator)
    (c,) = sr.crossover(r.compute_time_s, r.memory_time_s, n)
    (c2,) = sr.crossover(r.time_serial_s / r.compute_time_s, 2, n)
    (c3,) = sr.crossover(r.time_serial_s / r.memory_time_s, 2, n)
    assert c.value == c2.value == c3.value == 3 * r.ridge
    assert sr.evaluate(r.intensity, {n: c.value}) == r.ridge
    assert sr.evaluate(r.time_serial_s / r.time_s, {n: c.value}) == 2
    for nv in (1, 100, 886, 887, 5000, 10**6):
        assert sr.evaluate(r.time_serial_s / r.time_s, {n: nv}) < 2


# ---------------------------------------------------------------------------
# regimes, sensitivity, theta


def test_regimes_square_gemm_h100():
    regs = sr.regimes(sr.workloads.gemm(n, n, n), "h100-sxm", var=n)
    assert [r.bound for r in regs] == ["memory", "compute"]
    mem, comp = regs
    boundary = 3 * sp.Rational(H100_RIDGE.numerator, H100_RIDGE.denominator)
    assert boundary == sp.Rational(59364, 67) and int(boundary) == 886
    for r in regs:
        (x,) = r.boundary
        assert x.var == n and x.value == boundary
    assert mem.condition.xreplace({n: 886}) is sp.true
    assert mem.condition.xreplace({n: 887}) is sp.false
    assert comp.condition.xreplace({n: 887}) is sp.true
    assert comp.condition.xreplace({n: 886}) is sp.false
    # times: 3 n^2 b / beta and 2 n^3 / pi at b = 2 (bf16)
    hbm = sp.Rational(H100_HBM.numerator, H100_HBM.denominator)
    peak = sp.Rational(H100_BF16.numerator, H100_BF16.denominator)
    assert_formula_equal(mem.time_s, 6 * n**2 / hbm)
    assert_formula_equal(comp.time_s, 2 * n**3 / peak)
    assert_formula_equal(mem.attainable, hbm * 2 * n / 6)
    assert comp.attainable == peak
    # the two times agree at the boundary
    assert mem.time_s.xreplace({n: boundary}) == comp.time_s.xreplace({n: boundary})
    # a fixed size gets only its own branch
    (only,) = sr.regimes(sr.workloads.gemm(n, n, n), "h100-sxm", subs={n: 8192})
    assert only.bound == "compute" and only.condition is True


def test_sensitivity(sym_decode):
    assert sr.sensitivity(2 * n / (3 * b), n) == 1
    assert sr.sensitivity(2 * n / (3 * b), b) == -1
    e = sr.sensitivity(sym_decode.intensity, B)
    hand = 1 - B * S / (B * S + 6 * D)          # d ln(B) - d ln(BS + 6D)
    assert_formula_equal(e, hand)
    assert_formula_equal(e, 6 * D / (B * S + 6 * D))
    assert sp.limit(e, B, oo) == 0 and sp.limit(e, B, 0) == 1
    # finite difference of ln I at random points
    rng = random.Random(7)
    f = sp.lambdify((B, D, S, b), sp.log(sym_decode.intensity))
    for _ in range(10):
        pt = rand_point(rng, {B, D, S, b}, hi=5000)
        x = [float(pt[s]) for s in (B, D, S, b)]
        h = 1e-6
        up = f(x[0] * (1 + h), *x[1:])
        dn = f(x[0] * (1 - h), *x[1:])
        fd = (up - dn) / (math.log(1 + h) - math.log(1 - h))
        assert fd == pytest.approx(float(e.xreplace(pt)), rel=1e-5)


def test_theta_shazeer():
    d, Bs = dim("d"), dim("Bs")
    layer = sr.models.transformer(layers=1, d_model=d, heads=H)
    dec = sr.workloads.decode(layer, batch=Bs, context=n)
    ratio = sp.cancel(dec.bytes / dec.flops / b)    # memory / arithmetic, in values
    assert_formula_equal(ratio, (6 * d + Bs * n) / (Bs * (12 * d + 2 * n)))
    th = sr.theta(ratio, [(n, d)])
    assert th == n / d + 1 / Bs
    # independent: to first order in n/d the ratio is 1/(2 Bs) + n/(12 d) - ...
    eps = sp.Symbol("eps", positive=True)
    series = sp.series(ratio.xreplace({n: eps * n}), eps, 0, 2).removeO().xreplace({eps: 1})
    assert_formula_equal(series, 1 / (2 * Bs) + n / (12 * d) - n / (12 * Bs * d))
    # a dominated term is dropped, constants are set to 1
    assert sr.theta(3 * n / d + 1 / Bs + 1 / (Bs * d)) == n / d + 1 / Bs

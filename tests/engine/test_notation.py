"""symroof.notation: formulas rewritten in a document's named quantities (issue 21).

Every rewrite is checked twice: exactly (``cancel(rewritten.subs(names) - original) == 0``)
and, independently, by floating-point evaluation at random positive points where the
names are first evaluated from their values and then plugged into the rewritten formula.
The textbook forms the seeds print (``2P + 4LSD``, ``S = P/(2LD)``, ``(12D/S + 2)/b``,
``max(F/π, Q/β)``, ``2n/(3b)``) are asserted on the printed text.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping

import pytest
import sympy as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import symroof as sr
from symroof import budget, notation
from symroof.errors import SymroofError
from symroof.notation import check_used, rewrite, substitution_steps, text, usage
from symroof.symbols import B, D, H, K, L, M, N, P, S, b, n, quantity

F, Q, I, W, KV, Fd = (sp.Symbol(x, positive=True) for x in ("F", "Q", "I", "W", "KV", "F_d"))
PI, BETA = quantity("pi"), quantity("beta")
PARAMS = {P: 12 * L * D**2}                                      # the seeds' P = 12 L D²


def _numeric_agrees(rewritten: sp.Expr, original: sp.Expr, names: Mapping[sp.Symbol, sp.Expr],
                    seed: int = 0) -> None:
    """Second computation: evaluate the names' values at a point in floats, plug those
    floats into the rewritten formula, and compare with the original at that point."""
    full = notation.expand_names(names)
    base = sorted(original.free_symbols | set().union(*(v.free_symbols for v in full.values())),
                  key=str)
    rng = random.Random(seed)
    # each formula compiled once, evaluated at the three points
    values = {nm: sp.lambdify(base, v, "math") for nm, v in full.items()}
    syms = sorted(rewritten.free_symbols, key=str)
    in_names = sp.lambdify(syms, rewritten, "math")
    in_base = sp.lambdify(base, original, "math")
    for _ in range(3):
        point = {s: rng.uniform(0.5, 8.0) for s in base}
        named = {nm: float(f(*(point[s] for s in base))) for nm, f in values.items()}
        env = {**point, **named}
        got = float(in_names(*(env[s] for s in syms)))
        want = float(in_base(*(point[s] for s in base)))
        assert math.isclose(got, want, rel_tol=1e-12, abs_tol=1e-300), (rewritten, original)


def _exact(original: sp.Expr, names: Mapping[sp.Symbol, sp.Expr]) -> sp.Expr:
    """The rewrite, checked exactly and numerically."""
    rewritten = rewrite(original, names)
    full = notation.expand_names(names)
    assert sp.cancel(rewritten.subs(full) - original.subs(full)) == 0, (original, rewritten)
    _numeric_agrees(rewritten, original.subs(full), names)
    return rewritten


# -- the seed's workloads -----------------------------------------------------------------

@pytest.fixture(scope="module")
def seed() -> dict[str, sp.Expr]:
    """Every formula the engine derives for the seed's symbolic model."""
    m = sr.models.transformer(layers=L, d_model=D, heads=H)
    dec = sr.workloads.decode(m, batch=B, context=S)
    pre = sr.workloads.prefill(m, B, S)
    train = sr.workloads.training(m, B, S)
    fused = sr.workloads.attention(S, D, H, batch=B)
    unfused = sr.workloads.attention(S, D, H, batch=B, fused=False)
    gemm = sr.workloads.gemm(n, n, n)
    out: dict[str, sp.Expr] = {}
    for label, w in (("decode", dec), ("prefill", pre), ("training", train),
                     ("attention", fused), ("attention unfused", unfused)):
        out[f"{label} F"], out[f"{label} Q"], out[f"{label} I"] = w.flops, w.bytes, w.intensity
    out["decode F per token"] = sp.cancel(dec.flops / B)
    out["decode Q per token"] = sp.cancel(dec.bytes / B)
    out["decode limit B"] = sr.limit(dec.intensity, B)
    out["decode limit S"] = sr.limit(dec.intensity, S)
    out["prefill limit B"] = sr.limit(pre.intensity, B)
    out["gemm I"] = gemm.intensity
    out["gemm MNK I"] = sr.workloads.gemm(M, N, K).intensity
    out["gemv I"] = sr.workloads.gemv(M, K).intensity
    out["decode time"] = sp.Max(dec.flops / PI, dec.bytes / BETA)
    for i, c in enumerate(sr.crossover(dec.intensity, 100 / b, B)):
        out[f"decode ridge crossover {i}"] = c.value
    for i, c in enumerate(sr.crossover(24 * L * D**2, 4 * L * S * D, S)):
        out[f"kaplan crossover {i}"] = c.value
    for i, c in enumerate(sr.crossover(12 * L * D**2 * b, 2 * B * L * S * D * b, S)):
        out[f"kv = weights crossover {i}"] = c.value
    return out


NAME_SETS: dict[str, dict[sp.Symbol, sp.Expr]] = {
    "P": PARAMS,
    "P and F_d nested": {P: 12 * L * D**2, Fd: 2 * P + 4 * L * S * D},
    "weights and KV bytes": {W: 12 * L * D**2 * b, KV: 2 * B * L * S * D * b},
    "P and a name absent everywhere": {P: 12 * L * D**2, I: H**3 * n},
}


@pytest.mark.parametrize("names", list(NAME_SETS), ids=list(NAME_SETS))
def test_the_rewrite_is_exact_on_every_seed_formula(seed: dict[str, sp.Expr], names: str) -> None:
    assert len(seed) >= 25
    for label, original in seed.items():
        rewritten = _exact(original, NAME_SETS[names])
        assert rewritten is original or rewritten.free_symbols & set(NAME_SETS[names]), label


def test_each_workload_in_its_own_f_and_q(seed: dict[str, sp.Expr]) -> None:
    """I = F/Q once F and Q are declared, for every workload (a common factor such as
    2DL cancelled from the intensity is found again)."""
    for label in ("decode", "prefill", "training", "attention", "attention unfused"):
        f, q = seed[f"{label} F"], seed[f"{label} Q"]
        names = {F: f, Q: q}
        assert text(_exact(seed[f"{label} I"], names)) == "F/Q", label
        assert _exact(f, names) == F and _exact(q, names) == Q
        assert text(_exact(3 * seed[f"{label} I"] * B, names), [F, Q]) == "3*F*B/Q", label


def test_decode_flops_per_token_read_2p_plus_4lsd(seed: dict[str, sp.Expr]) -> None:
    per_token = _exact(seed["decode F per token"], PARAMS)
    assert text(per_token, [P], (L, S, D)) == "2*P + 4*L*S*D"
    assert notation.latex(per_token, [P], (L, S, D)) == "2 P + 4 L S D"
    whole = _exact(seed["decode F"], PARAMS)
    assert text(whole, [P], (B, L, S, D)) == "2*P*B + 4*B*L*S*D"
    assert text(_exact(seed["decode Q"], PARAMS), [P], (B, L, S, D)) == "P*b + 2*B*L*S*D*b"
    assert text(_exact(seed["decode Q"], NAME_SETS["weights and KV bytes"]), [W, KV]) == "W + KV"


def test_nested_names_are_found_before_the_names_inside_them(seed: dict[str, sp.Expr]) -> None:
    names = NAME_SETS["P and F_d nested"]
    assert _exact(seed["decode F"], names) == B * Fd
    assert _exact(seed["decode F per token"], names) == Fd
    # the name's own value, in the names declared before it
    assert text(rewrite(names[Fd], {P: names[P]}), [P], (L, S, D)) == "2*P + 4*L*S*D"


def test_kaplan_crossover_reads_p_over_2ld(seed: dict[str, sp.Expr]) -> None:
    """S where attention FLOPs (4LSD) equal the weights' (2P): 6D, which is P/(2LD)."""
    assert seed["kaplan crossover 0"] == 6 * D
    assert rewrite(6 * D, PARAMS) == 6 * D     # not forced: 6D is shorter than P/(2LD)
    forced = rewrite(6 * D, PARAMS, require=[P])
    assert text(forced, [P], (L, S, D)) == "P/(2*L*D)"
    assert sp.cancel(forced.subs(PARAMS) - 6 * D) == 0
    _numeric_agrees(forced, 6 * D, PARAMS)
    # the same crossover solved with P kept as a symbol
    assert [c.value for c in sr.crossover(2 * P, 4 * L * S * D, S)] == [P / (2 * L * D)]


def test_decode_limit_keeps_its_textbook_form(seed: dict[str, sp.Expr]) -> None:
    limit = seed["decode limit B"]
    for names in NAME_SETS.values():
        assert rewrite(limit, names) is limit
    assert text(limit) == "(12*D/S + 2)/b"
    assert text(seed["gemm I"]) == "2*n/(3*b)"
    assert text(rewrite(seed["gemm I"], PARAMS)) == "2*n/(3*b)"


def test_max_of_compute_and_memory_time_reads_max_f_over_pi_q_over_beta(
        seed: dict[str, sp.Expr]) -> None:
    names = {F: seed["decode F"], Q: seed["decode Q"]}
    assert _exact(seed["decode time"], names) == sp.Max(F / PI, Q / BETA)
    assert text(sp.Max(F / PI, Q / BETA), [F, Q]) in ("Max(F/pi, Q/beta)", "Max(Q/beta, F/pi)")


def test_ratio_names_and_multiples(seed: dict[str, sp.Expr]) -> None:
    i = seed["decode I"]
    assert _exact(B * i, {I: i}) == B * I
    assert _exact(i / 2, {I: i}) == I / 2
    assert _exact(i + 1, {I: i}) == I + 1
    # one cancelled fraction equal to I + 1 is not split into partial fractions
    assert _exact(sp.cancel(i + 1), {I: i}) == sp.cancel(i + 1)


def test_a_formula_no_name_applies_to_comes_back_unchanged() -> None:
    for e in (2 * n / (3 * b), sp.Integer(494700000000000), sp.Rational(15127, 1406250000) * B,
              sp.sqrt(S) + D):
        assert rewrite(e, PARAMS) is e


# -- usage and strictness ------------------------------------------------------------------

def test_usage_names_the_used_and_the_unused(seed: dict[str, sp.Expr]) -> None:
    names = NAME_SETS["P and a name absent everywhere"]
    u = usage(seed["decode F"], names)
    assert u.used == (P,) and u.unused == (I,)
    assert usage(2 * n / (3 * b), PARAMS).unused == (P,)


def test_check_used_raises_naming_where_the_name_was_declared(seed: dict[str, sp.Expr]) -> None:
    where = "claims/seed.toml:12: formula"
    assert check_used(seed["decode F per token"], PARAMS, where) == 2 * P + 4 * L * S * D
    with pytest.raises(SymroofError, match=r"^claims/seed\.toml:12: formula: declared P = "
                                           r"12\*D\*\*2\*L does not appear in 2\*n/\(3\*b\)$"):
        check_used(2 * n / (3 * b), PARAMS, where)
    with pytest.raises(SymroofError, match="declared P = .*, I = .* do not appear"):
        check_used(6 * D, {P: PARAMS[P], I: H * n}, where)


def test_bad_names_are_refused_clearly() -> None:
    with pytest.raises(SymroofError, match="a name must be a symbol"):
        rewrite(D, {2 * D: D})  # type: ignore[dict-item]
    with pytest.raises(SymroofError, match="in terms of itself"):
        rewrite(D, {F: Q + D, Q: F * 2})
    with pytest.raises(SymroofError, match="is a number"):
        rewrite(D, {F: sp.Integer(3)})
    with pytest.raises(SymroofError, match="required name P is not declared"):
        rewrite(D, {F: D}, require=[P])


def test_work_is_bounded_by_the_budget() -> None:
    with pytest.raises(budget.BudgetError, match="degree"):
        rewrite((B + S) ** 40, PARAMS)
    with budget.limits(ops=10), pytest.raises(budget.BudgetError, match="operations"):
        rewrite(sum(B**i * S for i in range(1, 12)), PARAMS)
    with pytest.raises(budget.BudgetError):
        rewrite(D, {F: (B + D) ** 40})


# -- the chain a reader checks ----------------------------------------------------------

def test_substitution_steps_from_names_to_an_exact_number() -> None:
    steps = substitution_steps(2 * P + 4 * L * S * D, PARAMS, {L: 32, S: 2048, D: 4096})
    assert [s.label for s in steps] == ["in names", "names written out", "numbers", "result"]
    assert steps[0].expr == 2 * P + 4 * L * S * D
    assert steps[1].expr == 24 * L * D**2 + 4 * L * S * D
    assert steps[2].expr.has(sp.Integer(6442450944))  # P = 12·32·4096² shown as a number
    assert steps[3].expr == 2 * 6442450944 + 4 * 32 * 2048 * 4096
    assert steps[3].expr.is_Integer
    assert sp.cancel(steps[2].expr.doit() - steps[3].expr) == 0
    frac = substitution_steps(F / Q, {F: 2 * B * D, Q: 3 * D * b}, {B: 1, D: 7, b: 2})
    assert frac[-1].expr == sp.Rational(1, 3)
    with pytest.raises(SymroofError, match="not a number"):
        substitution_steps(F, {F: B}, {B: S})


# -- property: random polynomials and ratios with random named sub-expressions ------------

_SYMS = (B, S, L, D, b)


@st.composite
def _monomials(draw: st.DrawFn) -> sp.Expr:
    coeff = sp.Rational(draw(st.integers(1, 12)), draw(st.sampled_from((1, 1, 1, 2, 3))))
    return coeff * sp.Mul(*(s ** draw(st.integers(0, 2)) for s in _SYMS))


@st.composite
def _polys(draw: st.DrawFn, min_terms: int = 1) -> sp.Expr:
    return sp.Add(*draw(st.lists(_monomials(), min_size=min_terms, max_size=3)))


@st.composite
def _values(draw: st.DrawFn) -> sp.Expr:
    kind = draw(st.sampled_from(("monomial", "polynomial", "ratio")))
    value = draw(_monomials()) if kind == "monomial" else draw(_polys(min_terms=2))
    if kind == "ratio":
        value = value / draw(_polys())
    return value if value.free_symbols else value * D


@st.composite
def _cases(draw: st.DrawFn) -> tuple[sp.Expr, dict[sp.Symbol, sp.Expr]]:
    k = draw(st.integers(1, 3))
    names = {sp.Symbol(f"X{i}", positive=True): draw(_values()) for i in range(k)}
    expr = sp.Add(*(draw(_monomials()) * v for v in names.values()
                    if draw(st.booleans())), draw(_polys()))
    if draw(st.booleans()):
        expr = expr / draw(_polys())
    if draw(st.integers(0, 4)) == 0:
        expr = sp.Max(expr, draw(_polys()))
    return expr, names


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_cases())
def test_property_rewrite_is_always_exact(case: tuple[sp.Expr, dict[sp.Symbol, sp.Expr]]) -> None:
    expr, names = case
    _exact(expr, names)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_monomials(), _values(), st.booleans())
def test_property_a_multiple_of_one_name_uses_it(k: sp.Expr, value: sp.Expr,
                                                 polynomial_value: bool) -> None:
    if not polynomial_value:
        k = k.as_coeff_Mul()[0]   # a ratio name is found when the multiple is a number
    expr = sp.expand(k * value) if value.is_polynomial() else k * value
    rewritten = _exact(expr, {Q: value})
    assert rewritten.has(Q), (expr, value, rewritten)

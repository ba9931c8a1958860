"""Tests for symroof.testing: each helper passes on right input and fails loudly on wrong."""

from __future__ import annotations

import ast
import random
import subprocess
import sys
import textwrap
from fractions import Fraction
from pathlib import Path

import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import symroof
from symroof import testing
from symroof.testing import sampling
from symroof.symbols import B, D, K, M, N, S, T, b, n
from symroof.testing import (
    assert_close, assert_formula_equal, assert_free_symbols, assert_matches_oracle,
)
from symroof.workloads import gemm

pytest_plugins = ["pytester"]


# --- assert_formula_equal ---------------------------------------------------------------

def test_formula_equal_passes_on_equal_rational_functions():
    assert_formula_equal(gemm(n, n, n).intensity, 2 * n / (3 * b))
    assert_formula_equal((M * N + M * K) / M, N + K)      # equal after cancel, not structurally
    assert_formula_equal(sp.Integer(6), 6)
    assert_formula_equal(Fraction(1, 2) * M, M / 2)


def test_formula_equal_fails_on_a_different_formula_showing_both_sides():
    with pytest.raises(AssertionError) as info:
        assert_formula_equal(2 * n / (3 * b), 2 * n / (3 * b) + 1 / n)
    msg = str(info.value)
    assert msg.startswith("formulas differ:")
    assert "actual:   2*n/(3*b)" in msg
    assert "expected: 1/n + 2*n/(3*b)" in msg
    assert "actual - expected = -1/n" in msg


def test_formula_equal_decides_min_max_by_cases_numerically():
    assert_formula_equal(sp.Max(M, N) + sp.Min(M, N), M + N)
    assert_formula_equal(sp.Abs(M - N), sp.Max(M - N, N - M))
    with pytest.raises(AssertionError, match="seed=0"):
        assert_formula_equal(sp.Max(M, N), sp.Min(M, N))


def test_formula_equal_ceil_div_equals_floor_form_for_integers():
    assert_formula_equal(sp.ceiling(M / T), sp.floor((M + T - 1) / T))
    with pytest.raises(AssertionError, match=r"formulas differ at .*T=.*seed=0"):
        assert_formula_equal(sp.ceiling(M / T), sp.floor(M / T))


def test_formula_equal_wrong_piecewise_fails_naming_the_seed_and_point():
    right = sp.Piecewise((2 * M, M > 4), (M, True))
    assert_formula_equal(right, sp.Piecewise((M + M, M >= 5), (M, True)))
    with pytest.raises(AssertionError) as info:
        assert_formula_equal(right, sp.Piecewise((2 * M, M > 5), (M, True)), seed=7)
    msg = str(info.value)
    assert "seed=7" in msg and "M=5" in msg    # the threshold's neighbourhood is sampled
    assert "values:   actual = 10, expected = 5" in msg


def test_formula_equal_numeric_check_is_reproducible_per_seed():
    def message(seed: int) -> str:
        with pytest.raises(AssertionError) as info:
            assert_formula_equal(sp.Max(M, N, K), sp.Max(M, N), seed=seed)
        return str(info.value)
    assert message(3) == message(3)
    assert "seed=3" in message(3)


def test_formula_equal_falls_back_to_numbers_where_cancel_cannot_decide():
    assert_formula_equal(sp.log(M * N), sp.log(M) + sp.log(N))   # positive symbols
    with pytest.raises(AssertionError, match="seed"):
        assert_formula_equal(sp.sqrt(M), M)


def test_formula_equal_rel_allows_float_rounding():
    assert_formula_equal(M * 0.1 + M * 1e-13, M / 10, rel=1e-9)
    with pytest.raises(AssertionError, match=r"rel=1e-15"):
        assert_formula_equal(M * 0.1 + M * 1e-13, M / 10, rel=1e-15)


def test_formula_equal_rejects_strings_and_non_sympy_inputs():
    with pytest.raises(TypeError, match=r"not parsed implicitly.*symroof\.symbols.*symroof\.parse"):
        assert_formula_equal("2*S", 2 * S)
    with pytest.raises(TypeError, match="did you mean its .intensity"):
        assert_formula_equal(gemm(M, N, K), 2 * M * N * K)
    with pytest.raises(TypeError, match="got list"):
        assert_formula_equal(M, [M])
    with pytest.raises(ValueError, match="points"):
        assert_formula_equal(sp.Max(M, N), N, points=0)


def test_formula_equal_notes_a_lookalike_symbol():
    with pytest.raises(AssertionError, match=r"'S' appears twice with different assumptions"):
        assert_formula_equal(2 * S, 2 * sp.Symbol("S"))


def test_formula_equal_respects_symbol_assumptions_when_sampling():
    x = sp.Symbol("x", negative=True)
    assert_formula_equal(sp.Abs(x), -x)                 # only true for negative x
    e = sp.Symbol("e", positive=True, even=True)
    assert_formula_equal(sp.floor(e / 2) * 2, e)        # only true for even e


# --- sound sampling: each symbol's whole domain, by its assumptions ---------------------

x_real = sp.Symbol("x", real=True)
z_any = sp.Symbol("z")                                      # no assumptions: complex
k_int = sp.Symbol("k", integer=True)                        # negative, zero and positive
k_nonneg = sp.Symbol("k", nonnegative=True, integer=True)


@pytest.mark.parametrize("actual, expected", [
    (sp.Abs(x_real), x_real),
    (sp.sqrt(x_real**2), x_real),
    (sp.Max(x_real, 0), x_real),
    (sp.Max(x_real, -10**6), x_real),          # a threshold far out: the constants are tried
], ids=["Abs(x)", "sqrt(x**2)", "Max(x, 0)", "Max(x, -10**6)"])
def test_formula_equal_samples_negative_values_of_a_real_symbol(actual, expected):
    # each pair agrees for x > 0, so a check that draws only positive values passes it
    with pytest.raises(AssertionError, match=r"formulas differ at x=-"):
        assert_formula_equal(actual, expected)


def test_formula_equal_samples_zero_where_the_assumptions_allow_it():
    only_at_zero = sp.Piecewise((1, sp.Eq(k_nonneg, 0)), (k_nonneg, True))
    with pytest.raises(AssertionError, match=r"formulas differ at k=0\b"):
        assert_formula_equal(only_at_zero, k_nonneg)
    with pytest.raises(AssertionError, match=r"formulas differ at x=0\b"):
        assert_formula_equal(sp.sign(x_real)**2, 1)


def test_formula_equal_samples_negative_integers_of_an_integer_symbol():
    assert_formula_equal(sp.floor(k_int / 2) + sp.ceiling(k_int / 2), k_int)   # every integer
    with pytest.raises(AssertionError, match=r"formulas differ at k=-\d"):
        assert_formula_equal(sp.Abs(k_int), k_int)


def test_formula_equal_samples_complex_values_of_a_symbol_without_assumptions():
    # |z|**2 == z**2 for every real z, negative ones too: only a complex value tells them apart
    with pytest.raises(AssertionError, match=r"formulas differ at z=.*I"):
        assert_formula_equal(sp.Abs(z_any)**2, z_any**2)
    with pytest.raises(AssertionError, match="formulas differ at z="):
        assert_formula_equal(sp.sqrt(z_any**2), z_any)


def test_formula_equal_skips_undefined_points_but_fails_when_every_point_is():
    # differ only at x = 0, where 1/x is undefined: that point is skipped, the rest agree
    assert_formula_equal(1 / x_real, sp.Piecewise((1 / x_real, sp.Ne(x_real, 0)), (5, True)))
    nowhere = 1 / (sp.floor(M / 2) + sp.floor((M + 1) / 2) - M)   # 1/0 at every integer M
    with pytest.raises(AssertionError, match=r"undefined.*seed=0") as info:
        assert_formula_equal(nowhere, 1)
    assert "formulas differ" not in str(info.value)


def test_formula_equal_compares_rational_values_exactly_by_default():
    # the docstring's promise: rel=None compares rational values exactly, not to 1e-12
    almost = sp.Piecewise((M * (1 + sp.Rational(1, 10**15)), M > 4), (M, True))
    with pytest.raises(AssertionError, match="formulas differ at M="):
        assert_formula_equal(almost, M)
    assert_formula_equal(almost, M, rel=1e-12)


UNDEFINED = [sp.nan, sp.zoo, sp.oo, -sp.oo]


@pytest.mark.parametrize("value", UNDEFINED, ids=str)
def test_formula_equal_nan_zoo_oo_are_unequal_even_to_themselves(value):
    with pytest.raises(AssertionError, match=rf"actual is or contains {value}.*unequal to every"):
        assert_formula_equal(value, value)
    with pytest.raises(AssertionError, match=rf"expected is or contains {value}"):
        assert_formula_equal(M, sp.Piecewise((value, M > 3), (M, True)))


@pytest.mark.parametrize("value", [float("inf"), float("-inf"), sp.oo, sp.zoo], ids=str)
def test_close_infinities_are_unequal_even_to_themselves(value):
    with pytest.raises(AssertionError, match="unequal to everything"):
        assert_close(value, value)


def test_close_abs_tolerance_holds_for_large_irrational_values():
    # |e**40 + 0.001 - e**40| = 0.001: the digits below 1e-6 of a 2e17 value must be kept
    assert_close(sp.exp(40) + 1e-7, sp.exp(40), rel=0, abs=1e-6)
    with pytest.raises(AssertionError, match="values differ"):
        assert_close(sp.exp(40) + 1e-3, sp.exp(40), rel=0, abs=1e-6)


def test_close_accepts_complex_numbers():
    assert_close(1 + 2j, 1 + 2j)
    assert_close(sp.sqrt(-4), 2j)
    with pytest.raises(AssertionError, match="values differ"):
        assert_close(1 + 2j, 1 - 2j)


def test_helpers_reject_bad_tolerances_and_seeds():
    with pytest.raises(ValueError, match="rel must be a finite non-negative number"):
        assert_formula_equal(sp.Max(M, 2), M, rel=float("nan"))     # nan once passed anything
    with pytest.raises(ValueError, match="rel must be a finite"):
        assert_close(1, 2, rel=float("inf"))
    with pytest.raises(ValueError, match="seed must be an integer"):
        assert_formula_equal(sp.Max(M, 2), sp.Max(M, 2) + 0 * M, seed=None)  # not reproducible


# --- bounded work: too large to compare fails fast, never hangs -------------------------

def run_isolated(code: str, timeout: float = 60) -> str:
    """Run *code* in a fresh interpreter (a hang there cannot hang the suite)."""
    try:
        out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                             text=True, timeout=timeout, cwd=Path(symroof.__file__).parents[1])
    except subprocess.TimeoutExpired:
        pytest.fail(f"did not finish within {timeout} s (hung)")
    assert out.returncode == 0, out.stderr
    return out.stdout


TOWER_PRELUDE = """
    import sympy as sp
    from sympy.core.evalf import EvalfMixin
    from symroof.testing import bounded
    from symroof.budget import expansion_bound
    from symroof.symbols import M, N
    from symroof.testing import assert_close, assert_formula_equal, assert_matches_oracle

    # The work that would hang, guarded (instead of timed): evaluating a number past the
    # checker's _MAX_BITS (its size read off the tree) or cancelling an expression that
    # expands past _MAX_TERMS (symroof.budget's bound, independent of the checker's own)
    # raises Unbounded, which no except clause of the checker catches: the run fails.
    class Unbounded(BaseException):
        pass

    real_evalf, real_cancel = EvalfMixin.evalf, sp.cancel
    sizing = []                      # _bits evaluates pi, E, ... itself: not guarded again
    def evalf(self, *args, **kwargs):
        if getattr(self, "is_number", False) and not sizing:
            sizing.append(self)
            try:
                bits = bounded._bits(self, {})
            finally:
                sizing.pop()
            if bits > bounded._MAX_BITS:
                raise Unbounded("evalf of a number past _MAX_BITS")
        return real_evalf(self, *args, **kwargs)
    def cancel(f, *args, **kwargs):
        if expansion_bound(f, bounded._MAX_TERMS) > bounded._MAX_TERMS:
            raise Unbounded("cancel of more than _MAX_TERMS terms")
        return real_cancel(f, *args, **kwargs)
    EvalfMixin.evalf, sp.cancel = evalf, cancel

    tower = sp.exp(sp.exp(sp.exp(M)))
    def verdict(f, *args, **kw):
        try:
            f(*args, **kw)
            result = "passed"
        except AssertionError as exc:
            result = "AssertionError: " + str(exc).splitlines()[0]
        except Exception as exc:
            result = type(exc).__name__ + ": " + str(exc)[:80]
        print(result)
    def armed(call):
        try:
            call()
        except Unbounded as exc:
            return str(exc)
        return "not stopped"
"""


def test_the_tower_guards_stop_the_work_they_guard():
    """The prelude's guards can fail a run: they stop a tower's evalf and a big cancel."""
    out = run_isolated(TOWER_PRELUDE + """
    print(armed(lambda: sp.exp(sp.exp(sp.exp(5))).evalf(15)))
    print(armed(lambda: sp.cancel((M + N + 1)**300 * (M + 1) - (M + N + 1)**300)))
    print(armed(lambda: sp.exp(sp.Integer(5)).evalf(15)) + ", " + str(sp.cancel((M**2 - 1) / (M - 1))))
    """).splitlines()
    assert out == ["evalf of a number past _MAX_BITS", "cancel of more than _MAX_TERMS terms",
                   "not stopped, M + 1"], out


def test_formula_equal_on_an_exponent_tower_fails_fast_instead_of_hanging():
    out = run_isolated(TOWER_PRELUDE + """
    verdict(assert_formula_equal, tower, tower)                                 # structural
    verdict(assert_formula_equal, tower, M)
    verdict(assert_formula_equal, tower, sp.exp(sp.exp(sp.exp(N))))
    verdict(assert_formula_equal, tower, tower + 1)
    big = sp.exp(sp.exp(sp.exp(M + 10)))             # equal, but too large at every point
    verdict(assert_formula_equal, sp.Max(big, 1), big)     # equal, not decided by cancel
    verdict(assert_formula_equal, sp.exp(sp.exp(sp.exp(5))) * M, M)
    """).splitlines()
    verdicts = out
    assert len(verdicts) == 6, out
    assert verdicts[0] == "passed"
    assert all(v.startswith("AssertionError") for v in verdicts[1:]), out
    assert "too large to compare numerically" in verdicts[4]
    assert "too large to compare numerically" in verdicts[5]


def test_close_and_oracle_on_an_exponent_tower_fail_fast_instead_of_hanging():
    out = run_isolated(TOWER_PRELUDE + """
    verdict(assert_close, sp.exp(sp.exp(sp.exp(5))), 1)
    verdict(assert_matches_oracle, tower, lambda s: 1, [{"M": 5}])
    verdict(assert_matches_oracle, M, lambda s: sp.exp(sp.exp(sp.exp(5))), [{"M": 5}])
    """).splitlines()
    assert len(out) == 3, out
    for verdict in out:
        assert verdict.startswith("AssertionError"), out
        assert "too large to compare numerically" in verdict, out


def test_formula_equal_skips_cancel_when_expanding_would_take_long():
    out = run_isolated(TOWER_PRELUDE + """
    big = (M + N + 1)**300                           # cancel() would expand ~45,000 terms
    verdict(assert_formula_equal, big * (M + 1), big * M + big)
    verdict(assert_formula_equal, big * (M + 1), big * M + big + 1)
    """).splitlines()
    verdicts = out
    assert len(verdicts) == 2, out
    assert verdicts[0] == "passed", out
    assert verdicts[1].startswith("AssertionError: formulas differ"), out


# --- assert_free_symbols ----------------------------------------------------------------

def test_free_symbols_passes_on_exact_set():
    assert_free_symbols(gemm(M, N, K).intensity, {M, N, K, b})
    assert_free_symbols(2 * S * B, [S, B])
    assert_free_symbols(3 * S, S)
    assert_free_symbols(sp.Integer(3), set())


def test_free_symbols_fails_on_missing_or_extra_symbols():
    with pytest.raises(AssertionError, match=r"unexpected: B \(positive integer\)"):
        assert_free_symbols(2 * S * B, {S})
    with pytest.raises(AssertionError, match=r"missing:    L"):
        assert_free_symbols(2 * S * B, {S, B, sp.Symbol("L", positive=True, integer=True)})


def test_free_symbols_catches_a_lookalike_with_other_assumptions():
    with pytest.raises(AssertionError) as info:
        assert_free_symbols(2 * sp.Symbol("S") * B, {S, B})
    msg = str(info.value)
    assert "'S' appears twice with different assumptions" in msg
    assert "no assumptions; positive integer" in msg
    with pytest.raises(AssertionError,
                       match=r"symbol 'D' \(real=True\) is not symroof's 'D' \(positive integer\)"):
        assert_free_symbols(sp.Symbol("D", real=True) * B, {D, B})


def test_free_symbols_rejects_names():
    with pytest.raises(TypeError, match="Symbols"):
        assert_free_symbols(S, ["S"])


# --- assert_close -----------------------------------------------------------------------

def test_close_passes_within_rel_and_abs():
    assert_close(1.0 + 1e-12, 1)
    assert_close(sp.Rational(1, 3), 1 / 3)
    assert_close(1.001, 1, rel=1e-2)
    assert_close(1e-20, 0, abs=1e-15)
    assert_close((2 * M * N * K).subs({M: 2, N: 3, K: 4}), 48, rel=0)
    assert_close(sp.pi, 3.141592653589793)
    assert_close(10**30, 10**30 + 1, rel=1e-20)


def test_close_fails_outside_tolerance():
    with pytest.raises(AssertionError, match=r"values differ: 1\.001.* != 1 \(expected\)"):
        assert_close(1.001, 1)
    with pytest.raises(AssertionError, match="abs="):
        assert_close(1e-20, 0)
    with pytest.raises(AssertionError):
        assert_close(10**30 + 1, 10**30, rel=0)     # exact for integers, no float rounding
    with pytest.raises(AssertionError):
        assert_close(float("nan"), float("nan"))


def test_close_names_a_free_symbol_left_in_the_value():
    with pytest.raises(AssertionError, match=r"free symbol\(s\) B, S"):
        assert_close(2 * B * S, 4)
    with pytest.raises(TypeError, match="string"):
        assert_close("1", 1)
    with pytest.raises(ValueError, match="abs must be"):
        assert_close(1, 1, abs=-1)


# --- assert_matches_oracle --------------------------------------------------------------

def loop_flops(size: dict) -> int:
    """Brute force: 2 FLOPs (multiply, add) per innermost iteration of the GEMM loop nest."""
    flops = 0
    for _ in range(size["M"]):
        for _ in range(size["N"]):
            for _ in range(size[K]):   # lookups by Symbol work too
                flops += 2
    return flops


SIZES = [{"M": 1, "N": 1, "K": 1}, {"M": 2, "N": 3, "K": 4}, {M: 5, N: 1, K: 7}]


def test_matches_oracle_passes_against_a_loop_counter():
    assert_matches_oracle(2 * M * N * K, loop_flops, SIZES)
    assert_matches_oracle(gemm(M, N, K).flops, loop_flops, iter(SIZES))
    assert_matches_oracle(2 * M * N * K, lambda s: 2.0 * s["M"] * s["N"] * s["K"], SIZES)


def test_matches_oracle_wrong_formula_fails_naming_the_size():
    with pytest.raises(AssertionError) as info:
        assert_matches_oracle(2 * M * N * K + M * N, loop_flops, SIZES)
    msg = str(info.value)
    assert "3 of 3 sizes" in msg
    assert "at {'M': 2, 'N': 3, 'K': 4}: formula 2*K*M*N + M*N = 54, counter loop_flops = 48" in msg


def test_matches_oracle_rel_and_bad_input():
    assert_matches_oracle(2 * M * N * K, lambda s: loop_flops(s) + 1, SIZES[1:2], rel=0.05)
    with pytest.raises(AssertionError, match="no sizes"):
        assert_matches_oracle(2 * M * N * K, loop_flops, [])
    with pytest.raises(AssertionError, match="no value for K"):
        assert_matches_oracle(2 * M * N * K, loop_flops, [{"M": 1, "N": 1}])
    with pytest.raises(TypeError, match="returned NoneType"):
        assert_matches_oracle(2 * M * N * K, lambda s: None, SIZES)


@pytest.mark.parametrize("value", [-2, 0, 2.5, Fraction(7, 2)], ids=str)
def test_matches_oracle_checks_size_values_against_the_symbols_assumptions(value):
    # M is a positive integer: the formula and the counter may agree at M = -2, but that
    # size says nothing about the formula's domain
    with pytest.raises(ValueError, match=rf"M={value}.*M is a positive integer symbol"):
        assert_matches_oracle(2 * M * N * K, lambda s: 2 * s["M"] * s["N"] * s["K"],
                              [{"M": value, "N": 1, "K": 1}])
    with pytest.raises(ValueError, match=rf"M={value}"):
        assert_matches_oracle(2 * N, lambda s: 2 * s["N"], [{M: value, "N": 1}])   # by Symbol


def test_matches_oracle_rejects_bad_sizes_with_clear_errors():
    with pytest.raises(TypeError, match="sizes must be an iterable of dicts.*got dict"):
        assert_matches_oracle(2 * M, lambda s: 2 * s["M"], {"M": 2})
    with pytest.raises(TypeError, match="each size must be a dict.*got list"):
        assert_matches_oracle(2 * M, lambda s: 2 * s["M"], [[("M", 2)]])
    with pytest.raises(TypeError, match="size keys must be symbol names or Symbols"):
        assert_matches_oracle(2 * M, lambda s: 2 * s["M"], [{2 * M: 2}])
    with pytest.raises(ValueError, match="gives M twice"):
        assert_matches_oracle(2 * M, lambda s: 2 * s["M"], [{"M": 2, M: 3}])
    with pytest.raises(ValueError, match="not a finite number"):
        assert_matches_oracle(2 * M, lambda s: 2 * s["M"], [{"M": float("inf")}])
    with pytest.raises(TypeError, match="counter must be callable"):
        assert_matches_oracle(2 * M, 4, [{"M": 2}])


def test_matches_oracle_nan_and_infinite_values_never_match():
    with pytest.raises(AssertionError, match=r"counter .* = nan.*unequal to everything"):
        assert_matches_oracle(2 * M, lambda s: float("nan"), [{"M": 2}])
    with pytest.raises(AssertionError, match=r"formula 1/\(M - 2\) = zoo"):
        assert_matches_oracle(1 / (M - 2), lambda s: sp.zoo, [{"M": 2}])


# --- properties -------------------------------------------------------------------------

# functions of a real x that are quadratic on each side of 0, so two of them are equal
# exactly when they agree at -3, -2, -1, 0, 1, 2, 3 (a check independent of the helper)
PIECES = [x_real, x_real**2, sp.Abs(x_real), sp.Max(x_real, 0), sp.Min(x_real, 0),
          sp.sqrt(x_real**2), sp.Heaviside(x_real, 0), sp.sign(x_real), sp.Integer(1)]
combos = st.lists(st.tuples(st.integers(-2, 2), st.sampled_from(PIECES)), min_size=1, max_size=4)


def combine(terms: list[tuple[int, sp.Expr]]) -> sp.Expr:
    return sp.Add(*(c * f for c, f in terms))


@settings(max_examples=150, deadline=None)
@given(combos, combos, st.integers(0, 2**32))
def test_property_formula_equal_verdict_matches_an_independent_check(left, right, seed):
    a, e = combine(left), combine(right)
    truly_equal = all(a.subs(x_real, v) == e.subs(x_real, v) for v in range(-3, 4))
    try:
        assert_formula_equal(a, e, seed=seed)
        verdict = True
    except AssertionError:
        verdict = False
    assert verdict == truly_equal, (a, e)


# other spellings of each piece, equal for every real x (zero included)
REWRITES = {
    x_real: [sp.Max(x_real, 0) + sp.Min(x_real, 0), sp.Abs(x_real) * sp.sign(x_real)],
    x_real**2: [sp.Max(x_real, 0)**2 + sp.Min(x_real, 0)**2, sp.Abs(x_real) * sp.Abs(x_real)],
    sp.Abs(x_real): [sp.Max(x_real, 0) - sp.Min(x_real, 0), sp.Max(x_real, -x_real)],
    sp.Max(x_real, 0): [(x_real + sp.Abs(x_real)) / 2, x_real * sp.Heaviside(x_real, 0)],
    sp.Min(x_real, 0): [(x_real - sp.Abs(x_real)) / 2, x_real - sp.Max(x_real, 0)],
    sp.Heaviside(x_real, 0): [(sp.sign(x_real) + sp.Abs(sp.sign(x_real))) / 2],
    sp.sign(x_real): [2 * sp.Heaviside(x_real, sp.Rational(1, 2)) - 1],
    sp.Integer(1): [sp.sign(x_real)**2 + sp.Piecewise((1, sp.Eq(x_real, 0)), (0, True))],
}


@settings(max_examples=100, deadline=None)
@given(combos, st.randoms(use_true_random=False), st.integers(0, 2**32))
def test_property_formula_equal_passes_other_spellings_of_the_same_formula(terms, rnd, seed):
    a = combine(terms)
    e = combine([(c, rnd.choice([f] + REWRITES.get(f, []))) for c, f in terms])
    assert all(a.subs(x_real, v) == e.subs(x_real, v) for v in range(-3, 4))  # the premise
    assert_formula_equal(a, e, seed=seed)


ASSUMPTIONS = [
    {"positive": True, "integer": True}, {"positive": True}, {"nonnegative": True},
    {"nonnegative": True, "integer": True}, {"negative": True}, {"nonpositive": True},
    {"real": True}, {"integer": True}, {"even": True}, {"odd": True},
    {"positive": True, "even": True}, {"prime": True}, {"nonzero": True}, {"rational": True},
    {"imaginary": True}, {}, {"zero": True}, {"irrational": True}, {"noninteger": True},
]


@settings(max_examples=len(ASSUMPTIONS) * 3, deadline=None)
@given(st.sampled_from(ASSUMPTIONS), st.integers(0, 2**32))
def test_property_samples_satisfy_and_cover_each_symbols_domain(assumptions, seed):
    s = sp.Symbol("s", **assumptions)
    rng = random.Random(seed)
    near = [sp.Integer(4), sp.Rational(7, 2)]
    values = [sampling._sample(s, rng, near, "t") for _ in range(200)]
    for v in values:
        assert sampling._violation(s, v) is None, (assumptions, v)
    reals = [v for v in values if v.is_real]
    real = s.is_extended_real       # noninteger=True is extended_real, not real (+-oo)
    neg_ok = s.is_extended_nonnegative is not True and real is not False
    pos_ok = s.is_extended_nonpositive is not True and real is not False
    assert any(v < 0 for v in reals) == neg_ok
    assert any(v == 0 for v in values) == (s.is_zero is not False)
    assert any(v > 0 for v in reals) == pos_ok
    assert any(not v.is_real for v in values) == (real is not True)


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(UNDEFINED + [float("nan"), float("inf")]),
       st.sampled_from([M, sp.Integer(0), sp.Max(M, N), sp.nan, sp.oo, sp.zoo]))
def test_property_undefined_values_equal_nothing(bad, other):
    for args in ((bad, other), (other, bad)):
        with pytest.raises(AssertionError):
            assert_formula_equal(*args)
    if not sp.sympify(other).free_symbols:
        with pytest.raises(AssertionError):
            assert_close(bad, other)


@settings(max_examples=50, deadline=None)
@given(st.integers(-10**6, 10**6))
def test_property_oracle_accepts_exactly_the_values_the_assumptions_allow(m):
    check = lambda: assert_matches_oracle(3 * M, lambda s: 3 * s["M"], [{"M": m}])  # noqa: E731
    if m >= 1:
        check()
    else:
        with pytest.raises(ValueError, match=f"M={m}"):
            check()


# --- the pytest plugin ------------------------------------------------------------------

def test_plugin_package_imports_only_the_standard_library_at_top_level():
    # pytest loads this package at startup: sympy and symroof modules load lazily, in the
    # helpers; at the top its modules import the standard library and each other only
    files = sorted(Path(testing.__file__).parent.glob("*.py"))
    assert {f.stem for f in files} >= {"__init__", "formulas", "values"}
    for path in files:
        tree = ast.parse(path.read_text())
        top = {a.name for node in tree.body if isinstance(node, ast.Import) for a in node.names}
        top |= {node.module for node in tree.body if isinstance(node, ast.ImportFrom)}
        top = {m for m in top if not m.startswith("symroof.testing.")}
        assert top <= {"__future__", "itertools", "math", "numbers", "random",
                       "collections.abc", "typing"}, (path.name, top)


def test_plugin_start_up_loads_no_sympy_and_no_other_symroof_module():
    """Importing the plugin in a fresh interpreter loads its own package and nothing of
    sympy, mpmath or the rest of symroof (what every pytest session of a user pays)."""
    code = ("import sys, symroof.testing; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('sympy', 'mpmath', 'symroof') and not m.startswith('symroof.testing')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env={"PYTHONPATH": str(Path(symroof.__file__).parents[1])})
    assert out.stdout.split() == ["['symroof',", "'symroof.version']"], out.stdout


def test_fixtures_via_pytester(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch):
    pytester.makepyfile(test_user=textwrap.dedent("""
        from symroof.symbols import M, N, K, b, n
        from symroof.workloads import gemm

        def test_all(formula_equal, free_symbols, close, matches_oracle):
            formula_equal(gemm(n, n, n).intensity, 2*n/(3*b))
            free_symbols(2*M*N*K, {M, N, K})
            close(0.1 + 0.2, 0.3)
            matches_oracle(2*M*N*K, lambda s: 2*s["M"]*s["N"]*s["K"], [{"M": 2, "N": 3, "K": 4}])

        def test_wrong(formula_equal):
            formula_equal(2*n/(3*b), 2*n/(3*b) + 1/n)
    """))
    # a fresh interpreter that finds this checkout, with only the plugin we name (an
    # installed symroof would also autoload it from its entry point)
    monkeypatch.setenv("PYTHONPATH", str(Path(symroof.__file__).parents[1]))
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    result = pytester.runpytest_subprocess("-p", "symroof.testing", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*AssertionError: formulas differ:*", "*actual - expected = -1/n*"])


def test_helpers_work_without_pytest():
    code = ("import sys; sys.modules['pytest'] = None; from symroof.testing import *; "
            "from symroof.symbols import M; assert_formula_equal(M + M, 2*M); print('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=Path(symroof.__file__).parents[1], check=True)
    assert out.stdout.strip() == "ok"

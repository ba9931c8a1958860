"""Tests for symroof.testing: each helper passes on right input and fails loudly on wrong."""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from fractions import Fraction
from pathlib import Path

import pytest
import sympy as sp

import symroof
from symroof import testing
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


# --- the pytest plugin ------------------------------------------------------------------

def test_plugin_module_imports_only_the_standard_library_at_top_level():
    # pytest loads this module at startup: sympy and symroof modules load lazily, in the helpers
    tree = ast.parse(Path(testing.__file__).read_text())
    top = {a.name for node in tree.body if isinstance(node, ast.Import) for a in node.names}
    top |= {node.module for node in tree.body if isinstance(node, ast.ImportFrom)}
    assert top <= {"__future__", "numbers", "random", "collections.abc", "typing"}


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

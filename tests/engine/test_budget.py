"""symroof.budget: the limits, the checks before work, and the wall-clock/memory guard.

The measures (operations, degree and expansion bounds) are checked against brute force
(SymPy's own ``cancel`` and ``Poly``) on random expressions: a bound below the truth
would let a large input through. The guard is checked end to end: results and errors
come back from the child unchanged, a late child is killed and named, no child is left.
"""

from __future__ import annotations

import contextvars
import os
import random
import threading
import time

import pytest
import sympy as sp

import symroof as sr
from symroof import budget
from symroof.budget import (DEFAULT, Budget, BudgetError, check_expr, check_rows, current,
                            degree_bound, expansion_bound, guarded, light, limits, note,
                            operations, parse_limits, substitute)
from symroof.errors import SymroofError
from symroof.solve import positive_condition
from symroof.symbols import B, D, H, L, S, b

SYMS = (B, S, D, L, b)


def test_defaults_are_the_documented_constants():
    assert DEFAULT == Budget(rows=10_000, ops=2_000, degree=16, seconds=10.0, memory_mib=2048,
                             digits=4000, file_bytes=8 * 2**20)
    assert (budget.MAX_LENGTH, budget.MAX_DEPTH, budget.MAX_EXPONENT, budget.MAX_BITS) == \
        (2000, 64, 64, 1024)
    from symroof import parse
    assert parse.MAX_EXPONENT is budget.MAX_EXPONENT and parse.MAX_BITS is budget.MAX_BITS


def test_limits_nest_and_restore():
    assert current() is DEFAULT
    with limits(rows=5) as outer:
        assert outer.rows == 5 and outer.degree == DEFAULT.degree
        with limits(degree=3, seconds=None) as inner:
            assert (inner.rows, inner.degree, inner.seconds) == (5, 3, None)
        assert current() is outer
    assert current() is DEFAULT


def test_limits_are_per_context():
    seen = []
    with limits(rows=7):
        t = threading.Thread(target=lambda: seen.append(current().rows))
        t.start()
        t.join()
        seen.append(contextvars.copy_context().run(lambda: current().rows))
    assert seen == [DEFAULT.rows, 7]


@pytest.mark.parametrize("changes, fragment", [
    ({"rowz": 3}, "unknown limit 'rowz'"), ({"rows": 0}, "rows: expected a positive integer"),
    ({"rows": 2.5}, "rows: expected a positive integer"), ({"rows": True}, "positive integer"),
    ({"degree": None}, "degree: expected a positive integer, got None"),
    ({"seconds": float("inf")}, "seconds: expected a positive number or None"),
    ({"seconds": -1}, "seconds"), ({"digits": 10**6}, "Python's limit"),
])
def test_bad_limits_are_named(changes, fragment):
    with pytest.raises(SymroofError, match=fragment.replace("(", "\\(")):
        with limits(**changes):
            pass


def test_parse_limits():
    assert parse_limits(["rows=1e6", "seconds=0.5", "memory_mib=off", "degree=1_0"]) == \
        {"rows": 1_000_000, "seconds": 0.5, "memory_mib": None, "degree": 10}
    for bad, fragment in (("rows", "expected NAME=VALUE"), ("rows=2.5", "positive integer"),
                          ("seconds=abc", "seconds"), ("digits=off", "positive integer"),
                          ("digit=3", "did you mean 'digits'"), ("rows=" + "9" * 40, "positive integer")):
        with pytest.raises(SymroofError, match=fragment):
            parse_limits([bad])


def test_check_rows_multiplies_before_building():
    assert check_rows([("M", 100), ("N", 100)], "--set") == 10_000
    with pytest.raises(BudgetError) as info:
        check_rows([("B", 999)] * 6, "--set")
    assert "994,014,980,014,994,001 rows" in str(info.value) and info.value.limit == "rows"


# ---------------------------------------------------------------------------
# measures against brute force


def _random_expr(rng: random.Random, depth: int = 3) -> sp.Expr:
    if depth == 0 or rng.random() < 0.25:
        return rng.choice([*SYMS, sp.Integer(rng.randint(1, 9))])
    op = rng.randrange(4)
    a, c = _random_expr(rng, depth - 1), _random_expr(rng, depth - 1)
    if op == 0:
        return a + c
    if op == 1:
        return a * c
    if op == 2:
        return a / c
    return a ** rng.randint(2, 3)


def test_bounds_are_never_below_the_truth():
    rng = random.Random(17)
    checked = 0
    for _ in range(150):
        e = _random_expr(rng)
        if not e.free_symbols:
            continue
        num, den = sp.fraction(sp.cancel(sp.together(e)))
        for s in e.free_symbols:
            assert degree_bound(e, s) >= max(sp.degree(num, s), sp.degree(den, s)), (e, s)
        terms = max(len(sp.Add.make_args(sp.expand(num))), len(sp.Add.make_args(sp.expand(den))))
        assert expansion_bound(e) >= terms, e
        checked += 1
    assert checked > 100


def test_measures_on_known_forms():
    assert operations(2 * B * S * D + B * L) == 5          # 2 products of 4 and 2, a sum
    assert degree_bound((B * S + 1) ** 3 / (B + 2), B) == 3
    assert degree_bound(sp.exp(B**5) + B, B) == 5           # inside a function: not expanded
    assert expansion_bound((B + S + D) ** 4) == 15          # C(3 + 4 - 1, 4)
    assert expansion_bound((B + S) ** 64) == 65
    assert expansion_bound((B + S + D) ** 64, cap=100) == 101   # stops counting past the cap
    assert light((B + S) ** 4) and not light((B + S) ** 5) and not light((B + S + D + L) ** 4 * S)


def test_check_expr_names_the_limit():
    with limits(ops=10), pytest.raises(BudgetError, match="more than 10 operations") as info:
        check_expr(sp.Add(*(B**k for k in range(1, 15))), "limit")
    assert info.value.limit == "ops"
    with pytest.raises(BudgetError, match="crossover: degree 17 in S, more than the limit of 16"):
        check_expr(S**17 + B, "crossover")
    check_expr(S**16 * B**16, "crossover")   # at the limit: accepted


def test_substitute_is_xreplace_within_the_limit():
    e = 2 * B**3 * S / (b * (B + S))
    at = {B: 12, S: 2**40, b: sp.Rational(1, 2)}
    assert substitute(e, at, "I") == e.xreplace(at)
    assert substitute(sp.exp(B) * S, {B: 3, S: 2}, "x") == 2 * sp.exp(3)
    with pytest.raises(BudgetError, match="x: exp\\(100000\\) would have about 43,429 digits"):
        substitute(sp.exp(B), {B: 100_000}, "x")
    with pytest.raises(BudgetError, match="x: a number of about 4,516 digits"):
        substitute(B**15, {B: 2**1000}, "x")
    with pytest.raises(BudgetError, match="would have more than 10\\*\\*9 digits"):
        substitute(2**(2**B), {B: 40}, "x")
    assert substitute(1**B, {B: 10**30}, "x") == 1


# ---------------------------------------------------------------------------
# the guard


def _no_child_left():
    with pytest.raises(ChildProcessError):
        os.waitpid(-1, os.WNOHANG)


def test_guard_returns_what_the_call_returns():
    dec = sr.workloads.decode(sr.models.transformer(layers=L, d_model=D, heads=H), B, S)
    parts = dec.flops_by_operand
    direct = sr.crossover(parts["activation"], parts["weight"], S)
    forked = guarded("crossover", budget_free(sr.crossover), parts["activation"],
                     parts["weight"], S)
    assert forked == direct and forked[0].value == 6 * D
    _no_child_left()


def budget_free(fn):
    """``fn`` run with no guard of its own, so that the test's guarded() is the fork."""
    def run(*args):
        with limits(seconds=None, memory_mib=None):
            return fn(*args)
    return run


def test_guard_passes_errors_back():
    with pytest.raises(SymroofError, match="equal for every S"):
        guarded("a crossover", budget_free(sr.crossover), S, S, S)

    def bug():
        raise KeyError("inside")
    with pytest.raises(KeyError) as info:
        guarded("a bug", bug)
    assert any("guarded child process" in n and "KeyError" in n for n in info.value.__notes__)
    _no_child_left()


def test_guard_kills_a_late_child_and_names_the_step():
    def slow():
        note("counting slowly")
        time.sleep(30)
    t0 = time.perf_counter()
    with limits(seconds=0.5), pytest.raises(BudgetError) as info:
        guarded("a slow step", slow)
    assert time.perf_counter() - t0 < 3
    assert str(info.value) == ("a slow step: still running after 0.5 s while counting slowly; "
                               "stopped at the seconds limit (raise it with --budget seconds=N)")
    _no_child_left()


def test_guard_nested_calls_run_in_the_same_child():
    def outer():
        return guarded("inner", lambda: (os.getpid(), budget._CHILD_PIPE is not None))
    pid, in_child = guarded("outer", outer)
    assert in_child and pid != os.getpid()


def test_guard_off_runs_here():
    with limits(seconds=None, memory_mib=None):
        assert guarded("here", os.getpid) == os.getpid()
    assert guarded("light", os.getpid, unguarded=True) == os.getpid()
    assert guarded("forked", os.getpid) != os.getpid()


def test_light_inputs_are_quick_without_the_guard():
    """The measurement behind running light inputs unguarded: random rational functions
    within the light bounds (400 expanded terms, degree 4 per symbol) through limit,
    crossover and positive_condition must finish well inside the seconds limit, so the
    guard would never have stopped them. Measured while building this (40 inputs, 120
    calls): median 32 ms, slowest 1.3 s (a quadratic crossover whose roots' sign
    conditions SymPy factors), 7 s in all; a fork costs about 10 ms per call."""
    rng = random.Random(1717)
    worst, count = 0.0, 0
    while count < 15:
        e = _random_expr(rng, 4)
        if not (B in e.free_symbols and light(e)) or expansion_bound(e) < 20:
            continue
        count += 1
        for call in (lambda: sr.limit(e, B), lambda: sr.crossover(e, 1, B),
                     lambda: positive_condition(e - 1)):
            t0 = time.perf_counter()
            try:
                call()
            except SymroofError:
                pass
            worst = max(worst, time.perf_counter() - t0)
    assert worst < DEFAULT.seconds / 2, worst

"""symroof.budget: the limits, the checks before work, and the wall-clock/memory guard.

The measures (operations, degree and expansion bounds) are checked against brute force
(SymPy's own ``cancel`` and ``Poly``) on random expressions: a bound below the truth
would let a large input through. The guard is checked end to end: results and errors
come back from the child unchanged, a late child is killed and named, no child is left.
No test reads the clock: the seconds limit is checked with a fake ``budget.clock`` (and
once with the real one on a child that never ends, asserting only that it is stopped).
"""

from __future__ import annotations

from dataclasses import replace

import contextvars
import os
import random
import threading
import time  # only to name time.monotonic: no test reads the clock

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
    start = current()   # DEFAULT with the suite's generous seconds (tests/conftest.py)
    assert start == replace(DEFAULT, seconds=120.0)
    with limits(rows=5) as outer:
        assert outer.rows == 5 and outer.degree == DEFAULT.degree
        with limits(degree=3, seconds=None) as inner:
            assert (inner.rows, inner.degree, inner.seconds) == (5, 3, None)
        assert current() is outer
    assert current() is start


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


class FakeClock:
    """A stand-in for ``budget.clock``: returns ``readings`` in turn, then the last one
    for ever, and counts how often it was read."""

    def __init__(self, *readings: float) -> None:
        self.readings, self.reads = list(readings), 0

    def __call__(self) -> float:
        self.reads += 1
        return self.readings[min(self.reads, len(self.readings)) - 1]


def _forever(step: str = "counting for ever"):
    """Work that never ends (a busy loop, as a long SymPy computation would be)."""
    note(step)
    while True:
        pass


def test_guard_kills_a_late_child_and_names_the_step(monkeypatch):
    """The deadline is read from budget.clock: it stands still until the child has named
    its step (the first wait, up to the 30 s of the limit, ends with that note), then
    jumps past the limit. The child never ends on its own: only the guard stops it."""
    fake = FakeClock(0.0, 0.0, 1e9)
    monkeypatch.setattr(budget, "clock", fake)
    with limits(seconds=30), pytest.raises(BudgetError) as info:
        guarded("a slow step", _forever, "counting slowly")
    assert str(info.value) == ("a slow step: still running after 30 s while counting slowly; "
                               "stopped at the seconds limit (raise it with --budget seconds=N)")
    assert info.value.limit == "seconds" and fake.reads == 3
    _no_child_left()


def test_guard_waits_while_the_clock_is_within_the_limit(monkeypatch):
    """A fake clock that never passes the deadline: the child's result comes back, however
    many notes it sends first (each read of the clock leaves the whole limit)."""
    def chatty():
        for i in range(50):
            note(f"step {i}")
        return "done"
    fake = FakeClock(0.0)
    monkeypatch.setattr(budget, "clock", fake)
    with limits(seconds=30):
        assert guarded("a chatty step", chatty) == "done"
    assert fake.reads >= 2        # the deadline, then at least one wait
    _no_child_left()


def test_guard_stops_a_child_that_never_ends_on_the_real_clock():
    """budget.clock is time.monotonic unless replaced: a child that would run for ever is
    stopped at the seconds limit (2 s, which a loaded machine still meets; how long the
    stop took is not asserted)."""
    assert budget.clock is time.monotonic and budget.clock is budget.guard.clock
    with limits(seconds=2), pytest.raises(BudgetError) as info:
        guarded("an endless step", _forever)
    assert str(info.value).startswith("an endless step: still running after 2 s")
    assert info.value.limit == "seconds" and "--budget seconds=N" in str(info.value)
    _no_child_left()


def test_guard_nested_calls_run_in_the_same_child():
    def outer():
        return guarded("inner", lambda: (os.getpid(), budget.guard._CHILD_PIPE is not None))
    pid, in_child = guarded("outer", outer)
    assert in_child and pid != os.getpid()


def test_guard_off_runs_here():
    with limits(seconds=None, memory_mib=None):
        assert guarded("here", os.getpid) == os.getpid()
    assert guarded("light", os.getpid, unguarded=True) == os.getpid()
    assert guarded("forked", os.getpid) != os.getpid()


def test_light_inputs_skip_the_fork(monkeypatch):
    """Light inputs (within 400 expanded terms and degree 4 per symbol) run limit,
    crossover (up to degree 2 in the variable) and positive_condition in this process,
    without the guard's fork; inputs past the light bounds fork. The solvers' own work is
    replaced by stubs (what is checked is where it runs, not how long it takes), and
    os.fork records each call."""
    import symroof.solve as solve

    forks: list[int] = []
    real_fork = os.fork

    def fork():
        forks.append(1)
        return real_fork()
    monkeypatch.setattr(os, "fork", fork)
    monkeypatch.setattr(solve, "_limit", lambda e, v, to: (sp.Integer(0), False))
    monkeypatch.setattr(solve, "_crossover", lambda diff, v: [])
    monkeypatch.setattr(solve, "_positive_condition", lambda e: True)

    def forked(call) -> bool:
        before = len(forks)
        call()
        return len(forks) > before

    # light rational functions of 20 to 400 expanded terms, degree 1 to 4 in B (random ones
    # of that size are rare: thousands of draws cost more than the rest of this test)
    light_inputs = [
        (B + S + D + L)**2 * (B + b), (B + S + D)**2 * (L + b + 1)**2 / (B + 1),
        1 / (B + S) + 1 / (D + L) + 1 / (B + b) + 1 / (S + 1), (B * S + D + L + 1)**3,
        (B + S + D + L + b)**2 * (B + 1), (B**2 + S * D + L) * (B + b + S + 1) * (D + 2),
        (B + S + D + L)**3 / (H + b), B * (S + D + L + b + H + 1)**2 / (B + D + 1),
        (B + D) / (S + L) - (B + b) / (D + 1) + B * S / (L + 2),
        (B * S + D * L + b + H)**2 * (B + 1), (B + 1)**4 * (S + D + L + b + H),
        ((B + S) * (D + L) + b + H)**2 / (B + H + 1)**2,
    ]
    for e in light_inputs:
        assert light(e) and expansion_bound(e) >= 20 and B in e.free_symbols, e
    assert {degree_bound(e, B) for e in light_inputs} == {1, 2, 3, 4}
    for e in light_inputs:
        assert not forked(lambda: sr.limit(e, B)), e
        assert not forked(lambda: positive_condition(e - 1)), e
        assert forked(lambda: sr.crossover(e, 1, B)) == (degree_bound(e - 1, B) > 2), e
    assert any(degree_bound(e - 1, B) <= 2 for e in light_inputs)
    # the same inputs times a factor of 21 terms: past the light bounds, within the limits
    for e in light_inputs[:5]:
        heavy = e * (B + S + D) ** 5
        assert not light(heavy)
        check_expr(heavy, "heavy")
        assert forked(lambda: sr.limit(heavy, B)), heavy
        assert forked(lambda: positive_condition(heavy - 1)), heavy
        assert forked(lambda: sr.crossover(heavy, 1, B)), heavy
    assert light((B + S) ** 4) and not light((B + S) ** 5)
    assert forked(lambda: sr.limit((B + S) ** 5 / (B + D) ** 5, B))
    assert not forked(lambda: sr.limit((B + S) ** 4 / (B + D) ** 4, B))
    _no_child_left()


def test_the_package_keeps_every_name_at_its_old_path():
    """budget.py became a package (``checks``: the limits and the checks made before the
    work; ``guard``: the guarded child): every public name is still read from
    ``symroof.budget``, and is the one object its submodule defines."""
    from symroof.budget import checks, guard
    for name in budget.__all__:
        home = guard if name in guard.__all__ else checks
        assert getattr(budget, name) is getattr(home, name), name
    assert BudgetError.__module__ == "symroof.budget"   # as tracebacks and pickles name it

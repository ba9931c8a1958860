"""Suite-wide guards."""

from __future__ import annotations

import os
import sys
import threading

# Python's own bytecode cache, on for the suite and the commands it starts, even where the
# environment turns it off (PYTHONDONTWRITEBYTECODE=1 on the project's machines): without
# it each test process and each `python -m symroof` subprocess compiles every module it
# imports again (collection alone: 12 s against 5.5 s). Set before symroof is imported
# here; the xdist workers start later and inherit the environment.
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

from symroof.atlas import records as atlas_records
from symroof.budget import limits
from symroof.cli import main
from symroof.cost import RULES
from symroof.verify import Outcome, run_claims
from symroof.verify.appendix import seed_claims
from symroof.passes.backward import GRADIENT_RULES


# Hypothesis draws the same examples on every run (each test's own, seeded by its name):
# a run's verdict and its time do not depend on the luck of the draw (one property test
# took 5 s on one run and 31 s on the next), and a failure seen once is seen again.
# `--hypothesis-profile=explore` draws afresh, to look for new counterexamples.
settings.register_profile("repeatable", derandomize=True)
settings.register_profile("explore", derandomize=False)
settings.load_profile("repeatable")


@pytest.fixture(autouse=True)
def _rule_tables_unchanged() -> Iterator[None]:
    """No test leaves a rule registered (tests register inside ``table.scoped()``)."""
    before = (dict(RULES), dict(GRADIENT_RULES))
    yield
    assert (dict(RULES), dict(GRADIENT_RULES)) == before, "a test left a rule registered"


@pytest.fixture(autouse=True)
def _no_thread_left_running() -> Iterator[None]:
    """No test leaves a thread running: a process with threads cannot fork, so the
    budget's guard (symroof.budget.guarded) would run every later heavy computation of
    this test process in place, without its seconds and memory limits (an endless
    cancel then grows to gigabytes instead of being stopped). A thread a test started
    gets a moment to finish; one still running fails the test that left it."""
    before = set(threading.enumerate())
    yield
    left = [t for t in threading.enumerate() if t not in before]
    for t in left:
        t.join(timeout=10)
    alive = sorted(t.name for t in left if t.is_alive())
    assert not alive, f"the test left threads running: {', '.join(alive)}"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--update-golden", action="store_true", default=False,
                     help="rewrite golden files (tests/golden/) from the current output")


@pytest.fixture
def update_golden(request: pytest.FixtureRequest) -> bool:
    """True when the run was started with ``--update-golden``."""
    return bool(request.config.getoption("--update-golden"))


@pytest.fixture(autouse=True)
def _generous_wall_clock_limits(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The library's wall-clock limits, raised for the suite: a computation that takes 2 s
    on an idle machine may take 20 s on a busy CI machine, and must not turn into a
    BudgetError there. Tests of a limit set their own (a fake ``budget.clock``, or work
    that never ends under an explicit ``limits(seconds=...)``)."""
    monkeypatch.setattr(atlas_records, "DEFAULT_SECONDS", 600.0)   # per atlas (default 30 s)
    with limits(seconds=120.0):                                    # per solver call (10 s)
        yield


@pytest.fixture(scope="session")
def seed_outcome() -> Outcome:
    """The seed appendix's claims run once per test process (several files read it; the
    outcome is immutable: frozen results of a frozen claim file)."""
    return run_claims(seed_claims())


@pytest.fixture(scope="session")
def seed_appendix(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``symroof report appendix`` written once per test process into a folder that no
    test writes to (tests that change it copy it first)."""
    out = tmp_path_factory.mktemp("seed-appendix")
    assert main(["report", "appendix", "--out", str(out)]) == 0
    return out

"""A mixture of experts' weight reads follow the batch by default (issue 25): the
expected distinct experts E(1 - (1 - k/E)^B) of a decode step, with "all" (an upper
bound), "routed" and "active" as named options; a solver that cannot take the expected
form says so and names the options that make it solvable."""

from __future__ import annotations

import random

import pytest
import sympy as sp

import symroof as sr
from symroof.errors import SymroofError
from symroof.ir import Kind
from symroof.models import get
from symroof.symbols import B, S, b
from symroof.workloads import decode
from symroof.workloads.experts import expert_read_fraction

MIXTRAL = get("mixtral-8x7b")
#: Mixtral's routed expert weights: 32 layers x 8 experts x (gate, up, down) 4096 x 14336.
EXPERT_BYTES = 32 * 8 * 3 * 4096 * 14336 * b


def _weights(batch: int, reads: str | None = None) -> sp.Expr:
    kw = {} if reads is None else {"expert_reads": reads}
    return decode(MIXTRAL, batch, 1024, **kw).bytes_by_kind[Kind.WEIGHT]


@pytest.mark.parametrize("batch", [1, 4, 64])
def test_default_reads_are_the_expected_distinct_experts(batch):
    """all - default = the experts no token of the batch is routed to, (3/4)^B of them."""
    unread = EXPERT_BYTES * sp.Rational(3, 4) ** batch
    assert sp.expand(_weights(batch, "all") - _weights(batch) - unread) == 0
    assert _weights(batch) == _weights(batch, "expected")


def test_expected_distinct_experts_by_simulation():
    """A second computation: uniform top-2 routing of 4 tokens over 8 experts, simulated
    (seeded), meets E(1 - (3/4)^4) = 175/32 distinct experts within 2 %."""
    rng = random.Random(25)
    trials = 4000
    hits = sum(len({e for _ in range(4) for e in rng.sample(range(8), 2)})
               for _ in range(trials))
    assert hits / trials == pytest.approx(175 / 32, rel=0.02)
    assert 8 * expert_read_fraction("expected", 8, 2, 4) == sp.Rational(175, 32)


def test_named_options_bound_the_default():
    """active (k of E, a lower bound) <= expected <= routed <= all, at every batch; at
    batch 1 active, expected and routed agree (one token reads its 2 experts)."""
    for batch in (1, 4, 64):
        active, expected, routed, every = (_weights(batch, r).subs(b, 1)
                                           for r in ("active", "expected", "routed", "all"))
        assert active <= expected <= routed <= every
    assert _weights(1, "active") == _weights(1, "expected") == _weights(1, "routed")
    assert _weights(1, "all") - _weights(1, "active") == EXPERT_BYTES * sp.Rational(3, 4)


def test_batch_1_step_time_on_h100():
    """The issue's figure: all eight experts made a batch-1 step ~3.6x slower."""
    t = {r: sr.roofline(decode(MIXTRAL, 1, 1024, expert_reads=r), "h100-sxm").time_s
         for r in ("all", "expected")}
    assert float(t["all"] / t["expected"]) == pytest.approx(3.6392, rel=1e-4)


def test_solver_names_the_options_that_make_the_expected_form_solvable():
    a = decode(MIXTRAL, B, S)
    with pytest.raises(SymroofError, match="expert_reads='all'.*'active'"):
        sr.crossover(a.intensity.subs({S: 4096, b: 2}), 295, B)
    intensity = decode(MIXTRAL, B, S, expert_reads="active").intensity.subs({S: 4096, b: 2})
    (root,) = sr.crossover(intensity, 1, B)
    assert root.value.is_positive and intensity.subs(B, root.value) == 1

"""The report's shared work gives what the work done afresh gives.

A recipe evaluated once per claim file (``formula_of``), a workload's sums read without
its intensity (``Analysis._sums``), and ``display`` expanding a polynomial without a
cancel first: each is compared with the computation it replaces.
"""

from __future__ import annotations

import random

import pytest
import sympy as sp

import symroof as sr
from symroof.display import display
from symroof.errors import SymroofError
from symroof.symbols import B, D, H, L, S, b, n
from symroof.verify.recipe import Context, evaluate, formula_of

DECODE = {"workload": {"builder": "decode",
                       "model": {"transformer": {"layers": "L", "d_model": "D", "heads": "H"}},
                       "args": ["B", "S"]}, "q": "Q_kv_cache"}


def test_formula_of_is_evaluate_and_records_the_inputs_each_time():
    ctx = Context({})
    fresh = evaluate(DECODE, Context({}), {}, "claim 'x'")
    first = formula_of(DECODE, ctx, "claim 'a'")
    mentioned = set(ctx.mentioned)
    ctx.mentioned = set()
    second = formula_of(DECODE, ctx, "claim 'b'")
    assert sp.srepr(first) == sp.srepr(fresh) and second is first
    assert ctx.mentioned == mentioned and {L, D, H, B, S} <= mentioned
    # the value itself, independently: L layers of K and V, B*S tokens, D wide, b bytes
    assert sp.cancel(first.subs(b, 2) - 2 * L * B * S * D * 2) == 0


def test_formula_of_never_remembers_an_error():
    ctx = Context({})
    bad = {"workload": {"builder": "no-such-builder", "args": ["n"]}}
    for where in ("claim 'a'", "claim 'b'"):
        with pytest.raises(SymroofError, match=where):
            formula_of(bad, ctx, where)
    assert not ctx.formulas


def test_formula_of_keys_on_the_assumptions_in_force():
    ctx = Context({})
    node = {"roofline": {"workload": {"builder": "gemm", "args": ["n", "n", "n"]},
                         "hardware": "h100-sxm"}, "q": "time_s"}
    plain = formula_of(node, ctx, "claim 'a'")
    ctx.assumptions = frozenset({"FP8"})
    fp8 = formula_of(node, ctx, "claim 'b'")
    ctx.assumptions = frozenset()
    assert len(ctx.formulas) == 2
    assert sp.srepr(fp8) == sp.srepr(evaluate(node, Context({}, assumptions=frozenset({"FP8"})),
                                              {}, "x"))
    assert sp.srepr(plain) == sp.srepr(evaluate(node, Context({}), {}, "x"))


def test_sums_are_the_quantities_but_intensity():
    a = sr.workloads.decode(sr.models.transformer(layers=L, d_model=D, heads=H),
                            batch=B, context=S)
    sums = dict(a._sums)
    assert "intensity" not in a.__dict__  # reading the sums cancelled nothing
    q = dict(a.quantities)
    assert list(q) == ["F", "Q", "I", *[k for k in sums if k not in ("F", "Q")]]
    assert all(sp.srepr(q[k]) == sp.srepr(v) for k, v in sums.items())
    assert sp.cancel(q["I"] - sums["F"] / sums["Q"]) == 0


def test_display_of_a_polynomial_is_the_cancelled_form_expanded():
    rng = random.Random(7)
    syms = [B, S, D, L, b, n, H]
    for _ in range(60):
        factors = [sp.Add(*(rng.randint(-4, 9) * sp.Mul(*rng.sample(syms, rng.randint(0, 3)))
                            for _ in range(rng.randint(1, 3)))) for _ in range(rng.randint(1, 3))]
        e = sp.Mul(*factors)
        if not e.is_polynomial() or e.is_number or (
                e.is_Add and any(sp.fraction(t)[1] != 1 for t in e.args)):
            continue
        assert sp.srepr(display(e)) == sp.srepr(sp.expand(sp.cancel(e))), e

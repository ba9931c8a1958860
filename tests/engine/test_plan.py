"""The planner: closed-form batch limits against brute-force scans of the numeric step
time, the memory limit against the capacity formula and the graph's own footprint, the
best configuration against an exhaustive search in plain Python, the Pareto front, the
answer where nothing meets the objectives, and impossible input."""

from __future__ import annotations

import math
import re
from fractions import Fraction

import pytest
import sympy as sp

from symroof.errors import SymroofError
from symroof.evaluate import roofline
from symroof.hardware import resolve
from symroof.models import get
from symroof.plan import Draft, Layout, Objectives, Offer, Service, Traffic, itl_limit, plan
from symroof.plan.closed import minmax
from symroof.plan.core import TAU
from symroof.plan.layouts import formulas, step_time
from symroof.plan.search import run_blocks
from symroof.precision import Numerics
from symroof.serving import max_sequences, speculative
from symroof.symbols import B
from symroof.workloads import decode

BF16 = Numerics.resolve(weights="bf16", kv_cache="bf16", activations="bf16")
A100 = resolve("a100-80gb")


def _formulas(model, lay: Layout, count=4, traffic=((2000, 500),), service=Service(),
              draft=None):
    return formulas(get(model), lay, Offer(resolve(lay.chip), count), Traffic.of(traffic),
                    service, draft)


def _scan(step: sp.Expr, objective: Fraction, top: int) -> int:
    """The largest batch 1..top whose numeric step time (the formula as plain Python
    floats, no branches) is at most the objective (0 if none): the brute-force answer."""
    f = sp.lambdify(B, step, modules="math")
    found = 0
    for n in range(1, top + 1):
        if f(n) <= float(objective):
            found = n
    return found


@pytest.fixture(scope="module")
def llama_tp4():
    return _formulas("llama-3-70b", Layout("a100-80gb", 4, 1, BF16))


def test_itl_limit_is_the_crossover_of_the_numeric_scan(llama_tp4):
    lim = itl_limit(llama_tp4.step, TAU)
    # the closed form keeps the objective symbolic: B* is linear in it on each branch
    assert lim.formula.free_symbols == {TAU}
    for ms in (18, 25, 50, 80):
        t = Fraction(ms, 1000)
        expected = _scan(llama_tp4.step, t, 700)
        assert lim.at(TAU, sp.Rational(ms, 1000)).batch == expected, ms
    # below the step time at B -> 0 no batch meets it (t(0+) = 17.04 ms here)
    assert lim.at(TAU, sp.Rational(17, 1000)).batch == 0 == _scan(llama_tp4.step,
                                                                  Fraction(17, 1000), 50)


def test_itl_limit_with_a_min_routed_experts_and_pipeline():
    # Mixtral with routed reads: min(E, k B) experts read, a Min inside the Max
    f = _formulas("mixtral-8x7b", Layout("a100-80gb", 2, 2, BF16,
                                          expert_reads=__import__("symroof").ExpertReads.ROUTED))
    assert f.step.has(sp.Min)
    lim = itl_limit(f.step, TAU)
    for ms in (9, 12, 20, 40):
        assert lim.at(TAU, sp.Rational(ms, 1000)).batch == _scan(f.step, Fraction(ms, 1000),
                                                                 900), ms


def test_minmax_normal_form_evaluates_as_the_formula():
    x = [3 + B, 1 + 2 * B, sp.Rational(1, 2) * B + 7, sp.Integer(5)]
    e = 3 * sp.Max(x[0], sp.Min(x[1], x[3])) + sp.Max(x[2], x[3])
    mm = minmax(e)
    for n in range(0, 12):
        direct = e.xreplace({B: n})
        normal = min(max(br.expr(sp.Integer(n)) for br in m) for m in mm)
        assert direct == normal, n


def test_step_formula_agrees_with_the_graph_at_a_numeric_batch(llama_tp4):
    # the step formula in B, against a decode graph built at B = 64 (a second derivation)
    r = roofline(decode(get("llama-3-70b").with_precision(weights="bf16", kv_cache="bf16",
                                                         activations="bf16"), 64, 2500, tp=4),
                 A100, precision="bf16")
    assert sp.cancel(step_time(r, Service()) - llama_tp4.step.xreplace({B: 64})) == 0


def test_memory_limit_is_the_capacity_formula(llama_tp4):
    m = get("llama-3-70b").with_precision(weights="bf16", kv_cache="bf16", activations="bf16")
    for ctx in (2500, 8000, 32000):
        n = llama_tp4.memory.batch(ctx)
        assert n == max_sequences(m, A100, context=ctx, tp=4).sequences
        # the graph's own footprint: n sequences fit, n + 1 do not
        for b, fits in ((n, True), (n + 1, False)):
            mem = roofline(decode(m, b, ctx, tp=4), A100).memory
            assert bool(mem.weights + mem.kv_cache <= mem.capacity) is fits


def test_speculative_step_is_servings_round_over_its_tokens():
    draft = Draft(get("llama-3-8b"), 4, 0.7)
    f = _formulas("llama-3-70b", Layout("h100-sxm", 4, 1, BF16, speculative=True), draft=draft)
    m = get("llama-3-70b").with_precision(weights="bf16", kv_cache="bf16", activations="bf16")
    d = draft.model.with_precision(weights="bf16", kv_cache="bf16", activations="bf16")
    s = speculative(m, d, "h100-sxm", batch=32, context=2500, draft_tokens=4,
                    acceptance=sp.Rational(7, 10), tp=4, draft_tp=4)
    assert sp.cancel(s.round_s / s.tokens_per_pass - f.step.xreplace({B: 32})) == 0


# -- the plan against an exhaustive search in plain Python ---------------------------------


SMALL = dict(workload=[(1000, 200), (3000, 100, 0.5)],
             objectives={"itl_s": 0.03, "ttft_s": 0.5, "tokens_per_user": 20},
             load={"requests_per_s": 3}, precisions=["bf16", "weights=int4"], tp=(1, 2),
             pp=(1, 2), max_batch=600, prices={"a100-80gb": 2.0})


@pytest.fixture(scope="module")
def small():
    return plan("llama-3-8b", {"a100-80gb": 2}, **SMALL)


def _exhaustive(p):
    """Every (layout, batch) of the plan in Python floats from the formulas evaluated
    by SymPy (not the compiled path, not numpy): the rows that meet the objectives."""
    obj, rate = p.objectives, p.load.requests_per_s
    rows = []
    for f in p.formulas:
        n, pre, out = f.layout.devices, float(f.prefill_s), f.mean_output
        step = sp.lambdify(B, f.step, modules="math")
        mb = f.layout.microbatches
        for b in range(1, min(600, f.memory.batch(f.context)) + 1):
            t = step(mb * math.ceil(b / mb))  # whole micro-batches: the largest sets the step
            u = t + b * pre / out  # colocated: the prefills share the replica
            per_chip = b / (u * n)
            replicas = math.ceil(rate * out / (b / u) * (1 - 1e-12))
            ok = (t <= obj.itl_s and float(f.ttft) <= obj.ttft_s
                  and 1 / u >= obj.tokens_per_user and replicas * n <= 2)
            if ok:
                rows.append((f.layout, b, 1 / u, per_chip, replicas * n))
    return rows


def test_best_is_the_exhaustive_best(small):
    rows = _exhaustive(small)
    assert small.meeting == len(rows) > 0
    layout, batch, per_user, per_chip, chips = max(rows, key=lambda r: (r[3], -r[4], r[2]))
    best = small.best
    assert (best.layout, best.batch, best.chips) == (layout, batch, chips)
    assert best.tokens_per_chip == pytest.approx(per_chip, rel=1e-12)
    # the price: 2.0 per chip hour over tokens/s per chip, per million tokens
    assert best.cost_per_million == pytest.approx(2.0 / (per_chip * 3600) * 1e6, rel=1e-12)
    # and the batch is the closed forms' smallest limit
    b = small.binding
    assert best.batch == min(x for x in (b.batch_itl, b.batch_user, b.batch_memory, 600)
                             if x is not None)


def test_pareto_front_is_the_exhaustive_front(small):
    rows = _exhaustive(small)
    front = {(c.layout, c.batch) for c in small.front}
    dominated = set()
    for r in rows:
        if any(o[2] >= r[2] and o[3] >= r[3] and (o[2], o[3]) != (r[2], r[3]) for o in rows):
            dominated.add((r[0], r[1]))
    undominated = {(r[0], r[1]) for r in rows} - dominated
    # every front point is undominated; every undominated value pair is on the front
    assert front <= undominated
    assert {(round(r[2], 9), round(r[3], 9)) for r in rows if (r[0], r[1]) in undominated} == \
        {(round(c.tokens_per_user, 9), round(c.tokens_per_chip, 9)) for c in small.front}


def test_no_configuration_meets_names_the_binding_objective():
    p = plan("llama-3-70b", {"a100-80gb": 4}, workload=[(2000, 500)],
             objectives={"itl_s": 0.01}, load={"users": 64}, pp=(1,))
    assert p.best is None and p.meeting == 0 and p.closest is not None
    what, ratio = p.shortfall
    assert what == "itl" and ratio > 1
    # the shortfall is the closest's own: its ITL over the objective (or its chips)
    c = p.closest
    assert ratio == pytest.approx(max(c.step_s / 0.01, c.chips / 4), rel=1e-12)
    # and no batch of the closest's layout meets it: the closed form says so too
    assert p.binding.batch_itl == 0


def test_executors_agree(small):
    from symroof.plan.core import _block  # the blocks the plan ran

    blocks = [_block(i, f, Offer(A100, 2, 2.0), small.traffic, small.objectives, small.load,
                     small.service, 600) for i, f in enumerate(small.formulas)]
    serial = run_blocks(blocks)
    assert run_blocks(blocks, executor="threads", workers=2) == serial
    assert run_blocks(blocks, executor="processes", workers=2) == serial


@pytest.mark.parametrize("call, field", [
    (lambda: Objectives(itl_s=-0.05), "objectives itl_s"),
    (lambda: plan("llama-3-8b", {"a100-80gb": 1}, workload=[(100, 10)], objectives={},
                  load={"users": -4}), "load users"),
    (lambda: plan("llama-3-8b", {"a100-80gb": 1}, workload=[(100, 10)], objectives={},
                  load={"users": 4}, prices={"h100-sxm": 3.0}), "price.h100-sxm"),
    (lambda: plan("llama-3-8b", {"a100-80gb": 0}, workload=[(100, 10)], objectives={},
                  load={"users": 4}), "chips a100-80gb count"),
    (lambda: Traffic.of([(0, 10)]), "workload[0] prompt"),
    (lambda: Service(compute_efficiency=1.5), "service compute_efficiency"),
    (lambda: plan("llama-3-8b", {"a100-80gb": 1}, workload=[(100, 10)], objectives={},
                  load={"users": 4}, tp=(3,)), "tp 3"),
])
def test_impossible_input_names_the_field(call, field):
    with pytest.raises(SymroofError, match=re.escape(field)):
        call()


def test_users_fill_their_replicas_evenly():
    # 100 users: a configuration's batch is what each replica really holds (ceil(100/r)),
    # never more sequences than the users bring
    p = plan("llama-3-8b", {"a100-80gb": 8}, workload=[(1000, 200)],
             objectives={"itl_s": 0.05}, load={"users": 100}, tp=(1, 2), pp=(1,))
    assert p.front and p.best is not None
    for c in (*p.front, p.best):
        replicas = c.chips // c.layout.devices
        assert c.batch == math.ceil(100 / replicas) and c.batch * replicas >= 100
        assert c.chips <= 8


def test_chunked_prefill_step_is_one_roofline_of_decode_and_its_prompt_share():
    # every step carries B/O prompts: F and Q added (the prompts' weights are the step's
    # own), one max, checked against the two graphs built at numbers
    from symroof.ir import Kind
    from symroof.workloads import prefill

    f = _formulas("llama-3-8b", Layout("a100-80gb", 2, 1, BF16), traffic=((2000, 500),),
                  service=Service(mode="chunked"))
    m = get("llama-3-8b").with_precision(weights="bf16", kv_cache="bf16", activations="bf16")
    d = roofline(decode(m, 32, 2500, tp=2), A100)
    pre = prefill(m, 1, 2000, logits="last", tp=2)
    p = roofline(pre, A100)
    share = sp.Rational(32, 500)
    w = pre.cost.bytes_by_kind[Kind.WEIGHT]
    expected = sp.Max((d.flops + share * p.flops) / d.peak,
                      (d.bytes + share * (p.bytes - w)) / d.bandwidth) + \
        d.communication_time_s + share * p.communication_time_s
    assert sp.cancel(f.step.xreplace({B: 32}) - expected) == 0
    lim = itl_limit(f.step, TAU)
    for ms in (20, 40):
        assert lim.at(TAU, sp.Rational(ms, 1000)).batch == _scan(f.step, Fraction(ms, 1000),
                                                                 400), ms


def test_expected_expert_reads_have_no_closed_form_and_the_scan_decides():
    # E (1 - (1 - k/E)^B) experts: not piecewise linear in B; the plan says so
    p = plan("mixtral-8x7b", {"a100-80gb": 2}, workload=[(1000, 200)],
             objectives={"itl_s": 0.03}, load={"requests_per_s": 1}, tp=(2,), pp=(1,),
             expert_reads=["expected"], max_batch=200)
    assert p.best is not None and p.binding.numeric_only is not None
    assert "not linear" in p.binding.numeric_only
    assert p.best.step_s <= 0.03 and p.binding.batch_itl is None

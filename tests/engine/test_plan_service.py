"""The planner's service models beyond one prefill on the decode replicas: disaggregated
prefill replicas with their own split and the KV transfer, chunked prefill's TTFT against
a step-by-step simulation, pipeline micro-batches against a brute-force GPipe schedule,
and speculative decoding over pipeline stages."""

from __future__ import annotations

import dataclasses
import math

import pytest
import sympy as sp

from symroof import serving
from symroof.errors import SymroofError
from symroof.evaluate import roofline
from symroof.hardware import resolve
from symroof.models import get
from symroof.plan import Draft, Layout, Offer, Service, Traffic, plan
from symroof.plan.layouts import bubble, formulas, layouts, prefill_layout
from symroof.precision import Numerics
from symroof.symbols import B, S
from symroof.workloads import decode, prefill

BF16 = Numerics.resolve(weights="bf16", kv_cache="bf16", activations="bf16")
A100 = resolve("a100-80gb")
M8 = get("llama-3-8b").with_precision(weights="bf16", kv_cache="bf16", activations="bf16")


def _time(r) -> float:
    """A roofline's time, memory and compute overlapped, the link not (floats)."""
    return float(max(r.compute_time_s, r.memory_time_s) + r.communication_time_s)


# -- pipeline micro-batches against a brute-force schedule ----------------------------


def _gpipe(stages: int, micro: int, d: float) -> float:
    """The makespan of ``micro`` micro-batches through ``stages`` stages, each stage
    ``d`` seconds a micro-batch, by walking the schedule: a stage starts a micro-batch
    when it has finished the previous one and the stage before has handed it over."""
    end = [[0.0] * micro for _ in range(stages)]
    for s in range(stages):
        for j in range(micro):
            start = max(end[s - 1][j] if s else 0.0, end[s][j - 1] if j else 0.0)
            end[s][j] = start + d
    return end[-1][-1]


@pytest.mark.parametrize("micro", [1, 2, 4])
def test_microbatched_step_is_the_brute_force_schedule(micro):
    lay = Layout("a100-80gb", 1, 4, BF16, microbatches=micro)
    f = formulas(get("llama-3-8b"), lay, Offer(A100, 4), Traffic.of([(1000, 200)]), Service())
    # one stage's time for one micro-batch of 64/m sequences, from the graph at numbers
    d = _time(roofline(decode(M8, 64 // micro, f.context, tp=1, pp=4), A100))
    makespan = _gpipe(4, micro, d)
    assert math.isclose(float(f.step.xreplace({B: 64})), makespan, rel_tol=1e-12)
    # the bubble: the share of stage-time the schedule leaves idle
    idle = 1 - micro * d / makespan
    assert math.isclose(idle, float(bubble(4, micro)), rel_tol=1e-12)
    assert bubble(4, micro) == sp.Rational(3, micro + 3)


def test_microbatches_are_searched_and_the_step_taken_at_whole_micro_batches():
    args = dict(workload=[(1000, 200)], objectives={"itl_s": 0.05},
                load={"requests_per_s": 4}, tp=(1,), pp=(4,), max_batch=64)
    p = plan("llama-3-8b", {"a100-80gb": 4}, microbatches=(1, 2, 4), **args)
    assert sorted(lay.microbatches for lay in p.layouts) == [1, 2, 4]
    # decode is weight-bound here: each micro-batch reads its stage's weights again, so
    # one micro-batch wins (m + pp - 1 stage times of almost the same length)
    assert p.best is not None and p.best.layout.microbatches == 1
    only4 = plan("llama-3-8b", {"a100-80gb": 4}, microbatches=(4,), **args)
    f = only4.formulas[0]
    assert f.layout.microbatches == 4 and only4.front
    step = sp.lambdify(B, f.step, modules="math")
    for c in only4.front:  # a batch of 13 runs micro-batches of 4: the step at 16
        assert math.isclose(c.step_s, step(4 * math.ceil(c.batch / 4)), rel_tol=1e-9)
    assert any(c.batch % 4 for c in only4.front)
    assert only4.binding is not None and only4.binding.batch_itl is not None
    assert only4.binding.batch_itl % 4 == 0
    assert step(only4.binding.batch_itl) <= 0.05 < step(only4.binding.batch_itl + 4)


# -- chunked prefill: TTFT against a step-by-step simulation --------------------------


def _simulate_ttft(prompt: int, chunk: int, step_with) -> tuple[int, float]:
    """Steps and seconds until a prompt's last chunk is done: each decode step carries up
    to ``chunk`` of its tokens and lasts ``step_with(tokens it carries)`` seconds."""
    left, steps, clock = prompt, 0, 0.0
    while left > 0:
        take = min(chunk, left)
        left -= take
        steps += 1
        clock += step_with(take)
    return steps, clock


def test_chunked_ttft_is_the_simulated_steps_and_the_budget_bounds_the_batch():
    from symroof.ir import Kind

    workload = [(1500, 300), (2100, 100)]
    svc = {"mode": "chunked", "chunk_tokens": 256}
    p = plan("llama-3-8b", {"a100-80gb": 4}, workload=workload,
             objectives={"itl_s": 0.05, "ttft_s": 1.0}, load={"users": 40}, tp=(2,),
             pp=(1,), service=svc)
    assert p.best is not None
    f = next(x for x in p.formulas if x.layout == p.best.layout)
    # a decode step of the plan's batch carrying n prompts' worth of prefill (n F_p etc.,
    # prompt figures the mean of the two classes), from the graphs built at numbers
    b, t = p.best.batch, f.layout.tp
    d = roofline(decode(M8, b, f.context, tp=t), A100)
    pres = [prefill(M8, 1, n, logits="last", tp=t) for n in (1500, 2100)]
    rs = [roofline(x, A100, footprint=False) for x in pres]
    f_p = sum(r.flops for r in rs) / 2
    q_p = sum(r.bytes - x.cost.bytes_by_kind[Kind.WEIGHT] for r, x in zip(rs, pres)) / 2
    l_p = sum(r.communication_time_s for r in rs) / 2

    def step_with(prompts) -> float:
        return float(sp.Max((d.flops + prompts * f_p) / d.peak,
                            (d.bytes + prompts * q_p) / d.bandwidth)
                     + d.communication_time_s + prompts * l_p)

    # the steady step carries B/O prompts (O = 200, the mean output)
    assert math.isclose(step_with(sp.Rational(b, 200)), p.best.step_s, rel_tol=1e-9)
    # the longest prompt, 2100 tokens, in chunks of 256: 8 full steps and one of 52, each
    # carrying its chunk (x tokens: x/1800 of a mean prompt)
    steps, ttft = _simulate_ttft(2100, 256, lambda x: step_with(sp.Rational(x, 1800)))
    assert f.ttft_steps == steps == 9 and math.isclose(p.best.ttft_s, ttft, rel_tol=1e-9)
    # the chunk budget: B P/O <= C, so B <= 256 * 200 / 1800 = 28.4
    assert f.chunk_batch == 28 and p.binding.batch_chunk == 28
    assert all(c.batch <= 28 for c in p.front)
    # the TTFT limit in closed form against a scan of the TTFT formula <= 1 s
    first = sp.lambdify(B, f.first, modules="math")
    scan = max((n for n in range(1, 5000) if first(n) <= 1.0), default=0)
    assert p.binding.batch_ttft == scan > 0


def test_chunked_ttft_prefill_option_is_the_prompts_own_prefill():
    p = plan("llama-3-8b", {"a100-80gb": 1}, workload=[(2000, 500)],
             objectives={"itl_s": 0.05}, load={"users": 8}, tp=(1,), pp=(1,),
             service={"mode": "chunked", "chunk_ttft": "prefill"})
    pre = roofline(prefill(M8, 1, 2000, logits="last"), A100, footprint=False)
    assert p.best is not None and math.isclose(p.best.ttft_s, _time(pre), rel_tol=1e-12)
    assert p.formulas[0].ttft_steps == 0


# -- disaggregated: the prefill replicas' split and the KV transfer -------------------


def test_disaggregated_prefill_split_is_the_exhaustive_choice_and_ttft_has_the_transfer():
    traffic = Traffic.of([(4000, 300), (1000, 300)])
    lay = Layout("a100-80gb", 2, 1, BF16)
    offer = Offer(A100, 8)
    cache: dict = {}
    got = prefill_layout(get("llama-3-8b"), lay, offer, traffic, Service(mode="disaggregated"),
                         pp=(1, 2), ttft_s=0.15, cache=cache)
    # by hand: KV per token 2 (K, V) x 32 layers x 8 heads x 128 x 2 bytes = 131072 B, over
    # NVLink one direction, 300 GB/s
    transfer = 4000 * 131072 / 300e9
    assert math.isclose(float(got.transfer.xreplace({S: 4000})), transfer, rel_tol=1e-12)
    # every split that fits beside the decode replica (6 chips left), times from the graphs
    rows = []
    for t in (1, 2, 4):
        for p in (1, 2):
            if t * p > 6:
                continue
            times = [_time(roofline(prefill(M8, 1, n, logits="last", tp=t, pp=p), A100,
                                    footprint=False)) * p for n in (4000, 1000)]
            ttft = times[0] + transfer
            rows.append((ttft > 0.15, t * p * sum(times) / 2, ttft, t, p))
    meeting = [r for r in rows if not r[0]]
    want = min(meeting, key=lambda r: (r[1], r[2]))
    assert (got.tp, got.pp) == want[3:] == (2, 1) and got.candidates == len(rows)
    # an objective no split meets: the least TTFT
    fast = prefill_layout(get("llama-3-8b"), lay, offer, traffic,
                          Service(mode="disaggregated"), pp=(1, 2), ttft_s=0.01, cache=cache)
    assert (fast.tp, fast.pp) == min(rows, key=lambda r: r[2])[3:]
    f = formulas(get("llama-3-8b"), lay, offer, traffic, Service(mode="disaggregated"),
                 prefill_on=got)
    assert math.isclose(float(f.ttft), want[2], rel_tol=1e-9)


def test_disaggregated_plan_counts_the_prefill_replicas_chips():
    p = plan("llama-3-8b", {"a100-80gb": 8}, workload=[(2000, 400)],
             objectives={"itl_s": 0.04, "ttft_s": 0.5}, load={"requests_per_s": 6},
             tp=(1,), pp=(1,), service={"mode": "disaggregated"})
    c = p.best
    assert c is not None and c.prefill_chips > 0
    f = next(x for x in p.formulas if x.layout == c.layout)
    pre, n = f.prefill_layout, c.layout.devices
    prefill_s = float(f.prefill_s)
    # the figures by hand: decode replicas for 6 x 400 tokens/s, prefill replicas for 6
    # prompts/s, each prompt taking prefill_s on its replica of pre.devices chips
    rate = c.batch / c.step_s
    assert c.prefill_chips == math.ceil(6 * prefill_s - 1e-9) * pre.devices
    assert c.chips - c.prefill_chips == math.ceil(6 * 400 / rate - 1e-9) * n
    assert math.isclose(c.tokens_per_chip, rate / (n + rate * prefill_s * pre.devices / 400),
                        rel_tol=1e-9)


def test_disaggregated_without_a_link_needs_the_bandwidth_named():
    bare = dataclasses.replace(A100, name="bare", interconnects={})
    args = dict(workload=[(1000, 100)], objectives={"itl_s": 0.05}, load={"users": 4},
                tp=(1,), pp=(1,))
    with pytest.raises(SymroofError, match="kv_link_bandwidth"):
        plan("llama-3-8b", [Offer(bare, 2)], service={"mode": "disaggregated"}, **args)
    p = plan("llama-3-8b", [Offer(bare, 2)], **args,
             service={"mode": "disaggregated", "kv_link_bandwidth": 25e9})
    f = p.formulas[0]
    assert math.isclose(float(f.prefill_layout.transfer.xreplace({S: 1000})),
                        1000 * 131072 / 25e9, rel_tol=1e-12)
    with pytest.raises(SymroofError, match="service kv_link_bandwidth"):
        Service(kv_link_bandwidth=-1.0)
    with pytest.raises(SymroofError, match="service chunk_tokens"):
        Service(chunk_tokens=0)


# -- speculative decoding over pipeline stages -----------------------------------------


def test_speculative_with_pipeline_stages_is_the_round_over_its_tokens():
    assert serving._verify_pass is serving.verify_pass  # the former name still works
    draft = Draft(get("gpt2"), 3, 0.6)
    lay = Layout("a100-80gb", 1, 2, BF16, speculative=True)
    f = formulas(get("llama-3-8b"), lay, Offer(A100, 2), Traffic.of([(600, 200)]), Service(),
                 draft)
    d = get("gpt2").with_precision(weights="bf16", kv_cache="bf16",
                                          activations="bf16")
    ctx = f.context
    # at B = 16, each pass from its graph at numbers: the draft on one device, the
    # verification over 2 stages in turn (2 stage times)
    t_draft = _time(roofline(decode(d, 16, ctx), A100))
    t_verify = 2 * _time(roofline(serving.verify_pass(M8, 16, ctx, 3, 1, pp=2), A100))
    tokens = (1 - 0.6 ** 4) / (1 - 0.6)
    assert math.isclose(float(f.step.xreplace({B: 16})), (3 * t_draft + t_verify) / tokens,
                        rel_tol=1e-9)
    # and the space tries it on and off with pp = 2 (one micro-batch only)
    kept, _ = layouts(get("llama-3-8b"), [Offer(A100, 2)], [BF16], tp=(1,), pp=(2,),
                      draft=draft)
    assert sorted((lay.microbatches, lay.speculative) for lay in kept) == \
        [(1, False), (1, True), (2, False)]


def test_chunked_blocks_travel_with_their_ttft_formula():
    # the processes and Dask paths send each block without its formulas and the formulas
    # once: a chunked block's TTFT formula goes with its step (evaluated here, in turn)
    from symroof.plan import search

    p = plan("llama-3-8b", {"a100-80gb": 1}, workload=[(1000, 200)],
             objectives={"itl_s": 0.05, "ttft_s": 0.2}, load={"users": 16}, tp=(1,), pp=(1,),
             service={"mode": "chunked"})
    from symroof.plan.core import _block
    f = p.formulas[0]
    blk = _block(0, f, p.offers[0], p.traffic, p.objectives, p.load, p.service, 64)
    table, items = search._stripped([blk])
    assert table[0] == (f.step_bs, f.first_bs) and items[0][1].first is None
    search._install(table)
    try:
        assert search._evaluate_keyed(items[0]) == search.evaluate_block(blk)
    finally:
        search._FORMULAS.clear()
    assert search.evaluate_block(blk).meeting > 0

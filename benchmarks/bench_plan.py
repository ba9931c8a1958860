"""The planner's search: configurations per second on one process, against a
hand-written numpy evaluation of the same formulas, and on a local Dask cluster of two
worker processes; the plan for 10^9 configurations on a real cluster, on paper.

    pip install 'symroof[dask]'     # dask[array,distributed]
    python benchmarks/bench_plan.py [--points 10000000] [--block 1000000] [--repeat 3]

The space: Llama-3-70B on 8 H100 SXM, tensor x pipeline layouts at bf16 and fp8 (the
layouts `symroof plan` keeps after pruning), each at every batch 1..1000 x contexts
spaced 256 apart, with an ITL and a TTFT objective and a load of requests per second.
A block is one layout over a range of batches x every context; each is evaluated the way
`symroof plan` evaluates it (``symroof.plan.search.evaluate_block``: the compiled step
time, then every serving figure and the reductions to best, Pareto front and closest).

The hand-written side computes the same step time with numpy operations typed from the
formula's linear branches (``max`` over the memory/compute/link pieces, the coefficients
read off once outside the timing, as the compiled function is compiled once), then the
same reductions. Every ratio pairs two measurements taken side by side.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

import numpy as np
import sympy as sp

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import describe, header, line  # noqa: E402

from symroof.hardware import resolve  # noqa: E402
from symroof.models import get  # noqa: E402
from symroof.plan import Offer, Service, Traffic  # noqa: E402
from symroof.plan.closed import minmax  # noqa: E402
from symroof.plan.core import _block  # noqa: E402
from symroof.plan.inputs import Load, Objectives, parse_numerics  # noqa: E402
from symroof.plan.layouts import layouts, formulas  # noqa: E402
from symroof.plan.search import Block, evaluate_block, reduce_block, run_blocks, split  # noqa: E402
from symroof.symbols import B, S  # noqa: E402


def space(points: int, block: int) -> tuple[list[Block], list]:
    m, off = get("llama-3-70b"), Offer(resolve("h100-sxm"), 8)
    traffic, svc = Traffic.of([(2000, 500)]), Service()
    kept, _ = layouts(m, [off], [parse_numerics("bf16"), parse_numerics("fp8")],
                      pp=(1, 2), microbatches=(1,), service=svc)
    fs = [formulas(m, lay, off, traffic, svc) for lay in kept]
    per_layout = points // len(fs)
    batches = 1000
    contexts = tuple(256 * (i + 1) for i in range(max(1, per_layout // batches)))
    blocks = []
    for i, f in enumerate(fs):
        blk = _block(i, f, off, traffic, Objectives(itl_s=0.05, ttft_s=1.0),
                     Load(requests_per_s=20), svc, batches)
        blocks += split(dataclasses.replace(blk, batch_hi=batches, contexts=contexts), block)
    return blocks, fs


def hand_kernel(step_bs: sp.Expr):
    """numpy typed from the formula's branches: min over alternatives of max over
    c0 + c1 S + (s0 + s1 S) B (coefficients read off once)."""
    alts = []
    for m in minmax(step_bs, B):
        rows = []
        for br in m:
            c = sp.Poly(br.constant, S) if br.constant.has(S) else None
            s = sp.Poly(br.slope, S) if br.slope.has(S) else None
            rows.append((float(c.coeff_monomial(1)) if c else float(br.constant),
                         float(c.coeff_monomial(S)) if c else 0.0,
                         float(s.coeff_monomial(1)) if s else float(br.slope),
                         float(s.coeff_monomial(S)) if s else 0.0))
        alts.append(rows)

    def step(batch: np.ndarray, context: np.ndarray) -> np.ndarray:
        out = None
        for rows in alts:
            top = None
            for c0, c1, s0, s1 in rows:
                v = (c0 + c1 * context) + (s0 + s1 * context) * batch
                top = v if top is None else np.maximum(top, v)
            out = top if out is None else np.minimum(out, top)
        return out

    return step


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--points", type=int, default=10**7)
    ap.add_argument("--block", type=int, default=10**6)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    print(describe())
    blocks, fs = space(args.points, args.block)
    total = sum(b.points for b in blocks)
    print(f"space: {len(fs)} layouts x 1000 batches x {len(blocks[0].contexts)} contexts = "
          f"{total:,} configurations in {len(blocks)} blocks")
    kernels = {id(f.step_bs): hand_kernel(f.step_bs) for f in fs}
    by_layout = {i: f for i, f in enumerate(fs)}

    def by_hand(blk: Block):
        batch = np.arange(blk.batch_lo, blk.batch_hi + 1, dtype=np.float64)[:, None]
        context = np.asarray(blk.contexts, dtype=np.float64)[None, :]
        return reduce_block(blk, batch, context,
                            kernels[id(by_layout[blk.layout].step_bs)](batch, context))

    compiled = run_blocks(blocks)  # warm: compiled once per formula
    hand = [by_hand(b) for b in blocks]
    assert [r.meeting for r in compiled] == [r.meeting for r in hand]
    assert all(abs(a.best[4] - b.best[4]) <= 1e-9 * a.best[4]
               for a, b in zip(compiled, hand) if a.best)
    print(f"meeting the objectives: {sum(r.meeting for r in compiled):,} (compiled and hand "
          "agree)")

    rows: dict[str, list[float]] = {}
    one = blocks[0]
    b1 = np.arange(one.batch_lo, one.batch_hi + 1, dtype=np.float64)[:, None]
    c1 = np.asarray(one.contexts, dtype=np.float64)[None, :]
    from symroof.lambdified import function
    fn = function((one.step,), (B, S))
    hk = kernels[id(by_layout[one.layout].step_bs)]
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        run_blocks(blocks)
        t_c = time.perf_counter() - t0
        t0 = time.perf_counter()
        for b in blocks:
            by_hand(b)
        t_h = time.perf_counter() - t0
        t0 = time.perf_counter()
        fn(b1, c1)
        t_sc = time.perf_counter() - t0
        t0 = time.perf_counter()
        hk(b1, c1)
        t_sh = time.perf_counter() - t0
        rows.setdefault("configurations/s, one process (millions)", []).append(total / t_c / 1e6)
        rows.setdefault("time: compiled plan blocks / hand-written numpy", []).append(t_c / t_h)
        rows.setdefault("time: step formula alone, compiled / hand-written", []).append(t_sc / t_sh)
        t0 = time.perf_counter()
        run_blocks(blocks, executor="processes", workers=2)
        t_p = time.perf_counter() - t0
        rows.setdefault("speed: 2 local processes / one process (no Dask)", []).append(t_c / t_p)

    try:
        import distributed
    except ImportError:
        print("dask.distributed is not installed (pip install 'symroof[dask]'): no cluster")
        distributed = None
    if distributed is not None:
        import dask
        # Dask's nanny starts workers with MALLOC_TRIM_THRESHOLD_=65536, which turns off
        # glibc's dynamic mmap threshold: every large numpy temporary is then mapped and
        # unmapped afresh, and a block takes 1.8x its compute on one process (measured:
        # one worker 1.0 s against 0.55 s in process for the same blocks; the serial path
        # under MALLOC_TRIM_THRESHOLD_=65536 0.94 s against 0.53 s). The cluster here keeps
        # the nanny's thread settings and glibc's default, as a cluster for numpy work should.
        environ = {k: v for k, v in dask.config.get("distributed.nanny.pre-spawn-environ").items()
                   if k != "MALLOC_TRIM_THRESHOLD_"}
        with dask.config.set({"distributed.nanny.pre-spawn-environ": environ}), \
                distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                         dashboard_address=None) as cluster:
            addr = cluster.scheduler_address
            run_blocks(blocks[:4], scheduler=addr)  # warm: each worker compiles
            watcher = distributed.Client(addr)  # to read the workers' task stream
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                run_blocks(blocks)
                t_1 = time.perf_counter() - t0
                with distributed.get_task_stream(client=watcher) as stream:
                    t0 = time.perf_counter()
                    found = run_blocks(blocks, scheduler=addr)
                    t_2 = time.perf_counter() - t0
                assert [r.meeting for r in found] == [r.meeting for r in compiled]
                busy: dict[str, float] = {}
                for task in stream.data:
                    for s in task["startstops"]:
                        if s["action"] == "compute":
                            busy[task["worker"]] = busy.get(task["worker"], 0.0) + \
                                s["stop"] - s["start"]
                rows.setdefault("configurations/s, 2-worker local cluster (millions)",
                                []).append(total / t_2 / 1e6)
                rows.setdefault("speed: 2-worker local cluster / one process", []).append(
                    t_1 / t_2)
                # where the time goes: the workers' compute against the same blocks on one
                # process (over 1: the two workers slow each other), and the wall time the
                # busiest worker was not computing (scheduling, transfers, start-up)
                rows.setdefault("cluster: workers' compute (sum) / one process", []).append(
                    sum(busy.values()) / t_1)
                rows.setdefault("cluster: wall beyond the busiest worker's compute (s)",
                                []).append(t_2 - max(busy.values(), default=0.0))
            watcher.close()
    print(header(f"{total:,} configurations"))
    targets = {"configurations/s, one process (millions)": ">= 1",
               "time: compiled plan blocks / hand-written numpy": "<= 1.3x",
               "speed: 2-worker local cluster / one process": ">= 1.6x"}
    for label, values in rows.items():
        print(line(label, values, "" if "millions" in label or "(s)" in label else "x",
                   targets.get(label, "")))
    rate = float(np.median(rows["configurations/s, one process (millions)"])) * 1e6
    per_block = args.block / rate
    print(f"\n10^9 configurations, on paper: {1e9 / rate:,.0f} core-seconds at this rate "
          f"({per_block:.2f} s per block of {args.block:,}); on a cluster of 64 worker cores "
          f"about {1e9 / rate / 64:,.1f} s, plus about 1 ms of scheduling per block "
          f"({1e9 / args.block:,.0f} blocks) and the reductions coming back (a best row, a "
          f"front of at most 512 rows and a closest row per block)")


if __name__ == "__main__":
    main()

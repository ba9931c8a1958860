"""Scale: the compiled path over 10^7 points in chunks, with dask, on this machine.

    pip install 'dask[array]'    # the 'dask' extra of symroof
    python benchmarks/bench_scale.py [--points 10000000] [--chunk 1000000] [--repeat 3]

A sweep of 10^9 points does not fit in one memory (8 GB per float64 array), and there
is no reason to write a scheduler for it: dask arrays split the grid into chunks and
run the same compiled function on each (``symroof.compiled.blocks``), on the threads
of one machine or, unchanged, on the workers of a ``dask.distributed`` cluster::

    from dask.distributed import Client
    client = Client("scheduler-address:8786")      # the cluster; nothing else changes
    B = da.arange(1, 10**5 + 1, chunks=10**3)[:, None]
    S = da.arange(1, 10**4 + 1, chunks=10**4)[None, :] * 16
    t = compiled.blocks(time_s, {B: B, S: S})      # 10^9 points, 100 chunks of 10^7
    (t < 0.05).mean().compute()                    # a reduction: nothing of 10^9 comes back

The compiled function travels to the workers with cloudpickle (dask's serializer; the
lambdified source is pickled by value), each worker keeps one chunk and its numpy
temporaries in memory, and the work divides over cores: on N cores at this machine's
per-core rate, 10^9 points take about (time for 10^7 on one core) x 100 / N.

Here: Llama-2-7B decode time on an H100 over 10^7 (batch, context) points, computed
three ways: one numpy call of the whole grid (``sr.sweep``), dask's threads over chunks,
and dask's synchronous scheduler (one core, chunk by chunk); the answers agree, and the
chunked runs hold less memory at once (tracemalloc's peak while reducing the grid).
"""

from __future__ import annotations

import argparse
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import best, describe, header, line  # noqa: E402

import symroof as sr  # noqa: E402
from symroof import compiled  # noqa: E402
from symroof.symbols import B, S, b  # noqa: E402


def traced(fn):
    tracemalloc.start()
    tracemalloc.reset_peak()
    t0 = time.perf_counter()
    value = fn()
    dt = time.perf_counter() - t0
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return value, dt, peak


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--points", type=int, default=10**7)
    ap.add_argument("--chunk", type=int, default=10**6)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    print(describe())
    try:
        import dask
        import dask.array as da
    except ImportError:
        print("dask is not installed (pip install 'dask[array]'): skipped")
        return
    print(f"dask {dask.__version__}")
    wl = sr.workloads.decode(sr.models.get("llama-2-7b"), B, S)
    r = sr.roofline(wl, "h100-sxm", subs={b: b})   # the exact formulas, B and S free
    time_s = r.time_s
    cols = 10_000
    rows = args.points // cols
    Bn = np.arange(1, rows + 1, dtype=float)[:, None]
    Sn = (np.arange(1, cols + 1, dtype=float) * 16)[None, :]
    per_chunk_rows = max(1, args.chunk // cols)
    Bd = da.from_array(Bn, chunks=(per_chunk_rows, 1))
    Sd = da.from_array(Sn, chunks=(1, cols))
    print(f"grid: {rows:,} batches x {cols:,} contexts = {rows * cols:,} points; "
          f"chunks of {per_chunk_rows * cols:,} points")

    def whole() -> float:
        return float((sr.sweep(time_s, {B: Bn, S: Sn}, subs={b: 2}) < 0.05).mean())

    def chunked(scheduler: str) -> float:
        lazy = compiled.blocks(time_s, {B: Bd, S: Sd}, subs={b: 2})
        return float((lazy < 0.05).mean().compute(scheduler=scheduler))

    rows_out: dict[str, list[float]] = {}
    answers = {round(f(), 12) for f in (whole, lambda: chunked("threads"))}  # and warm
    for _ in range(args.repeat):
        t_np = best(whole, 1, 2)
        t_th = best(lambda: chunked("threads"), 1, 2)
        t_sy = best(lambda: chunked("synchronous"), 1, 2)
        a, _, m_np = traced(whole)
        c, _, m_th = traced(lambda: chunked("threads"))
        s, _, m_sy = traced(lambda: chunked("synchronous"))
        answers |= {round(a, 12), round(c, 12), round(s, 12)}
        rows_out.setdefault("time: dask threads / one numpy call", []).append(t_th / t_np)
        rows_out.setdefault("time: dask one core / one numpy call", []).append(t_sy / t_np)
        rows_out.setdefault("peak memory: dask threads / one numpy call", []).append(m_th / m_np)
        rows_out.setdefault("peak memory: dask one core / one numpy call", []).append(m_sy / m_np)
        rows_out.setdefault("points per second per core, dask one core (millions)", []).append(
            rows * cols / t_sy / 1e6)
    print(f"share of points under 50 ms per step: {sorted(answers)} (one answer: all agree)")
    print(header(f"{rows * cols:,} points (ratio of the two)"))
    for label, values in rows_out.items():
        print(line(label, values, "" if "millions" in label else "x"))
    rate = np.median(rows_out["points per second per core, dask one core (millions)"]) * 1e6
    print(f"\n10^9 points at this rate: {1e9 / rate:,.0f} core-seconds; on a cluster of 64 "
          f"cores, about {1e9 / rate / 64:,.1f} s plus dask's scheduling (about 1 ms per task, "
          f"100 tasks of 10^7 points)")


if __name__ == "__main__":
    main()

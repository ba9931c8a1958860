"""Per configuration point: symroof's compiled path against llm-analysis 0.2.2.

    python benchmarks/bench_points.py [--repeat 5] [--venv DIR]

The question, asked of both in one run: Llama-2-7B, one decode step on an H100 SXM in
16-bit weights, activations and KV cache: the step's time and tokens per second at 480
(batch, context) points, batch 1..16 by context 128..3840 (all fit in 80 GB, which
llm-analysis checks). llm-analysis answers one configuration per ``inference()`` call
(in-process, its logging silenced, efficiencies 1 so that both are bounds); symroof
derives the step's F and Q once, then evaluates the roofline at every point with one
compiled call (``symroof.compiled.rooflines``). Its exact per-point path
(``roofline(subs=)`` then ``float(time_s)``, what ``symroof eval --set`` does per row) is
measured too. The two models agree to a few percent (llm-analysis adds its embedding and
norm latencies), printed as a check that the question is the same.

llm-analysis pins old transformers, so it is installed by this script into its own
virtual environment (``--venv``, default ~/.cache/symroof-bench/llm-analysis-0.2.2); where
that cannot be done (no network, no venv module) its ratios are skipped with the reason.
Symroof's side is measured at 480 points and beyond (4,800; 48,000; 480,000), against
llm-analysis's time per point (it evaluates one point per call, so its per-point time
does not depend on how many are asked for).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import venv
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import best, describe, header, line  # noqa: E402

import symroof as sr  # noqa: E402
from symroof import compiled  # noqa: E402
from symroof.symbols import B, S  # noqa: E402

BATCH = np.arange(1, 17)
CONTEXT = np.arange(128, 3841, 128)
HERE = Path(__file__).resolve().parent

#: llm-analysis's side, run in its own environment: reads a repetition count per line on
#: stdin, answers with the seconds per point of each repetition as JSON.
CHILD = r"""
import json, logging, sys, time
from llm_analysis.analysis import LLMAnalysis
from llm_analysis.config import (ParallelismConfig, get_dtype_config_by_name,
                                 get_gpu_config_by_name, get_model_config_by_name)
from llm_analysis.logger import logger
logger.setLevel(logging.ERROR)
a = LLMAnalysis(get_model_config_by_name("NousResearch_Llama-2-7b-hf"),
                get_gpu_config_by_name("h100-sxm-80gb"), get_dtype_config_by_name("w16a16e16"),
                ParallelismConfig(), flops_efficiency=1.0, hbm_memory_efficiency=1.0)
points = [(b, s) for b in range(1, 17) for s in range(128, 3841, 128)]
def once():
    return [a.inference(batch_size_per_gpu=b, seq_len=s, num_tokens_to_generate=1)
            for b, s in points]
found = once()
print(json.dumps({"latency": [d["decode_latency"] for d in found],
                  "kv_latency": [d["kv_cache_latency"] for d in found]}), flush=True)
for request in sys.stdin:
    t0 = time.perf_counter(); once(); dt = time.perf_counter() - t0
    print(json.dumps(dt / len(points)), flush=True)
"""


def llm_analysis_python(folder: Path) -> tuple[str | None, str]:
    """The interpreter of a venv with llm-analysis 0.2.2 (made here if needed), or None
    and why not."""
    python = folder / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    probe = [str(python), "-c", "import llm_analysis.analysis"]
    if python.exists() and subprocess.run(probe, capture_output=True).returncode == 0:
        return str(python), "found"
    try:
        venv.EnvBuilder(with_pip=True, clear=True).create(folder)
        done = subprocess.run([str(python), "-m", "pip", "install", "-q",
                               "llm-analysis==0.2.2"], capture_output=True, text=True,
                              timeout=900)
    except (OSError, subprocess.SubprocessError) as err:
        return None, f"cannot make its virtual environment: {err}"
    if done.returncode != 0:
        return None, f"pip could not install llm-analysis==0.2.2: {done.stderr.strip()[-300:]}"
    return str(python), "installed"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--venv", type=Path,
                    default=Path.home() / ".cache" / "symroof-bench" / "llm-analysis-0.2.2")
    args = ap.parse_args()
    print(describe())

    wl = sr.workloads.decode(sr.models.get("llama-2-7b"), B, S)
    grid = {B: BATCH.astype(float)[:, None], S: CONTEXT.astype(float)[None, :]}

    def symroof_points(scale: int = 1) -> tuple[np.ndarray, ...]:
        g = grid if scale == 1 else {B: np.arange(1, 16 * scale + 1, dtype=float)[:, None],
                                     S: grid[S]}
        return compiled.rooflines(wl, "h100-sxm", g).figures("time_s", "tokens_per_s")

    def exact_points() -> list[float]:
        return [float(sr.roofline(wl, "h100-sxm", subs={B: int(x), S: int(y)}).time_s)
                for x in BATCH for y in CONTEXT]

    python, how = llm_analysis_python(args.venv)
    child = None
    if python is None:
        print(f"llm-analysis: skipped ({how})")
    else:
        child = subprocess.Popen([python, "-c", CHILD], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        assert child.stdout is not None and child.stdin is not None
        answers = json.loads(child.stdout.readline())
        (time_s,) = symroof_points()[:1]
        theirs = np.array(answers["latency"]).reshape(time_s.shape)
        kv = sr.sweep(wl.quantities["Q_kv_cache"] / sr.hardware.get("h100-sxm").bandwidth(),
                      {B: grid[B], S: grid[S]}, subs={"b": 2})
        twice = np.array(answers["kv_latency"]).reshape(time_s.shape) / kv
        print(f"llm-analysis {how} in {args.venv}. The same question, answered: at batch 1, "
              f"context 128 (weights dominate) its decode latency is symroof's time_s within "
              f"{abs(theirs[0, 0] / time_s[0, 0] - 1):.2%}; it reads the KV cache "
              f"{np.median(twice):.2f}x per step (symroof: once), so where the cache "
              f"dominates they differ by up to {np.max(np.abs(theirs / time_s - 1)):.0%}")

    scales = (1, 10, 100, 1000)
    rows: dict[str, list[float]] = {}
    for _ in range(args.repeat):
        theirs_pp = None
        if child is not None:
            child.stdin.write("1\n")
            child.stdin.flush()
            theirs_pp = json.loads(child.stdout.readline())
        exact_pp = best(exact_points, 1, 1) / 480
        for k in scales:
            ours_pp = best(lambda: symroof_points(k), 5 if k < 100 else 1, 3) / (480 * k)
            if theirs_pp is not None:
                rows.setdefault(f"llm-analysis / symroof compiled, {480 * k:,} points",
                                []).append(theirs_pp / ours_pp)
            rows.setdefault(f"symroof exact / symroof compiled, {480 * k:,} points",
                            []).append(exact_pp / ours_pp)
        if theirs_pp is not None:
            rows.setdefault("llm-analysis / symroof exact (roofline(subs=)), per point",
                            []).append(theirs_pp / exact_pp)
    if child is not None:
        child.stdin.close()
        child.wait()
    print(header("per configuration point (time per point, ratio of the two)"))
    for label, values in rows.items():
        target = ">= 1,000x" if label.startswith("llm-analysis / symroof compiled") else ""
        print(line(label, values, target=target))
    print(f"\nsymroof compiled cache: {compiled.cache_info()}")


if __name__ == "__main__":
    main()

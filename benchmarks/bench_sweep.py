"""Sweeps: ``sr.sweep`` against the same formula written by hand in numpy.

    python benchmarks/bench_sweep.py [--repeat 7]

The formula is Llama-2-7B's decode intensity on a (batch, context) grid at b = 2, as
symroof prints it, ``128*B*(S + 25204)/(b*(64*B*S + B + 1613121))`` (the script prints it
from the derivation and checks the hand-typed copy against it). Time: 480 points (16 x 30) and 10^6
points (1000 x 1000), each repetition timing both side by side (targets: within 3x at
480 points, where a call's fixed cost shows, and within 1.5x at 10^6). Memory: the peak
that tracemalloc sees during one call (numpy reports its buffers to it), ours against
the hand-written expression's own temporaries (target: no more).
"""

from __future__ import annotations

import argparse
import sys
import tracemalloc
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import best, describe, header, line  # noqa: E402

import symroof as sr  # noqa: E402
from symroof import compiled  # noqa: E402
from symroof.symbols import B, S, b  # noqa: E402


def by_hand(Bv: np.ndarray, Sv: np.ndarray, b: float = 2.0) -> np.ndarray:
    """The intensity as a person types it from the printed formula."""
    return 128 * Bv * (Sv + 25204) / (b * (64 * Bv * Sv + Bv + 1613121))


def peak(fn) -> int:
    tracemalloc.start()
    tracemalloc.reset_peak()
    fn()
    size = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return size


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    print(describe())
    wl = sr.workloads.decode(sr.models.get("llama-2-7b"), B, S)
    intensity = wl.intensity
    print(f"I = {sr.text(intensity)}")
    small = (np.arange(1, 17, dtype=float)[:, None], np.arange(128, 3841, 128, dtype=float)[None, :])
    large = (np.arange(1, 1001, dtype=float)[:, None], np.arange(1, 1001, dtype=float)[None, :] * 8)
    for Bv, Sv in (small, large):  # the same numbers, both ways
        ours = sr.sweep(intensity, {B: Bv, S: Sv}, subs={b: 2})
        assert np.allclose(ours, by_hand(Bv, Sv), rtol=1e-12, atol=0)

    rows: dict[str, list[float]] = {}
    for _ in range(args.repeat):
        for name, (Bv, Sv), number in (("480 points", small, 2000), ("10^6 points", large, 3)):
            mine = best(lambda: sr.sweep(intensity, {B: Bv, S: Sv}, subs={b: 2}), number)
            hand = best(lambda: by_hand(Bv, Sv), number)
            rows.setdefault(f"sr.sweep / hand-written numpy, {name}", []).append(mine / hand)
        Bv, Sv = large
        rows.setdefault("peak memory, sr.sweep / hand-written numpy, 10^6 points", []).append(
            peak(lambda: sr.sweep(intensity, {B: Bv, S: Sv}, subs={b: 2}))
            / peak(lambda: by_hand(Bv, Sv)))
        # the whole grid as one function call: what a sweep costs without the cache
        compiled.cache_clear()
        cold = best(lambda: (compiled.cache_clear(), sr.sweep(intensity, {B: small[0], S: small[1]},
                                                               subs={b: 2})), 20)
        warm = best(lambda: sr.sweep(intensity, {B: small[0], S: small[1]}, subs={b: 2}), 2000)
        rows.setdefault("sweep without the cache / with it, 480 points", []).append(cold / warm)
    print(header("sweeps (time per call, ratio of the two; memory: peak bytes during a call)"))
    targets = {"peak memory": "<= 1x", "480 points": "<= 3x", "10^6 points": "<= 1.5x"}
    for label, values in rows.items():
        target = next((t for k, t in targets.items() if k in label and "cache" not in label),
                      "")
        print(line(label, values, target=target))


if __name__ == "__main__":
    main()

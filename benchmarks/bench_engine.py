"""Ratio benchmarks for the engine (not tests: these machines are noisy, so only ratios
within one run are reported, never absolute times).

    python benchmarks/bench_engine.py

1. Multiplicity: deriving an 80-layer model costs about the same as a 2-layer one.
2. Symbolic vs numeric: a fully symbolic decode derivation against a preset.
3. Sweeps: lambdify over a grid against substituting point by point.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

import numpy as np

import symroof as sr
from symroof.symbols import B, D, H, L, S, b


def best_of(fn: Callable[[], object], repeat: int = 5) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def decode_intensity(layers: object) -> object:
    m = sr.models.transformer(layers=layers, d_model=4096, heads=32)
    return sr.workloads.decode(m, B, S).intensity


def main() -> None:
    two = best_of(lambda: decode_intensity(2))
    eighty = best_of(lambda: decode_intensity(80))
    symbolic = best_of(lambda: sr.workloads.decode(
        sr.models.transformer(layers=L, d_model=D, heads=H), B, S).intensity)
    intensity = sr.workloads.decode(sr.models.get("llama-3-8b"), B, S).intensity
    bs, ss = np.arange(1, 101), np.arange(128, 128 * 101, 128)
    grid = best_of(lambda: sr.sweep(intensity, {B: bs[:, None], S: ss[None, :]}, subs={b: 2}), 3)
    points = [(int(x), int(y)) for x in bs[:10] for y in ss[:10]]
    point = best_of(lambda: [sr.evaluate(intensity, {B: x, S: y, b: 2}) for x, y in points], 3)
    per_point_subs = point / len(points)
    per_point_sweep = grid / (len(bs) * len(ss))
    print("ratio                                          value")
    print(f"decode derivation, 80 layers / 2 layers        {eighty / two:8.2f}   (1 = multiplicity)")
    print(f"decode derivation, symbolic L,D,H / numeric    {symbolic / two:8.2f}")
    print(f"per point: exact evaluate / lambdify sweep     {per_point_subs / per_point_sweep:8.0f}x")


if __name__ == "__main__":
    main()

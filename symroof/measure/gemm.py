"""Predicted against measured GEMMs: the roofline bound beside the time each shape takes.

Exercise A of the seed: sweep M from 1 to 4096 with N = K = 4096, plot achieved FLOP/s
against M and mark where it crosses 50% of the peak. ``measure_gemm`` returns every
number such a chart needs (per row: intensity, achieved and bound FLOP/s); drawing it is
the presentation layer's job.
"""

from __future__ import annotations

# imports inside functions: numpy, torch, transformers and threadpoolctl load only when a
# measurement runs (torch and transformers are optional; numpy costs every command start-up)

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from symroof.errors import SymroofError
from symroof.evaluate import roofline
from symroof.hardware import HardwareSpec, get, load
from symroof.budget import check_rows
from symroof.measure.kernels import (NUMPY_DTYPES, cache_flusher, check_gemm, check_gemm_shape,
                                     gemm_kernel, resolve_device)
from symroof.measure.limits import check_reps, check_seconds
from symroof.measure.chipfile import machine_spec
from symroof.measure.machine import Machine
from symroof.measure.probe import Load, LoadMeter, blas_info, host_info
from symroof.measure.timing import Timing, time_call
from symroof.workloads import gemm

__all__ = ["GemmRow", "Crossing", "GemmSweep", "measure_gemm", "first_crossing", "m_sweep",
           "target_spec"]


@dataclass(frozen=True)
class GemmRow:
    """One shape: symroof's bound beside the measured time (the best repetition)."""

    m: int
    n: int
    k: int
    flops: int                   # F = 2MNK, symroof's count
    bytes: float                 # Q: A, B read once and C written once (compulsory traffic)
    intensity: float             # F / Q, FLOP per byte
    bound_s: float               # max(F / peak, Q / bandwidth)
    bound_flop_per_s: float      # F / bound_s = min(peak, bandwidth * I)
    bound: str                   # "memory", "compute" or "balanced"
    timing: Timing
    measured_s: float            # timing.min_s
    achieved_flop_per_s: float   # F / measured_s
    ratio: float                 # measured_s / bound_s: >= 1 when the bound holds

    def as_dict(self) -> dict[str, Any]:
        """Plain numbers for JSON."""
        return {"m": self.m, "n": self.n, "k": self.k, "flops": self.flops,
                "bytes": self.bytes, "intensity": self.intensity, "bound_s": self.bound_s,
                "bound_flop_per_s": self.bound_flop_per_s, "bound": self.bound,
                "measured_s": self.measured_s, "achieved_flop_per_s": self.achieved_flop_per_s,
                "ratio": self.ratio, "timing": self.timing.as_dict()}


@dataclass(frozen=True)
class Crossing:
    """Where a rate first reaches ``fraction`` of the peak along a sweep of M."""

    fraction: float
    threshold: float             # fraction * peak, FLOP/s
    index: int                   # the first row at or above the threshold
    m: int                       # its M
    m_interpolated: float        # log-log interpolation between that row and the one before

    def as_dict(self) -> dict[str, Any]:
        """Plain numbers for JSON."""
        return {"fraction": self.fraction, "threshold_flop_per_s": self.threshold,
                "index": self.index, "m": self.m, "m_interpolated": self.m_interpolated}


@dataclass(frozen=True)
class GemmSweep:
    """A sweep of GEMM shapes on one chip spec, with where achieved and bound cross."""

    hardware: str                # the spec the bound used (a measured one or a named chip)
    precision: str
    library: str
    device: str
    method: str
    threads: int | None
    peak: float                  # FLOP/s the crossing is measured against
    peak_source: str
    bandwidth: float             # bytes/s of the spec's main memory
    ridge: float                 # FLOP per byte
    cold: bool                   # caches flushed before every repetition
    rows: tuple[GemmRow, ...]
    crossing: Crossing | None    # achieved FLOP/s first >= fraction * peak
    bound_crossing: Crossing | None   # the bound's own crossing, for comparison
    load: Load | None            # other processes' CPU use while measuring
    warnings: tuple[str, ...]

    def as_dict(self) -> dict[str, Any]:
        """Plain data for JSON."""
        return {"hardware": self.hardware, "precision": self.precision,
                "library": self.library, "device": self.device, "method": self.method,
                "threads": self.threads, "peak_flop_per_s": self.peak,
                "peak_source": self.peak_source, "bandwidth_bytes_per_s": self.bandwidth,
                "ridge": self.ridge, "cold": self.cold,
                "rows": [r.as_dict() for r in self.rows],
                "crossing": None if self.crossing is None else self.crossing.as_dict(),
                "bound_crossing": (None if self.bound_crossing is None
                                   else self.bound_crossing.as_dict()),
                "load": None if self.load is None else self.load.as_dict(),
                "warnings": list(self.warnings)}


def first_crossing(ms: Sequence[int], rates: Sequence[float], peak: float,
                   fraction: float = 0.5) -> Crossing | None:
    """The first M whose rate reaches ``fraction * peak`` (None if none does).

    >>> c = first_crossing([1, 2, 4, 8], [10.0, 20.0, 40.0, 80.0], peak=60.0)
    >>> c.m, c.index, round(c.m_interpolated, 9)
    (4, 2, 3.0)
    """
    if len(ms) != len(rates):
        raise SymroofError(f"first_crossing: {len(ms)} values of M but {len(rates)} rates")
    if not (peak > 0 and 0 < fraction <= 1):
        raise SymroofError(f"first_crossing: expected peak > 0 and 0 < fraction <= 1, "
                           f"got {peak!r}, {fraction!r}")
    threshold = fraction * peak
    for i, (m, rate) in enumerate(zip(ms, rates)):
        if rate < threshold:
            continue
        if i == 0 or rates[i - 1] <= 0 or ms[i - 1] <= 0 or rate == rates[i - 1]:
            return Crossing(fraction, threshold, i, m, float(m))
        # the rate is about a power of M between two sweep points: interpolate in log-log
        t = math.log(threshold / rates[i - 1]) / math.log(rate / rates[i - 1])
        at = math.exp(math.log(ms[i - 1]) + t * (math.log(m) - math.log(ms[i - 1])))
        return Crossing(fraction, threshold, i, m, at)
    return None


def m_sweep(n: int = 4096, k: int | None = None,
            m_max: int | None = None) -> tuple[tuple[int, int, int], ...]:
    """Shapes (M, N, K) for M = 1, 2, 4, ... up to ``m_max`` (default N), N = n, K = k or n.

    >>> m_sweep(8)
    ((1, 8, 8), (2, 8, 8), (4, 8, 8), (8, 8, 8))
    """
    top = n if m_max is None else m_max
    if top < 1:
        raise SymroofError(f"m_sweep: m_max must be at least 1, got {top}")
    return tuple((1 << i, n, n if k is None else k) for i in range(top.bit_length())
                 if 1 << i <= top)


def target_spec(hw: Machine | HardwareSpec | str) -> HardwareSpec:
    """The spec a bound uses: a measured Machine's own, a spec, a ``.toml`` file or a name."""
    if isinstance(hw, Machine):

        return machine_spec(hw)
    if isinstance(hw, HardwareSpec):
        return hw
    if isinstance(hw, str):
        return load(hw) if hw.endswith(".toml") else get(hw)
    raise SymroofError(f"measure: hardware: expected a measured Machine, a HardwareSpec, a chip "
                       f"name or a .toml path, got {type(hw).__name__} {hw!r}")


def measure_gemm(shapes: Iterable[tuple[int, int, int]], hw: Machine | HardwareSpec | str, *,
                 precision: str = "fp32", library: str | None = None, device: str = "cpu",
                 reps: int = 5, warmup: int = 1, warmup_s: float = 0.25,
                 min_rep_s: float = 0.02, peak: float | None = None, fraction: float = 0.5,
                 flush_cache: bool = False) -> GemmSweep:
    """Time ``C = A @ B`` for each (M, N, K) and put it beside symroof's roofline bound.

    ``hw`` is a measured Machine (its peaks unrounded), a HardwareSpec or a shipped chip's
    name. The crossing is against ``peak`` when given, else the machine's measured peak,
    else the spec's. ``flush_cache`` evicts the operands before every repetition (one
    call each); without it small operands stay cached between calls, as in a loop.
    """
    meter = LoadMeter()
    dev = resolve_device(device)
    lib = library or ("numpy" if dev == "cpu" and precision in NUMPY_DTYPES else "torch")
    check_gemm(lib, precision, dev)          # before any spec lookup or timing
    shapes = list(shapes)
    check_rows([("shapes", len(shapes))], "measure gemm")
    check_reps(reps, warmup, "measure gemm")
    check_seconds(warmup_s, "warmup_s", "measure gemm")
    check_seconds(min_rep_s, "min_rep_s", "measure gemm")
    for shape in shapes:                     # every shape fits before the first is timed
        if not (isinstance(shape, tuple) and len(shape) == 3):
            raise SymroofError(f"measure gemm: expected (M, N, K) shapes, got {shape!r}")
        check_gemm_shape(*shape, precision)
    spec = target_spec(hw)
    roof_peak, source = _peak(hw, spec, precision, peak)
    flush = _flusher(dev) if flush_cache else None
    rows: list[GemmRow] = []
    method = ""
    for m, n, k in shapes:
        kernel = gemm_kernel(lib, precision, m, n, k, dev)
        method = kernel.method
        timing = time_call(kernel.run, warmup=warmup, warmup_s=warmup_s, reps=reps,
                           sync=kernel.sync, setup=flush, min_rep_s=min_rep_s)
        rows.append(_row(m, n, k, spec, precision, timing))
        del kernel                       # free the operands before the next shape
    if not rows:
        raise SymroofError("measure gemm: no shapes given")
    threads = _threads(lib, dev)
    ms = [r.m for r in rows]
    crossing = first_crossing(ms, [r.achieved_flop_per_s for r in rows], roof_peak, fraction)
    bound_x = first_crossing(ms, [r.bound_flop_per_s for r in rows], roof_peak, fraction)
    load = meter.stop()
    warnings = _warnings(rows, roof_peak, hw, precision)
    warnings += (load.warning,) if load is not None and load.warning else ()
    return GemmSweep(spec.name, precision, lib, dev, method, threads, roof_peak, source,
                     float(spec.bandwidth()), float(spec.ridge(precision)), flush_cache,
                     tuple(rows), crossing, bound_x, load, warnings)


def _row(m: int, n: int, k: int, spec: HardwareSpec, precision: str, timing: Timing) -> GemmRow:
    r = roofline(gemm(m, n, k), spec, precision=precision)
    flops, bound_s = int(r.flops), float(r.time_s)
    return GemmRow(m, n, k, flops, float(r.bytes), float(r.intensity), bound_s,
                   flops / bound_s, r.bound or "unknown", timing, timing.min_s,
                   flops / timing.min_s, timing.min_s / bound_s)


def _peak(hw: object, spec: HardwareSpec, precision: str, given: float | None) -> tuple[float, str]:
    if given is not None:
        if not (given > 0 and math.isfinite(given)):
            raise SymroofError(f"measure gemm: peak must be a positive FLOP/s, got {given!r}")
        return float(given), "given by the caller"
    if isinstance(hw, Machine):
        p = hw.peak(precision)
        return p.flop_per_s, (f"measured: {p.method} n={p.n}, best of {len(p.timing.times_s)} "
                              f"(spread {p.timing.spread:.3f})")
    unit = "matrix" if precision in spec.precisions("matrix") else "vector"
    return (float(spec.peak(precision)),
            f"{spec.name}'s {precision} {unit} peak: {spec.source(f'peak.{unit}.{precision}')}")


def _flusher(device: str) -> Any:
    if device == "cuda":     # a GPU's L2 is flushed by a large device write
        import torch

        junk = torch.empty(1 << 28, dtype=torch.int8, device="cuda")
        return lambda: junk.zero_()

    # 8x the caches: AMD's L3 is a victim cache and keeps part of the operands after a
    # flush of only twice its size (measured: a 16 MiB GEMV ran at 58 GB/s after writing
    # 68 MiB, 38 GB/s after 256 MiB)
    return cache_flusher(max(8 * host_info().cache_bytes, 1 << 28))


def _threads(library: str, device: str) -> int | None:
    if device == "cuda":
        return None
    if library == "torch":
        import torch

        return int(torch.get_num_threads())

    return blas_info().threads


def _warnings(rows: Sequence[GemmRow], peak: float, hw: object, precision: str) -> tuple[str, ...]:
    out = [f"M={r.m}: {r.timing.warning}" for r in rows if r.timing.warning]
    spread = hw.peak(precision).timing.spread if isinstance(hw, Machine) else 1.0
    over = [r.m for r in rows if r.achieved_flop_per_s > peak * spread]
    if over:
        out.append(f"M={', '.join(map(str, over))}: achieved FLOP/s exceeds the peak by more "
                   f"than its spread ({spread:.3f}); the peak was under-measured")
    beat = [r for r in rows if r.ratio < 1 and r.bound == "memory"]
    if beat:
        worst = min(beat, key=lambda r: r.ratio)
        out.append(f"M={', '.join(str(r.m) for r in beat)}: measured faster than the memory "
                   f"bound (as low as {worst.ratio:.2f}x at M={worst.m}): the bound's memory roof "
                   f"is main memory, but operands of {worst.bytes:.3g} bytes can stay in the "
                   f"caches between repetitions (flush_cache=True measures cold operands)")
    return tuple(out)

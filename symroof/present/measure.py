"""Measurements beside their bounds, for people: tables and the roofline with measured
points (issue: predicted against measured).

>>> ratio_text(1.25), ratio_text(0.5)
('1.25', '0.50 (faster than the bound: a cache held the data?)')
"""

from __future__ import annotations

from collections.abc import Iterator

from symroof.measure import GemmSweep, Machine, ModelRun
from symroof.present.charts import RooflineChart
from symroof.present.chart_layout import quantity

__all__ = ["machine_lines", "gemm_lines", "model_lines", "gemm_chart", "ratio_text"]


def ratio_text(ratio: float) -> str:
    """measured / bound: at least 1 when the bound holds; below 1 is worth a word."""
    if ratio < 0.95:
        return f"{ratio:.2f} (faster than the bound: a cache held the data?)"
    return f"{ratio:.2f}"


def _short(source: str) -> str:
    """The head of a figure's source (the chip file holds the whole of it)."""
    return source.split(":", 1)[0]


def _ms(seconds: float) -> str:
    """A time with 4 significant figures in s, ms, us or ns."""
    for factor, unit in ((1, "s"), (1e3, "ms"), (1e6, "us"), (1e9, "ns")):
        if seconds * factor >= 1 or unit == "ns":
            return f"{seconds * factor:.4g} {unit}"
    raise AssertionError("unreachable")


def machine_lines(m: Machine) -> Iterator[str]:
    """The empirical roofline: peaks, bandwidths, the BLAS, warnings."""
    yield f"{m.host.hostname}: {m.device_name} ({m.device})"
    if m.blas is not None:
        yield (f"  BLAS: {m.blas.library}, kernel {m.blas.kernel or '?'}, "
               f"{m.blas.threads or '?'} thread(s) (found via {m.blas.via})")
        if m.blas.warning:
            yield f"  warning: {m.blas.warning}"
    for p in m.peaks:
        yield (f"  peak {p.precision:5s} {p.library:6s} n={p.n}: {quantity(p.flop_per_s, 'FLOP/s')}"
               f" (spread {p.timing.spread:.2f})")
    for b in m.bandwidths:
        yield (f"  {b.kernel:5s} {b.library:6s}: {quantity(b.bytes_per_s, 'B/s')} over "
               f"{b.elements:,} values (spread {b.timing.spread:.2f})")
    if m.bandwidths and m.peaks:
        bw = m.bandwidth().bytes_per_s
        yield "  ridges: " + ", ".join(f"{p} {m.peak(p).flop_per_s / bw:.3g} FLOP/B"
                                       for p in m.precisions())
    for w in m.warnings:
        yield f"  warning: {w}"


def gemm_lines(s: GemmSweep) -> Iterator[str]:
    """Exercise A's table: bound against measured, per shape, and the 50% crossing."""
    yield (f"GEMM on {s.device} ({s.library}, {s.precision}, {s.threads or '?'} threads) against "
           f"{s.hardware}: peak {quantity(s.peak, 'FLOP/s')} ({_short(s.peak_source)}), "
           f"bandwidth {quantity(s.bandwidth, 'B/s')}, ridge {s.ridge:.3g} FLOP/B"
           f"{', caches flushed' if s.cold else ''}")
    yield "       M      N      K   I (FLOP/B)  bound                 measured     ratio  achieved"
    for r in s.rows:
        yield (f"  {r.m:6d} {r.n:6d} {r.k:6d} {r.intensity:11.3g}  {_ms(r.bound_s):>12s} "
               f"{r.bound:8s} {_ms(r.measured_s):>12s}  {ratio_text(r.ratio):6s} "
               f"{quantity(r.achieved_flop_per_s, 'FLOP/s')}")
    for name, c in (("achieved", s.crossing), ("bound", s.bound_crossing)):
        if c is not None:
            yield (f"  {name} first reaches {c.fraction:.0%} of peak at M = {c.m} "
                   f"(interpolated {c.m_interpolated:.3g})")
    for w in s.warnings:
        yield f"  warning: {w}"


def model_lines(run: ModelRun) -> Iterator[str]:
    """Exercise B.4's table: predicted against measured, with the ratio column."""
    yield (f"{run.model} ({run.params:,} parameters; symroof counts {run.symroof_params:,}) on "
           f"{run.device_name} ({run.dtype}, {run.threads or '?'} threads, {run.attention}) "
           f"against {run.hardware}")
    yield "  phase    B   past   seq   bound          measured      ratio  tokens/s (bound / measured)"
    for r in run.rows:
        yield (f"  {r.phase:7s} {r.batch:3d} {r.past:6d} {r.seq:5d} {_ms(r.bound_s):>12s} "
               f"{_ms(r.measured_s):>12s}  {ratio_text(r.ratio):6s} "
               f"{r.bound_tokens_per_s:,.0f} / {r.tokens_per_s:,.0f}")
    for n in run.notes:
        yield f"  note: {n}"
    for w in run.warnings:
        yield f"  warning: {w}"


def gemm_chart(s: GemmSweep) -> RooflineChart:
    """The roofline of the sweep's chip with the bound and the measured point per shape."""
    points: list[tuple[str, float, float, str]] = []
    for r in s.rows:
        points.append((f"M={r.m}", r.intensity, r.achieved_flop_per_s, "measured"))
    return RooflineChart(f"GEMM, N={s.rows[0].n} K={s.rows[0].k}: measured on {s.device} "
                         f"against {s.hardware}", [("memory", s.bandwidth)],
                         [(f"{s.precision} peak", s.peak)], points)

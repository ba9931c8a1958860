"""One roof per memory level: traffic at each level of a chip's hierarchy, and which binds.

Every byte a kernel moves passes through the on-chip levels; main memory (HBM, DRAM)
sees only what does not stay resident in the level inside it. The filter is the
working set: if every distinct tensor fits in the next level's capacity, main memory
moves each once (compulsory traffic of the distinct tensors), however often the
kernel re-reads them. Each level with a published bandwidth is a roof ``bw * F/Q``; the
binding roof is the lowest. If the working set fits on chip, the DRAM roof is the wrong
bound, and this says which level binds instead.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import sympy as sp

from symroof import hardware
from symroof.analysis import Analysis
from symroof.errors import SymroofError
from symroof.evaluate import evaluate, workload_values
from symroof.hardware import HardwareSpec
from symroof.ir import Kind
from symroof.precision import Precision

__all__ = ["LevelRoof", "LevelRoofline", "working_set", "level_roofline"]


def working_set(workload: Analysis) -> sp.Expr:
    """Bytes of the distinct tensors a workload touches: inputs at their multiplicity
    (L layers of weights are L tensors), intermediates once (their buffers are reused)."""
    g = workload.graph
    total = sp.Integer(0)
    counted = workload.convention.traffic
    for t in g.tensors:
        if t.kind not in counted:
            continue
        edges = [g.crossings(t, op) for op in g.consumers(t)]
        producer = g.producer(t)
        if producer is not None:
            edges.append(g.crossings(producer, t))
        if all(e == 0 for e in edges):
            continue  # never leaves the chip
        total += (g.count(t) if t in g.inputs and t.kind != Kind.ACTIVATION else 1) * t.nbytes
    return total


@dataclass(frozen=True)
class LevelRoof:
    """The roof of one memory level."""

    level: str
    bytes: sp.Expr
    intensity: sp.Expr
    bandwidth: sp.Expr
    attainable: sp.Expr          # min(peak, bandwidth * intensity)
    time_s: sp.Expr              # bytes / bandwidth


@dataclass(frozen=True)
class LevelRoofline:
    """Per-level roofs of a workload on a chip; ``binding`` names the lowest."""

    flops: sp.Expr
    peak: sp.Expr
    roofs: tuple[LevelRoof, ...]
    resident_in: str | None      # the on-chip level that holds the working set, if any

    @property
    def binding(self) -> str:
        """'compute' or the name of the memory level whose roof is lowest."""
        worst = min(self.roofs, key=lambda r: r.attainable)
        return "compute" if worst.attainable >= self.peak else worst.level

    @property
    def time_s(self) -> sp.Expr:
        return sp.Max(self.flops / self.peak, *(r.time_s for r in self.roofs))


def level_roofline(workload: Analysis, hw: HardwareSpec | str, *,
                   precision: Precision | str = Precision.BF16,
                   subs: Mapping[object, object] | None = None,
                   unit: str | None = None) -> LevelRoofline:
    """Roofs of every memory level of ``hw`` with a published bandwidth, at numbers."""
    spec = hardware.resolve(hw)
    precision = Precision.parse(precision)  # at the boundary: a name becomes a Precision
    values = workload_values(workload, subs, precision)
    f = evaluate(workload.flops, values)
    q = evaluate(workload.bytes, values)
    ws = evaluate(working_set(workload), values)
    if (f.free_symbols | q.free_symbols | ws.free_symbols):
        raise SymroofError("level_roofline: give values for every symbol "
                           f"({', '.join(sorted(s.name for s in f.free_symbols | q.free_symbols))})")
    peak = spec.peak(precision, unit=unit, ops_per_mac=workload.convention.flop_count.ops_per_mac)
    levels = list(spec.levels)
    main = spec.main_memory
    on_chip = [lv for lv in levels if lv.name != main]
    resident = next((lv.name for lv in sorted(on_chip, key=lambda lv: -(lv.capacity or 0))
                     if lv.capacity is not None and ws <= lv.capacity), None)
    roofs = []
    for lv in levels:
        if lv.bandwidth is None:
            continue
        moved = (min(q, ws) if resident is not None else q) if lv.name == main else q
        inten = f / moved
        roofs.append(LevelRoof(lv.name, moved, inten, lv.bandwidth,
                               sp.Min(peak, lv.bandwidth * inten), moved / lv.bandwidth))
    return LevelRoofline(f, peak, tuple(roofs), resident)

"""What one device holds while it runs a workload, and the link it sends over.

The footprint comes from the workload's graph (a sharded graph is one device's):

- ``weights``: every weight tensor, times its count (layers);
- ``kv_cache``: every KV-cache tensor a step reads (a decode step at ``context`` holds the
  cache of all its sequences), times its count and the micro-batches of a step;
- ``activations``: the largest kernel's activations, its inputs and outputs that cross
  memory, for one occurrence (layers run one after another; a fused kernel's on-chip
  tensors take no memory) -- a lower bound on what an engine reserves;
- ``communication``: one staging buffer of the largest collective's payload.

>>> from symroof.workloads import gemm
>>> from symroof.symbols import M, N, K
>>> parts = memory_parts(gemm(M, N, K))
>>> parts.weights, parts.activations
(K*N*b, (K*M*b + M*N*b,))
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping
from dataclasses import dataclass

import sympy as sp

from symroof.analysis import Analysis
from symroof.budget import substitute
from symroof.errors import SymroofError
from symroof.hardware import HardwareSpec, Link
from symroof.ir import Kind, Op, as_expr
from symroof.passes.shard import Collective

__all__ = ["MemoryParts", "DeviceMemory", "memory_parts", "device_memory", "choose_link",
           "entry_sequences", "fraction"]

_ZERO = sp.Integer(0)


@dataclass(frozen=True)
class MemoryParts:
    """A graph's footprint parts as formulas; ``activations`` and ``communication`` are
    candidates, each one kernel's or collective's, of which the largest counts."""

    weights: sp.Expr
    kv_cache: sp.Expr
    activations: tuple[sp.Expr, ...]
    communication: tuple[sp.Expr, ...]


@dataclass(frozen=True)
class DeviceMemory:
    """Bytes one device holds, by part, against its capacity less a reserved fraction.

    ``reserve`` is the share of the capacity kept back for the runtime, fragmentation
    and what the model does not count (0 by default, as the seeds count; serving engines
    keep about 0.1: vLLM's ``gpu_memory_utilization=0.9``).
    """

    weights: sp.Expr
    kv_cache: sp.Expr
    activations: sp.Expr
    communication: sp.Expr
    capacity: sp.Expr | None
    reserve: sp.Expr = _ZERO

    @property
    def total(self) -> sp.Expr:
        """Weights + KV cache + activations + communication buffers."""
        return self.weights + self.kv_cache + self.activations + self.communication

    @property
    def usable(self) -> sp.Expr | None:
        """capacity x (1 - reserve), or None where the chip publishes no capacity."""
        return None if self.capacity is None else self.capacity * (1 - self.reserve)

    @property
    def free(self) -> sp.Expr | None:
        """usable - total (negative: it does not fit)."""
        return None if self.usable is None else self.usable - self.total

    @property
    def fits(self) -> bool | None:
        """total <= usable; None where that is not decided (no capacity, free symbols)."""
        free = self.free
        if free is None or free.free_symbols:
            return None
        return bool(free >= 0)


_CACHE: weakref.WeakKeyDictionary[Analysis, MemoryParts] = weakref.WeakKeyDictionary()


def memory_parts(workload: Analysis) -> MemoryParts:
    """The footprint parts of ``workload``'s graph (computed once per workload)."""
    if not isinstance(workload, Analysis):
        raise SymroofError(f"memory: expected a workload (Analysis), got "
                           f"{type(workload).__name__}")
    found = _CACHE.get(workload)
    if found is None:
        found = _parts(workload)
        _CACHE[workload] = found
    return found


def _parts(a: Analysis) -> MemoryParts:
    g = a.graph
    weights, kv = [], []
    for t in g.inputs:
        if t.kind == Kind.WEIGHT:
            weights.append(t.nbytes * g.count(t))
        elif t.kind == Kind.KV_CACHE:
            kv.append(t.nbytes * g.count(t))
    acts: dict[sp.Expr, None] = {}
    comm: dict[sp.Expr, None] = {}
    for op in g.ops:
        if isinstance(op, Collective):
            comm[op.x.nbytes] = None
            continue
        live = _live(g, op)
        if live != 0:
            acts[live] = None
    return MemoryParts(sp.Add(*weights), sp.Add(*kv), tuple(acts), tuple(comm))


def _live(g: object, op: Op) -> sp.Expr:
    """Bytes of ``op``'s activations that sit in memory (read or written across it)."""
    parts = [t.nbytes for t in dict.fromkeys(op.inputs)
             if t.kind == Kind.ACTIVATION and g.crossings(t, op) != 0]  # type: ignore[attr-defined]
    parts += [t.nbytes for t in op.outputs
              if t.kind == Kind.ACTIVATION and g.crossings(op, t) != 0]  # type: ignore[attr-defined]
    return sp.Add(*parts)


def choose_link(spec: HardwareSpec, name: str | None = None, *, why: str = "tp > 1") -> Link:
    """The link collectives run over: ``name``, else the fastest per direction."""
    links = dict(spec.interconnects)
    if not links:
        raise SymroofError(f"{why}: {spec.name} lists no interconnect (add an "
                           "[interconnect.<name>] table with its bandwidth to the chip file)")
    if name is not None:
        if name not in links:
            raise SymroofError(f"link {name!r}: {spec.name} has no such interconnect; "
                               f"expected one of {', '.join(links)}")
        return links[name]
    return max(links.values(), key=lambda link: (link.per_direction, link.name))


_SEQUENCES: weakref.WeakKeyDictionary[object, tuple[sp.Expr | None]] = \
    weakref.WeakKeyDictionary()


def entry_sequences(graph: object) -> sp.Expr | None:
    """Sequences of a run: the leading axis of the activations (sequences, tokens, width)
    entering a graph's first repeated block (None for a graph without one; found once per
    graph)."""
    found = _SEQUENCES.get(graph)
    if found is None:
        found = (_entry_sequences(graph),)
        _SEQUENCES[graph] = found
    return found[0]


def _entry_sequences(graph: object) -> sp.Expr | None:
    g = graph
    found = sorted((t for t in g.tensors if not g.block(t)  # type: ignore[attr-defined]
                    and t.kind == Kind.ACTIVATION and len(t.shape) == 3
                    and any(g.block(c) for c in g.consumers(t))),  # type: ignore[attr-defined]
                   key=lambda t: t.name)
    return found[0].shape[0] if found else None


def fraction(value: object, what: str, *, zero: bool) -> sp.Expr:
    """A share in (0, 1] (an efficiency), or in [0, 1) with ``zero`` (a reserve)."""
    x = as_expr(value, what)
    ok = x.is_number and x.is_real and (x >= 0 if zero else x > 0) and (x < 1 if zero else x <= 1)
    if not ok:
        span = "0 <= x < 1" if zero else "0 < x <= 1"
        raise SymroofError(f"{what}: expected a fraction {span}, got {value!r}")
    return x


def device_memory(workload: Analysis, spec: HardwareSpec, values: Mapping[sp.Symbol, sp.Expr],
                  *, level: str | None = None, microbatches: sp.Expr = sp.Integer(1),
                  reserve: sp.Expr = _ZERO, kv_cache: object | None = None) -> DeviceMemory:
    """What one device holds running ``workload`` at ``values``: the caches of all
    ``microbatches``, one micro-batch's activations; ``kv_cache`` (bytes, in the
    workload's symbols) replaces the graph's where it reads none (a prefill writes it)."""
    parts = memory_parts(workload)
    kv = parts.kv_cache * microbatches if kv_cache is None else as_expr(kv_cache, "kv_cache")

    def at(x: sp.Expr) -> sp.Expr:
        return substitute(x, values, lambda: "memory footprint")

    acts = [at(x) for x in parts.activations]
    comm = [at(x) for x in parts.communication]
    return DeviceMemory(at(parts.weights), at(kv), _largest(acts), _largest(comm),
                        spec.capacity(level), reserve)


def _largest(xs: list[sp.Expr]) -> sp.Expr:
    """The largest of ``xs`` (0 for none): a number where all are numbers, else Max."""
    if not xs:
        return _ZERO
    if all(x.is_Rational for x in xs):
        return max(xs, key=lambda x: x)
    return sp.Max(*xs)

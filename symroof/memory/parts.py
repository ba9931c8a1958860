"""The parts of an analysis that sit in memory: the first step of the one memory count.

From a workload's graph (a sharded graph is one device's):

- ``weights``: every weight tensor, times its count (layers);
- ``kv_cache``: every KV-cache tensor a step reads, times its count;
- ``activations``: candidates, each one kernel's activations that cross memory (its
  inputs and outputs, one occurrence; a fused kernel's on-chip tensors take no memory),
  of which the largest counts;
- ``communication``: candidates, each one collective's payload (one staging buffer).

>>> from symroof.workloads import gemm
>>> from symroof.symbols import M, N, K
>>> parts = memory_parts(gemm(M, N, K))
>>> parts.weights, parts.activations
(K*N*b, (K*M*b + M*N*b,))
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

import sympy as sp

from symroof.analysis import Analysis
from symroof.errors import SymroofError
from symroof.ir import Collective, Kind, Op

__all__ = ["MemoryParts", "memory_parts"]


@dataclass(frozen=True)
class MemoryParts:
    """A graph's footprint parts as formulas; ``activations`` and ``communication`` are
    candidates, each one kernel's or collective's, of which the largest counts."""

    weights: sp.Expr
    kv_cache: sp.Expr
    activations: tuple[sp.Expr, ...]
    communication: tuple[sp.Expr, ...]


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

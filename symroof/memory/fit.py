"""Fit on a chip: the parts of an analysis at values, against a capacity less a reserve.

The second step of the one memory count (:mod:`symroof.memory`): what one device holds
(weights, the caches of every micro-batch, the largest kernel's activations, one
collective's staging buffer) against ``capacity x (1 - reserve)``.

>>> from symroof.symbols import M, N, K, b
>>> from symroof.workloads import gemm
>>> from symroof.hardware import get
>>> mem = device_memory(gemm(M, N, K), get("h100-sxm"), {M: 1024, N: 1024, K: 1024, b: 2})
>>> mem.total, mem.fits
(6291456, True)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import sympy as sp

from symroof.analysis import Analysis
from symroof.budget import substitute
from symroof.errors import SymroofError
from symroof.hardware import HardwareSpec
from symroof.ir import as_expr
from symroof.memory.parts import memory_parts

__all__ = ["DeviceMemory", "device_memory", "fraction", "fits"]

_ZERO = sp.Integer(0)


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
        return None if self.usable is None else fits(self.total, self.usable)


def fits(total: sp.Expr, usable: sp.Expr) -> bool | None:
    """Whether ``total`` bytes fit in ``usable`` bytes: the one fit rule (a device's
    memory, a training layout's busiest stage). With free symbols, their assumptions
    decide it where they settle the sign of ``total - usable`` (positive sizes: 160 GB
    of weights plus a cache never fit in 80 GB); None where they do not.

    >>> from symroof.symbols import B
    >>> fits(B, sp.Integer(5)), fits(B + 6, sp.Integer(5)), fits(sp.Integer(5), sp.Integer(5))
    (None, False, True)
    """
    free = usable - total
    if not free.free_symbols:
        return bool(free >= 0)
    over = (total - usable).is_positive
    return None if over is None else not over


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

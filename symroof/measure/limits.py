"""What one measurement may take, checked before anything is allocated or timed.

Operands (GEMM matrices, STREAM arrays, a model's weights, cache and activations) must
fit the budget's memory limit (:data:`symroof.budget.MAX_MEMORY_MIB`, raised with
``--budget memory_mib=N``) and half of the machine's memory; repetitions and warm-up
calls are at most :data:`MAX_REPS`, and the seconds a warm-up or a repetition is
stretched to at most :data:`MAX_STRETCH_S`. A refusal names what was asked and the limit.

>>> check_reps(5, 1, "measure gemm")
>>> check_reps(10**9, 1, "measure gemm")
Traceback (most recent call last):
...
symroof.errors.SymroofError: measure gemm: 1000000000 repetitions, more than the limit of 1000
>>> check_bytes(3 * 4 * 2**30, "measure gemm M=N=K=32768 fp32", host_bytes=None)
Traceback (most recent call last):
...
symroof.budget.BudgetError: measure gemm M=N=K=32768 fp32: needs 12,288 MiB of operands, more than the memory limit of 2,048 MiB (raise it with --budget memory_mib=N)
"""

from __future__ import annotations

import math

import os

from symroof.budget import BudgetError, current
from symroof.errors import SymroofError

__all__ = ["MAX_REPS", "MAX_STRETCH_S", "ITEMSIZE", "check_reps", "check_seconds",
           "check_bytes", "host_memory"]

#: Most repetitions (and most warm-up calls) one measurement makes.
MAX_REPS = 1000
#: Most seconds a warm-up lasts or a repetition is stretched to.
MAX_STRETCH_S = 60.0
#: Bytes per value of each precision a kernel runs at.
ITEMSIZE = {"fp64": 8, "fp32": 4, "tf32": 4, "bf16": 2, "fp16": 2}


def host_memory() -> int | None:
    """This machine's physical memory in bytes (None where the OS does not say)."""
    try:
        pages, size = os.sysconf("SC_PHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return None
    return pages * size if pages > 0 and size > 0 else None


def check_reps(reps: object, warmup: object, what: str) -> None:
    """``reps`` in 1..MAX_REPS and ``warmup`` in 0..MAX_REPS (integers, not booleans)."""
    for name, value, low in (("repetitions", reps, 1), ("warm-up calls", warmup, 0)):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise SymroofError(f"{what}: {name} must be an integer of at least {low}, got "
                               f"{value!r}")
        if value > MAX_REPS:
            raise SymroofError(f"{what}: {value} {name}, more than the limit of {MAX_REPS}")


def check_seconds(value: object, name: str, what: str) -> float:
    """A duration in [0, MAX_STRETCH_S] seconds."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (
            math.isfinite(value) and 0 <= value <= MAX_STRETCH_S):
        raise SymroofError(f"{what}: {name} must be from 0 to {MAX_STRETCH_S:g} seconds, got "
                           f"{value!r}")
    return float(value)


def check_bytes(need: int, what: str, host_bytes: int | None = -1) -> None:
    """Refuse ``need`` bytes over the budget's memory limit or half of ``host_bytes``
    (default: this machine's memory; None: unknown)."""
    if host_bytes == -1:
        host_bytes = host_memory()
    limit_mib = current().memory_mib
    if limit_mib is not None and need > limit_mib * 2**20:
        raise BudgetError(f"{what}: needs {math.ceil(need / 2**20):,} MiB of operands, more "
                          f"than the memory limit of {limit_mib:,} MiB (raise it with --budget "
                          "memory_mib=N)", "memory_mib")
    if host_bytes is not None and need > host_bytes // 2:
        raise SymroofError(f"{what}: needs {need:,} bytes, over half of this machine's "
                           f"{host_bytes:,}")


"""Honest timing: warm-up calls, repetitions, min/median/max and a wide-spread warning.

Every figure ``symroof.measure`` reports is the best (minimum) of several repetitions,
as STREAM and the Roofline paper report, with the median and the worst beside it so that
a reader can judge the noise.

>>> t = Timing.from_times((2e-3, 1e-3, 4e-3), warmup=1)
>>> t.min_s, t.median_s, t.max_s, t.spread, t.warning is not None
(0.001, 0.002, 0.004, 4.0, True)
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from symroof.errors import SymroofError
from symroof.measure.limits import check_reps, check_seconds

__all__ = ["CLOCK", "SPREAD_WARN", "Timing", "time_call"]

#: The clock every measurement uses (monotonic, nanosecond integer ticks).
CLOCK = "time.perf_counter_ns"

#: Above this max/min ratio a measurement carries a warning: the machine was busy, the
#: clock changed speed, or the work is too short for the clock.
SPREAD_WARN = 1.5


@dataclass(frozen=True)
class Timing:
    """Seconds per call over the repetitions of one measurement, with their summary."""

    times_s: tuple[float, ...]   # seconds per call, one entry per repetition, in run order
    warmup: int                  # untimed calls made before the first repetition
    warmup_s: float              # how long those calls took together
    inner: int                   # calls per repetition (a repetition's time / inner = per call)
    clock: str                   # the clock read around each repetition
    min_s: float                 # the reported figure: the best repetition
    median_s: float
    max_s: float
    spread: float                # max_s / min_s (1.0: no noise at all)
    warning: str | None          # set when spread > SPREAD_WARN

    @classmethod
    def from_times(cls, times_s: Sequence[float], *, warmup: int, warmup_s: float = 0.0,
                   inner: int = 1, clock: str = CLOCK) -> Timing:
        """A Timing from per-call seconds (at least one, all positive and finite)."""
        ts = tuple(float(t) for t in times_s)
        if not ts or not all(math.isfinite(t) and t > 0 for t in ts):
            raise SymroofError(f"timing: expected positive finite times, got {ts!r}")
        lo, hi = min(ts), max(ts)
        spread = hi / lo
        warning = None
        if spread > SPREAD_WARN:
            warning = (f"wide spread: the slowest of {len(ts)} repetitions took {spread:.2f}x "
                       f"the fastest (> {SPREAD_WARN}); the machine may be busy or the work "
                       f"too short for the clock")
        return cls(ts, warmup, warmup_s, inner, clock, lo, statistics.median(ts), hi, spread,
                   warning)

    def as_dict(self) -> dict[str, Any]:
        """Plain numbers for JSON."""
        return {"times_s": list(self.times_s), "warmup": self.warmup,
                "warmup_s": self.warmup_s, "inner": self.inner,
                "clock": self.clock, "min_s": self.min_s, "median_s": self.median_s,
                "max_s": self.max_s, "spread": self.spread, "warning": self.warning}


def time_call(fn: Callable[[], object], *, warmup: int = 1, reps: int = 5,
              warmup_s: float = 0.0, min_rep_s: float = 0.0,
              setup: Callable[[], object] | None = None,
              sync: Callable[[], object] | None = None) -> Timing:
    """Time ``fn()``: untimed warm-up calls, then ``reps`` timed repetitions.

    The warm-up is at least ``warmup`` calls and lasts at least ``warmup_s`` seconds:
    idle cores (a virtual CPU the hypervisor halted, a thread pool gone to sleep, a
    clock at its idle frequency) take a while to come back, and another library's
    threads may still be spinning from its last call.

    ``setup`` runs untimed before every call (resetting a KV cache, flushing a cache);
    with it each repetition is one call. Without it, a repetition repeats ``fn`` enough
    times to last ``min_rep_s`` (calls shorter than the clock's resolution are noise).
    ``sync`` runs inside the timed region after the calls, and once before the clock
    starts (``torch.cuda.synchronize``: asynchronous devices must finish the work).
    """
    check_reps(reps, warmup, "timing")
    warmup_s = check_seconds(warmup_s, "warmup_s", "timing")
    min_rep_s = check_seconds(min_rep_s, "min_rep_s", "timing")
    done = sync or (lambda: None)
    calls, start = 0, time.perf_counter_ns()
    while calls < warmup or (warmup_s > 0 and time.perf_counter_ns() - start < warmup_s * 1e9):
        if setup is not None:
            setup()
        fn()
        done()
        calls += 1
    warmed = (time.perf_counter_ns() - start) / 1e9
    inner = 1
    if setup is None and min_rep_s > 0:
        once = _run(fn, 1, done)   # calibrate on one call; the warm-up already ran
        inner = max(1, math.ceil(min_rep_s / once))
    times: list[float] = []
    for _ in range(reps):
        if setup is not None:
            setup()
            done()
        times.append(_run(fn, inner, done))
    return Timing.from_times(times, warmup=calls, warmup_s=warmed, inner=inner)


def _run(fn: Callable[[], object], inner: int, done: Callable[[], object]) -> float:
    """Seconds per call of ``inner`` back-to-back calls (the clock read once each side)."""
    start = time.perf_counter_ns()
    for _ in range(inner):
        fn()
    done()
    elapsed = time.perf_counter_ns() - start
    return max(elapsed, 1) / 1e9 / inner    # a zero reading means "below one tick"

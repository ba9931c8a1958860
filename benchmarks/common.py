"""What every benchmark shares: repetitions, ratios with min/median/max, the machine.

Only ratios measured within one run are reported: these machines are shared and noisy,
so absolute times say little, and each ratio pairs two measurements taken side by side
in the same repetition. Nothing here is a test; nothing asserts a time.
"""

from __future__ import annotations

import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def clock(fn: Callable[[], object], number: int = 1) -> float:
    """Seconds per call of ``fn``, over ``number`` calls in a row."""
    t0 = time.perf_counter()
    for _ in range(number):
        fn()
    return (time.perf_counter() - t0) / number


def best(fn: Callable[[], object], number: int = 1, repeat: int = 3) -> float:
    """The least seconds per call over ``repeat`` runs of ``number`` calls (the run least
    disturbed by the other work on the machine)."""
    return min(clock(fn, number) for _ in range(repeat))


def spread(values: Sequence[float]) -> tuple[float, float, float]:
    """(min, median, max)."""
    return min(values), statistics.median(values), max(values)


def line(label: str, values: Sequence[float], unit: str = "x", target: str = "") -> str:
    """``label  min  median  max  target`` for one ratio over repetitions."""
    lo, mid, hi = spread(values)
    fmt = (lambda v: f"{v:,.0f}") if mid >= 100 else (lambda v: f"{v:.2f}")
    return (f"{label:<58} {fmt(lo):>9}{unit} {fmt(mid):>9}{unit} {fmt(hi):>9}{unit}"
            f"  {target}").rstrip()


def header(title: str) -> str:
    return (f"\n{title}\n{'ratio':<58} {'min':>10} {'median':>10} {'max':>10}  target\n"
            + "-" * 100)


def machine() -> dict[str, object]:
    """The machine and its load now (the load of the last 1, 5, 15 minutes)."""
    cpu = platform.processor() or platform.machine()
    try:
        for row in Path("/proc/cpuinfo").read_text().splitlines():
            if row.startswith("model name"):
                cpu = row.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    load = os.getloadavg() if hasattr(os, "getloadavg") else (0.0, 0.0, 0.0)
    return {"cpu": cpu, "cores": os.cpu_count(), "load": [round(x, 2) for x in load],
            "python": platform.python_version(), "platform": platform.platform(),
            "versions": _versions()}


def _versions() -> dict[str, str]:
    out = {}
    for name in ("sympy", "numpy", "networkx"):
        try:
            out[name] = __import__(name).__version__
        except ImportError:
            out[name] = "absent"
    return out


def describe() -> str:
    m = machine()
    return (f"machine: {m['cpu']}, {m['cores']} cores, load {m['load']} (1/5/15 min), "
            f"Python {m['python']}, {', '.join(f'{k} {v}' for k, v in m['versions'].items())}")


def run_python(code: str, *, python: str = sys.executable, cwd: Path = ROOT,
               env: dict[str, str] | None = None, timeout: float = 600) -> str:
    """``code`` in a fresh interpreter; its stdout (stderr shown on failure)."""
    done = subprocess.run([python, "-c", code], capture_output=True, text=True, cwd=cwd,
                          env={**os.environ, **(env or {})}, timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(f"child failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return done.stdout

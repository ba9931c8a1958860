"""What the machine at hand is: host, caches, the BLAS numpy calls, PyTorch and its threads.

Every probe reads the operating system or the loaded libraries and says where a figure
came from; none of them times anything. Optional libraries (threadpoolctl, torch,
transformers) are imported lazily.
"""

from __future__ import annotations

# imports inside functions: numpy, torch, transformers and threadpoolctl load only when a
# measurement runs (torch and transformers are optional; numpy costs every command start-up)

import ctypes
import datetime
import glob
import os
import platform
import socket
import time
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from symroof.errors import SymroofError

__all__ = ["CacheLevel", "HostInfo", "BlasInfo", "TorchInfo", "Load", "LoadMeter",
           "BUSY_WARN", "THREAD_ENV", "host_info", "cache_levels", "blas_info", "cpu_model",
           "torch_info", "torch_available", "require_torch", "require_transformers"]

#: Environment variables that change which BLAS kernel runs or how many threads it uses:
#: a forced slower kernel or a single thread is a common reason a peak comes out low.
THREAD_ENV = ("OPENBLAS_CORETYPE", "OPENBLAS_NUM_THREADS", "OPENBLAS_VERBOSE", "OMP_NUM_THREADS",
              "MKL_NUM_THREADS", "MKL_ENABLE_INSTRUCTIONS", "MKL_DEBUG_CPU_TYPE",
              "GOTO_NUM_THREADS", "BLIS_NUM_THREADS", "VECLIB_MAXIMUM_THREADS")

#: Above this many CPUs' worth of other processes' work during a measurement, it warns.
BUSY_WARN = 0.25

_MISSING_EXTRA = ("install the optional extra with PyTorch and transformers: "
                  "pip install 'symroof[oracle]' (torch==2.13.0, transformers==5.24.0)")


@dataclass(frozen=True)
class CacheLevel:
    """One cache level of the whole machine: every instance of it added together."""

    level: int
    kind: str            # "Data", "Instruction" or "Unified" (the OS's words)
    size_bytes: int      # all instances together
    instances: int
    source: str


@dataclass(frozen=True)
class HostInfo:
    """The host a measurement ran on, and when."""

    hostname: str
    cpu_model: str
    logical_cpus: int
    platform: str
    python: str
    numpy: str
    date: str                        # ISO 8601, UTC, to the second
    memory_bytes: int | None         # physical memory (os.sysconf), None if unknown
    caches: tuple[CacheLevel, ...]
    cache_source: str                # where the cache sizes came from

    @property
    def last_level_cache_bytes(self) -> int | None:
        """Bytes of the outermost data or unified cache level, all instances together."""
        usable = [c for c in self.caches if c.kind != "Instruction"]
        return max(usable, key=lambda c: c.level).size_bytes if usable else None

    @property
    def cache_bytes(self) -> int:
        """Bytes of every data and unified cache together (STREAM sizes arrays from this)."""
        return sum(c.size_bytes for c in self.caches if c.kind != "Instruction")


@dataclass(frozen=True)
class BlasInfo:
    """The BLAS numpy's matmul calls: library, version, the kernel it runs, threads."""

    library: str                         # e.g. "scipy-openblas 0.3.31"
    kernel: str | None                   # the kernel chosen at run time (OpenBLAS core name)
    threads: int | None                  # threads the BLAS will use
    via: str                             # how these were found
    config: str                          # the build configuration string
    environment: tuple[tuple[str, str], ...]   # THREAD_ENV variables that are set
    warning: str | None                  # e.g. a kernel forced by the environment


@dataclass(frozen=True)
class TorchInfo:
    """PyTorch as loaded: version, threads, the BLAS it links, CPU capability, CUDA device."""

    version: str
    threads: int                 # intra-op threads (torch.get_num_threads)
    interop_threads: int
    blas: str                    # BLAS_INFO from torch's build configuration (e.g. "mkl")
    cpu_capability: str          # the vector ISA ATen dispatches to (e.g. "AVX512")
    cuda_device: str | None      # the CUDA device's name, None without one


def host_info() -> HostInfo:
    """Host name, CPU, memory, caches and the date (UTC, ISO 8601)."""
    import numpy as np

    caches, where = cache_levels()
    return HostInfo(
        hostname=socket.gethostname() or "unknown-host", cpu_model=cpu_model(),
        logical_cpus=os.cpu_count() or 1, platform=platform.platform(),
        python=platform.python_version(), numpy=np.__version__,
        date=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        memory_bytes=_sysconf_product("SC_PAGE_SIZE", "SC_PHYS_PAGES"),
        caches=caches, cache_source=where)


def cache_levels() -> tuple[tuple[CacheLevel, ...], str]:
    """Cache levels from /sys (Linux), else ``os.sysconf`` (glibc), else none; and where."""
    found = _sysfs_caches()
    if found:
        return found, "/sys/devices/system/cpu/cpu*/cache/index*/{level,type,size,shared_cpu_list}"
    out = []
    for level, name, kind in ((1, "SC_LEVEL1_DCACHE_SIZE", "Data"),
                              (2, "SC_LEVEL2_CACHE_SIZE", "Unified"),
                              (3, "SC_LEVEL3_CACHE_SIZE", "Unified"),
                              (4, "SC_LEVEL4_CACHE_SIZE", "Unified")):
        size = _sysconf(name)
        if size:   # glibc reports one instance; how many share it is not said
            out.append(CacheLevel(level, kind, size, 1, f"os.sysconf({name!r}), one instance"))
    return tuple(out), ("os.sysconf (one instance per level)" if out else "unknown")


def _sysfs_caches() -> tuple[CacheLevel, ...]:
    seen: dict[tuple[int, str, str], int] = {}   # (level, type, sharing cpus) -> bytes
    for d in glob.glob("/sys/devices/system/cpu/cpu[0-9]*/cache/index[0-9]*"):
        try:
            level = int(_read(f"{d}/level"))
            kind = _read(f"{d}/type")
            size = _size(_read(f"{d}/size"))
            shared = _read(f"{d}/shared_cpu_list") if os.path.exists(f"{d}/shared_cpu_list") else d
        except (OSError, ValueError):
            continue
        seen[(level, kind, shared)] = size   # one entry per physical instance
    totals: dict[tuple[int, str], list[int]] = {}
    for (level, kind, _), size in seen.items():
        totals.setdefault((level, kind), []).append(size)
    return tuple(CacheLevel(level, kind, sum(sizes), len(sizes),
                            f"/sys/devices/system/cpu: {len(sizes)} x {sizes[0]} bytes")
                 for (level, kind), sizes in sorted(totals.items()))


def _read(path: str) -> str:
    with open(path) as fh:
        return fh.read().strip()


def _size(text: str) -> int:
    """'48K' / '32768K' / '2M' as the kernel writes them: binary multiples."""
    mult = {"K": 2**10, "M": 2**20, "G": 2**30}
    return int(text[:-1]) * mult[text[-1]] if text and text[-1] in mult else int(text)


def _sysconf(name: str) -> int | None:
    try:
        value = os.sysconf(name)
    except (ValueError, OSError, AttributeError):
        return None
    return value if value > 0 else None


def _sysconf_product(a: str, b: str) -> int | None:
    x, y = _sysconf(a), _sysconf(b)
    return x * y if x and y else None


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


def _environment() -> tuple[tuple[str, str], ...]:
    return tuple((k, os.environ[k]) for k in THREAD_ENV if k in os.environ)


def blas_info() -> BlasInfo:
    """numpy's BLAS via threadpoolctl; without it, numpy.show_config and the loaded library."""
    env = _environment()
    forced = dict(env).get("OPENBLAS_CORETYPE")
    warning = (f"OPENBLAS_CORETYPE={forced} forces OpenBLAS's {forced} kernel whatever this CPU "
               f"supports; unset it to let OpenBLAS pick (a newer kernel may be faster)"
               if forced else None)
    built = _show_config()
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        kernel, threads, how = _openblas_runtime()
        via = ("threadpoolctl is not installed: library and build configuration from "
               "numpy.show_config()" + (f"; {how}" if how else "; kernel and threads unknown"))
        return BlasInfo(built[0], kernel, threads, via, built[1], env, warning)
    pools = [p for p in threadpool_info() if p.get("user_api") == "blas"]
    pools.sort(key=lambda p: "numpy" not in str(p.get("filepath", "")))   # numpy's own first
    if not pools:
        return BlasInfo(built[0], None, None, "threadpoolctl found no BLAS; numpy.show_config()",
                        built[1], env, warning)
    p = pools[0]
    library = f"{p.get('internal_api', '?')} {p.get('version') or ''}".strip()
    return BlasInfo(library, p.get("architecture"), p.get("num_threads"),
                    f"threadpoolctl ({p.get('filepath')})", built[1], env, warning)


def _show_config() -> tuple[str, str]:
    """(library and version, build configuration) from numpy.show_config(mode='dicts')."""
    import numpy as np

    try:
        cfg: Any = np.show_config(mode="dicts")   # numpy >= 1.26
        blas = cfg["Build Dependencies"]["blas"]
    except (TypeError, KeyError):
        return "unknown BLAS", "numpy.show_config() gave no build information"
    library = f"{blas.get('name', 'unknown')} {blas.get('version', '')}".strip()
    config = str(blas.get("openblas configuration") or blas.get("detection method") or "")
    return library, config


def _openblas_runtime() -> tuple[str | None, int | None, str]:
    """OpenBLAS's run-time core name and thread count through ctypes, as threadpoolctl does."""
    try:
        with open("/proc/self/maps") as fh:
            paths = sorted({line.split()[-1] for line in fh if "openblas" in line.lower()
                            and line.split()[-1].startswith("/")})
    except OSError:
        return None, None, ""
    for path in paths:
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for prefix in ("scipy_", ""):
            for suffix in ("64_", "_64", ""):
                name = f"{prefix}openblas_get_corename{suffix}"
                if not hasattr(lib, name):
                    continue
                core = getattr(lib, name)
                core.restype = ctypes.c_char_p
                count = getattr(lib, f"{prefix}openblas_get_num_threads{suffix}", None)
                threads = None
                if count is not None:
                    count.restype = ctypes.c_int
                    threads = int(count())
                return (core().decode(), threads,
                        f"kernel and threads read from the loaded {os.path.basename(path)} "
                        f"through ctypes ({name})")
    return None, None, ""


def require_torch(what: str) -> ModuleType:
    """``torch``, or a SymroofError naming the extra that provides it."""
    try:
        import torch
    except ImportError:
        raise SymroofError(f"{what} needs PyTorch, which is not installed; "
                           f"{_MISSING_EXTRA}") from None
    return torch


def require_transformers(what: str) -> ModuleType:
    """``transformers``, or a SymroofError naming the extra that provides it."""
    require_torch(what)
    try:
        import transformers
    except ImportError:
        raise SymroofError(f"{what} needs transformers, which is not installed; "
                           f"{_MISSING_EXTRA}") from None
    return transformers


def torch_available() -> bool:
    """Whether ``import torch`` works (without raising)."""
    try:
        import torch  # noqa: F401
    except ImportError:
        return False
    return True


def torch_info() -> TorchInfo | None:
    """PyTorch's version, threads, BLAS and devices; None when it is not installed."""
    if not torch_available():
        return None
    import torch

    shown = torch.__config__.show()
    blas = next((part.split("=", 1)[1] for part in shown.replace(",", " ").split()
                 if part.startswith("BLAS_INFO=")), "unknown")
    try:
        capability = str(torch.backends.cpu.get_cpu_capability())
    except AttributeError:
        capability = "unknown"
    cuda = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    return TorchInfo(torch.__version__, torch.get_num_threads(), torch.get_num_interop_threads(),
                     blas, capability, cuda)


@dataclass(frozen=True)
class Load:
    """CPU time spent on the host while a measurement ran (Linux /proc/stat and os.times)."""

    wall_s: float
    own_cpu_s: float         # this process, every thread
    busy_cpu_s: float        # every CPU together (user, nice, system, irq, softirq)
    steal_s: float           # time the hypervisor gave these virtual CPUs to someone else
    cpus: int

    @property
    def others(self) -> float:
        """CPUs' worth of other processes' work, on average (0: a quiet machine)."""
        return max(self.busy_cpu_s - self.own_cpu_s, 0.0) / self.wall_s

    @property
    def warning(self) -> str | None:
        """Set when other processes (or the hypervisor) took a noticeable share of the CPUs."""
        stolen = self.steal_s / self.wall_s
        if self.others <= BUSY_WARN and stolen <= BUSY_WARN:
            return None
        return (f"the machine was busy: other processes used {self.others:.2f} of {self.cpus} "
                f"CPUs on average and the hypervisor took {stolen:.2f} during the "
                f"measurement; figures may be below this machine's quiet ones")

    def as_dict(self) -> dict[str, Any]:
        """Plain numbers for JSON."""
        return {"wall_s": self.wall_s, "own_cpu_s": self.own_cpu_s,
                "busy_cpu_s": self.busy_cpu_s, "steal_s": self.steal_s, "cpus": self.cpus,
                "others": self.others, "warning": self.warning}


class LoadMeter:
    """Brackets a measurement: ``meter = LoadMeter(); ...; load = meter.stop()``."""

    def __init__(self) -> None:
        self._start = (time.perf_counter(), _own_cpu(), _proc_stat())

    def stop(self) -> Load | None:
        """The load since construction; None where /proc/stat cannot be read."""
        t0, own0, stat0 = self._start
        stat1 = _proc_stat()
        wall = time.perf_counter() - t0
        if stat0 is None or stat1 is None or wall <= 0:
            return None
        return Load(wall, _own_cpu() - own0, stat1[0] - stat0[0], stat1[1] - stat0[1],
                    os.cpu_count() or 1)


def _own_cpu() -> float:
    t = os.times()
    return t.user + t.system


def _proc_stat() -> tuple[float, float] | None:
    """(busy, steal) CPU seconds since boot over every CPU, from /proc/stat's first line."""
    try:
        with open("/proc/stat") as fh:
            fields = fh.readline().split()
        tick = os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, AttributeError):
        return None
    if not fields or fields[0] != "cpu" or len(fields) < 9:
        return None
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(x) for x in fields[1:9])
    return (user + nice + system + irq + softirq) / tick, steal / tick

"""An empirical roofline of the machine at hand: GEMM peaks per precision, STREAM bandwidth.

The peak of a precision is the best GEMM rate any library reaches on square operands;
the bandwidth is the best of STREAM copy and triad over arrays far larger than the
caches. Bytes are counted as STREAM counts them: copy moves 2 arrays per element (read
``a``, write ``c``), triad 3 (read ``b`` and ``c``, write ``a``); the extra read a
write-allocate cache performs before each written line is not counted.
"""

from __future__ import annotations

# imports inside functions: numpy, torch, transformers and threadpoolctl load only when a
# measurement runs (torch and transformers are optional; numpy costs every command start-up)

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from symroof.errors import SymroofError
from symroof.measure.kernels import (NUMPY_DTYPES, STREAM_ARRAYS, STREAM_KERNELS,
                                     TORCH_DTYPES, check_gemm_shape, default_libraries,
                                     default_precisions, gemm_kernel, resolve_device,
                                     stream_kernel)
from symroof.measure.limits import check_bytes, check_reps, check_seconds
from symroof.measure.probe import (BlasInfo, CacheLevel, HostInfo, Load, LoadMeter, TorchInfo,
                                   blas_info, host_info, torch_info)
from symroof.measure.timing import Timing, time_call
from symroof.hardware import PRECISIONS

__all__ = ["GemmPeak", "Bandwidth", "Machine", "measure_machine", "measure_peak",
           "measure_bandwidth", "stream_elements_for", "WRITE_ALLOCATE_COUNTED"]

#: STREAM's convention, which these figures follow: a written line's read-for-ownership
#: is not counted (a write-allocate cache moves 3 arrays for copy and 4 for triad).
WRITE_ALLOCATE_COUNTED = False
_DEFAULT_GEMM = {"cpu": 2048, "cuda": 8192}


@dataclass(frozen=True)
class GemmPeak:
    """The rate of one square GEMM (M = N = K = n) in one library and precision."""

    precision: str
    library: str
    device: str
    method: str              # the call that ran, e.g. "numpy.matmul float64"
    n: int
    flops: int               # 2 n^3: a multiply-accumulate counts as 2 FLOPs
    threads: int | None      # threads the library used (None: a GPU)
    timing: Timing

    @property
    def flop_per_s(self) -> float:
        """FLOP/s of the best repetition."""
        return self.flops / self.timing.min_s

    def as_dict(self) -> dict[str, Any]:
        """Plain numbers for JSON."""
        return {"precision": self.precision, "library": self.library, "device": self.device,
                "method": self.method, "n": self.n, "flops": self.flops,
                "threads": self.threads, "flop_per_s": self.flop_per_s,
                "timing": self.timing.as_dict()}


@dataclass(frozen=True)
class Bandwidth:
    """One STREAM kernel's sustained bandwidth over arrays of ``elements`` values."""

    kernel: str              # "copy" or "triad"
    library: str
    device: str
    method: str
    elements: int            # values per array
    arrays: int              # arrays counted per element: copy 2, triad 3
    itemsize: int            # bytes per value (8: float64, as STREAM)
    bytes: int               # counted per call: arrays * itemsize * elements
    write_allocate_counted: bool
    threads: int | None
    timing: Timing

    @property
    def bytes_per_s(self) -> float:
        """Counted bytes per second of the best repetition."""
        return self.bytes / self.timing.min_s

    def as_dict(self) -> dict[str, Any]:
        """Plain numbers for JSON."""
        return {"kernel": self.kernel, "library": self.library, "device": self.device,
                "method": self.method, "elements": self.elements, "arrays": self.arrays,
                "itemsize": self.itemsize, "bytes": self.bytes,
                "write_allocate_counted": self.write_allocate_counted,
                "threads": self.threads, "bytes_per_s": self.bytes_per_s,
                "timing": self.timing.as_dict()}


@dataclass(frozen=True)
class Machine:
    """Everything ``measure_machine`` found: the host, its libraries, peaks and bandwidths."""

    host: HostInfo
    device: str                      # "cpu" or "cuda"
    device_name: str                 # the CPU model or the GPU's name
    memory_bytes: int | None         # the device's main memory (host RAM for the CPU)
    caches: tuple[CacheLevel, ...]   # the device's caches (the host's for the CPU)
    blas: BlasInfo | None            # numpy's BLAS (None when numpy did not run)
    torch: TorchInfo | None          # None when PyTorch is not installed
    peaks: tuple[GemmPeak, ...]
    bandwidths: tuple[Bandwidth, ...]
    load: Load | None                # other processes' CPU use while measuring
    warnings: tuple[str, ...]

    def precisions(self) -> tuple[str, ...]:
        """Precisions with a measured peak, widest first."""
        have = {p.precision for p in self.peaks}
        return tuple(p for p in PRECISIONS if p in have)

    def peak(self, precision: str) -> GemmPeak:
        """The fastest measured GEMM at ``precision`` (over libraries and sizes)."""
        found = [p for p in self.peaks if p.precision == precision]
        if not found:
            raise SymroofError(f"measured machine: no {precision} peak was measured (have "
                               f"{', '.join(self.precisions()) or 'none'})")
        return max(found, key=lambda p: p.flop_per_s)

    def bandwidth(self, kernel: str | None = None) -> Bandwidth:
        """The highest measured bandwidth (of ``kernel`` if given): the memory roof."""
        found = [b for b in self.bandwidths if kernel is None or b.kernel == kernel]
        if not found:
            raise SymroofError(f"measured machine: no {kernel or 'stream'} bandwidth measured")
        return max(found, key=lambda b: b.bytes_per_s)

    def as_dict(self) -> dict[str, Any]:
        """Plain data for JSON (the host's caches as lists of fields)."""

        return {"host": asdict(self.host), "device": self.device,
                "device_name": self.device_name, "memory_bytes": self.memory_bytes,
                "caches": [asdict(c) for c in self.caches],
                "blas": None if self.blas is None else asdict(self.blas),
                "torch": None if self.torch is None else asdict(self.torch),
                "peaks": [p.as_dict() for p in self.peaks],
                "bandwidths": [b.as_dict() for b in self.bandwidths],
                "load": None if self.load is None else self.load.as_dict(),
                "best": {"peaks_flop_per_s": {p: self.peak(p).flop_per_s
                                              for p in self.precisions()},
                         "bandwidth_bytes_per_s": self.bandwidth().bytes_per_s
                         if self.bandwidths else None},
                "warnings": list(self.warnings)}


def _threads(library: str, device: str, blas: BlasInfo | None) -> int | None:
    if device == "cuda":
        return None
    if library == "numpy":
        return None if blas is None else blas.threads
    import torch

    return int(torch.get_num_threads())


def measure_peak(library: str, precision: str, n: int, *, device: str = "cpu",
                 reps: int = 5, warmup: int = 1, warmup_s: float = 0.25,
                 min_rep_s: float = 0.05, blas: BlasInfo | None = None) -> GemmPeak:
    """One square GEMM's best rate: a warm-up (``warmup`` calls, ``warmup_s`` seconds at
    least), then the best of ``reps`` repetitions of ``min_rep_s`` seconds at least."""
    dev = resolve_device(device)
    kernel = gemm_kernel(library, precision, n, n, n, dev)
    timing = time_call(kernel.run, warmup=warmup, warmup_s=warmup_s, reps=reps,
                       min_rep_s=min_rep_s, sync=kernel.sync)
    return GemmPeak(precision, library, dev, kernel.method, n, 2 * n ** 3,
                    _threads(library, dev, blas), timing)


def measure_bandwidth(library: str, kernel: str, elements: int, *, device: str = "cpu",
                      reps: int = 10, warmup: int = 1, warmup_s: float = 0.25,
                      min_rep_s: float = 0.05, blas: BlasInfo | None = None) -> Bandwidth:
    """One STREAM kernel's best bandwidth over float64 arrays of ``elements`` values."""
    dev = resolve_device(device)
    k = stream_kernel(library, kernel, elements, dev)
    timing = time_call(k.run, warmup=warmup, warmup_s=warmup_s, reps=reps,
                       min_rep_s=min_rep_s, sync=k.sync)
    arrays = STREAM_ARRAYS[kernel]
    threads = 1 if library == "numpy" else _threads(library, dev, blas)  # numpy ufuncs: 1
    return Bandwidth(kernel, library, dev, k.method, elements, arrays, k.itemsize,
                     arrays * k.itemsize * elements, WRITE_ALLOCATE_COUNTED, threads, timing)


def stream_elements_for(host: HostInfo, device: str = "cpu") -> int:
    """STREAM's rule: each array at least 4x all caches together (CPU) or the L2 (GPU)."""
    if device == "cuda":
        import torch

        l2 = int(getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 0))
        return max(4 * l2 // 8, 1 << 26)
    return max(4 * host.cache_bytes // 8, 1 << 22)


def measure_machine(*, device: str = "cpu", libraries: Sequence[str] | None = None,
                    precisions: Sequence[str] | None = None, gemm_size: int | None = None,
                    stream_elements: int | None = None, reps: int = 5, stream_reps: int = 10,
                    warmup: int = 1, warmup_s: float = 0.25,
                    min_rep_s: float = 0.05) -> Machine:
    """Measure this machine: GEMM peaks per precision and library, STREAM copy and triad.

    ``libraries`` defaults to numpy (CPU) and torch when installed; ``precisions`` to
    each library's own list (numpy fp64, fp32; torch on the CPU fp32, bf16). Arrays
    default to 4x the caches the OS reports; GEMMs to n = 2048 (CPU) or 8192 (CUDA).
    """
    check_reps(reps, warmup, "measure machine")
    check_reps(stream_reps, warmup, "measure machine (STREAM)")
    check_seconds(warmup_s, "warmup_s", "measure machine")
    check_seconds(min_rep_s, "min_rep_s", "measure machine")
    meter = LoadMeter()
    dev = resolve_device(device)
    host = host_info()
    libs = tuple(libraries) if libraries is not None else default_libraries(dev)
    if not libs:
        raise SymroofError("measure machine: no library to measure with (numpy runs on the "
                           "CPU only; torch is not installed)")
    blas = blas_info() if "numpy" in libs else None
    tinfo = torch_info()
    if "torch" in libs and tinfo is None:
        raise SymroofError("measure machine: library 'torch' requested but PyTorch is not "
                           "installed; pip install 'symroof[oracle]'")
    n = gemm_size or _DEFAULT_GEMM[dev]
    name, memory, caches = _device(host, dev, tinfo)
    elements = stream_elements or stream_elements_for(host, dev)
    _check_memory(memory, elements)
    plan = [(lib, p) for lib in libs for p in _wanted(lib, dev, precisions)]
    missing = [p for p in precisions or () if p not in {q for _, q in plan}]
    if missing:        # refuse before spending minutes measuring the rest
        raise SymroofError(f"measure machine: no library here measures {', '.join(missing)} "
                           f"(libraries: {', '.join(libs)}; bf16 and fp16 need torch)")
    for _, p in plan:  # every operand fits before the first measurement
        check_gemm_shape(n, n, n, p)
    check_bytes(3 * 8 * elements, f"measure machine: STREAM over 3 arrays of {elements} "
                "float64 values")
    peaks = [measure_peak(lib, p, n, device=dev, reps=reps, warmup=warmup, warmup_s=warmup_s,
                          min_rep_s=min_rep_s, blas=blas) for lib, p in plan]
    bws = [measure_bandwidth(lib, k, elements, device=dev, reps=stream_reps, warmup=warmup,
                             warmup_s=warmup_s, min_rep_s=min_rep_s, blas=blas)
           for lib in libs for k in STREAM_KERNELS]
    warnings: list[str] = [] if blas is None or blas.warning is None else [blas.warning]
    warnings += [f"{x.library} {x.precision} GEMM: {x.timing.warning}"
                 for x in peaks if x.timing.warning]
    warnings += [f"{x.library} {x.kernel}: {x.timing.warning}"
                 for x in bws if x.timing.warning]
    if dev == "cpu" and tinfo is None:
        warnings.append("PyTorch is not installed: only numpy's fp64 and fp32 GEMMs were "
                        "measured (bf16 needs torch)")
    cached = sum(c.size_bytes for c in caches if c.kind != "Instruction")
    if 8 * elements < 4 * cached:
        warnings.append(f"STREAM arrays of {8 * elements} bytes are smaller than 4x the caches "
                        f"({cached} bytes): the bandwidth may be a cache's, not memory's")
    if not caches:
        warnings.append("cache sizes unknown (no /sys and no os.sysconf figures): arrays sized "
                        f"{8 * elements} bytes without knowing the last-level cache")
    load = meter.stop()
    if load is not None and load.warning:
        warnings.append(load.warning)
    return Machine(host, dev, name, memory, caches, blas, tinfo, tuple(peaks), tuple(bws),
                   load, tuple(warnings))


def _device(host: HostInfo, device: str,
            tinfo: TorchInfo | None) -> tuple[str, int | None, tuple[CacheLevel, ...]]:
    """The measured device's name, main memory and caches."""
    if device == "cpu":
        return host.cpu_model, host.memory_bytes, host.caches
    import torch

    props = torch.cuda.get_device_properties(0)
    l2 = int(getattr(props, "L2_cache_size", 0))
    caches = (CacheLevel(2, "Unified", l2, 1, "torch.cuda.get_device_properties(0).L2_cache_size"),)
    name = (tinfo.cuda_device if tinfo else None) or str(props.name)
    return name, int(props.total_memory), caches if l2 > 0 else ()


def _wanted(library: str, device: str, precisions: Sequence[str] | None) -> tuple[str, ...]:
    own = default_precisions(library, device)
    if precisions is None:
        return own

    table = NUMPY_DTYPES if library == "numpy" else TORCH_DTYPES
    return tuple(p for p in precisions if p in table and not (p == "tf32" and device != "cuda"))


def _check_memory(memory: int | None, elements: int) -> None:
    need = 3 * 8 * elements
    if memory is not None and need > memory // 2:
        raise SymroofError(f"measure machine: 3 STREAM arrays of {elements} float64 values need "
                           f"{need} bytes, over half of the device's {memory}")

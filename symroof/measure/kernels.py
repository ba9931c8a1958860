"""The measured kernels: a GEMM per library and precision, and STREAM copy and triad.

Each builder allocates its operands once and returns a zero-argument callable that runs
the kernel into preallocated outputs (no allocation is timed), with a ``sync`` for
asynchronous devices.
"""

from __future__ import annotations

# imports inside functions: numpy, torch, transformers and threadpoolctl load only when a
# measurement runs (torch and transformers are optional; numpy costs every command start-up)

from collections.abc import Callable
from dataclasses import dataclass

from symroof.errors import SymroofError
from symroof.measure.limits import ITEMSIZE, check_bytes
from symroof.measure.probe import require_torch, torch_available

__all__ = ["LIBRARIES", "NUMPY_DTYPES", "TORCH_DTYPES", "Kernel", "gemm_kernel", "gemm_bytes",
           "check_gemm_shape",
           "stream_kernel", "check_gemm", "resolve_device", "default_libraries",
           "default_precisions", "cache_flusher", "STREAM_KERNELS", "STREAM_ARRAYS"]

LIBRARIES = ("numpy", "torch")
#: precision name -> numpy dtype (numpy's BLAS has no half precisions)
NUMPY_DTYPES = {"fp64": "float64", "fp32": "float32"}
#: precision name -> torch dtype; tf32 is float32 storage with TF32 matmuls allowed
TORCH_DTYPES = {"fp64": "float64", "fp32": "float32", "tf32": "float32", "bf16": "bfloat16",
                "fp16": "float16"}
#: STREAM kernels and the arrays each moves per element (reads + writes, STREAM's count)
STREAM_ARRAYS = {"copy": 2, "triad": 3}     # copy: read a, write c; triad: read b, c, write a
STREAM_KERNELS = tuple(STREAM_ARRAYS)
_TRIAD_SCALAR = 3.0                          # STREAM's q
_BLOCK = 1 << 15                             # numpy triad block: 3 x 256 KiB stays in L2


@dataclass(frozen=True)
class Kernel:
    """A ready-to-time kernel: ``run()`` does the work once; ``sync()`` waits for it."""

    run: Callable[[], object]
    sync: Callable[[], object] | None
    method: str          # what runs, for sources and records (e.g. "numpy.matmul float32")
    dtype: str
    itemsize: int        # bytes per element


def resolve_device(device: str) -> str:
    """'cpu' or 'cuda' ('auto': cuda when torch sees a CUDA device, else cpu)."""
    if device == "auto":
        if torch_available():
            import torch
            if torch.cuda.is_available():
                return "cuda"
        return "cpu"
    if device not in ("cpu", "cuda"):
        raise SymroofError(f"measure: device {device!r}: expected auto, cpu or cuda")
    if device == "cuda":
        torch = require_torch("measuring a CUDA device")
        if not torch.cuda.is_available():
            raise SymroofError("measure: device 'cuda' requested but torch sees no CUDA device "
                               "(torch.cuda.is_available() is False)")
    return device


def default_libraries(device: str) -> tuple[str, ...]:
    """numpy (CPU only) and torch when it is installed."""
    libs = ("numpy",) if device == "cpu" else ()
    return libs + (("torch",) if torch_available() else ())


def default_precisions(library: str, device: str) -> tuple[str, ...]:
    """Precisions measured by default: numpy fp64, fp32; torch CPU fp32, bf16; CUDA five."""
    if library == "numpy":
        return ("fp64", "fp32")
    return ("fp32", "bf16") if device == "cpu" else ("fp64", "fp32", "tf32", "bf16", "fp16")


def check_gemm(library: str, precision: str, device: str) -> None:
    """A SymroofError unless ``library`` runs a ``precision`` GEMM on ``device``."""
    if library not in LIBRARIES:
        raise SymroofError(f"measure: library {library!r}: expected one of "
                           f"{', '.join(LIBRARIES)}")
    if library == "numpy" and device != "cpu":
        raise SymroofError("measure: numpy runs on the CPU only; use library 'torch' for cuda")
    table = NUMPY_DTYPES if library == "numpy" else TORCH_DTYPES
    if precision not in table:
        raise SymroofError(f"measure: {library} has no {precision!r} GEMM here; expected one of "
                           f"{', '.join(table)}")
    if precision == "tf32" and device != "cuda":
        raise SymroofError("measure: tf32 is a CUDA tensor-core format; on the CPU use fp32")


def gemm_bytes(m: int, n: int, k: int, precision: str) -> int:
    """Bytes of a GEMM's operands: A (m x k), B (k x n) and C (m x n)."""
    return (m * k + k * n + m * n) * ITEMSIZE.get(precision, 8)


def check_gemm_shape(m: int, n: int, k: int, precision: str) -> None:
    """Positive integer sizes whose operands fit the memory limit (before allocating)."""
    for name, dim in (("M", m), ("N", n), ("K", k)):
        if not isinstance(dim, int) or isinstance(dim, bool) or dim < 1:
            raise SymroofError(f"measure gemm: {name} must be a positive integer, got {dim!r}")
    check_bytes(gemm_bytes(m, n, k, precision), f"measure gemm M={m} N={n} K={k} {precision}")


def gemm_kernel(library: str, precision: str, m: int, n: int, k: int,
                device: str = "cpu", seed: int = 0) -> Kernel:
    """``C[m,n] = A[m,k] @ B[k,n]`` with random operands, written into a preallocated C."""
    check_gemm(library, precision, device)
    check_gemm_shape(m, n, k, precision)
    if library == "numpy":
        import numpy as np

        dt = np.dtype(NUMPY_DTYPES[precision])
        rng = np.random.default_rng(seed)
        a = rng.standard_normal((m, k)).astype(dt)
        b = rng.standard_normal((k, n)).astype(dt)
        c = np.empty((m, n), dt)
        return Kernel(lambda: np.matmul(a, b, out=c), None, f"numpy.matmul {dt.name}",
                      dt.name, dt.itemsize)
    torch = require_torch("measuring a torch GEMM")
    tdt = getattr(torch, TORCH_DTYPES[precision])
    gen = torch.Generator(device="cpu").manual_seed(seed)
    ta = torch.randn((m, k), generator=gen).to(device=device, dtype=tdt)
    tb = torch.randn((k, n), generator=gen).to(device=device, dtype=tdt)
    tc = torch.empty((m, n), device=device, dtype=tdt)
    sync = torch.cuda.synchronize if device == "cuda" else None
    run: Callable[[], object] = lambda: torch.matmul(ta, tb, out=tc)
    method = f"torch.matmul {TORCH_DTYPES[precision]} on {device}"
    if precision == "tf32":     # float32 operands, tensor-core TF32 products allowed
        def run() -> object:
            before = torch.get_float32_matmul_precision()
            torch.set_float32_matmul_precision("high")
            try:
                return torch.matmul(ta, tb, out=tc)
            finally:
                torch.set_float32_matmul_precision(before)
        method += " with TF32 allowed (set_float32_matmul_precision('high'))"
    return Kernel(run, sync, method, TORCH_DTYPES[precision], tc.element_size())


def stream_kernel(library: str, kernel: str, elements: int, device: str = "cpu") -> Kernel:
    """STREAM copy ``c = a`` or triad ``a = b + q*c`` over float64 arrays of ``elements``.

    numpy's triad runs block by block (an L2-sized block of ``a`` is written by the
    multiply and updated by the add while still cached), so main memory sees 3 arrays,
    as in STREAM, not the 5 of two whole-array passes; numpy runs one thread. torch's
    ``add(b, c, alpha=q, out=a)`` is one fused pass on torch's threads.
    """
    if kernel not in STREAM_ARRAYS:
        raise SymroofError(f"measure: stream kernel {kernel!r}: expected copy or triad")
    check_gemm(library, "fp64", device)
    if not isinstance(elements, int) or isinstance(elements, bool) or elements < 1:
        raise SymroofError(f"measure: stream elements must be a positive integer, got {elements!r}")
    check_bytes(3 * 8 * elements, f"measure: STREAM {kernel} over 3 arrays of {elements} "
                "float64 values")
    if library == "numpy":
        import numpy as np

        a, b, c = (np.full(elements, v) for v in (1.0, 2.0, 0.0))
        if kernel == "copy":
            return Kernel(lambda: np.copyto(c, a), None, "numpy.copyto(c, a), one thread",
                          "float64", 8)

        def triad() -> None:
            for lo in range(0, elements, _BLOCK):
                hi = min(lo + _BLOCK, elements)
                np.multiply(c[lo:hi], _TRIAD_SCALAR, out=a[lo:hi])
                np.add(a[lo:hi], b[lo:hi], out=a[lo:hi])
        return Kernel(triad, None, f"numpy multiply + add in blocks of {_BLOCK} elements "
                      "(a = b + q*c), one thread", "float64", 8)
    torch = require_torch("measuring torch memory bandwidth")
    ta, tb, tc = (torch.full((elements,), v, dtype=torch.float64, device=device)
                  for v in (1.0, 2.0, 0.0))
    sync = torch.cuda.synchronize if device == "cuda" else None
    if kernel == "copy":
        return Kernel(lambda: tc.copy_(ta), sync, f"torch Tensor.copy_ (c = a) on {device}",
                      "float64", 8)
    return Kernel(lambda: torch.add(tb, tc, alpha=_TRIAD_SCALAR, out=ta), sync,
                  f"torch.add(b, c, alpha=q, out=a) (a = b + q*c) on {device}", "float64", 8)


def cache_flusher(nbytes: int) -> Callable[[], object]:
    """A callable that writes ``nbytes`` of fresh data, evicting operands from CPU caches."""
    import numpy as np

    check_bytes(nbytes, "measure: the cache flush buffer (--cold)")
    junk = np.zeros(max(nbytes // 8, 1))

    def flush() -> None:
        np.add(junk, 1.0, out=junk)
    return flush

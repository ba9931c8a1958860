"""A measured machine as a chip file in the shipped TOML format, every figure with its source.

The file loads with ``symroof.hardware.load(path)``, so ``--hardware FILE.toml`` works
with every command. Measured figures are never written into the package's own hardware
directory: the shipped files hold published specs, each with its citation.
"""

from __future__ import annotations

import json
import os
import re
import tomllib
from decimal import Decimal
from pathlib import Path
from typing import Any

from symroof import hardware
from symroof.errors import SymroofError
from symroof.hardware import HardwareSpec
from symroof.hardware.spec import parse_spec
from symroof.measure.machine import Bandwidth, GemmPeak, Machine
from symroof.measure.timing import Timing
from symroof.hardware import PRECISIONS

__all__ = ["chip_name", "chip_table", "chip_toml", "machine_spec", "write_chip_file",
           "shipped_hardware_dir", "check_chip_path", "decimal_text"]

_SIG = 6      # significant digits written: far below any measurement's noise


def decimal_text(value: float) -> str:
    """``value`` to 6 significant digits as a plain decimal string (no exponent).

    >>> decimal_text(122.832635), decimal_text(1234567.0), decimal_text(0.000123456789)
    ('122.833', '1234570', '0.000123457')
    """
    return format(Decimal(f"{value:.{_SIG}g}"), "f")


def chip_name(machine: Machine) -> str:
    """``measured-<host>``, the host name lowered to letters, digits and dashes."""
    slug = re.sub(r"[^a-z0-9]+", "-", machine.host.hostname.lower()).strip("-") or "host"
    return f"measured-{slug}"


def _when(m: Machine) -> str:
    h = m.host
    return (f"measured by symroof.measure on host {h.hostname!r} ({m.device_name}, "
            f"{h.logical_cpus} logical CPUs, {h.platform}) on {h.date}")


def _timing(t: Timing) -> str:
    return (f"best of {len(t.times_s)} repetitions of {t.inner} call(s) each after "
            f"{t.warmup} warm-up call(s) over {t.warmup_s:.2f} s, clock {t.clock}, spread "
            f"max/min {t.spread:.3f}")


def _library(m: Machine, lib: str, threads: int | None) -> str:
    n = "?" if threads is None else str(threads)
    if lib == "numpy" and m.blas is not None:
        b = m.blas
        env = "; ".join(f"{k}={v}" for k, v in b.environment)
        return (f"numpy {m.host.numpy} with {b.library} (kernel {b.kernel or 'unknown'}, "
                f"{n} threads{'; ' + env if env else ''})")
    if lib == "torch" and m.torch is not None:
        t = m.torch
        return (f"torch {t.version} (BLAS_INFO {t.blas}, CPU capability {t.cpu_capability}, "
                f"{n} threads)" if m.device == "cpu" else f"torch {t.version} on {m.device_name}")
    return f"{lib} ({n} threads)"


def _peak_source(m: Machine, unit_word: str) -> str:
    parts = []
    for prec in m.precisions():
        p: GemmPeak = m.peak(prec)
        parts.append(f"{prec} {decimal_text(p.flop_per_s / 1e9)} GFLOP/s by {p.method} "
                     f"n={p.n} with {_library(m, p.library, p.threads)}, {_timing(p.timing)}")
    others = [p for p in m.peaks if p is not m.peak(p.precision)]
    also = ("; also measured, slower: " + ", ".join(
        f"{p.precision} {p.library} {decimal_text(p.flop_per_s / 1e9)} GFLOP/s" for p in others)
        if others else "")
    return (f"{_when(m)}: square GEMMs C = A @ B of n x n operands, 2n^3 FLOPs (a "
            f"multiply-accumulate = 2), the fastest library per precision, run on the "
            f"{unit_word}: " + "; ".join(parts) + also)


def _bandwidth_source(m: Machine) -> str:
    best: Bandwidth = m.bandwidth()
    mib = best.elements * best.itemsize / 2**20
    cached = sum(c.size_bytes for c in m.caches if c.kind != "Instruction")
    caches = f"; the caches the OS reports total {cached} bytes" if cached else ""
    others = ", ".join(f"{b.library} {b.kernel} {decimal_text(b.bytes_per_s / 1e9)} GB/s "
                       f"({b.threads} thread(s))" for b in m.bandwidths if b is not best)
    return (f"{_when(m)}: STREAM-style {best.kernel} by {best.method} over float64 arrays of "
            f"{best.elements} elements ({mib:.1f} MiB each{caches}), "
            f"{best.arrays * best.itemsize} bytes counted per element ({best.arrays} arrays; "
            f"STREAM's convention: write-allocate traffic not counted), "
            f"{_library(m, best.library, best.threads)}, {_timing(best.timing)}; the best of "
            f"copy (16 bytes/element) and triad (24 bytes/element); others: {others or 'none'}")


def chip_table(machine: Machine, *, name: str | None = None) -> dict[str, Any]:
    """The chip file as a TOML-shaped mapping (what ``chip_toml`` writes)."""
    if not machine.peaks or not machine.bandwidths:
        raise SymroofError("measured machine: a chip file needs at least one peak and one "
                           "bandwidth")
    unit = "vector" if machine.device == "cpu" else "matrix"
    rate, scale = ("gflops", 1e9) if machine.device == "cpu" else ("tflops", 1e12)
    peaks: dict[str, Any] = {f"{p}_{rate}": decimal_text(machine.peak(p).flop_per_s / scale)
                             for p in machine.precisions()}
    peaks["source"] = _peak_source(machine, "CPU's vector (SIMD) units" if unit == "vector"
                                   else "GPU (tensor cores where the precision has them)")
    main = "dram" if machine.device == "cpu" else "device_memory"
    memory: dict[str, Any] = {main: {
        "bandwidth_gb_per_s": decimal_text(machine.bandwidth().bytes_per_s / 1e9),
        **({"capacity_b": machine.memory_bytes} if machine.memory_bytes else {}),
        "source": _bandwidth_source(machine) + (
            "; capacity: physical memory, os.sysconf SC_PAGE_SIZE x SC_PHYS_PAGES"
            if machine.device == "cpu" else "; capacity: torch.cuda total_memory")}}
    for c in machine.caches:
        if c.kind == "Instruction":
            continue
        memory[f"l{c.level}{'d' if c.kind == 'Data' else ''}"] = {
            "capacity_b": c.size_bytes,
            "source": f"read on host {machine.host.hostname!r} on {machine.host.date} from "
                      f"{c.source} ({c.instances} instance(s) together)"}
    return {
        "name": name or chip_name(machine),
        "display_name": f"Measured: {machine.device_name} on {machine.host.hostname} "
                        f"({machine.host.date})",
        "ops_per_mac": 2,
        "main_memory": main,
        "notes": "Measured with symroof.measure, not a vendor specification: peaks are the "
                 "best GEMM rates reached, bandwidth the best STREAM rate; re-measure rather "
                 "than edit." + ("" if not machine.warnings else
                                 " Warnings: " + " | ".join(machine.warnings)),
        "peak": {unit: peaks},
        "memory": memory,
    }


def machine_spec(machine: Machine, *, name: str | None = None) -> HardwareSpec:
    """The measured machine as a HardwareSpec, exactly as its chip file would load."""
    return parse_spec(chip_table(machine, name=name), f"measured {chip_name(machine)}")


def chip_toml(machine: Machine, *, name: str | None = None) -> str:
    """The chip file's text (TOML), figures rounded to 6 significant digits."""
    table = chip_table(machine, name=name)
    head = ["# Measured by symroof.measure, not a vendor spec sheet; every figure's source",
            "# says how and when. Precisions measured here: "
            + ", ".join(p for p in PRECISIONS if p in machine.precisions()) + "."]
    return "\n".join(head + _emit(table, ())) + "\n"


def _emit(table: dict[str, Any], path: tuple[str, ...]) -> list[str]:
    lines = [f"{k} = {_value(v)}" for k, v in table.items() if not isinstance(v, dict)]
    for k, v in table.items():
        if not isinstance(v, dict):
            continue
        sub = path + (k,)
        if any(not isinstance(x, dict) for x in v.values()):
            lines += ["", f"[{'.'.join(sub)}]"]
        lines += _emit(v, sub)
    return lines


def _value(v: object) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)    # a JSON string is a TOML basic string
    raise SymroofError(f"chip file: cannot write {type(v).__name__} {v!r} as TOML")


def shipped_hardware_dir() -> Path:
    """The package's own hardware directory (published specs only)."""

    return Path(hardware.__file__).resolve().parent


def check_chip_path(path: str | os.PathLike[str], *, overwrite: bool = False,
                    flag: str = "overwrite=True") -> Path:
    """Where a chip file may be written (checked before measuring): a ``.toml`` name,
    outside the package's hardware directory, in a folder that exists or can be made,
    not an existing file unless ``overwrite`` (``flag`` names how to ask for that)."""
    target = Path(os.fspath(path)).expanduser().resolve()
    if target.suffix != ".toml":
        raise SymroofError(f"{os.fspath(path)}: a chip file's name must end in .toml")
    shipped = shipped_hardware_dir()
    if target.is_relative_to(shipped):
        raise SymroofError(f"{os.fspath(path)}: refusing to write measured figures into "
                           f"symroof's shipped hardware directory ({shipped}); write the file "
                           f"elsewhere and pass --hardware FILE.toml")
    if target.is_dir():
        raise SymroofError(f"{os.fspath(path)}: a folder, not a file")
    if (target.exists() or target.is_symlink()) and not overwrite:
        raise SymroofError(f"{os.fspath(path)}: file exists; pass {flag} to replace it")
    parent = next((p for p in target.parents if p.exists()), None)
    if parent is None or not parent.is_dir() or not os.access(parent, os.W_OK):
        raise SymroofError(f"{os.fspath(path)}: cannot write there ({parent} is not a "
                           "writable folder)")
    return target


def write_chip_file(machine: Machine, path: str | os.PathLike[str], *, name: str | None = None,
                    overwrite: bool = False) -> Path:
    """Write the measured chip file to ``path`` (a ``.toml`` file outside the package).

    Refuses the package's hardware directory (measured figures never enter a shipped
    chip file) and an existing file unless ``overwrite``. The text is checked to load
    before it is moved into place.
    """
    target = check_chip_path(path, overwrite=overwrite)
    text = chip_toml(machine, name=name)

    parse_spec(tomllib.loads(text), os.fspath(path))     # never leave an unloadable file
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target, "w" if overwrite else "x", encoding="utf-8") as fh:  # "x": no clobbering
        fh.write(text)
    return target

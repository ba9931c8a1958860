"""Predicted against measured: an empirical roofline of the machine at hand.

``measure_machine`` times GEMM peaks per precision and STREAM copy and triad, and
``write_chip_file`` turns the result into a chip file that ``symroof.hardware.load``
reads (every figure's source says how and when it was measured). ``measure_gemm``,
``measure_decode`` and ``measure_prefill`` put measured times beside symroof's roofline
bounds on that machine or a named chip. Every function returns a frozen record; the
``present`` layer formats them. PyTorch and transformers are optional, imported lazily.
"""

from __future__ import annotations

from symroof.measure.chipfile import (chip_name, chip_table, chip_toml, machine_spec,
                                      shipped_hardware_dir, write_chip_file)
from symroof.measure.gemm import (Crossing, GemmRow, GemmSweep, first_crossing, m_sweep,
                                  measure_gemm, target_spec)
from symroof.measure.machine import (Bandwidth, GemmPeak, Machine, measure_bandwidth,
                                     measure_machine, measure_peak)
from symroof.measure.model import ModelRow, ModelRun, build_model, measure_decode, measure_prefill
from symroof.measure.probe import (BlasInfo, CacheLevel, HostInfo, Load, LoadMeter, TorchInfo,
                                   blas_info, host_info)
from symroof.measure.timing import CLOCK, SPREAD_WARN, Timing, time_call

__all__ = [
    "measure_machine", "measure_peak", "measure_bandwidth", "Machine", "GemmPeak", "Bandwidth",
    "write_chip_file", "chip_toml", "chip_table", "chip_name", "machine_spec",
    "shipped_hardware_dir",
    "measure_gemm", "first_crossing", "m_sweep", "target_spec", "GemmSweep", "GemmRow", "Crossing",
    "measure_decode", "measure_prefill", "build_model", "ModelRun", "ModelRow",
    "host_info", "blas_info", "HostInfo", "BlasInfo", "TorchInfo", "CacheLevel", "Load",
    "LoadMeter",
    "time_call", "Timing", "CLOCK", "SPREAD_WARN",
]

"""symroof.measure: the empirical roofline of this machine and predicted-vs-measured tables.

Sizes are small (seconds in all) and no test asserts a time: only that measured figures
are positive and finite, consistent with each other (copy against triad, achieved against
the peak), that every derived column is what it says (ratio = measured / bound), and that
the chip file round-trips. Comparisons of one measurement with another are skipped, with
the reason, when other processes kept the CPUs busy meanwhile.
"""

from __future__ import annotations

import importlib.util
import inspect
import math
import sys
import tomllib

import pytest
import sympy as sp

from symroof import hardware
from symroof.measure import timing
from symroof.errors import SymroofError
from symroof.measure import (SPREAD_WARN, LoadMeter, Timing, blas_info, chip_toml,
                             first_crossing, m_sweep, machine_spec, measure_decode,
                             measure_gemm, measure_machine, measure_prefill,
                             shipped_hardware_dir, time_call, write_chip_file)
from symroof.measure.chipfile import decimal_text

N = 384                                   # the peak's GEMM size: 2 * 384^3 = 113 MFLOP
TINY_LLAMA = {"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4,
              "num_key_value_heads": 2, "intermediate_size": 128, "num_hidden_layers": 2,
              "vocab_size": 128, "max_position_embeddings": 128}
HAVE_MODEL_STACK = all(importlib.util.find_spec(m) for m in ("torch", "transformers"))


def positive_finite(x: float) -> bool:
    return isinstance(x, float) and math.isfinite(x) and x > 0


@pytest.fixture(scope="module")
def machine():
    # 2^21 float64 values = 16 MiB per array: small for a test, so not a memory figure
    return measure_machine(gemm_size=N, stream_elements=1 << 21, reps=3, stream_reps=5,
                           warmup_s=0.1)


def quiet(*records) -> None:
    """Skip a comparison between measurements taken while the machine was busy."""
    for r in records:
        if r.load is not None and r.load.warning:
            pytest.skip(f"comparison skipped: {r.load.warning}")


# --- pure parts -------------------------------------------------------------------------

def test_timing_summary_and_spread_warning():
    t = Timing.from_times([3e-3, 1e-3, 2e-3], warmup=4, warmup_s=0.5, inner=10)
    assert (t.min_s, t.median_s, t.max_s, t.spread) == (1e-3, 2e-3, 3e-3, 3.0)
    assert t.warning is not None and "3.00x" in t.warning
    # the clock a timing names is the one timing.py calls (time.<CLOCK's name>)
    name = timing.CLOCK.removeprefix("time.")
    assert t.clock == timing.CLOCK and f"time.{name}()" in inspect.getsource(timing)
    assert (t.warmup, t.inner) == (4, 10)
    steady = Timing.from_times([1.0, 1.0 * SPREAD_WARN], warmup=1)
    assert steady.warning is None           # exactly at the threshold: no warning
    with pytest.raises(SymroofError):
        Timing.from_times([1.0, 0.0], warmup=1)


def test_time_call_counts_warmup_and_setup():
    calls: list[str] = []
    t = time_call(lambda: calls.append("run"), warmup=2, reps=3,
                  setup=lambda: calls.append("setup"))
    # with a setup every call (warm-up or timed) is preceded by one: 5 runs, 5 setups
    assert calls.count("run") == 5 and calls.count("setup") == 5
    assert (t.warmup, t.inner, len(t.times_s)) == (2, 1, 3)
    with pytest.raises(SymroofError):
        time_call(lambda: None, reps=0)


def test_first_crossing_exact_on_synthetic_rows():
    ms = [1, 2, 4, 8, 16]
    rates = [1.0, 2.0, 4.0, 8.0, 16.0]                  # rate = M: a memory-bound GEMM
    c = first_crossing(ms, rates, peak=10.0)            # threshold 5
    assert (c.m, c.index, c.threshold, c.fraction) == (8, 3, 5.0, 0.5)
    assert c.m_interpolated == pytest.approx(5.0, rel=1e-12)   # rate = M crosses 5 at M = 5
    assert first_crossing(ms, rates, peak=8.0).m == 4   # reaching exactly 4 counts
    assert first_crossing(ms, rates, peak=100.0) is None
    first = first_crossing(ms, rates, peak=1.0)         # already above at the first row
    assert (first.m, first.index, first.m_interpolated) == (1, 0, 1.0)
    noisy = first_crossing([1, 2, 4], [6.0, 1.0, 7.0], peak=10.0)
    assert noisy.m == 1                                 # the first, not the last, crossing
    assert first_crossing(ms, rates, peak=10.0, fraction=0.8).m == 8
    with pytest.raises(SymroofError):
        first_crossing([1, 2], [1.0], peak=1.0)
    with pytest.raises(SymroofError):
        first_crossing([1], [1.0], peak=0.0)


def test_m_sweep_is_exercise_a():
    shapes = m_sweep(4096)
    assert shapes[0] == (1, 4096, 4096) and shapes[-1] == (4096, 4096, 4096)
    assert [m for m, _, _ in shapes] == [2 ** i for i in range(13)]
    assert m_sweep(2048, m_max=5) == ((1, 2048, 2048), (2, 2048, 2048), (4, 2048, 2048))


def test_decimal_text_has_no_exponent():
    assert decimal_text(1.5e12) == "1500000000000"
    assert decimal_text(3.0e-7) == "0.0000003"


def test_load_meter():
    load = LoadMeter().stop()
    if load is None:
        pytest.skip("no /proc/stat here")
    assert load.wall_s > 0 and load.others >= 0 and load.cpus >= 1


def test_blas_info_says_how_it_was_found():
    info = blas_info()
    assert info.library
    assert "threadpoolctl" in info.via
    if importlib.util.find_spec("threadpoolctl") is None:
        assert "numpy.show_config" in info.via          # the fallback names itself


# --- the machine --------------------------------------------------------------------------

def test_measured_figures_positive_and_finite(machine):
    assert machine.peaks and machine.bandwidths
    assert {"fp64", "fp32"} <= set(machine.precisions())
    for p in machine.peaks:
        assert positive_finite(p.flop_per_s) and p.flops == 2 * N ** 3
        assert positive_finite(p.timing.min_s) and p.timing.min_s <= p.timing.median_s
        assert p.timing.median_s <= p.timing.max_s and p.timing.warmup >= 1
    for b in machine.bandwidths:
        assert positive_finite(b.bytes_per_s)
    assert machine.host.date and machine.host.hostname
    assert machine.peak("fp32").flop_per_s == max(p.flop_per_s for p in machine.peaks
                                                  if p.precision == "fp32")


def test_stream_bytes_follow_streams_convention(machine):
    for b in machine.bandwidths:
        per_element = {"copy": 16, "triad": 24}[b.kernel]   # 2 or 3 float64 arrays
        assert b.bytes == per_element * b.elements and b.itemsize == 8
        assert b.write_allocate_counted is False


def test_copy_bandwidth_within_a_plausible_factor_of_triad(machine):
    quiet(machine)
    for lib in {b.library for b in machine.bandwidths}:
        copy = next(b for b in machine.bandwidths if b.library == lib and b.kernel == "copy")
        triad = next(b for b in machine.bandwidths if b.library == lib and b.kernel == "triad")
        assert 0.25 <= copy.bytes_per_s / triad.bytes_per_s <= 4, lib


def test_chip_file_loads_and_round_trips(machine, tmp_path):
    path = write_chip_file(machine, tmp_path / "here.toml")
    spec = hardware.load(path)
    for p in machine.precisions():
        written = sp.Rational(decimal_text(machine.peak(p).flop_per_s / 1e9)) * 10 ** 9
        assert spec.peak(p) == written                                  # exact
        assert float(spec.peak(p)) == pytest.approx(machine.peak(p).flop_per_s, rel=1e-5)
    assert float(spec.bandwidth()) == pytest.approx(machine.bandwidth().bytes_per_s, rel=1e-5)
    assert spec.capacity() == machine.memory_bytes
    assert spec == machine_spec(machine)        # the in-memory spec is the file's
    for field in ("peak.vector", f"memory.{spec.main_memory}"):
        source = spec.source(field)
        for needle in (machine.host.date, machine.host.hostname, "repetitions",
                       timing.CLOCK.removeprefix("time.")):
            assert needle in source, (field, needle)
    assert machine.blas.library in spec.source("peak.vector")
    assert "write-allocate traffic not counted" in spec.source("memory.dram")
    assert tomllib.loads(chip_toml(machine))["name"] == spec.name


def test_refuses_to_write_into_the_package(machine, tmp_path):
    shipped = shipped_hardware_dir()
    before = sorted(p.name for p in shipped.iterdir())
    for target in (shipped / "measured.toml", shipped / "sub" / "x.toml",
                   shipped / "h100-sxm.toml"):
        with pytest.raises(SymroofError, match="refusing"):
            write_chip_file(machine, target, overwrite=True)
    assert sorted(p.name for p in shipped.iterdir()) == before
    write_chip_file(machine, tmp_path / "m.toml")
    with pytest.raises(SymroofError, match="exists"):
        write_chip_file(machine, tmp_path / "m.toml")
    write_chip_file(machine, tmp_path / "m.toml", overwrite=True)
    with pytest.raises(SymroofError, match=r"\.toml"):
        write_chip_file(machine, tmp_path / "m.txt")


# --- predicted against measured: GEMM -----------------------------------------------------

def test_gemm_rows_carry_the_chart_and_ratio(machine):
    shapes = [(1, N, N), (8, N, N), (N // 12, N, N)]    # all well below the peak's shape
    sweep = measure_gemm(shapes, machine, precision="fp64", reps=3, warmup_s=0.1)
    assert sweep.hardware == machine_spec(machine).name
    assert sweep.peak == machine.peak("fp64").flop_per_s
    for row in sweep.rows:
        assert row.ratio == row.measured_s / row.bound_s
        assert row.measured_s == row.timing.min_s
        assert row.flops == 2 * row.m * row.n * row.k
        assert row.intensity == pytest.approx(row.flops / row.bytes, rel=1e-12)
        assert row.achieved_flop_per_s == row.flops / row.measured_s
        assert row.bound_flop_per_s <= sweep.peak * (1 + 1e-5)      # min(peak, bw * I)
        assert positive_finite(row.achieved_flop_per_s) and row.bound in ("memory", "compute")
    quiet(machine, sweep)
    spread = machine.peak("fp64").timing.spread
    for row in sweep.rows:
        allowed = sweep.peak * max(spread, row.timing.spread)
        assert row.achieved_flop_per_s <= allowed, (row.m, row.achieved_flop_per_s, allowed)


def test_gemm_against_a_named_chip():
    sweep = measure_gemm([(2, 64, 64), (64, 64, 64)], "opteron-x2", precision="fp64",
                         reps=2, warmup_s=0.0, min_rep_s=0.001)
    assert sweep.hardware == "opteron-x2" and sweep.peak == 17.6e9
    assert sweep.bound_crossing is not None        # the bound itself reaches half the peak
    assert all(r.ratio == r.measured_s / r.bound_s for r in sweep.rows)


def test_gemm_refuses_what_numpy_cannot_run():
    with pytest.raises(SymroofError, match="numpy has no 'bf16'"):
        measure_gemm([(1, 8, 8)], "opteron-x2", precision="bf16", library="numpy")
    with pytest.raises(SymroofError, match="device"):
        measure_gemm([(1, 8, 8)], "opteron-x2", precision="fp64", device="tpu")


# --- predicted against measured: a tiny model ---------------------------------------------

def test_decode_and_prefill_on_a_tiny_llama(machine):
    if not HAVE_MODEL_STACK:
        pytest.skip("torch and transformers are not installed (pip install 'symroof[oracle]')")
    dec = measure_decode(TINY_LLAMA, machine, batches=(1, 2), pasts=(4, 16), reps=2,
                         warmup=1, warmup_s=0.05, device="cpu")
    assert [(r.batch, r.past) for r in dec.rows] == [(1, 4), (1, 16), (2, 4), (2, 16)]
    assert dec.params == dec.symroof_params        # the bound counts the same model
    assert dec.device == "cpu" and any("no CUDA device" in n for n in dec.notes)
    pre = measure_prefill(TINY_LLAMA, "h100-sxm", batches=(2,), seqs=(8,), reps=2,
                          warmup=1, warmup_s=0.05, device="cpu")
    assert pre.hardware == "h100-sxm" and pre.rows[0].tokens == 16
    for row in dec.rows + pre.rows:
        assert positive_finite(row.measured_s) and positive_finite(row.bound_s)
        assert row.ratio == row.measured_s / row.bound_s
        assert row.tokens_per_s == row.tokens / row.measured_s
    assert dec.rows[0].bytes < dec.rows[1].bytes   # a longer past reads more KV cache


def test_model_without_torch_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)     # "import torch" now fails
    with pytest.raises(SymroofError, match=r"symroof\[oracle\]"):
        measure_decode(TINY_LLAMA, "h100-sxm", batches=(1,), pasts=(4,))

"""``measure`` refuses what it cannot do before it allocates, loops or measures (issue 28).

Every test sets traps where the work would start (the measurement, a kernel's
allocation, the timed function) and checks the refusal comes first and names the
limit or the flag; nothing here reads the clock.
"""

from __future__ import annotations

import json

import pytest

import symroof.cli.measure as cli_measure
import symroof.measure.gemm as measure_gemm_module
import symroof.measure.machine as machine_module
import symroof.measure.model as model_module
from symroof.budget import BudgetError, limits
from symroof.cli import main
from symroof.errors import SymroofError
from symroof.measure import measure_gemm, measure_machine, time_call
from symroof.measure.limits import MAX_REPS


def _trap(name: str):
    def trap(*args, **kwargs):
        raise AssertionError(f"{name} ran before the refusal")
    return trap


@pytest.fixture
def no_measuring(monkeypatch):
    """Every way the CLI starts measuring fails the test."""
    for name in ("measure_machine", "measure_gemm", "measure_decode", "measure_prefill"):
        monkeypatch.setattr(cli_measure, name, _trap(name))


def test_an_existing_out_file_is_refused_before_measuring(tmp_path, capsys, no_measuring):
    out = tmp_path / "here.toml"
    out.write_text("mine")
    assert main(["measure", "machine", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"{out}: file exists; pass --force to replace it" in err
    assert out.read_text() == "mine"


def test_out_is_checked_before_measuring(tmp_path, capsys, no_measuring):
    assert main(["measure", "machine", "--out", str(tmp_path / "here.txt")]) == 2
    assert "must end in .toml" in capsys.readouterr().err
    # a folder that can be made is accepted: the (trapped) measurement is what stops it
    with pytest.raises(AssertionError, match="measure_machine ran before the refusal"):
        main(["measure", "machine", "--out", str(tmp_path / "new" / "deeper" / "x.toml")])


def test_an_existing_chart_file_is_refused_before_measuring(tmp_path, capsys, no_measuring):
    chart = tmp_path / "a.svg"
    chart.write_text("<svg/>")
    assert main(["measure", "gemm", "--set", "M=8", "--hardware", "l4", "--chart",
                 str(chart)]) == 2
    assert f"--chart {chart}: file exists; pass --force to replace it" in \
        capsys.readouterr().err


@pytest.mark.parametrize("argv, fragment", [
    (["measure", "gemm", "--reps", str(MAX_REPS + 1), "--hardware", "l4"],
     f"--reps: expected an integer from 1 to {MAX_REPS}"),
    (["measure", "gemm", "--set", "M=65536", "--set", "N=65536", "--set", "K=65536",
      "--hardware", "l4"], "needs 49,152 MiB of operands, more than the memory limit"),
    (["measure", "gemm", "--set", "M=" + ",".join(map(str, range(1, 23))),
      "--set", "N=" + ",".join(map(str, range(1, 23))),
      "--set", "K=" + ",".join(map(str, range(1, 23))), "--hardware", "l4"],
     "10,648 rows (M 22 x N 22 x K 22)"),
    (["measure", "decode", "--out", "x.toml", "--model", "c.json"],
     "--out: measure decode does not use it"),
    (["measure", "machine", "--chart", "x.svg"], "--chart: measure machine does not use it"),
    (["measure", "machine", "--cold"], "--cold: measure machine does not use it"),
])
def test_the_command_line_is_refused_before_measuring(argv, fragment, capsys, no_measuring):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert fragment in err and "ran before the refusal" not in err


def test_gemm_shapes_are_checked_before_the_first_is_timed(monkeypatch):
    monkeypatch.setattr(measure_gemm_module, "gemm_kernel", _trap("gemm_kernel"))
    with pytest.raises(BudgetError) as err:
        measure_gemm([(8, 8, 8), (65536, 65536, 65536)], "l4")
    assert err.value.limit == "memory_mib"
    assert "M=65536 N=65536 K=65536 fp32: needs 49,152 MiB" in str(err.value)
    assert "--budget memory_mib=N" in str(err.value)
    with limits(memory_mib=64):   # the budget is the one the command line sets
        with pytest.raises(BudgetError, match="memory limit of 64 MiB"):
            measure_gemm([(4096, 4096, 4096)], "l4")


def test_repetitions_are_bounded_before_the_first_call():
    calls = []
    for reps, warmup in ((10**9, 1), (5, 10**9), (0, 1), (True, 1)):
        with pytest.raises(SymroofError):
            time_call(lambda: calls.append(1), reps=reps, warmup=warmup)
    with pytest.raises(SymroofError, match="warmup_s must be from 0 to 60"):
        time_call(lambda: calls.append(1), warmup_s=float("inf"))
    assert calls == []
    with pytest.raises(SymroofError, match=f"more than the limit of {MAX_REPS}"):
        measure_gemm([(8, 8, 8)], "l4", reps=MAX_REPS + 1)


def test_measure_machine_checks_its_sizes_before_measuring(monkeypatch):
    monkeypatch.setattr(machine_module, "measure_peak", _trap("measure_peak"))
    monkeypatch.setattr(machine_module, "measure_bandwidth", _trap("measure_bandwidth"))
    with limits(memory_mib=16):   # sizes far below any machine's memory: the budget refuses
        with pytest.raises(BudgetError, match="measure gemm M=1024 N=1024 K=1024 fp64: needs "
                           "24 MiB of operands, more than the memory limit of 16 MiB"):
            measure_machine(gemm_size=1024, stream_elements=1024, libraries=["numpy"])
        with pytest.raises(BudgetError, match="STREAM over 3 arrays of 1048576 float64 values: "
                           "needs 24 MiB"):
            measure_machine(gemm_size=8, stream_elements=2**20, libraries=["numpy"])
    with pytest.raises(SymroofError, match="repetitions"):
        measure_machine(gemm_size=8, stream_reps=10**6, libraries=["numpy"])


def test_a_model_run_over_the_memory_budget_is_refused_before_the_model_is_built(
        monkeypatch, tmp_path):
    pytest.importorskip("transformers")
    monkeypatch.setattr(model_module, "build_model", _trap("build_model"))
    config = {"model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336,
              "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
              "vocab_size": 128256, "max_position_embeddings": 8192}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    with limits(memory_mib=1024):   # 8B parameters at fp32 are 30 GiB before any token
        with pytest.raises(BudgetError, match=r"measure prefill batch=8 seq=1024 fp32 .*MiB"):
            model_module.measure_prefill(path, "l4", batches=(8,), seqs=(1024,),
                                         device="cpu")
    with pytest.raises(SymroofError, match="repetitions"):
        model_module.measure_decode(path, "l4", batches=(1,), pasts=(8,), reps=10**6,
                                    device="cpu")

"""``symroof measure``: the CLI over symroof.measure (structure and physics, never a time)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

import symroof.cli.measure as cli_measure
from symroof import hardware
from symroof.cli import main
from symroof.measure import measure_machine


def test_measure_gemm_against_a_named_chip_gives_the_ratio_column(tmp_path, capsys):
    chart = tmp_path / "a.svg"
    assert main(["measure", "gemm", "--set", "M=1,64", "--set", "N=256", "--set", "K=256",
                 "--hardware", "h100-sxm", "--reps", "2", "--chart", str(chart), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [r["m"] for r in doc["rows"]] == [1, 64]
    for r in doc["rows"]:
        assert r["flops"] == 2 * r["m"] * 256 * 256                     # 2MNK
        assert r["ratio"] == pytest.approx(r["measured_s"] / r["bound_s"], rel=1e-12)
        assert r["bound_s"] > 0 and r["measured_s"] > 0
        # an H100 bound for a CPU run: the measurement cannot beat it
        assert r["ratio"] > 1
    assert doc["bandwidth_bytes_per_s"] == float(hardware.get("h100-sxm").bandwidth())
    assert ET.parse(chart).getroot().tag.endswith("svg")


#: The smallest real measurement of this machine the measure API takes: every library
#: and precision, on 8x8 GEMMs and STREAM arrays of 1,024 values, one repetition and no
#: warm-up (the defaults, n = 2048 and arrays 4x the caches, took 25 to 81 s here).
SMALLEST = dict(gemm_size=8, stream_elements=1024, stream_reps=1, warmup=0, warmup_s=0,
                min_rep_s=0)


def test_measure_machine_writes_a_chip_file_every_command_reads(tmp_path, capsys, monkeypatch):
    calls = []

    def smallest(**kwargs):
        calls.append(kwargs)
        return measure_machine(**{**kwargs, **SMALLEST})
    monkeypatch.setattr(cli_measure, "measure_machine", smallest)
    out = tmp_path / "here.toml"
    assert main(["measure", "machine", "--out", str(out), "--reps", "1"]) == 0
    assert calls == [{"reps": 1}]            # the CLI's own call, shrunk here only
    text = capsys.readouterr().out
    assert "peak" in text and "copy" in text and f"wrote {out}" in text
    spec = hardware.load(out)
    assert spec.bandwidth() > 0 and spec.peak("fp64") > 0
    assert main(["measure", "gemm", "--set", "M=8", "--set", "N=64", "--set", "K=64",
                 "--hardware", str(out), "--precision", "fp64", "--reps", "1"]) == 0


@pytest.mark.parametrize("argv, fragment", [
    (["measure", "decode"], "--model config.json is required"),
    (["measure", "gemm", "--set", "B=2", "--hardware", "l4"], "does not use B"),
    (["measure", "gemm", "--reps", "0"], "--reps"),
])
def test_measure_bad_input_is_one_line(argv, fragment, capsys):
    assert main(argv) == 2
    assert fragment in capsys.readouterr().err

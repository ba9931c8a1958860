"""``symroof measure``: the CLI over symroof.measure (structure and physics, never a time)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from symroof import hardware
from symroof.cli import main


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


def test_measure_machine_writes_a_chip_file_every_command_reads(tmp_path, capsys):
    out = tmp_path / "here.toml"
    assert main(["measure", "machine", "--out", str(out), "--reps", "1"]) == 0
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

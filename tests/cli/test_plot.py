"""``symroof plot``: the chart's numbers come from the engine and the chip file."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest

from symroof.cli import main


def test_roofline_svg_has_the_chips_roofs_and_a_point_per_row(tmp_path, capsys):
    out = tmp_path / "r.svg"
    assert main(["plot", "roofline", "gemm", "--hardware", "h100-sxm", "--precision", "bf16,fp8",
                 "--set", "M=256,8192", "--set", "N=8192", "--set", "K=8192",
                 "--out", str(out)]) == 0
    svg = out.read_text(encoding="utf-8")
    assert ET.fromstring(svg).tag.endswith("svg")
    # ridges from the chip file: 989.4/3.35 = 295 and 1978.9/3.35 = 591 (bf16, fp8 matrix)
    assert ">295<" in svg and ">591<" in svg
    assert "M=256 N=8192 K=8192" in svg and "M=8192 N=8192 K=8192" in svg
    assert capsys.readouterr().out.strip() == f"wrote {out}"


def test_crossover_pgfplots_samples_the_derived_curve(tmp_path):
    out = tmp_path / "c.tex"
    assert main(["plot", "crossover", "decode", "--model", "llama-3-70b", "--set", "b=2",
                 "--from", "1", "--to", "512", "--out", str(out)]) == 0
    tex = out.read_text(encoding="utf-8")
    assert "\\begin{axis}" in tex and "xmode=log" in tex
    coords = re.findall(r"\(([-0-9.e]+),([-0-9.e]+)\)", tex)
    first = [(float(x), float(y)) for x, y in coords][0]
    # S = (B + 8484257)/(20 B) from Llama-3-70B's graph (its embedding is a gather)
    assert first[0] == pytest.approx(1.0)
    assert first[1] == pytest.approx((1 + 8484257) / 20, rel=1e-6)


@pytest.mark.parametrize("argv, fragment", [
    (["plot", "roofline", "--out", "x.png", "--hardware", "h100-sxm"], "expected a .svg or .tex"),
    (["plot", "roofline", "--out", "x.svg"], "--hardware is required"),
    (["plot", "roofline", "--out", "x.svg", "--hardware", "l4", "--precision", "fp64"],
     "no peak for fp64"),
    (["plot", "crossover", "--out", "x.svg"], "name a workload"),
    (["plot", "crossover", "decode", "--model", "llama-3-70b", "--lhs", "F_attention",
      "--rhs", "Q_weight", "--out", "x.svg"], "give values for b"),   # b cancels in KV = W
])
def test_plot_bad_input_is_one_line(argv, fragment, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert fragment in err and err.count("\n") == 1

"""Roofline and crossover charts from templates (symroof/present/charts.py).

Pixel positions are recomputed here from the log mapping and the plot area the SVG
declares, never taken from the module's own helpers. The example chip is H100-like:
HBM 3.35 TB/s; bf16 matrix 989.4, fp8 matrix 1978.9, fp32 vector 66.9 TFLOP/s.
"""

from __future__ import annotations

import math
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from symroof.errors import SymroofError
from symroof.present.charts import (CurveChart, Mark, Palette, Point, Roof, RooflineChart,
                                    Series, Style, curve_pgfplots, curve_svg, quantity,
                                    roofline_pgfplots, roofline_svg, si)

REPO = Path(__file__).resolve().parents[2]
SVG = "{http://www.w3.org/2000/svg}"
HBM, BF16, FP8, FP32 = 3.35e12, 989.4e12, 1978.9e12, 66.9e12
NASTY = "W_q 50% R&D <x>"
H100 = RooflineChart(
    "H100 SXM", roofs=[("HBM", HBM)],
    ceilings=[("bf16 matrix", BF16), ("fp8 matrix", FP8), ("fp32 vector", FP32)],
    points=[("GEMM 8192^3", 2731.0, BF16, "bound"), ("decode B=1", 1.0, HBM * 1.0),
            ("decode B=64", 18.0, HBM * 18), ("ReLU", 0.25, HBM * 0.25, "bound")])
BS = [2 ** (k / 4) for k in range(37)]                   # B from 1 to 512
CROSSOVER = CurveChart("Llama-3-70B: KV bytes = weight bytes", "batch B", "context S",
                       [("S B = 430,626", BS, [430626 / b for b in BS])],
                       marks=[("B=64, S=6,729", 64, 430626 / 64)])


def parse(svg: str) -> ET.Element:
    root = ET.fromstring(svg)
    assert root.tag == f"{SVG}svg"
    return root


def plot_area(root: ET.Element) -> tuple[float, float, float, float]:
    (rect,) = [r for r in root.iter(f"{SVG}rect") if r.get("class") == "plot-area"]
    return tuple(float(rect.get(k)) for k in ("x", "y", "width", "height"))  # type: ignore


def expected_pixel(root: ET.Element, x: float, y: float, xr: tuple[float, float],
                   yr: tuple[float, float]) -> tuple[float, float]:
    """Where the log-log mapping puts (x, y): left edge at xr[0], bottom edge at yr[0]."""
    left, top, width, height = plot_area(root)
    ux = (math.log10(x) - math.log10(xr[0])) / (math.log10(xr[1]) - math.log10(xr[0]))
    uy = (math.log10(y) - math.log10(yr[0])) / (math.log10(yr[1]) - math.log10(yr[0]))
    return left + ux * width, top + (1 - uy) * height


def translated(root: ET.Element, cls: str) -> list[tuple[float, float]]:
    out = []
    for g in root.iter(f"{SVG}g"):
        if g.get("class") == cls:
            match = re.fullmatch(r"translate\(([-\d.]+),([-\d.]+)\)", g.get("transform", ""))
            x, y = match.groups()  # type: ignore[union-attr]
            out.append((float(x), float(y)))
    return out


def polylines(root: ET.Element, cls: str) -> list[list[tuple[float, float]]]:
    return [[tuple(map(float, p.split(","))) for p in line.get("points").split()]  # type: ignore
            for line in root.iter(f"{SVG}polyline") if line.get("class") == cls]


def texts(root: ET.Element, cls: str) -> list[str]:
    return [t.text or "" for t in root.iter(f"{SVG}text") if t.get("class") == cls]


def option(tex: str, key: str) -> float:
    return float(re.search(rf"\b{key}=([-\d.e]+)", tex).group(1))  # type: ignore[union-attr]


def test_svg_is_a_standalone_svg_document() -> None:
    for svg in (roofline_svg(H100), curve_svg(CROSSOVER)):
        assert svg.startswith('<?xml version="1.0" encoding="UTF-8" standalone="no"?>\n')
        root = parse(svg)
        assert (root.get("version"), root.get("width"), root.get("height"),
                root.get("viewBox")) == ("1.1", "640", "400", "0 0 640 400")
        assert root[0].tag == f"{SVG}title" and root[0].text
        labelled = [g for g in root.iter(f"{SVG}g") if g.get("font-family")]
        assert labelled and "sans-serif" in labelled[0].get("font-family", "")
        assert all(t in labelled[0].iter() for t in root.iter(f"{SVG}text"))
    root = parse(roofline_svg(H100, width=960, height=600))
    assert (root.get("width"), root.get("viewBox")) == ("960", "0 0 960 600")


def test_points_land_where_the_log_mapping_puts_them() -> None:
    xr, yr = (0.1, 1e4), (1e11, 1e16)
    chart = RooflineChart("H100", [("HBM", HBM)], [("bf16", BF16)],
                          [("decode B=64", 18.0, 6.03e13), ("measured", 300.0, 5e14, "measured")],
                          x_range=xr, y_range=yr)
    root = parse(roofline_svg(chart))
    (bound,), (measured,) = translated(root, "point bound"), translated(root, "point measured")
    assert bound == pytest.approx(expected_pixel(root, 18.0, 6.03e13, xr, yr), abs=0.006)
    assert measured == pytest.approx(expected_pixel(root, 300.0, 5e14, xr, yr), abs=0.006)
    # decades are evenly spaced: 1 FLOP/B sits one third of the way from 0.1 to 1e4... in log
    left, _, width, _ = plot_area(root)
    assert expected_pixel(root, 1.0, 1e12, xr, yr)[0] == pytest.approx(left + width / 5)
    mark = (64, 430626 / 64)
    chart2 = CurveChart("c", "B", "S", [("S B = 430,626", BS, [430626 / b for b in BS])],
                        marks=[("B=64", *mark)], x_range=(1, 1000), y_range=(100, 1e6))
    root2 = parse(curve_svg(chart2))
    assert translated(root2, "mark derived") == [pytest.approx(
        expected_pixel(root2, *mark, (1, 1000), (100, 1e6)), abs=0.006)]


def test_roof_rises_to_its_ridge_and_ceilings_start_at_theirs() -> None:
    root = parse(roofline_svg(H100))
    xr, yr = (0.25 / 10, 2731.0 * 10), (HBM * 0.25 / 10, FP8 * 10)   # a decade of margin
    (roof,) = polylines(root, "roof")
    assert roof[-1] == pytest.approx(expected_pixel(root, FP8 / HBM, FP8, xr, yr), abs=0.006)
    assert roof[0] == pytest.approx(expected_pixel(root, xr[0], HBM * xr[0], xr, yr), abs=0.006)
    ceilings = polylines(root, "ceiling")
    right = plot_area(root)[0] + plot_area(root)[2]
    for line, peak in zip(ceilings, (BF16, FP8, FP32)):
        assert line[0] == pytest.approx(expected_pixel(root, peak / HBM, peak, xr, yr), abs=0.006)
        assert line[-1][0] == pytest.approx(right)
    ridges = translated(root, "ridge")
    assert ridges == [pytest.approx(expected_pixel(root, p / HBM, p, xr, yr), abs=0.006)
                      for p in (BF16, FP8, FP32)]
    assert texts(root, "ridge-label") == ["295", "591", "20"]     # 989.4/3.35 = 295.3 FLOP/B
    tex = roofline_pgfplots(H100)
    assert (option(tex, "xmin"), option(tex, "xmax")) == pytest.approx(xr, rel=1e-6)
    assert (option(tex, "ymin"), option(tex, "ymax")) == pytest.approx(yr, rel=1e-6)
    roof_tex = re.search(r"draw=sr1f4e79.*coordinates \{(.*)\};", tex).group(1)  # type: ignore
    end = re.findall(r"\(([-\d.e]+),([-\d.e]+)\)", roof_tex)[-1]
    assert tuple(map(float, end)) == pytest.approx((FP8 / HBM, FP8), rel=1e-6)


def test_ceilings_start_on_the_fastest_roof() -> None:
    chart = RooflineChart("two levels", [("HBM", 5.3e12), ("cache", 17.2e12)],
                          [("bf16", 1307.4e12), ("fp16", 1307.4e12), ("fp32 vector", 163.4e12)])
    root = parse(roofline_svg(chart))
    xr = (163.4e12 / 17.2e12 / 10, 1307.4e12 / 5.3e12 * 10)     # lowest and highest ridges
    yr = (163.4e12 / 10, 1307.4e12 * 10)
    starts = [line[0] for line in polylines(root, "ceiling")]
    assert starts == [pytest.approx(expected_pixel(root, p / 17.2e12, p, xr, yr), abs=0.006)
                      for p in (1307.4e12, 163.4e12)]     # equal peaks share one line
    assert texts(root, "ceiling-label")[0] == "bf16, fp16 1.31 PFLOP/s"
    assert len(translated(root, "ridge")) == 4
    assert [t.rsplit(" ", 2)[0] for t in texts(root, "roof-label")] == ["HBM", "cache"]


def test_ticks_are_decades_with_si_labels() -> None:
    root = parse(roofline_svg(H100))
    assert texts(root, "x-tick") == ["0.1", "1", "10", "100", "1 k", "10 k"]
    assert texts(root, "y-tick") == ["100 G", "1 T", "10 T", "100 T", "1 P", "10 P"]
    tex = roofline_pgfplots(H100)
    assert "ytick={1e11,1e12,1e13,1e14,1e15,1e16}" in tex
    assert "yticklabels={{100 G},{1 T},{10 T},{100 T},{1 P},{10 P}}" in tex
    linear = CurveChart("lin", "B", "S", [("c", BS, [430626 / b for b in BS])], log_y=False,
                        y_range=(0, 450000))
    root = parse(curve_svg(linear))
    assert texts(root, "y-tick") == ["0", "100 k", "200 k", "300 k", "400 k"]
    assert "ymode=normal" in curve_pgfplots(linear) and "xmode=log" in curve_pgfplots(linear)


@pytest.mark.parametrize("value, text", [
    (989.4e12, "989 T"), (1978.9e12, "1.98 P"), (66.9e12, "66.9 T"), (1e12, "1 T"),
    (1e13, "10 T"),               # kerncraft's prefix table printed 1e13 as 1 T
    (999.6, "1 k"), (1000, "1 k"), (0.25, "0.25"), (20.0, "20"), (-2e5, "-200 k"), (0, "0")])
def test_si_prefixes(value: float, text: str) -> None:
    assert si(value) == text


def test_quantity_units() -> None:
    assert quantity(3.35e12, "B/s") == "3.35 TB/s"
    assert quantity(500, "B/s") == "500 B/s"
    assert quantity(989.4e12, "FLOP/s") == "989 TFLOP/s"


UNICODE = RooflineChart("B \u00d7 S \u2248 430k,\nmore", [("HBM", HBM)], [("bf16", BF16)])


def escaping_charts() -> tuple[RooflineChart, CurveChart]:
    roof = RooflineChart(NASTY, [(NASTY, HBM)], [(NASTY, BF16)],
                         [(NASTY, 10.0, HBM * 10), ("a{b}\\c~d^e$f#g|h", 1000.0, BF16, "measured")])
    curve = CurveChart(NASTY, NASTY, NASTY, [(NASTY, [1, 2, 3], [3, 2, 1])], marks=[(NASTY, 2, 2)])
    return roof, curve


def test_labels_are_escaped_for_svg() -> None:
    roof, curve = escaping_charts()
    for svg in (roofline_svg(roof), curve_svg(curve)):
        assert "<x>" not in svg and "R&D" not in svg and "R&amp;D &lt;x&gt;" in svg
        root = parse(svg)                        # the parser gives back the raw label
        assert root[0].text == NASTY
        assert sum(NASTY in (t.text or "") for t in root.iter(f"{SVG}text")) >= 4


def test_labels_are_escaped_for_latex() -> None:
    roof, curve = escaping_charts()
    for tex in (roofline_pgfplots(roof), curve_pgfplots(curve)):
        assert NASTY not in tex
        assert tex.count(r"W\_q 50\% R\&D \textless{}x\textgreater{}") >= 4
    assert (r"a\{b\}\textbackslash{}c\textasciitilde{}$d^{e}$\$f\#g\textbar{}h"
            in roofline_pgfplots(roof))
    assert r"title={B $\times$ S $\approx$ 430k, more}" in roofline_pgfplots(UNICODE)


def test_pgfplots_is_a_picture_without_preamble() -> None:
    for tex in (roofline_pgfplots(H100), curve_pgfplots(CROSSOVER)):
        assert tex.startswith("\\begin{tikzpicture}\n") and tex.endswith("\\end{tikzpicture}\n")
        assert "\\begin{axis}[" in tex and "\\end{axis}" in tex
        assert "\\documentclass" not in tex and "\\usepackage" not in tex
    assert "xmode=log, ymode=log" in roofline_pgfplots(H100)
    assert "\\addlegendentry{S B = 430,626}" in curve_pgfplots(CROSSOVER)


def test_roofs_and_ceilings_differ_in_dash_pattern() -> None:
    chart = RooflineChart("many", [("a", 1e12), ("b", 2e12), ("c", 4e12)],
                          [("p", 1e14), ("q", 2e14), ("r", 4e14), ("s", 8e14)])
    root = parse(roofline_svg(chart))
    dashes = [line.get("stroke-dasharray", "solid") for line in root.iter(f"{SVG}polyline")]
    assert len(dashes) == 7 and len(set(dashes)) == 7        # legible in greyscale


def test_user_ranges_clip_lines_and_drop_outside_points() -> None:
    chart = CurveChart("clip", "B", "S", [("c", BS, [430626 / b for b in BS])],
                       marks=[("in", 64, 430626 / 64), ("out", 512, 841)],
                       x_range=(2, 100), y_range=(5000, 1e5))
    root = parse(curve_svg(chart))
    left, top, width, height = plot_area(root)
    (line,) = polylines(root, "series")
    assert all(left - 0.01 <= x <= left + width + 0.01 and top - 0.01 <= y <= top + height + 0.01
               for x, y in line)
    # S = 430626/B enters at S = 1e5 (B = 4.31) and leaves at B = 100 (S = 4306 < 5000: B = 86.1)
    ranges = (2, 100), (5000, 1e5)
    assert line[0] == pytest.approx(expected_pixel(root, 4.30626, 1e5, *ranges), abs=0.01)
    assert line[-1] == pytest.approx(expected_pixel(root, 86.1252, 5000, *ranges), abs=0.01)
    assert texts(root, "mark-label") == ["in"]
    assert len([t for t in root.iter(f"{SVG}text") if t.text == "c"]) == 1   # the legend


PROGRAM = """
import sys
sys.path.insert(0, sys.argv[1])
import tests.reports.test_charts as t
from symroof.present import charts as c
print(c.roofline_svg(t.H100) + c.roofline_pgfplots(t.H100) + c.curve_svg(t.CROSSOVER)
      + c.curve_pgfplots(t.CROSSOVER) + c.roofline_svg(t.escaping_charts()[0]), end="")
"""


def test_output_is_byte_identical_across_runs_and_hash_seeds() -> None:
    here = (roofline_svg(H100) + roofline_pgfplots(H100) + curve_svg(CROSSOVER)
            + curve_pgfplots(CROSSOVER) + roofline_svg(escaping_charts()[0]))
    assert here == (roofline_svg(H100) + roofline_pgfplots(H100) + curve_svg(CROSSOVER)
                    + curve_pgfplots(CROSSOVER) + roofline_svg(escaping_charts()[0]))
    for seed in ("1", "4242"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        out = subprocess.run([sys.executable, "-c", PROGRAM, str(REPO)], cwd=REPO, env=env,
                             capture_output=True, text=True, check=True).stdout
        assert out == here


@pytest.mark.parametrize("make, words", [
    (lambda: RooflineChart("t", [], [("bf16", BF16)]), ["roofs", "at least 1"]),
    (lambda: RooflineChart("t", [("HBM", HBM)], []), ["ceilings", "at least 1"]),
    (lambda: RooflineChart("t", [("HBM", -1.0)], [("bf16", BF16)]),
     ["roofs[0]", "'HBM'", "bandwidth_bytes_per_s", "positive"]),
    (lambda: RooflineChart("t", [("HBM", 0)], [("bf16", BF16)]), ["bandwidth_bytes_per_s"]),
    (lambda: RooflineChart("t", [("HBM", HBM)], [("bf16", float("nan"))]),
     ["ceilings[0]", "flop_per_s", "finite"]),
    (lambda: RooflineChart("t", [("HBM", HBM)], [("bf16", BF16)], [("p", float("inf"), 1e12)]),
     ["points[0]", "intensity", "finite"]),
    (lambda: RooflineChart("t", [("HBM", HBM)], [("bf16", BF16)], [("p", 1.0, "1e12")]),  # type: ignore
     ["points[0]", "flop_per_s", "number"]),
    (lambda: RooflineChart("t", [("HBM", True)], [("bf16", BF16)]), ["bandwidth", "number"]),
    (lambda: RooflineChart("t", [("HBM", HBM)], [("bf16", BF16)], [("p", 1.0, 1e12, "guess")]),
     ["points[0]", "kind", "guess"]),
    (lambda: RooflineChart("t", [(3, HBM)], [("bf16", BF16)]),  # type: ignore
     ["roofs[0]", "label"]),
    (lambda: RooflineChart("t", [("HBM", HBM)], [("bf16", BF16)], x_range=(10, 1)), ["x_range"]),
    (lambda: RooflineChart("t", [("HBM", HBM)], [("bf16", BF16)], y_range=(0, 1e15)),
     ["y_range", "positive"]),
    (lambda: RooflineChart(None, [("HBM", HBM)], [("bf16", BF16)]), ["title"]),  # type: ignore
    (lambda: CurveChart("c", "x", "y", []), ["series", "at least 1"]),
    (lambda: CurveChart("c", "x", "y", [("s", [], [])]), ["series[0]", "xs", "two points"]),
    (lambda: CurveChart("c", "x", "y", [("s", [1, 2, 3], [1, 2])]),
     ["series[0]", "'s'", "xs and ys differ", "3 vs 2"]),
    (lambda: CurveChart("c", "x", "y", [("s", [1, 2], [1, -2])]),
     ["series[0]", "ys[1]", "positive"]),
    (lambda: CurveChart("c", "x", "y", [("s", [1, 2], [1, 2])], log_y=False,
                        marks=[("m", 1, float("nan"))]), ["marks[0]", "'m'", "y", "finite"]),
    (lambda: CurveChart("c", "x", "y", [("s", [0, 1], [1, 2])]), ["xs[0]", "positive"]),
    (lambda: CurveChart("c", "x", "y", "abc"), ["series", "sequence"]),  # type: ignore
    (lambda: roofline_svg(H100, width=10), ["width"]),
    (lambda: Style("red"), ["color", "#rrggbb"]),
    (lambda: Style("#112233", (4, -1)), ["dash", "positive"]),
    (lambda: Palette(roofs=()), ["Palette", "roofs"]),
    (lambda: Palette(ink="black"), ["color", "'black'"]),
    (lambda: roofline_pgfplots(H100, width_cm=-1), ["width_cm"]),
    (lambda: roofline_svg(CROSSOVER), ["RooflineChart"]),  # type: ignore[arg-type]
])
def test_bad_input_names_the_field(make, words: list[str]) -> None:
    with pytest.raises(SymroofError) as info:
        make()
    assert all(w in str(info.value) for w in words), str(info.value)


def test_linear_axes_accept_zero_and_negative_values() -> None:
    chart = CurveChart("lin", "x", "y", [("s", [-1, 0, 1], [0, -2, 5])], log_x=False, log_y=False)
    parse(curve_svg(chart))
    assert "xmode=normal, ymode=normal" in curve_pgfplots(chart)


def test_items_are_normalised_to_named_tuples() -> None:
    point, roof = H100.points[1], H100.roofs[0]
    series, mark = CROSSOVER.series[0], CROSSOVER.marks[0]
    assert isinstance(point, Point) and point.kind == "bound"             # the default kind
    assert isinstance(roof, Roof) and roof.bandwidth_bytes_per_s == HBM
    assert isinstance(series, Series) and series.xs[-1] == 512.0 and isinstance(series.ys, tuple)
    assert isinstance(mark, Mark) and mark.label == "B=64, S=6,729"


@pytest.mark.slow
def test_pgfplots_pictures_compile(tmp_path: Path) -> None:
    from needs import executable   # here: a child process imports this module without tests/ on its path
    executable("pdflatex")
    roof, curve = escaping_charts()
    linear = CurveChart("lin", "B", "S", [("c", BS, [430626 / b for b in BS])], log_y=False)
    pictures = [roofline_pgfplots(c) for c in (H100, roof, UNICODE)] + [
        curve_pgfplots(c) for c in (CROSSOVER, curve, linear)]
    (tmp_path / "charts.tex").write_text(
        "\\documentclass{article}\n\\usepackage{pgfplots}\n\\pgfplotsset{compat=1.18}\n"
        "\\begin{document}\n" + "\n\n".join(pictures) + "\\end{document}\n", encoding="utf-8")
    run = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "charts.tex"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-3000:]
    assert (tmp_path / "charts.pdf").stat().st_size > 0
    assert "Dimension too large" not in run.stdout


def test_a_chart_that_raises_while_drawing_is_its_own_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """An exception inside the drawing of one chart becomes that chart's error result
    (file, line, chart id); the other chart is still drawn (issue 21, robustness)."""
    from symroof.present import claim_charts
    from symroof.verify import EXAMPLE, parse_claims, run_claims
    text = EXAMPLE + "".join(
        f'\n[[chart]]\nid = "{cid}"\nkind = "roofline"\ndocument = "000"\ntitle = "{cid}"\n'
        f'hardware = "h100-sxm"\nprecisions = ["bf16"]\n'
        f'points = [{{label = "GEMM", claim = "gemm-square-8192"}}]\n' for cid in ("bad", "good"))
    outcome = run_claims(parse_claims(text, "two.toml"))
    real = claim_charts.roofline_svg

    def fragile(chart: RooflineChart, **kw: object) -> str:
        if chart.title == "bad":
            raise ZeroDivisionError("float division by zero")
        return real(chart)
    monkeypatch.setattr(claim_charts, "roofline_svg", fragile)
    after, charts = claim_charts.render_outcome_charts(outcome)
    assert [c.id for c in charts] == ["good"]
    errors = [r for r in after.results if r.status == "error"]
    assert [r.claim.id for r in errors] == ["chart:bad"]
    line = text.splitlines().index('id = "bad"')   # the [[chart]] header is the line above
    assert f"two.toml:{line}: chart 'bad'" in errors[0].message
    assert "ZeroDivisionError" in errors[0].message
    assert len(after.results) == len(outcome.results) + 1
    # without an outcome to carry the error (render_charts alone), it stands in the chart's
    # place, in both outputs, and the other chart is still drawn
    alone = claim_charts.render_charts(outcome)
    assert [c.id for c in alone] == ["bad", "good"]
    parse(alone[0].svg)
    assert "could not be drawn" in alone[0].svg and "ZeroDivisionError" in alone[0].pgfplots
    assert "<polyline" in alone[1].svg


@pytest.mark.parametrize("extra, field", [
    ({"hardware": ["h100-sxm", 3]}, "hardware"),
    ({"hardware": ["h100-sxm", "no-such-chip"]}, "hardware"),
])
def test_a_roofline_of_several_chips_names_a_bad_chip(extra: dict[str, object], field: str) -> None:
    from symroof.verify.charts import check_chart
    spec = {"id": "c", "kind": "roofline", "precisions": ["bf16"], **extra}
    with pytest.raises(SymroofError, match=rf"f.toml:3: chart 'c' field '{field}'"):
        check_chart(spec, {}, {"000"}, "f.toml:3: chart 'c'")


@pytest.mark.parametrize("extra, field", [
    ({"regions": [{"label": "a", "x": 1}]}, "regions"),
    ({"regions": [{"label": "a", "x": 1, "y": -2}]}, "regions"),
    ({"curves": [{"claim": "x", "colour": "red"}]}, "curves"),
    ({"levels": [{"claim": "nope"}]}, "levels"),
    ({"x_title": 3}, "x_title"),
    ({"marks": [{"claim": "x", "x": 1, "label": 2}]}, "marks"),
])
def test_a_curve_chart_names_its_bad_field(extra: dict[str, object], field: str) -> None:
    """The curve chart's fields (issue 21: curves, levels, regions, axis titles) fail with
    the file, line, chart and field; the curve itself is a claim whose formula is S = 100/B."""
    import sympy as sp

    from symroof.verify.charts import check_chart
    B = sp.Symbol("B", positive=True)

    class R:
        status, derived, claimed = "match", sp.Integer(2), None
        formula, subs = 100 / B, {}
    spec = {"id": "c", "kind": "curve", "x": "B", "y": "S", "claim": "x", **extra}
    with pytest.raises(SymroofError, match=rf"f.toml:3: chart 'c' field '{field}'"):
        check_chart(spec, {"x": R()}, {"000"}, "f.toml:3: chart 'c'")

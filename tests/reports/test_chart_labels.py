"""Chart labels never overprint (issue 21): measured from the SVG itself.

Each ``<text>`` label's box is computed with the layout's own width rule
(:func:`symroof.present.chart_layout._text_box`), turned with the label where it is rotated.
No two label boxes may intersect, and no label may cover a marker it does not name (a
point or mark label names the marker nearest to it; a ridge label names its ridge ring;
ceiling and roof labels name none). Checked for every chart the seed appendix draws and
for deliberately crowded synthetic charts.
"""

from __future__ import annotations

import math
import re
import xml.etree.ElementTree as ET

import pytest

from symroof.present.chart_layout import _text_box
from symroof.present.charts import CurveChart, RooflineChart, curve_svg, roofline_svg

NS = "{http://www.w3.org/2000/svg}"
LABELS = ("point-label", "mark-label", "ridge-label", "ceiling-label", "roof-label", "region-label")
NAMING = ("point-label", "mark-label", "ridge-label", "region-label")
MARKER_HALF = 3.5     # a dot's radius; rings and diamonds are no larger in a label's way

Box = tuple[float, float, float, float]


class Label:
    """A label's box in its own (unrotated) frame and the rotation about its anchor."""

    def __init__(self, el: ET.Element) -> None:
        self.cls, self.text = el.get("class", ""), "".join(el.itertext())
        self.x, self.y = float(el.get("x", 0)), float(el.get("y", 0))
        size = int(float(el.get("font-size", 11)))
        self.box = _text_box(self.x, self.y, el.get("text-anchor", "start"), self.text, size)
        m = re.match(r"rotate\(([-\d.]+)", el.get("transform", ""))
        self.angle = math.radians(float(m.group(1))) if m else 0.0

    def local(self, px: float, py: float) -> tuple[float, float]:
        """A page point in this label's frame (undo the rotation about the anchor)."""
        c, s = math.cos(-self.angle), math.sin(-self.angle)
        dx, dy = px - self.x, py - self.y
        return self.x + c * dx - s * dy, self.y + s * dx + c * dy

    def outline(self, step: float = 2.0) -> list[tuple[float, float]]:
        """Points over the box, on the page."""
        x0, y0, x1, y1 = self.box
        c, s = math.cos(self.angle), math.sin(self.angle)
        nx, ny = max(2, int((x1 - x0) / step)), max(2, int((y1 - y0) / step))
        pts = [(x0 + (x1 - x0) * i / nx, y0 + (y1 - y0) * j / ny)
               for i in range(nx + 1) for j in range(ny + 1)]
        return [(self.x + c * (px - self.x) - s * (py - self.y),
                 self.y + s * (px - self.x) + c * (py - self.y)) for px, py in pts]

    def holds(self, px: float, py: float, grow: float = 0.0) -> bool:
        lx, ly = self.local(px, py)
        x0, y0, x1, y1 = self.box
        return x0 - grow < lx < x1 + grow and y0 - grow < ly < y1 + grow


def _overlap(a: Box, b: Box) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def _intersect(a: Label, b: Label) -> bool:
    if not a.angle and not b.angle:
        return _overlap(a.box, b.box)
    return any(b.holds(*p) for p in a.outline()) or any(a.holds(*p) for p in b.outline())


def problems(svg: str) -> list[str]:
    """Every pair of intersecting labels and every label over a marker it does not name."""
    root = ET.fromstring(svg)
    labels = [Label(t) for t in root.iter(f"{NS}text") if t.get("class") in LABELS]
    markers = []
    for g in root.iter(f"{NS}g"):
        m = re.fullmatch(r"translate\(([-\d.]+),([-\d.]+)\)", g.get("transform", ""))
        if m:
            markers.append((g.get("class", ""), float(m.group(1)), float(m.group(2))))
    out = []
    for i, a in enumerate(labels):
        out += [f"{a.text!r} overlaps {b.text!r}" for b in labels[i + 1:] if _intersect(a, b)]
        named = None
        if a.cls in NAMING and markers:
            cx, cy = (a.box[0] + a.box[2]) / 2, (a.box[1] + a.box[3]) / 2
            named = min(markers, key=lambda mk: _gap(a.box, mk[1], mk[2]) + 1e-3 * math.hypot(
                mk[1] - cx, mk[2] - cy))
        out += [f"{a.text!r} covers the {mk[0]} at ({mk[1]:.0f}, {mk[2]:.0f})"
                for mk in markers if mk is not named and a.holds(mk[1], mk[2], MARKER_HALF)]
    return out


def _gap(box: Box, x: float, y: float) -> float:
    return math.hypot(max(box[0] - x, 0, x - box[2]), max(box[1] - y, 0, y - box[3]))


@pytest.fixture(scope="module")
def appendix_charts(seed_outcome) -> dict[str, str]:
    """The seed appendix's charts, drawn from the claims the session already ran."""
    from symroof.present.claim_charts import render_charts
    return {c.id: c.svg for c in render_charts(seed_outcome)}


def test_the_checker_sees_an_overprint() -> None:
    svg = ('<svg xmlns="http://www.w3.org/2000/svg">'
           '<g class="point bound" transform="translate(100,100)"/>'
           '<g class="point bound" transform="translate(160,100)"/>'
           '<text class="point-label" x="106" y="115" text-anchor="start">first label</text>'
           '<text class="point-label" x="110" y="118" text-anchor="start">second</text>'
           '<text class="ceiling-label" x="156" y="104" text-anchor="start">x</text></svg>')
    found = problems(svg)
    assert any("'first label' overlaps 'second'" in p for p in found)
    assert any("'x' covers" in p for p in found)


def test_every_appendix_chart_has_clear_labels(appendix_charts) -> None:
    charts = appendix_charts
    assert charts
    bad = {cid: problems(svg) for cid, svg in charts.items()}
    assert not any(bad.values()), bad


E = 1e12
CROWDED = [
    RooflineChart("crowded: six points in a decade", [("HBM", 3.35 * E)], [("bf16", 989 * E)],
                  [(f"workload number {i}", 1.0 + 0.3 * i, 3.35 * E * (1.0 + 0.3 * i))
                   for i in range(6)]),
    RooflineChart("crowded: points at the ridges",
                  [("HBM", 3.35 * E), ("L2", 12 * E)], [("bf16", 989 * E), ("fp8", 1979 * E)],
                  [("at the HBM ridge", 295, 989 * E), ("fp8 ridge", 590, 1979 * E),
                   ("GEMM 8192^3", 2731, 989 * E), ("GEMM 4096^3", 1365, 989 * E),
                   ("L2 ridge", 82, 989 * E), ("decode", 1, 3.35 * E)]),
    RooflineChart("crowded: the seed's H100 points",
                  [("HBM", 3.35 * E)], [("bf16", 989 * E), ("fp8", 1979 * E)],
                  [("GEMM 8192^3", 2731, 989 * E), ("GEMM 256^3", 85.3, 285.8 * E),
                   ("attention prefill S = 4096", 1024, 989 * E), ("decode B = 1", 1, 3.35 * E),
                   ("decode B = 64", 18, 60.3 * E), ("ReLU 16M", 0.25, 0.84 * E)]),
]
CROWDED_CURVES = [
    CurveChart("crowded marks", "B", "S", [("S B = 430,626", [1, 512], [430626, 841])],
               marks=[(f"claim-{i}: {k}", 64 * 1.05 ** i, 6800 * 1.02 ** j)
                      for i in range(3) for j, k in enumerate(("printed", "derived"))]),
]


@pytest.mark.parametrize("chart", CROWDED, ids=lambda c: c.title)
def test_crowded_rooflines_have_clear_labels(chart: RooflineChart) -> None:
    assert problems(roofline_svg(chart)) == []


@pytest.mark.parametrize("chart", CROWDED_CURVES, ids=lambda c: c.title)
def test_crowded_curves_have_clear_labels(chart: CurveChart) -> None:
    assert problems(curve_svg(chart)) == []


def test_powers_are_superscripts_in_both_outputs() -> None:
    """'GEMM 8192^3' is typeset: an SVG superscript tspan and LaTeX math, no caret shown."""
    from symroof.present.charts import roofline_pgfplots
    chart = RooflineChart("GEMM 8192^3 on a chip", [("HBM", 3.35 * E)], [("bf16", 989 * E)],
                          [("GEMM 8192^3", 2731, 989 * E)])
    root = ET.fromstring(roofline_svg(chart))
    label = next(t for t in root.iter(f"{NS}text") if t.get("class") == "point-label")
    sup = label.find(f"{NS}tspan")
    assert label.text == "GEMM 8192" and sup is not None and sup.text == "3"
    assert sup.get("baseline-shift") == "super"
    assert "^" not in "".join(t for e in root.iter(f"{NS}text") for t in e.itertext())
    tex = roofline_pgfplots(chart)
    assert tex.count("GEMM $8192^{3}$") == 2 and "textasciicircum" not in tex
    assert root[0].text == "GEMM 8192^3 on a chip"   # the SVG <title> element stays plain text


def test_the_appendix_draws_the_issue_21_charts(appendix_charts) -> None:
    """Decode intensity against batch with its ceiling, the two Opteron rooflines, fused
    against unfused attention, the KV-versus-weights regions; roofs only for the stated
    precision; axes titled with name and unit; printed beside derived with a legend."""
    charts = {cid: ET.fromstring(svg) for cid, svg in appendix_charts.items()}
    assert {"roofline-h100", "decode-intensity-batch", "opteron-x2-x4",
            "attention-fused-unfused", "kv-weights-llama-3-70b"} <= set(charts)

    def texts(cid: str, cls: str) -> list[str]:
        return ["".join(t.itertext()) for t in charts[cid].iter(f"{NS}text")
                if t.get("class") == cls]
    for cid in charts:   # every axis title names a quantity and its unit in parentheses
        assert all(re.fullmatch(r".+ \(.+\)", t) for t in texts(cid, "x-label") + texts(cid, "y-label")), cid
    h100 = texts("roofline-h100", "ceiling-label")
    assert h100 and all(t.startswith("bf16") for t in h100), h100     # the title says bf16
    assert "bf16" in texts("roofline-h100", "title")[0]
    assert any("ceiling at S = 1024 = 25" in "".join(e.itertext())
               for e in charts["decode-intensity-batch"].iter(f"{NS}text"))
    opteron = " ".join(texts("opteron-x2-x4", "ceiling-label"))
    assert "opteron-x2 fp64" in opteron and "opteron-x4 fp64" in opteron
    assert set(texts("opteron-x2-x4", "ridge-label")) == {"1.17", "4.91"}
    labels = texts("attention-fused-unfused", "point-label")
    assert any("unfused" in t for t in labels) and any(t.startswith("fused") for t in labels)
    assert len(texts("kv-weights-llama-3-70b", "region-label")) == 2
    kv = charts["kv-weights-llama-3-70b"]
    assert [g.get("class") for g in kv.iter(f"{NS}g")].count("mark printed") == 2
    legend = " ".join("".join(t.itertext()) for g in kv.iter(f"{NS}g")
                      if g.get("class") == "legend" for t in g.iter(f"{NS}text"))
    assert "printed in the document" in legend and "derived by symroof" in legend


def test_the_opteron_chart_shows_the_printed_ridges_beside_the_derived(appendix_charts) -> None:
    """The document's ridges (1.0 and 4.4) are printed markers on their own chip's roof,
    beside the derived 1.17 and 4.91 (the erratum is visible in the chart)."""
    root = ET.fromstring(appendix_charts["opteron-x2-x4"])
    classes = [g.get("class") for g in root.iter(f"{NS}g")]
    assert classes.count("point printed") == 2 and classes.count("point bound") == 2
    labels = {"".join(t.itertext()) for t in root.iter(f"{NS}text")}
    assert {"printed 1", "printed 4.4", "X2 ridge", "X4 ridge"} <= labels

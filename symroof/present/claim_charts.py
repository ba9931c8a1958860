"""Charts of a claim file: every number comes from the engine's results.

A roofline chart takes its roofs and ceilings from the chip file and its points from
claims whose derived value is an intensity; a curve chart samples a claim's formula (one
variable as a function of another) and marks the document's own points beside the
derived ones.

``[[chart]]`` fields: ``id``, ``kind`` (``roofline`` or ``curve``), ``document``,
``after`` (the section it follows), ``title``; a roofline has ``hardware`` (a chip, or a
list of chips drawn together), ``precisions`` (only their roofs are drawn: the title should
say which) and ``points = [{label, claim, hardware}]`` (on the first chip's roof unless the
point names its chip; a claim whose printed value differs from the
derived one also gets a printed marker); a curve has ``x``, ``y``, ``x_title`` and
``y_title`` (the axes' names with units), ``claim`` (and ``label``) or ``curves = [{claim,
label}]``, ``levels = [{claim, label}]`` (flat lines at claims' values, such as a ceiling),
``from``, ``to``, ``marks = [{claim, x, label}]`` (printed and derived markers) and
``regions = [{label, x, y}]`` (an area's name, centred at a point).
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import sympy as sp
from markupsafe import escape

from symroof import hardware
from symroof.errors import SymroofError
from symroof.hardware import UNITS
from symroof.present.charts import (CurveChart, RooflineChart, curve_pgfplots, curve_svg,
                                    roofline_pgfplots, roofline_svg, si)
from symroof.present.escape import latex_escape
from symroof.verify import Chart, Outcome, Result
from symroof.verify.charts import numeric_result, sample_xs
from symroof.verify.run import chart_error

__all__ = ["RenderedChart", "render_charts", "render_outcome_charts"]

_WIDTH_CM = 14.0  # the appendix's text width: labels are laid out for the page's font size


@dataclass(frozen=True)
class RenderedChart:
    """One chart of the appendix, in both outputs, with where it goes."""

    id: str
    document: str
    after: str
    title: str
    svg: str
    pgfplots: str


def _chips(spec: Mapping[str, Any]) -> list[Any]:
    """The chart's chips: ``hardware`` names one chip or a list of chips to compare."""
    names = spec.get("hardware", "")
    return [hardware.get(n) for n in ([names] if isinstance(names, str) else names)]


def _roofline(spec: Mapping[str, Any], results: Mapping[str, Result], where: str) -> RooflineChart:
    chips = _chips(spec)
    precisions = spec.get("precisions") or ["bf16"]
    roofs, ceilings = [], []
    for chip in chips:   # several chips: each roof and ceiling says whose it is
        who = f"{chip.name} " if len(chips) > 1 else ""
        # the chart writes each roof's and ceiling's value beside its label
        roofs += [(lv.name.upper(), float(lv.bandwidth)) if all(   # a roof they share: once
                      any(m.name == lv.name and m.bandwidth == lv.bandwidth for m in c.levels)
                      for c in chips) else (who + lv.name.upper(), float(lv.bandwidth))
                  for lv in chip.levels if lv.bandwidth is not None]
        ceilings += [(f"{who}{p.precision} {p.unit}", float(chip.peak(p.precision, p.unit)))
                     for unit in UNITS for p in chip.peaks
                     if p.unit == unit and p.precision in precisions]
    roofs = list(dict.fromkeys(roofs))
    if not ceilings:
        raise SymroofError(f"{where}: {chips[0].name} lists no peak for {', '.join(precisions)}")
    points: list[tuple[str, float, float, str]] = []
    for i, p in enumerate(spec.get("points", [])):
        r, intensity = numeric_result(results, p.get("claim"), f"{where}.points[{i}]")
        chip = hardware.get(p["hardware"]) if "hardware" in p else chips[0]   # whose roof
        top, bw = chip.peak(precisions[0]), chip.bandwidth()
        label = str(p.get("label", r.claim.id))
        if r.claimed is not None and not _same(r.claimed, intensity):   # the document's own
            points.append((f"printed {si(float(r.claimed))}", float(r.claimed),
                           float(sp.Min(top, bw * r.claimed)), "printed"))
        points.append((label, float(intensity), float(sp.Min(top, bw * intensity)), "bound"))
    return RooflineChart(str(spec.get("title", chips[0].display_name)), roofs, ceilings, points)


def _same(a: sp.Expr, b: sp.Expr) -> bool:
    """Equal to 0.5% (printed at 3 significant figures): one marker serves both."""
    return abs(float(a) - float(b)) <= 0.005 * abs(float(b))


def _sampled(r: Result, x_name: str, xs: list[float], where: str) -> list[float]:
    """``r``'s formula at each x, its other symbols set to the claim's own values."""
    if r.formula is None:
        raise SymroofError(f"{where}: claim {r.claim.id!r} has no formula to draw")
    y_of = r.formula.xreplace({k: v for k, v in r.subs.items() if k.name != x_name})
    free = y_of.free_symbols
    if len(free) != 1 or next(iter(free)).name != x_name:
        raise SymroofError(f"{where}: the formula of {r.claim.id!r} must depend on {x_name} "
                           f"alone once its other values are set; it has {sorted(map(str, free))}")
    x = next(iter(free))
    return [float(y_of.xreplace({x: sp.Rational(repr(v))})) for v in xs]


def _curve(spec: Mapping[str, Any], results: Mapping[str, Result], where: str,
           declared: Mapping[str, str]) -> CurveChart:
    """Curves of claims' formulas (``claim`` and ``curves``), flat ``levels`` at claims'
    values (a ceiling), ``marks`` (printed and derived) and named ``regions``."""
    x_name, y_name = str(spec.get("x")), str(spec.get("y"))
    lo, hi = sp.Rational(spec.get("from", 1)), sp.Rational(spec.get("to", 1000))
    xs = sample_xs(lo, hi)
    drawn = ([{"claim": spec["claim"], "label": spec.get("label")}] if "claim" in spec else []) \
        + list(spec.get("curves", []))
    series = []
    for i, c in enumerate(drawn):
        r = results.get(c.get("claim", ""))
        if r is None:
            raise SymroofError(f"{where}.curves[{i}]: no claim {c.get('claim')!r} in this file")
        series.append((str(c.get("label") or f"{y_name}({x_name}), derived"), xs,
                       _sampled(r, x_name, xs, where)))
    for i, c in enumerate(spec.get("levels", [])):
        r, value = numeric_result(results, c.get("claim"), f"{where}.levels[{i}]")
        label = f"{c.get('label', r.claim.id)} = {si(float(value))}"
        series.append((label, [xs[0], xs[-1]], [float(value)] * 2))
    marks: list[tuple[str, float, float, str]] = []
    for i, m in enumerate(spec.get("marks", [])):
        mr, derived = numeric_result(results, m.get("claim"), f"{where}.marks[{i}]")
        at = float(m.get("x", 1))
        if mr.claimed is not None:
            marks.append(("", at, float(mr.claimed), "printed"))
        marks.append((str(m.get("label", mr.claim.id)), at, float(derived), "derived"))
    regions = [(str(g.get("label", "")), float(g.get("x", 1)), float(g.get("y", 1)))
               for g in spec.get("regions", [])]
    first = results.get(drawn[0].get("claim", "")) if drawn else None
    title = str(spec.get("title", first.claim.quantity if first else ""))
    return CurveChart(title, str(spec.get("x_title", x_name)), str(spec.get("y_title", y_name)),
                      series, marks=marks, regions=regions)


def render_charts(outcome: Outcome, errors: list[Result] | None = None) -> list[RenderedChart]:
    """Every ``[[chart]]`` of the claim file, rendered as SVG and pgfplots.

    A chart whose drawing raises is left out and becomes an error result ``chart:<id>``
    (file, line, chart id and, where known, the field), appended to ``errors`` when it is
    given, else drawn in the chart's place as a box that states it; the other charts are
    still drawn."""
    results = {r.claim.id: r for r in outcome.results}
    documents = {d.id for d in outcome.source.documents}
    out = []
    for chart in outcome.source.charts:
        where = f"{outcome.source.path}:{chart.line}: chart {chart.id!r}"
        try:
            out.append(_render(chart, results, outcome))
            continue
        except SymroofError as err:
            message = str(err)
        except Exception as err:  # noqa: BLE001 - one chart never stops the report
            message = (f"{where}: internal error while drawing ({type(err).__name__}: {err}); "
                       "please report it")
        if errors is None:   # no outcome to carry it: the error stands where the chart would
            out.append(_failed(chart, message))
        else:
            errors.append(chart_error(chart, message, documents))
    return out


def _failed(chart: Chart, message: str) -> RenderedChart:
    """A chart that could not be drawn: its error, in both outputs, where it would stand."""
    spec = chart.spec if isinstance(chart.spec, Mapping) else {}
    lines = textwrap.wrap(f"Chart {chart.id!r} could not be drawn: {message}", 90)
    svg = ('<?xml version="1.0" encoding="UTF-8" standalone="no"?>\n'
           f'<svg xmlns="http://www.w3.org/2000/svg" version="1.1" width="640" '
           f'height="{24 + 16 * len(lines)}"><title>{escape(chart.id)}</title>\n'
           + "".join(f'<text class="chart-error" x="8" y="{20 + 16 * i}" font-size="12" '
                     f'fill="#b00020">{escape(t)}</text>\n' for i, t in enumerate(lines))
           + "</svg>\n")
    tex = f"\\fbox{{\\parbox{{0.9\\linewidth}}{{{latex_escape(' '.join(lines))}}}}}\n"
    return RenderedChart(chart.id, str(spec.get("document", "")), str(spec.get("after", "")),
                         str(spec.get("title", chart.id)), svg, tex)


def render_outcome_charts(outcome: Outcome) -> tuple[Outcome, list[RenderedChart]]:
    """The charts, and ``outcome`` with an error result for each chart that failed to draw
    (so the report, the JSON and the exit status all show it)."""
    errors: list[Result] = []
    charts = render_charts(outcome, errors)   # each under its document only if it is known
    return (replace(outcome, results=outcome.results + tuple(errors)) if errors else outcome,
            charts)


def _render(chart: Chart, results: Mapping[str, Result], outcome: Outcome) -> RenderedChart:
    spec = chart.spec
    where = f"{outcome.source.path}:{chart.line}: chart {chart.id!r}"
    kind = spec.get("kind")
    if kind == "roofline":
        rc = _roofline(spec, results, where)
        svg, tex = roofline_svg(rc), roofline_pgfplots(rc, width_cm=_WIDTH_CM)
    elif kind == "curve":
        cc = _curve(spec, results, where, outcome.source.symbols)
        svg, tex = curve_svg(cc), curve_pgfplots(cc, width_cm=_WIDTH_CM)
    else:
        raise SymroofError(f"{where} field 'kind': expected \"roofline\" or \"curve\", got {kind!r}")
    return RenderedChart(chart.id, str(spec.get("document", "")), str(spec.get("after", "")),
                         str(spec.get("title", chart.id)), svg, tex)

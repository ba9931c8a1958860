"""An atlas as a report page: Markdown and LaTeX through the report templates, with each
crossing that is a curve in two of the atlas's variables drawn as a chart.

A crossing ``y = f(x)`` is drawn when, at the page's point (``--set``), its formula
depends on exactly one other variable of the atlas; it is sampled on a log scale over
the range where its conditions hold and its values are positive.

>>> from symroof.symbols import B, D, H, L, S
>>> import symroof as sr
>>> dec = sr.workloads.decode(sr.models.transformer(layers=L, d_model=D, heads=H), B, S)
>>> page = atlas_page(sr.atlas(dec, over=[B, S]), {D: 4096}, "symroof atlas decode")
>>> [c.id for c in page.charts]
['Q_kv_cache-Q_weight-in-B', 'Q_kv_cache-Q_weight-in-S']
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import sympy as sp

from symroof.atlas import Atlas, Entry, Status
from symroof.present.appendix import figure
from symroof.present.atlas import reason_text, side_text, value_at
from symroof.present.charts import CurveChart, curve_pgfplots, curve_svg
from symroof.present.escape import latex_escape, markdown_escape
from symroof.present.formula import latex
from symroof.present.templates import render

__all__ = ["AtlasPage", "PageChart", "atlas_page"]

_SAMPLES = 48
_RANGES = {"B": (1, 4096), "S": (64, 2**20)}   # batch and context as serving sees them
_DEFAULT_RANGE = (1, 10**4)


@dataclass(frozen=True)
class PageChart:
    """One crossing drawn as a curve."""

    id: str
    title: str
    svg: str
    pgfplots: str


@dataclass(frozen=True)
class AtlasPage:
    """The page in both formats, and its charts."""

    markdown: str
    latex: str
    charts: tuple[PageChart, ...]


def _curve(e: Entry, over: tuple[sp.Symbol, ...],
           values: Mapping[sp.Symbol, sp.Expr]) -> CurveChart | None:
    """``e``'s first solution as y(x), if it is a curve in one other atlas variable."""
    if e.status is not Status.CROSSES or e.var is None or not e.solutions:
        return None
    sol = e.solutions[0]
    fixed = {k: v for k, v in values.items() if k != e.var}
    y_of = sol.value.xreplace(fixed)
    free = y_of.free_symbols
    if len(free) != 1 or next(iter(free)) not in over:
        return None
    x = next(iter(free))
    lo, hi = _RANGES.get(x.name, _DEFAULT_RANGE)
    xs, ys = [], []
    for i in range(_SAMPLES):
        xv = sp.Rational(lo) * (sp.Rational(hi, lo)) ** sp.Rational(i, _SAMPLES - 1)
        point = {**fixed, x: xv}
        if sol.at(point) is None:
            continue  # a condition fails there: no crossing at this x
        yv = y_of.xreplace({x: xv})
        if not yv.is_number or not yv.is_real or not yv > 0:
            continue
        xs.append(float(xv))
        ys.append(float(yv))
    if len(xs) < 2:
        return None
    title = f"{e.lhs} = {e.rhs}: {e.var} as a function of {x}"
    return CurveChart(title, x.name, e.var.name, [(f"{e.var}({x})", xs, ys)])


def _entry(e: Entry, values: Mapping[sp.Symbol, sp.Expr], tex: bool) -> dict[str, Any]:
    esc = latex_escape if tex else markdown_escape
    sols = []
    for c in e.solutions:
        at = value_at(c, values) if values else None
        sols.append({"formula": latex(sp.Eq(e.var, c.value, evaluate=False)) if e.var is not None
                     else latex(c.value),
                     "when": " and ".join(latex(x) for x in c.conditions),
                     "at": figure(at) if at is not None and not at.free_symbols else ""})
    return {"pair": esc(f"{e.lhs} = {e.rhs}"), "var": str(e.var or ""), "solutions": sols,
            "textbook": [latex(sp.Eq(e.var, c.value, evaluate=False)) for c in e.textbook
                         if e.var is not None],
            "below": esc(side_text(e.below)), "above": esc(side_text(e.above)),
            "reason": esc(reason_text(e))}


def atlas_page(a: Atlas, values: Mapping[sp.Symbol, sp.Expr] | None, command: str,
               title: str | None = None) -> AtlasPage:
    """The atlas ``a`` as a page; ``values`` is the point the value column is taken at."""
    values = dict(values or {})
    charts: list[PageChart] = []
    for e in a.crossings:
        chart = _curve(e, a.over, values)
        if chart is not None:
            cid = f"{e.lhs}-{e.rhs}-in-{e.var}".replace("[", "-").replace("]", "").replace(" ", "-")
            charts.append(PageChart(cid, chart.title, curve_svg(chart), curve_pgfplots(chart)))
    pages = []
    for tex in (False, True):
        esc = latex_escape if tex else markdown_escape
        ctx = {
            "title": esc(title or f"Crossover atlas: {a.workload}"),
            "command": esc(command), "over": ", ".join(str(v) for v in a.over),
            "point": ", ".join(f"{latex(k)} = {latex(v)}" for k, v in values.items()),
            "parts": [{"name": esc(p.name), "formula": latex(p.expr), "lever": esc(p.lever)}
                      for p in a.parts],
            "crossings": [_entry(e, values, tex) for e in a.crossings],
            "never": [_entry(e, values, tex) for e in a.never],
            "unsolved": [_entry(e, values, tex) for e in a.unsolved],
            "limits": [{"of": esc(x.of), "var": str(x.var), "to": latex(x.to),
                        "value": latex(x.value)} for x in a.limits],
            "charts": [{"id": c.id, "title": esc(c.title), "svg_path": f"charts/{c.id}.svg",
                        "pgfplots": c.pgfplots} for c in charts],
        }
        pages.append(render("report/atlas.tex.j2" if tex else "report/atlas.md.j2", **ctx))
    return AtlasPage(pages[0], pages[1], tuple(charts))

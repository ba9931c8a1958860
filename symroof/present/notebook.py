"""Rich output in Jupyter: analyses, rooflines, crossovers, atlases and families.

Importing this module registers renderers with :mod:`symroof.rich` (``import symroof``
does it); each record then answers ``_repr_html_``, ``_repr_latex_`` and
``_repr_markdown_``: its formulas, its numbers, and for a roofline at numbers a small
SVG chart. Nothing here needs IPython; formulas in HTML are plain text (a notebook's
math renderer does not look inside HTML output), in LaTeX and Markdown they are LaTeX.

>>> import symroof as sr
>>> from symroof.symbols import n
>>> print(sr.workloads.gemm(n, n, n)._repr_latex_())
$$\\begin{aligned} F &= 2 n^{3} \\\\ Q &= 3 n^{2} b \\\\ I &= \\frac{2 n}{3 b} \\end{aligned}$$
"""

from __future__ import annotations

import html
from collections.abc import Iterable

import sympy as sp

from symroof.analysis import Analysis
from symroof.atlas import Atlas, Entry, Family
from symroof.evaluate import Roofline
from symroof.present import atlas as _atlas
from symroof.present.escape import markdown_escape
from symroof.present.formula import latex, text
from symroof.present.numbers import si, text_number
from symroof.present.records import to_text
from symroof.rich import register
from symroof.solve import Crossover

__all__ = ["analysis_html", "analysis_latex", "analysis_markdown", "roofline_html",
           "roofline_latex", "roofline_markdown", "crossover_latex", "crossover_markdown",
           "crossover_html", "atlas_html", "atlas_latex", "atlas_markdown", "family_html",
           "family_markdown", "entry_markdown"]


def _table(rows: Iterable[tuple[str, ...]], head: tuple[str, ...] | None = None,
           caption: str = "") -> str:
    """An HTML table of already-formatted cells (escaped here)."""
    cap = f"<caption>{html.escape(caption)}</caption>" if caption else ""
    top = "" if head is None else "<thead><tr>" + "".join(
        f"<th>{html.escape(h)}</th>" for h in head) + "</tr></thead>"
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>"
                   for r in rows)
    return f"<table>{cap}{top}<tbody>{body}</tbody></table>"


# -- analyses -----------------------------------------------------------------------------


def _parts(a: Analysis) -> list[tuple[str, sp.Expr]]:
    main = [("F", a.flops), ("Q", a.bytes)]
    if a.bytes != 0:
        main.append(("I", a.intensity))
    extra = [(k, v) for k, v in a.quantities.items()
             if k.startswith(("F_", "Q_")) and v != 0]
    return main + extra


def analysis_latex(a: Analysis) -> str:
    """F, Q and I as aligned display math."""
    main = [(k, v) for k, v in _parts(a) if k in ("F", "Q", "I")]
    lines = r" \\ ".join(f"{k} &= {latex(v)}" for k, v in main)
    return rf"$$\begin{{aligned}} {lines} \end{{aligned}}$$"


def analysis_markdown(a: Analysis) -> str:
    """The workload's name and convention, then each quantity as a formula."""
    head = f"**{markdown_escape(a.graph.name)}** ({markdown_escape(to_text(a.convention))})"
    return "\n".join([head, ""] + [f"- ${_name(k)} = {latex(v)}$" for k, v in _parts(a)])


def analysis_html(a: Analysis) -> str:
    """A table of the quantities (F, Q, I, then the parts) as text formulas."""
    return _table(((k, text(v)) for k, v in _parts(a)), ("quantity", "formula"),
                  f"{a.graph.name}: {to_text(a.convention)}")


def _name(key: str) -> str:
    head, _, tail = key.partition("_")
    return f"{head}_{{\\mathrm{{{tail.replace('_', chr(92) + '_')}}}}}" if tail else head


# -- rooflines ----------------------------------------------------------------------------


def _roofline_rows(r: Roofline) -> list[tuple[str, str]]:
    rows = [("chip", f"{r.hardware} ({r.precision}, {r.level})"),
            ("F", f"{text_number(r.flops)} FLOP"), ("Q", f"{text_number(r.bytes)} B"),
            ("I", f"{text_number(r.intensity)} FLOP/B"),
            ("ridge", f"{text_number(r.ridge)} FLOP/B")]
    if r.bound is None:
        return rows + [("time", f"max({text(r.compute_time_s)}, {text(r.memory_time_s)}) s")]
    rows += [("bound", r.bound), ("time", f"{text_number(r.time_s)} s"),
             ("attainable", si(r.attainable, "FLOP/s", 15))]
    if r.tokens_per_s is not None:
        rows.append(("tokens/s", text_number(r.tokens_per_s)))
    return rows


def roofline_html(r: Roofline) -> str:
    """The numbers as a table and, at numbers, the roofline chart with the workload on it."""
    table = _table(_roofline_rows(r), None, f"roofline on {r.hardware}")
    return table if r.bound is None else table + _roofline_svg(r)


def _roofline_svg(r: Roofline) -> str:
    # charts load Jinja2 templates: only a roofline shown at numbers needs them
    from symroof.present.charts import RooflineChart, roofline_svg
    chart = RooflineChart(
        f"{r.hardware} {r.precision}", roofs=[(r.level, float(r.bandwidth))],
        ceilings=[(r.precision, float(r.peak))],
        points=[("workload", float(r.intensity), float(sp.Min(r.peak, r.bandwidth * r.intensity)))])
    svg = roofline_svg(chart, width=420, height=280)
    return svg[svg.index("<svg"):]  # inline: no XML declaration inside HTML


def roofline_latex(r: Roofline) -> str:
    """``t = max(F/peak, Q/bandwidth)`` with its value."""
    value = latex(r.time_s) if r.bound is None else latex(sp.Float(r.time_s, 6))
    return (rf"$$t = \max\left(\frac{{F}}{{\pi}}, \frac{{Q}}{{\beta}}\right) = {value}"
            r"\ \mathrm{s}$$")


def roofline_markdown(r: Roofline) -> str:
    """The numbers as a Markdown list."""
    return "\n".join(f"- {k}: {markdown_escape(v)}" for k, v in _roofline_rows(r))


# -- crossovers and atlas entries ------------------------------------------------------------


def _crossover_math(c: Crossover) -> str:
    when = r",\ ".join(latex(x) for x in c.conditions)
    return f"{latex(c.var)} = {latex(c.value)}" + (rf" \quad \text{{when }} {when}" if when else "")


def crossover_latex(c: Crossover) -> str:
    """``S = 6D``, with its conditions."""
    return f"${_crossover_math(c)}$"


def crossover_markdown(c: Crossover) -> str:
    return f"${_crossover_math(c)}$"


def crossover_html(c: Crossover) -> str:
    when = " and ".join(text(x) for x in c.conditions)
    body = f"{text(c.var)} = {text(c.value)}" + (f" when {when}" if when else "")
    return f"<code>{html.escape(body)}</code>"


def entry_markdown(e: Entry) -> str:
    """One atlas entry: the pair, its solutions or the reason it has none, its sides."""
    head = f"**{markdown_escape(e.lhs)} = {markdown_escape(e.rhs)}**" + (
        f" in ${latex(e.var)}$" if e.var is not None else "")
    if not e.solutions:
        return f"{head}: {markdown_escape(_atlas.reason_text(e))}"
    sols = "; ".join(f"${_crossover_math(c)}$" for c in e.solutions)
    return (f"{head}: {sols}. Below: {markdown_escape(_atlas.side_text(e.below))}. "
            f"Above: {markdown_escape(_atlas.side_text(e.above))}.")


def _entry_html(e: Entry) -> str:
    return f"<p>{html.escape(_text_of(e))}</p>"


def _text_of(e: Entry) -> str:
    var = "" if e.var is None else f" in {e.var}"
    if not e.solutions:
        return f"{e.lhs} = {e.rhs}{var}: {_atlas.reason_text(e)}"
    sols = "; ".join(f"{e.var} = {text(c.value)}" for c in e.solutions)
    return f"{e.lhs} = {e.rhs}{var}: {sols}"


# -- atlases and families ---------------------------------------------------------------------


def atlas_html(a: Atlas) -> str:
    """The crossings' table, then who dominates each side, never-crossing and unsolved."""
    items = "".join(f"<li>{html.escape(n)}</li>" for n in _atlas.atlas_notes(a))
    title = f"<p><b>atlas of {html.escape(a.workload)}</b> over " \
            f"{html.escape(', '.join(map(str, a.over)))}</p>"
    return f"{title}{_atlas.atlas_table(a, fmt='html')}<ul>{items}</ul>"


def atlas_markdown(a: Atlas) -> str:
    """The crossings as a Markdown table with LaTeX formulas, then one line per entry that
    does not cross."""
    lines = [f"**atlas of {markdown_escape(a.workload)}** over "
             f"{', '.join(f'${latex(v)}$' for v in a.over)}", "",
             _atlas.atlas_table(a, fmt="markdown"), ""]
    lines += [f"- {entry_markdown(e)}" for e in a.entries if e.status.value != "crosses"]
    return "\n".join(lines)


def atlas_latex(a: Atlas) -> str:
    """The crossings as a display-math array (MathJax has no ``tabular``)."""
    rows = []
    for e in a.crossings:
        for c in e.solutions:
            when = r",\ ".join(latex(x) for x in c.conditions) or r"\text{always}"
            rows.append(rf"\text{{{_tex_text(e.lhs)} = {_tex_text(e.rhs)}}} & "
                        rf"{latex(c.var)} = {latex(c.value)} & {when}")
    body = r" \\ ".join(rows) or r"\text{no crossings}"
    return rf"$$\begin{{array}}{{lll}} {body} \end{{array}}$$"


def _tex_text(name: str) -> str:
    """A part's name inside ``\\text{}``: underscores and brackets escaped for MathJax."""
    return name.replace("_", r"\_")


def family_html(f: Family) -> str:
    head = ("crossover", "in", *(["general"] if f.general else []), *f.names)
    return _table(_atlas.family_table(f), head, "family: " + ", ".join(f.names))


def family_markdown(f: Family) -> str:
    """The family table in Markdown, formulas in LaTeX."""
    head = ("crossover", "in", *(["general"] if f.general else []), *f.names)
    rows = [head, tuple("---" for _ in head), *_atlas.family_table(f, "markdown")]
    return "\n".join("| " + " | ".join(r) + " |" for r in rows)


for _cls, _fmt, _fn in (
        (Analysis, "html", analysis_html), (Analysis, "latex", analysis_latex),
        (Analysis, "markdown", analysis_markdown),
        (Roofline, "html", roofline_html), (Roofline, "latex", roofline_latex),
        (Roofline, "markdown", roofline_markdown),
        (Crossover, "html", crossover_html), (Crossover, "latex", crossover_latex),
        (Crossover, "markdown", crossover_markdown),
        (Entry, "html", _entry_html), (Entry, "markdown", entry_markdown),
        (Atlas, "html", atlas_html), (Atlas, "latex", atlas_latex),
        (Atlas, "markdown", atlas_markdown),
        (Family, "html", family_html), (Family, "markdown", family_markdown)):
    register(_cls, _fmt, _fn)

"""Atlases for people and machines: a table (text, Markdown, LaTeX, HTML) and JSON.

Each crossing is a row: the pair, the variable, the solution, when it exists, and its
value at the given point (``values``: the model's other symbols, ``b`` from a precision).
Rows against a chip's ridge carry the chip. Below the table come the regimes on either
side (who dominates, the lever that helps), the pairs that never cross with the reason,
and the pairs left unsolved. Formulas in JSON are SymPy syntax that
:func:`symroof.parse.parse_expr` reads back, with a ``display`` twin for people.

>>> import symroof as sr
>>> from symroof.atlas import atlas
>>> from symroof.symbols import B, S, L, D, H
>>> dec = sr.workloads.decode(sr.models.transformer(layers=L, d_model=D, heads=H), B, S)
>>> a = atlas(dec, over=[S], symbolic_ridge=False)
>>> print(next(iter(atlas_lines(a, {D: 4096}))))
atlas of transformer-decode over S (at D=4096)
>>> reason_text(a.find("Q_kv_cache", "Q_weight", S))
'crosses'
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import sympy as sp

from symroof.atlas import Asymptote, Atlas, Entry, Family, Reason, Side, Status
from symroof.errors import SymroofError
from symroof.present.escape import latex_escape, markdown_escape
from symroof.present.formula import latex, text
from symroof.present.numbers import json_number, text_number
from symroof.solve import Crossover

__all__ = ["atlas_doc", "atlas_lines", "atlas_notes", "atlas_table", "family_doc", "family_lines",
           "family_table", "reason_text", "side_text", "value_at", "TABLE_FORMATS"]

#: Formats of the atlas table.
TABLE_FORMATS = ("text", "markdown", "latex", "html")

_HEAD = ("crossover", "in", "solution", "exists when", "value")


def _eq(lhs: sp.Expr | str, rhs: sp.Expr, fmt: str) -> str:
    left = lhs if isinstance(lhs, str) else _f(lhs, fmt)
    return f"{left} = {_f(rhs, fmt)}"


def _f(expr: sp.Expr, fmt: str) -> str:
    """A formula in ``fmt``: LaTeX for latex and markdown, text otherwise."""
    return latex(expr) if fmt in ("latex", "markdown") else text(expr)


def value_at(c: Crossover, values: Mapping[sp.Symbol, sp.Expr]) -> sp.Expr | None:
    """The solution at ``values`` (the solved variable left out), or None where a
    condition fails there."""
    return c.at({k: v for k, v in values.items() if k != c.var})


def _value_text(c: Crossover, values: Mapping[sp.Symbol, sp.Expr], fmt: str) -> str:
    """The value cell: a number, a formula in the symbols ``values`` leaves free, blank
    when nothing was substituted, or "none there" where a condition fails."""
    if not values and not c.value.is_number:
        return ""
    v = value_at(c, values)
    if v is None:
        return _name("none there", fmt)
    if v.free_symbols:
        return "" if v == c.value else _math(_f(v, fmt), fmt)
    return _name(text_number(v), fmt)


def side_text(side: Side | None) -> str:
    """``F_weights dominates: <lever>`` (``memory-bound: <lever>`` against a ridge)."""
    if side is None:
        return "depends on the other symbols"
    who = f"{side.bound}-bound" if side.bound else f"{side.dominant} dominates"
    return f"{who}: {side.lever}" if side.lever else who


def reason_text(e: Entry) -> str:
    """Why ``e`` never crosses or was not solved, in words ('crosses' when it does)."""
    var = "any variable" if e.var is None else str(e.var)
    ratio = "" if e.detail is None else text(e.detail)
    table = {
        Reason.ZERO: f"{e.lhs if e.lhs_expr == 0 else e.rhs} is 0 for this workload",
        Reason.EQUAL: "the two are the same expression",
        Reason.INDEPENDENT: f"neither depends on {var} ({e.lhs}/{e.rhs} = {ratio})",
        Reason.PROPORTIONAL: f"both scale alike in {var}: {e.lhs}/{e.rhs} = {ratio} for "
                             f"every {var}",
        Reason.ONE_SIGN: f"{e.below.dominant if e.below else '?'} is larger for every {var}",
        Reason.NO_POSITIVE_ROOT: f"no positive {var} solves it",
        Reason.NOT_RATIONAL: f"not a rational function of {var}",
        Reason.DEGREE: f"degree {ratio} in {var} is beyond the budget's closed forms",
        Reason.SIZE: "the expressions are beyond the budget's size",
        Reason.NO_CLOSED_FORM: "the solver found no closed form",
        Reason.TIME: "the budget's time was spent before this pair",
    }
    return "crosses" if e.reason is None else table[e.reason]


def _chip(e: Entry) -> str:
    return "" if e.ridge is None or e.ridge.hardware is None else e.ridge.name


def _math(body: str, fmt: str) -> str:
    """``body`` as inline math in Markdown and LaTeX tables, as it is in text."""
    return f"${body}$" if fmt in ("latex", "markdown") else body


def _rows(a: Atlas, values: Mapping[sp.Symbol, sp.Expr], fmt: str) -> list[tuple[str, ...]]:
    """Cells of the crossings table: pair, variable, solution (with its invariants and
    textbook forms), conditions, value at ``values``."""
    rows: list[tuple[str, ...]] = []
    for e in a.crossings:
        assert e.var is not None
        for c in e.solutions:
            sol = _math(_eq(e.var, c.value, fmt), fmt)
            extra = [_eq(i.product, i.value, fmt) for i in e.invariants] + \
                [_eq(t.var, t.value, fmt) for t in e.textbook]
            if extra:
                sol += " (" + "; ".join(_math(x, fmt) for x in dict.fromkeys(extra)) + ")"
            when = " and ".join(_math(_f(x, fmt), fmt) for x in c.conditions) or "always"
            rows.append((_name(f"{e.lhs} = {e.rhs}", fmt), _math(_f(e.var, fmt), fmt), sol,
                         when, _value_text(c, values, fmt)))
    return rows


def _name(name: str, fmt: str) -> str:
    return markdown_escape(name) if fmt == "markdown" else latex_escape(name) \
        if fmt == "latex" else name


def atlas_notes(a: Atlas) -> list[str]:
    """What the table leaves out, a line each: the sides of every crossing, the pairs that
    never cross and why, the pairs left unsolved, and the limits of I."""
    lines = []
    for e in a.crossings:
        lines.append(f"{e.lhs} = {e.rhs} in {e.var}: below, {side_text(e.below)}; above, "
                     f"{side_text(e.above)}")
    for e in a.never:
        where = "" if e.var is None else f" in {e.var}"
        lines.append(f"never: {e.lhs} = {e.rhs}{where}: {reason_text(e)}")
    for e in a.unsolved:
        lines.append(f"unsolved: {e.lhs} = {e.rhs} in {e.var}: {reason_text(e)}")
    return lines + [f"limit: {_limit_text(lim)}" for lim in a.limits]


def _point(values: Mapping[sp.Symbol, sp.Expr]) -> str:
    return " ".join(f"{k}={text_number(v)}" for k, v in values.items())


def atlas_table(a: Atlas, values: Mapping[sp.Symbol, sp.Expr] | None = None,
                fmt: str = "text") -> str:
    """The crossings as one table in ``fmt`` (text, markdown, latex or html)."""
    if fmt not in TABLE_FORMATS:
        raise SymroofError(f"atlas table format {fmt!r}: expected one of {', '.join(TABLE_FORMATS)}")
    rows = _rows(a, values or {}, "text" if fmt == "html" else fmt)
    if fmt == "markdown":
        out = ["| " + " | ".join(_HEAD) + " |", "|" + "---|" * len(_HEAD)]
        return "\n".join(out + ["| " + " | ".join(r) + " |" for r in rows])
    if fmt == "latex":
        lines = [" & ".join(r) + r" \\" for r in rows]
        return "\n".join([r"\begin{tabular}{lllll}", " & ".join(_HEAD) + r" \\", r"\hline",
                          *lines, r"\end{tabular}"])
    if fmt == "html":
        head = "".join(f"<th>{html.escape(h)}</th>" for h in _HEAD)
        body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>"
                       for r in rows)
        return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
    widths = [max(len(r[i]) for r in [_HEAD, *rows]) for i in range(len(_HEAD))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip()
                     for r in [_HEAD, *rows])


def atlas_lines(a: Atlas, values: Mapping[sp.Symbol, sp.Expr] | None = None,
                fmt: str = "text") -> Iterable[str]:
    """``symroof atlas``: a heading, the table, then regimes, never-crossing and unsolved.

    In Markdown the notes are a list; in LaTeX everything but the table is a comment, so
    the output can be ``\\input`` as it is."""
    values = dict(values or {})
    at = f" (at {_point(values)})" if values else ""
    head = [f"atlas of {a.workload} over {', '.join(map(str, a.over))}{at}"]
    if a.named:
        head.append("names: " + ", ".join(f"{k} = {text(v)}" for k, v in a.named.items()))
    notes = atlas_notes(a)
    if fmt == "latex":
        head, notes = [f"% {x}" for x in head], [f"% {x}" for x in notes]
    elif fmt == "markdown":
        head, notes = [markdown_escape(x) for x in head], [f"- {markdown_escape(x)}" for x in notes]
    yield from head
    yield ""
    yield from atlas_table(a, values, fmt).splitlines()
    yield ""
    yield from notes


def _limit_text(lim: Asymptote) -> str:
    return f"{lim.of} -> {text(lim.value)} as {lim.var} -> {text(lim.to)}"


# -- JSON ------------------------------------------------------------------------------


def _formula(expr: sp.Expr) -> dict[str, Any]:
    return {"formula": str(expr), "display": text(expr)}


def _solution(c: Crossover, values: Mapping[sp.Symbol, sp.Expr]) -> dict[str, Any]:
    doc: dict[str, Any] = {**_formula(c.value),
                           "conditions": [_formula(x) for x in c.conditions],
                           "number": None if c.value.free_symbols else json_number(c.value)}
    if values:
        v = value_at(c, values)
        doc["at"] = None if v is None else json_number(v)
    return doc


def _side(side: Side | None) -> dict[str, Any] | None:
    return None if side is None else {"dominant": side.dominant, "other": side.other,
                                      "lever": side.lever, "bound": side.bound}


def _entry_doc(e: Entry, values: Mapping[sp.Symbol, sp.Expr]) -> dict[str, Any]:
    return {
        "kind": e.kind, "lhs": e.lhs, "rhs": e.rhs, "var": None if e.var is None else str(e.var),
        "status": e.status.value, "reason": None if e.reason is None else e.reason.value,
        "reason_text": reason_text(e),
        "detail": None if e.detail is None else _formula(e.detail),
        "lhs_formula": _formula(e.lhs_expr), "rhs_formula": _formula(e.rhs_expr),
        "solutions": [_solution(c, values) for c in e.solutions],
        "textbook": [_solution(c, {}) for c in e.textbook],
        "invariants": [{"product": str(i.product), "value": str(i.value),
                        "display": f"{text(i.product)} = {text(i.value)}"} for i in e.invariants],
        "below": _side(e.below), "above": _side(e.above),
        "asymptotes": [_asymptote(x) for x in e.asymptotes],
        "ridge": None if e.ridge is None else _ridge(e.ridge),
    }


def _asymptote(x: Asymptote) -> dict[str, Any]:
    return {"of": x.of, "var": str(x.var), "to": str(x.to), **_formula(x.value)}


def _ridge(r: Any) -> dict[str, Any]:
    return {"name": r.name, "hardware": r.hardware, "precision": r.precision,
            "level": r.level, "value": json_number(r.value) if r.value.is_number else str(r.value),
            "subs": {str(k): json_number(v) for k, v in r.subs.items()}}


def atlas_doc(a: Atlas, values: Mapping[sp.Symbol, sp.Expr] | None = None) -> dict[str, Any]:
    """``symroof atlas --json``: the whole atlas, every formula as text SymPy reads back."""
    values = dict(values or {})
    b = a.budget
    return {
        "workload": a.workload, "over": [str(v) for v in a.over],
        "subs": {str(k): json_number(v) for k, v in values.items()},
        "named": {str(k): str(v) for k, v in a.named.items()},
        "budget": {"max_degree": b.max_degree, "max_ops": b.max_ops,
                   "max_terms": b.max_terms, "seconds": b.seconds},
        "parts": [{"name": p.name, "quantity": p.quantity, "lever": p.lever,
                   **_formula(p.expr)} for p in a.parts],
        "ridges": [_ridge(r) for r in a.ridges],
        "entries": [_entry_doc(e, values) for e in a.entries],
        "limits": [_asymptote(x) for x in a.limits],
        "counts": {s.value: sum(1 for e in a.entries if e.status is s) for s in Status},
    }


# -- families ----------------------------------------------------------------------------


def _cell(e: Entry | None, fmt: str, values: Mapping[sp.Symbol, sp.Expr]) -> str:
    """A member's solutions, each with its number at ``values`` where it has one."""
    if e is None:
        return "-"
    if e.status is not Status.CROSSES:
        return f"{e.status.value} ({e.reason.value if e.reason else '?'})"
    cells = []
    for c in e.solutions:
        cell = _math(_f(c.value, fmt), fmt)
        number = value_at(c, values) if values else None
        if number is not None and not number.free_symbols and not c.value.is_number:
            cell += f" = {_name(text_number(number), fmt)}"
        cells.append(cell)
    return "; ".join(cells)


def family_table(fam: Family, fmt: str = "text",
                 values: Mapping[sp.Symbol, sp.Expr] | None = None) -> list[tuple[str, ...]]:
    """Rows of the family table: pair, variable, the general formula (if any), a cell per
    member (with its number at ``values``)."""
    point = dict(values or {})
    rows = []
    for r in fam.rows:
        var = "any" if r.var is None else str(r.var)
        general = [] if fam.general is None else [_cell(r.general, fmt, {})]
        rows.append((_name(f"{r.lhs} = {r.rhs}", fmt), var, *general,
                     *(_cell(e, fmt, point) for e in r.entries)))
    return rows


def family_lines(fam: Family, values: Mapping[sp.Symbol, sp.Expr] | None = None) -> Iterable[str]:
    """``symroof atlas --compare``: one aligned row per pair and variable."""
    head: Sequence[str] = ("crossover", "in", *(["general"] if fam.general else []),
                           *fam.names)
    rows = [tuple(head), *family_table(fam, "text", values)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    at = f" (at {_point(values)})" if values else ""
    yield "family: " + ", ".join(fam.names) + at
    yield ""
    for r in rows:
        yield "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip()


def family_doc(fam: Family, values: Mapping[sp.Symbol, sp.Expr] | None = None) -> dict[str, Any]:
    """``symroof atlas --compare --json``: each member's atlas (with its values at
    ``values``) and the rows."""
    return {"members": list(fam.names),
            "atlases": {n: atlas_doc(a, values) for n, a in zip(fam.names, fam.atlases)},
            "general": None if fam.general is None else atlas_doc(fam.general),
            "rows": [{"lhs": r.lhs, "rhs": r.rhs, "var": None if r.var is None else str(r.var),
                      "general": None if r.general is None else _entry_doc(r.general, {}),
                      "members": {n: None if e is None else _entry_doc(e, {})
                                  for n, e in zip(fam.names, r.entries)}}
                     for r in fam.rows]}

"""The appendix of a claim file: Markdown, LaTeX and JSON, from the checked results.

Claims appear in the documents' own order, grouped by section; claims that share a
``table`` are one table (printed and derived side by side) where the first of them
stands; charts follow the section named in their ``after``. The templates
(``templates/report/appendix.*.j2``) place strings this module has formatted; they do no
arithmetic.

>>> from symroof.verify import parse_claims, run_claims, EXAMPLE
>>> outcome = run_claims(parse_claims(EXAMPLE, "example.toml"))
>>> claims_json(outcome)[0]["derived"], claims_json(outcome)[0]["status"]
(2730.6666666666665, 'match')
>>> "2,730.67 FLOP/B" in render_markdown(outcome, [], "symroof report example.toml")
True
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Sequence
from typing import Any

import sympy as sp

from symroof.present.claim_charts import RenderedChart
from symroof.present.escape import latex_escape, markdown_escape
from symroof.present.formula import latex
from symroof.present.numbers import json_number, text_number
from symroof.present.templates import render
from symroof.verify import Outcome, Result

__all__ = ["claims_json", "claims_text", "render_markdown", "render_latex", "figure", "STATUSES"]

#: Statuses, in the order the summary lists them, with what each means.
STATUSES = {
    "match": "agrees with the document within its own rounding",
    "mismatch": "differs beyond the document's rounding; the note says what differs",
    "cited": "an empirical figure no formula yields, cited",
    "derived": "an exercise the document sets without an answer: symroof's answer",
    "error": "the claim as written could not be computed",
}

_SUPERSCRIPTS = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹", "0123456789")


def figure(value: sp.Expr) -> str:
    """A number for a reader: integers grouped (2,731), others to six significant figures
    (2,730.67), very large or small ones in scientific notation."""
    if value.is_Integer and abs(value) < 10**15:
        return f"{int(value):,}"
    if value != 0 and not (sp.Rational(1, 1000) <= abs(value) < 10**9):
        return text_number(value)
    return f"{float(value):,.6g}"


def _in_unit(value: sp.Expr | None, r: Result, flavour: str) -> str:
    """``value`` in the claim's unit, with the unit (escaped for ``flavour``)."""
    if value is None or value.free_symbols:
        return ""
    unit = r.claim.unit
    if unit in ("-", "ratio"):
        return figure(value / r.scale)
    shown = _escape(flavour)(unit)
    return f"{figure(value / r.scale)}{shown if unit == '%' else ' ' + shown}"


def _tex_text(text: str) -> str:
    """Text for pdflatex: escaped, with Greek letters and superscripts it cannot print
    as commands, and anything else unknown named rather than left to fail the build."""
    out = []
    for ch in latex_escape(text):
        if 0x20 <= ord(ch) < 0x7F or unicodedata.category(ch).startswith("L") and \
                0xC0 <= ord(ch) < 0x250:
            out.append(ch)
            continue
        name = unicodedata.name(ch, "")
        if name.startswith("GREEK"):
            letter = name.split()[-1].lower()
            out.append(f"$\\{letter.capitalize() if 'CAPITAL' in name else letter}$")
        elif "SUPERSCRIPT" in name:
            out.append(f"\\textsuperscript{{{ch.translate(_SUPERSCRIPTS)}}}")
        elif ch in "\u2018\u2019\u201c\u201d\u2026\u00a0":
            out.append({"\u2018": "`", "\u2019": "'", "\u201c": "``", "\u201d": "''",
                        "\u2026": "\\ldots{}", "\u00a0": "~"}[ch])
        else:
            out.append(f"[U+{ord(ch):04X}]")
    return "".join(out)


def _escape(flavour: str) -> Any:
    return _tex_text if flavour == "tex" else markdown_escape


#: LaTeX commands a document's own math may use in a quote (anything else is shown as text)
_MATH_COMMANDS = frozenset("""mathrm mathbb mathcal text approx times cdot frac sqrt
    Theta theta pi beta Psi psi ll gg le leq ge geq min max infty to sum prod left right
    quad qquad ldots dots alpha gamma mu sigma lambda""".split())
#: control symbols kept math may use: the spaces \, \; \: \! and "\ "
_MATH_SYMBOLS = frozenset(",;:! ")
_MATH = re.compile(r"\$([^$\n]+)\$")
# one token of kept math: a command, a character of the whitelist, a brace, or anything else
_MATH_TOKEN = re.compile(r"\\([A-Za-z]+|.?)|([A-Za-z0-9 +\-*/=()^_,.'|!:;]+)|([<>\[\]])|(\{)|(\})"
                         r"|(.)", re.S)
# what Markdown must not carry raw (an HTML tag, a link), written as math commands
_MD_MATH = {"<": "\\lt", ">": "\\gt", "[": "\\lbrack", "]": "\\rbrack"}
_TEXT_SCRIPT = re.compile(r"\\text\s*\{[^{}]*[\^_]")  # ^ or _ in \text{...}: a LaTeX error
_BREAKS = re.compile("[\r\n\v\f\x1c-\x1e\x85\u2028\u2029]+")  # a quote is one paragraph


def _kept_math(body: str, flavour: str) -> str | None:
    r"""``body`` (the text between a quote's ``$`` signs) as math for ``flavour``, or None
    when it is not plainly math: only letters, digits, spaces, the operators
    ``+-*/=()[]^_,.'|!:;<>``, balanced braces, ``\left``/``\right`` in pairs and the
    commands of :data:`_MATH_COMMANDS`. TeX's ``^^`` notation (``^^5c`` is a backslash) is
    refused anywhere; Markdown gets ``< > [ ]`` as commands, never raw.

    >>> _kept_math(r"I \approx 2N/b", "tex")
    'I \\approx 2N/b'
    >>> _kept_math("d > n", "md"), _kept_math("^^5cinput{x}", "tex"), _kept_math("a}{b", "md")
    ('d \\gt n', None, None)
    """
    if "^^" in body or _TEXT_SCRIPT.search(body):
        return None
    out: list[str] = []
    depth = pairs = 0
    for m in _MATH_TOKEN.finditer(body):
        command, plain, special, opened, closed, other = m.groups()
        if other is not None:
            return None
        if command is not None:
            if command not in _MATH_COMMANDS and command not in _MATH_SYMBOLS:
                return None
            pairs += (command == "left") - (command == "right")
            if pairs < 0:
                return None
        elif special is not None and flavour != "tex":
            after = body[m.end():m.end() + 1]
            out.append(_MD_MATH[special] + (" " if after.isalpha() else ""))
            continue
        depth += (opened is not None) - (closed is not None)
        if depth < 0:
            return None
        out.append(m.group(0))
    return "".join(out) if depth == 0 and pairs == 0 else None


def _quote(text: str, flavour: str) -> str:
    """A quote escaped for ``flavour``, keeping the document's own ``$...$`` math as math
    when it passes :func:`_kept_math`'s whitelist (else the whole ``$...$`` is text)."""
    esc = _escape(flavour)
    text = _BREAKS.sub(" ", text)  # a line break would end the Markdown's block quote
    out, last = [], 0
    for m in _MATH.finditer(text):
        math = _kept_math(m.group(1), flavour)
        if math is None:
            continue
        out.append(esc(text[last:m.start()]))
        out.append(f"${math}$")
        last = m.end()
    out.append(esc(text[last:]))
    return "".join(out)


def _claim_item(r: Result, flavour: str) -> dict[str, Any]:
    esc = _escape(flavour)
    c = r.claim
    subs = ", ".join(f"{latex(k)} = {latex(v)}" for k, v in r.subs.items())
    claimed = (_in_unit(r.claimed, r, flavour) if r.claimed is not None else
               latex(r.claimed_formula) if r.claimed_formula is not None else "")
    return {
        "id": esc(c.id) if flavour == "tex" else c.id, "anchor": c.id.replace(".", "-"),
        "quantity": esc(c.quantity),
        "quote": _quote(c.quote, flavour), "status": r.status, "kind": c.kind,
        "formula": latex(r.formula) if r.formula is not None else "",
        "derived_formula": (latex(r.derived) if r.derived is not None and r.derived.free_symbols
                            else ""),
        "subs": subs, "derived": _in_unit(r.derived, r, flavour),
        "claimed": claimed, "claimed_is_formula": r.claimed_formula is not None,
        "tolerance": esc(r.tolerance), "note": esc(c.note), "source": esc(c.source),
        "message": esc(r.message),
        "alternatives": [{"label": esc(a.label),
                          "value": (_in_unit(a.derived, r, flavour) if a.derived is not None and not
                                    a.derived.free_symbols else
                                    f"${latex(a.derived)}$" if a.derived is not None else ""),
                          "status": a.status or "", "message": esc(a.message)}
                         for a in r.alternatives],
    }


def _table_item(rows: list[Result], flavour: str) -> dict[str, Any]:
    esc = _escape(flavour)
    row_names: list[str] = []
    col_names: list[str] = []
    cells: dict[tuple[str, str], Result] = {}
    for r in rows:
        assert r.claim.table is not None
        row, col = r.claim.table["row"], r.claim.table["column"]
        row_names += [row] if row not in row_names else []
        col_names += [col] if col not in col_names else []
        cells[(row, col)] = r

    def shown(value: sp.Expr | None, r: Result) -> str:
        if value is not None and value.free_symbols:  # a formula answer: show the formula
            return f"${latex(value)}$"
        return _in_unit(value, r, flavour)

    def cell(r: Result | None) -> dict[str, str]:
        if r is None:
            return {"claimed": "", "derived": "", "status": ""}
        claimed = r.claimed if r.claimed is not None else r.claimed_formula
        return {"claimed": shown(claimed, r), "derived": shown(r.derived, r), "status": r.status}

    first = rows[0].claim.table
    assert first is not None
    return {"type": "table", "id": esc(first["id"]) if flavour == "tex" else first["id"],
            "anchor": first["id"].replace(".", "-"),
            "columns": [esc(c) for c in col_names],
            "rows": [{"name": esc(rn), "cells": [cell(cells.get((rn, cn))) for cn in col_names]}
                     for rn in row_names],
            "claims": [_claim_item(r, flavour) for r in rows]}


def context(outcome: Outcome, charts: Sequence[RenderedChart], command: str,
            flavour: str) -> dict[str, Any]:
    """Everything the appendix templates place, formatted for ``flavour`` (md or tex)."""
    esc = _escape(flavour)
    src = outcome.source
    tables: dict[str, list[Result]] = {}
    for r in outcome.results:
        if r.claim.table is not None:
            tables.setdefault(r.claim.table["id"], []).append(r)
    documents = []
    for doc in src.documents:
        sections: list[dict[str, Any]] = []
        by_title: dict[str, dict[str, Any]] = {}
        for r in outcome.results:
            if r.claim.document != doc.id and not (r.status == "error" and not r.claim.document
                                                   and doc is src.documents[0]):
                continue
            title = r.claim.section or "Claims that could not be read"
            if title not in by_title:
                by_title[title] = {"title": esc(title), "entries": [], "charts": []}
                sections.append(by_title[title])
            items = by_title[title]["entries"]
            table = r.claim.table
            if table is None:
                items.append({"type": "claim", **_claim_item(r, flavour)})
            elif tables[table["id"]][0] is r:
                items.append(_table_item(tables[table["id"]], flavour))
        for ch in charts:
            if ch.document == doc.id:
                target = by_title.get(ch.after) or (sections[-1] if sections else None)
                if target is not None:
                    target["charts"].append({"id": ch.id, "title": esc(ch.title),
                                             "svg_path": f"charts/{ch.id}.svg",
                                             "pgfplots": ch.pgfplots})
        documents.append({"id": doc.id, "title": esc(doc.title), "file": esc(doc.file),
                          "sections": sections})
    counts = outcome.counts
    return {"title": esc(src.title), "description": esc(src.description),
            "source": esc(src.path), "command": esc(command), "total": len(outcome.results),
            "counts": [{"status": s, "n": counts[s], "meaning": esc(STATUSES[s])}
                       for s in STATUSES if s in counts],
            "documents": documents}


def render_markdown(outcome: Outcome, charts: Sequence[RenderedChart], command: str) -> str:
    """The appendix as Markdown (math in ``$...$`` and ``$$...$$``)."""
    return render("report/appendix.md.j2", **context(outcome, charts, command, "md"))


def render_latex(outcome: Outcome, charts: Sequence[RenderedChart], command: str) -> str:
    """The appendix as a LaTeX document (pdflatex; pgfplots charts inline)."""
    return render("report/appendix.tex.j2", **context(outcome, charts, command, "tex"))


def claims_json(outcome: Outcome) -> list[dict[str, object]]:
    """One object per claim with exactly the keys id, seed, quote, quantity, claimed,
    derived, formula, unit, status, note (numbers in the claim's unit)."""
    files = {d.id: d.file for d in outcome.source.documents}
    out: list[dict[str, object]] = []
    for r in outcome.results:
        c = r.claim
        number = r.derived is not None and not r.derived.free_symbols
        formula = r.formula if r.formula is not None else (
            r.derived if r.derived is not None and r.derived.free_symbols else None)
        out.append({
            "id": c.id, "seed": files.get(c.document, ""), "quote": c.quote,
            "quantity": c.quantity,
            "claimed": json_number(r.claimed / r.scale) if r.claimed is not None else None,
            "derived": json_number(r.derived / r.scale) if number else None,
            "formula": str(formula) if formula is not None else None,
            "unit": c.unit, "status": r.status,
            "note": r.message if r.status == "error" else c.note})
    return out


def claims_text(outcome: Outcome) -> str:
    """:func:`claims_json` as JSON text: the agreed key order, UTF-8 as it is, never NaN."""
    return json.dumps(claims_json(outcome), indent=1, ensure_ascii=False, allow_nan=False) + "\n"

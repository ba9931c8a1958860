"""Claim files (TOML): documents, declared symbols, claims and charts, validated.

A claim file is data; nothing in it runs as Python. Each problem is a
:class:`SymroofError` that names the file, the line and the field; a problem in one
claim is recorded on that claim and the others are still read.

.. code-block:: toml

    title = "Seed appendix"

    [symbols]                      # names beyond the canonical ones
    peak = "quantity"

    [[document]]
    id = "000"
    file = "000_57a6be380080f65e.txt"
    title = "What the workload needs"

    [[claim]]
    id = "gemm-square-8192"
    document = "000"
    section = "GEMM intensity"
    quote = "an 8192^3 GEMM gives 2,731 FLOP/B"
    quantity = "intensity of a square GEMM at b = 2"
    unit = "FLOP/B"
    claimed = 2731
    rounding = {sig = 4}
    value = {workload = {builder = "gemm", args = ["n", "n", "n"]}, q = "I"}
    subs = {n = 8192, b = 2}

>>> cf = parse_claims(EXAMPLE, "example.toml")
>>> [c.id for c in cf.claims], cf.claims[0].line
(['gemm-square-8192'], 8)
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import sympy as sp

from symroof import budget
from symroof.errors import SymroofError
from symroof.files import parse_toml, read_text
from symroof.verify import units
from symroof.verify.compare import check_rounding

__all__ = ["Document", "Claim", "Chart", "ClaimFile", "OutOfScope", "load_claims", "parse_claims", "EXAMPLE",
           "validate_claim", "check_id", "check_symbols", "CLAIM_FIELDS", "MAX_CLAIMS"]

#: The most claims one claim file may hold (the seed appendix has a few hundred).
MAX_CLAIMS = 5_000

EXAMPLE = '''title = "Example"

[[document]]
id = "000"
file = "000.txt"
title = "A chapter"

[[claim]]
id = "gemm-square-8192"
document = "000"
section = "GEMM intensity"
quote = "an 8192^3 GEMM gives 2,731 FLOP/B"
quantity = "intensity of a square GEMM at b = 2"
unit = "FLOP/B"
claimed = 2731
rounding = {sig = 4}
value = {workload = {builder = "gemm", args = ["n", "n", "n"]}, q = "I"}
subs = {n = 8192, b = 2}
'''

#: Fields a claim may have, with what each means.
CLAIM_FIELDS = {
    "id": "unique name (letters, digits, - _ .)", "document": "the [[document]] id",
    "section": "the document's own heading", "quote": "a short quote, verbatim",
    "quantity": "what is claimed, in words", "unit": "the claimed value's unit (prefixes ok)",
    "claimed": "the number as printed", "claimed_formula": "the formula as printed",
    "rounding": "how the document rounded (one rule)", "value": "the recipe (the engine's way)",
    "subs": "values substituted into the recipe's formula",
    "status": '"cited": empirical, or quoted faithfully from a source (a recipe, if given, '
              'checks the inputs the source states, noting any inconsistency)',
    "source": "the reference a cited figure comes from", "kind": '"exercise" for an answer',
    "note": "what differs and why, or the assumptions",
    "table": "{id, row, column, title?}: a cell of the document's table (title: its caption)",
    "alternatives": "[{label, value, subs}]: the figure under other conventions",
    "assumptions": "what the document states it assumes or ignores (the verdict's basis)",
    "propagated": "ids of printed figures the document computed this one from",
    "places": "[{section, quote, claimed, convention}]: the same quantity printed elsewhere",
    "fits": "{what, need, capacity}: a feasibility check, a finding when need > capacity",
    "cause": "the root cause of an erratum, in words (claims with one cause are one erratum)",
}
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,99}")
_SYMBOL = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,63}")


def check_id(value: object, where: str) -> str:
    """An id from a claim file (a claim's, a chart's, a table's): letters, digits,
    ``- _ .``, starting with a letter or digit, at most 100 characters. Ids become file
    names (``charts/<id>.svg``) and LaTeX labels, so nothing else passes.

    >>> check_id("roofline-h100", "f.toml:3: chart 'x' field 'id'")
    'roofline-h100'
    >>> check_id("../x", "f.toml:3: chart '../x' field 'id'")
    Traceback (most recent call last):
    ...
    symroof.errors.SymroofError: f.toml:3: chart '../x' field 'id': expected an id of letters, digits, - _ . (starting with a letter or digit, at most 100 characters), got '../x'
    """
    if not isinstance(value, str) or not _ID.fullmatch(value):
        raise SymroofError(f"{where}: expected an id of letters, digits, - _ . (starting with a "
                           f"letter or digit, at most 100 characters), got {value!r}")
    return value


def check_symbols(symbols: object, where: str) -> dict[str, str]:
    """A ``[symbols]`` table: ASCII names (they reach the LaTeX through the formula
    printer) to ``"dimension"`` or ``"quantity"``."""
    if not isinstance(symbols, Mapping):
        raise SymroofError(f"{where}: [symbols] must be a table of name = \"dimension\"|"
                           "\"quantity\"")
    for name in symbols:
        if not _SYMBOL.fullmatch(name):
            raise SymroofError(f"{where}: [symbols] {name!r}: expected a name of ASCII letters, "
                               "digits and _ (starting with a letter, at most 64 characters)")
    return dict(symbols)


@dataclass(frozen=True)
class Document:
    """A source document: an id, its file name and title."""

    id: str
    file: str
    title: str


@dataclass(frozen=True)
class Claim:
    """One claim as the file states it (the recipe stays data until it is run)."""

    id: str
    line: int
    document: str = ""
    section: str = ""
    quote: str = ""
    quantity: str = ""
    unit: str = "-"
    claimed: sp.Expr | None = None
    claimed_formula: str | None = None
    rounding: Mapping[str, object] = field(default_factory=lambda: {"exact": True})
    value: Any = None
    subs: Mapping[str, Any] = field(default_factory=dict)
    status: str | None = None           # "cited", or None: checked
    source: str = ""
    kind: str = "claim"                 # "claim" or "exercise"
    note: str = ""
    table: Mapping[str, str] | None = None
    alternatives: tuple[Mapping[str, Any], ...] = ()
    error: str | None = None            # what was wrong with the claim as written
    assumptions: tuple[str, ...] = ()   # stated by the document; the verdict's basis
    propagated: tuple[str, ...] = ()    # printed inputs whose rounding the document carried
    places: tuple[Mapping[str, Any], ...] = ()  # the same quantity printed elsewhere
    fits: Mapping[str, Any] | None = None       # {what, need, capacity}
    cause: str = ""                     # an erratum's root cause (groups the errata table)


@dataclass(frozen=True)
class OutOfScope:
    """A statement of a document that no claim checks (a measurement, a request for an
    explanation), with the reason; the appendix lists them."""

    document: str
    section: str
    quote: str
    reason: str


@dataclass(frozen=True)
class Chart:
    """A chart of the appendix: a roofline or a curve, placed after a section."""

    id: str
    line: int
    spec: Mapping[str, Any]


@dataclass(frozen=True)
class ClaimFile:
    """A parsed claim file."""

    path: str
    title: str
    description: str
    symbols: Mapping[str, str]
    documents: tuple[Document, ...]
    claims: tuple[Claim, ...]
    charts: tuple[Chart, ...]
    text: str = ""
    date: str = ""                      # the claim file's date (the appendix's front matter)
    out_of_scope: tuple[OutOfScope, ...] = ()  # statements the file does not check, and why


def _lines_of(text: str, header: str) -> list[int]:
    """1-based line numbers of each ``[[header]]`` in order (one pass over the text)."""
    pattern = re.compile(rf"^[ \t]*\[\[[ \t]*{re.escape(header)}[ \t]*\]\]", re.M)
    out, line, last = [], 1, 0
    for m in pattern.finditer(text):
        line += text.count("\n", last, m.start())
        last = m.start()
        out.append(line)
    return out


@functools.lru_cache(maxsize=8)
def _toml_lines(text: str) -> list[str]:
    """The lines of a claim file as TOML counts them (a newline is LF or CRLF), split once
    per text however many fields are looked up."""
    return text.split("\n")


def _line_at(text: str, needle: str) -> int:
    """The 1-based line of the first ``needle`` line in ``text`` (0 when there is none)."""
    m = re.search(rf"^[ \t]*{re.escape(needle)}", text, re.M)
    return text.count("\n", 0, m.start()) + 1 if m else 0


@functools.lru_cache(maxsize=8192)  # a claim's checks name the same fields many times
def field_line(text: str, start: int, name: str) -> int:
    """The line of field ``name`` in the entry whose ``[[...]]`` header is at line ``start``."""
    lines = _toml_lines(text)
    for i in range(start, len(lines)):  # lines[start] is the line after the header
        line = lines[i].strip()
        if line.startswith("[["):
            break
        if re.match(rf"{re.escape(name)}\s*=", line) or line.startswith(f"[claim.{name}"):
            return i + 1
    return start


def validate_claim(raw: Mapping[str, Any], line: int, text: str, path: str,
                   documents: set[str]) -> Claim:
    """A claim from its raw table; a problem is kept on the claim (``error``), not raised."""
    cid = raw.get("id")
    where = f"{path}:{line}: claim {cid!r}"
    try:
        return _validated(raw, line, text, path, documents, where)
    except SymroofError as err:  # rendered in its own section, with its quote, and the error
        def kept(name: str) -> str:
            value = raw.get(name)
            return value.strip() if isinstance(value, str) else ""
        document = kept("document") if kept("document") in documents else ""
        return Claim(id=str(cid) if isinstance(cid, str) else f"line-{line}", line=line,
                     document=document, section=kept("section") if document else "",
                     quote=kept("quote"), quantity=kept("quantity"), error=str(err))


def _validated(raw: Mapping[str, Any], line: int, text: str, path: str, documents: set[str],
               where: str) -> Claim:
    def at(name: str) -> str:
        return f"{path}:{field_line(text, line, name)}: claim {raw.get('id')!r} field {name!r}"

    unknown = set(raw) - set(CLAIM_FIELDS)
    if unknown:
        name = sorted(unknown)[0]
        raise SymroofError(f"{at(name)}: unknown field; expected some of {', '.join(CLAIM_FIELDS)}")
    cid = check_id(raw.get("id"), at("id"))
    for name in ("document", "section", "quote", "quantity", "unit"):
        if not isinstance(raw.get(name), str) or not raw[name].strip():
            raise SymroofError(f"{at(name)}: required, a non-empty string")
    if raw["document"] not in documents:
        raise SymroofError(f"{at('document')}: no [[document]] with id {raw['document']!r}; "
                           f"known: {', '.join(sorted(documents))}")
    units.split(raw["unit"], at("unit"))
    claimed = raw.get("claimed")
    if claimed is not None and (isinstance(claimed, bool) or not isinstance(claimed, (int, float))
                                or not math.isfinite(claimed)):
        raise SymroofError(f"{at('claimed')}: expected a finite number as printed, got "
                           f"{claimed!r}")
    for name in ("note", "source", "cause"):
        if name in raw and not isinstance(raw[name], str):
            raise SymroofError(f"{at(name)}: expected a string, got {raw[name]!r}")
    formula = raw.get("claimed_formula")
    if formula is not None and not isinstance(formula, str):
        raise SymroofError(f"{at('claimed_formula')}: expected a formula string, got {formula!r}")
    if claimed is not None and formula is not None:
        raise SymroofError(f"{at('claimed_formula')}: give claimed or claimed_formula, not both")
    status = raw.get("status")
    kind = raw.get("kind", "claim")
    if kind not in ("claim", "exercise"):
        raise SymroofError(f"{at('kind')}: expected \"claim\" or \"exercise\", got {kind!r}")
    if status is not None:
        if status != "cited":
            raise SymroofError(f"{at('status')}: only \"cited\" may be stated (the others are "
                               "derived), got {status!r}")
        if not isinstance(raw.get("source"), str) or not raw["source"]:
            raise SymroofError(f"{at('source')}: a cited claim names its source")
        if "value" in raw and raw.get("claimed") is None:
            raise SymroofError(f"{at('value')}: a cited claim with a recipe states claimed "
                               "(the figure as the source reports it)")
    elif "value" not in raw:
        raise SymroofError(f"{at('value')}: required (the engine's recipe), unless status = "
                           "\"cited\"")
    elif kind == "claim" and claimed is None and formula is None:
        raise SymroofError(f"{at('claimed')}: a checked claim states claimed or claimed_formula "
                           "(an answer with nothing printed is kind = \"exercise\")")
    rounding = raw.get("rounding", {"exact": True})
    rounding = check_rounding(rounding, at("rounding"))
    table = raw.get("table")
    if table is not None and (not isinstance(table, Mapping) or not {"id", "row", "column"}
                              <= set(table) <= {"id", "row", "column", "title"}
                              or not all(isinstance(v, str) for v in table.values())):
        raise SymroofError(f"{at('table')}: expected {{id = ..., row = ..., column = ...}} "
                           "(and optionally title = ...)")
    if table is not None:
        check_id(table["id"], f"{at('table')} id")
    alternatives = raw.get("alternatives", [])
    if not isinstance(alternatives, list) or not all(
            isinstance(a, Mapping) and isinstance(a.get("label"), str) and "value" in a
            for a in alternatives):
        raise SymroofError(f"{at('alternatives')}: expected a list of {{label, value, subs}}")
    subs = raw.get("subs", {})
    if not isinstance(subs, Mapping):
        raise SymroofError(f"{at('subs')}: expected a table of symbol = value")
    # here, not at the top: recipe imports this module (the assumptions it can honour are its own)
    from symroof.verify.recipe import ASSUMPTIONS
    assumptions = raw.get("assumptions", [])
    if not isinstance(assumptions, list) or not all(isinstance(a, str) for a in assumptions):
        raise SymroofError(f"{at('assumptions')}: expected a list of strings")
    for a in assumptions:
        if a not in ASSUMPTIONS:
            raise SymroofError(f"{at('assumptions')}: the recipe cannot honour {a!r}; it "
                               f"honours {', '.join(repr(k) for k in ASSUMPTIONS)}")
    propagated = raw.get("propagated", [])
    if not isinstance(propagated, list) or not all(isinstance(a, str) for a in propagated):
        raise SymroofError(f"{at('propagated')}: expected a list of claim ids")
    places = raw.get("places", [])
    if not isinstance(places, list) or not all(
            isinstance(p, Mapping) and set(p) <= {"section", "quote", "claimed", "convention"}
            and isinstance(p.get("quote"), str) and isinstance(p.get("convention"), str)
            and isinstance(p.get("claimed"), (int, float))
            and not isinstance(p.get("claimed"), bool) for p in places):
        raise SymroofError(f"{at('places')}: expected a list of {{section, quote, claimed, "
                           "convention}} (claimed a number as printed)")
    if places and claimed is None:
        raise SymroofError(f"{at('places')}: places compare printed numbers; the claim needs "
                           "claimed")
    fits = raw.get("fits")
    if fits is not None and (not isinstance(fits, Mapping) or set(fits) != {
            "what", "need", "capacity"} or not isinstance(fits["what"], str)):
        raise SymroofError(f"{at('fits')}: expected {{what = \"...\", need = recipe, "
                           "capacity = recipe}")
    return Claim(
        id=cid, line=line, document=raw["document"], section=raw["section"].strip(),
        quote=raw["quote"].strip(), quantity=raw["quantity"].strip(), unit=raw["unit"],
        claimed=None if claimed is None else (sp.Integer(claimed) if isinstance(claimed, int)
                                              else sp.Rational(repr(claimed))),
        claimed_formula=formula, rounding=rounding, value=raw.get("value"), subs=dict(subs),
        status=status, source=raw.get("source", ""), kind=kind, note=raw.get("note", "").strip(),
        table=dict(table) if table else None, alternatives=tuple(alternatives),
        assumptions=tuple(assumptions), propagated=tuple(propagated),
        places=tuple(dict(p) for p in places), fits=dict(fits) if fits else None,
        cause=raw.get("cause", "").strip())


def parse_claims(text: str, path: str = "<claims>") -> ClaimFile:
    """A claim file from its text (``path`` names it in errors)."""
    data = parse_toml(text, path)
    known = {"title", "description", "date", "symbols", "document", "claim", "chart",
             "out_of_scope"}
    extra = set(data) - known
    if extra:
        raise SymroofError(f"{path}: unknown top-level key {sorted(extra)[0]!r}; expected "
                           f"{', '.join(sorted(known))}")
    docs = []
    for i, d in enumerate(data.get("document", [])):
        if not (isinstance(d, Mapping) and all(isinstance(d.get(k), str) and d[k]
                                                for k in ("id", "file", "title"))):
            raise SymroofError(f"{path}: [[document]] #{i + 1} needs id, file and title strings")
        docs.append(Document(d["id"], d["file"], d["title"]))
    ids = {d.id for d in docs}
    claim_lines = _lines_of(text, "claim")
    raw_claims = data.get("claim", [])
    if not isinstance(raw_claims, list):
        raise SymroofError(f"{path}: claim must be an array of tables ([[claim]])")
    if len(raw_claims) > MAX_CLAIMS:
        line = claim_lines[MAX_CLAIMS] if len(claim_lines) > MAX_CLAIMS else 0
        raise SymroofError(f"{path}:{line}: {len(raw_claims):,} claims, more than the limit of "
                           f"{MAX_CLAIMS:,} claims per file (split the file)")
    claims: list[Claim] = []
    seen: dict[str, int] = {}
    for i, raw in enumerate(raw_claims):
        line = claim_lines[i] if i < len(claim_lines) else 0
        c = validate_claim(raw, line, text, path, ids)
        if c.error is None and c.id in seen:
            c = Claim(id=c.id, line=line, error=f"{path}:{field_line(text, line, 'id')}: claim "
                      f"{c.id!r} field 'id': duplicate id (first at line {seen[c.id]})")
        seen.setdefault(c.id, line)
        claims.append(c)
    symbols = check_symbols(data.get("symbols", {}), f"{path}:{_line_at(text, '[symbols]')}")
    date = data.get("date", "")
    if not isinstance(date, str):  # a TOML date would print in the front matter as Python's repr
        raise SymroofError(f"{path}:{_line_at(text, 'date')}: date: expected a string as the "
                           f"front matter prints it (\"2026-12-02\"), got {date!r}")
    return ClaimFile(path, str(data.get("title", Path(path).stem)),
                     str(data.get("description", "")), symbols, tuple(docs),
                     tuple(claims), _charts(data.get("chart", []), text, path), text,
                     date.strip(), _out_of_scope(data.get("out_of_scope", []), ids, text, path))


def _out_of_scope(raw: object, documents: set[str], text: str, path: str
                  ) -> tuple[OutOfScope, ...]:
    """The ``[[out_of_scope]]`` tables: {document, section, quote, reason}, all strings."""
    keys = ("document", "section", "quote", "reason")
    lines = _lines_of(text, "out_of_scope")
    out = []
    for i, entry in enumerate(raw if isinstance(raw, list) else [raw]):
        where = f"{path}:{lines[i] if i < len(lines) else 0}: out_of_scope #{i + 1}"
        if not isinstance(entry, Mapping) or set(entry) != set(keys) or not all(
                isinstance(entry[k], str) and entry[k].strip() for k in keys):
            raise SymroofError(f"{where}: expected {{{', '.join(keys)}}}, each a non-empty string")
        if entry["document"] not in documents:
            raise SymroofError(f"{where} field 'document': no [[document]] with id "
                               f"{entry['document']!r}")
        out.append(OutOfScope(*(entry[k].strip() for k in keys)))
    return tuple(out)


def _charts(raw: object, text: str, path: str) -> tuple[Chart, ...]:
    """The ``[[chart]]`` tables; a chart's id names its file (``charts/<id>.svg``), so it
    is checked like a claim's (present, the fixed characters, unique)."""
    if not isinstance(raw, list) or not all(isinstance(c, Mapping) for c in raw):
        raise SymroofError(f"{path}: chart must be an array of tables ([[chart]])")
    lines = _lines_of(text, "chart")
    charts: list[Chart] = []
    seen: dict[str, int] = {}
    for i, c in enumerate(raw):
        line = lines[i] if i < len(lines) else 0
        where = f"{path}:{field_line(text, line, 'id') if line else 0}: chart {c.get('id')!r} " \
                "field 'id'"
        if "id" not in c:
            raise SymroofError(f"{where}: required (the chart's file is charts/<id>.svg)")
        cid = check_id(c["id"], where)
        if cid in seen:
            raise SymroofError(f"{where}: duplicate id (first at line {seen[cid]})")
        seen[cid] = line
        charts.append(Chart(cid, line, c))
    return tuple(charts)


def load_claims(path: str | Path) -> ClaimFile:
    """A claim file from disk (a regular file, UTF-8, under the size limit)."""
    return parse_claims(read_text(path, "claim file", limit=budget.current().file_bytes),
                        str(path))

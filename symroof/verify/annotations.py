"""Claims annotated inside a Markdown or LaTeX document, invisible when it is rendered.

An annotation is the body of a claim-file ``[[claim]]`` (TOML) placed next to the
sentence it checks:

- Markdown: an HTML comment ``<!-- symroof ... -->`` (one or more lines);
- LaTeX: consecutive comment lines that start with ``% symroof:``.

Defaults make annotations short: ``id`` is ``line-N``, ``section`` the nearest heading
above (``#`` or ``\\section{...}``), ``quote`` the text line just above the annotation,
``quantity`` the quote. A ``symroof symbols`` annotation declares extra symbols, as a
claim file's ``[symbols]`` table does.

>>> doc = '''# GEMM
... An 8192^3 GEMM at 16 bits gives 2,731 FLOP/B.
... <!-- symroof claimed = 2731
... unit = "FLOP/B"
... rounding = {sig = 4}
... value = {workload = {builder = "gemm", args = ["n", "n", "n"]}, q = "I"}
... subs = {n = 8192, b = 2} -->
... '''
>>> (c,) = annotated_claims(doc, "chapter.md").claims
>>> c.id, c.section, c.line, c.quote
('line-3', 'GEMM', 3, 'An 8192^3 GEMM at 16 bits gives 2,731 FLOP/B.')
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from symroof import budget
from symroof.errors import SymroofError
from symroof.files import parse_toml, read_text
from symroof.verify.schema import Claim, ClaimFile, Document, validate_claim

__all__ = ["Annotation", "find_annotations", "annotated_claims", "load_annotated"]

_MD_OPEN = re.compile(r"<!--\s*symroof\b")
_TEX = re.compile(r"^\s*%\s*symroof:(.*)$")
_MD_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$")
_TEX_HEADING = re.compile(r"\\(?:chapter|section|subsection|subsubsection)\*?\{([^}]*)\}")


@dataclass(frozen=True)
class Annotation:
    """One annotation: where it starts, its TOML body, and its context in the text."""

    line: int
    body: str
    section: str
    quote: str


def _is_tex(name: str) -> bool:
    return name.endswith((".tex", ".ltx", ".sty"))


def find_annotations(text: str, name: str) -> list[Annotation]:
    """Every annotation of a document, in order."""
    lines = text.splitlines()
    out: list[Annotation] = []
    section, last_text = "", ""
    i = 0
    tex = _is_tex(name)
    while i < len(lines):
        line = lines[i]
        heading = (_TEX_HEADING.search(line) if tex else _MD_HEADING.match(line))
        if heading:
            section = heading.group(1).strip()
        if tex and _TEX.match(line):
            start, body = i, []
            while i < len(lines) and _TEX.match(lines[i]):
                body.append(_TEX.match(lines[i]).group(1))  # type: ignore[union-attr]
                i += 1
            out.append(Annotation(start + 1, "\n".join(body), section, last_text))
            continue
        opened = None if tex else _MD_OPEN.search(line)
        if opened:
            start, chunk = i, line[opened.end():]
            while "-->" not in chunk and i + 1 < len(lines):
                i += 1
                chunk += "\n" + lines[i]
            if "-->" not in chunk:
                raise SymroofError(f"{name}:{start + 1}: the symroof annotation is never closed "
                                   "(expected -->)")
            out.append(Annotation(start + 1, chunk[:chunk.index("-->")], section, last_text))
        elif line.strip() and not heading and not line.lstrip().startswith("%"):
            last_text = line.strip()
        i += 1
    return out


def annotated_claims(text: str, name: str) -> ClaimFile:
    """The claims annotated in a document (one bad annotation becomes an error result)."""
    doc = Document("doc", Path(name).name, Path(name).name)
    symbols: dict[str, Any] = {}
    claims: list[Claim] = []
    seen: set[str] = set()
    for a in find_annotations(text, name):
        body = a.body.strip()
        where = f"{name}:{a.line}"
        if body.startswith("symbols"):
            symbols.update(parse_toml(body[len("symbols"):], where, "the annotation "))
            continue
        try:
            raw = parse_toml(body, where, "the annotation ")
        except SymroofError as err:
            claims.append(Claim(id=f"line-{a.line}", line=a.line, error=str(err)))
            continue
        raw.setdefault("id", f"line-{a.line}")
        raw.setdefault("document", doc.id)
        raw.setdefault("section", a.section or doc.title)
        raw.setdefault("quote", a.quote or f"(line {a.line})")
        raw.setdefault("quantity", raw["quote"])
        raw.setdefault("unit", "-")
        claim = validate_claim(raw, a.line, "", name, {doc.id})
        if claim.error is None and claim.id in seen:
            claim = Claim(id=claim.id, line=a.line,
                          error=f"{where}: claim {claim.id!r} field 'id': duplicate id")
        seen.add(claim.id)
        claims.append(claim)
    return ClaimFile(name, Path(name).name, "", symbols, (doc,), tuple(claims), (), text)


def load_annotated(path: str | Path) -> ClaimFile:
    """The annotated claims of a Markdown or LaTeX file on disk."""
    return annotated_claims(read_text(path, "document", limit=budget.current().file_bytes),
                            str(path))

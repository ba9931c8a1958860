"""Claims annotated inside a document, invisible when it is rendered.

An annotation is the body of a claim-file ``[[claim]]`` (TOML) placed next to the
sentence it checks, in the comment syntax of the format the author writes in:

- Markdown and Quarto (``.md``, ``.markdown``, ``.qmd``): an HTML comment
  ``<!-- symroof ... -->`` (one or more lines);
- MyST (``.md``, ``.myst``): the same, or MyST's comment lines ``% symroof: ...``;
- LaTeX (``.tex``, ``.ltx``): consecutive comment lines that start with ``% symroof:``;
- reStructuredText (``.rst``, ``.rest``): a comment
  ``.. symroof`` at the start of a line, its body on the same line and the indented
  lines under it;
- Jupyter notebooks (``.ipynb``, read with nbformat, the ``notebooks`` extra): the
  markdown cells, read as Markdown; messages say ``FILE:cell N:LINE``.

Defaults make annotations short: ``id`` is ``line-N``, ``section`` the nearest heading
above (``#``, ``\\section{...}`` or an underlined reST title), ``quote`` the text line
just above the annotation, ``quantity`` the quote. A ``symroof symbols`` annotation
declares extra symbols, as a claim file's ``[symbols]`` table does.

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

import bisect
import re
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from symroof import budget
from symroof.errors import SymroofError
from symroof.files import parse_toml, read_text
from symroof.verify.schema import Claim, ClaimFile, Document, check_symbols, validate_claim

__all__ = ["Annotation", "find_annotations", "annotated_claims", "load_annotated", "line_starts",
           "MAX_ANNOTATIONS", "FORMATS", "document_format", "notebook_markdown", "load_document"]

#: The formats ``symroof check`` reads, each with the file name endings it reads them from.
FORMATS = {"markdown": (".md", ".markdown", ".qmd", ".myst", ".mdown"),
           "latex": (".tex", ".ltx", ".sty"), "rst": (".rst", ".rest"),
           "notebook": (".ipynb",)}

#: The most annotations one document may hold.
MAX_ANNOTATIONS = 5_000

_BREAK = re.compile(r"\r\n|\r|\n")  # what an editor counts as a line break, and nothing else
_MD_OPEN = re.compile(r"<!--\s*symroof\b")
_TEX = re.compile(r"^\s*%\s*symroof:(.*)$")
_MD_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$")
_TEX_HEADING = re.compile(r"\\(?:chapter|section|subsection|subsubsection)\*?\{([^}]*)\}")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")
_INDENTED = re.compile(r"^(?: {4}| {0,3}\t)")
_LIST_ITEM = re.compile(r"^ {0,3}(?:[-*+]|[0-9]{1,9}[.)])(?:[ \t]|$)")
_BACKTICKS = re.compile(r"`+")
_COMMENT = re.compile(r"(?<!\\)%")
_VERBATIM = re.compile(r"\\begin\{(verbatim\*?|Verbatim\*?|BVerbatim|LVerbatim|lstlisting|minted|"
                       r"comment|alltt|filecontents\*?)\}")


@dataclass(frozen=True)
class Annotation:
    """One annotation: where it starts, its TOML body, and its context in the text."""

    line: int
    body: str
    section: str
    quote: str


def document_format(name: str) -> str:
    """The format a document's name says (Markdown for any ending not listed).

    >>> document_format("ch.qmd"), document_format("ch.rst"), document_format("nb.ipynb")
    ('markdown', 'rst', 'notebook')
    """
    lower = name.lower()
    return next((f for f, ends in FORMATS.items() if lower.endswith(ends)), "markdown")


def _is_tex(name: str) -> bool:
    return document_format(name) == "latex"


def line_starts(text: str) -> list[int]:
    """The offset where each line starts; lines end at ``\\n``, ``\\r\\n`` or a lone ``\\r``,
    as editors count them (a form feed or U+2028 inside a line is not a break).

    >>> line_starts("a\\r\\nb\\rc\\nd\\x0ce")
    [0, 3, 5, 7]
    """
    return [0, *(m.end() for m in _BREAK.finditer(text))]


def _code_spans_masked(line: str) -> str:
    """``line`` with its inline code spans (CommonMark: a run of n backticks up to the
    next run of exactly n) blanked out; linear in the line."""
    runs = [(m.start(), m.end()) for m in _BACKTICKS.finditer(line)]
    if len(runs) < 2:
        return line
    following: list[int | None] = [None] * len(runs)  # the next run of the same length
    last: dict[int, int] = {}
    for k in range(len(runs) - 1, -1, -1):
        size = runs[k][1] - runs[k][0]
        following[k] = last.get(size)
        last[size] = k
    out, k, done = [], 0, 0
    while k < len(runs):
        close = following[k]
        if close is None:
            k += 1
            continue
        out.append(line[done:runs[k][0]])
        out.append(" " * (runs[close][1] - runs[k][0]))
        done = runs[close][1]
        k = close + 1
    out.append(line[done:])
    return "".join(out)


class _Scan:
    """What a scan has found so far: annotations, the section, the last line of text."""

    def __init__(self, text: str, name: str) -> None:
        self.text, self.name = text, name
        self.starts = line_starts(text)
        self.lines = _BREAK.split(text)  # as many as self.starts
        self.out: list[Annotation] = []
        self.section = self.last_text = ""

    def add(self, line: int, body: str) -> None:
        if len(self.out) >= MAX_ANNOTATIONS:
            raise SymroofError(f"{self.name}:{line}: more than {MAX_ANNOTATIONS:,} annotations in "
                               "one document (split it)")
        self.out.append(Annotation(line, body, self.section, self.last_text))

    def comment_block(self, i: int) -> int:
        """Add the run of ``% symroof:`` lines from line ``i`` as one annotation; the line
        after it."""
        start, body = i, []
        while i < len(self.lines) and (m := _TEX.match(self.lines[i])):
            body.append(m.group(1))
            i += 1
        self.add(start + 1, "\n".join(body))
        return i

    def line_of(self, offset: int) -> int:
        """The 0-based line of ``offset``."""
        return bisect.bisect_right(self.starts, offset) - 1


def _markdown(scan: _Scan) -> None:
    """Annotations outside fenced and indented code blocks and inline code."""
    lines, text = scan.lines, scan.text
    fence: tuple[str, int] | None = None
    blank_before, in_code, in_list = True, False, False
    i = 0
    while i < len(lines):
        line = lines[i]
        blank = not line.strip()
        if fence is not None:  # inside a fenced block: only its closing fence counts
            m = _FENCE.match(line)
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= fence[1] and \
                    not m.group(2).strip():
                fence = None
            i += 1
            continue
        m = _FENCE.match(line)
        if m and not (m.group(1)[0] == "`" and "`" in m.group(2)):
            fence, blank_before, in_code = (m.group(1)[0], len(m.group(1))), False, False
            i += 1
            continue
        if not blank and _INDENTED.match(line) and (in_code or blank_before and not in_list):
            in_code, blank_before = True, False
            i += 1
            continue
        if blank:
            blank_before = True
            i += 1
            continue
        in_list = bool(_LIST_ITEM.match(line)) or (in_list and (not blank_before or
                                                                bool(_INDENTED.match(line))))
        in_code, blank_before = False, False
        heading = _MD_HEADING.match(line)
        if heading:
            scan.section = heading.group(1).strip()
        if _TEX.match(line):  # MyST's comment lines: % symroof: ...
            i = scan.comment_block(i)
            continue
        masked = _code_spans_masked(line)
        opened = _MD_OPEN.search(masked)
        if opened is None:
            if not heading and not line.lstrip().startswith("%"):
                scan.last_text = line.strip()
            i += 1
            continue
        begin = scan.starts[i] + opened.end()
        close = text.find("-->", begin)  # one search, however far the end is
        if close == -1:
            raise SymroofError(f"{scan.name}:{i + 1}: the symroof annotation is never closed "
                               "(expected -->)")
        scan.add(i + 1, text[begin:close])
        i = scan.line_of(close) + 1


def _latex(scan: _Scan) -> None:
    """``% symroof:`` comment lines outside verbatim environments."""
    lines = scan.lines
    i = 0
    while i < len(lines):
        line = lines[i]
        verbatim = _VERBATIM.search(_COMMENT.split(line, 1)[0])  # not one named in a comment
        if verbatim:
            end = f"\\end{{{verbatim.group(1)}}}"
            j = i if end in line[verbatim.end():] else i + 1
            while j < len(lines) and end not in lines[j]:
                j += 1
            i = j + 1
            continue
        heading = _TEX_HEADING.search(line)
        if heading:
            scan.section = heading.group(1).strip()
        if _TEX.match(line):
            i = scan.comment_block(i)
            continue
        if line.strip() and not heading and not line.lstrip().startswith("%"):
            scan.last_text = line.strip()
        i += 1


_RST_OPEN = re.compile(r"^\.\.[ \t]+symroof\b(.*)$")
_RST_ADORNMENT = re.compile(r"^([=\-`:'\"~^_*+#<>.])\1+\s*$")
_RST_LITERAL = re.compile(r"::\s*$")


def _rst(scan: _Scan) -> None:
    """``.. symroof`` comments at the start of a line, with their indented body; titles
    are a text line over an adornment line (``=====``) at least as long; indented blocks
    (a literal block after ``::``, a directive's content) are skipped."""
    lines = scan.lines
    i = 0
    while i < len(lines):
        line = lines[i]
        opened = _RST_OPEN.match(line)
        if opened:
            start, body = i, [opened.group(1)]
            i += 1
            while i < len(lines) and (not lines[i].strip() or lines[i][:1] in " \t"):
                body.append(lines[i])
                i += 1
            rest = textwrap.dedent("\n".join(body[1:])).strip("\n")
            scan.add(start + 1, "\n".join(x for x in (body[0].strip(), rest) if x))
            continue
        following = lines[i + 1] if i + 1 < len(lines) else ""
        if line.strip() and line[:1] not in " \t" and _RST_ADORNMENT.match(following) and \
                len(following.rstrip()) >= len(line.rstrip()) and not _RST_ADORNMENT.match(line):
            scan.section = line.strip()
            i += 2
            continue
        if line.strip() and line[:1] not in " \t" and not _RST_ADORNMENT.match(line) and \
                not line.startswith(".."):
            scan.last_text = line.strip()
        i += 1


def find_annotations(text: str, name: str) -> list[Annotation]:
    """Every annotation of a document, in order (one pass; line numbers as editors count
    them). Annotations shown as code are skipped: in Markdown, fenced and indented code
    blocks and inline code; in LaTeX, ``verbatim``, ``lstlisting`` and their kin; in
    reStructuredText, indented blocks."""
    scan = _Scan(text, name)
    {"latex": _latex, "rst": _rst}.get(document_format(name), _markdown)(scan)
    return scan.out


def annotated_claims(text: str, name: str,
                     default_id: Callable[[int], str] = "line-{}".format) -> ClaimFile:
    """The claims annotated in a document (one bad annotation becomes an error result)."""
    doc = Document("doc", Path(name).name, Path(name).name)
    symbols: dict[str, Any] = {}
    claims: list[Claim] = []
    seen: set[str] = set()
    for a in find_annotations(text, name):
        body = a.body.strip()
        where = f"{name}:{a.line}"
        if body.startswith("symbols"):
            symbols.update(check_symbols(parse_toml(body[len("symbols"):], where,
                                                    "the annotation "), where))
            continue
        try:
            raw = parse_toml(body, where, "the annotation ")
        except SymroofError as err:
            claims.append(Claim(id=default_id(a.line), line=a.line, error=str(err)))
            continue
        raw.setdefault("id", default_id(a.line))
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
    """The annotated claims of a document on disk (a notebook's lines are those of its
    markdown cells joined; :func:`load_document` also says how to name them)."""
    return load_document(path)[0]


def load_document(path: str | Path) -> tuple[ClaimFile, Callable[[str], str]]:
    """The annotated claims of a document on disk, and a function that rewrites
    ``PATH:LINE`` in a message as the author finds it: ``PATH:cell N:LINE`` in a
    notebook, unchanged elsewhere."""
    name = str(path)
    text = read_text(path, "document", limit=budget.current().file_bytes)
    if document_format(name) != "notebook":
        return annotated_claims(text, name), lambda message: message
    markdown, cells = notebook_markdown(text, name)
    if not cells:  # no markdown cell: nothing is annotated, nothing to name
        return annotated_claims(markdown, name), lambda message: message
    pattern = re.compile(rf"{re.escape(name)}:(\d+)")
    starts = [c[0] for c in cells]

    def place(line: int) -> tuple[int, int]:
        """(cell number, line in the cell) of a line of the joined text."""
        first, cell = cells[max(bisect.bisect_right(starts, line) - 1, 0)]
        return cell, line - first + 1

    def relabel(message: str) -> str:
        return pattern.sub(lambda m: "{}:cell {}:{}".format(name, *place(int(m.group(1)))),
                           message)
    return annotated_claims(markdown, name, lambda n: "cell-{}-line-{}".format(*place(n))), \
        relabel


def notebook_markdown(text: str, name: str) -> tuple[str, list[tuple[int, int]]]:
    """A notebook's markdown cells as one Markdown text (a blank line between cells),
    and where each cell starts: (its first line in that text, its number among all the
    notebook's cells, from 1)."""
    try:
        import nbformat  # optional (the notebooks extra), and only a notebook needs it
    except ImportError:
        raise SymroofError(f"{name}: reading a notebook needs nbformat (pip install "
                           "'symroof[notebooks]')") from None
    try:
        nb = nbformat.reads(text, as_version=4)
    except Exception as err:  # noqa: BLE001 - nbformat raises several kinds for a bad file
        raise SymroofError(f"{name}: not a Jupyter notebook ({type(err).__name__}: "
                           f"{' '.join(str(err).split())[:200]})") from None
    parts: list[str] = []
    cells: list[tuple[int, int]] = []
    line = 1
    for number, cell in enumerate(nb.get("cells", []), 1):
        if cell.get("cell_type") != "markdown":
            continue
        source = "".join(cell.get("source", ""))
        cells.append((line, number))
        parts.append(source)
        line += len(line_starts(source)) + 1  # the cell's lines and the blank line after
    return "\n\n".join(parts) + "\n", cells

"""The appendix's text for a reader: escaping for Markdown and pdflatex, the math a
document's prose carries (kept as math where it is safe), quotations, and links to claims.

:mod:`symroof.present.appendix` places these in its templates.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from typing import Any

from symroof.present.escape import latex_escape, markdown_escape

__all__ = ["prose"]

_SUPERSCRIPTS = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹", "0123456789")

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


#: A limit written in ASCII in a claim file ("B -> oo", "M, N -> oo"): typeset as math
_LIMIT = re.compile(r"(?<![\w$\\])([A-Za-z](?:_[A-Za-z0-9]+)?(?:, [A-Za-z](?:_[A-Za-z0-9]+)?)*)"
                    r" ?-> ?oo(?!\w)")


def _limits(esc: Any) -> Any:
    r"""``esc`` with each ASCII limit of the text (``B -> oo``) as math, ``$B \to \infty$``.

    >>> print(_limits(markdown_escape)("ceiling (B -> oo), M, N -> oo"))
    ceiling \($B \to \infty$\), $M, N \to \infty$
    """
    def run(text: object) -> str:
        text = str(text)
        out, last = [], 0
        for m in _LIMIT.finditer(text):
            out.append(esc(text[last:m.start()]))
            out.append(f"${m.group(1)} \\to \\infty$")
            last = m.end()
        out.append(esc(text[last:]))
        return "".join(out)
    return run


_TEX_LIMITS, _MD_LIMITS = _limits(_tex_text), _limits(markdown_escape)


def _escape(flavour: str) -> Any:
    """Claim-file text escaped for ``flavour``, its ASCII limits typeset as math."""
    return _TEX_LIMITS if flavour == "tex" else _MD_LIMITS


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


#: TeX a quote's text (a fragment of math cut by the quote) may carry, as Unicode for Markdown
_TEX_TEXT = {"\\times": "×", "\\approx": "≈", "\\to": "→", "\\cdot": "·", "\\leq": "≤",
             "\\le": "≤", "\\geq": "≥", "\\ge": "≥", "\\ll": "≪", "\\gg": "≫",
             "\\infty": "∞", "\\pi": "π", "\\beta": "β", "\\Theta": "Θ", "\\,": " ",
             "\\ldots": "…", "\\dots": "…", "\\sim": "~", "$": ""}
_TEX_WORD = re.compile("|".join(re.escape(k) + ("(?![A-Za-z])" if k[-1].isalpha() else "")
                                for k in sorted(_TEX_TEXT, key=len, reverse=True)))


def _md_text(text: str) -> str:
    """Quote text outside kept math, for Markdown: a math fragment's commands as Unicode
    and its lone ``$`` dropped (a reader would otherwise see raw TeX), then escaped."""
    return markdown_escape(_TEX_WORD.sub(lambda m: _TEX_TEXT[m.group(0)], text))


def _tex_quote_text(text: str) -> str:
    """Quote text outside kept math, for LaTeX: a math fragment's commands as math
    (``\\times`` as ``$\\times$``) and its lone ``$`` dropped, the rest escaped, as
    :func:`_md_text` does for Markdown."""
    out, last = [], 0
    for m in _TEX_WORD.finditer(text):
        out.append(_escape("tex")(text[last:m.start()]))
        word = m.group(0)
        out.append("" if word == "$" else " " if word == "\\," else f"${word}$")
        last = m.end()
    out.append(_escape("tex")(text[last:]))
    return "".join(out)


def _quote(text: str, flavour: str) -> str:
    """A quote escaped for ``flavour``, keeping the document's own ``$...$`` math as math
    when it passes :func:`_kept_math`'s whitelist (else the whole ``$...$`` is text)."""
    esc = _md_text if flavour != "tex" else _tex_quote_text
    text = _BREAKS.sub(" ", text)  # a line break would end the Markdown's block quote
    out, last = [], 0
    for m in _MATH.finditer(text):
        math = _kept_math(m.group(1), flavour)
        out.append(esc(text[last:m.start()]))
        # refused math is the quote's text, dollars and all (only a lone $ is dropped)
        out.append(f"${math}$" if math is not None else
                   _escape(flavour)(m.group(0)) if flavour == "tex" else markdown_escape(m.group(0)))
        last = m.end()
    out.append(esc(text[last:]))
    return "".join(out)


_TIMES = re.compile(r"(?<=[0-9A-Za-z)]) x (?=[0-9A-Z(])")  # "12 x 4,096": a product in prose


def _links(text: str, ids: re.Pattern[str] | None, flavour: str) -> str:
    """Prose (outside math) escaped for ``flavour``, a product's `` x `` as ``×``, and
    each claim id the text names a link to that claim."""
    esc = _escape(flavour)
    text = _TIMES.sub(" \u00d7 ", text)
    if ids is None:
        return esc(text)
    out, last = [], 0
    for m in ids.finditer(text):
        cid = m.group(0)
        anchor = cid.replace(".", "-")
        out.append(esc(text[last:m.start()]))
        out.append(f"\\hyperref[{anchor}]{{{_escape(flavour)(cid)}}}" if flavour == "tex"
                   else f"[{cid}](#{anchor})")
        last = m.end()
    out.append(esc(text[last:]))
    return "".join(out)


def _id_pattern(ids: Sequence[str]) -> re.Pattern[str] | None:
    """A pattern that finds any of ``ids`` as a whole word (longest first)."""
    if not ids:
        return None
    alternatives = "|".join(re.escape(i) for i in sorted(ids, key=len, reverse=True))
    return re.compile(rf"(?<![\w.-])(?:{alternatives})(?![\w-])")


_BREAK_AFTER_DOT = ".{}\\allowbreak "  # where a long dotted name in a code font may break
_PROSE_SPAN = re.compile(r"`([^`\n]+)`|\$([^$\n]+)\$")  # a code span, or math


def prose(text: str, flavour: str, ids: re.Pattern[str] | None = None) -> str:
    """A note (or a cause, a finding) for ``flavour``: its ``$...$`` math typeset as math
    where :func:`_kept_math` accepts it, a name from code in backticks in a code font, a product ``a x b`` as ``a × b``, claim ids
    (those ``ids`` finds) as links to their claims, everything else escaped.

    >>> prose("P x 2 B with $P = 12LD^2$ (s1)", "md", _id_pattern(["s1"]))
    'P × 2 B with $P = 12LD^2$ \\\\([s1](#s1)\\\\)'
    """
    text = _BREAKS.sub(" ", text)
    out, last = [], 0
    for m in _PROSE_SPAN.finditer(text):
        out.append(_links(text[last:m.start()], ids, flavour))
        code, body = m.group(1), m.group(2)
        if code is not None:  # a name from code: as it is, in a code font
            shown = _escape(flavour)(code).replace(".", _BREAK_AFTER_DOT)  # long names break
            out.append(f"\\texttt{{{shown}}}" if flavour == "tex" else f"`{_code(code)}`")
        else:
            math = _kept_math(body, flavour)
            out.append(f"${math}$" if math is not None else _links(m.group(0), ids, flavour))
        last = m.end()
    out.append(_links(text[last:], ids, flavour))
    return "".join(out)


def _code(text: str) -> str:
    """Text for a Markdown code span: as it is (a backslash is literal there), with a
    backtick, which would end the span, and line breaks replaced."""
    return _BREAKS.sub(" ", text).replace("`", "'")

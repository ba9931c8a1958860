r"""Escaping for LaTeX and Markdown: every name from a user's graph, model or file passes
through here before it reaches a report, a chart or a command's Markdown.

Names such as ``W_q``, ``50%``, ``R&D``, ``#1``, ``$x`` or ``<x>`` must never break a
document. LaTeX's default font encoding prints ``< > |`` as other glyphs, and pdflatex has
no glyph for some Unicode symbols, so those become commands too. A line break would
end a paragraph inside a chart label, so whitespace runs become one space.

>>> latex_escape("W_q 50% R&D #1 $x <y>")
'W\\_q 50\\% R\\&D \\#1 \\$x \\textless{}y\\textgreater{}'
>>> markdown_escape("d_ff *bold* |a|")
'd\\_ff \\*bold\\* \\|a\\|'
"""

from __future__ import annotations

import re

__all__ = ["latex_escape", "markdown_escape"]

_LATEX = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
        "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
        # OT1, LaTeX's default font encoding, prints < > | as other glyphs
        "<": r"\textless{}", ">": r"\textgreater{}", "|": r"\textbar{}",
        # symbols pdflatex's utf8 input has no glyph for (accented letters it has)
        "\u00d7": r"$\times$", "\u00b5": r"$\mu$", "\u03bc": r"$\mu$", "\u00b7": r"$\cdot$",
        "\u2248": r"$\approx$", "\u2264": r"$\leq$", "\u2265": r"$\geq$", "\u2192": r"$\to$",
        "\u221e": r"$\infty$", "\u2013": "--", "\u2014": "---", "\u2212": "-"}
_LATEX_RE = re.compile("|".join(re.escape(k) for k in _LATEX))
_SPACES = re.compile(r"\s+")
_MD_RE = re.compile(r"([\\`*_{}\[\]()#+\-!|<>$%&~^])")


def latex_escape(text: object) -> str:
    """Text safe inside LaTeX outside math mode (whitespace runs become one space)."""
    return _LATEX_RE.sub(lambda m: _LATEX[m.group(0)], _SPACES.sub(" ", str(text)))


def markdown_escape(text: object) -> str:
    """Text safe inside Markdown (no emphasis, tables, headings or math triggered)."""
    return _MD_RE.sub(r"\\\1", str(text))

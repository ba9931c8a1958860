"""Report plumbing: escaping filters for LaTeX and Markdown (the reports' templates use them).

Names from users' graphs and files (``W_q``, ``50%``, ``R&D``, ``#1``, ``$x``) must never
break a report, so every name passes through an escaping filter.

>>> latex_escape("W_q 50% R&D #1 $x")
'W\\\\_q 50\\\\% R\\\\&D \\\\#1 \\\\$x'
>>> markdown_escape("d_ff *bold* |a|")
'd\\\\_ff \\\\*bold\\\\* \\\\|a\\\\|'
"""

from __future__ import annotations

import re

__all__ = ["latex_escape", "markdown_escape"]

_LATEX = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#",
          "_": r"\_", "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}",
          "^": r"\textasciicircum{}"}
_LATEX_RE = re.compile("|".join(re.escape(k) for k in _LATEX))
_MD_RE = re.compile(r"([\\`*_{}\[\]()#+\-!|<>$%&~^])")


def latex_escape(text: object) -> str:
    """Text safe inside LaTeX (outside math mode)."""
    return _LATEX_RE.sub(lambda m: _LATEX[m.group(0)], str(text))


def markdown_escape(text: object) -> str:
    """Text safe inside Markdown (no emphasis, tables, headings or math triggered)."""
    return _MD_RE.sub(r"\\\1", str(text))

"""Report plumbing: escaping filters for LaTeX and Markdown, and the Jinja2 environment.

Names from users' graphs and files (``W_q``, ``50%``, ``R&D``, ``#1``, ``$x``) must never
break a report, so every name passes through an escaping filter.

>>> latex_escape("W_q 50% R&D #1 $x")
'W\\\\_q 50\\\\% R\\\\&D \\\\#1 \\\\$x'
>>> markdown_escape("d_ff *bold* |a|")
'd\\\\_ff \\\\*bold\\\\* \\\\|a\\\\|'
"""

from __future__ import annotations

import re
from functools import cache

__all__ = ["latex_escape", "markdown_escape", "environment"]

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


@cache
def environment():  # type: ignore[no-untyped-def]
    """The Jinja2 environment reports render with (filters ``tex``, ``md``, ``latex_expr``)."""
    import jinja2

    from symroof.display import latex, text

    env = jinja2.Environment(loader=jinja2.PackageLoader("symroof", "templates"),
                             autoescape=False, keep_trailing_newline=True,
                             undefined=jinja2.StrictUndefined)
    env.filters.update(tex=latex_escape, md=markdown_escape, latex_expr=latex, text_expr=text)
    return env

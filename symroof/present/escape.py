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

Text from a document that reaches a terminal (an error line, what ``symroof check``
prints) passes through :func:`terminal_safe`: control characters (C0, DEL, C1, ESC among
them) and the bidirectional overrides that reorder what a reader sees are written as
escapes, so a document can neither drive the terminal nor hide text.

>>> terminal_safe("a\x1b[2Jb\x9bc\u202ed\te")
'a\\x1b[2Jb\\x9bc\\u202ed\te'
"""

from __future__ import annotations

import re

__all__ = ["latex_escape", "markdown_escape", "terminal_safe", "terminal_json"]

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


# control characters a document has no business showing (C0 but tab and line breaks,
# DEL, C1): named as [U+001B] in both outputs
_CONTROLS = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


def _named(m: re.Match[str]) -> str:
    return f"[U+{ord(m.group(0)):04X}]"


def latex_escape(text: object) -> str:
    """Text safe inside LaTeX outside math mode (whitespace runs become one space)."""
    return _LATEX_RE.sub(lambda m: _LATEX[m.group(0)],
                         _CONTROLS.sub(_named, _SPACES.sub(" ", str(text))))


def markdown_escape(text: object) -> str:
    """Text safe inside Markdown (no emphasis, tables, headings or math triggered; a
    control character is named, ``[U+001B]``, not written)."""
    return _MD_RE.sub(r"\\\1", _CONTROLS.sub(_named, str(text)))


# C0 controls but tab, DEL, C1 controls, and the bidirectional embeddings, overrides and
# isolates (U+061C, U+200E/F, U+202A-E, U+2066-9), plus the line and paragraph separators
_TERMINAL = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029"
                       "\u202a-\u202e\u2066-\u2069]")

# the same but JSON's own whitespace between values (a newline, a tab)
_JSON_TERMINAL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028"
                            "\u2029\u202a-\u202e\u2066-\u2069]")


def _terminal_escape(m: re.Match[str]) -> str:
    code = ord(m.group(0))
    return {"\n": "\\n", "\r": "\\r"}.get(m.group(0)) or (
        f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")


def terminal_safe(text: object) -> str:
    """``text`` with every character that could drive a terminal or reorder a line
    written as an escape (``\\x1b``, ``\\n``, ``\\u202e``); tabs stay."""
    return _TERMINAL.sub(_terminal_escape, str(text))


def terminal_json(text: str) -> str:
    r"""JSON text (as ``json.dumps`` writes it, C0 controls already escaped) with the
    characters :func:`terminal_safe` escapes written as ``\uXXXX``: the same JSON value,
    nothing a terminal acts on.

    >>> terminal_json('{"q": "a\x9b\u202e"}')
    '{"q": "a\\u009b\\u202e"}'
    """
    return _JSON_TERMINAL.sub(lambda m: f"\\u{ord(m.group(0)):04x}", text)

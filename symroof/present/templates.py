"""The Jinja2 environments that render symroof's templates (top-level ``templates/``).

Templates ship inside the wheel as the package ``symroof.templates``, so an installed
symroof renders exactly as the checkout does. Undefined names are errors
(``StrictUndefined``). LaTeX templates use delimiters that LaTeX never produces:
``((* block *))``, ``((( variable )))`` and ``((= comment =))``; SVG and HTML templates
escape values for XML automatically.

>>> environment("tex").variable_start_string
'((('
"""

from __future__ import annotations

from functools import cache
from typing import Any

import jinja2

__all__ = ["environment", "render"]

_LATEX_DELIMITERS = dict(block_start_string="((*", block_end_string="*))",
                         variable_start_string="(((", variable_end_string=")))",
                         comment_start_string="((=", comment_end_string="=))")


@cache
def environment(flavour: str) -> jinja2.Environment:
    """The environment for ``flavour``: ``"tex"``, ``"xml"`` (SVG, HTML) or ``"text"``
    (Markdown, plain text)."""
    if flavour not in ("tex", "xml", "text"):
        raise ValueError(f"template flavour {flavour!r}: expected tex, xml or text")
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("symroof.templates", "."),
        undefined=jinja2.StrictUndefined, keep_trailing_newline=True,
        trim_blocks=True, lstrip_blocks=True, autoescape=flavour == "xml",
        **(_LATEX_DELIMITERS if flavour == "tex" else {}))
    return env


def _flavour(name: str) -> str:
    stem = name.removesuffix(".j2")
    if stem.endswith(".tex"):
        return "tex"
    if stem.endswith((".svg", ".html")):
        return "xml"
    return "text"


def render(name: str, **values: Any) -> str:
    """Render template ``name`` (its suffix picks the environment) with ``values``."""
    return environment(_flavour(name)).get_template(name).render(**values)

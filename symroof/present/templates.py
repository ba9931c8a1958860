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

from symroof.errors import SymroofError

__all__ = ["environment", "render"]



@cache
def environment(flavour: str) -> jinja2.Environment:
    """The environment for ``flavour``: ``"tex"``, ``"xml"`` (SVG, HTML) or ``"text"``
    (Markdown, plain text)."""
    if flavour not in ("tex", "xml", "text"):
        raise SymroofError(f"template flavour {flavour!r}: expected tex, xml or text")
    tex = flavour == "tex"
    return jinja2.Environment(
        loader=jinja2.PackageLoader("symroof.templates", "."),
        undefined=jinja2.StrictUndefined, keep_trailing_newline=True,
        trim_blocks=True, lstrip_blocks=True, autoescape=flavour == "xml",
        block_start_string="((*" if tex else "{%", block_end_string="*))" if tex else "%}",
        variable_start_string="(((" if tex else "{{",
        variable_end_string=")))" if tex else "}}",
        comment_start_string="((=" if tex else "{#", comment_end_string="=))" if tex else "#}")


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

"""Rich display in notebooks: a mixin whose ``_repr_*_`` methods ask a renderer registry.

Records low in the library (an ``Analysis``, a ``Roofline``, a ``Crossover``) carry the
:class:`Rich` mixin; the renderers live in :mod:`symroof.present.notebook`, which
registers them when ``symroof`` is imported. Without a renderer for its type, a record's
``_repr_*_`` returns None, which Jupyter reads as "no such representation". This module
imports only ``symroof.errors``, so any layer may use it.

>>> class Box(Rich):
...     pass
>>> Box()._repr_html_() is None
True
>>> with scoped():
...     register(Box, "html", lambda box: "<b>box</b>")
...     Box()._repr_html_()
'<b>box</b>'
>>> Box()._repr_html_() is None
True
"""

from __future__ import annotations

import importlib
import sys

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from symroof.errors import SymroofError

__all__ = ["FORMATS", "Rich", "register", "render", "renderer", "scoped"]

#: What a renderer writes: HTML, LaTeX (a math-mode document part, ``$...$`` included)
#: and Markdown.
FORMATS = ("html", "latex", "markdown")

Renderer = Callable[[Any], str]

_RENDERERS: dict[tuple[type, str], Renderer] = {}


def register(cls: type, fmt: str, fn: Renderer) -> None:
    """Render instances of ``cls`` (and its subclasses) as ``fmt`` with ``fn``."""
    if fmt not in FORMATS:
        raise SymroofError(f"rich format {fmt!r}: expected one of {', '.join(FORMATS)}")
    _RENDERERS[(cls, fmt)] = fn


def renderer(obj: object, fmt: str) -> Renderer | None:
    """The renderer registered for the nearest class of ``obj``, or None."""
    for cls in type(obj).__mro__:
        fn = _RENDERERS.get((cls, fmt))
        if fn is not None:
            return fn
    return None


def render(obj: object, fmt: str) -> str | None:
    """``obj`` rendered as ``fmt``, or None when no renderer is registered for it. The
    first render loads the renderers if nothing has yet (``import symroof`` registers them
    on first use of a package name, but code that imported a module of the package
    directly, ``from symroof.cli import main``, never goes through that door)."""
    fn = renderer(obj, fmt)
    if fn is None and "symroof.present.notebook" not in sys.modules:
        # by name, at display time: the renderers import most of the library above us
        importlib.import_module("symroof.present.notebook")
        fn = renderer(obj, fmt)
    return None if fn is None else fn(obj)


@contextmanager
def scoped() -> Iterator[None]:
    """Registrations made inside the block are undone when it ends (for tests)."""
    before = dict(_RENDERERS)
    try:
        yield
    finally:
        _RENDERERS.clear()
        _RENDERERS.update(before)


class Rich:
    """Jupyter's rich-display hooks, answered by the registered renderers."""

    __slots__ = ()

    def _repr_html_(self) -> str | None:
        return render(self, "html")

    def _repr_latex_(self) -> str | None:
        return render(self, "latex")

    def _repr_markdown_(self) -> str | None:
        return render(self, "markdown")

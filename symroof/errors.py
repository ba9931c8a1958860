"""The one error type symroof raises for bad input or an impossible request."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

__all__ = ["SymroofError", "suggest", "shown"]


class SymroofError(ValueError):
    """A clear, one-line error that names the field, node or file at fault.

    >>> raise SymroofError("gemm 'up': inner dimensions differ (D vs 4*D)")
    Traceback (most recent call last):
    ...
    symroof.errors.SymroofError: gemm 'up': inner dimensions differ (D vs 4*D)
    """


def suggest(name: str, known: Iterable[str]) -> str:
    """A ' (did you mean ...?)' suffix naming the closest known names, or ''.

    >>> suggest("h100", ["h100-sxm", "h100-pcie", "l4"])
    " (did you mean 'h100-sxm', 'h100-pcie'?)"
    """
    close = difflib.get_close_matches(name, sorted(known), n=3, cutoff=0.5)
    if not close:
        return ""
    return " (did you mean " + ", ".join(repr(c) for c in close) + "?)"


def shown(value: object, limit: int = 80) -> str:
    """``repr(value)`` for a message, cut at ``limit`` characters; a value whose repr
    fails (an integer past Python's digit limit inside it) is described by its type.

    >>> shown(None), shown(b"x")
    ('None', "b'x'")
    >>> shown({"n": 10**5000})
    'a dict (too large to show)'
    """
    try:
        text = repr(value)
    except ValueError:
        return f"a {type(value).__name__} (too large to show)"
    return text if len(text) <= limit else text[:limit - 3] + "..."

"""One claim's block of the seed appendix's Markdown, for the appendix tests."""

from __future__ import annotations


def block(md: str, cid: str) -> str:
    """The Markdown of claim ``cid``: from its anchor (dots in an id become dashes) to
    the next anchor."""
    return md.split(f'<a id="{cid.replace(".", "-")}"></a>')[1].split("\n<a id=")[0]

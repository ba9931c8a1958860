"""Presentation: every formatter of numbers, formulas and records, and the templates.

The library returns typed records and plain algebra; this package turns them into text,
JSON, Markdown, LaTeX, SVG and HTML. Nothing below it formats a number for a person.
"""

from __future__ import annotations

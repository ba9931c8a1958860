"""``python -m symroof``: the same as the ``symroof`` command."""

from __future__ import annotations

from symroof.cli import run

run()

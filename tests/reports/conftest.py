"""What the appendix tests share: the seed appendix's Markdown and its results by claim
id, both from the session fixtures of tests/conftest.py (one claim's block of the
Markdown: appendix_md.block)."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="module")
def md(seed_appendix: Path) -> str:
    return (seed_appendix / "seed_appendix.md").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def by_id(seed_outcome):
    return {r.claim.id: r for r in seed_outcome.results}

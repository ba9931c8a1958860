"""Suite-wide guards."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from symroof.cost import RULES
from symroof.passes.backward import GRADIENT_RULES


@pytest.fixture(autouse=True)
def _rule_tables_unchanged() -> Iterator[None]:
    """No test leaves a rule registered (tests register inside ``table.scoped()``)."""
    before = (dict(RULES), dict(GRADIENT_RULES))
    yield
    assert (dict(RULES), dict(GRADIENT_RULES)) == before, "a test left a rule registered"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--update-golden", action="store_true", default=False,
                     help="rewrite golden files (tests/golden/) from the current output")


@pytest.fixture
def update_golden(request: pytest.FixtureRequest) -> bool:
    """True when the run was started with ``--update-golden``."""
    return bool(request.config.getoption("--update-golden"))

"""No ``simplify()`` on the main path, by either door (issue 16, item 5).

tests/reports/test_report.py replaces ``sympy.simplify``; an ``expr.simplify()`` call reaches
SymPy's function through ``sympy.simplify.simplify`` instead, so both are replaced here,
and the check that they are the doors is itself tested.
"""

from __future__ import annotations

import importlib
import json

import pytest
import sympy

from symroof.cli import main
from symroof.symbols import n
from symroof.verify import workers

WHERE = importlib.import_module("sympy.simplify.simplify")  # sympy.simplify is the function


def _refuse(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    seen: list[str] = []

    def refuse(expr: object, *args: object, **kwargs: object) -> object:
        seen.append(str(expr))
        raise AssertionError(f"simplify called on {expr}")

    monkeypatch.setattr(sympy, "simplify", refuse)
    monkeypatch.setattr(WHERE, "simplify", refuse)
    return seen


def test_both_doors_are_watched(monkeypatch: pytest.MonkeyPatch) -> None:
    seen = _refuse(monkeypatch)
    for call in (lambda: sympy.simplify(n + n), lambda: (n + n).simplify()):
        with pytest.raises(AssertionError, match="simplify called"):
            call()
    assert seen == ["2*n", "2*n"]


def test_the_main_job_never_simplifies(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    seen = _refuse(monkeypatch)
    # one process: a forked worker's call would land in its own copy of `seen` (and the
    # claim would become an "internal error" result there)
    monkeypatch.setattr(workers, "_forkable", lambda: False)
    assert main(["report", "appendix", "--out", str(tmp_path)]) == 0
    assert seen == []
    statuses = {c["status"] for c in json.loads((tmp_path / "seed_claims.json").read_text())}
    assert "error" not in statuses and "match" in statuses

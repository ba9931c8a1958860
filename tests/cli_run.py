"""Running ``symroof`` in-process from a test: one helper each for a command that must
succeed with ``--json`` and one that must fail with one clean line (shared by tests/cli
and tests/robustness; a test module importing another worked only in collection order)."""

from __future__ import annotations

import json

from symroof.cli import main

__all__ = ["run_json", "run_error"]


def run_json(capsys, *argv: str) -> dict:
    """A command that must succeed, with ``--json``: its document."""
    code = main([*argv, "--json"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert captured.err == ""
    return json.loads(captured.out)


def run_error(capsys, *argv: str) -> str:
    """A command that must fail cleanly: its one error line."""
    code = main(list(argv))
    captured = capsys.readouterr()
    assert code == 2
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1, captured.err
    assert lines[0].startswith("symroof: error:")
    assert "Traceback" not in captured.err
    return lines[0]

"""Records with many fields are built by keyword inside the library (issue 24): a
positional ``Roofline(...)`` of fifteen fields reads as a list of values whose meaning
hangs on their order; one field added in the middle would shift every call silently.
Users may still build them positionally (the public constructor is unchanged)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2] / "symroof"

#: Records built by keyword only inside symroof/.
BY_KEYWORD = ("Roofline", "Request")


def positional_calls(source: str, names: tuple[str, ...]) -> list[tuple[str, int]]:
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and node.args:
            f = node.func
            name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) \
                else None
            if name in names:
                found.append((name, node.lineno))
    return found


def test_the_scan_finds_a_positional_call():
    assert positional_calls("r = Roofline('h', p, 'hbm')\nq = Roofline(hardware='h')",
                            BY_KEYWORD) == [("Roofline", 1)]


def test_records_are_built_by_keyword():
    found = [(str(path.relative_to(ROOT)), name, line) for path in sorted(ROOT.rglob("*.py"))
             for name, line in positional_calls(path.read_text(), BY_KEYWORD)]
    assert found == []

"""``import symroof`` is lazy (PEP 562) and still offers every name (issue 16).

Each re-export resolves, on first use, to the very object its module defines; the
functions named like a module of the package (``sr.evaluate``, ``sr.display``,
``sr.atlas``) stay functions after those modules are imported; start-up imports nothing
heavy. Process-level checks run in a fresh interpreter, where nothing is imported yet.
"""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

import symroof as sr

ROOT = Path(__file__).resolve().parents[2]


def _fresh(code: str) -> str:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, check=True).stdout.strip()


def _type_checking_imports() -> dict[str, str]:
    """name -> module, from the ``if TYPE_CHECKING:`` block of symroof/__init__.py."""
    tree = ast.parse((ROOT / "symroof" / "__init__.py").read_text())
    block = next(n for n in tree.body if isinstance(n, ast.If)
                 and getattr(n.test, "id", None) == "TYPE_CHECKING")
    out: dict[str, str] = {}
    for node in block.body:
        assert isinstance(node, ast.ImportFrom) and node.module
        for alias in node.names:
            out[alias.asname or alias.name] = node.module
    return out


def test_every_public_name_is_the_object_its_module_defines() -> None:
    imports = _type_checking_imports()
    assert set(imports) | {"__version__"} == set(sr.__all__)   # no name without its import
    for name, module in imports.items():
        owner = importlib.import_module(module)
        expected = getattr(owner, name) if hasattr(owner, name) else \
            importlib.import_module(f"{module}.{name}")
        assert getattr(sr, name) is expected, name
    assert set(sr.__all__) <= set(dir(sr))


def test_modules_of_the_package_resolve_and_unknown_names_do_not() -> None:
    from symroof import budget, solve  # not re-exported names: the modules themselves

    assert sr.budget is budget and sr.solve is solve and budget.current().rows > 0
    with pytest.raises(AttributeError, match="no attribute 'no_such_name'"):
        sr.no_such_name  # noqa: B018
    with pytest.raises(AttributeError):
        sr.__wrapped__  # noqa: B018 - tools probe dunder names; they are never imported


def test_import_symroof_imports_nothing_heavy() -> None:
    out = _fresh("import sys, symroof; print(sorted(m for m in ('sympy', 'networkx', 'numpy', "
                 "'jinja2', 'mpmath') if m in sys.modules))")
    assert out == "[]"


def test_the_command_line_entry_imports_no_graph_library() -> None:
    out = _fresh("import sys, symroof.cli; print(sorted(m for m in ('networkx', 'numpy', "
                 "'jinja2', 'symroof.analysis') if m in sys.modules))")
    assert out == "[]"


def test_functions_named_like_modules_stay_functions() -> None:
    out = _fresh("import symroof as sr, symroof.evaluate, symroof.display, symroof.atlas.build; "
                 "import symroof.evaluate as ev; from symroof import atlas; "
                 "print(callable(sr.evaluate), sr.display.__module__, atlas.__module__, "
                 "ev is sr.evaluate)")
    assert out == "True symroof.display symroof.atlas.build True"


def test_displays_are_registered_once_a_name_is_used() -> None:
    out = _fresh("import symroof as sr; from symroof.symbols import n; "
                 "print(sr.workloads.gemm(n, n, n)._repr_html_() is not None)")
    assert out == "True"

"""The library type-checks: mypy over symroof/ with the settings in pyproject.toml.

py.typed ships, so users' type checkers read these annotations; an error here is a
wrong promise to them. mypy is in the test extra; CI (CI=true) must have it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_mypy_reports_no_errors():
    if shutil.which("mypy") is None and os.environ.get("CI") != "true":
        pytest.skip("mypy is not installed (pip install -e '.[test]')")
    # the cache lives outside the checkout: tests that watch the tree for writes (the fuzz
    # runs) may run at the same moment on another xdist worker
    cache = Path(tempfile.gettempdir()) / "symroof-mypy-cache"
    done = subprocess.run([sys.executable, "-m", "mypy", "--cache-dir", str(cache)], cwd=ROOT,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Success: no issues found" in done.stdout



#: The typed front door (issue 24): the request every front door parses into, its
#: numeric formats and the workload registry are held to every per-module flag of
#: ``mypy --strict`` (pyproject's override), so the one run above checks them strictly.
STRICT = ("symroof.request", "symroof.precision", "symroof.workloads.registry")
STRICT_FLAGS = ("warn_return_any", "disallow_any_generics", "disallow_subclassing_any",
                "disallow_untyped_calls", "disallow_untyped_defs", "disallow_incomplete_defs",
                "disallow_untyped_decorators", "no_implicit_reexport", "strict_equality",
                "extra_checks")


def test_the_request_layer_is_held_to_strict():
    import tomllib
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]
    strict = [o for o in config["overrides"] if set(STRICT) <= set(o["module"])]
    assert len(strict) == 1, "one override holds the request layer to --strict"
    assert {flag: strict[0].get(flag) for flag in STRICT_FLAGS} == dict.fromkeys(STRICT_FLAGS,
                                                                                True)
    for name in STRICT:  # each names a module that exists
        assert (ROOT / (name.replace(".", "/") + ".py")).is_file(), name

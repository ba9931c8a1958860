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

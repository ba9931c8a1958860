"""The library type-checks: mypy over symroof/ with the settings in pyproject.toml.

py.typed ships, so users' type checkers read these annotations; an error here is a
wrong promise to them. mypy is in the test extra; CI (CI=true) must have it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_mypy_reports_no_errors():
    if shutil.which("mypy") is None and os.environ.get("CI") != "true":
        pytest.skip("mypy is not installed (pip install -e '.[test]')")
    done = subprocess.run([sys.executable, "-m", "mypy"], cwd=ROOT, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Success: no issues found" in done.stdout

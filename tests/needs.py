"""Real parts a test needs: present, or skipped here and failed under ``CI=true``.

``.ci/run`` installs every one of them (tests/project/test_system_packages.py proves that
from the tests' own calls), so in CI a missing part is a failure, never a quiet skip.
"""

from __future__ import annotations

import os
import shutil

import pytest

__all__ = ["executable"]


def executable(name: str, why: str = "") -> str:
    """The path of ``name`` on PATH; skips the test when it is missing, fails under CI."""
    path = shutil.which(name)
    if path is not None:
        return path
    what = f"{name} is not on PATH{f' ({why})' if why else ''}"
    if os.environ.get("CI") == "true":
        pytest.fail(f"{what}; CI=true, where .ci/run must have installed it")
    pytest.skip(f"{what}; .ci/run installs it")

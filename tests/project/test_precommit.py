"""The pre-commit hook, with the real ``pre-commit`` tool: in a temporary git repository
whose .pre-commit-config.yaml names a hooks repository holding this checkout's
.pre-commit-hooks.yaml (committed in a copy, so the test needs no clean tree), a commit
of a chapter with a wrong annotated figure is refused, and the fixed chapter commits.

The hook used is ``symroof-check-system`` (the symroof on PATH: a shim that runs this
checkout's, so no environment is built from the network); ``symroof-check`` differs only
in ``language: python``, which makes pre-commit pip-install this repository first."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_WRONG, _RIGHT = "2,730", "2,731"
_CHAPTER = ("# GEMMs\n\nAn 8192^3 GEMM at 16 bits does {printed} FLOP per byte.\n"
            "<!-- symroof claimed = {number}\nunit = \"FLOP/B\"\nrounding = {{sig = 4}}\n"
            "value = {{workload = {{builder = \"gemm\", args = [\"n\", \"n\", \"n\"]}}, q = \"I\"}}\n"
            "subs = {{n = 8192, b = 2}} -->\n")


def test_manifest_names_both_hooks_and_every_format_check_reads():
    from symroof.verify.annotations import FORMATS
    text = (ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8")
    assert "- id: symroof-check\n" in text and "- id: symroof-check-system\n" in text
    patterns = {line.split("files: ", 1)[1] for line in text.splitlines()
                if line.startswith("  files: ")}
    (pattern,) = patterns                       # both hooks read the same files
    endings = set(pattern.removeprefix("\\.(").removesuffix(")$").split("|"))
    read = {end[1:] for ends in FORMATS.values() for end in ends} - {"sty"}  # no chapter
    assert endings == read


def _run(argv: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_a_wrong_figure_is_refused_and_the_fixed_one_commits(tmp_path):
    if importlib.util.find_spec("pre_commit") is None:
        if os.environ.get("CI") == "true":
            pytest.fail("pre-commit is not installed; .ci/run installs the test extra")
        pytest.skip("pre-commit is not installed (pip install -e '.[test]')")
    shim = tmp_path / "bin" / "symroof"          # `symroof` on PATH runs this checkout
    shim.parent.mkdir()
    shim.write_text(f"#!/bin/sh\nexec {sys.executable} -m symroof \"$@\"\n", encoding="utf-8")
    shim.chmod(0o755)
    env = {**os.environ, "PATH": f"{shim.parent}{os.pathsep}{os.environ.get('PATH', '')}",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
           "PRE_COMMIT_HOME": str(tmp_path / "cache"), "GIT_AUTHOR_NAME": "a",
           "GIT_AUTHOR_EMAIL": "a@example.org", "GIT_COMMITTER_NAME": "a",
           "GIT_COMMITTER_EMAIL": "a@example.org", "GIT_CONFIG_GLOBAL": os.devnull}
    # the hooks repository: this checkout's manifest, committed in a copy of its own
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / ".pre-commit-hooks.yaml").write_text(
        (ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"), encoding="utf-8")
    for argv in (["git", "init", "-q"], ["git", "add", "."], ["git", "commit", "-qm", "hooks"]):
        assert _run(argv, hooks, env).returncode == 0
    rev = _run(["git", "rev-parse", "HEAD"], hooks, env).stdout.strip()
    book = tmp_path / "book"
    book.mkdir()
    (book / ".pre-commit-config.yaml").write_text(
        f"repos:\n  - repo: {hooks}\n    rev: {rev}\n    hooks:\n"
        "      - id: symroof-check-system\n", encoding="utf-8")
    assert _run(["git", "init", "-q"], book, env).returncode == 0
    installed = _run([sys.executable, "-m", "pre_commit", "install"], book, env)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    chapter = book / "chapter.md"

    chapter.write_text(_CHAPTER.format(printed=_WRONG, number=2730), encoding="utf-8")
    _run(["git", "add", "."], book, env)
    refused = _run(["git", "commit", "-qm", "wrong"], book, env)
    assert refused.returncode != 0
    assert "chapter.md:4: mismatch:" in refused.stdout + refused.stderr
    assert "printed 2,730 FLOP/B, derived 2,730.67 FLOP/B" in refused.stdout + refused.stderr
    assert _run(["git", "rev-parse", "--verify", "HEAD"], book, env).returncode != 0  # no commit

    chapter.write_text(_CHAPTER.format(printed=_RIGHT, number=2731), encoding="utf-8")
    _run(["git", "add", "."], book, env)
    passed = _run(["git", "commit", "-qm", "fixed"], book, env)
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert _run(["git", "log", "--format=%s"], book, env).stdout.split() == ["fixed"]

"""README.md stays true: its Python examples run and its CLI examples exit 0."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from symroof.cli import main

README = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")


def _blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", README, flags=re.S)


def test_python_examples_run():
    blocks = _blocks("python")
    assert len(blocks) >= 2
    for block in blocks:
        namespace: dict[str, object] = {}
        exec(compile(block, "README.md", "exec"), namespace)  # noqa: S102 (our own README)
        for name, fn in list(namespace.items()):
            if name.startswith("test_") and callable(fn):
                fn()


@pytest.mark.parametrize("line", [ln for b in _blocks("sh") for ln in b.splitlines()
                                  if ln.startswith("symroof ")])
def test_cli_examples_exit_zero(line, capsys):
    argv = shlex.split(line.split("#")[0])[1:]
    assert main(argv) == 0, capsys.readouterr().err


def test_quick_start_main_job_is_the_decode_limit(capsys):
    quick = _blocks("sh")[0].splitlines()[0]
    argv = shlex.split(quick.split("&&")[1])[1:]
    assert main(argv) == 0
    assert "(49152/S + 2)/b" in capsys.readouterr().out

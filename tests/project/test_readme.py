"""README.md stays true: its Python examples run, and each of its CLI examples prints
exactly its golden output (tests/golden/readme/; regenerate with
``python3 -m pytest tests/project/test_readme.py --update-golden`` and review the diff)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from symroof.cli import main

README = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")


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


GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "readme"
CLI_LINES = [ln for b in _blocks("sh") for ln in b.splitlines() if ln.startswith("symroof ")]


def _golden_name(line: str) -> str:
    argv = shlex.split(line.split("#")[0])[1:]
    return re.sub(r"[^A-Za-z0-9.=,-]+", "_", "_".join(argv)).strip("_") + ".txt"


@pytest.mark.parametrize("line", CLI_LINES)
def test_cli_examples_match_their_golden_output(line, capsys, update_golden):
    argv = shlex.split(line.split("#")[0])[1:]
    code = main(argv)
    captured = capsys.readouterr()
    assert code == 0, captured.err
    path = GOLDEN / _golden_name(line)
    if update_golden:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(captured.out, encoding="utf-8")
    assert path.exists(), f"no golden output for {line!r}: run with --update-golden"
    assert captured.out == path.read_text(encoding="utf-8"), f"{line!r} changed its output"


def test_every_golden_file_belongs_to_a_readme_line():
    expected = {_golden_name(line) for line in CLI_LINES}
    assert {p.name for p in GOLDEN.glob("*.txt")} == expected


def test_quick_start_main_job_is_the_seed_appendix():
    quick = _blocks("sh")[0].splitlines()[0]   # tests/reports/test_report.py checks what it writes
    assert shlex.split(quick.split("&&")[1]) == ["symroof", "report", "appendix"]

"""The docs stay true: the example chapter README names exists and checks clean, the
docs site builds with ``mkdocs build --strict``, and every code example in docs/ runs
with its printed output checked (as tests/project/test_readme.py does for README)."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

from symroof.cli import main
from symroof.present.appendix import read_claims

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_readme_claim_lines_name_files_that_exist():
    lines = [ln for ln in README.splitlines() if re.match(r"symroof (report|check) ", ln)]
    named = {a for ln in lines for a in shlex.split(ln.split("#")[0])[2:3]
             if not a.startswith("-") and a != "appendix"}
    assert named == {"claims/example.toml", "claims/example.md"}
    assert all((ROOT / n).is_file() for n in named)


def test_the_example_chapter_reports_and_checks_clean(tmp_path, capsys):
    assert main(["report", str(ROOT / "claims/example.toml"), "--out", str(tmp_path)]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "4 match"
    items = read_claims((tmp_path / "example.json").read_text(encoding="utf-8"))
    assert [i["status"] for i in items] == ["match"] * 4
    assert {i["document"] for i in items} == {"example.md"}
    assert (tmp_path / "charts" / "gemm-roofline.svg").is_file()
    md = (tmp_path / "example.md").read_text(encoding="utf-8")
    assert "Document ch3" in md and "Seed" not in md
    assert main(["check", str(ROOT / "claims/example.md")]) == 0
    assert capsys.readouterr().out == "4 claims: 4 match\n"


def test_old_claims_json_with_seed_key_still_reads():
    old = json.dumps([{"id": "a", "seed": "000.txt", "status": "match"}])
    assert read_claims(old) == [{"id": "a", "document": "000.txt", "status": "match"}]

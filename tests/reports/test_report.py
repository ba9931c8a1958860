"""``symroof report``: the seed appendix and any claim file, deterministic, the committed
reports/ equal to what the command writes, LaTeX that builds, and the same bytes from an
installed wheel."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import venv
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from needs import executable

from symroof.cli import main
from symroof.verify import EXAMPLE

ROOT = Path(__file__).resolve().parents[2]
REPORTS = ROOT / "reports"
APPENDIX = ("seed_appendix.md", "seed_appendix.tex", "seed_claims.json")
JSON_KEYS = {"id", "document", "quote", "quantity", "claimed", "derived", "formula", "unit",
             "status", "note", "assumptions", "tolerance", "comparison",  # issue 21: re-checkable
             "requests"}  # issue 24: the requests each claim ran


@pytest.fixture(scope="module")
def fresh(seed_appendix: Path) -> Path:
    """The appendix, rendered once per test process (tests/conftest.py)."""
    return seed_appendix


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and p.suffix in (".md", ".tex", ".json", ".svg")}


def test_committed_reports_equal_what_the_command_writes(fresh):
    committed = {k: v for k, v in _files(REPORTS).items() if not k.startswith("try_it")}
    assert _files(fresh) == committed, "run `symroof report appendix` and commit reports/"


def test_json_is_a_list_of_the_agreed_objects_and_agrees_with_the_text(fresh):
    items = json.loads((fresh / "seed_claims.json").read_text(encoding="utf-8"))
    assert len(items) > 60
    assert all(set(item) == JSON_KEYS for item in items)
    assert {i["status"] for i in items} <= {"match", "mismatch", "cited", "derived",
                                            "inconsistent"}
    assert {i["document"] for i in items} == {"000_57a6be380080f65e.txt", "001_2abda7eca1fd720c.txt"}
    md = (fresh / "seed_appendix.md").read_text(encoding="utf-8")
    for item in items:                   # every claim appears in the text with its status
        assert f"(`{item['id']}`)" in md
    mismatches = [i for i in items if i["status"] == "mismatch"]
    assert mismatches and all(i["note"] for i in mismatches), "every mismatch says why"


def test_charts_are_well_formed_svg(fresh):
    charts = sorted((fresh / "charts").glob("*.svg"))
    assert len(charts) >= 2
    for path in charts:
        assert ET.parse(path).getroot().tag.endswith("svg")


@pytest.mark.slow
def test_latex_builds_with_pdflatex(fresh, tmp_path):
    executable("pdflatex")
    shutil.copy(fresh / "seed_appendix.tex", tmp_path)
    done = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error",
                           "seed_appendix.tex"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=300)
    log = (tmp_path / "seed_appendix.log").read_text(encoding="latin-1")
    assert done.returncode == 0, log[-3000:]
    assert "\n! " not in log and (tmp_path / "seed_appendix.pdf").stat().st_size > 10_000


def test_any_claim_file_renders_and_a_bad_claim_is_reported_not_fatal(tmp_path, capsys):
    source = tmp_path / "chapter.toml"
    bad = EXAMPLE.split("[[claim]]")[1].replace('id = "gemm-square-8192"', 'id = "typo"') \
        .replace('unit = "FLOP/B"', 'unit = "FLOPS/B"')
    source.write_text(EXAMPLE + "\n[[claim]]" + bad, encoding="utf-8")
    code = main(["report", str(source), "--out", str(tmp_path / "out")])
    captured = capsys.readouterr()
    assert code == 2 and "1 claim(s) could not be computed" in captured.err
    items = json.loads((tmp_path / "out" / "chapter.json").read_text(encoding="utf-8"))
    assert [i["status"] for i in items] == ["match", "error"]   # the good claim still reported
    assert "chapter.toml:26: claim 'typo' field 'unit': unknown un" in items[1]["note"]
    md = (tmp_path / "out" / "chapter.md").read_text(encoding="utf-8")
    assert "2,730.67 FLOP/B" in md and "unknown unit" in md


def test_nothing_is_written_half_way(tmp_path):
    blocked = tmp_path / "out"
    blocked.write_text("a file where the folder should be", encoding="utf-8")
    # the example claim file: what is written, and when, is the same for any claim file
    # (write_files), and the seed file's claims are checked once already (seed_appendix)
    assert main(["report", str(ROOT / "claims" / "example.toml"), "--out", str(blocked)]) == 2
    assert blocked.read_text(encoding="utf-8") == "a file where the folder should be"
    assert not list(tmp_path.glob("**/.*.tmp"))


def test_format_option_and_its_errors(tmp_path, capsys):
    # the example claim file (the seed file's claims are checked once already, above)
    example = ROOT / "claims" / "example.toml"
    assert main(["report", str(example), "--out", str(tmp_path), "--format", "json"]) == 0
    assert [p.name for p in tmp_path.iterdir()] == ["example.json"]
    assert {i["status"] for i in json.loads((tmp_path / "example.json").read_text())} == \
        {"match"}
    assert main(["report", "appendix", "--format", "pdf"]) == 2
    assert "--format: expected some of md, tex, json" in capsys.readouterr().err


def test_an_installed_wheel_renders_the_same_bytes(fresh, tmp_path):
    """Templates and claims ship inside the wheel: a fresh venv renders identically, and
    under another hash seed than ``fresh``'s (this process's, random unless set), so the
    same bytes also show that no set or dict order reaches the report."""
    seed = "4242" if os.environ.get("PYTHONHASHSEED") != "4242" else "0"
    wheels = tmp_path / "wheels"
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps",
                           "--no-build-isolation", "-q", "-w", str(wheels), str(ROOT)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=False)
    python = env_dir / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    # the dependencies come from this interpreter's site-packages, without its .pth files,
    # so the checkout's editable symroof is not visible in the venv
    Path(site, "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n", encoding="utf-8")
    (wheel,) = wheels.glob("symroof-*.whl")
    done = subprocess.run([str(python), "-m", "pip", "--version"], capture_output=True)
    installer = [str(python), "-m", "pip"] if done.returncode == 0 else \
        [sys.executable, "-m", "pip", "--python", str(python)]
    done = subprocess.run([*installer, "install", "-q", "--no-deps", str(wheel)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    out = tmp_path / "from-wheel"
    script = ("import sys, symroof.templates, symroof.claims; "
              "assert 'venv' in symroof.templates.__file__, symroof.templates.__file__; "
              "from symroof.cli import main; sys.exit(main(sys.argv[1:]))")
    done = subprocess.run([str(python), "-c", script, "report", "appendix", "--out", str(out)],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONHASHSEED": seed})
    assert done.returncode == 0, done.stdout + done.stderr
    assert _files(out) == _files(fresh)

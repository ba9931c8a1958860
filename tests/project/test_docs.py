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


# -- the docs site ----------------------------------------------------------------------

import contextlib  # noqa: E402
import doctest  # noqa: E402
import importlib.util  # noqa: E402
import io  # noqa: E402
import os  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402

import pytest  # noqa: E402

DOCS = ROOT / "docs"
PAGES = sorted(DOCS.glob("*.md"))


def _hooks():
    spec = importlib.util.spec_from_file_location("symroof_docs_hooks", DOCS / "hooks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _blocks(lang: str) -> list[tuple[Path, str]]:
    return [(page, block) for page in PAGES
            for block in re.findall(rf"^```{lang}\n(.*?)^```", page.read_text(encoding="utf-8"),
                                    flags=re.S | re.M)]


def _console_examples() -> list[tuple[str, str, str]]:
    """(page, command, the output the page shows) for every ``$ symroof ...`` line."""
    out = []
    for page, block in _blocks("console"):
        for chunk in re.split(r"^\$ ", block, flags=re.M)[1:]:
            command, _, shown = chunk.partition("\n")
            out.append((page.name, command, shown))
    return out


def test_every_page_is_in_the_nav_and_every_nav_entry_exists():
    nav = re.findall(r"^  - [^:]+: (\S+\.md)$", (ROOT / "mkdocs.yml").read_text(), re.M)
    assert sorted(nav) == sorted(p.name for p in PAGES)


def test_generated_parts_come_from_the_code():
    from symroof.cli import COMMANDS
    from symroof.verify.reference import reference
    hooks = _hooks()
    assert hooks.reference() in reference()
    helps = hooks.help_text()
    for entry in COMMANDS:
        assert f"## symroof {entry.name}\n" in helps and f"usage: symroof {entry.name}" in helps
    conventions = hooks.conventions()
    from symroof import options
    for name in ("FlopCount", "Causal", "DecodeTraffic", "Recompute", "Bubble"):
        enum_cls = getattr(options, name)
        assert f"## `{name}`" in conventions
        assert all(f"| `{m.value}` |" in conventions for m in enum_cls)
    for page in PAGES:  # every marker on every page expands
        assert "<!-- symroof:" not in hooks.expand(page.read_text(encoding="utf-8"))


@pytest.mark.parametrize("page, command, shown", _console_examples())
def test_console_examples_print_what_the_docs_show(page, command, shown, tmp_path, monkeypatch,
                                                   capsys):
    (tmp_path / "claims").mkdir()
    for name in ("example.toml", "example.md"):
        shutil.copy(ROOT / "claims" / name, tmp_path / "claims" / name)
    monkeypatch.chdir(tmp_path)
    argv = shlex.split(command)
    assert argv[0] == "symroof"
    code = main(argv[1:])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert captured.out == shown, f"{page}: {command!r} printed\n{captured.out}"


def test_python_examples_in_the_docs_run_with_their_output():
    blocks = _blocks("pycon")
    assert len(blocks) >= 5
    parser, failures = doctest.DocTestParser(), []
    namespaces: dict[Path, dict] = {}   # one page's examples share names, as a doctest does
    for page, block in blocks:
        test = parser.get_doctest(block, namespaces.setdefault(page, {}), page.name,
                                  str(page), 0)
        test.globs = namespaces[page]   # get_doctest copies the namespace it is given
        runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
        report = io.StringIO()
        with contextlib.redirect_stdout(report):
            result = runner.run(test, out=report.write, clear_globs=False)
        if result.failed:
            failures.append(report.getvalue())
    assert not failures, "\n".join(failures)


@pytest.mark.slow
def test_mkdocs_build_strict_passes(tmp_path):
    if importlib.util.find_spec("mkdocs") is None or \
            importlib.util.find_spec("mkdocstrings_handlers") is None:
        if os.environ.get("CI") == "true":
            pytest.fail("mkdocs is not installed; .ci/run installs the docs extra")
        pytest.skip("mkdocs is not installed (pip install -e '.[docs]')")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [
        str(ROOT), os.environ.get("PYTHONPATH", "")]))}
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q",
                           "-d", str(tmp_path / "site")], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    claims = (tmp_path / "site" / "claims" / "index.html").read_text(encoding="utf-8")
    assert "over_hardware" in claims and "gemm-crossover" in claims
    assert "usage: symroof report" in (tmp_path / "site" / "cli" / "index.html").read_text(
        encoding="utf-8")

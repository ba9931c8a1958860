"""The seed appendix as a reader gets it (issue 21 §2): front matter, errata first and
grouped by root cause, formulas in the document's notation, Markdown that pandoc renders
with its math as math, and JSON from which every verdict can be redone."""

from __future__ import annotations

import html
import json
import math
import re
import subprocess
from fractions import Fraction
from pathlib import Path

import pytest
from needs import executable

from symroof import __version__
from symroof.cli import main
from symroof.present.appendix import ERRATA_STATUSES

SEEDS = ("000_57a6be380080f65e.txt", "001_2abda7eca1fd720c.txt")


@pytest.fixture(scope="module")
def fresh(seed_appendix: Path) -> Path:
    return seed_appendix   # rendered once per test process (tests/conftest.py)


@pytest.fixture(scope="module")
def md(fresh: Path) -> str:
    return (fresh / "seed_appendix.md").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def items(fresh: Path) -> list[dict]:
    return json.loads((fresh / "seed_claims.json").read_text(encoding="utf-8"))


def test_front_matter_names_the_documents_version_and_contents(md, fresh):
    head = md.split("## How to read this")[0]
    for title, file in zip(("What the workload needs",
                            "FLOPs, Bandwidth, and Arithmetic Intensity"), SEEDS):
        assert f"*{title}*" in md.splitlines()[0] and f"`{file}`" in head
    assert f"symroof {__version__}" in head
    assert "## Contents" in head and "- [Errata](#errata)" in head
    tex = (fresh / "seed_appendix.tex").read_text(encoding="utf-8")
    assert "\\tableofcontents" in tex and "\\setcounter{secnumdepth}{0}" in tex
    assert "\\today" not in tex and "\\date{}" not in tex or "symroof" in tex
    rule = md.split("## How to read this")[1].split("## Errata")[0]
    assert "significant figures" in rule and '"derived"' in rule


def test_errata_come_first_each_linked_and_graded(md, items):
    errata = md.split("## Errata")[1].split("\n## ")[0]
    assert md.index("## Errata") < md.index("<a id=\"d000\">")  # before the documents
    wrong = [i for i in items if i["status"] in ERRATA_STATUSES]
    assert wrong
    for i in wrong:
        anchor = i["id"].replace(".", "-")
        line = next(line for line in errata.splitlines() if f"](#{anchor})" in line)
        assert line.rstrip(" |").rsplit("| ", 1)[1] in ("substantive", "rounding", "source")
        assert f'<a id="{anchor}"></a>' in md  # the link lands on the claim
    # one slip, its consequences: the decode step's bytes follow from its KV bytes
    rows = [line for line in errata.splitlines() if line.startswith("|")]
    kv = next(n for n, line in enumerate(rows) if "(#s001-we-kv-bytes)" in line)
    assert "↳ [decode step bytes](#s001-we-bytes)" in rows[kv + 1]


def test_formulas_are_shown_in_the_documents_names_first(md):
    block = md.split('<a id="s000-intro-training-6n"></a>')[1].split("<a id=")[0]
    assert "6 P = 72 L D^{2}" in block  # the document's names first, then the expansion
    assert "With $P = 12 L D^{2}$" in block


def test_markdown_math_has_no_inner_spaces_and_code_spans_no_escapes(md):
    for line in md.splitlines():
        if line.startswith(">") or "$$" in line:  # quotes keep the document's own math
            continue
        for m in re.finditer(r"(?<!\\)\$([^$\n]+)(?<!\\)\$", line):
            assert m.group(1) == m.group(1).strip(), line
    assert not re.findall(r"`[^`\n]*\\[^`\n]*`", md)


def test_pandoc_renders_the_markdown_with_math_as_math(fresh):
    pandoc = executable("pandoc", "renders the appendix's Markdown")
    done = subprocess.run([pandoc, "-f", "gfm+tex_math_dollars", "-t", "html", "--mathjax",
                           "--wrap=none", str(fresh / "seed_appendix.md")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    page = done.stdout
    assert page.count('<span class="math inline">') > 100
    assert page.count('<span class="math display">') > 20
    text = re.sub(r'<span class="math (inline|display)">.*?</span>', "", page, flags=re.S)
    text = re.sub(r"<code>.*?</code>", "", text, flags=re.S)
    text = html.unescape(re.sub(r"<[^>]+>", "", text))
    assert "\\" not in text, re.findall(r".{0,40}\\.{0,40}", text)[:5]
    assert "$" not in text, re.findall(r".{0,40}\$.{0,40}", text)[:5]


@pytest.mark.parametrize("reader", ["gfm+tex_math_dollars", "markdown"])
def test_every_heading_is_a_heading_after_pandoc(fresh, reader):
    """An anchor line right above a heading made pandoc's own Markdown read '## How to read
    this' as a paragraph's text: every '#' line must come out as a heading element."""
    pandoc = executable("pandoc", "renders the appendix's Markdown")
    md = (fresh / "seed_appendix.md").read_text(encoding="utf-8")
    done = subprocess.run([pandoc, "-f", reader, "-t", "html", "--wrap=none"], input=md,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    for level in (1, 2, 3):
        wanted = len(re.findall(rf"(?m)^{'#' * level} ", md))
        assert wanted > 0 or level == 1
        assert len(re.findall(rf"<h{level}[ >]", done.stdout)) == wanted, (reader, level)
    assert not re.search(r"<p>#+ ", done.stdout)


def _redo(item: dict) -> str:
    """A verdict from the JSON alone: claimed, derived, comparison, tolerance."""
    c, d = Fraction(str(item["claimed"])), Fraction(str(item["derived"]))
    slack = abs(c) * Fraction(1, 10**9)  # the JSON's derived value is a float
    kind, tol = item["comparison"], item["tolerance"]
    if tol is None:  # exact
        ok = abs(d - c) <= slack
    elif kind == "at most":
        ok = d < c + slack if tol["strict"] else d <= c + slack
    elif kind == "at least":
        ok = d > c - slack if tol["strict"] else d >= c - slack
    elif "orders" in tol:
        ok = d > 0 and c > 0 and abs(math.log10(d / c)) <= tol["orders"]
    else:  # equal as printed, or within a stated tolerance: both an absolute tolerance
        ok = abs(d - c) <= Fraction(str(tol["absolute"])) + slack
    return "match" if ok else "mismatch"


def test_every_verdict_can_be_redone_from_the_json(items):
    assert all({"assumptions", "tolerance", "comparison"} <= set(i) for i in items)
    assert {i["comparison"] for i in items} <= {"equal", "within", "at most", "at least"}
    redone = [i for i in items if i["status"] in ("match", "mismatch")
              and isinstance(i["claimed"], (int, float))
              and isinstance(i["derived"], (int, float))]
    assert len(redone) > 100
    wrong = [(i["id"], i["status"], _redo(i)) for i in redone if _redo(i) != i["status"]]
    assert not wrong

"""``symroof atlas --report``: the atlas as a page (Markdown, LaTeX) with its crossing curves."""

from __future__ import annotations

import re
import shutil
import subprocess
import xml.etree.ElementTree as ET

import pytest
from needs import executable

from symroof.cli import main


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    out = tmp_path_factory.mktemp("atlas")
    assert main(["atlas", "decode", "--model", "llama-3-70b", "--hardware", "h100-sxm",
                 "--set", "B=64", "--report", str(out)]) == 0
    return out


def test_page_has_every_crossing_and_its_value(page):
    md = (page / "atlas-decode-llama-3-70b.md").read_text(encoding="utf-8")
    # KV bytes = weight bytes in S at B = 64: (64 + 8,484,257)/(20*64) = 6,628.38
    assert "Q\\_kv\\_cache = Q\\_weight in $S$" in md and "**6,628.38**" in md
    assert "## Never crosses" in md and "both scale alike in B" in md
    assert "![" in md and "charts/Q_kv_cache-Q_weight-in-B.svg" in md


def test_curve_samples_the_derived_formula(page):
    svg = (page / "charts" / "Q_kv_cache-Q_weight-in-B.svg").read_text(encoding="utf-8")
    assert ET.fromstring(svg).tag.endswith("svg")
    tex = (page / "atlas-decode-llama-3-70b.tex").read_text(encoding="utf-8")
    curve = tex[tex.index("Q\\_kv\\_cache = Q\\_weight: B as a function of S"):]
    (x0, y0), = [(float(a), float(b)) for a, b in
                 re.findall(r"\(([-0-9.e]+),([-0-9.e]+)\)", curve)[:1]]
    assert y0 == pytest.approx(8484257 / (20 * x0 - 1), rel=1e-6)   # B = 8484257/(20 S - 1)


@pytest.mark.slow
def test_page_builds_with_pdflatex(page, tmp_path):
    executable("pdflatex")
    shutil.copy(page / "atlas-decode-llama-3-70b.tex", tmp_path)
    done = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error",
                           "atlas-decode-llama-3-70b.tex"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:]

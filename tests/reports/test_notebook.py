"""Rich display in Jupyter (symroof/rich.py, symroof/present/notebook.py), tested through
the ``_repr_*_`` methods themselves: IPython is not needed to call them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import sympy as sp

import symroof as sr
from symroof import rich
from symroof.errors import SymroofError
from symroof.present.formula import latex, text
from symroof.present.numbers import text_number
from symroof.symbols import B, D, H, L, S, b, n, quantity

ROOT = Path(__file__).resolve().parents[2]
R = quantity("R")


def _decode():
    return sr.workloads.decode(sr.models.transformer(layers=L, d_model=D, heads=H), B, S)


def test_registry_looks_up_the_nearest_class_and_answers_none_without_one():
    class Plain(rich.Rich):
        pass

    class Child(Plain):
        pass

    assert Plain()._repr_html_() is None and Plain()._repr_latex_() is None
    with rich.scoped():
        rich.register(Plain, "markdown", lambda obj: f"*{type(obj).__name__}*")
        assert Child()._repr_markdown_() == "*Child*"       # found through the MRO
        assert Child()._repr_html_() is None                 # only the registered format
        rich.register(Child, "markdown", lambda obj: "child")
        assert Child()._repr_markdown_() == "child" and Plain()._repr_markdown_() == "*Plain*"
    assert Child()._repr_markdown_() is None                 # scoped() undid both
    with pytest.raises(SymroofError, match="rich format 'svg'"):
        rich.register(Plain, "svg", str)


def test_import_needs_no_notebook_or_template_machinery():
    code = ("import sys, symroof as sr; from symroof.symbols import n; "
            "sr.workloads.gemm(n, n, n)._repr_html_(); "
            "print(sorted(m for m in ('IPython', 'jinja2', 'matplotlib') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT, check=True).stdout
    assert out.strip() == "[]"


def test_analysis_renders_its_formulas():
    dec = _decode()
    tex = dec._repr_latex_()
    assert tex == (rf"$$\begin{{aligned}} F &= {latex(dec.flops)} \\ Q &= {latex(dec.bytes)} "
                   rf"\\ I &= {latex(dec.intensity)} \end{{aligned}}$$")
    md = dec._repr_markdown_()
    assert md.splitlines()[0].startswith(r"**transformer\-decode**")
    assert f"- $I = {latex(dec.intensity)}$" in md
    assert r"- $Q_{\mathrm{kv\_cache}} = 2 B L S D b$" in md
    html = dec._repr_html_()
    assert f"<td>I</td><td>{text(dec.intensity)}</td>" in html
    assert "<td>F_attention</td><td>4*B*L*S*D</td>" in html


def test_names_are_escaped():
    g = sr.Graph("<b>&x_1")
    g.output(g.gemm(g.input("x", (n, n)), g.weight("W", (n, n)), name="mm"))
    a = sr.analyze(g)
    assert "<b>" not in a._repr_html_() and "&lt;b&gt;&amp;x_1" in a._repr_html_()
    assert r"\<b\>&x\_1" in a._repr_markdown_() or r"\<b\>\&x\_1" in a._repr_markdown_()


def test_roofline_at_numbers_has_numbers_and_a_chart():
    r = sr.roofline(sr.workloads.decode(sr.models.get("llama-3-8b"), 32, 2048), "h100-sxm")
    html = r._repr_html_()
    assert f"<td>time</td><td>{text_number(r.time_s)} s</td>" in html
    assert "<td>bound</td><td>memory</td>" in html
    assert html.count("<svg") == 1 and "<?xml" not in html and html.rstrip().endswith("</svg>")
    assert r"\max\left(\frac{F}{\pi}, \frac{Q}{\beta}\right) = 0.00704479" in r._repr_latex_()
    assert "- tokens/s: 4542.36" in r._repr_markdown_()       # README: about 4,540


def test_symbolic_roofline_has_formulas_and_no_chart():
    r = sr.roofline(_decode(), "h100-sxm", subs={b: 2})
    html = r._repr_html_()
    assert "<svg" not in html and "max(" in html
    assert r._repr_latex_().startswith(r"$$t = \max")


def test_crossover_renders_value_and_condition():
    (c,) = sr.crossover(_decode().intensity, R, B)
    assert c._repr_latex_() == (f"$B = {latex(c.value)} \\quad \\text{{when }} "
                                f"{latex(c.conditions[0])}$")
    assert c._repr_html_() == f"<code>B = {text(c.value)} when R &lt; (12*D/S + 2)/b</code>"
    (plain,) = sr.crossover(4 * L * S * D, 24 * L * D**2, S)
    assert plain._repr_markdown_() == "$S = 6 D$"


def test_atlas_and_family_render():
    a = sr.atlas(_decode(), hardware="h100-sxm", precisions=["bf16"])
    html = a._repr_html_()
    assert html.startswith("<p><b>atlas of transformer-decode</b> over B, S</p><table>")
    assert html.count("<tr>") == 1 + sum(len(e.solutions) for e in a.crossings)
    assert "<li>never: F_attention = F_weights in B: both scale alike in B" in html
    md = a._repr_markdown_()
    assert "| crossover | in | solution | exists when | value |" in md
    assert r"- **F\_attention = F\_weights** in $B$: both scale alike" in md
    tex = a._repr_latex_()
    assert tex.startswith(r"$$\begin{array}{lll}") and r"\text{F\_attention = F\_weights}" in tex
    e = a.find("F_attention", "F_weights", S)
    assert e._repr_markdown_().startswith(r"**F\_attention = F\_weights** in $S$: $S = 6 D$.")
    assert e._repr_latex_() is None                        # no LaTeX form registered
    m = sr.models.get("seed-6.4b")
    fam = sr.family({p: sr.workloads.decode(m.with_precision(weights=p, kv_cache="bf16"), B, S)
                     for p in ("bf16", "int4")}, over=[S], symbolic_ridge=False)
    assert "<th>bf16</th><th>int4</th>" in fam._repr_html_()
    assert r"| Q\_kv\_cache = Q\_weight | S | $\frac{24576}{B}$ | $\frac{6144}{B}$ |" \
        in fam._repr_markdown_()


def test_records_still_compare_and_hash_as_before():
    """The mixin adds no state: frozen records keep equality, hashing and repr."""
    (c,) = sr.crossover(4 * L * S * D, 24 * L * D**2, S)
    (d,) = sr.crossover(4 * L * S * D, 24 * L * D**2, S)
    assert c == d and hash(c) == hash(d) and repr(c).startswith("Crossover(var=S")
    assert set(vars(c)) == {"var", "value", "conditions"}       # the fields, nothing more
    assert sp.cancel(c.value - 6 * D) == 0


def test_displays_work_after_importing_a_module_directly():
    """A notebook that imported a module of the package first (``from symroof.cli import
    main``) never reaches the facade's first-use registration; the first display loads the
    renderers instead (it returned None before)."""
    script = ("from symroof.workloads import gemm\nfrom symroof.symbols import n\n"
              "import sys\nassert 'symroof.present.notebook' not in sys.modules\n"
              "print(gemm(n, n, n)._repr_latex_())\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("$$") and r"\frac{2 n}{3 b}" in done.stdout, done.stdout

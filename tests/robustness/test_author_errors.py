"""What a new author meets in the first hour: each mistake is named by file, line, claim
id and field, every error of a file is printed (not only the first), a unit that does
not fit its quantity names the units that would, and a claim that fails validation
renders cleanly in every format, in its own section, with its error."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import sympy as sp

pytest_plugins = ["pytester"]

from symroof.cli import main
from symroof.errors import SymroofError
from symroof.verify import units

_HEAD = '[[document]]\nid = "d"\nfile = "d.md"\ntitle = "D"\n'


def _claim(cid: str, unit: str, value: str, section: str = "S", extra: str = "") -> str:
    return (f'\n[[claim]]\nid = "{cid}"\ndocument = "d"\nsection = "{section}"\nquote = "q {cid}"\n'
            f'quantity = "x"\nunit = "{unit}"\nclaimed = 1\n{extra}value = {value}\n')


MISTAKES = {  # id: (unit, recipe, the field named, words the message must hold)
    "unknown-model": ("B", '{model = "llama-9", q = "weight_bytes_total"}', "value",
                      "unknown model 'llama-9' (did you mean"),
    "unknown-chip": ("FLOP/B", '{hardware = "h900", q = "ridge"}', "value",
                     "unknown hardware 'h900'"),
    "missing-precision": ("FLOP/s", '{hardware = "opteron-x2", q = "peak", precision = "fp8"}',
                          "value", "no matrix or vector peak for fp8"),
    "ridge-in-tflops": ("TFLOP/s", '{hardware = "h100-sxm", q = "ridge"}', "unit",
                        "'TFLOP/s' measures a compute rate, but the value is an intensity; "
                        "expected a unit such as FLOP/B, OP/B"),
    "time-in-gb": ("GB", '{roofline = {workload = {builder = "gemm", args = [64, 64, 64]}, '
                   'hardware = "h100-sxm"}, q = "time_s"}', "unit",
                   "'GB' measures bytes, but the value is a time; expected a unit such as "
                   "s, h, days"),
    "no-crossing": ("-", '{crossover = {lhs = "n", rhs = "n + 1", var = "n"}}', "value",
                    "the sides never cross: the sides differ by -1, never 0, for every n"),
}


@pytest.fixture
def bad_file(tmp_path: Path) -> Path:
    path = tmp_path / "bad.toml"
    path.write_text(_HEAD + "".join(_claim(k, u, v) for k, (u, v, _, _) in MISTAKES.items()),
                    encoding="utf-8")
    return path


def test_every_error_of_a_file_is_printed_naming_file_line_claim_and_field(bad_file, capsys):
    text = bad_file.read_text(encoding="utf-8").splitlines()
    code = main(["report", str(bad_file), "--out", str(bad_file.parent / "out")])
    captured = capsys.readouterr()
    assert code == 2
    errors = [ln for ln in captured.out.splitlines() if ln.startswith("error: ")]
    assert len(errors) == len(MISTAKES)                 # all of them, not only the first
    for line, (cid, (_, _, field, words)) in zip(errors, MISTAKES.items()):
        m = re.match(rf"error: {re.escape(str(bad_file))}:(\d+): claim '{cid}' field '{field}'",
                     line)
        assert m, line
        assert text[int(m.group(1)) - 1].startswith(f"{field} ="), line  # the field's own line
        assert words in line, line
    assert captured.out.splitlines()[-1] == f"{len(MISTAKES)} error"
    assert captured.err.count("\n") == 1 and f"{len(MISTAKES)} claim(s) could not be computed" \
        in captured.err


def test_json_summary_lists_every_error(bad_file, capsys):
    main(["report", str(bad_file), "--out", str(bad_file.parent / "out"), "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert [re.search(r"claim '([^']+)'", e).group(1) for e in doc["errors"]] == list(MISTAKES)


def test_check_prints_every_bad_annotation_with_its_line(tmp_path, capsys):
    doc = tmp_path / "ch.md"
    doc.write_text("# Ridge\nThe ridge is 295 TFLOP/s.\n<!-- symroof claimed = 295\n"
                   'unit = "TFLOP/s"\nvalue = {hardware = "h100-sxm", q = "ridge"} -->\n'
                   "A step takes 5 GB.\n<!-- symroof claimed = 5\nunit = \"GB\"\n"
                   "value = " + MISTAKES["time-in-gb"][1] + " -->\n", encoding="utf-8")
    assert main(["check", str(doc)]) == 2
    out = capsys.readouterr().out.splitlines()
    # each line leads with the line of the field at fault (the unit's, under the annotation)
    assert [ln.split(": error:")[0] for ln in out[:-1]] == [f"{doc}:4", f"{doc}:8"]
    assert "claim 'line-3' field 'unit'" in out[0] and "claim 'line-7' field 'unit'" in out[1]
    assert out[-1] == "2 claims: 2 error"


def test_a_claim_that_fails_validation_renders_cleanly_in_every_format(tmp_path, capsys):
    path = tmp_path / "v.toml"
    path.write_text(_HEAD + _claim("good", "FLOP/B", '{hardware = "h100-sxm", q = "ridge"}',
                                   "First", 'rounding = {orders = 3}\n')
                    + _claim("bad-unit", "furlongs", '{hardware = "h100-sxm", q = "ridge"}',
                             "Second")
                    + '\n[[claim]]\nid = "no-quote"\ndocument = "d"\nsection = "First"\n'
                    'unit = "B"\nclaimed = 1\nvalue = 1\n', encoding="utf-8")
    assert main(["report", str(path), "--out", str(tmp_path / "o")]) == 2
    capsys.readouterr()
    md = (tmp_path / "o" / "v.md").read_text(encoding="utf-8")
    tex = (tmp_path / "o" / "v.tex").read_text(encoding="utf-8")
    rows = json.loads((tmp_path / "o" / "v.json").read_text(encoding="utf-8"))
    assert "****" not in md and not re.search(r"^> *$", md, re.M)
    assert r"\textbf{}" not in tex and r"\begin{quote}\small \end{quote}" not in tex
    assert "Claims that could not be read" not in md   # each stays in its own section
    second = md.split("### Second")[1]
    assert "**x** (`bad-unit`)" in second and "> q bad\\-unit" in second
    assert "field 'unit': unknown unit 'furlongs'" in second
    first = md.split("### First")[1].split("###")[0]
    assert "**claim no\\-quote** (`no-quote`)" in first and "field 'quote'" in first
    assert {r["id"]: r["status"] for r in rows} == {"good": "match", "bad-unit": "error",
                                                   "no-quote": "error"}


@pytest.mark.parametrize("unit, dim", [
    ("GFLOP", "work"), ("TB/s", "bandwidth"), ("KiB", "bytes"), ("ms", "time"),
    ("PFLOP/s", "rate"), ("kFLOP/token", "work"), ("MB/token", "bytes"), ("OP/B", "intensity"),
    ("tokens/s", "per_time"), ("%", "number"), ("days", "time")])
def test_each_unit_has_the_dimension_its_parts_give(unit, dim):
    assert units.dimension(unit) == dim
    w, i, t = sp.symbols("work information time", positive=True)
    named = {"work": w, "bytes": i, "time": t, "bandwidth": i / t, "rate": w / t,
             "intensity": w / i, "per_time": 1 / t, "number": sp.Integer(1)}
    assert sp.cancel(units.dimension_expr(unit) - named[dim]) == 0


def test_every_unit_conversion_is_the_prefix_it_names():
    assert units.scale("TFLOP/s") == 10**12 and units.scale("TiB") == 2**40
    assert units.scale("us") == sp.Rational(1, 10**6) and units.scale("h") == 3600
    with pytest.raises(SymroofError, match=r"unknown unit 'furlongs'"):
        units.split("furlongs", "f.toml:3: claim 'x' field 'unit'")


def test_no_crossing_says_why_and_a_variable_on_neither_side_is_an_error():
    import symroof as sr
    from symroof.symbols import B, S
    never = sr.crossover(B + 5, 2, B)
    assert never == [] and never.reason == "no positive root in B (the real roots: -3)"
    assert "reason=" in repr(never)                      # never a bare []
    assert sr.crossover(B + 1, B, B).reason == "the sides differ by 1, never 0, for every B"
    assert "every root complex" in sr.crossover(S**2 + 1, 0, S).reason
    (c,) = sr.crossover(2 * B, 6, B)                     # a crossing still indexes as before
    assert c.value == 3
    with pytest.raises(SymroofError, match=r"crossover: B appears on neither side \(their "
                                           r"symbols: S\)"):
        sr.crossover(S, 2, B)


# -- where authors write: each format's annotations, with line or cell:line -------------

_GEMM = ('claimed = {claimed}\nunit = "FLOP/B"\nrounding = {{sig = 4}}\n'
         'value = {{workload = {{builder = "gemm", args = ["n", "n", "n"]}}, q = "I"}}\n'
         'subs = {{n = 8192, b = 2}}')


def _check(path: Path, capsys) -> tuple[int, list[str]]:
    code = main(["check", str(path)])
    return code, capsys.readouterr().out.splitlines()


def test_quarto_reads_html_comments_and_skips_code_chunks(tmp_path, capsys):
    doc = tmp_path / "ch.qmd"
    doc.write_text('---\ntitle: "Ch"\n---\n\n## GEMMs\n\n```{python}\n'
                   '# <!-- symroof claimed = 1 -->\n```\n\nA GEMM does 2,730 FLOP/B.\n'
                   f'<!-- symroof {_GEMM.format(claimed=2730)} -->\n', encoding="utf-8")
    code, out = _check(doc, capsys)
    assert code == 1
    assert out[0].startswith(f"{doc}:12: mismatch: A GEMM does 2,730 FLOP/B.: printed 2,730")
    assert out[-1] == "1 claim: 1 mismatch"


def test_myst_reads_percent_comment_lines(tmp_path, capsys):
    doc = tmp_path / "ch.md"
    body = "\n".join(f"% symroof: {ln}" for ln in _GEMM.format(claimed=2731).splitlines())
    doc.write_text(f"# GEMMs\n\n```{{note}}\nAn aside.\n```\n\nA GEMM does 2,731.\n{body}\n",
                   encoding="utf-8")
    code, out = _check(doc, capsys)
    assert (code, out) == (0, ["1 claim: 1 match"])


def test_restructuredtext_reads_comments_and_names_the_fields_line(tmp_path, capsys):
    doc = tmp_path / "ch.rst"
    indented = "\n".join("   " + ln for ln in _GEMM.format(claimed=2731).splitlines())
    doc.write_text("Chapter\n=======\n\nA GEMM does 2,731 FLOP/B.\n\n.. symroof\n"
                   f"{indented}\n\n::\n\n   .. symroof claimed = 1\n\n"
                   "The ridge is 295 TFLOP/s.\n\n.. symroof claimed = 295\n"
                   '   unit = "TFLOP/s"\n   value = {hardware = "h100-sxm", q = "ridge"}\n',
                   encoding="utf-8")
    code, out = _check(doc, capsys)
    assert code == 2
    assert out[0] == (f"{doc}:20: error: claim 'line-19' field 'unit': 'TFLOP/s' measures a "
                      "compute rate, but the value is an intensity; expected a unit such as "
                      "FLOP/B, OP/B (prefixes allowed: kFLOP/B, ...)")
    assert out[-1] == "2 claims: 1 error, 1 match"          # the literal block's is skipped


def test_notebook_markdown_cells_with_cell_and_line(tmp_path, capsys):
    nbformat = pytest.importorskip("nbformat") if __import__("os").environ.get("CI") != "true" \
        else __import__("nbformat")
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# GEMMs\n\nIntro."),
                nbformat.v4.new_code_cell("x = 1  # <!-- symroof claimed = 1 -->"),
                nbformat.v4.new_markdown_cell(f"A GEMM does 2,730.\n<!-- symroof "
                                              f"{_GEMM.format(claimed=2730)} -->"),
                nbformat.v4.new_markdown_cell('## Ridge\nThe ridge is 295 TFLOP/s.\n<!-- symroof '
                                              'claimed = 295\nunit = "TFLOP/s"\nvalue = '
                                              '{hardware = "h100-sxm", q = "ridge"} -->')]
    doc = tmp_path / "nb.ipynb"
    nbformat.write(nb, str(doc))
    code, out = _check(doc, capsys)
    assert code == 2
    assert out[0].startswith(f"{doc}:cell 3:2: mismatch: A GEMM does 2,730.: printed 2,730")
    assert out[1].startswith(f"{doc}:cell 4:4: error: claim 'cell-4-line-3' field 'unit': "
                             "'TFLOP/s' measures a compute rate")
    assert out[-1] == "2 claims: 1 error, 1 mismatch"


def test_a_file_that_is_not_a_notebook_is_named(tmp_path, capsys):
    pytest.importorskip("nbformat")
    doc = tmp_path / "nb.ipynb"
    doc.write_text("{not json", encoding="utf-8")
    assert main(["check", str(doc)]) == 2
    assert f"{doc}: not a Jupyter notebook" in capsys.readouterr().err


# -- the testing helpers hide their own frames ------------------------------------------

def test_a_failing_helper_shows_the_callers_line_not_the_helpers(pytester):
    pytester.makepyfile(test_book="""
        from symroof.symbols import n, b
        from symroof.testing import assert_formula_equal, assert_close
        import symroof as sr

        def test_intensity():
            assert_formula_equal(sr.workloads.gemm(n, n, n).intensity, n / b)  # the book's line

        def test_close():
            assert_close(2731, 2730)  # the other line
        """)
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-p", "no:benchmark",
                                          "--tb=long")   # as the project's own addopts
    out = result.stdout.str()
    result.assert_outcomes(failed=2)
    assert "# the book's line" in out and "# the other line" in out
    assert "def assert_formula_equal" not in out and "def assert_close" not in out
    assert "__tracebackhide__" not in out
    assert len(out.splitlines()) < 80, out      # the difference, not the helper's body


def test_measure_machine_refuses_an_existing_out_before_measuring(tmp_path, monkeypatch, capsys):
    import symroof.cli.measure as measure_cli

    def measured(*args, **kwargs):
        raise AssertionError("measured before refusing the file")
    monkeypatch.setattr(measure_cli, "measure_machine", measured)
    here = tmp_path / "here.toml"
    here.write_text("# mine\n", encoding="utf-8")
    assert main(["measure", "machine", "--out", str(here)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("symroof: error:") and "--force" in err and str(here) in err
    assert here.read_text(encoding="utf-8") == "# mine\n"


def test_objects_print_for_people():
    import symroof as sr
    from symroof.models import get
    from symroof.symbols import B, S, b, n
    r = sr.roofline(sr.workloads.gemm(n, n, n), "h100-sxm", subs={n: 8192, b: 2})
    assert repr(r) == ("Roofline(h100-sxm bf16 hbm: F = 1.1 TFLOP, Q = 402.7 MB, I = 2731 FLOP/B, "
                       "ridge = 295.3 FLOP/B, time = 1.111 ms, compute-bound)")
    assert r.intensity == sp.Rational(8192, 3)            # the exact values stay
    dec = sr.workloads.decode(get("gpt2"), B, S)
    atlas = sr.atlas(dec, over=[B])
    assert repr(atlas) == ("<Atlas of 'gpt2-decode' over B: 2 crossing(s), 1 never, 0 unsolved; "
                           "print() shows the table>")
    shown = str(atlas).splitlines()
    assert shown[0] == "atlas of gpt2-decode over B" and len(shown) > 5
    assert max(map(len, shown)) < 300
    lines = str(sr.family({"gpt2": dec}, over=[B])).splitlines()
    assert lines[0] == "family: gpt2" and lines[2].split()[:3] == ["crossover", "in", "gpt2"]
    assert len(lines) == 6 and max(map(len, lines)) < 300   # a heading, a blank, 1 + 3 rows


def test_a_mismatch_explains_itself_with_the_derivations_terms(tmp_path, capsys):
    path = tmp_path / "m.toml"
    path.write_text(_HEAD + _claim("decode-bytes", "GB", '{workload = {builder = "decode", '
                                   'model = "llama-3-8b", args = ["B", "S"]}, q = "Q"}',
                                   extra="rounding = {sig = 3}\nsubs = {B = 1, S = 4096, b = 2}\n")
                    .replace("claimed = 1\n", "claimed = 15.0\n"), encoding="utf-8")
    assert main(["report", str(path), "--out", str(tmp_path / "o")]) == 0
    capsys.readouterr()
    md = (tmp_path / "o" / "m.md").read_text(encoding="utf-8")
    tex = (tmp_path / "o" / "m.tex").read_text(encoding="utf-8")
    # the weights a step reads: 8,030,261,248 parameters less the 128,256 x 4,096 embedding
    # table (a lookup, not read whole) = 7,504,924,672 values of b bytes; the KV cache:
    # K and V x 32 layers x 8 KV heads x 128 = 65,536 values per token: the term a
    # weights-only hand count leaves out
    line = ("(largest first): $7504924672 b$: 15.0098 GB; $65536 B S b$: 0.536871 GB; "
            "$4096 B b$: 8.192e-06 GB.")
    assert f"*The derivation's terms* {line}" in md
    assert f"\\textit{{The derivation's terms}} {line}" in tex
    assert 7504924672 == 8030261248 - 128256 * 4096 and 65536 == 2 * 32 * 8 * 128

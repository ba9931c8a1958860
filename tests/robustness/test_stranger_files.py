"""Claim files from strangers (issue 28, "Holes"): a name from a file never becomes a path,
text kept as math is still text from a stranger, and a claim file reaches only the chip
files beside it (or shipped ones, or a directory named on the command line).

Each test here failed before the fix it names and passes after it.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from importlib import resources
from pathlib import Path

import pytest

import symroof.files

from symroof import hardware
from symroof.cli import main
from symroof.errors import SymroofError
from symroof.present.appendix import _MATH_COMMANDS, render_latex, render_markdown
from symroof.verify import EXAMPLE, parse_claims, run_claims

HEAD = EXAMPLE.split("[[claim]]")[0]
GEMM = "[[claim]]" + EXAMPLE.split("[[claim]]")[1]


def _cited(cid: str, quote: str, **extra: str) -> str:
    """A cited claim (no recipe) whose quote is ``quote``, as TOML."""
    fields = {"id": cid, "document": "000", "section": "S", "quote": quote, "quantity": "q",
              "unit": "-", "status": "cited", "source": "a book", **extra}
    return "[[claim]]\nclaimed = 1\n" + "".join(f"{k} = {_toml_string(v)}\n"
                                               for k, v in fields.items())


def _toml_string(text: str) -> str:
    """``text`` as a TOML basic string (every control character escaped)."""
    out = []
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


# -- 1. a name from a file never becomes a path --------------------------------------------

_ROOFLINE_CHART = '''
[[chart]]
id = {id}
kind = "roofline"
document = "000"
after = "GEMM intensity"
hardware = "h100-sxm"
points = [{{label = "gemm", claim = "gemm-square-8192"}}]
'''


@pytest.mark.parametrize("chart_id", ['"../../escaped"', '"/tmp/escaped"', '"charts/../x"',
                                      '"a/b"', '""', '".hidden"', '"a b"', '"x\\u0000y"',
                                      '"caf\u00e9"', "7", '"..\\\\x"'])
def test_a_chart_id_is_validated_like_a_claim_id_with_file_line_and_field(chart_id):
    text = HEAD + GEMM + _ROOFLINE_CHART.format(id=chart_id)
    line = text.splitlines().index("[[chart]]") + 2  # the id's own line
    with pytest.raises(SymroofError) as err:
        parse_claims(text, "t.toml")
    message = str(err.value)
    assert message.startswith(f"t.toml:{line}: chart "), message
    assert "field 'id'" in message and "letters, digits" in message


def test_chart_ids_are_unique():
    text = HEAD + GEMM + _ROOFLINE_CHART.format(id='"r"') + _ROOFLINE_CHART.format(id='"r"')
    second = [i for i, s in enumerate(text.splitlines(), 1) if s == "[[chart]]"][1] + 1
    with pytest.raises(SymroofError, match=rf"t.toml:{second}: chart 'r' field 'id': duplicate "
                                           r"id \(first at line \d+\)"):
        parse_claims(text, "t.toml")


def test_a_table_id_and_declared_symbol_names_are_validated_too():
    # both reach the LaTeX raw (\texttt, \label, the formula printer)
    table = GEMM.replace('subs = {n = 8192, b = 2}',
                         'subs = {n = 8192, b = 2}\ntable = {id = "x}\\\\input{y", row = "r", '
                         'column = "c"}')
    (r,) = run_claims(parse_claims(HEAD + table, "t.toml")).results
    assert r.status == "error" and "field 'table'" in r.message and "letters, digits" in r.message
    for name, shown in [("x\\\\input{/etc/passwd}", r"'x\\\\input\{/etc/passwd\}'"),
                        ("\uff58", "'\uff58'")]:
        text = HEAD.replace('title = "Example"\n',
                            f'title = "Example"\n[symbols]\n"{name}" = "quantity"\n')
        with pytest.raises(SymroofError, match=rf"t.toml:2: \[symbols\] {shown}: expected"):
            parse_claims(text + GEMM, "t.toml")


@pytest.mark.parametrize("name", ["../escaped.svg", "charts/../../escaped.svg", "/tmp/escaped.svg",
                                  "charts/../..", ""])
def test_the_writer_refuses_any_target_outside_out(tmp_path, name):
    out = tmp_path / "out"
    out.mkdir()
    target = os.path.abspath(os.path.join(out, name))
    with pytest.raises(SymroofError, match="outside the output folder"):
        symroof.files.write_files(out, {"ok.md": "fine", name: "evil"})
    assert not os.path.exists(os.path.join(out, "ok.md"))  # nothing of the set was written
    assert not (os.path.isfile(target) and Path(target).read_text() == "evil")
    assert sorted(os.listdir(out)) == []


def test_the_writer_refuses_a_link_that_leads_outside_out(tmp_path):
    out, elsewhere = tmp_path / "out", tmp_path / "elsewhere"
    out.mkdir(), elsewhere.mkdir()
    (out / "charts").symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(SymroofError, match="outside the output folder"):
        symroof.files.write_files(out, {"charts/a.svg": "<svg/>"})
    assert list(elsewhere.iterdir()) == []


def test_report_writes_nothing_outside_out_even_if_a_chart_id_got_past_the_schema(
        tmp_path, monkeypatch, capsys):
    from symroof.cli import report
    from symroof.present.claim_charts import RenderedChart
    src = tmp_path / "c.toml"
    src.write_text(EXAMPLE)
    out = tmp_path / "deep" / "out"
    evil = RenderedChart("../../../escaped", "000", "GEMM intensity", "t", "<svg/>", "")
    monkeypatch.setattr(report, "render_outcome_charts", lambda outcome: (outcome, [evil]))
    assert main(["report", str(src), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "outside the output folder" in err
    assert not (tmp_path / "escaped.svg").exists()
    assert not out.exists() or list(out.rglob("*")) == []


# -- 2. text kept as math is still text from a stranger -------------------------------------

#: every way TeX has of writing a backslash or reaching a file, inside $...$
HOSTILE_MATH = [
    "^^5cinput{/etc/passwd}",                 # ^^5c is a backslash
    "x^^5c^^69nput{/etc/passwd}",
    "^^\x1cinput{/etc/passwd}",               # ^^ + a char below 64 shifts it by 64: a backslash
    "^^5Cinput{/etc/passwd}",
    "^^^^005cinput{/etc/passwd}",             # XeTeX/LuaTeX's four-caret form
    "x^^M\\input{/etc/passwd}",
    "\\csname input\\endcsname{/etc/passwd}",
    "\\catcode`\\|=0 |input{/etc/passwd}",
    "\\catcode92=12",
    "\\input{/etc/passwd}", "\\input /etc/passwd ", "\\include{/etc/passwd}",
    "\\openin1=/etc/passwd", "\\read1 to\\x", "\\write18{touch /tmp/pwned}",
    "\\immediate\\write18{id}", "\\lowercase{\\INPUT{/etc/passwd}}",
    "\\uppercase{\\input{/etc/passwd}}", "\\def~{\\input}~{/etc/passwd}", "~",
    "\\string\\input{/etc/passwd}", "\\expandafter\\input\\string{/etc/passwd}",
    "\\text{\\input{/etc/passwd}}", "\\mathrm{x}^^5cinput{/etc/passwd}",
    "\uff3cinput{/etc/passwd}",               # FULLWIDTH REVERSE SOLIDUS
    "\u2216input{/etc/passwd}",               # SET MINUS
    "\u29f5input{/etc/passwd}", "\ufe68input{/etc/passwd}",
    "\\\\input{/etc/passwd}", "\\@input{/etc/passwd}", "\\\ninput",
    "x % \\input{/etc/passwd}", "a # b", "a & b", "a}{\\input{/etc/passwd}",
    "<script>alert(1)</script>", "<img src=x onerror=alert(1)>", "a&lt;b", "\x00\\input",
    "\\left( x", "\\frac{a}{b}\x1b[31m",
]

#: what the escaping itself writes (text-mode replacements and the allowed math)
_ALLOWED_COMMANDS = _MATH_COMMANDS | {"textbackslash", "textasciicircum", "textasciitilde",
                                      "textless", "textgreater", "textbar", "ldots",
                                      "textsuperscript", "small", "end", "begin", "lt", "gt"}
_ALLOWED_SYMBOLS = set("&%$#_{}, ;!:")


def _tex_quote(quote: str) -> str:
    text = HEAD + _cited("hostile", quote)
    tex = render_latex(run_claims(parse_claims(text, "h.toml")), [], "symroof report h.toml")
    start = tex.index("\\begin{quote}\\small ") + len("\\begin{quote}\\small ")
    return tex[start:tex.index("\\end{quote}", start)]


def _md_quote(quote: str) -> str:
    text = HEAD + _cited("hostile", quote)
    md = render_markdown(run_claims(parse_claims(text, "h.toml")), [], "symroof report h.toml")
    (line,) = [x for x in md.splitlines() if x.startswith("> ")]
    return line[2:]


def _commands(tex: str) -> tuple[list[str], list[str]]:
    """The control words and control symbols TeX would read in ``tex`` (default catcodes)."""
    words, symbols = [], []
    i = 0
    while i < len(tex):
        if tex[i] == "\\":
            m = re.match(r"[A-Za-z]+", tex[i + 1:])
            if m:
                words.append(m.group(0))
                i += 1 + len(m.group(0))
                continue
            symbols.append(tex[i + 1:i + 2])
            i += 2
            continue
        i += 1
    return words, symbols


@pytest.mark.parametrize("body", HOSTILE_MATH)
def test_no_hostile_math_survives_into_the_latex_as_a_command(body):
    tex = _tex_quote(f"before ${body}$ after")
    words, symbols = _commands(tex)
    assert set(words) <= _ALLOWED_COMMANDS, (body, tex)
    assert set(symbols) <= _ALLOWED_SYMBOLS, (body, tex)
    assert "^^" not in tex and "input{" not in tex.replace("input\\{", "")
    unescaped = re.sub(r"\\.", "", tex)  # what is left once every \x pair is taken out
    assert not set(unescaped) & set("%#&~"), (body, tex)
    assert all(0x20 <= ord(ch) < 0x7F for ch in tex), (body, tex)  # no lookalike, no control
    assert tex.count("{") - tex.count("\\{") == tex.count("}") - tex.count("\\}")


@pytest.mark.parametrize("body", HOSTILE_MATH)
def test_no_hostile_math_reaches_the_markdown_raw(body):
    md = _md_quote(f"before ${body}$ after")
    unescaped = re.sub(r"\\.", "", md)
    assert not set(unescaped) & set("<>&"), (body, md)
    assert "^^" not in unescaped and "\x1b" not in md and "\x00" not in md


@pytest.mark.parametrize("body, tex, md", [
    # a document's own math is kept as math ...
    ("I \\approx 2N/b", "$I \\approx 2N/b$", "$I \\approx 2N/b$"),
    ("4 d_{\\mathrm{model}}^2", "$4 d_{\\mathrm{model}}^2$", "$4 d_{\\mathrm{model}}^2$"),
    ("t = \\max(F/\\pi,\\ Q/\\beta)", "$t = \\max(F/\\pi,\\ Q/\\beta)$",
     "$t = \\max(F/\\pi,\\ Q/\\beta)$"),
    # ... a relation keeps its meaning, written as a command in the Markdown
    ("d > n/12", "$d > n/12$", "$d \\gt n/12$"),
    ("a<b", "$a<b$", "$a\\lt b$"),
    # ... and anything outside the whitelist is text, whole
    ("^^5cinput{x}", "\\$\\textasciicircum{}\\textasciicircum{}5cinput\\{x\\}\\$",
     "\\$\\^\\^5cinput\\{x\\}\\$"),
    ("a}{b", "\\$a\\}\\{b\\$", "\\$a\\}\\{b\\$"),
])
def test_kept_math_is_exactly_the_whitelisted_math(body, tex, md):
    assert _tex_quote(f"${body}$") == tex
    assert _md_quote(f"${body}$") == md


def _tex_roots() -> list[str]:
    roots = ["/usr/share/texlive", "/usr/share/texmf", "/var/lib/texmf", "/etc/texmf",
             "/usr/local/texlive", "/usr/share/fonts"]
    for var in ("TEXMFROOT", "TEXMFDIST", "TEXMFLOCAL", "TEXMFSYSVAR", "TEXMFSYSCONFIG",
                "TEXMFVAR", "TEXMFCONFIG", "TEXMFHOME"):
        try:
            value = subprocess.run(["kpsewhich", f"-var-value={var}"], capture_output=True,
                                   text=True, check=False).stdout.strip()
        except OSError:
            continue
        roots += [v for v in value.split(":") if v.startswith("/")]
    return [os.path.realpath(r) for r in roots]


def test_pdflatex_builds_a_hostile_report_opening_no_file_but_its_own(tmp_path):
    if shutil.which("pdflatex") is None:
        if os.environ.get("CI") == "true":
            pytest.fail("pdflatex is not installed (CI must have it)")
        pytest.skip("pdflatex is not installed")
    secret_dir = tmp_path / "secret"
    secret_dir.mkdir()
    secret = secret_dir / "passwd"
    secret.write_text("SECRET-TOKEN-6c1f\n")
    doc_dir = tmp_path / "doc"
    doc_dir.mkdir()
    claims = [GEMM, _cited("kept", "kept: $4 d_{\\mathrm{model}}^2$, $a<b$, "
                               "$t = \\max(F/\\pi,\\ Q/\\beta)$")]
    for i, body in enumerate(HOSTILE_MATH):
        body = body.replace("/etc/passwd", str(secret))
        claims.append(_cited(f"h{i}", f"see ${body}$ and \\input{{{secret}}} ^^5c",
                             note=f"^^5cinput{{{secret}}} % # & ~ \x1b", section="S ^^5c"))
    chart = _ROOFLINE_CHART.format(id='"r"').replace(
        'hardware = "h100-sxm"', f'hardware = "h100-sxm"\ntitle = "\\\\input{{{secret}}} ^^5c"')
    (doc_dir / "h.toml").write_text(HEAD + "".join(claims) + chart, encoding="utf-8")
    assert main(["report", str(doc_dir / "h.toml"), "--format", "tex"]) == 0
    build = subprocess.run(["pdflatex", "-recorder", "-no-shell-escape", "-interaction=nonstopmode",
                            "-halt-on-error", "h.tex"], cwd=doc_dir, capture_output=True,
                           text=True, errors="replace", timeout=600, check=False)
    log = (doc_dir / "h.log").read_text(errors="replace")
    assert build.returncode == 0, log[-3000:]
    assert (doc_dir / "h.pdf").stat().st_size > 0
    assert "SECRET-TOKEN" not in log and "SECRET-TOKEN" not in build.stdout
    assert "\\begin{quote}\\small kept: $4 d_{\\mathrm{model}}^2$, $a<b$" in \
        (doc_dir / "h.tex").read_text()
    own = os.path.realpath(doc_dir)
    roots = _tex_roots()
    opened = []
    for line in (doc_dir / "h.fls").read_text(errors="replace").splitlines():
        kind, _, name = line.partition(" ")
        if kind != "INPUT":
            continue
        full = os.path.realpath(os.path.join(own, name))
        opened.append(full)
        assert full.startswith(own + os.sep) or any(full.startswith(r + os.sep) for r in roots), \
            f"pdflatex opened {full}"
    assert os.path.join(own, "h.tex") in opened
    assert not any("secret" in p for p in opened)


# -- 3. a claim file reaches only its own chip files -----------------------------------------

_CHIP = resources.files("symroof.hardware").joinpath("h100-sxm.toml").read_text("utf-8")


def _chip_claim(hw: str) -> str:
    return HEAD + f'''[[claim]]
id = "t"
document = "000"
section = "S"
quote = "q"
quantity = "time"
unit = "s"
kind = "exercise"
value = {{roofline = {{workload = {{builder = "gemm", args = ["n", "n", "n"]}}, hardware = {hw!r}}}, q = "time_s"}}
subs = {{n = 8192, b = 2}}
'''


def _report_json(path: Path, *extra: str, capsys) -> tuple[int, dict]:
    import json
    code = main(["report", str(path), "--format", "json", *extra])
    capsys.readouterr()
    return code, json.loads((path.parent / f"{path.stem}.json").read_text())[0]


def _foreign(tmp_path: Path) -> Path:
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    chip = foreign / "chip.toml"
    chip.write_text("api_token_4f2a = \"hunter2\"\n" + _CHIP)  # an unknown key: an error quotes it
    return chip


def test_a_claim_file_cannot_name_a_chip_file_elsewhere_and_the_error_quotes_no_foreign_key(
        tmp_path, capsys):
    chip = _foreign(tmp_path)
    mine = tmp_path / "mine"
    mine.mkdir()
    for name in (str(chip), "../foreign/chip.toml"):
        (mine / "c.toml").write_text(_chip_claim(name))
        code, row = _report_json(mine / "c.toml", capsys=capsys)
        assert code == 2 and row["status"] == "error"
        assert "api_token" not in row["note"] and "hunter2" not in row["note"]
        assert f"chip file {name!r}" in row["note"] and "beside the claim file" in row["note"]


def test_a_link_beside_the_claim_file_to_a_chip_file_elsewhere_is_refused(tmp_path, capsys):
    chip = _foreign(tmp_path)
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "link.toml").symlink_to(chip)
    (mine / "c.toml").write_text(_chip_claim("link.toml"))
    code, row = _report_json(mine / "c.toml", capsys=capsys)
    assert code == 2 and "api_token" not in row["note"] and "beside the claim file" in row["note"]


def test_a_chip_file_beside_the_claim_file_or_in_chips_is_read(tmp_path, capsys, monkeypatch):
    shipped = _report_json_for(tmp_path / "a", "h100-sxm", capsys)
    mine = tmp_path / "b"
    mine.mkdir()
    (mine / "mychip.toml").write_text(_CHIP)
    monkeypatch.chdir(tmp_path)  # relative to the claim file, not to the working folder
    (mine / "c.toml").write_text(_chip_claim("mychip.toml"))
    code, row = _report_json(mine / "c.toml", capsys=capsys)
    assert code == 0 and row["status"] == "derived" and row["derived"] == shipped
    chips = tmp_path / "chips"
    chips.mkdir()
    (chips / "other.toml").write_text(_CHIP)
    (mine / "c.toml").write_text(_chip_claim("other.toml"))
    code, row = _report_json(mine / "c.toml", capsys=capsys)
    assert code == 2 and "beside the claim file" in row["note"]
    code, row = _report_json(mine / "c.toml", "--chips", str(chips), capsys=capsys)
    assert code == 0 and row["derived"] == shipped


def _report_json_for(folder: Path, hw: str, capsys) -> float:
    folder.mkdir()
    (folder / "c.toml").write_text(_chip_claim(hw))
    code, row = _report_json(folder / "c.toml", capsys=capsys)
    assert code == 0
    return row["derived"]


def test_check_confines_chip_files_to_the_documents_folder(tmp_path, capsys):
    chip = _foreign(tmp_path)
    doc = tmp_path / "mine" / "ch.md"
    doc.parent.mkdir()
    doc.write_text('A GEMM takes some time.\n<!-- symroof kind = "exercise"\nunit = "s"\n'
                   'value = {roofline = {workload = {builder = "gemm", args = ["n", "n", "n"]}, '
                   f'hardware = "{chip}"}}, q = "time_s"}}\nsubs = {{n = 8192, b = 2}} -->\n')
    assert main(["check", str(doc)]) == 2
    captured = capsys.readouterr()
    assert "api_token" not in captured.out + captured.err
    assert "beside the claim file" in captured.out + captured.err


def test_hardware_chip_files_confines_resolve_and_leaves_it_free_outside(tmp_path):
    chip = _foreign(tmp_path)
    good = tmp_path / "good"
    good.mkdir()
    (good / "g.toml").write_text(_CHIP)
    with hardware.chip_files([good]):
        assert hardware.resolve("g.toml").name == "h100-sxm"
        assert hardware.resolve(str(good / "g.toml")).name == "h100-sxm"
        assert hardware.resolve("H100-SXM").name == "h100-sxm"
        with pytest.raises(SymroofError) as err:
            hardware.resolve(str(chip))
        assert "api_token" not in str(err.value)
        with pytest.raises(SymroofError, match="not a shipped chip"):
            hardware.resolve("missing.toml")  # the same words whether or not a file exists
    with pytest.raises(SymroofError, match="api_token_4f2a"):  # the user's own command line
        hardware.resolve(str(chip))

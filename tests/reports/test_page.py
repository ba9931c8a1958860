"""The Try-it page (symroof/present/page*.py, ``symroof sim``), without a browser.

The page's formulas are read back out of the HTML and evaluated here, exactly, by a
small arithmetic interpreter (the printed JavaScript is plain arithmetic), then compared
with the engine's expressions evaluated by SymPy: a second computation of every number
the page shows. The browser tests (tests/reports/test_page_browser.py) run the same page in
Chromium.
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from fractions import Fraction
from html.parser import HTMLParser
from pathlib import Path
from random import Random

import pytest
import sympy as sp

import symroof as sr
from symroof import hardware
from symroof import symbols as s
from symroof.cli import main
from symroof.errors import SymroofError
from symroof.present.page import (DEFAULT_OUT, PeakMode, page_data, page_peak, render_page,
                                  sim_workloads, try_prompts)
from symroof.present.page_format import decimals, duration, figure, prefixed
from symroof.present.page_js import js_expression, js_function
from symroof.testing import assert_formula_equal

REPO = Path(__file__).resolve().parents[2]
COMMITTED = REPO / DEFAULT_OUT
SEED = sr.models.get("seed-6.4b")


@pytest.fixture(scope="module")
def page() -> str:
    return render_page()


def page_json(html: str) -> dict:
    (line,) = [ln for ln in html.splitlines() if ln.startswith("const DATA = ")]
    return json.loads(line.removeprefix("const DATA = ").removesuffix(";"))


def page_formulas(html: str) -> dict[str, dict[str, dict[str, str]]]:
    """{workload: {variant: {flops|bytes|intensity|ceiling: expression}}} from the script."""
    out: dict[str, dict[str, dict[str, str]]] = {}
    block = html[html.index("const FORMULAS = {"):html.index("\n};\n")]
    key = variant = ""
    for line in block.splitlines()[1:]:
        if m := re.fullmatch(r'  "([a-z-]+)": \{', line):
            key = m.group(1)
            out[key] = {}
        elif m := re.fullmatch(r"    ceiling: (?:null|function \(v\) \{ return (.*); \}),", line):
            out[key]["*"] = {"ceiling": m.group(1)} if m.group(1) else {}
        elif m := re.fullmatch(r'      \{name: "([a-z_]*)",', line):
            variant = m.group(1)
            out[key][variant] = {}
        elif m := re.fullmatch(r"       (flops|bytes|intensity): function \(v\) \{ return (.*); \}\}?,?",
                               line):
            out[key][variant][m.group(1)] = m.group(2)
    return out


def run_js(code: str, values: dict[str, int]) -> Fraction:
    """Evaluate printed JavaScript arithmetic exactly: names ``v.X``, integers, + * / ( )."""
    tree = ast.parse(code, mode="eval")

    def ev(n: ast.AST) -> Fraction:
        if isinstance(n, ast.Expression):
            return ev(n.body)
        if isinstance(n, ast.Constant) and type(n.value) is int:
            return Fraction(n.value)
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "v":
            return Fraction(values[n.attr])
        if isinstance(n, ast.BinOp) and isinstance(n.op, (ast.Add, ast.Mult, ast.Div)):
            a, b = ev(n.left), ev(n.right)
            return a + b if isinstance(n.op, ast.Add) else a * b if isinstance(n.op, ast.Mult) else a / b
        raise AssertionError(f"printed code holds {ast.dump(n)}, not plain arithmetic")
    return ev(tree)


# ---------------------------------------------------------------------------
# the committed page, byte for byte


def test_committed_page_is_a_fresh_render(page):
    assert COMMITTED.read_text(encoding="utf-8") == page, (
        "reports/try_it.html is stale: run `symroof sim` and commit it")


def test_render_is_the_same_under_other_hash_seeds(page):
    code = "import sys; from symroof.present.page import render_page; sys.stdout.write(render_page())"
    for seed in ("0", "12345"):
        got = subprocess.run([sys.executable, "-c", code], capture_output=True, check=True,
                             env={**os.environ, "PYTHONHASHSEED": seed}, cwd=REPO)
        assert got.stdout.decode("utf-8") == page


def test_cli_writes_the_page(tmp_path, capsys, page):
    target = tmp_path / "sub" / "page.html"
    assert main(["sim", "--out", str(target)]) == 0
    assert target.read_text(encoding="utf-8") == page
    assert capsys.readouterr().out.startswith(f"wrote {target} (")
    assert main(["sim", "--out", str(target), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc == {"out": str(target), "bytes": len(page.encode("utf-8")),
                   "workloads": [w.key for w in sim_workloads()]}


def test_cli_default_path_and_bad_path(tmp_path, capsys, monkeypatch, page):
    monkeypatch.chdir(tmp_path)
    assert main(["sim"]) == 0
    assert (tmp_path / "reports" / "try_it.html").read_text(encoding="utf-8") == page
    (tmp_path / "file").write_text("x")
    assert main(["sim", "--out", str(tmp_path / "file" / "page.html")]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("symroof: error: ") and "Traceback" not in err[0]


# ---------------------------------------------------------------------------
# self-contained, labelled, no seed figure typed in


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def tags(html: str) -> list[tuple[str, dict[str, str | None]]]:
    p = _Tags()
    p.feed(html)
    return p.tags


def test_page_needs_no_network(page):
    assert not re.search(r"https?://(?!www\.w3\.org/2000/svg)", page), "a network address"
    for tag, attrs in tags(page):
        assert tag not in ("link", "img", "iframe", "object", "embed"), tag
        assert "src" not in attrs and "href" not in attrs, (tag, attrs)
    assert "@import" not in page and "url(" not in page.replace("url(#plot-area)", "")
    assert "fetch(" not in page and "XMLHttpRequest" not in page and "import(" not in page


def test_every_control_has_a_label(page):
    found = tags(page)
    labelled = {a["for"] for t, a in found if t == "label"}
    controls = [(t, a) for t, a in found if t in ("input", "select", "button")]
    assert len(controls) > 20
    for tag, attrs in controls:
        if tag == "button":
            continue   # their text is their name (checked in the browser tests)
        assert attrs.get("id") in labelled or attrs.get("aria-label"), (tag, attrs)
    assert all(a.get("tabindex") in (None, "0") for _, a in found), "a control out of tab order"
    assert '<meta name="viewport" content="width=device-width, initial-scale=1">' in page


def test_no_seed_result_is_a_literal_in_the_script(page):
    script = page[page.index("<script>"):]
    for figure_ in (r"2,?731", r"2730\.6", r"85\.3", r"113\.7", r"114", r"18\.18", r"0\.25",
                    r"124\.1", r"6\.44"):
        assert not re.search(rf"(?<![\d.]){figure_}(?![\d])", script), figure_


# ---------------------------------------------------------------------------
# the formulas are the engine's, printed, and evaluate to its values


def engine(key: str, variant: str):
    """The workload each page entry must show, built here from the public API."""
    m, n_ = SEED, s.n
    return {("gemm-big", ""): sr.workloads.gemm(s.M, s.N, s.K),
            ("gemm-small", ""): sr.workloads.gemm(s.M, s.N, s.K),
            ("attention", "fused"): sr.workloads.attention(s.S, m.d_model, m.heads),
            ("attention", "materialize_once"): sr.workloads.attention(
                s.S, m.d_model, m.heads, fused=False, unfused="materialize_once"),
            ("attention", "write_and_read"): sr.workloads.attention(
                s.S, m.d_model, m.heads, fused=False, unfused="write_and_read"),
            ("decode-small", ""): sr.workloads.decode(m, s.B, s.S),
            ("decode-large", ""): sr.workloads.decode(m, s.B, s.S),
            ("relu", ""): sr.workloads.elementwise(n_)}[(key, variant)]


def test_printed_formulas_are_the_engines(page):
    formulas = page_formulas(page)
    assert sorted(formulas) == sorted(w.key for w in sim_workloads())
    rng = Random(14)
    checked = 0
    for key, variants in formulas.items():
        for variant, code in variants.items():
            if variant == "*":
                continue
            a = engine(key, variant)
            for field in ("flops", "bytes", "intensity"):
                expr = getattr(a, field)
                assert code[field] == js_function(expr).split("return ", 1)[1][:-3]
                free = sorted(expr.free_symbols | {s.b}, key=str)
                for _ in range(5):
                    values = {x.name: rng.choice([1, 2]) if x == s.b else rng.randint(1, 70000)
                              for x in free}
                    want = sr.evaluate(expr, {x: values[x.name] for x in free})
                    assert run_js(code[field], values) == Fraction(int(sp.numer(want)),
                                                                    int(sp.denom(want)))
                    checked += 1
    assert checked == 8 * 3 * 5     # attention: fused and both unfused conventions


def test_decode_ceiling_is_the_limit_over_batch(page):
    formulas = page_formulas(page)
    for key in ("decode-small", "decode-large"):
        code = formulas[key]["*"]["ceiling"]
        assert run_js(code, {"S": 1024, "b": 2}) == 25         # (12D/S + 2)/b, the seed's 25
        assert run_js(code, {"S": 8192, "b": 2}) == 4
    assert_formula_equal(sim_workloads()[3].ceiling, (12 * 4096 / s.S + 2) / s.b)


@pytest.mark.parametrize("key, variant, values, seed_text", [
    ("gemm-big", "", {"M": 8192, "N": 8192, "K": 8192}, "2,731"),     # 2n/(3b)
    ("gemm-small", "", {"M": 256, "N": 256, "K": 256}, "85"),
    ("attention", "fused", {"S": 4096}, "1,024"),                       # S/(2b)
    ("attention", "materialize_once", {"S": 4096}, "114"),              # the seed's section 7
    ("attention", "write_and_read", {"S": 4096}, "31"),                 # the seed's section 3
    ("decode-small", "", {"B": 1, "S": 1024}, "1.0"),
    ("decode-large", "", {"B": 64, "S": 1024}, "18"),
    ("relu", "", {"n": 16 * 2**20}, "0.25"),
])
def test_defaults_give_the_seeds_figures(page, key, variant, values, seed_text):
    data = page_json(page)
    (w,) = [w for w in data["workloads"] if w["key"] == key]
    assert {c["name"]: c["default"] for c in w["controls"]} == values
    intensity = run_js(page_formulas(page)[key][variant]["intensity"], {**values, "b": 2})
    assert figure(float(intensity)) == seed_text


def test_unfused_conventions_give_the_seeds_two_numbers():
    """The seed's simulation materializes S x S once (114); its text's write-and-read of S
    and P per head gives about 31."""
    at = {s.S: 4096, s.b: 2}
    once = sr.workloads.attention(s.S, 4096, 32, fused=False, unfused="materialize_once")
    both = sr.workloads.attention(s.S, 4096, 32, fused=False, unfused="write_and_read")
    assert figure(sr.evaluate(once.intensity, at)) == "114"
    assert figure(sr.evaluate(both.intensity, at)) == "31"
    assert "materialize once" in sim_workloads()[2].about
    assert "write and read" in sim_workloads(unfused="write_and_read")[2].about


# ---------------------------------------------------------------------------
# chips from the TOML files, and which peak each mode takes


def test_chip_table_is_the_hardware_files(page):
    chips = page_json(page)["chips"]
    assert [c["name"] for c in chips] == list(hardware.names())
    for c in chips:
        spec = hardware.get(c["name"])
        assert c["label"] == spec.display_name and c["memory"] == spec.main_memory
        assert Fraction(c["bandwidth"]) == Fraction(str(spec.bandwidth()))
        for mode, widths in c["peaks"].items():
            for width, p in widths.items():
                if "missing" in p:
                    assert mode == "chip"
                    continue
                rate = spec.peak(p["precision"], p["unit"])
                assert p["rate"] == int(rate)
                assert p["ridge"] == pytest.approx(float(rate / spec.bandwidth()), rel=1e-15)


def test_seed_mode_uses_one_peak_at_every_precision():
    h100 = hardware.get("h100-sxm")          # 989.4 bf16, 1978.9 fp8 TFLOP/s; 3.35 TB/s
    same = [page_peak(h100, w, "seed") for w in (2, 1)]
    assert same[0] == same[1] and same[0].precision == "bf16"
    assert figure(same[0].rate / h100.bandwidth()) == "295"
    real = page_peak(h100, 1, PeakMode.CHIP)
    assert (real.precision, real.rate) == ("fp8", 1978900 * 10**9)
    assert figure(real.rate / h100.bandwidth()) == "591"
    a100 = page_peak(hardware.get("a100-80gb"), 1, "chip")   # no fp8: its int8 peak
    assert a100.precision == "int8"


def test_chips_without_a_16_bit_peak():
    tpu, x4 = hardware.get("tpu-v1"), hardware.get("opteron-x4")
    assert page_peak(tpu, 2, "chip") is None
    assert page_peak(tpu, 2, "seed").precision == "int8"          # its only peak
    assert page_peak(x4, 1, "seed") == page_peak(x4, 2, "seed")
    assert page_peak(x4, 2, "seed").precision == "fp64"
    with pytest.raises(SymroofError, match="peak mode"):
        page_peak(tpu, 2, "fastest")


def test_try_prompts_set_real_controls(page):
    data = page_json(page)
    controls = {(w["key"], c["name"]) for w in data["workloads"] for c in w["controls"]}
    keys = {w["key"] for w in data["workloads"]}
    prompts = try_prompts()
    assert len(prompts) == 4
    for _, text, steps in prompts:
        assert text and steps
        for step in steps:
            assert step.workload is None or step.workload in keys
            assert all((step.workload, name) in controls for name, _ in step.set)


# ---------------------------------------------------------------------------
# numbers (the JavaScript copy is compared in the browser tests)


def test_figures_as_the_seed_prints_them():
    assert [figure(x) for x in (8192 / 3, 256 / 3, 1024, 1.0, 200 / 11, 0.25, 1024 / 9)] == \
        ["2,731", "85", "1,024", "1.0", "18", "0.25", "114"]
    assert [decimals(x) for x in (10, 9.99, 1, 0.999, 0.1, 0.0999, 0)] == [0, 1, 1, 2, 2, 3, 0]
    # Python's rounding: the double's exact value, ties to even (0.125 is exact, 0.0125 not)
    assert [figure(x) for x in (0.125, 0.375, 10.5, 11.5, 0.0125)] == \
        ["0.12", "0.38", "10", "12", "0.013"]


def test_prefixes_and_durations():
    assert prefixed(2 * 8192**3, "FLOP") == "1.1 TFLOP"
    assert prefixed(999, "B") == "999 B" and prefixed(1000, "B") == "1.0 kB"
    assert prefixed(2**61, "FLOP") == "2.3 EFLOP"
    assert prefixed(10**21, "B") == "1.0 ZB" and prefixed(10**24, "B") == "1.0 YB"
    assert prefixed(10**27, "B") == "1,000 YB"      # past the last prefix: grouped digits
    assert [duration(t) for t in (1, 0.999, 1e-3, 2.5e-6, 4e-10, 3600)] == \
        ["1.0 s", "999 ms", "1.0 ms", "2.5 µs", "0.40 ns", "3,600 s"]


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -1.0, sp.oo, sp.zoo, s.n, 10**400,
                                 "2", True, None])
def test_numbers_refuse_what_the_page_never_shows(bad):
    with pytest.raises(SymroofError):
        figure(bad)


def test_printer_refuses_unsafe_or_inexact_code():
    with pytest.raises(SymroofError, match="2\\*\\*53"):
        js_expression(s.n * 2**60)
    with pytest.raises(SymroofError, match="JavaScript name"):
        js_expression(sp.Symbol("a-b") + 1)
    with pytest.raises(SymroofError, match="characters"):
        js_expression(sp.sin(s.n))          # Math.sin(...) holds no '<' but is not arithmetic
    assert js_expression(s.S**2 * s.b) == "v.S*v.S*v.b"


# ---------------------------------------------------------------------------
# issue 21 section 3: formulas in the seed's notation, sources, conventions, two views

#: The named quantities of the seed's notation, as this test spells them (independent of
#: the page's own table): P = 12 L D^2 first, then the seed model's numbers.
NAMED = ((s.P, 12 * s.L * s.D**2), (s.L, 32), (s.D, 4096), (s.H, 32))


def _named(expr: sp.Expr) -> sp.Expr:
    for symbol, value in NAMED:
        expr = expr.subs(symbol, value)
    return expr


def test_display_forms_are_exact_rewrites_of_the_engines_formulas(page):
    """Every formula the page shows, read back from the page's data, equals the engine's
    formula once the named quantities are substituted: cancel(display.subs(names) - f) == 0."""
    from symroof.present.page_notation import parse
    data = page_json(page)
    checked = 0
    for w in data["workloads"]:
        for v in w["variants"]:
            a = engine(w["key"], v["name"])
            for field in ("flops", "bytes", "intensity"):
                assert sp.cancel(_named(parse(v[field])) - getattr(a, field)) == 0, (w["key"], v)
                checked += 1
        if w["ceiling"] is not None:
            lim = sr.limit(engine(w["key"], "").intensity, s.B)
            for form in w["ceiling"].split(" = "):
                assert sp.cancel(_named(parse(form)) - lim) == 0
                checked += 1
        if w["special"] is not None:          # square GEMM: M = N = K = n
            square = engine(w["key"], "").intensity.subs({s.M: s.n, s.N: s.n, s.K: s.n})
            assert sp.cancel(parse(w["special"]["intensity"]) - square) == 0
            checked += 1
    assert checked == 8 * 3 + 2 * 2 + 2


def test_formulas_are_shown_in_the_seeds_notation_not_folded(page):
    data = page_json(page)
    shown = {w["key"]: w for w in data["workloads"]}
    decode_ = shown["decode-large"]["variants"][0]
    assert decode_["flops"] == "B(2P + 4LSD)" and decode_["bytes"] == "bP + 2bBLSD"
    assert shown["decode-large"]["ceiling"] == "(2P + 4LSD)/(2bLSD) = (12D/S + 2)/b"
    assert "P = 12LD²" in shown["decode-large"]["where"]
    assert shown["gemm-big"]["special"] == {"when": "M = N = K = n", "intensity": "2n/(3b)"}
    assert shown["attention"]["variants"][0]["intensity"] == "S/(2b)"
    texts = json.dumps([[v[f] for v in w["variants"] for f in ("flops", "bytes", "intensity")]
                        + [w["ceiling"] or ""] for w in data["workloads"]])
    assert not re.search(r"\d{3,}", texts), texts        # no constant folded in
    assert "*" not in texts and "**" not in texts


def test_a_wrong_display_form_is_refused():
    from symroof.present.page_notation import notation, parse
    with pytest.raises(SymroofError, match="not the engine's"):
        notation("B(2P + 2LSD)", engine("decode-large", "").flops, dict(NAMED))
    for bad in ("2P +", "(2P", "2P)", "x", "2 $ P"):
        with pytest.raises(SymroofError, match="page notation"):
            parse(bad)


def test_each_chip_figure_carries_its_source(page):
    chips = page_json(page)["chips"]
    for c in chips:
        spec = hardware.get(c["name"])
        assert c["bandwidth_source"] == spec.source(f"memory.{spec.main_memory}")
        assert c["bandwidth_source"].strip()
        for widths in c["peaks"].values():
            for p in widths.values():
                if "missing" not in p:
                    assert p["source"] == spec.source(f"peak.{p['unit']}.{p['precision']}")
    h100 = next(c for c in chips if c["name"] == "h100-sxm")
    assert "3.35TB/s" in h100["bandwidth_source"]
    assert "whitepaper" in h100["peaks"]["seed"]["2"]["source"]
    assert 'id="src-peak"' in page and 'id="src-bandwidth"' in page


def test_both_unfused_conventions_are_offered_and_placed_in_the_seed(page):
    found = tags(page)
    options = [a["value"] for t, a in found if t == "option" and a.get("value") in
               ("materialize_once", "write_and_read")]
    assert options == ["materialize_once", "write_and_read"]
    assert '<option value="materialize_once" selected>' in page
    body = page[:page.index("<script>")]
    # beside the select and again under "What the model leaves out": where the seed uses each
    assert re.search(r"<em>materialize once: [^<]*</em>\. The chapter uses it in the simulation "
                     r"\(its section 7[^:]*\): 114 FLOP/B", body)
    assert re.search(r"<em>write and read: [^<]*</em>\. The chapter uses it in the text of "
                     r"section 3[^:]*: 31 FLOP/B", body)
    assert re.search(r"<em>materialize once: [^<]*</em>: in the simulation [^,]*, giving 114", body)


def test_expert_view_is_a_toggle_and_the_basic_view_hides_its_controls(page):
    found = tags(page)
    (button,) = [a for t, a in found if t == "button" and a.get("id") == "expert"]
    assert button["aria-pressed"] == "false" and button["type"] == "button"
    assert '<body class="basic">' in page
    expert_only = {a.get("id") for t, a in found if "expert-only" in (a.get("class") or "").split()}
    assert {"widths", "modes", "out-flops", "out-bytes", "out-compute", "out-memory"} <= expert_only
    assert {f"shape-{w.key}" for w in sim_workloads()} <= expert_only
    assert ".basic .expert-only" in page
    assert ">Reset to the chapter&rsquo;s settings</button>" in page


def test_the_page_parses_its_workloads_into_requests_and_checks_its_values():
    """Each workload is a Request of the registry (the attention core with the model's
    width and heads fixed), its controls' values and the Try buttons' checked by the one
    rule: a value its symbol does not take, a symbol no control sets, or a value past the
    control's range is refused, naming it."""
    from symroof import request
    from symroof.present import page as pg

    ws = {w.key: w for w in sim_workloads()}
    core = request.analysis(request.make("attention", fixed={"D": 4096, "H": 32},
                                         options={"unfused": "materialize_once"}))
    (_, once), = [v for v in ws["attention"].variants if v[0] == "materialize_once"]
    assert sp.cancel(once.bytes - core.bytes) == 0
    assert sp.cancel(once.bytes - (4 * s.S * 4096 * s.b + 32 * s.S**2 * s.b)) == 0
    with pytest.raises(SymroofError, match=r"page control M: expected a positive integer "
                                           r"\(a dimension\), got 0"):
        pg._built("gemm", (pg.Control(s.M, "M", 0, 8),))
    step = pg.TryStep("x", "gemm-big", (("N", 0),))
    with pytest.raises(SymroofError, match="try t 'x' N: expected a positive integer"):
        pg.check_steps(tuple(ws.values()), (("t", "", (step,)),))
    step = pg.TryStep("x", "decode-large", (("M", 4),))
    with pytest.raises(SymroofError, match="try t 'x' M: page decode-large does not use M"):
        pg.check_steps(tuple(ws.values()), (("t", "", (step,)),))
    step = pg.TryStep("x", "decode-large", (("B", 2**17),))
    with pytest.raises(SymroofError, match="past the control's largest value, 65536"):
        pg.check_steps(tuple(ws.values()), (("t", "", (step,)),))
    pg.check_steps(tuple(ws.values()), try_prompts())

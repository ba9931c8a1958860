"""Claims: the claim-file schema, units, rounding, the recipe language, annotated
documents and ``symroof check``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import sympy as sp

from symroof.cli import main
from symroof.errors import SymroofError
from symroof.symbols import D, S, b, n
from symroof.testing import assert_close, assert_formula_equal
from symroof.verify import EXAMPLE, parse_claims, run_claims
from symroof.verify.annotations import annotated_claims, load_annotated
from symroof.verify.compare import check_rounding, status
from symroof.verify.units import scale, split

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
HEAD = EXAMPLE.split("[[claim]]")[0]


def claim(body: str, extra: str = "") -> str:
    """A claim file with one claim: the example's fields, then ``body`` overriding."""
    fields = {line.split(" = ", 1)[0]: line for line in EXAMPLE.split("[[claim]]")[1].strip().splitlines()}
    for line in body.strip().splitlines():
        fields[line.split(" = ", 1)[0]] = line
    return HEAD + "[[claim]]\n" + "\n".join(v for v in fields.values() if not v.endswith("= DROP")) + "\n" + extra


def one(text: str):
    (r,) = run_claims(parse_claims(text, "t.toml")).results
    return r


# -- units and rounding ----------------------------------------------------------------


@pytest.mark.parametrize("unit, factor, base", [
    ("FLOP", 1, "FLOP"), ("GFLOP", 10**9, "FLOP"), ("TB/s", 10**12, "B/s"),
    ("KiB", 1024, "B"), ("GiB", 2**30, "B"), ("ms", sp.Rational(1, 1000), "s"),
    ("%", sp.Rational(1, 100), "%"), ("h", 3600, "h"), ("tokens/s", 1, "tokens/s"),
    ("kFLOP/B", 1000, "FLOP/B"),
])
def test_units_scale_by_their_prefix(unit, factor, base):
    assert scale(unit) == factor and split(unit)[1] == base


@pytest.mark.parametrize("unit", ["FLOPS/B", "gb", "kratio", "", "GB/parsec"])
def test_unknown_units_are_named(unit):
    with pytest.raises(SymroofError, match="unit"):
        split(unit)


@pytest.mark.parametrize("derived, claimed, rounding, expected", [
    (sp.Rational(8192, 3), 2731, {"sig": 4}, "match"),        # 2,730.67 prints as 2,731
    (sp.Rational(8192, 3), 2730, {"sig": 4}, "mismatch"),
    (sp.Rational(8192, 3), 2700, {"sig": 2}, "match"),
    (sp.Rational(2731, 1), 2730, {"sig": 3}, "match"),         # 2,731 to 3 figures: 2,730
    (sp.Rational(1245, 100), sp.Rational(125, 10), {"decimals": 1}, "match"),  # half up
    (sp.Rational(1244, 100), sp.Rational(125, 10), {"decimals": 1}, "mismatch"),
    (sp.Integer(95), 100, {"rel": 0.05}, "match"),
    (sp.Integer(94), 100, {"rel": 0.05}, "mismatch"),
    (sp.Integer(5), 1, {"greater_than": True}, "match"),
    (sp.Integer(1), 1, {"less_than": True}, "mismatch"),
    (sp.Integer(1), 1, {"at_most": True}, "match"),
    (sp.Integer(300), 100, {"orders": 0.5}, "match"),           # log10(3) = 0.48
    (sp.Integer(400), 100, {"orders": 0.5}, "mismatch"),
    (sp.sqrt(2), sp.Rational(1414, 1000), {"decimals": 3}, "match"),
])
def test_rounding_rules(derived, claimed, rounding, expected):
    assert status(derived, sp.sympify(claimed), rounding) == expected


def test_formulas_compare_by_cancellation():
    assert status(2 * n / (3 * b), 2 * n / (3 * b) + 0, {"exact": True}) == "match"
    assert status((12 * D + 2 * S) / (S * b), (12 * D / S + 2) / b, {"exact": True}) == "match"
    assert status(2 * n / (3 * b), n / b, {"exact": True}) == "mismatch"
    with pytest.raises(SymroofError, match="compares exactly"):
        status(n, n, {"sig": 3})


@pytest.mark.parametrize("rounding", [{}, {"sig": -1}, {"sig": 1, "rel": 0.1}, {"rel": 0},
                                      {"round": 2}, {"less_than": 3}])
def test_bad_rounding_is_named(rounding):
    with pytest.raises(SymroofError, match="rounding"):
        check_rounding(rounding, "rounding")


# -- the schema: every problem names file, line and field ---------------------------------


def test_the_example_matches_with_its_formula_substitution_and_number():
    r = one(EXAMPLE)
    assert r.status == "match"
    assert_formula_equal(r.formula, 2 * n / (3 * b))
    assert r.derived == sp.Rational(8192, 3) and r.claimed == 2731


@pytest.mark.parametrize("body, fragment", [
    ('unit = "FLOPS/B"', "t.toml:14: claim 'gemm-square-8192' field 'unit': unknown unit"),
    ('claimed = "2731"', "field 'claimed': expected a finite number"),
    ("colour = 3", "field 'colour': unknown field"),
    ('document = "999"', "field 'document': no [[document]]"),
    ('value = {workload = {builder = "gemmm", args = ["n", "n", "n"]}, q = "I"}',
     "unknown workload 'gemmm' (did you mean 'gemm'"),
    ('value = {workload = {builder = "gemm", args = ["n", "n", "n"]}, q = "Intensity"}',
     "unknown workload quantity 'Intensity'"),
    ('value = "2*nn"', "'nn'"),
    ('value = "__import__(1)"', "t.toml:17: claim 'gemm-square-8192' field 'value' "
                                "'__import__(1)': unknown function '__import__'"),
    ("subs = {n = 8192}", "still has b"),
    ('status = "match"', "field 'status'"),
    ("claimed = DROP", "field 'claimed': a checked claim states claimed"),
    ("rounding = {sig = 4, rel = 0.1}", "field 'rounding'"),
    ('value = {operation = "os.system", args = ["1"]}', "unknown operation 'os.system'"),
    ('value = {workload = {builder = "gemm", args = ["n", "n", "n"], options = {colour = 1}}, q = "I"}',
     "workload 'gemm' has no option 'colour'; its options: flop_count"),
])
def test_a_bad_claim_is_an_error_naming_line_and_field(body, fragment):
    r = one(claim(body))
    assert r.status == "error"
    assert fragment in r.message, r.message


def test_one_bad_claim_leaves_the_others_reported_and_duplicates_are_named():
    good = EXAMPLE.split("[[claim]]")[1]
    text = EXAMPLE + "\n[[claim]]" + good.replace('unit = "FLOP/B"', 'unit = "parsecs"') + \
        "\n[[claim]]" + good
    statuses = [r.status for r in run_claims(parse_claims(text, "t.toml")).results]
    assert statuses == ["match", "error", "error"]
    last = run_claims(parse_claims(text, "t.toml")).results[2]
    assert "duplicate id (first at line 8)" in last.message


@pytest.mark.parametrize("text, fragment", [
    ("title = [", "not valid TOML"), ("x = 1", "unknown top-level key 'x'"),
    ("[[document]]\nid = 1", "needs id, file and title"),
])
def test_a_bad_file_is_one_error_naming_it(text, fragment):
    with pytest.raises(SymroofError, match="t.toml"):
        parse_claims(text, "t.toml")
    with pytest.raises(SymroofError, match=fragment.replace("[", r"\[")):
        parse_claims(text, "t.toml")


# -- the recipe language: each node kind against an independent computation ---------------


def test_recipe_kinds_give_the_seeds_figures():
    cases = {
        # limit of decode intensity: (12D/S + 2)/b at D = 4096, S = 1024, b = 2 -> 25
        'value = {limit = {workload = {builder = "decode", model = {transformer = {layers = "L", d_model = "D", heads = "H"}}, args = ["B", "S"]}, q = "I"}, var = "B"}\nsubs = {D = 4096, S = 1024, b = 2}\nclaimed = 25\nrounding = {exact = true}': 25,
        # crossover F_attention = F_weights: S = 6D = 24,576 at D = 4096 (Kaplan's d > n/12)
        'value = {crossover = {lhs = {workload = {builder = "decode", model = {transformer = {layers = "L", d_model = "D", heads = "H"}}, args = ["B", "S"]}, q = "F_attention"}, rhs = {workload = {builder = "decode", model = {transformer = {layers = "L", d_model = "D", heads = "H"}}, args = ["B", "S"]}, q = "F_weights"}, var = "S"}}\nsubs = {D = 4096}\nclaimed = 24576\nunit = "tokens"': 24576,
        # the H100's bf16 ridge: 989.4e12 / 3.35e12 = 295.3
        'value = {hardware = "h100-sxm", q = "ridge", precision = "bf16"}\nsubs = DROP\nclaimed = 295.3\nrounding = {decimals = 1}': sp.Rational(9894000, 33500),
        # 6.44e9 parameters of the seeds' 6.4B model (12 L D^2)
        'value = {model = "seed-6.4b", q = "params"}\nsubs = DROP\nclaimed = 6.44\nunit = "Gparameters"\nrounding = {sig = 3}': 12 * 32 * 4096**2,
        # KV cache of one 1,024-token sequence at 16 bits: 537 MB
        'value = {memory = {model = {preset = "seed-6.4b", bytes = "2"}, batch = 1, context = 1024}, q = "kv_cache"}\nsubs = DROP\nclaimed = 537\nunit = "MB"\nrounding = {sig = 3}': 2 * 32 * 1024 * 4096 * 2,
        # the tile that clears a ridge of 200 FLOP/B at 2 bytes: T = 400
        'value = {operation = "tile_for_ridge", args = ["200", "2"]}\nsubs = DROP\nclaimed = 400\nunit = "-"': 400,
        # let/expr: 2 S^2 D causal attention FLOPs over fused traffic 4 S D b = S/(2b)
        'value = {let = {F = {workload = {builder = "attention", args = ["S", "D", "H"]}, q = "F"}}, expr = "F/(4*S*D*b)"}\nsubs = {S = 4096, b = 2}\nclaimed = 1024': 1024,
    }
    for body, expected in cases.items():
        r = one(claim(body))
        assert r.status == "match", (body, r.message, r.derived)
        assert_close(r.derived, expected, rel=1e-12)


def test_roofline_node_and_ideal_devices():
    body = ('value = {roofline = {workload = {builder = "decode", model = {preset = "llama-3-8b", '
            'bytes = "2"}, args = ["B", "S"]}, hardware = "h100-sxm", subs = {B = 32, S = 2048}}, '
            'q = "time_s"}\nsubs = DROP\nunit = "ms"\nclaimed = 7.04\nrounding = {sig = 3}')
    r = one(claim(body))
    assert r.status == "match", r.message
    halved = one(claim(body.replace("S = 2048}}", "S = 2048}, devices = 2}")))
    assert_close(halved.derived, r.derived / 2, rel=1e-12)   # ideal: twice the bandwidth


def test_alternatives_show_the_figure_under_another_convention():
    r = one(claim('alternatives = [{label = "8-bit values", value = {workload = {builder = "gemm", '
                  'args = ["n", "n", "n"]}, q = "I"}, subs = {b = 1}}]'))
    (alt,) = r.alternatives
    assert alt.derived == sp.Rational(16384, 3) and alt.status == "mismatch"


# -- annotated documents and symroof check --------------------------------------------------


def test_markdown_annotations_are_found_with_their_section_and_quote():
    cf = load_annotated(FIXTURES / "chapter.md")
    assert [c.id for c in cf.claims] == ["line-9", "gemm-8192", "line-24",
                                         "weights-deliberately-wrong"]
    assert cf.claims[1].section == "GEMM" and cf.claims[2].section == "Decode"
    assert cf.claims[1].quote.startswith("At 16 bits, an 8192^3 GEMM")
    assert dict(cf.symbols) == {"peak": "quantity"}


def test_check_names_the_deliberate_mismatch_and_exits_nonzero(capsys):
    code = main(["check", str(FIXTURES / "chapter.md")])
    out = capsys.readouterr().out.splitlines()
    assert code == 1
    (bad,) = [line for line in out if "mismatch:" in line]
    assert bad.startswith(f"{FIXTURES / 'chapter.md'}:31: mismatch:")
    assert "printed 14.2 GB, derived 12.8849 GB" in bad       # 6,442,450,944 x 2 bytes
    assert out[-1] == "4 claims: 3 match, 1 mismatch"


def test_check_of_latex_comments_passes(capsys):
    assert main(["check", str(FIXTURES / "chapter.tex")]) == 0
    assert capsys.readouterr().out.strip() == "2 claims: 2 match"


def test_check_bad_annotation_is_one_line_and_status_2(tmp_path):
    doc = tmp_path / "bad.md"
    doc.write_text("Text.\n<!-- symroof claimed = \n-->\n", encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "symroof", "check", str(doc)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "bad.md:2" in done.stderr
    assert "Traceback" not in done.stderr


def test_unclosed_annotation_is_named():
    with pytest.raises(SymroofError, match=r"x.md:1: .*never closed"):
        annotated_claims("<!-- symroof claimed = 1\n", "x.md")

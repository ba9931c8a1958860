"""The seed appendix as a publisher would print it (issue 21): derivations that add up,
roofline formulas in the roofline's own names (exactly), exercise answers as one grid per
exercise, captioned tables, charts beside their claims, notes typeset (math as math, code
as code, claim ids as links), errata grouped by their declared cause, and an Out of scope
section; the claim-file fields behind them refuse bad input by file, line and field."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest
from appendix_md import block as claim_block
import sympy as sp

from symroof.errors import SymroofError
from symroof.present.appendix import _roofline_names, errata, number_latex, prose, _id_pattern
from symroof.symbols import D, L, S, b
from symroof.verify import EXAMPLE, parse_claims, units





def test_every_derivation_adds_up_to_its_workload_and_to_the_claim(seed_outcome):
    shown = [r for r in seed_outcome.results if r.derivation is not None]
    assert len(shown) >= 90  # every claim whose recipe reads a workload at its top
    for r in shown:
        d = r.derivation
        assert sp.cancel(sp.Add(*(row.flops for row in d.rows)) - d.flops) == 0, r.claim.id
        assert sp.cancel(sp.Add(*(row.bytes for row in d.rows)) - d.bytes) == 0, r.claim.id
        if d.step == "I = F/Q" and not r.claim.value.get("subs"):
            assert sp.cancel(d.flops / d.bytes - r.formula) == 0, r.claim.id


def test_derivation_of_fused_attention_matches_hand_counts(by_id):
    # fused causal prefill, one layer: QK^T and PV each 2 S^2 D FLOPs, halved by the mask
    # (S^2 D each); the fused kernel reads Q, K, V and writes O: 4 S D b bytes
    d = by_id["s000-uh3-1024"].derivation
    assert sp.cancel(d.flops - 2 * S**2 * D) == 0
    assert sp.cancel(d.bytes - 4 * S * D * b) == 0
    assert d.step == "I = F/Q"


def test_decode_derivation_shows_which_ops_give_the_attention_term(seed_outcome):
    # a decode step of the seeds' symbolic model: only the attention products grow with S
    def builder(value):
        spec = value.get("workload") or value.get("roofline", {}).get("workload", {})
        return spec.get("builder")

    decodes = [r for r in seed_outcome.results if r.derivation is not None
               and builder(r.claim.value) == "decode" and r.derivation.flops.has(S)]
    assert len(decodes) >= 10
    for r in decodes:
        rows = r.derivation.rows
        attention = [row for row in rows if "scores" in row.label]
        assert len(attention) == 1 and attention[0].flops.has(S), r.claim.id
        assert not any(row.flops.has(S) for row in rows if row is not attention[0]), r.claim.id


def test_roofline_claims_are_shown_in_the_rooflines_names_exactly(seed_outcome, md):
    named = 0
    for r in seed_outcome.results:
        shown, values = _roofline_names(r)
        if not shown:
            continue
        named += 1
        assert r"\max" in shown and r"\frac{F}{\pi}" in shown and r"\frac{Q}{\beta}" in shown
        assert r"\pi = " in values and r"\beta = " in values
    assert named >= 20
    block = claim_block(md, "s001-s7-b8-per-user")
    assert r"\frac{1}{\max\left(\frac{F}{\pi}, \frac{Q}{\beta}\right)}" in block
    assert r"\pi = 989.4 \times 10^{12}" in block and r"\beta = 3.35 \times 10^{12}" in block
    assert "241552734375" not in block  # no chip number folded into what a reader sees


def test_number_latex():
    assert number_latex(sp.Integer(8 * 10**9)) == r"8 \times 10^{9}"
    assert number_latex(sp.Integer(3_350_000_000_000)) == r"3.35 \times 10^{12}"
    assert number_latex(sp.Integer(8_484_257)) == "8{,}484{,}257"
    assert number_latex(sp.Integer(4096)) == "4096"
    assert number_latex(sp.Rational(3, 5)) == r"\frac{3}{5}"


def test_exercise_answers_are_one_grid_per_exercise(md):
    block = re.sub(r"\\(.)", r"\1", claim_block(md, "s001-ex-b"))  # Markdown's escapes undone
    assert block.lstrip().startswith("**Exercise B (Llama-3-8B FP16 on an H100 SXM): per batch")
    header = next(line for line in block.splitlines() if line.startswith("| "))
    assert header.count("|") == 5 and "bytes per step (B)" in header and "ITL (s)" in header
    rows = [line for line in block.splitlines() if line.startswith("| B = ")]
    assert len(rows) == 6  # batch 1, 32, 256 at both contexts
    for row in rows:
        assert row.count("](#s001-ex-b") == 3  # every answer links to its claim


def test_tables_are_captioned_never_by_their_id(md):
    captions = re.findall(r'<a id="([^"]+)"></a>\n\*\*([^*]+)\*\*(?: \([^)]*\))?\n\n\|', md)
    assert len(captions) >= 10
    for anchor, caption in captions:
        assert anchor not in caption


def test_charts_stand_beside_the_claims_they_illustrate(md):
    for chart, claim in [("opteron-x2-x4", "s000-opteron-x4-ridge"),
                         ("kv-weights-llama-3-70b", "s001-s5-b16-27000"),
                         ("attention-fused-unfused", "s000-uh3-31")]:
        assert f"](charts/{chart}.svg)" in claim_block(md, claim), chart


def test_notes_are_typeset_no_raw_tex_or_code_outside_math(md):
    notes = [line for line in md.splitlines() if line.startswith(("*Note.*", "*Finding.*"))]
    assert len(notes) > 100
    for line in notes:
        prose_only = re.sub(r"`[^`]*`", "", re.sub(r"\$[^$]*\$", "", line))
        assert not re.search(r"\\\^|\^", prose_only), line
        assert not re.search(r"[A-Za-z]\\_[A-Za-z]", prose_only), line   # d_ff, S_f as text
    assert "$P = 12LD^2$, the seeds' parameter count ([s000-params-12LD2](#s000-params-12LD2))" \
        in md.replace("\\(", "(").replace("\\)", ")")


def test_prose_keeps_math_code_and_links_apart():
    ids = _id_pattern(["s001-we-bytes", "s001-s4-0.02pct"])
    text = "12 x 4,096 (s001-we-bytes); $d_{\\mathrm{ff}} = 4D$ and `n_kv_heads`; s001-s4-0.02pct."
    assert prose(text, "md", ids) == (
        r"12 × 4,096 \([s001-we-bytes](#s001-we-bytes)\); $d_{\mathrm{ff}} = 4D$ and "
        "`n_kv_heads`; [s001-s4-0.02pct](#s001-s4-0-02pct).")
    assert prose(text, "tex", ids) == (
        r"12 $\times$ 4,096 (\hyperref[s001-we-bytes]{s001-we-bytes}); $d_{\mathrm{ff}} = 4D$ "
        r"and \texttt{n\_kv\_heads}; \hyperref[s001-s4-0-02pct]{s001-s4-0.02pct}.")
    # math the whitelist refuses stays text, escaped
    assert prose(r"$\input{x}$", "tex") == r"\$\textbackslash{}input\{x\}\$"


def test_errata_are_grouped_by_their_declared_cause(seed_outcome):
    groups = errata(seed_outcome)
    assert sum(len(g["rows"]) for g in groups) == 34
    assert len(groups) == 8
    kv = next(g for g in groups if g["rows"][0]["id"] == "s001-we-kv-bytes")
    assert [r["id"] for r in kv["rows"]][1:4] == ["s001-we-bytes", "s001-we-intensity",
                                                  "s001-we-t-step"]
    assert "$2^{32}$" in kv["cause"]
    table = next(g for g in groups if g["rows"][0]["id"] == "s001-s7-b8-kv")
    assert len(table["rows"]) == 18


def test_out_of_scope_lists_what_is_not_checked_and_why(md, seed_outcome):
    entries = seed_outcome.source.out_of_scope
    assert len(entries) >= 10
    section = md.split('<a id="out-of-scope"></a>')[1]
    assert "- [Out of scope](#out-of-scope)" in md
    for o in entries:
        assert o.reason.split()[0] in section
    assert "Name five plausible causes" in section


def _claim_file(extra: str = "", claim_extra: str = "", top: str = "") -> str:
    text = EXAMPLE.replace('title = "Example"\n', f'title = "Example"\n{top}')
    return text.replace('subs = {n = 8192, b = 2}\n', f'subs = {{n = 8192, b = 2}}\n{claim_extra}') + extra


def test_new_fields_are_read():
    f = parse_claims(_claim_file(
        top='date = "2 December 2026"\n',
        claim_extra='cause = "a slip"\ntable = {id = "t", row = "r", column = "c", title = "T"}\n',
        extra='\n[[out_of_scope]]\ndocument = "000"\nsection = "S"\nquote = "q"\nreason = "r"\n'),
        "f.toml")
    assert f.date == "2 December 2026"
    assert f.claims[0].cause == "a slip" and f.claims[0].table["title"] == "T"
    assert [o.reason for o in f.out_of_scope] == ["r"]


@pytest.mark.parametrize(("kwargs", "expected"), [
    ({"claim_extra": "cause = 3\n"}, r"f.toml:\d+: claim 'gemm-square-8192' field 'cause': "
                                     "expected a string"),
    ({"claim_extra": 'table = {id = "t", row = "r", column = "c", caption = "T"}\n'},
     r"field 'table': expected \{id = \.\.\., row = \.\.\., column = \.\.\.\}"),
    ({"top": "date = 2026-12-02\n"}, r"f.toml:\d+: date: expected a string"),
    ({"extra": '\n[[out_of_scope]]\ndocument = "009"\nsection = "S"\nquote = "q"\nreason = "r"\n'},
     r"f.toml:\d+: out_of_scope #1 field 'document': no \[\[document\]\] with id '009'"),
    ({"extra": '\n[[out_of_scope]]\ndocument = "000"\nsection = "S"\nquote = "q"\n'},
     r"f.toml:\d+: out_of_scope #1: expected \{document, section, quote, reason\}"),
])
def test_new_fields_refuse_bad_input_by_file_line_and_field(kwargs, expected):
    try:
        f = parse_claims(_claim_file(**kwargs), "f.toml")
    except SymroofError as err:
        message = str(err)
    else:  # a claim's own problem is kept on the claim; the other claims still run
        message = f.claims[0].error or ""
    assert re.search(expected, message), message


_NOTE_NUMBER = re.compile(r"(?<![\w.^{$])(\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?)(?:e(\d+))?\s?"
                          r"(%|[A-Za-z]+(?:/[A-Za-z]+)?)?")


def _agrees(printed: str, exponent: str | None, value: float) -> bool:
    """``value`` rounds to the printed figure at the figure's own significant digits
    (an integer's trailing zeros are not significant: 11,040 is 11,036 to four figures)."""
    digits = printed.replace(",", "")
    x = float(digits) * 10 ** int(exponent or 0)
    if x == 0:
        return value == 0
    significant = digits.replace(".", "").lstrip("0")
    if "." not in digits:
        significant = significant.rstrip("0") or "0"
    unit = 10 ** (math.floor(math.log10(abs(x))) - len(significant) + 1)
    return abs(value - x) <= unit / 2 * (1 + 1e-9)


def _note_unit(text: str | None, claim_unit: str) -> str | None:
    """The unit of a note's figure when it is checkable against the claim's kind of
    value: the claim's own unit, or another unit of the same dimension (``ms`` in an
    ``s`` claim, ``B`` or ``B/token`` in a ``GB`` claim) that is not a bare count."""
    if text is None:
        return None
    if text == claim_unit:
        return text
    try:
        dimension = units.dimension_expr(text)
    except SymroofError:  # a word, not a unit
        return None
    same = dimension == units.dimension_expr(claim_unit)
    return text if same and dimension != 1 else None


# "4,096 B per token" is a figure in B/token
_PER = re.compile(r"\b(B|FLOP|bytes?) per (token|parameter)\b")


def test_every_figure_a_note_gives_is_a_derived_value(seed_outcome):
    """Notes are right: a number a note prints in its claim's own unit ("7.34 ms" beside a
    claim in ms), or in another unit of the same dimension ("4,294,967,296 B" beside a
    claim in GB, "36,000 s" beside one in h, "4,096 B per token" beside one in GB), is, at
    its own precision, a value the engine derived or the document printed: this claim's,
    one of its alternatives', or another claim's (compared in base units: the KV term of
    a decode step in GB is the KV claim's bytes). A figure glued to "B" ("540B") names a
    model's size, not bytes."""
    by_dimension: dict[sp.Expr, list[float]] = {}  # every value, in base units
    for r in seed_outcome.results:
        for v in [r.derived, r.claimed, *(a.derived for a in r.alternatives)]:
            if v is not None and not v.free_symbols:
                by_dimension.setdefault(units.dimension_expr(r.claim.unit), []).append(float(v))
    checked, other_unit, wrong = 0, 0, []
    for r in seed_outcome.results:
        unit = r.claim.unit
        if unit in ("-", "ratio"):
            continue
        # math and code are formulas, not figures; a figure in quotes is the document's own
        prose_only = re.sub(r"\$[^$]*\$|`[^`]*`|(?<!\w)'[^']*'(?!\w)|\"[^\"]*\"", " ",
                            r.claim.note)
        prose_only = _PER.sub(lambda m: f"{m.group(1)}/{m.group(2)}", prose_only)
        for m in _NOTE_NUMBER.finditer(prose_only):
            shown = _note_unit(m.group(3), unit)
            glued = prose_only[m.end(2) if m.group(2) else m.end(1):].startswith("B")
            if shown is None or shown == "B" and glued:  # "540B": a model's size
                continue
            checked += 1
            other_unit += shown != unit
            scale = float(units.scale(shown))
            if not any(_agrees(m.group(1), m.group(2), v / scale)
                       for v in by_dimension[units.dimension_expr(shown)]):
                wrong.append(f"{r.claim.id}: {m.group(0)!r}")
    assert not wrong, f"note figures that are no derived or printed value: {wrong}"
    assert checked >= 80 and other_unit >= 10


def test_a_qualitative_claim_is_a_condition_never_a_printed_1(md, seed_outcome):
    qualitative = [r for r in seed_outcome.results if r.claim.unit in ("-", "ratio")
                   and r.claimed == 1 and next(iter(r.claim.rounding)) in
                   ("less_than", "at_most", "greater_than", "at_least")]
    assert len(qualitative) >= 8
    for r in qualitative:
        block = claim_block(md, r.claim.id)
        assert "printed 1 " not in block, r.claim.id
        verdict = "holds" if r.status == "match" else "fails"
        m = re.search(r"the condition \$([0-9.]+) (<|>|\\le|\\ge) 1\$ \*\*(holds|fails)\*\*", block)
        assert m and m.group(3) == verdict, r.claim.id
        value = float(m.group(1))   # the derived side, and the relation as the claim states it
        assert math.isclose(value, float(r.derived), rel_tol=1e-5), r.claim.id
        assert {"<": value < 1, ">": value > 1, r"\le": value <= 1, r"\ge": value >= 1}[
            m.group(2)] == (r.status == "match"), r.claim.id

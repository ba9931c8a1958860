"""Verdicts a careful editor would sign (issue 21 §1): the document's own assumptions
decide, the engine's richer figure is a second line; feasibility findings; one rounding
rule with the document's own intermediate rounding propagated; internal inconsistencies;
notes filled from derived values; bad assumptions named by file, line and field.

Each rule on a small claim file, then on the seeds, with every status change the rules
made asserted by claim id."""

from __future__ import annotations

from pathlib import Path

import pytest
import sympy as sp

from symroof.verify import parse_claims, run_claims
from symroof.verify.compare import COMPARISONS, ROUNDING_RULE, comparison, status
from symroof.verify.run import STATUSES, WITH_COMMUNICATION, Outcome


HEAD = '''title = "t"

[[document]]
id = "d"
file = "d.txt"
title = "D"
'''

TP8 = ('{roofline = {workload = {builder = "decode", model = "llama-3-70b", args = ["B", "S"], '
       'kwargs = {tp = 8}}, hardware = "h100-sxm", precision = "fp16"}, q = "time_s"}')


def claim(cid: str, body: str) -> str:
    return (f'\n[[claim]]\nid = "{cid}"\ndocument = "d"\nsection = "s"\nquote = "q"\n'
            f'quantity = "x"\n{body.strip()}\n')


def run(*claims: str) -> dict[str, object]:
    out = run_claims(parse_claims(HEAD + "".join(claims), "t.toml"))
    return {r.claim.id: r for r in out.results}


# -- the document's own assumptions decide ------------------------------------------------

def _step_times() -> tuple[sp.Expr, sp.Expr]:
    rs = run(claim("plain", f'unit = "ms"\nkind = "exercise"\nsubs = {{B = 512, S = 4096}}\n'
                            f'value = {TP8}'),
             claim("ignoring", f'unit = "ms"\nkind = "exercise"\nsubs = {{B = 512, S = 4096}}\n'
                               f'assumptions = ["ignores communication"]\nvalue = {TP8}'))
    return rs["plain"].derived, rs["ignoring"].derived  # type: ignore[attr-defined]


def test_stated_assumption_decides_and_engine_figure_is_second_line() -> None:
    with_comm, without = _step_times()
    assert without < with_comm  # the all-reduces are dropped under the assumption
    printed = round(float(without) * 1e3, 2)
    r = run(claim("c", f'unit = "ms"\nclaimed = {printed}\nrounding = {{sig = 4}}\n'
                       f'subs = {{B = 512, S = 4096}}\n'
                       f'assumptions = ["ignores communication", "FP16"]\nvalue = {TP8}'))["c"]
    assert r.status == "match"  # type: ignore[attr-defined]
    assert r.assumptions == ("ignores communication", "FP16")  # type: ignore[attr-defined]
    (alt,) = r.alternatives  # type: ignore[attr-defined]
    assert alt.label == WITH_COMMUNICATION and alt.derived == with_comm
    assert alt.status == "mismatch"  # shown, never deciding


def test_assumption_the_recipe_cannot_honour_is_an_error_naming_the_field() -> None:
    text = HEAD + claim("bad", 'unit = "FLOP/B"\nclaimed = 2731\nrounding = {sig = 4}\n'
                               'assumptions = ["ignores latency"]\n'
                               'value = {workload = {builder = "gemm", args = [8192, 8192, 8192]}, '
                               'q = "I"}\nsubs = {b = 2}') \
        + claim("no-roofline", 'unit = "FLOP/B"\nclaimed = 2731\nrounding = {sig = 4}\n'
                               'assumptions = ["ignores communication"]\n'
                               'value = {workload = {builder = "gemm", args = [8192, 8192, 8192]}, '
                               'q = "I"}\nsubs = {b = 2}') \
        + claim("fp8", f'unit = "ms"\nkind = "exercise"\nsubs = {{B = 1, S = 4096}}\n'
                       f'assumptions = ["FP8"]\nvalue = {TP8}') \
        + claim("fine", 'unit = "FLOP/B"\nclaimed = 2731\nrounding = {sig = 4}\n'
                        'value = {workload = {builder = "gemm", args = [8192, 8192, 8192]}, '
                        'q = "I"}\nsubs = {b = 2}')
    rs = {r.claim.id: r for r in run_claims(parse_claims(text, "t.toml")).results}
    lines = text.splitlines()
    for cid, why in (("bad", "'ignores latency'"), ("no-roofline", "no roofline node"),
                     ("fp8", "precision 'fp16'")):
        r = rs[cid]
        assert r.status == "error"
        line = next(i + 1 for i, t in enumerate(lines) if t.startswith("assumptions")
                    and i > lines.index(f'id = "{cid}"'))
        assert r.message.startswith(f"t.toml:{line}: claim {cid!r} field 'assumptions'"), r.message
        assert why in r.message and "cannot honour" in r.message
    assert rs["fine"].status == "match"  # the other claims still run


# -- feasibility is a finding -------------------------------------------------------------

def test_a_row_that_does_not_fit_says_so() -> None:
    fits = ('[claim.fits]\nwhat = "the KV cache"\ncapacity = {hardware = "h100-sxm", q = "capacity"}\n'
            'need = {memory = {model = "llama-3-70b", batch = BATCH, context = 4096}, q = "kv_cache"}\n')
    body = ('unit = "FLOP/B"\nclaimed = 2731\nrounding = {sig = 4}\n'
            'value = {workload = {builder = "gemm", args = [8192, 8192, 8192]}, q = "I"}\n'
            'subs = {b = 2}\n')
    rs = run(claim("small", body + fits.replace("BATCH", "1")),
             claim("large", body + fits.replace("BATCH", "512")))
    assert rs["small"].findings[0].startswith("fits: the KV cache needs")  # type: ignore[attr-defined]
    (finding,) = rs["large"].findings  # type: ignore[attr-defined]
    assert finding.startswith("does not run as stated: the KV cache needs") and "80 GB" in finding
    assert rs["large"].status == "match"  # a finding beside the row, not a verdict


# -- one rounding rule --------------------------------------------------------------------

def test_rounding_rule_and_comparisons() -> None:
    assert "significant figures" in ROUNDING_RULE and "propagated" in ROUNDING_RULE
    assert [comparison({k: v}) for k, v in (("exact", True), ("sig", 2), ("decimals", 1),
                                              ("rel", 0.1), ("orders", 1), ("at_most", True),
                                              ("less_than", True), ("at_least", True))] == \
        ["equal", "equal", "equal", "within", "within", "at most", "at most", "at least"]
    assert set(COMPARISONS) == {"equal", "within", "at most", "at least"}
    assert "inconsistent" in STATUSES


def test_rounding_the_document_did_is_propagated() -> None:
    base = claim("total", 'unit = "GB"\nclaimed = 140\nrounding = {sig = 2}\n'
                          'value = "141107412992"')
    part = ('unit = "GB"\nclaimed = 17.5\nrounding = {sig = 3}\n'
            'value = "141107412992/8"\n')
    rs = run(base, claim("carried", part + 'propagated = ["total"]'), claim("bare", part))
    assert rs["total"].status == "match"  # type: ignore[attr-defined]
    assert rs["bare"].status == "mismatch"  # type: ignore[attr-defined]
    assert rs["carried"].status == "match"  # type: ignore[attr-defined]
    assert "propagated rounding of total" in rs["carried"].tolerance  # type: ignore[attr-defined]
    assert rs["carried"].comparison == "equal"  # type: ignore[attr-defined]
    # a figure far from any rounding stays a mismatch however its inputs were rounded
    rs = run(base, claim("far", 'unit = "GB"\nclaimed = 19\nrounding = {sig = 2}\n'
                                'value = "141107412992/8"\npropagated = ["total"]'))
    assert rs["far"].status == "mismatch"  # type: ignore[attr-defined]
    assert status(sp.Integer(100), sp.Integer(103), {"sig": 3}, extra=sp.Integer(3)) == "match"


def test_propagated_from_an_unknown_claim_is_an_error() -> None:
    r = run(claim("x", 'unit = "GB"\nclaimed = 17.5\nrounding = {sig = 3}\n'
                       'value = "141107412992/8"\npropagated = ["nowhere"]'))["x"]
    assert r.status == "error" and "field 'propagated'" in r.message  # type: ignore[attr-defined]


def test_a_faithful_quotation_is_cited_with_the_source_inconsistency_noted() -> None:
    rs = run(claim("q", 'unit = "FLOP/B"\nclaimed = 2500\nrounding = {sig = 2}\n'
                        'status = "cited"\nsource = "a paper"\n'
                        'value = {workload = {builder = "gemm", args = [8192, 8192, 8192]}, '
                        'q = "I"}\nsubs = {b = 2}'))
    r = rs["q"]
    assert r.status == "cited" and r.derived == sp.Rational(8192, 3)  # type: ignore[attr-defined]
    assert r.findings[-1].startswith("the source's own inputs give 2731 FLOP/B, not the 2500")  # type: ignore[attr-defined]


def test_a_bound_is_checked_against_the_bound() -> None:
    rs = run(claim("below", 'unit = "FLOP/B"\nclaimed = 3000\nrounding = {at_most = true}\n'
                            'value = {workload = {builder = "gemm", args = [8192, 8192, 8192]}, '
                            'q = "I"}\nsubs = {b = 2}'))
    assert rs["below"].status == "match" and rs["below"].comparison == "at most"  # type: ignore[attr-defined]


# -- internal inconsistencies -------------------------------------------------------------

def test_one_quantity_printed_with_two_values_is_inconsistent() -> None:
    body = ('unit = "FLOP/B"\nclaimed = 2731\nrounding = {sig = 4}\n'
            'value = {workload = {builder = "gemm", args = [8192, 8192, 8192]}, q = "I"}\n'
            'subs = {b = 2}\n')
    rs = run(claim("two", body + 'places = [{section = "later", quote = "about 2,700", '
                                 'claimed = 2700, convention = "rounded"}]'),
             claim("same", body + 'places = [{quote = "2,731 again", claimed = 2731, '
                                  'convention = "the same"}]'))
    r = rs["two"]
    assert r.status == "inconsistent"  # type: ignore[attr-defined]
    first, second = r.findings  # type: ignore[attr-defined]
    assert '"q" prints 2731 FLOP/B (match with the derived 2731)' in first
    assert second == 'later: "about 2,700" prints 2700 FLOP/B (rounded)'
    assert rs["same"].status == "match"  # type: ignore[attr-defined]


# -- notes are filled from the derived values ----------------------------------------------

def test_note_placeholders_are_filled_and_checked() -> None:
    body = ('unit = "FLOP/B"\nclaimed = 2731\nrounding = {sig = 4}\n'
            'value = {workload = {builder = "gemm", args = [8192, 8192, 8192]}, q = "I"}\n'
            'subs = {b = 2}\n')
    rs = run(claim("ok", body + 'note = "8192/3 = {derived:.6g}, printed {claimed:g}"'),
             claim("bad", body + 'note = "{nothing}"'))
    assert rs["ok"].claim.note == "8192/3 = 2730.67, printed 2731"  # type: ignore[attr-defined]
    r = rs["bad"]
    assert r.status == "error" and "field 'note'" in r.message  # type: ignore[attr-defined]
    assert "{nothing}" in r.message  # type: ignore[attr-defined]


# -- the seeds -----------------------------------------------------------------------------



#: Every claim whose status the rules of §1 changed, with the reason.
CHANGED = {
    # propagated rounding: the document computed these from its own accepted, rounded figures
    "s001-s7-weights-17.5": ("mismatch", "match"),   # 140 GB (2 figures) / 8
    "s001-we-flops": ("mismatch", "match"),          # 32 x 17.1e9 (3 figures)
    # faithful quotations of Williams et al., the source's own inconsistency noted
    "s000-opteron-x2-ridge": ("mismatch", "cited"),
    "s000-opteron-x4-ridge": ("mismatch", "cited"),
    # checked against the bound the source states (bandwidth > 170 GB/s: ridge <= 270.6)
    "s000-dp-tpu-gddr5-250": ("mismatch", "match"),
    # internal inconsistencies
    "s000-prefill-attention-114": ("match", "inconsistent"),  # 114 / 1,024 / 31
    "s000-expert-6.4b": ("match", "inconsistent"),            # 6.4B / 6.7B for one shape
}


def test_seed_status_changes_are_exactly_the_listed_ones(seed_outcome: Outcome) -> None:
    by_id = {r.claim.id: r for r in seed_outcome.results}
    for cid, (_, after) in CHANGED.items():
        assert by_id[cid].status == after, (cid, by_id[cid].status)
    assert seed_outcome.counts == {"match": 181, "cited": 24, "mismatch": 32, "inconsistent": 2,
                              "derived": 59}
    assert not any(r.status == "error" for r in seed_outcome.results)


def test_seed_tp8_table_decides_without_communication(seed_outcome: Outcome) -> None:
    rows = [r for r in seed_outcome.results if r.claim.table is not None
            and r.claim.table["id"] == "s001-s7-tp8" and r.claim.value is not None
            and "roofline" in str(r.claim.value)]
    assert len(rows) == 15
    for r in rows:
        assert r.assumptions == ("ignores communication", "FP16")
        alt = r.alternatives[0]
        assert alt.label == WITH_COMMUNICATION and alt.derived is not None
        if r.claim.quantity.startswith("decode step time"):
            assert r.derived < alt.derived  # the all-reduces only on the second line
    b1 = next(r for r in rows if r.claim.id == "s001-s7-b1-t")
    assert b1.status == "match" and abs(float(b1.derived_in_unit) - 5.2376) < 1e-3


def test_seed_b512_row_does_not_fit(seed_outcome: Outcome) -> None:
    by_id = {r.claim.id: r for r in seed_outcome.results}
    (finding,) = by_id["s001-s7-b512-t"].findings
    assert finding.startswith("does not run as stated") and "103.5 GB" in finding
    for b in (1, 8, 32, 128):
        assert by_id[f"s001-s7-b{b}-t"].findings[0].startswith("fits:")


def test_seed_inconsistencies_list_every_place(seed_outcome: Outcome) -> None:
    by_id = {r.claim.id: r for r in seed_outcome.results}
    attention = by_id["s000-prefill-attention-114"].findings
    assert [f.split(" prints ")[1].split()[0] for f in attention] == ["114", "1024", "31"]
    params = by_id["s000-expert-6.4b"].findings
    assert [f.split(" prints ")[1].split()[0] for f in params] == ["6.4e+09", "6.7e+09"]


def test_seed_notes_hold_no_unfilled_placeholder_and_agree_with_the_second_line(seed_outcome: Outcome) -> None:
    for r in seed_outcome.results:
        assert "{" not in r.claim.note or "$" in r.claim.note or "{," in r.claim.note, r.claim.id
        for alt in r.alternatives:
            if alt.label == WITH_COMMUNICATION and r.claim.note:
                assert "all-reduces" in r.claim.note, r.claim.id

"""Claims that read a preset model shown in the model's names (issue 21): the formula, the
roofline's F and Q and the derivation table derived again with the preset's twin
(``symroof.verify.named``), each exactly the folded formula at the model's numbers; a
chip's figures as the seeds' pi and beta and a builder's number arguments as its own
parameters, under the same check; and ASCII limits (``B -> oo``) typeset as math."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from appendix_md import block as claim_block
import sympy as sp

from symroof import hardware
from symroof.models import get
from symroof.present.appendix import _escape, _roofline_names
from symroof.symbols import B, D, K, L, M, N, P, S, V, b, d_ff, n
from symroof.verify import parse_claims, run_claims
from symroof.verify.named import (BETA, H_KV, PI, arguments, chip, named_form, twin,
                                  writes_numbers)





def test_every_named_form_is_exactly_the_folded_formula(seed_outcome):
    named = [r for r in seed_outcome.results if r.named is not None]
    # the claims that read seed-6.4b, llama-3-8b or llama-3-70b (77), and those with a
    # chip's figure or a builder's number argument in a formula shown with a variable (7)
    assert len(named) >= 84
    for r in named:
        n = r.named
        names, values = dict(n.names), dict(n.values)

        def back(e: sp.Expr) -> sp.Expr:
            return e.xreplace(names).xreplace(values)
        if n.formula is not None:
            assert sp.cancel(back(n.formula) - r.formula) == 0, r.claim.id
            # in names: no coefficient of the model's size is left in the shown formula
            assert all(abs(c) < 10**4 for c in n.formula.atoms(sp.Integer)), r.claim.id
        if n.derivation is not None:
            d = r.derivation
            assert [x.label for x in n.derivation.rows] == [x.label for x in d.rows]
            for mine, folded in zip(n.derivation.rows, d.rows):
                assert sp.cancel(back(mine.flops) - folded.flops) == 0, r.claim.id
                assert sp.cancel(back(mine.bytes) - folded.bytes) == 0, r.claim.id
            assert sp.cancel(back(n.derivation.flops) - d.flops) == 0, r.claim.id
            assert sp.cancel(back(n.derivation.bytes) - d.bytes) == 0, r.claim.id
        if n.flops is not None and r.derivation is not None:  # a roofline's F and Q
            assert sp.cancel(back(n.flops) - r.derivation.flops) == 0, r.claim.id
            assert sp.cancel(back(n.bytes) - r.derivation.bytes) == 0, r.claim.id
        elif n.flops is not None:  # shown only as max(F/pi, Q/beta), which it must give
            assert _roofline_names(r)[0], r.claim.id


#: The claims whose shown formula names a chip (pi, beta) or a builder's numbers (M, N)
CHIP_NAMED = {"s000-prefill-compute-bound", "s000-try-fusion-fused-roof",
              "s000-try-fusion-unfused-slope", "s001-s4-4096-compute-bound",
              "s001-we-memory-bound"}
ARGS_NAMED = {f"s000-try-shrink-dimension-k{k}" for k in (16, 128, 1024, 8192)}


def test_chips_and_number_arguments_are_named_exactly(seed_outcome):
    chips, args = set(), set()
    for r in seed_outcome.results:
        n = r.named
        values = dict(n.values) if n is not None else {}
        if values.keys() & {PI, BETA}:
            chips.add(r.claim.id)
        if values.keys() & {M, N}:
            args.add(r.claim.id)
        if not values.keys() & {PI, BETA, M, N}:
            continue
        assert n.formula is not None and not n.formula.atoms(sp.Float), r.claim.id
        back = n.formula.xreplace(dict(n.names)).xreplace(values)
        assert sp.cancel(back - r.formula) == 0, r.claim.id
        # the verdict's own number, from the named form at the claim's values
        assert sp.cancel(back.xreplace(dict(r.subs)) - r.derived) == 0, r.claim.id
        # no folded chip figure is left: pi and beta stand for all of it
        assert all(abs(c) < 100 for c in n.formula.atoms(sp.Rational) for c in (c.p, c.q))
    assert chips == CHIP_NAMED and args == ARGS_NAMED


def test_a_ridge_in_a_let_formula_reads_pi_over_beta(by_id, md):
    # seed 000: I* = pi/beta; fused attention's intensity S/(2b) (counted by hand: 2 S^2 D
    # FLOPs over 4 S D b bytes) over the H100 SXM's bf16 ridge
    n = by_id["s000-try-fusion-fused-roof"].named
    assert sp.cancel(n.formula - S * BETA / (2 * b * PI)) == 0
    h100 = hardware.get("h100-sxm")
    assert dict(n.values) == {PI: h100.peak("bf16"), BETA: h100.bandwidth()}
    block = claim_block(md, "s000-try-fusion-fused-roof")
    assert "\\frac{S \\beta}{2 b \\pi}" in block and "39576" not in block
    assert "\\pi = 989.4 \\times 10^{12}\\ \\mathrm{FLOP/s}" in block
    assert "\\beta = 3.35 \\times 10^{12}\\ \\mathrm{B/s}" in block


def test_number_arguments_read_as_the_builders_parameters(by_id, md):
    # C[M,N] = A[M,K] B[K,N] counted by hand: 2 M N K FLOPs, b (M K + K N + M N) bytes
    n = by_id["s000-try-shrink-dimension-k16"].named
    assert sp.cancel(n.formula - 2 * M * N * K / (b * (M * K + K * N + M * N))) == 0
    assert dict(n.values) == {M: 8192, N: 8192}
    assert [(r.flops, r.bytes) for r in n.derivation.rows] == [
        (2 * M * N * K, b * M * K + b * N * K + b * M * N)]
    block = claim_block(md, "s000-try-shrink-dimension-k16")
    assert "With $M = 8192, N = 8192, K = 16, b = 2$" in block and "134217728" not in block


def test_chip_names_only_what_is_exactly_peak_over_bandwidth():
    h = hardware.get("h100-sxm")
    peak, bw = h.peak("bf16"), h.bandwidth()
    assert chip("ridge", peak, bw, h.ridge("bf16")) == (PI / BETA, {PI: peak, BETA: bw})
    assert chip("peak", peak, bw, peak) == (PI, {PI: peak})
    assert chip("bandwidth", peak, bw, bw) == (BETA, {BETA: bw})
    assert chip("ridge", peak, bw, h.ridge("fp8")) is None  # not this peak's ridge
    assert chip("capacity", peak, bw, h.capacity()) is None


def test_arguments_name_numbers_the_builder_has_a_parameter_for():
    assert arguments((M, N, K), [sp.Integer(8192), sp.Integer(8192), K]) == (
        [M, N, K], {M: 8192, N: 8192})
    # 0 and 1 stay (a GEMV), as does a parameter another argument already uses
    assert arguments((M, N, K), [K, sp.Integer(1), sp.Integer(64)]) == (
        [K, sp.Integer(1), sp.Integer(64)], {})
    R, S_f = sp.symbols("R S_f", positive=True, integer=True)
    assert arguments((n, (R, S_f)), [sp.Integer(8), (sp.Integer(3), sp.Integer(3))]) == (
        [n, (R, S_f)], {n: 8, R: 3, S_f: 3})


def test_only_a_chip_node_or_a_builders_number_asks_for_number_names():
    ridge = {"hardware": "h100-sxm", "q": "ridge"}
    assert writes_numbers({"let": {"r": ridge}, "expr": "1/r"})
    assert not writes_numbers({"hardware": "h100-sxm", "q": "capacity"})
    # a roofline's chip is shown as max(F/pi, Q/beta) already; a GEMV's 1 is no size
    assert not writes_numbers({"roofline": {"workload": {"builder": "gemm", "args": [
        "M", 1, "K"]}, "hardware": "h100-sxm"}, "q": "time_s"})


_FILE = """[[document]]
id = "d"
file = "d.md"
title = "D"

[[claim]]
id = "gemm-over-ridge"
document = "d"
section = "S"
quote = "q"
quantity = "x"
unit = "ratio"
claimed = 1
rounding = {greater_than = true}
subs = {K = 4096, b = 2}
value = {let.I = {workload = {builder = "gemm", args = [4096, 4096, "K"]}, q = "I"}, let.r = {hardware = "h100-sxm", q = "ridge"}, expr = "I/r"}

[[claim]]
id = "m-is-the-claims-own"
document = "d"
section = "S"
quote = "q"
quantity = "x"
unit = "ratio"
claimed = 1
rounding = {greater_than = true}
subs = {K = 64, M = 8, b = 2}
value = {let.a = {workload = {builder = "gemm", args = ["M", 64, "K"]}, q = "F"}, let.c = {workload = {builder = "gemm", args = [4096, 4096, "K"]}, q = "F"}, expr = "c/a"}

[[claim]]
id = "declares-p"
document = "d"
section = "S"
quote = "q"
quantity = "x"
unit = "ratio"
claimed = 1
rounding = {greater_than = true}
subs = {P = "12*L*D**2", K = 4096, b = 2}
value = {let.I = {workload = {builder = "gemm", args = [4096, 4096, "K"]}, q = "I"}, let.r = {hardware = "h100-sxm", q = "ridge"}, expr = "I/r"}
"""


def test_a_claim_file_gets_names_for_its_numbers_only_where_they_are_new():
    out = {r.claim.id: r for r in run_claims(parse_claims(_FILE, "t.toml")).results}
    r = out["gemm-over-ridge"]
    assert sp.cancel(r.named.formula - 2 * M * N * K * BETA /
                     (b * PI * (M * K + K * N + M * N))) == 0
    assert dict(r.named.values)[M] == 4096 and r.status == "match"
    # M is the claim's own symbol here: the 4096 keeps its number (no named form at all)
    own = out["m-is-the-claims-own"]
    assert own.named is None and own.derived == sp.Integer(4096 * 4096) / (8 * 64)
    # a declared name the formula does not use stays an error naming file, line and field
    # (the names a named form gives the numbers are not the recipe's)
    bad = out["declares-p"]
    assert bad.status == "error" and bad.message.startswith(
        "t.toml:39: claim 'declares-p' field 'subs'.P: the recipe does not use P")


def test_decode_of_the_seed_model_reads_2P_plus_4LSD(by_id, md):
    # hand count (seed 000): F = B (2P + 4 L S D), Q = b (P + 2 B L S D), P = 12 L D^2
    n = by_id["s000-uh4-b1-flops"].named
    assert dict(n.names) == {P: 12 * L * D**2}
    assert sp.expand(n.formula - (2 * P * B + 4 * B * L * S * D)) == 0
    assert dict(n.values) == {L: 32, D: 4096}
    q = by_id["s000-uh4-b1-bytes"].named
    assert sp.expand(q.formula - (P * b + 2 * B * L * S * D * b)) == 0
    block = claim_block(md, "s000-uh4-b1-flops")
    assert "$$\n2 P B + 4 B S L D\n$$" in block and "12884901888" not in block
    assert "With $P = 12 L D^{2},\\ L = 32, D = 4096, B = 1, S = 1024$" in block


def test_llama_preset_is_shown_in_its_shape(by_id, md):
    # Llama-3-8B decode FLOPs, counted by hand from its shape (Meta's reference): per
    # token and layer q/o 2 D^2, k/v 2 D^2 H_kv/H, gated MLP 3 D d_ff, lm_head D V, the
    # attention products 2 S D; two FLOPs a multiply-add
    r = by_id["s001-ex-b1-flops-s1024"]
    hand = 2 * B * (L * (2 * D**2 + 2 * D**2 * H_KV / 32 + 3 * D * d_ff + 2 * S * D) + D * V)
    values = dict(r.named.values)
    assert sp.cancel(r.named.formula.subs({sp.Symbol("H", positive=True, integer=True): 32})
                     .xreplace({k: v for k, v in values.items()}) -
                     hand.xreplace(values)) == 0
    assert values[d_ff] == 14336 and values[V] == 128256 and values[H_KV] == 8
    block = claim_block(md, "s001-ex-b1-flops-s1024")
    assert "15009316864" not in block and "d_{\\mathrm{ff}} = 14336" in block
    assert "G = 8" in block and "H_{" not in block


def test_worked_example_keeps_the_documents_P(by_id):
    # P is the claim file's stated 8e9; the attention term comes from llama-3-8b's shape
    n = by_id["s001-we-flops"].named
    assert sp.expand(n.formula - 2 * B * (P + 2 * S * L * D)) == 0 and n.names == ()
    t = by_id["s001-we-t-step"].named
    assert t.flops is not None and sp.expand(t.flops - 2 * B * (P + 2 * S * L * D)) == 0


def test_twin_keeps_the_relations_the_documents_write():
    m, values = twin(get("seed-6.4b"))
    assert (m.d_ff, m.head_dim, m.kv_heads, m.params) == (4 * D, D / m.heads, m.heads,
                                                         12 * L * D**2)
    m8, values8 = twin(get("llama-3-8b"))
    assert m8.kv_heads == H_KV and values8[H_KV] == 8 and m8.head_dim == D / m8.heads


def test_a_named_form_that_is_not_exact_is_never_shown():
    assert named_form(2 * B, 3 * B * L, {L: 1}, None) is None
    assert named_form(64 * B, 2 * B * L, {L: 32}, None).formula == 2 * B * L


def test_ascii_limits_are_typeset_as_math(md):
    assert "$B \\to \\infty$" in md and "-\\> oo" not in md and "-> oo" not in md
    assert _escape("tex")("ceiling (B -> oo)") == "ceiling ($B \\to \\infty$)"
    assert _escape("md")("M, N -> oo") == "$M, N \\to \\infty$"
    assert _escape("md")("64->64 channels") == "64\\-\\>64 channels"  # not a limit
    assert not re.search(r"-\\textgreater\{\} ?oo", _escape("tex")("n -> oo"))


def test_which_term_dominates_when_is_checked_at_stated_points(by_id):
    # seed 000, 6.4B model (P = 12 L D^2, MHA): weight bytes P b against KV bytes 2 B L S D b,
    # a ratio of 6 D/(B S), counted by hand
    assert by_id["s000-decode-weights-dominate"].derived == sp.Rational(6 * 4096, 1 * 1024)
    assert by_id["s000-decode-kv-dominates"].derived == sp.Rational(512 * 8192, 6 * 4096)
    for cid in ("s000-decode-weights-dominate", "s000-decode-kv-dominates",
                "s001-s5-weights-dominate-below", "s001-s5-kv-dominates-above",
                "s000-linear-as-gemm", "s000-linear-m1-is-gemv", "s000-conv-as-gemm"):
        assert by_id[cid].status == "match", cid
    # Llama-3-70B: the two points sit on either side of one crossover, so the KV share
    # grows by exactly their token-slot ratio (B S: 2,097,152 / 32,768 = 64) only in the
    # KV term; weights are read once a step either way
    below = by_id["s001-s5-weights-dominate-below"].derived
    above = by_id["s001-s5-kv-dominates-above"].derived
    assert below > 1 and above > 1
    assert abs(float(above * below) / 64 - 1) < 0.01  # the embedding gather grows with B


def test_out_of_scope_quotes_are_verbatim(seed_outcome):
    seeds = Path(__file__).resolve().parents[2].parent / "shared" / "seeds"
    texts = {p.name[:3]: p.read_text(encoding="utf-8") for p in seeds.glob("*.txt")} \
        if seeds.is_dir() else {}
    if not texts:
        pytest.skip("the seed texts are not beside this checkout")
    for o in seed_outcome.source.out_of_scope:
        for piece in o.quote.split("..."):
            assert piece.strip() in texts[o.document], (o.document, piece)


def test_a_quoted_fragment_of_math_prints_as_math_in_latex():
    # a quote cut out of the seed's $...$ keeps lone commands: typeset, never raw TeX
    from symroof.present.appendix import _quote
    shown = _quote("$I = (13.42 \\times 10^9) / (13.42 \\times 10^9) \\approx 1.0", "tex")
    assert "\\textbackslash" not in shown and "\\$" not in shown
    assert shown.count("$\\times$") == 2 and "$\\approx$" in shown

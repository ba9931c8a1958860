"""Issue 17's findings, one test each: every input ends in a clean result or a one-line
error within the budget; no hang, no traceback, no wrong number with exit status 0.

Each test reproduces an input from the issue (about 680 crafted inputs found 13 hangs, 7
tracebacks, 3 memory exhaustions and about 40 wrong answers). Before the fix each of
them hung, crashed or printed nonsense; the CLI ones run in-process through
``symroof.cli.main``, and a refusal must come before the work it refuses: while it runs,
the solvers, the evaluation of rows and the reading of files are traps that fail the test
(no test here reads the clock; the seconds limit is checked with a fake ``budget.clock``).
"""

from __future__ import annotations

import json
import math
import os
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest
from cli_run import run_error, run_json
import sympy as sp

import symroof as sr
import symroof.cli.derive
import symroof.solve
from symroof import budget, compiled, files, hardware, models
from symroof.budget import BudgetError
from symroof.cli import main
from symroof.errors import SymroofError
from symroof.parse import parse_expr
from symroof.present.formula import latex, text
from symroof.present.numbers import json_number, text_number
from symroof.symbols import B, D, H, K, L, M, N, S, b, dim, n



class WorkStarted(BaseException):
    """Raised by a trap: work that a refusal must come before has started (a
    BaseException, so that no error handling on the way can turn it into an exit status)."""


def _trap(what: str):
    def trap(*args, **kwargs):
        raise WorkStarted(f"{what} ran before the refusal")
    return trap


#: The work a refusal comes before, as (module, attribute, what it is): every solver step
#: of symroof.solve runs through its guarded(); derive and eval check each row with
#: workload_values and evaluate rows with points (or compiled.points); files.read_bytes
#: opens a file only after its checks (stat, regular file, size).
SOLVING = [(symroof.solve, "guarded", "a solver step")]
CHECKING_ROWS = [(symroof.cli.derive, "workload_values", "a row's check")]
EVALUATING = [(symroof.cli.derive, "points", "a row's evaluation"),
              (compiled, "points", "the compiled rows' evaluation")]
READING = [(files, "open", "opening a file")]
WORK = SOLVING + CHECKING_ROWS + EVALUATING + READING


@contextmanager
def trapped(work=WORK):
    """Within the block, each of ``work`` fails the test if it is called."""
    with pytest.MonkeyPatch.context() as mp:
        for module, name, what in work:
            # raising=False: files has no global open to replace, and a name that a
            # refactoring drops (derive's workload_values) leaves its trap unused, not an error
            mp.setattr(module, name, _trap(what), raising=False)
        yield


def refused(capsys, *argv: str, before=WORK) -> str:
    """The one error line of a CLI call that must be refused before any of ``before``."""
    with trapped(before):
        return run_error(capsys, *argv)


def values(first: int, last: int) -> str:
    return ",".join(str(i) for i in range(first, last + 1))


# ---------------------------------------------------------------------------
# unbounded row count (hung; six 999-value lists ended in a MemoryError traceback)


def test_row_count_is_checked_before_any_row_is_built(capsys):
    line = refused(capsys, "derive", "gemm", "--set", f"M={values(1, 399)}",
                   "--set", f"N={values(1, 399)}")
    assert "159,201 rows (M 399 x N 399)" in line and "limit of 10,000 rows" in line
    assert "--budget rows=N" in line
    # five lists (each argument under 2,000 characters): 1.25e11 rows
    many = [f"{name}={values(1, 500)}" for name in "BSDL"] + ["b=1,2"]
    line = refused(capsys, "derive", "training", *(x for v in many for x in ("--set", v)))
    assert "125,000,000,000 rows (B 500 x S 500 x D 500 x L 500 x b 2)" in line


def test_rows_within_a_changed_budget(capsys):
    argv = ["derive", "gemm", "--set", f"M={values(1, 3)}", "--set", f"N={values(1, 4)}",
            "--set", "K=2", "--set", "b=2"]
    assert "12 rows (M 3 x N 4 x K 1 x b 1), more than the limit of 11 rows" in refused(
        capsys, *argv, "--budget", "rows=11")
    doc = run_json(capsys, "--budget", "rows=12", *argv)   # before the command, too
    assert len(doc["rows"]) == 12
    last = doc["rows"][-1]
    assert last["subs"] == {"M": 3, "N": 4, "K": 2, "b": 2}
    assert last["flops"] == 2 * 3 * 4 * 2 and last["bytes"] == 2 * (6 + 8 + 12)


def test_rows_stream_lazily():
    from symroof.cli.common import rows
    made = rows({M: tuple(range(1, 101)), N: tuple(range(1, 101))})
    assert next(made) == {M: 1, N: 1}          # a generator: nothing else built yet
    with budget.limits(rows=99), pytest.raises(BudgetError, match="10,000 rows"):
        rows({M: tuple(range(1, 101)), N: tuple(range(1, 101))})


# ---------------------------------------------------------------------------
# unbounded algebra from small inputs (ran for minutes; one took 573 MB)


@pytest.mark.parametrize("argv, fragment", [
    (["solve", "limit", "decode", "--var", "B", "--of", "I**64"], "degree 64 in B"),
    (["solve", "limit", "decode", "--var", "B", "--of", "(F+Q)**64"], "degree 64 in B"),
    (["solve", "crossover", "decode", "--var", "B", "--lhs", "(F+1)**64", "--rhs", "Q"],
     "degree 64 in B"),
    (["solve", "crossover", "decode", "--var", "S", "--lhs",
      "*".join(f"(S+{i})" for i in range(1, 200)), "--rhs", "Q"], "degree 199 in S"),
    (["derive", "decode", "--set", "S=(B+D+L+H+1)**64"], "--set S: degree 64 in B"),
])
def test_degree_limit_is_named(capsys, argv, fragment):
    line = refused(capsys, *argv)
    assert fragment in line and "limit of 16" in line and "--budget degree=N" in line


@pytest.mark.parametrize("lhs, rhs, var, degree", [
    ("F**4", "Q**2+F", "B", 4), ("F**3", "Q**2", "B", 3)])
def test_symbolic_cubic_and_quartic_crossovers_are_refused(capsys, lhs, rhs, var, degree):
    """Cardano's and Ferrari's radicals with symbolic coefficients printed pages of
    formulas holding the imaginary unit (and a condition on them) with exit 0. The solver
    refuses them itself, once the cancelled polynomial's degree is known."""
    line = refused(capsys, "solve", "crossover", "decode", "--var", var, "--lhs", lhs,
                   "--rhs", rhs, before=CHECKING_ROWS + EVALUATING + READING)
    assert f"degree-{degree} polynomial in {var}" in line and "--set" in line


def test_numeric_cubic_crossover_gives_exact_real_roots():
    roots = sr.crossover(S**3, 6 * S**2 - 11 * S + 6, S)
    assert [r.value for r in roots] == [1, 2, 3]
    # x^3 = 2 has one real root, 2**(1/3), as an exact number
    (c,) = sr.crossover(S**3, 2, S)
    assert sp.cancel(c.value**3 - 2) == 0 and abs(float(c.value) - 2 ** (1 / 3)) < 1e-12


def test_numeric_quartic_crossover_from_the_cli(capsys):
    # F_attention*S**3 = Q**2 for the seeds' decode at D=4096, L=32, b=2, B=1
    doc = run_json(capsys, "solve", "crossover", "decode", "--var", "S", "--lhs",
                   "F_attention*S**3", "--rhs", "Q**2", "--set", "D=4096", "--set", "L=32",
                   "--set", "b=2", "--set", "B=1")
    (sol,) = doc["solutions"]
    dec = sr.workloads.decode(models.transformer(layers=L, d_model=D, heads=H), B, S)
    at = {D: 4096, L: 32, b: 2, B: 1}
    f_att, q = dec.flops_by_operand["activation"].xreplace(at), dec.bytes.xreplace(at)
    g = sp.lambdify(S, f_att * S**3 - q**2)
    root = sol["number"]
    assert abs(g(root)) < 1e-9 * abs(g(2 * root))   # a sign change brackets the root
    assert g(root * (1 - 1e-9)) * g(root * (1 + 1e-9)) < 0


@pytest.mark.parametrize("text_in, fragment", [
    ("exp(exp(exp(64)))", "exponent 'exp(64)'"),
    ("exp(exp(exp(exp(64))))", "exponent 'exp(64)'"),
    ("9**9**9**9", "exponent '387420489'"),
    ("B**exp(64)", "exponent 'exp(64)'"),
    ("exp(4)**exp(4)", "exponent '4*exp(4)'"),
])
def test_parser_refuses_towers_naming_the_limit(text_in, fragment):
    with pytest.raises(SymroofError) as info:
        parse_expr(text_in)
    assert fragment in str(info.value) and "<= 64, the parser's exponent limit" in str(info.value)


def test_tower_on_the_command_line(capsys):
    line = refused(capsys, "derive", "gemm", "--set", "b=exp(exp(exp(64)))")
    assert "exponent limit" in line


def test_exponent_of_a_substituted_value_is_bounded():
    """2**B at B = 10**6 would build a 301,030-digit integer: refused before it is."""
    with pytest.raises(BudgetError, match="about 301,030 digits"):
        sr.evaluate(2**B, {B: 10**6})
    assert sr.evaluate(2**B, {B: 64}) == 2**64


def test_wall_clock_guard_stops_a_slow_solver_and_names_the_step(monkeypatch):
    """A solve that would run for minutes (cancelling a 74,613-term expansion) is stopped
    at the seconds limit in its forked child, and the error names the step it was in.
    The deadline comes from a fake budget.clock: it stands still until the child has
    named its step, then jumps past the limit (the computation never ends on its own
    first), so nothing here depends on the machine's speed."""
    readings = iter([0.0, 0.0])
    monkeypatch.setattr(budget, "clock", lambda: next(readings, 1e9))
    slow = (B + D + L + H + S + b + 2) ** 16 - (2 * B * D * L * S * b + 12 * D**2 * L * b) ** 8
    with budget.limits(seconds=30), pytest.raises(BudgetError) as info:
        sr.crossover(slow, 0, S)
    msg = str(info.value)
    assert msg.startswith("crossover ") and "still running after 30 s" in msg
    assert "while cancelling to one fraction" in msg and "--budget seconds=N" in msg
    assert info.value.limit == "seconds"


def test_memory_guard_stops_a_solver_that_grows():
    with budget.limits(memory_mib=64), pytest.raises(BudgetError) as info:
        budget.guarded("a big list", lambda: len([0] * 10**8))
    assert "needed more than 64 MiB" in str(info.value) and info.value.limit == "memory_mib"


# ---------------------------------------------------------------------------
# unchecked files: a link to /dev/zero grew to 1.9 GB, /dev/urandom or a FIFO blocked


@pytest.mark.parametrize("target", ["zero", "urandom", "fifo"])
def test_special_files_are_refused_not_read(tmp_path, capsys, target):
    path = tmp_path / f"chip-{target}.toml"
    if target == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to(f"/dev/{target}")
    with trapped(READING), pytest.raises(SymroofError, match="not a regular file"):
        hardware.load(path)     # judged by stat: never opened (a FIFO would block, /dev/zero grow)
    link = tmp_path / f"{target}.json"
    link.symlink_to(path)
    line = refused(capsys, "derive", "decode", "--model", str(link))
    assert "not a regular file" in line


def test_oversized_chip_file_is_refused(tmp_path):
    path = tmp_path / "big.toml"
    path.write_bytes(b"#" * 2048)
    with budget.limits(file_bytes=1024), pytest.raises(SymroofError, match="more than the limit of 1024"):
        hardware.load(path)


def test_chip_file_with_a_byte_order_mark_loads(tmp_path):
    data = (Path(hardware.__file__).parent / "l4.toml").read_bytes()
    path = tmp_path / "l4.toml"
    path.write_bytes(b"\xef\xbb\xbf" + data)
    assert hardware.load(path).ridge("bf16") == hardware.get("l4").ridge("bf16")


# ---------------------------------------------------------------------------
# impossible shapes: F = -100 FLOP, Q = -150 B and a negative time; nan intensity


def test_conv_kernel_larger_than_its_input_is_named(capsys):
    # refused at its row's values (the domain is checked per row), before any solver runs
    line = refused(capsys, "eval", "conv2d", "--hardware", "h100-sxm", "--set", "N=1",
                   "--set", "C=1", "--set", "H=3", "--set", "W=3", "--set", "K=5",
                   "--set", "R=5", "--set", "S_f=5", before=SOLVING + READING)
    assert "H - R + 1 is -1 at H=3, R=5" in line and "positive size" in line
    # the library: the same values through roofline, and a numeric kernel at build time
    R, S_f, W = dim("R"), dim("S_f"), dim("W")
    conv = sr.workloads.conv2d(N, 1, H, W, K, (R, S_f))
    with pytest.raises(SymroofError, match="-S_f \\+ W \\+ 1 is -1 at S_f=5, W=3"):
        sr.roofline(conv, "h100-sxm", subs={N: 1, H: 8, W: 3, K: 5, R: 3, S_f: 5})
    with pytest.raises(SymroofError, match="kernel 5 is larger than the padded input 3"):
        sr.workloads.conv2d(1, 1, 3, 3, 1, 5)


def test_conv_with_valid_symbolic_sizes_still_evaluates(capsys):
    doc = run_json(capsys, "derive", "conv2d", "--set", "N=1", "--set", "C=1", "--set",
                   "H=5", "--set", "W=5", "--set", "K=1", "--set", "R=3", "--set", "S_f=3",
                   "--set", "b=1", "--flop-count", "one_per_mac")
    # 3x3 output, 9 MACs each: 81 MACs
    assert doc["rows"][0]["flops"] == 81


def test_stride_that_leaves_a_fraction_is_refused():
    st = sr.workloads.conv2d(1, 1, H, H, 1, 3, stride=2)
    with pytest.raises(SymroofError, match="expected a positive integer"):
        sr.roofline(st, "h100-sxm", subs={H: 8})   # (8 - 3)/2 + 1 = 7/2
    assert sr.roofline(st, "h100-sxm", subs={H: 9}).flops == 2 * 9 * 16


@pytest.mark.parametrize("bad", [-5, sp.Integer(-1), sp.nan, sp.oo, float("nan"), sp.I])
def test_flops_per_element_must_be_finite_and_non_negative(bad):
    with pytest.raises(SymroofError, match="flops_per_element"):
        sr.workloads.elementwise(n, flops_per_element=bad)


def test_negative_flops_per_element_on_the_command_line(capsys):
    line = refused(capsys, "derive", "elementwise", "--flops-per-element", "-5")
    assert "--flops-per-element" in line and "non-negative integer" in line


@pytest.mark.parametrize("bad", [sp.nan, sp.zoo, sp.oo, float("nan"), float("inf"), sp.I])
def test_non_finite_values_never_reach_a_result(bad):
    gemm = sr.workloads.gemm(M, N, K)
    with pytest.raises(SymroofError, match="value of M"):
        sr.roofline(gemm, "h100-sxm", subs={M: bad, N: 2, K: 2})
    with pytest.raises(SymroofError):
        sr.evaluate(gemm.intensity, {M: bad, N: 2, K: 2, b: 2})


# ---------------------------------------------------------------------------
# invalid output: Infinity in JSON, inf for exact finite values, digit-limit crashes


def test_huge_exact_values_print_in_scientific_notation(capsys):
    doc = run_json(capsys, "eval", "gemm", "--hardware", "h100-sxm", "--set", "M=1e300",
                   "--set", "N=1e300", "--set", "K=1e300")
    row = doc["rows"][0]
    assert row["flops"] == "2.00000000000e+900" and row["bytes"] == "6.00000000000e+600"
    assert row["intensity"] == pytest.approx(1e300 / 3, rel=1e-12)   # within a float's range
    code = main(["derive", "gemm", "--set", "M=1e300", "--set", "N=1e300", "--set", "K=1e300"])
    out = capsys.readouterr().out
    assert code == 0 and "inf" not in out.replace("info", "")
    # values at bf16 (b = 2), derive's default as eval's
    assert "F = 2.0000e+900 FLOP, Q = 6.0000e+600 B, I = 3.3333e+299 FLOP/B" in out


def test_every_json_number_is_finite():
    for value in (sp.Integer(10)**5000, sp.Rational(1, 10**5000), sp.sqrt(2) * 10**400,
                  sp.exp(800), sp.Rational(8192, 3)):
        dumped = json.dumps(json_number(value), allow_nan=False)
        assert "Infinity" not in dumped and "NaN" not in dumped
    for bad in (sp.nan, sp.oo, -sp.oo, sp.zoo, sp.I, float("nan"), float("inf")):
        with pytest.raises(SymroofError, match="not a finite real number"):
            json_number(bad)
        with pytest.raises(SymroofError, match="not a finite real number"):
            text_number(bad)


def test_numbers_past_pythons_digit_limit_print():
    """Python refuses str() of an integer of more than 4,300 digits."""
    huge = sp.Integer(7) ** 6000       # 5,071 digits; 6000*log10(7) = 5070.5882
    assert text_number(huge) == "3.8747e+5070"
    assert text(huge * M) == "3.8747e+5070*M"
    assert latex(huge * M) == r"3.8747 \cdot 10^{5070} M"


def test_results_are_held_to_the_digits_limit():
    with pytest.raises(BudgetError, match="digits"):
        sr.evaluate(M**64, {M: 2**1000})    # 19,266 digits


# ---------------------------------------------------------------------------
# silently ignored input


def test_set_of_a_symbol_the_workload_does_not_use(capsys):
    line = refused(capsys, "derive", "gemm", "--set", "n=8")
    assert "--set n: gemm does not use n (its symbols: K, M, N, b)" in line


def test_solve_variable_the_workload_does_not_use(capsys):
    line = refused(capsys, "solve", "limit", "gemm", "--var", "B")
    assert "--var 'B'" in line and "(K, M, N, b)" in line


def test_solve_variable_substituted_away(capsys):
    line = refused(capsys, "solve", "crossover", "decode", "--var", "B", "--set", "B=5")
    assert "B is substituted away by --set B=5" in line


@pytest.mark.parametrize("argv, fragment", [
    (["derive", "gemm", "--model", "llama-3-8b"], "--model: workload 'gemm' does not use it"),
    (["derive", "gemm", "--flops-per-element", "3"], "--flops-per-element"),
    (["derive", "elementwise", "--flop-count", "exact"], "--flop-count"),
    (["derive", "attention", "--lowering", "implicit"], "--lowering"),
    (["derive", "gemm", "--unfused", "write_and_read"], "--unfused"),
    (["solve", "limit", "decode", "--var", "B", "--rhs", "Q"], "--rhs: only 'solve crossover'"),
    (["solve", "crossover", "decode", "--var", "S", "--of", "I"], "--of: only 'solve limit'"),
    (["solve", "crossover", "decode", "--var", "S", "--to", "0"], "--to"),
    (["derive", "gemm", "--format", "latex", "--json"], "--format latex"),
    (["hardware", "list", "h100-sxm"], "takes no name"),
])
def test_options_that_would_be_ignored_are_errors(capsys, argv, fragment):
    assert fragment in refused(capsys, *argv)


def test_roofline_subs_names_and_look_alikes():
    gemm = sr.workloads.gemm(M, N, K)
    with pytest.raises(SymroofError, match="'n' is not a symbol of 'gemm' \\(its symbols: K, M, N, b\\)"):
        sr.roofline(gemm, "h100-sxm", subs={"n": 8, M: 2, N: 2, K: 2})
    with pytest.raises(SymroofError, match="B is not a symbol of 'gemm'"):
        sr.roofline(gemm, "h100-sxm", subs={B: 8, M: 2, N: 2, K: 2})
    twin = sp.Symbol("M")   # prints as M, but has no assumptions: substitutes nothing
    with pytest.raises(SymroofError, match="M \\(no assumptions\\) is not the M of the "
                                           "expression, which is \\(positive integer\\)"):
        sr.roofline(gemm, "h100-sxm", subs={twin: 8, N: 2, K: 2})
    with pytest.raises(SymroofError, match="look-alike|is not the M"):
        sr.evaluate(gemm.flops, {twin: 8, N: 2, K: 2})
    # the real symbols still work, and one mapping still serves F, Q and I
    r = sr.roofline(gemm, "h100-sxm", subs={M: 8, N: 2, K: 2})
    assert r.flops == 64 and r.bytes == 2 * (16 + 4 + 16)
    assert sr.evaluate(gemm.flops, {M: 8, N: 2, K: 2, b: 2}) == 64


def test_tied_embeddings_takes_a_boolean_only():
    with pytest.raises(SymroofError, match="tied_embeddings"):
        models.transformer(layers=2, d_model=64, heads=4, tied_embeddings="no")


# ---------------------------------------------------------------------------
# wrong exception types


def test_numpy_and_fraction_numbers_are_numbers():
    from fractions import Fraction
    assert sr.workloads.gemm(np.float64(4.0), np.int64(2), 2).flops == 2 * 4 * 2 * 2
    assert sr.workloads.gemm(Fraction(4), 2, 2).flops == 32
    with pytest.raises(SymroofError, match="positive integer"):
        sr.workloads.gemm(np.float64(2.5), 2, 2)
    with pytest.raises(SymroofError, match="finite"):
        sr.workloads.gemm(np.float64("nan"), 2, 2)
    with pytest.raises(SymroofError, match="expected a number"):
        sr.workloads.gemm(np.bool_(True), 2, 2)


def test_deeply_nested_toml_is_a_named_error(tmp_path):
    path = tmp_path / "deep.toml"
    path.write_text("a = " + "[" * 5000 + "]" * 5000, encoding="utf-8")
    with pytest.raises(SymroofError, match="deep.toml: arrays or tables nested too deeply"):
        hardware.load(path)


@pytest.mark.parametrize("bad", [None, 3, ["a.toml"], b"a.toml"])
def test_hardware_load_of_a_non_path(bad):
    with pytest.raises(SymroofError, match="expected a file path"):
        hardware.load(bad)


# ---------------------------------------------------------------------------
# the imaginary unit never prints as I (which reads as intensity)


def test_imaginary_unit_is_not_printed_as_I():
    z = (-1 + sp.I * sp.sqrt(3)) * n / 2
    assert "I" not in text(z) and "sqrt(-1)" in text(z)
    assert r"\mathrm{i}" in latex(z) and "I" not in latex(z).replace(r"\mathrm", "")
    # the text form still means the same number
    assert sp.sqrt(-1) == sp.I


def test_no_crossover_output_carries_a_complex_number(capsys):
    for lhs, rhs in (("S**2 + 1", "0"), ("S**3", "S - 3")):
        doc = run_json(capsys, "solve", "crossover", "decode", "--var", "S", "--lhs", lhs,
                       "--rhs", rhs)
        assert doc["solutions"] == []
    # S^3 - S + 3 has one real root, about -1.6717: never a positive crossover
    (real,) = sp.Poly(S**3 - S + 3, S).real_roots()
    assert math.isclose(float(real), -1.6717, abs_tol=1e-4)


def test_toml_failures_are_named_errors_in_every_reader(tmp_path):
    """Chip files, claim files and annotations share one TOML reader (files.parse_toml):
    bad syntax, nesting past the parser's depth and an integer past Python's digit
    limit are each an error that names the file (and the key), never a traceback."""
    from symroof.verify import parse_claims
    from symroof.verify.annotations import annotated_claims

    deep = "a = " + "[" * 5000 + "]" * 5000
    huge = "claimed = " + "9" * 5000
    with pytest.raises(SymroofError, match=r"^c.toml: arrays or tables nested too deeply$"):
        parse_claims(deep, "c.toml")
    with pytest.raises(SymroofError,
                       match=r"^c.toml: claimed: expected a number, got an integer of 5000 digits$"):
        parse_claims(huge, "c.toml")
    path = tmp_path / "big.toml"
    path.write_text('name = "x"\npeak_flops = ' + "1" * 5000 + "\n", encoding="utf-8")
    with pytest.raises(SymroofError, match=r"big.toml: peak_flops: expected a number, "
                                           r"got an integer of 5000 digits"):
        hardware.load(path)
    # in a document, a bad annotation becomes that claim's error; the others are read
    doc = (f"<!-- symroof {deep} -->\n<!-- symroof {huge} -->\n"
           "<!-- symroof claimed = 1\nvalue = 1 -->\n")
    cf = annotated_claims(doc, "x.md")
    assert [c.error for c in cf.claims[:2]] == [
        "x.md:1: the annotation arrays or tables nested too deeply",
        "x.md:2: the annotation claimed: expected a number, got an integer of 5000 digits"]
    assert cf.claims[2].error is None

"""``symroof solve``: limits and crossovers from the command line, driven in-process.

Formulas printed by the CLI are read back through the safe parser and compared with
the library's own result and with a hand formula from the seeds (``cancel`` of the
difference is 0). Bad input exits 2 with exactly one line on stderr.
"""

from __future__ import annotations

from fractions import Fraction

import pytest
import sympy as sp

from symroof.testing import assert_formula_equal
import symroof as sr
from symroof.cli import main
from test_cli import run_error, run_json  # one helper for every CLI test
from symroof.parse import parse_expr
from symroof.symbols import CANONICAL, B, D, H, K, L, N, S, b




def expr(text: str) -> sp.Expr:
    return parse_expr(text, CANONICAL)


def run(capsys, *argv: str) -> str:
    code = main(list(argv))
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert captured.err == ""
    return captured.out


# ---------------------------------------------------------------------------
# limit


def test_limit_decode_seed_model_json(capsys):
    doc = run_json(capsys, "solve", "limit", "decode", "--model", "seed-6.4b", "--var", "B")
    assert doc["kind"] == "limit" and doc["var"] == "B" and doc["to"] == "oo" and doc["of"] == "I"
    res = expr(doc["result"])
    assert_formula_equal(res, (12 * 4096 / S + 2) / b)
    dec = sr.workloads.decode(sr.models.get("seed-6.4b"), batch=B, context=S)
    assert_formula_equal(res, sp.limit(dec.intensity, B, sp.oo))
    assert doc["display"] == "(49152/S + 2)/b"
    assert_formula_equal(expr(doc["display"]), res)
    assert "value" not in doc


def test_limit_decode_symbolic_with_values(capsys):
    out = run(capsys, "solve", "limit", "decode", "--var", "B",
              "--set", "D=4096", "--set", "S=1024", "--set", "b=2")
    lines = out.splitlines()
    assert lines[0] == "lim B->oo of I = (12*D/S + 2)/b"
    assert lines[1].strip() == "at D=4096 S=1024 b=2: 25"
    doc = run_json(capsys, "solve", "limit", "decode", "--var", "B",
                   "--set", "D=4096", "--set", "S=1024", "--set", "b=2")
    assert doc["value"] == 25 and doc["subs"] == {"D": 4096, "S": 1024, "b": 2}
    assert doc["display"] == "(12*D/S + 2)/b"
    assert_formula_equal(expr(doc["result"]), (12 * D / S + 2) / b)
    # the seed's arithmetic: (12 * 4096 / 1024 + 2) / 2 = 25
    assert Fraction(12 * 4096, 1024) / 2 + 1 == 25


def test_limit_other_quantities(capsys):
    doc = run_json(capsys, "solve", "limit", "decode", "--var", "B", "--to", "0")
    assert expr(doc["result"]) == 0
    doc = run_json(capsys, "solve", "limit", "decode", "--var", "S")
    assert_formula_equal(expr(doc["result"]), 2 / b)
    assert doc["display"] == "2/b"
    # an expression of the workload's quantities: KV share of the bytes as B -> oo
    doc = run_json(capsys, "solve", "limit", "decode", "--var", "B", "--of", "Q_kv_cache/Q")
    assert expr(doc["result"]) == 1
    doc = run_json(capsys, "solve", "limit", "gemm", "--var", "M")
    assert_formula_equal(expr(doc["result"]), 2 * K * N / (b * (K + N)))


# ---------------------------------------------------------------------------
# crossover


@pytest.mark.parametrize("model,number,value", [
    ("llama-3-8b", 28628, "28628"),
    ("llama-3-70b", 53025.6, "265128/5"),
])
def test_crossover_attention_weights_llama(capsys, model, number, value):
    doc = run_json(capsys, "solve", "crossover", "decode", "--model", model, "--var", "S",
                   "--set", "B=1")
    assert doc["kind"] == "crossover" and doc["lhs"] == "F_attention" and doc["rhs"] == "F_weights"
    assert doc["subs"] == {"B": 1}
    (sol,) = doc["solutions"]
    assert sol["number"] == number and sol["value"] == value and sol["conditions"] == []
    # substituted back into the library's own two sides
    dec = sr.workloads.decode(sr.models.get(model), batch=1, context=S)
    parts = dec.flops_by_operand
    x = expr(sol["value"])
    assert parts["activation"].xreplace({S: x}) == parts["weight"]


def test_crossover_symbolic_and_text(capsys):
    out = run(capsys, "solve", "crossover", "decode", "--var", "S")
    assert out.strip() == "F_attention = F_weights at S = 6*D"
    doc = run_json(capsys, "solve", "crossover", "decode", "--var", "S",
                   "--lhs", "Q_kv_cache", "--rhs", "Q_weight")
    (sol,) = doc["solutions"]
    assert_formula_equal(expr(sol["value"]), 6 * D / B)
    assert sol["number"] is None


def test_crossover_compute_bound_batch(capsys):
    base = ["solve", "crossover", "decode", "--var", "B", "--lhs", "I",
            "--set", "D=4096", "--set", "S=1024", "--set", "b=2"]
    doc = run_json(capsys, *base, "--rhs", "20")
    (sol,) = doc["solutions"]
    assert sol["number"] == 96
    I = sr.workloads.decode(sr.models.transformer(layers=L, d_model=D, heads=H),
                            batch=B, context=S).intensity
    assert I.xreplace({D: 4096, S: 1024, b: 2, B: 96}) == 20
    doc = run_json(capsys, *base, "--rhs", "295")
    assert doc["solutions"] == []                   # the ceiling is 25 FLOP/B
    out = run(capsys, *base, "--rhs", "295")
    assert out.strip() == "I = 295: no positive root in B (the real roots: -236/9)"


def test_crossover_with_complex_roots_reports_none(capsys):
    """S^2 + 1 = 0 has no real root: the CLI says so instead of a traceback.

    Bug: symroof/solve.py ``positive_condition`` compares a non-real root with 0
    (``bool(sign * coeff * rest > 0)``), SymPy raises TypeError, and ``cli.main``
    only catches SymroofError.
    """
    doc = run_json(capsys, "solve", "crossover", "decode", "--var", "S",
                   "--lhs", "S**2 + 1", "--rhs", "0")
    assert doc["solutions"] == []


# ---------------------------------------------------------------------------
# bad input: exit 2, one line


@pytest.mark.parametrize("var", ["Z", "F", "I", "B B", "2"])
def test_bad_var(capsys, var):
    line = run_error(capsys, "solve", "limit", "decode", "--var", var)
    assert "--var" in line


@pytest.mark.parametrize("lhs", ["F_attention +* 2", "__import__('os')", "foo", "", "F_attention ="])
def test_bad_lhs(capsys, lhs):
    line = run_error(capsys, "solve", "crossover", "decode", "--var", "S", "--lhs", lhs)
    assert "--lhs" in line


def test_bad_of_and_kind(capsys):
    assert "--of" in run_error(capsys, "solve", "limit", "decode", "--var", "B", "--of", "I+")
    run_error(capsys, "solve", "maximum", "decode", "--var", "B")
    run_error(capsys, "solve", "limit", "nothing", "--var", "B")
    run_error(capsys, "solve", "limit", "decode")                       # --var required
    run_error(capsys, "solve", "crossover", "decode", "--var", "S",
              "--lhs", "F_attention", "--rhs", "F_attention")           # equal everywhere
    run_error(capsys, "solve", "crossover", "decode", "--var", "S", "--lhs", "exp(S)",
              "--rhs", "2")                                             # not rational
    run_error(capsys, "solve", "limit", "decode", "--var", "B", "--set", "S=x")


@pytest.mark.parametrize("setting", ["D=0", "b=-2", "D=1/2"])
def test_set_values_are_checked(capsys, setting):
    """``--set`` values must fit the symbol (dimensions positive integers, bytes positive),
    as ``derive`` and ``eval`` check.

    Bug: symroof/cli.py ``_solve`` builds ``fixed`` from ``_parse_sets`` without calling
    ``_check_value``, so ``solve limit decode --var B --set D=4096 --set S=1024 --set b=-2``
    prints -25 and ``--set D=0`` prints 2/b.
    """
    line = run_error(capsys, "solve", "limit", "decode", "--var", "B", "--set", setting,
                     "--set", "S=1024")
    assert "--set" in line
    # derive rejects the same value
    run_error(capsys, "derive", "decode", "--set", setting)


def test_set_with_several_values_is_not_silently_truncated(capsys):
    """``--set S=1024,2048`` either solves at both values or is refused; never only the first.

    Bug: symroof/cli.py ``_solve`` keeps ``v[0]`` of each ``--set`` list, silently
    dropping the other values.
    """
    argv = ["solve", "crossover", "decode", "--var", "B", "--lhs", "I", "--rhs", "20",
            "--set", "D=4096", "--set", "S=1024,2048", "--set", "b=2", "--json"]
    code = main(argv)
    captured = capsys.readouterr()
    if code == 0:
        assert "2048" in captured.out, captured.out
    else:
        assert code == 2 and len(captured.err.splitlines()) == 1


def test_limit_of_max_is_a_clean_error(capsys):
    """Min/Max never reach a solver: the CLI says to work per branch, exit 2."""
    assert main(["solve", "limit", "decode", "--var", "B", "--of", "Max(I,1)"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "regimes" in err[0] and "Traceback" not in err[0]

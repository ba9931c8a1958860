"""Textbook display forms: the seeds' printed formulas, produced by the engine.

Each row of the table below is an expression the engine derives (a workload's FLOPs,
bytes or intensity, a limit, a crossover, a curve's invariant), the exact text the
seeds print for it (``sr.text``), and a hand formula it must equal. ``display(e)``
must be the same expression as ``e`` (``cancel`` of the difference is 0).
"""

from __future__ import annotations

import pytest
import sympy as sp

from symroof.testing import assert_formula_equal
import symroof as sr
from symroof.ir import Kind
from symroof.symbols import B, D, G, H, K, L, M, N, P, S, b, d_ff, d_h, dim, n, quantity




def _model():
    return sr.models.transformer(layers=L, d_model=D, heads=H)


def _decode():
    return sr.workloads.decode(_model(), batch=B, context=S)


def _crossover_value(lhs, rhs, var):
    (c,) = sr.crossover(lhs, rhs, var)
    return c.value


def _kv_curve_invariant():
    q = _decode().bytes_by_kind
    (curve,) = sr.crossover_curve(q[Kind.KV_CACHE], q[Kind.WEIGHT], B, S)
    return curve.invariant


def _per_token_flops_in_P():
    per = sp.expand(_decode().flops / B)
    return per.subs(D**2 * L, P / 12)           # P = 12 L D^2


# (name, engine expression, expected text, hand formula from the seeds)
TABLE = [
    ("decode ceiling", lambda: sr.limit(_decode().intensity, B),
     "(12*D/S + 2)/b", (12 * D / S + 2) / b),
    ("decode ceiling, seed-6.4b",
     lambda: sr.limit(sr.workloads.decode(sr.models.get("seed-6.4b"), batch=B, context=S).intensity, B),
     "(49152/S + 2)/b", (12 * 4096 / S + 2) / b),
    ("square GEMM", lambda: sr.workloads.gemm(n, n, n).intensity, "2*n/(3*b)", 2 * n / (3 * b)),
    ("GEMM", lambda: sr.workloads.gemm(M, N, K).intensity,
     "2*M*N*K/(b*(M*K + N*K + M*N))", 2 * M * N * K / (b * (M * K + K * N + M * N))),
    ("skinny GEMM", lambda: sr.limit(sr.limit(sr.workloads.gemm(M, N, K).intensity, M), K),
     "2*N/b", 2 * N / b),
    ("GEMV", lambda: sr.limit(sr.limit(sr.workloads.gemv(N, K).intensity, N), K), "2/b", 2 / b),
    ("ReLU", lambda: sr.workloads.elementwise(n).intensity, "1/(2*b)", 1 / (2 * b)),
    ("fused causal attention", lambda: sr.workloads.attention(S, D, H).intensity,
     "S/(2*b)", S / (2 * b)),
    ("unfused attention", lambda: sr.workloads.attention(S, D, H, fused=False).intensity,
     "S*D/(2*b*(D + S*H))", 2 * S**2 * D / (4 * S * D * b + 4 * H * S**2 * b)),
    ("attention = weights", lambda: _crossover_value(4 * L * S * D, 2 * P, S),
     "P/(2*L*D)", P / (2 * L * D)),
    ("attention = weights, 12 L D^2 model",
     lambda: _crossover_value(*[sr.workloads.decode(_model(), batch=1, context=S)
                                .flops_by_operand[k] for k in ("activation", "weight")], S),
     "6*D", 12 * L * D**2 / (2 * L * D)),
    ("Kaplan's crossover", lambda: _crossover_value(2 * L * S * D, 2 * _model().params, S),
     "12*D", 12 * D),
    ("KV bytes = weight bytes: S*B", _kv_curve_invariant, "6*D", 12 * L * D**2 * b / (2 * b * L * D)),
    ("parameters", lambda: _model().params, "12*L*D**2", 12 * L * D**2),
    ("KV bytes per token", lambda: _model().kv_bytes_per_token, "2*L*D*b", 2 * L * D * b),
    ("decode FLOPs per token", lambda: sp.expand(_decode().flops / B),
     "24*L*D**2 + 4*L*S*D", 2 * 12 * L * D**2 + 4 * L * S * D),
    ("decode FLOPs per token in P", _per_token_flops_in_P, "4*L*S*D + 2*P", 2 * P + 4 * L * S * D),
    ("decode bytes", lambda: _decode().bytes,
     "2*B*L*S*D*b + 12*L*D**2*b", b * 12 * L * D**2 + 2 * b * B * L * S * D),
    ("KV-cache bytes", lambda: _decode().bytes_by_kind[Kind.KV_CACHE], "2*B*L*S*D*b",
     2 * b * B * L * S * D),
    ("decode intensity", lambda: _decode().intensity,
     "2*B*(6*D + S)/(b*(B*S + 6*D))", B * (2 * 12 * L * D**2 + 4 * L * S * D)
     / (b * 12 * L * D**2 + 2 * b * B * L * S * D)),
    ("prefill FLOPs", lambda: sr.workloads.prefill(_model(), batch=B, prompt=S).flops,
     "24*B*L*S*D**2 + 2*B*L*S**2*D", B * (2 * 12 * L * D**2 * S + 2 * L * S**2 * D)),
    ("GQA decode ceiling",
     lambda: sr.limit(sr.workloads.decode(sr.models.transformer(layers=L, d_model=D, heads=H,
                                                                kv_heads=G), batch=B,
                                          context=S).intensity, B),
     "(10*D*H/(S*G) + 2*D/S + 2*H/G)/b", (2 * (10 * L * D**2 + 2 * L * D**2 * G / H)
                                         + 4 * L * S * D) / (b * 2 * L * S * D * G / H)),
    ("sensitivity of decode intensity to B", lambda: sr.sensitivity(_decode().intensity, B),
     "6*D/(B*S + 6*D)", 1 - B * S / (B * S + 6 * D)),
]


def test_table_is_large_enough():
    assert len(TABLE) >= 12
    assert len({row[0] for row in TABLE}) == len(TABLE)


@pytest.mark.parametrize("name,build,expected,hand", TABLE, ids=[row[0] for row in TABLE])
def test_text_forms(name, build, expected, hand):
    e = build()
    assert_formula_equal(e, hand)  # the engine derived the seed's formula
    assert sr.text(e) == expected
    d = sr.display(e)
    assert sp.cancel(d - e) == 0                  # display changes only the shape
    assert sr.text(hand) == expected              # the same shape from the hand formula


LATEX = [
    ((12 * D / S + 2) / b, r"\frac{\frac{12 D}{S} + 2}{b}"),
    (2 * n / (3 * b), r"\frac{2 n}{3 b}"),
    (S / (2 * b), r"\frac{S}{2 b}"),
    (P / (2 * L * D), r"\frac{P}{2 L D}"),
    (12 * L * D**2, r"12 L D^{2}"),
    (2 * D * d_ff, r"2 D d_{\mathrm{ff}}"),
]


@pytest.mark.parametrize("e,expected", LATEX, ids=[t for _, t in LATEX])
def test_latex_forms(e, expected):
    assert sr.latex(e) == expected


def test_latex_subscripts():
    assert sr.latex(d_ff) == r"d_{\mathrm{ff}}"
    assert sr.latex(d_h) == r"d_{h}"
    assert sr.text(d_ff) == "d_ff"
    # the engine's decode limit, not a hand-typed one
    assert sr.latex(sr.limit(_decode().intensity, B)) == r"\frac{\frac{12 D}{S} + 2}{b}"


def test_display_numbers_and_polynomials():
    assert sr.text(sp.Integer(25)) == "25"
    assert sr.text(sp.Rational(265128, 5)) == "265128/5"
    assert sr.display(sp.Integer(7)) == 7
    e = 2 * P + 4 * L * S * D
    assert sr.display(e) == sp.expand(e)


def test_display_round_trips_random_expressions():
    """display(e) is e for assorted rational functions (cancel of the difference is 0)."""
    exprs = [2 * (6 * D + S) / (S * b), B * S / (b * (B + S)), (D + 1) / (D - 1),
             -S / (b * (1 - S)), 3 * b / (2 * N), (M + N) ** 2 / (M * N * b)]
    for e in exprs:
        assert sp.cancel(sr.display(e) - e) == 0


def test_crossover_root_displays_without_leading_minus():
    """A positive root prints as a positive fraction, not as -x/(-y ...).

    Bug: ``crossover`` normalises the decode compute-bound root to
    ``6*D*R*b/(12*D - R*S*b + 2*S)``, but ``display`` (symroof/display.py, ``display``)
    starts with ``sp.cancel(e)``, which puts the sign back on the numerator, so
    ``text`` prints ``-6*D*R*b/(-12*D + S*R*b - 2*S)``.
    """
    R = quantity("R")
    (c,) = sr.crossover(_decode().intensity, R, B)
    t = sr.text(c.value)
    assert sp.cancel(sr.display(c.value) - c.value) == 0
    assert not t.startswith("-"), t
    assert "/(-" not in t, t


def test_theta_displays_as_a_sum():
    """Shazeer's Theta(n/d + 1/b) prints as the seeds print it, a sum of two terms.

    Bug: ``theta`` returns ``n/d + 1/Bs``, but ``display`` cancels every non-polynomial
    into one fraction, so ``text`` prints ``(n*Bs + d)/(Bs*d)``.
    """
    d, Bs = dim("d"), dim("Bs")
    th = sr.theta((6 * d + Bs * n) / (Bs * (12 * d + 2 * n)), [(n, d)])
    assert th == n / d + 1 / Bs
    assert sr.text(th) in ("n/d + 1/Bs", "1/Bs + n/d")


def test_condition_displays():
    """A crossover's condition is a result too: text() shows both sides in textbook form.

    Bug: ``display`` (symroof/display.py) calls ``as_expr``, which rejects a relation,
    so ``text(R < 2*(6*D + S)/(S*b))`` raises SymroofError.
    """
    R = quantity("R")
    (c,) = sr.crossover(_decode().intensity, R, B)
    assert sr.text(c.conditions[0]) == "R < (12*D/S + 2)/b"

"""Assertion helpers for tests of roofline formulas; also a pytest plugin (fixtures).

Every helper raises :class:`AssertionError` with a message that shows both sides; none
warns and passes. Formulas are compared by ``cancel(actual - expected) == 0``; where that
cannot decide (``Min``/``Max``, ``Piecewise``, ``floor``/``ceiling``, ``Abs``, radicals),
both sides are evaluated exactly at fixed corner points, at the formulas' own constants
and at seeded random points, all drawn from each symbol's whole domain (negative values,
zero and complex values wherever its assumptions allow them), and a failure names the
seed and the point. ``nan``, ``zoo``, ``oo`` and ``-oo`` equal nothing, themselves
included, and a formula too large to evaluate fails at once instead of hanging.

>>> from sympy import Abs, Symbol, ceiling, floor, nan
>>> from symroof.symbols import M, N, K, T
>>> assert_formula_equal(2*M*N*K / (M*N), 2*K)
>>> assert_formula_equal(ceiling(M/T), floor((M + T - 1)/T))   # ceil-div, integers
>>> assert_formula_equal(2*M*N*K, 2*M*N*K + M)
Traceback (most recent call last):
...
AssertionError: formulas differ:
  actual:   2*K*M*N
  expected: 2*K*M*N + M
  actual - expected = -M
>>> assert_formula_equal(Abs(M), M)                          # M is positive
>>> x = Symbol("x", real=True)
>>> assert_formula_equal(Abs(x), x)                          # x may be negative
Traceback (most recent call last):
...
AssertionError: formulas differ at x=-1 (corner point 3 of 9, seed=0):
  actual:   Abs(x)
  expected: x
  actual - expected = -x + Abs(x)
  values:   actual = 1, expected = -1
>>> assert_formula_equal(nan, nan)  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
AssertionError: cannot compare formulas: actual is or contains nan (undefined); nan, zoo, ...

Example: a textbook chapter's test

>>> from symroof.symbols import n, b
>>> from symroof.workloads import gemm
>>> assert_formula_equal(gemm(n, n, n).intensity, 2*n/(3*b))
>>> assert_matches_oracle(2*M*N*K, lambda s: 2 * s["M"] * s["N"] * s["K"],
...                       [{"M": 2, "N": 3, "K": 4}, {"M": 1, "N": 1, "K": 9}])

In a pytest suite the helpers are also fixtures named ``formula_equal``,
``free_symbols``, ``close`` and ``matches_oracle`` (the plugin loads itself once symroof
is installed; otherwise pass ``-p symroof.testing``)::

    def test_square_gemm(formula_equal):
        formula_equal(gemm(n, n, n).intensity, 2*n/(3*b))

The helpers live in the modules of this package by concern: :mod:`~symroof.testing.formulas`
(formulas), :mod:`~symroof.testing.values` (values and oracles), with the checker's
parts beside them (:mod:`~symroof.testing.shown`, :mod:`~symroof.testing.bounded`,
:mod:`~symroof.testing.sampling`, :mod:`~symroof.testing.evaluation`); every helper is
imported from here.
"""

from __future__ import annotations

# This package is a pytest plugin (the pytest11 entry point): pytest imports it at start-up
# in every session of every project where symroof is installed. At the top its modules
# import only the standard library and each other; sympy, mpmath and symroof's own modules
# are imported inside the helpers, so loading the plugin costs nothing and cannot fail when
# they are broken (tests/project/test_testing.py checks the top-level imports).
from collections.abc import Callable
from typing import Any

from symroof.testing.formulas import assert_formula_equal, assert_free_symbols
from symroof.testing.values import assert_close, assert_matches_oracle

__all__ = ["assert_formula_equal", "assert_free_symbols", "assert_close", "assert_matches_oracle"]


# --- pytest plugin: the helpers as fixtures (pytest is optional for the helpers) -------
try:
    import pytest
except ImportError:  # pragma: no cover - plain users of the helpers need no pytest
    pytest = None  # type: ignore[assignment]

if pytest is not None:
    def _fixture(name: str, helper: Callable[..., None]) -> Any:
        def fixture() -> Callable[..., None]:
            return helper
        fixture.__doc__ = f"The :func:`{helper.__name__}` helper, as a fixture."
        return pytest.fixture(name=name)(fixture)

    _formula_equal_fixture = _fixture("formula_equal", assert_formula_equal)
    _free_symbols_fixture = _fixture("free_symbols", assert_free_symbols)
    _close_fixture = _fixture("close", assert_close)
    _matches_oracle_fixture = _fixture("matches_oracle", assert_matches_oracle)

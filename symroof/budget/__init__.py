"""Limits on the work one request may cause: every one of them here, adjustable on purpose.

A small input can ask for a lot: six ``--set`` lists of 999 values are 10**18 rows,
``(F + Q)**64`` expands into millions of terms, ``exp(exp(exp(64)))`` has more digits than
there are atoms. Each limit below is checked before the work starts (rows, expression
size and degree, digits of a number), and SymPy's solvers and limits run under a
wall-clock and memory guard that ends the computation and names the step that was too
large. A refusal is a :class:`BudgetError` (a :class:`~symroof.errors.SymroofError`)
naming the limit and how to raise it: ``--budget NAME=VALUE`` on the command line,
``with symroof.budget.limits(NAME=VALUE):`` in Python.

>>> current().rows
10000
>>> with limits(rows=50):
...     check_rows([("M", 10), ("N", 10)], "--set")
Traceback (most recent call last):
...
symroof.budget.BudgetError: --set: 100 rows (M 10 x N 10), more than the limit of 50 rows (raise it with --budget rows=N)
>>> from symroof.symbols import B
>>> check_expr((B + 1)**64, "limit")
Traceback (most recent call last):
...
symroof.budget.BudgetError: limit: degree 64 in B, more than the limit of 16 (raise it with --budget degree=N)

The limits and the checks made before the work starts are :mod:`symroof.budget.checks`;
the wall-clock and memory guard, a forked child process, is :mod:`symroof.budget.guard`.
Both are read from here: every name below keeps this module's path.
"""

from __future__ import annotations

from symroof.budget.guard import clock, guarded, note
from symroof.budget.checks import (DEFAULT, LIGHT_DEGREE, LIGHT_TERMS, MAX_BITS, MAX_DEGREE,
                                   MAX_DEPTH, MAX_DIGITS, MAX_EXPONENT, MAX_FILE_BYTES,
                                   MAX_LENGTH, MAX_MEMORY_MIB, MAX_OPS, MAX_ROWS, MAX_SECONDS,
                                   Budget, BudgetError, check_expr, check_number, check_rows,
                                   current, degree_bound, expansion_bound, light, limits,
                                   operations, parse_limits, substitute)

__all__ = [
    "Budget", "BudgetError", "DEFAULT", "current", "limits", "parse_limits", "check_rows",
    "check_expr", "check_number", "operations", "degree_bound", "expansion_bound", "light",
    "substitute", "guarded", "note", "LIGHT_TERMS", "LIGHT_DEGREE", "MAX_ROWS", "MAX_OPS", "MAX_DEGREE", "MAX_SECONDS", "MAX_MEMORY_MIB",
    "MAX_DIGITS", "MAX_FILE_BYTES", "MAX_LENGTH", "MAX_DEPTH", "MAX_EXPONENT", "MAX_BITS",
]

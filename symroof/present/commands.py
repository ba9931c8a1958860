"""What the ``symroof`` commands print: their records as text, LaTeX, Markdown or JSON.

Formulas in JSON are SymPy syntax (``str``), which :func:`symroof.parse.parse_expr` reads
back; formulas for people are in the textbook's shape and factor order.

>>> from symroof.symbols import n, b
>>> formula_line("I", 2*n/(3*b), "markdown")
'- $I = \\\\frac{2 n}{3 b}$'
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import sympy as sp

from symroof.analysis import Analysis
from symroof.errors import SymroofError
from symroof.evaluate import Point
from symroof.present.formula import latex, text
from symroof.present.numbers import json_number, text_number
from symroof.present.records import to_dict, to_text
from symroof.solve import Crossover

__all__ = ["FORMATS", "formula", "formula_line", "dumps", "derive_json", "derive_lines",
           "limit_doc", "limit_lines", "crossover_doc", "crossover_lines", "at"]

#: Formats for formulas: plain text (SymPy syntax in textbook order), LaTeX, Markdown.
FORMATS = ("text", "latex", "markdown")


def formula(expr: sp.Expr, fmt: str) -> str:
    """``expr`` in ``fmt``: text, latex (math mode body) or markdown (``$...$``)."""
    if fmt == "text":
        return text(expr)
    if fmt == "latex":
        return latex(expr)
    if fmt == "markdown":
        return f"${latex(expr)}$"
    raise SymroofError(f"format {fmt!r}: expected one of {', '.join(FORMATS)}")


def formula_line(name: str, expr: sp.Expr, fmt: str) -> str:
    """``name = expr`` as one line of ``fmt``."""
    if fmt == "markdown":
        return f"- ${name} = {latex(expr)}$"
    if fmt == "latex":
        return f"{name} = {latex(expr)}"
    return f"{name} = {formula(expr, fmt)}"


def dumps(doc: object) -> str:
    """JSON text: sorted keys, one space indent; never NaN or Infinity."""
    return json.dumps(doc, indent=1, sort_keys=True, allow_nan=False)


def at(values: Mapping[sp.Symbol, sp.Expr]) -> str:
    """``M=1 N=3``: an assignment as a row label."""
    return " ".join(f"{k.name}={text_number(v)}" for k, v in values.items())


def _subs(values: Mapping[sp.Symbol, sp.Expr]) -> dict[str, object]:
    return {k.name: json_number(v) for k, v in values.items()}


# -- derive / eval -----------------------------------------------------------------


def derive_json(name: str, wl: Analysis, points: Iterable[Point]) -> dict[str, Any]:
    """``symroof derive|eval --json``: the formulas and one row per point."""
    doc: dict[str, Any] = {"workload": name, "convention": to_text(wl.convention),
                           "flops": str(wl.flops), "bytes": str(wl.bytes),
                           "intensity": str(wl.intensity), "rows": []}
    for p in points:
        item: dict[str, Any] = {"subs": _subs(p.values), "flops": json_number(p.flops),
                                "bytes": json_number(p.bytes),
                                "intensity": json_number(p.intensity)}
        if p.roofline is not None:
            item.update(to_dict(p.roofline))
        doc["rows"].append(item)
    return doc


def derive_lines(name: str, wl: Analysis, points: Iterable[Point], fmt: str) -> Iterable[str]:
    """``symroof derive|eval``: the formulas, then a line (and a roofline line) per point."""
    yield f"{name}  ({to_text(wl.convention)})"
    for sym, expr in (("F", wl.flops), ("Q", wl.bytes), ("I", wl.intensity)):
        yield "  " + formula_line(sym, expr, fmt)
    for p in points:
        if p.values:
            yield (f"  at {at(p.values)}: F = {text_number(p.flops)} FLOP, "
                   f"Q = {text_number(p.bytes)} B, I = {text_number(p.intensity)} FLOP/B")
        if p.roofline is not None:
            yield "    " + to_text(p.roofline)


# -- solve ----------------------------------------------------------------------------


def limit_doc(of: str, var: str, to: str, result: sp.Expr,
              fixed: Mapping[sp.Symbol, sp.Expr], value: sp.Expr | None) -> dict[str, Any]:
    """``symroof solve limit --json``."""
    doc: dict[str, Any] = {"kind": "limit", "of": of, "var": var, "to": to,
                           "result": str(result), "display": text(result)}
    if fixed:
        doc["subs"] = _subs(fixed)
        doc["value"] = json_number(value)
    return doc


def limit_lines(of: str, var: str, to: str, result: sp.Expr,
                fixed: Mapping[sp.Symbol, sp.Expr], value: sp.Expr | None,
                fmt: str) -> Iterable[str]:
    """``symroof solve limit``."""
    yield f"lim {var}->{to} of {of} = {formula(result, fmt)}"
    if fixed and value is not None:
        yield f"  at {at(fixed)}: {text_number(value)}"


def crossover_doc(lhs: str, rhs: str, var: str, fixed: Mapping[sp.Symbol, sp.Expr],
                  solutions: Sequence[Crossover]) -> dict[str, Any]:
    """``symroof solve crossover --json``."""
    return {"kind": "crossover", "lhs": lhs, "rhs": rhs, "var": var, "subs": _subs(fixed),
            "solutions": [{"value": str(c.value), "display": text(c.value),
                           "conditions": [str(x) for x in c.conditions],
                           "number": None if c.value.free_symbols else json_number(c.value)}
                          for c in solutions]}


def crossover_lines(lhs: str, rhs: str, var: str, solutions: Sequence[Crossover],
                    fmt: str) -> Iterable[str]:
    """``symroof solve crossover``: each solution with its number and conditions."""
    if not solutions:
        yield f"{lhs} = {rhs}: no positive {var}"
    for c in solutions:
        cond = (f"  (when {' and '.join(formula(x, fmt) for x in c.conditions)})"
                if c.conditions else "")
        shown = formula(c.value, fmt)
        num = "" if c.value.free_symbols or text_number(c.value) == text(c.value) \
            else f" = {text_number(c.value)}"
        yield f"{lhs} = {rhs} at {var} = {shown}{num}{cond}"

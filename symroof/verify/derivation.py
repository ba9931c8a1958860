"""A claim's derivation, as a reader checks it by hand: which ops give which terms.

For a claim whose recipe reads a workload (``value.workload``, the workload of a
``value.roofline``, or the one workload a ``let`` binds before its ``expr``), :func:`derivation` lists the graph's ops with their FLOPs ``F`` and
counted bytes ``Q`` in the workload's own symbols (ops of equal cost in one row, ops that
cost nothing left out), their sum (the workload's ``F`` and ``Q``, exactly), and the last
step that turns the sums into the claimed quantity (``I = F/Q``, ``t = max(F/π, Q/β)``).
A mismatch's table shows which term the document dropped.

>>> from symroof.verify import parse_claims, EXAMPLE
>>> from symroof.verify.run import run_claims
>>> r = run_claims(parse_claims(EXAMPLE, "example.toml")).results[0]
>>> [row.label for row in r.derivation.rows], r.derivation.step
(['C'], 'I = F/Q')
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import sympy as sp

from symroof.analysis import Analysis

__all__ = ["Row", "Derivation", "derivation", "workload_spec", "MAX_ROWS"]

#: More op rows than this and the table groups ops by their op group instead.
MAX_ROWS = 14

#: The step from the sums to each quantity a claim may read: of a workload node, of a
#: roofline node (the roofline's algebra; its own chip's π and β).
_STEPS = {"workload": {"I": "I = F/Q", "F": "F", "Q": "Q"},
          "roofline": {"time_s": "t = max(F/π, Q/β)",
                       "tokens_per_s": "tokens/s = tokens / max(F/π, Q/β)",
                       "tokens_per_s_per_user": "tokens/s per user = 1 / max(F/π, Q/β)"}}


@dataclass(frozen=True)
class Row:
    """One line of a derivation: the ops it covers, their FLOPs and counted bytes."""

    label: str
    flops: sp.Expr
    bytes: sp.Expr


@dataclass(frozen=True)
class Derivation:
    """The op rows, their sums (the workload's F and Q) and the step to the claim."""

    rows: tuple[Row, ...]
    flops: sp.Expr
    bytes: sp.Expr
    step: str


def workload_spec(value: object) -> tuple[Mapping[str, Any], str] | None:
    """The workload a recipe reads at its top (itself, or a roofline's), and the step
    from its sums to what the recipe reads (None: no step this module knows)."""
    if not isinstance(value, Mapping):
        return None
    if isinstance(value.get("workload"), Mapping):
        step = _STEPS["workload"].get(str(value.get("q", "I")))
        return (value["workload"], step) if step else None
    let, expr = value.get("let"), value.get("expr")
    if isinstance(let, Mapping) and isinstance(expr, str):  # one workload bound, then algebra
        bound = [(name, node) for name, node in let.items() if isinstance(node, Mapping)
                 and isinstance(node.get("workload"), Mapping)]
        if len(bound) == 1:
            name, node = bound[0]
            step = _STEPS["workload"].get(str(node.get("q", "I")))
            if step and "subs" not in node:
                shown = " ".join(expr.replace("**", "^").replace("*", " ").split())
                return node["workload"], f"{step} ({name}), then {shown}"
        return None
    roofline = value.get("roofline")
    if isinstance(roofline, Mapping) and isinstance(roofline.get("workload"), Mapping) \
            and "devices" not in roofline:
        step = _STEPS["roofline"].get(str(value.get("q", "time_s")))
        return (roofline["workload"], step) if step else None
    return None


def _rows(a: Analysis) -> list[Row]:
    counted = a.convention.traffic
    costs = [(name, c.flops, c.only(counted).bytes) for name, c in a.per_op.items()]
    costs = [(n, f, q) for n, f, q in costs if f != 0 or q != 0]
    merged: dict[tuple[sp.Expr, sp.Expr], list[str]] = {}
    for name, f, q in costs:
        merged.setdefault((f, q), []).append(name)
    if len(merged) <= MAX_ROWS:
        return [Row(" + ".join(names), f * len(names), q * len(names))  # equal costs: one row
                for (f, q), names in merged.items()]
    groups: dict[str, list[tuple[sp.Expr, sp.Expr]]] = {}
    ops = {op.name: op for op in a.graph.ops}
    for name, f, q in costs:
        group = getattr(ops.get(name), "group", "other")
        groups.setdefault(str(getattr(group, "value", group)), []).append((f, q))
    return [Row(f"{group} ops ({len(items)})", sp.Add(*(f for f, _ in items)),
                sp.Add(*(q for _, q in items))) for group, items in groups.items()]


def derivation(claim_value: object, analysis_of: Any) -> Derivation | None:
    """The derivation of a claim whose recipe reads a workload at its top, or None.
    ``analysis_of(spec)`` returns the workload's :class:`~symroof.analysis.Analysis` (the
    recipe's own, cached: nothing is derived twice)."""
    found = workload_spec(claim_value)
    if found is None:
        return None
    spec, step = found
    a = analysis_of(spec)
    rows = _rows(a)
    return Derivation(tuple(rows), a.flops, a.bytes, step) if rows else None

"""What ``symroof check`` prints: one line per mismatch or error, then a summary.

>>> from symroof.verify import run_claims
>>> from symroof.verify.annotations import annotated_claims
>>> doc = 'A GEMV at 16 bits is 2 FLOP/B.\\n<!-- symroof claimed = 2\\nunit = "FLOP/B"\\nvalue = {workload = {builder = "gemv", args = ["4096", "4096"]}, q = "I"}\\nsubs = {b = 2} -->'
>>> print("\\n".join(check_lines(run_claims(annotated_claims(doc, "ch.md")))))
ch.md:2: mismatch: A GEMV at 16 bits is 2 FLOP/B.: printed 2 FLOP/B, derived 0.999512 FLOP/B (exactly)
1 claim: 1 mismatch
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from symroof.present.appendix import derivation_terms, figure
from symroof.verify import Outcome, Result

__all__ = ["check_lines", "terms", "MAX_TERMS"]

#: The most terms a mismatch lists (the largest; the rest are summed as "others").
MAX_TERMS = 6


def _value(value: object, r: Result) -> str:
    if value is None:
        return "-"
    unit = "" if r.claim.unit in ("-", "ratio") else f" {r.claim.unit}"
    if getattr(value, "free_symbols", None):
        return str(value)
    return f"{figure(value / r.scale)}{unit}"


def terms(r: Result) -> str:
    """The additive terms of a mismatch's general formula, each with its value at the
    claim's substitution, largest first (:func:`derivation_terms`): which part of the
    derivation contributes what, so the term a hand calculation left out shows."""
    parts = derivation_terms(r, MAX_TERMS)
    if not parts:
        return ""
    shown = [f"{_value(v, r)} from {t}" if t is not None else f"{_value(v, r)} from the others"
             for v, t in parts]
    at = ", ".join(f"{k} = {v}" for k, v in sorted(r.subs.items(), key=lambda kv: str(kv[0])))
    return " + ".join(shown) + (f" (at {at})" if at else "")


def check_lines(outcome: Outcome) -> Iterator[str]:
    """``FILE:LINE: status: quantity: printed X, derived Y (tolerance)`` per failing claim."""
    path = outcome.source.path
    for r in outcome.results:
        if r.status == "mismatch":
            printed = (r.claim.claimed_formula if r.claimed_formula is not None
                       else _value(r.claimed, r))
            yield (f"{path}:{r.claim.line}: mismatch: {r.claim.quantity}: printed {printed}, "
                   f"derived {_value(r.derived, r)} ({r.tolerance})")
            shown = terms(r)
            if shown:
                yield f"  the derivation's terms: {shown}"
        elif r.status == "error":  # the message's own FILE:LINE (the field's line) leads
            named = re.match(rf"{re.escape(path)}:(\d+): (.*)", r.message, re.S)
            yield (f"{path}:{named.group(1)}: error: {named.group(2)}" if named else
                   f"{path}:{r.claim.line}: error: {r.message}")
    n = len(outcome.results)
    summary = ", ".join(f"{k} {s}" for s, k in sorted(outcome.counts.items()))
    yield f"{n} claim{'s' if n != 1 else ''}: {summary}"

"""The roofline's regimes: which bound holds in which region of the symbols.

A roofline's time is a maximum of roofs; no solver takes a Max, so the bound comes as
branches (:class:`Regime`), each a closed-form condition on the symbols (from the signs
of the differences of the roofs' times, reduced with the symbols' assumptions), the time
and the attainable FLOP/s where it holds, and, in a chosen variable, the crossovers that
end it. Two roofs by default: memory (``Q/bandwidth``) below the ridge, compute
(``F/peak``) above it. With ``communication=True`` a sharded workload's link is a third roof
(``communication/link bandwidth``, overlapped with the others as ``time_overlapped_s``);
each branch then holds where its time exceeds both others. Exactly on a boundary no
branch holds (the roofs are equal there). :func:`regime_at` picks the branch that holds
at given values. ``sr.regimes`` is the function, as it always was; ``from symroof.regimes
import ...`` reaches this module (``symroof.solve`` still lends ``regimes`` and ``Regime``).

>>> from symroof.symbols import n
>>> from symroof.workloads import gemm
>>> [(r.bound, r.boundary[0].value) for r in regimes(gemm(n, n, n), "h100-sxm", var=n)]
[('memory', 59364/67), ('compute', 59364/67)]
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import sympy as sp

from symroof.analysis import Analysis
from symroof.budget import guarded, note
from symroof.errors import SymroofError
from symroof.evaluate import Roofline, roofline
from symroof.hardware import HardwareSpec
from symroof.ir import as_expr
from symroof.precision import Precision
# the solvers' unguarded steps: a regimes computation runs them inside its own guard
from symroof.solve import (Crossover, _checked, _crossover, _positive_condition, _quick,
                           _symbol)

__all__ = ["Regime", "regimes", "regime_at"]


@dataclass(frozen=True)
class Regime:
    """One branch of the roofline: where ``condition`` holds, time is ``time_s``."""

    bound: str
    condition: sp.Expr | bool
    time_s: sp.Expr
    attainable: sp.Expr
    boundary: tuple[Crossover, ...] = field(default_factory=tuple)


def regimes(workload: Analysis, hw: HardwareSpec | str, *,
            precision: Precision | str = Precision.BF16,
            subs: Mapping[object, object] | None = None, var: sp.Symbol | None = None,
            unit: str | None = None, level: str | None = None, link: str | None = None,
            communication: bool = False) -> list[Regime]:
    """The memory-bound and compute-bound branches of a workload's roofline (and, with
    ``communication``, the communication-bound one of a sharded workload, over ``link``:
    by default the chip's fastest).

    Each branch gives its condition (intensity below or above the ridge; with
    ``communication``, its time above both others) and its time. With ``var``, each also
    gives where it starts or ends in that variable.
    """
    if var is not None:
        _symbol(var, "regimes var")
    if not isinstance(communication, bool):
        raise SymroofError(f"regimes communication: expected true or false, got "
                           f"{communication!r}")
    r = roofline(workload, hw, precision=precision, subs=subs, unit=unit, level=level,
                 link=link)
    _checked(r.intensity, "regimes")
    if communication and r.communication_time_s != 0:
        return guarded(f"regimes of {workload.graph.name!r} on {r.hardware} with its link",
                       _three, r, var, unguarded=False)
    return guarded(f"regimes of {workload.graph.name!r} on {r.hardware}", _regimes, r, var,
                   unguarded=_quick(r.intensity, var, 2))


def _regimes(r: Roofline, var: sp.Symbol | None) -> list[Regime]:
    note("the sign of intensity - ridge")
    below = _positive_condition(r.ridge - r.intensity)
    above = _positive_condition(r.intensity - r.ridge)
    cross = tuple(_crossover(r.intensity - r.ridge, var)) if var is not None and \
        var in r.intensity.free_symbols else ()
    out = []
    for bound, cond, time, attain in (
            ("memory", below, r.memory_time_s, r.bandwidth * r.intensity),
            ("compute", above, r.compute_time_s, r.peak)):
        if cond is False:
            continue
        out.append(Regime(bound, cond, sp.factor_terms(sp.cancel(time)),
                          sp.factor_terms(sp.cancel(attain)), cross))
    return out


def _three(r: Roofline, var: sp.Symbol | None) -> list[Regime]:
    times = {"memory": r.memory_time_s, "compute": r.compute_time_s,
             "communication": r.communication_time_s}
    out = []
    for bound, time in times.items():
        note(f"the signs of the {bound} time minus the others")
        conds = [_positive_condition(time - other) for name, other in times.items()
                 if name != bound]
        if any(c is False for c in conds):
            continue
        kept = [c for c in conds if c is not True]
        cond: sp.Expr | bool = True if not kept else kept[0] if len(kept) == 1 else \
            sp.And(*kept)
        cross: list[Crossover] = []
        if var is not None:
            for name, other in times.items():
                diff = time - other
                if name != bound and var in diff.free_symbols:
                    cross.extend(_crossover(diff, var))
        out.append(Regime(bound, cond, sp.factor_terms(sp.cancel(time)),
                          sp.factor_terms(sp.cancel(r.flops / time)), tuple(cross)))
    return out


def regime_at(branches: list[Regime], values: Mapping[sp.Symbol, object]) -> Regime | None:
    """The branch whose condition holds at ``values`` (None on a boundary, where the
    roofs are equal); a condition the values leave undecided is refused, naming it."""
    found = None
    for reg in branches:
        cond = reg.condition
        held = cond if isinstance(cond, bool) else cond.xreplace(
            {k: as_expr(v, f"regime_at {k}") for k, v in values.items()})
        if held not in (True, False, sp.true, sp.false):
            raise SymroofError(f"regime_at: the {reg.bound} condition {cond} is not decided "
                               f"at {dict(values)}; give every symbol in it a value")
        if bool(held):
            found = reg
    return found

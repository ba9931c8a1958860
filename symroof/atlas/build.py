"""Building an atlas: the parts of F and Q, the ridges, every pair in every variable.

>>> import symroof as sr
>>> from symroof.symbols import B, S, L, D, H
>>> dec = sr.workloads.decode(sr.models.transformer(layers=L, d_model=D, heads=H), B, S)
>>> [p.name for p in parts(dec)]
['F_weights', 'F_attention', 'Q_weight', 'Q_kv_cache']
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType

import sympy as sp

from symroof import hardware as _hardware
from symroof.analysis import Analysis
from symroof.atlas.records import LEVERS, RIDGE, Atlas, AtlasBudget, Entry, Part, Ridge
from symroof.atlas.solver import Solver, in_terms_of
from symroof import budget as _budget
from symroof.errors import SymroofError
from symroof.hardware import HardwareSpec
from symroof.ir import Kind, as_expr
from symroof.precision import Precision
from symroof.symbols import CANONICAL, b as _b, quantity

__all__ = ["atlas", "parts"]


def parts(workload: Analysis) -> tuple[Part, ...]:
    """F's parts by operand and Q's parts by counted tensor kind, as ``quantities`` names them."""
    q = workload.quantities
    out = [Part(n, "flops", q[n], LEVERS[n]) for n in ("F_weights", "F_attention")]
    other = sp.expand(q["F"] - q["F_weights"] - q["F_attention"])
    if other != 0:
        out.append(Part("F_other", "flops", other, LEVERS["F_other"]))
    out += [Part(f"Q_{k.value}", "bytes", q[f"Q_{k.value}"], LEVERS[f"Q_{k.value}"])
            for k in Kind if f"Q_{k.value}" in q]
    return tuple(out)


def atlas(workload: Analysis, over: Iterable[sp.Symbol] | None = None, *,
          hardware: Iterable[HardwareSpec | str] | HardwareSpec | str = (),
          precisions: Iterable[Precision | str] | Precision | str | None = None,
          levels: Iterable[str] | None = None,
          unit: str | None = None, named: Mapping[sp.Symbol, object] | None = None,
          symbolic_ridge: bool = True, budget: AtlasBudget = AtlasBudget()) -> Atlas:
    """The crossover atlas of ``workload`` in each variable of ``over``.

    ``over`` defaults to the workload's size symbols (B, S, M, N, K, n present in it).
    Ridges: the symbol :data:`RIDGE` (``R_ridge`` where the workload has an ``R`` of its
    own; none with ``symbolic_ridge=False``) and, per chip in
    ``hardware``, each of ``precisions`` (default: the chip's) at each memory level with a
    bandwidth (or ``levels``); ``b`` is set from the precision where free, as
    :func:`symroof.roofline` does. ``named`` maps a symbol to the expression it names
    (``{P: model.params}``); each solution then also comes in that textbook form.
    """
    if not isinstance(workload, Analysis):
        raise SymroofError(f"atlas: expected a workload (Analysis), got {type(workload).__name__}")
    if not isinstance(budget, AtlasBudget):
        raise SymroofError(f"atlas budget: expected a symroof.atlas.AtlasBudget, got {budget!r}")
    the_parts = parts(workload)
    free = workload.flops.free_symbols | workload.bytes.free_symbols
    variables = _variables(over, free, workload.graph.name)
    names = _named(named, free)
    # a workload with its own R (conv2d's kernel height) gets the ridge as R_ridge
    ridge = RIDGE if RIDGE.name not in {x.name for x in free} else quantity("R_ridge")
    ridge_list = ((Ridge(ridge),) if symbolic_ridge else ()) + _ridges(
        workload, hardware, precisions, levels, unit)
    solver = Solver(budget, names, variables, _budget.clock() + budget.seconds)
    entries: list[Entry] = []
    for i, low in enumerate(the_parts):
        for high in the_parts[i + 1:]:
            if low.quantity == high.quantity:
                entries += solver.pair(low.quantity, high.name, low.name, high.expr, low.expr)
    if workload.bytes != 0:
        named_i = in_terms_of(workload.flops, names) / in_terms_of(workload.bytes, names)
        for r in ridge_list:
            i_expr = workload.intensity.xreplace(dict(r.subs))
            entries += solver.pair("ridge", "I", r.name, i_expr, r.value, ridge=r,
                                   named=(named_i.xreplace(dict(r.subs)), r.value))
    limits = tuple(a for v in variables for a in solver.asymptotes("I", workload.intensity, v)
                   ) if workload.bytes != 0 else ()
    return Atlas(workload.graph.name, variables, the_parts, ridge_list, tuple(entries), limits,
                 MappingProxyType(names), budget)


# -- inputs -----------------------------------------------------------------------------

_SIZES = ("B", "S", "M", "N", "K", "n", "T")


def _variables(over: Iterable[sp.Symbol] | None, free: set[sp.Symbol],
               name: str) -> tuple[sp.Symbol, ...]:
    if over is None:
        found = tuple(CANONICAL[s] for s in _SIZES if CANONICAL[s] in free)
        return found or tuple(sorted((s for s in free if s.is_integer), key=str))
    if isinstance(over, sp.Symbol):
        over = [over]
    out: list[sp.Symbol] = []
    for v in over:
        if not isinstance(v, sp.Symbol) or v not in free:
            raise SymroofError(f"atlas over: {v!r} is not a symbol of {name!r} (its symbols: "
                               f"{', '.join(sorted(s.name for s in free))})")
        if v not in out:
            out.append(v)
    return tuple(out)


def _named(named: Mapping[sp.Symbol, object] | None,
           free: set[sp.Symbol]) -> dict[sp.Symbol, sp.Expr]:
    out: dict[sp.Symbol, sp.Expr] = {}
    for sym, value in (named or {}).items():
        if not isinstance(sym, sp.Symbol) or sym in free:
            raise SymroofError(f"atlas named: {sym!r} must be a symbol the workload does not use")
        expr = as_expr(value, f"atlas named {sym}")
        if expr.is_number or not expr.free_symbols <= free:
            raise SymroofError(f"atlas named {sym}: {expr} must be an expression in the "
                               "workload's symbols")
        out[sym] = expr
    return out


def _ridges(workload: Analysis, hardware: Iterable[HardwareSpec | str] | HardwareSpec | str,
            precisions: Iterable[Precision | str] | Precision | str | None,
            levels: Iterable[str] | None,
            unit: str | None) -> tuple[Ridge, ...]:
    chips = [hardware] if isinstance(hardware, (str, HardwareSpec)) else list(hardware)
    given = None if precisions is None else [precisions] if isinstance(precisions, str) \
        else list(precisions)
    # at the boundary: an unknown name is an error here, not a silently empty atlas
    wanted = None if given is None else [Precision.parse(p, "atlas precisions") for p in given]
    ops_per_mac = workload.convention.flop_count.ops_per_mac
    free = workload.flops.free_symbols | workload.bytes.free_symbols
    out: list[Ridge] = []
    for chip in chips:
        spec = _hardware.resolve(chip)
        have = [Precision(p) for p in spec.precisions(unit)]
        chosen = [p for p in (wanted or have) if p in have]
        lvls = [lv.name for lv in spec.levels if lv.bandwidth is not None] if levels is None \
            else [spec.level(lv).name for lv in ([levels] if isinstance(levels, str) else levels)]
        for p in chosen:
            subs = {_b: p.bytes} if _b in free else {}
            out += [Ridge(spec.ridge(p, unit, lv, ops_per_mac), spec.name, p, lv, subs)
                    for lv in lvls]
    if chips and wanted and not out:
        raise SymroofError(f"atlas precisions: no chip of {', '.join(map(str, chips))} has a "
                           f"peak for {', '.join(wanted)}")
    return tuple(out)

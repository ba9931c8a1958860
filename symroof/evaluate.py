"""Numbers from formulas: exact substitution and the roofline bound on a real chip.

>>> from symroof.symbols import n
>>> from symroof.workloads import gemm
>>> evaluate(gemm(n, n, n).intensity, {n: 8192, "b": 2})
8192/3
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import sympy as sp

from symroof import hardware
from symroof.analysis import Analysis
from symroof.errors import SymroofError
from symroof.hardware import HardwareSpec
from symroof.ir import as_expr
from symroof.precision import bytes_per_value
from symroof.rich import Rich
from symroof.symbols import b as _b

__all__ = ["evaluate", "sweep", "Roofline", "roofline", "symbol_map", "workload_values",
           "Point", "points"]


def symbol_map(expr: sp.Expr, subs: Mapping[object, object] | None, *,
               integers: bool = False) -> dict[sp.Symbol, sp.Expr]:
    """``subs`` keyed by symbols of ``expr``; string keys name a free symbol of ``expr``.

    Values must be positive where the symbol is; with ``integers``, dimensions must be
    positive integers (a physical workload), else any positive value (a point on a
    curve, such as a crossover at n = 59364/67)."""
    out: dict[sp.Symbol, sp.Expr] = {}
    by_name = {s.name: s for s in expr.free_symbols}
    for key, value in (subs or {}).items():
        if isinstance(key, str):
            if key not in by_name:
                continue  # a value for a symbol this expression does not use
            key = by_name[key]
        if not isinstance(key, sp.Symbol):
            raise SymroofError(f"subs: expected symbols as keys, got {key!r}")
        out[key] = _fits(key, as_expr(value, f"value of {key}"), integers)
    return out


def _fits(sym: sp.Symbol, value: sp.Expr, integers: bool) -> sp.Expr:
    if value.free_symbols:
        return value
    if integers and sym.is_integer and not (value.is_integer and value.is_positive):
        raise SymroofError(f"value of {sym}: expected a positive integer (a dimension), got {value}")
    if sym.is_positive and not value.is_positive:
        raise SymroofError(f"value of {sym}: expected a positive number, got {value}")
    return value


def evaluate(expr: object, subs: Mapping[object, object] | None = None) -> sp.Expr:
    """``expr`` with ``subs`` substituted, exactly (Rational in, Rational out)."""
    e = as_expr(expr, "expression")
    values = symbol_map(e, subs)
    out = e.xreplace(values)
    if out.has(sp.zoo, sp.nan) or (out.has(sp.oo, -sp.oo) and not e.has(sp.oo, -sp.oo)):
        at = ", ".join(f"{k}={v}" for k, v in values.items())
        raise SymroofError(f"{e} is undefined at {at} (a division by zero)")
    return out




def sweep(expr: object, grid: Mapping[object, object], *, subs: Mapping[object, object] | None = None):
    """``expr`` over numpy arrays of values, vectorised with ``lambdify`` (floats).

    ``grid`` maps symbols (or their names) to arrays that broadcast together, e.g.
    ``{B: B_values[:, None], S: S_values[None, :]}`` for a B x S table; ``subs`` fixes
    the other symbols first (exactly). Every free symbol must get a value.

    >>> import numpy as np
    >>> from symroof.symbols import n, b
    >>> sweep(2*n/(3*b), {n: np.array([3, 6])}, subs={b: 2}).tolist()
    [1.0, 2.0]
    """
    import numpy as np  # only sweeps need numpy; importing it at start-up costs every command

    e = evaluate(expr, subs)
    by_name = {x.name: x for x in e.free_symbols}
    keys: list[sp.Symbol] = []
    arrays: list[Any] = []
    for key, arr in grid.items():
        sym = by_name.get(key) if isinstance(key, str) else key
        if sym is None or sym not in e.free_symbols:
            continue
        keys.append(sym)
        arrays.append(np.asarray(arr, dtype=float))
    missing = e.free_symbols - set(keys)
    if missing:
        raise SymroofError(f"sweep: no values for {', '.join(sorted(m.name for m in missing))}")
    fn = sp.lambdify(keys, e, modules="numpy")
    out = fn(*arrays)
    return np.broadcast_to(np.asarray(out, dtype=float), np.broadcast_shapes(
        *(np.shape(a) for a in arrays))) if arrays else np.asarray(float(e))


@dataclass(frozen=True)
class Roofline(Rich):
    """The roofline bound of a workload on a chip, at given values of its symbols.

    Times are in seconds. ``time_s`` assumes perfect overlap of memory and compute,
    ``time_serial_s`` none (at most twice ``time_s``). Where symbols remain free, the
    fields are expressions and ``bound`` is None (see ``symroof.regimes``).
    """

    hardware: str
    precision: str
    level: str
    flops: sp.Expr
    bytes: sp.Expr
    intensity: sp.Expr
    peak: sp.Expr                # FLOP/s (in the workload's FLOP convention)
    bandwidth: sp.Expr           # bytes/s of the memory level
    ridge: sp.Expr               # peak / bandwidth, FLOP per byte
    tokens: sp.Expr | None

    @property
    def attainable(self) -> sp.Expr:
        """Attainable FLOP/s: ``min(peak, bandwidth * intensity)``."""
        return sp.Min(self.peak, self.bandwidth * self.intensity)

    @property
    def compute_time_s(self) -> sp.Expr:
        """F / peak: the time at the flat roof."""
        return self.flops / self.peak

    @property
    def memory_time_s(self) -> sp.Expr:
        """Q / bandwidth: the time on the slope."""
        return self.bytes / self.bandwidth

    @property
    def time_s(self) -> sp.Expr:
        """``max(F/peak, Q/bandwidth)``: memory and compute overlap perfectly."""
        return sp.Max(self.compute_time_s, self.memory_time_s)

    @property
    def time_serial_s(self) -> sp.Expr:
        """``F/peak + Q/bandwidth``: no overlap at all."""
        return self.compute_time_s + self.memory_time_s

    @property
    def bound(self) -> str | None:
        """'compute', 'memory' or 'balanced' (exactly at the ridge); None if undecidable."""
        diff = self.intensity - self.ridge
        if diff.free_symbols:
            return None
        return "memory" if diff < 0 else "compute" if diff > 0 else "balanced"

    @property
    def margin(self) -> sp.Expr:
        """How far from the ridge: ridge/I when memory-bound, I/ridge otherwise."""
        return self.ridge / self.intensity if self.bound == "memory" else self.intensity / self.ridge

    @property
    def tokens_per_s(self) -> sp.Expr | None:
        """Tokens per second over all sequences (None for workloads without tokens)."""
        return None if self.tokens is None else self.tokens / self.time_s


def workload_values(workload: Analysis, subs: Mapping[object, object] | None,
                    precision: str) -> dict[sp.Symbol, sp.Expr]:
    """``subs`` checked against a workload's symbols (names it does not use are an error;
    dimensions must be positive integers), with ``b`` from ``precision`` unless given."""
    free = workload.flops.free_symbols | workload.bytes.free_symbols
    if workload.tokens is not None:
        free |= workload.tokens.free_symbols
    names = {s.name for s in free}
    unknown = [k for k in (subs or {}) if isinstance(k, str) and k not in names]
    if unknown:
        raise SymroofError(f"subs: {', '.join(map(repr, unknown))} is not a symbol of "
                           f"{workload.graph.name!r} (its symbols: {', '.join(sorted(names))})")
    values = symbol_map(sp.Add(*free), subs, integers=True)
    if _b in free and _b not in values:
        values[_b] = bytes_per_value(precision)
    return values


def roofline(workload: Analysis, hw: HardwareSpec | str, *, precision: str = "bf16",
             subs: Mapping[object, object] | None = None, unit: str | None = None,
             level: str | None = None) -> Roofline:
    """Bound ``workload`` on chip ``hw`` (a spec or its name) at ``precision``.

    The peak is taken in the workload's FLOP convention (a chip whose vendor counts a
    MAC as 2 FLOPs reports half the rate to a workload that counts MACs once). If the
    workload's bytes per value ``b`` is free and not in ``subs``, it is set from
    ``precision`` (bf16: 2 bytes).
    """
    if not isinstance(workload, Analysis):
        raise SymroofError(f"roofline: expected a workload (Analysis), got {type(workload).__name__}")
    spec = hardware.resolve(hw)
    values = workload_values(workload, subs, precision)
    ops_per_mac = workload.convention.flop_count.ops_per_mac
    peak = spec.peak(precision, unit=unit, ops_per_mac=ops_per_mac)
    bw = spec.bandwidth(level)
    f = evaluate(workload.flops, values)
    q = evaluate(workload.bytes, values)
    if q == 0:
        raise SymroofError(f"roofline: workload {workload.graph.name!r} moves no counted bytes")
    tokens = None if workload.tokens is None else evaluate(workload.tokens, values)
    return Roofline(spec.name, precision, level or spec.main_memory, f, q, sp.cancel(f / q),
                    peak, bw, peak / bw, tokens)


@dataclass(frozen=True)
class Point:
    """A workload at one assignment of its symbols: F, Q, I, and the roofline on a chip."""

    values: Mapping[sp.Symbol, sp.Expr]
    flops: sp.Expr
    bytes: sp.Expr
    intensity: sp.Expr
    roofline: Roofline | None = None


def points(workload: Analysis, rows: Iterable[Mapping[sp.Symbol, sp.Expr]], *,
           hw: HardwareSpec | str | None = None, precision: str = "bf16",
           unit: str | None = None, level: str | None = None) -> Iterator[Point]:
    """``workload`` at each row of values (exact), with its roofline on ``hw`` if given."""
    spec = None if hw is None else hardware.resolve(hw)
    for values in rows:
        r = None if spec is None else roofline(workload, spec, precision=precision,
                                                 subs=values, unit=unit, level=level)
        yield Point(dict(values), evaluate(workload.flops, values),
                    evaluate(workload.bytes, values), evaluate(workload.intensity, values), r)

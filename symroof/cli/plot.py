"""``symroof plot roofline|crossover ... --out FILE.svg|FILE.tex``: charts for people who
would rather look than read.

``plot roofline [WORKLOAD] --hardware CHIP`` draws the chip's roofs (one per memory
level with a bandwidth) and ceilings (matrix and vector units at each ``--precision``),
with one point per ``--set`` row of the workload. ``plot crossover WORKLOAD --lhs A --rhs B
--x X --y Y`` draws the curve along which A = B, Y as a function of X. The output's
suffix picks the format: ``.svg`` or ``.tex`` (a pgfplots picture).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import sympy as sp

from symroof import hardware
from symroof.cli.base import Command, Output
from symroof.cli.common import CLI_NAMES, add_option_flags, build_workload, parse_sets, request_of
from symroof.errors import SymroofError
from symroof.files import write_text
from symroof.hardware import UNITS
from symroof.parse import parse_expr
from symroof.precision import DEFAULT, Numerics
from symroof.present.charts import (CurveChart, RooflineChart, curve_pgfplots, curve_svg,
                                    roofline_pgfplots, roofline_svg)
from symroof.present.commands import at
from symroof.request import points
from symroof.solve import crossover_curve
from symroof.symbols import CANONICAL, b
from symroof.workloads import registry

__all__ = ["COMMANDS"]

_SAMPLES = 48


def _configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("kind", choices=["roofline", "crossover"])
    p.add_argument("workload", nargs="?", default=None, help=", ".join(registry.names()))
    p.add_argument("--out", required=True, help="FILE.svg or FILE.tex")
    p.add_argument("--hardware", default=None, help="roofline: the chip")
    p.add_argument("--precision", default=DEFAULT.value,
                   help="comma-separated precisions for the ceilings; the first sets b")
    p.add_argument("--set", action="append", metavar="NAME=V[,V...]",
                   help="values; each row is a point (roofline) or fixes a symbol (crossover)")
    p.add_argument("--model", default=None, help="model preset or config.json")
    p.add_argument("--lhs", default="Q_kv_cache", help="crossover: left side")
    p.add_argument("--rhs", default="Q_weight", help="crossover: right side")
    p.add_argument("--x", default="B", help="crossover: the variable along the x axis")
    p.add_argument("--y", default="S", help="crossover: the variable solved for")
    p.add_argument("--from", dest="lo", default="1", help="crossover: smallest x")
    p.add_argument("--to", dest="hi", default="512", help="crossover: largest x")
    p.add_argument("--title", default=None)
    add_option_flags(p)  # the workload's options, as derive declares them (the registry's)
    p.add_argument("--json", action="store_true", help="print what was written as JSON")


def _roofline(args: argparse.Namespace) -> RooflineChart:
    if args.hardware is None:
        raise SymroofError("plot roofline: --hardware is required")
    chip = hardware.get(args.hardware)
    precisions = [p.strip() for p in args.precision.split(",") if p.strip()]
    roofs = [(lv.name.upper(), float(lv.bandwidth)) for lv in chip.levels
             if lv.bandwidth is not None]
    ceilings = [(f"{p.precision} {p.unit}", float(chip.peak(p.precision, p.unit)))
                for unit in UNITS for p in chip.peaks if p.unit == unit and p.precision in precisions]
    if not ceilings:
        raise SymroofError(f"--precision: {chip.name} has no peak for {args.precision}; it "
                           f"offers {', '.join(chip.precisions())}")
    placed = []
    if args.workload is not None:  # b at the first precision; the peak of its ceiling
        numerics = Numerics.resolve(precision=precisions[0], names=CLI_NAMES)
        r = request_of(args, numerics=numerics, sets=args.set or [])
        peak, bw = chip.peak(numerics.peak), chip.bandwidth()
        for p in points(r):
            if p.intensity.free_symbols:
                names = ", ".join(sorted(s.name for s in p.intensity.free_symbols))
                raise SymroofError(f"--set: give values for {names} to place a point")
            label = at({k: v for k, v in p.values.items() if k != b}) or args.workload
            placed.append((label, float(p.intensity), float(sp.Min(peak, bw * p.intensity))))
    return RooflineChart(args.title or chip.display_name, roofs, ceilings, placed)


def _crossover(args: argparse.Namespace) -> CurveChart:
    if args.workload is None:
        raise SymroofError("plot crossover: name a workload (e.g. decode --model llama-3-70b)")
    wl = build_workload(args)
    free = wl.flops.free_symbols | wl.bytes.free_symbols
    table: dict[str, sp.Basic] = {**CANONICAL, **{s.name: s for s in free}}
    names = {k: sp.Dummy(k) for k in wl.quantities}
    back = {names[k]: v for k, v in wl.quantities.items()}
    fixed = {k: v[0] for k, v in parse_sets(args.set or [], free).items()}

    def side(text: str, what: str) -> sp.Expr:
        return parse_expr(text, {**table, **names}, what=what).xreplace(back).xreplace(fixed)

    x, y = (table.get(args.x), table.get(args.y))
    if not isinstance(x, sp.Symbol) or not isinstance(y, sp.Symbol):
        raise SymroofError(f"--x/--y: expected symbols of the workload "
                           f"({', '.join(sorted(s.name for s in free))})")
    curves = crossover_curve(side(args.lhs, "--lhs"), side(args.rhs, "--rhs"), x, y)
    if not curves:
        raise SymroofError(f"{args.lhs} = {args.rhs}: no positive {args.y}")
    lo, hi = parse_expr(args.lo, table, what="--from"), parse_expr(args.hi, table, what="--to")
    if not (lo.is_positive and hi.is_positive and hi > lo):
        raise SymroofError("--from/--to: expected 0 < from < to")
    series = []
    for c in curves:
        if c.expr.free_symbols - {x}:
            left = ", ".join(sorted(s.name for s in c.expr.free_symbols - {x}))
            raise SymroofError(f"--set: give values for {left} to draw the curve")
        xs = [lo * (hi / lo) ** sp.Rational(i, _SAMPLES - 1) for i in range(_SAMPLES)]
        series.append((f"{args.lhs} = {args.rhs}", [float(v) for v in xs],
                       [float(c.expr.xreplace({x: v})) for v in xs]))
    return CurveChart(args.title or f"{args.lhs} = {args.rhs}", args.x, args.y, series)


def _run(args: argparse.Namespace, out: Output) -> int:
    path = Path(args.out)
    if path.suffix not in (".svg", ".tex"):
        raise SymroofError(f"--out {args.out!r}: expected a .svg or .tex file")
    svg = path.suffix == ".svg"
    if args.kind == "roofline":
        rc = _roofline(args)
        text = roofline_svg(rc) if svg else roofline_pgfplots(rc)
    else:
        cc = _crossover(args)
        text = curve_svg(cc) if svg else curve_pgfplots(cc)
    write_text(path, text)
    out(f'{{"written": "{path}"}}' if args.json else f"wrote {path}")
    return 0


COMMANDS = (Command("plot", "charts: a chip's roofline with workloads, or a crossover curve",
                    _configure, _run),)

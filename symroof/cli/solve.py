"""``symroof solve limit|crossover``: limits and crossovers of a workload's quantities."""

from __future__ import annotations

import argparse

import sympy as sp

from symroof.cli.common import (Command, Output, add_format, add_workload_options,
                                build_workload, parse_sets)
from symroof.errors import SymroofError
from symroof.evaluate import evaluate
from symroof.parse import parse_expr
from symroof.present.commands import (crossover_doc, crossover_lines, dumps, limit_doc,
                                      limit_lines)
from symroof.solve import crossover, limit
from symroof.symbols import CANONICAL

__all__ = ["COMMANDS"]


def _configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("kind", choices=["limit", "crossover"])
    add_workload_options(p)
    add_format(p)
    p.add_argument("--var", required=True, help="the symbol that varies (B, S, ...)")
    p.add_argument("--of", default="I", help="limit: expression of F, Q, I, F_weights, "
                   "F_attention, Q_weight, Q_kv_cache, ... (default I)")
    p.add_argument("--to", default="oo", choices=["oo", "0"])
    p.add_argument("--lhs", default="F_attention",
                   help="crossover: left side (default F_attention)")
    p.add_argument("--rhs", default="F_weights", help="crossover: right side (default F_weights)")
    p.add_argument("--set", action="append", metavar="NAME=V", help="fix a symbol first")


def _run(args: argparse.Namespace, out: Output) -> int:
    wl = build_workload(args)
    quantities = wl.quantities
    free = wl.flops.free_symbols | wl.bytes.free_symbols
    table: dict[str, sp.Basic] = dict(CANONICAL)
    table.update({x.name: x for x in free})
    var = table.get(args.var)
    if not isinstance(var, sp.Symbol):
        raise SymroofError(f"--var {args.var!r}: expected one of the workload's symbols "
                           f"{', '.join(sorted(x.name for x in wl.intensity.free_symbols))}")
    fixed: dict[sp.Symbol, sp.Expr] = {}
    for k, v in parse_sets(args.set or [], {s for s in table.values()
                                            if isinstance(s, sp.Symbol)}).items():
        if len(v) != 1:
            raise SymroofError(f"--set {k.name}: solve takes one value per symbol, got {len(v)}")
        fixed[k] = v[0]
    names = {name: sp.Dummy(name) for name in quantities}
    back = {names[k]: v for k, v in quantities.items()}

    def expr(source: str, what: str) -> sp.Expr:
        return parse_expr(source, {**table, **names}, what=what).xreplace(back)

    if args.kind == "limit":
        res = limit(expr(args.of, "--of"), var, sp.oo if args.to == "oo" else sp.Integer(0))
        value = evaluate(res, fixed) if fixed else None
        if args.json:
            out(dumps(limit_doc(args.of, args.var, args.to, res, fixed, value)))
        else:
            for line in limit_lines(args.of, args.var, args.to, res, fixed, value, args.format):
                out(line)
        return 0
    lhs, rhs = expr(args.lhs, "--lhs"), expr(args.rhs, "--rhs")
    sols = crossover(lhs.xreplace(fixed), rhs.xreplace(fixed), var)
    if args.json:
        out(dumps(crossover_doc(args.lhs, args.rhs, args.var, fixed, sols)))
        return 0
    for line in crossover_lines(args.lhs, args.rhs, args.var, sols, args.format):
        out(line)
    return 0


COMMANDS = (Command("solve", "limits and crossovers of a workload's quantities", _configure,
                    _run),)

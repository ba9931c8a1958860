"""``symroof solve limit|crossover``: limits and crossovers of a workload's quantities."""

from __future__ import annotations

import argparse

import sympy as sp

from symroof.budget import substitute
from symroof.cli.common import (Command, Output, add_format, add_layout_options,
                                add_workload_options,
                                build_workload, check_format, parse_sets, workload_symbols)
from symroof.errors import SymroofError
from symroof.evaluate import evaluate
from symroof.parse import parse_expr
from symroof.present.commands import (crossover_doc, crossover_lines, dumps, limit_doc,
                                      limit_lines)
from symroof.solve import crossover, limit
from symroof.symbols import CANONICAL

__all__ = ["COMMANDS"]


#: Options of one kind of solve only, with their defaults; given to the other, an error.
_ONLY = {"limit": {"of": "I", "to": "oo"},
         "crossover": {"lhs": "F_attention", "rhs": "F_weights"}}


def _configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("kind", choices=["limit", "crossover"])
    add_workload_options(p)
    add_layout_options(p)   # --expert-reads all|active: a solvable form for a mixture
    add_format(p)
    p.add_argument("--var", required=True, help="the symbol that varies (B, S, ...)")
    p.add_argument("--of", default=None, help="limit: expression of F, Q, I, F_weights, "
                   "F_attention, Q_weight, Q_kv_cache, ... (default I)")
    p.add_argument("--to", default=None, choices=["oo", "0"], help="limit: oo (default) or 0")
    p.add_argument("--lhs", default=None,
                   help="crossover: left side (default F_attention)")
    p.add_argument("--rhs", default=None, help="crossover: right side (default F_weights)")
    p.add_argument("--set", action="append", metavar="NAME=V", help="fix a symbol first")


def _options(args: argparse.Namespace) -> dict[str, str]:
    """This kind's options with their defaults; the other kind's, if given, are errors."""
    for kind, opts in _ONLY.items():
        for name in opts:
            if kind != args.kind and getattr(args, name) is not None:
                raise SymroofError(f"--{name}: only 'solve {kind}' uses it, not "
                                   f"'solve {args.kind}'")
    return {k: v if getattr(args, k) is None else getattr(args, k)
            for k, v in _ONLY[args.kind].items()}


def _run(args: argparse.Namespace, out: Output) -> int:
    fmt = check_format(args)
    opts = _options(args)
    wl = build_workload(args)
    quantities = wl.quantities
    free = workload_symbols(wl)
    table: dict[str, sp.Basic] = dict(CANONICAL)
    table.update({x.name: x for x in free})
    names = {name: sp.Dummy(name) for name in quantities}
    back = {names[k]: v for k, v in quantities.items()}

    def expr(flag: str) -> sp.Expr:
        return parse_expr(opts[flag], {**table, **names}, what=f"--{flag}").xreplace(back)

    exprs = {flag: expr(flag) for flag in opts if flag != "to"}
    used = set(free).union(*(e.free_symbols for e in exprs.values()))
    var = table.get(args.var)
    if not isinstance(var, sp.Symbol) or var not in used:
        raise SymroofError(f"--var {args.var!r}: expected one of the symbols of workload "
                           f"{args.workload!r} ({', '.join(sorted(x.name for x in used))})")
    fixed: dict[sp.Symbol, sp.Expr] = {}
    for k, v in parse_sets(args.set or [], used, workload=args.workload).items():
        if len(v) != 1:
            raise SymroofError(f"--set {k.name}: solve takes one value per symbol, got {len(v)}")
        fixed[k] = v[0]
    if var in fixed:
        raise SymroofError(f"--var {var.name}: {var.name} is substituted away by --set "
                           f"{var.name}={fixed[var]}; solve for another symbol or drop the --set")
    if args.kind == "limit":
        to = opts["to"]
        res = limit(exprs["of"], var, sp.oo if to == "oo" else sp.Integer(0))
        value = evaluate(res, fixed) if fixed else None
        if args.json:
            out(dumps(limit_doc(opts["of"], args.var, to, res, fixed, value)))
        else:
            for line in limit_lines(opts["of"], args.var, to, res, fixed, value, fmt):
                out(line)
        return 0
    lhs, rhs = (substitute(exprs[k], fixed, f"--{k}") for k in ("lhs", "rhs"))
    sols = crossover(lhs, rhs, var)
    if args.json:
        out(dumps(crossover_doc(opts["lhs"], opts["rhs"], args.var, fixed, sols)))
        return 0
    for line in crossover_lines(opts["lhs"], opts["rhs"], args.var, sols, fmt):
        out(line)
    return 0


COMMANDS = (Command("solve", "limits and crossovers of a workload's quantities", _configure,
                    _run),)

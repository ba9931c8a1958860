"""The ``symroof`` command: thin argument parsing over the library.

Every command takes ``--json``. Bad input prints one line ``symroof: error: ...`` to
stderr and exits 2, never a traceback.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import NoReturn

import sympy as sp

from symroof.analysis import Analysis
from symroof.errors import SymroofError

__all__ = ["main", "build_parser"]


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, exit 2
        where = self.prog.removeprefix("symroof").strip()
        raise SymroofError(f"{where}: {message}" if where else message)


# -- workloads the CLI can build ------------------------------------------------

def _workload_builders() -> dict[str, tuple[str, Callable[[argparse.Namespace], object]]]:
    from symroof import symbols as s
    from symroof import workloads as w

    builders: dict[str, tuple[str, Callable[[argparse.Namespace], object]]] = {
        "gemm": ("C[M,N] = A[M,K] @ B[K,N]", lambda a: w.gemm(s.M, s.N, s.K, flops=a.flops)),
        "gemv": ("y[N] = W[N,K] @ x[K] (GEMM with M = 1)",
                 lambda a: w.gemv(s.N, s.K, flops=a.flops)),
        "elementwise": ("n outputs at --flops-per-element each (ReLU: 1)",
                        lambda a: w.elementwise(s.n, flops_per_element=a.flops_per_element)),
        "conv2d": ("convolution via im2col (--lowering explicit|implicit); symbols "
                   "N C H W K R S_f", lambda a: w.conv2d(
                       s.N, s.C, s.H, s.dim("W"), s.K, (s.dim("R"), s.dim("S_f")),
                       lowering=a.lowering, flops=a.flops)),
    }
    from symroof.workloads import transformer as t

    def model(a: argparse.Namespace) -> object:
        from symroof.models import resolve, transformer
        if a.model is None:  # the seeds' symbolic model
            return transformer(name="symbolic", layers=s.L, d_model=s.D, heads=s.H)
        return resolve(a.model)

    builders.update({
        "attention": ("one attention layer's core over S tokens (--unfused to materialize "
                      "the S x S matrices)", lambda a: w.attention(
                          s.S, s.D, s.H, fused=a.unfused is None,
                          unfused=a.unfused or "write_and_read")),
        "prefill": ("forward over B x S prompt tokens (--model)",
                    lambda a: t.prefill(model(a), s.B, s.S, flops=a.flops)),
        "decode": ("one decode step: B sequences attending to S positions (--model)",
                   lambda a: t.decode(model(a), s.B, s.S, flops=a.flops)),
        "training": ("one training step over B x S tokens (--model)",
                     lambda a: t.training(model(a), s.B, s.S, flops=a.flops)),
    })
    return builders


def _build(args: argparse.Namespace) -> Analysis:
    """The workload named on the command line (unknown names suggest close ones)."""
    from symroof.errors import suggest

    builders = _workload_builders()
    if args.workload not in builders:
        raise SymroofError(f"unknown workload {args.workload!r}; expected one of "
                           f"{', '.join(sorted(builders))}{suggest(args.workload, builders)}")
    return builders[args.workload][1](args)  # type: ignore[return-value]


# -- formatting ------------------------------------------------------------------

def _json_number(x: sp.Expr | None) -> object:
    if x is None:
        return None
    if x.free_symbols:
        return str(x)
    if x.is_Integer:
        return int(x)
    return float(x)


def _text_number(x: sp.Expr) -> str:
    if x.free_symbols:
        return str(x)
    if x.is_Integer and abs(x) < 10**6:
        return str(int(x))
    v = float(x)
    return f"{v:.6g}" if abs(v) < 1e6 else f"{v:.4e}"


def _check_value(sym: sp.Symbol, value: sp.Expr) -> None:
    """A value must fit the symbol's assumptions (dimensions are positive integers)."""
    from symroof.ir import as_dim

    if value.free_symbols:
        return
    if sym.is_integer:
        as_dim(value, f"--set {sym.name}")
    elif sym.is_positive and not value.is_positive:
        raise SymroofError(f"--set {sym.name}: expected a positive number, got {value}")


def _rows(subs: Mapping[sp.Symbol, Sequence[sp.Expr]]) -> list[dict[sp.Symbol, sp.Expr]]:
    keys = list(subs)
    return [dict(zip(keys, combo)) for combo in itertools.product(*(subs[k] for k in keys))]


def _parse_sets(items: Sequence[str], free: set[sp.Symbol]) -> dict[sp.Symbol, tuple[sp.Expr, ...]]:
    from symroof.parse import parse_assignments
    from symroof.symbols import CANONICAL

    table = dict(CANONICAL)
    table.update({x.name: x for x in free})
    return parse_assignments(items, table)


# -- commands ----------------------------------------------------------------------

def _derive(args: argparse.Namespace, out: Callable[[str], None]) -> int:
    from symroof.evaluate import evaluate, roofline
    from symroof.precision import bytes_per_value
    from symroof.symbols import b

    wl = _build(args)
    free = wl.flops.free_symbols | wl.bytes.free_symbols
    sets = _parse_sets(args.set or [], free)
    for sym, values in sets.items():
        for v in values:
            _check_value(sym, v)
    precision = args.precision or ("bf16" if args.command == "eval" else None)
    if precision and b not in sets:
        sets[b] = (bytes_per_value(precision),)
    hw = None
    if args.command == "eval":
        from symroof import hardware
        hw = hardware.get(args.hardware)
    rows: list[dict[str, object]] = []
    for values in _rows(sets):
        row: dict[str, object] = {
            "subs": {k.name: _json_number(v) for k, v in values.items()},
            "flops": evaluate(wl.flops, values), "bytes": evaluate(wl.bytes, values),
            "intensity": evaluate(wl.intensity, values)}
        if hw is not None:
            r = roofline(wl, hw, precision=precision or "bf16", subs=values,
                         unit=args.unit, level=args.level)
            row["roofline"] = r
        rows.append(row)
    if args.json:
        doc = {"workload": args.workload, "convention": wl.convention.describe(),
               "flops": str(wl.flops), "bytes": str(wl.bytes),
               "intensity": str(wl.intensity), "rows": []}
        for row in rows:
            item = {"subs": row["subs"], **{k: _json_number(row[k])
                                            for k in ("flops", "bytes", "intensity")}}
            if "roofline" in row:
                item.update(row["roofline"].as_dict())
            doc["rows"].append(item)
        out(json.dumps(doc, indent=1, sort_keys=True))
        return 0
    out(f"{args.workload}  ({wl.convention.describe()})")
    out(f"  F = {wl.flops}")
    out(f"  Q = {sp.factor_terms(wl.bytes)}")
    out(f"  I = {wl.intensity}")
    for row in rows:
        if row["subs"]:
            at = " ".join(f"{k}={v}" for k, v in row["subs"].items())
            out(f"  at {at}: F = {_text_number(row['flops'])} FLOP, "
                f"Q = {_text_number(row['bytes'])} B, I = {_text_number(row['intensity'])} FLOP/B")
        if "roofline" in row:
            r = row["roofline"]
            out(f"    on {r.hardware} ({r.precision}, {r.level}): ridge {_text_number(r.ridge)} FLOP/B, "
                f"{r.bound or 'bound depends on free symbols'}; time {_text_number(r.time_s)} s "
                f"(no overlap {_text_number(r.time_serial_s)} s), "
                f"attainable {_text_number(r.attainable)} FLOP/s")
    return 0


def _quantities(wl: object) -> dict[str, sp.Expr]:
    """Names a --lhs/--rhs expression may use for the workload's quantities."""
    from symroof.analysis import Analysis

    assert isinstance(wl, Analysis)
    q: dict[str, sp.Expr] = {"F": wl.flops, "Q": wl.bytes, "I": wl.intensity,
                             "F_weights": wl.flops_by_operand["weight"],
                             "F_attention": wl.flops_by_operand["activation"]}
    for kind, value in wl.bytes_by_kind.items():
        q[f"Q_{kind.value}"] = value
    return q


def _solve(args: argparse.Namespace, out: Callable[[str], None]) -> int:
    from symroof.display import text
    from symroof.evaluate import evaluate
    from symroof.parse import parse_expr
    from symroof.solve import crossover, limit
    from symroof.symbols import CANONICAL

    wl = _build(args)
    quantities = _quantities(wl)
    table: dict[str, sp.Basic] = dict(CANONICAL)
    table.update({x.name: x for x in wl.flops.free_symbols | wl.bytes.free_symbols})  # type: ignore[attr-defined]
    if args.var not in table or not isinstance(table[args.var], sp.Symbol):
        raise SymroofError(f"--var {args.var!r}: expected one of the workload's symbols "
                           f"{', '.join(sorted(x.name for x in wl.intensity.free_symbols))}")  # type: ignore[attr-defined]
    var = table[args.var]
    fixed: dict[sp.Symbol, sp.Expr] = {}
    for k, v in _parse_sets(args.set or [], set(
            s_ for s_ in table.values() if isinstance(s_, sp.Symbol))).items():
        if len(v) != 1:
            raise SymroofError(f"--set {k.name}: solve takes one value per symbol, got {len(v)}")
        _check_value(k, v[0])
        fixed[k] = v[0]
    names = {name: sp.Dummy(name) for name in quantities}
    subs_q = {names[k]: v for k, v in quantities.items()}

    def expr(text_: str, what: str) -> sp.Expr:
        e = parse_expr(text_, {**table, **names}, what=what)
        return e.xreplace(subs_q)

    if args.kind == "limit":
        target = expr(args.of, "--of")
        res = limit(target, var, sp.oo if args.to == "oo" else sp.Integer(0))
        doc: dict[str, object] = {"kind": "limit", "of": args.of, "var": args.var, "to": args.to,
                                  "result": str(res), "display": text(res)}
        if fixed:
            doc["subs"] = {k.name: _json_number(v) for k, v in fixed.items()}
            doc["value"] = _json_number(evaluate(res, fixed))
        if args.json:
            out(json.dumps(doc, indent=1, sort_keys=True))
        else:
            out(f"lim {args.var}->{args.to} of {args.of} = {text(res)}")
            if "value" in doc:
                out(f"  at {' '.join(f'{k}={v}' for k, v in doc['subs'].items())}: "  # type: ignore[union-attr]
                    f"{_text_number(evaluate(res, fixed))}")
        return 0
    lhs, rhs = expr(args.lhs, "--lhs"), expr(args.rhs, "--rhs")
    sols = crossover(lhs.xreplace(fixed), rhs.xreplace(fixed), var)
    items = [{"value": str(c.value), "display": text(c.value),
              "conditions": [str(x) for x in c.conditions],
              "number": _json_number(c.value) if not c.value.free_symbols else None}
             for c in sols]
    if args.json:
        out(json.dumps({"kind": "crossover", "lhs": args.lhs, "rhs": args.rhs,
                        "var": args.var, "subs": {k.name: _json_number(v) for k, v in fixed.items()},
                        "solutions": items}, indent=1, sort_keys=True))
        return 0
    if not sols:
        out(f"{args.lhs} = {args.rhs}: no positive {args.var}")
    for c in sols:
        cond = f"  (when {' and '.join(str(x) for x in c.conditions)})" if c.conditions else ""
        num = "" if c.value.free_symbols or _text_number(c.value) == text(c.value) \
            else f" = {_text_number(c.value)}"
        out(f"{args.lhs} = {args.rhs} at {args.var} = {text(c.value)}{num}{cond}")
    return 0


def _hardware(args: argparse.Namespace, out: Callable[[str], None]) -> int:
    from symroof import hardware

    if args.action == "list":
        names = hardware.names()
        if args.json:
            out(json.dumps({"hardware": list(names)}, indent=1))
        else:
            for name in names:
                out(f"{name:16s} {hardware.get(name).display_name}")
        return 0
    if not args.name:
        raise SymroofError("hardware show: expected a chip name (see 'symroof hardware list')")
    spec = hardware.get(args.name)
    out(json.dumps(spec.to_dict(), indent=1, sort_keys=True) if args.json else spec.describe())
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (also used to document the CLI)."""
    p = _Parser(prog="symroof", description="Closed-form roofline formulas for NN workloads.")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for name, help_ in (("derive", "formulas F, Q, I (and values at --set points)"),
                        ("eval", "derive plus roofline time and bound on --hardware")):
        c = sub.add_parser(name, help=help_)
        c.add_argument("workload", help="gemm, gemv, elementwise, conv2d, ...")
        c.add_argument("--set", action="append", metavar="NAME=V[,V...]",
                       help="value(s) of a symbol; several values make several rows")
        c.add_argument("--precision", default=None, help="sets b (bytes per value); "
                       "for eval also the peak (default bf16)")
        c.add_argument("--flops", default="two_per_mac",
                       choices=["two_per_mac", "one_per_mac", "exact"], help="MAC convention")
        c.add_argument("--flops-per-element", type=int, default=1)
        c.add_argument("--lowering", default="explicit", choices=["explicit", "implicit"])
        c.add_argument("--model", default=None, help="model preset or config.json "
                       "(default: the seeds' symbolic model L, D, H)")
        c.add_argument("--unfused", default=None,
                       choices=["write_and_read", "materialize_once"],
                       help="attention: how the S x S matrices cross memory when unfused")
        c.add_argument("--json", action="store_true")
        if name == "eval":
            c.add_argument("--hardware", required=True)
            c.add_argument("--unit", default=None, choices=["matrix", "vector"])
            c.add_argument("--level", default=None, help="memory level (default: main memory)")
    sv = sub.add_parser("solve", help="limits and crossovers of a workload's quantities")
    sv.add_argument("kind", choices=["limit", "crossover"])
    sv.add_argument("workload")
    sv.add_argument("--var", required=True, help="the symbol that varies (B, S, ...)")
    sv.add_argument("--of", default="I", help="limit: expression of F, Q, I, F_weights, "
                    "F_attention, Q_weight, Q_kv_cache, ... (default I)")
    sv.add_argument("--to", default="oo", choices=["oo", "0"])
    sv.add_argument("--lhs", default="F_attention", help="crossover: left side (default F_attention)")
    sv.add_argument("--rhs", default="F_weights", help="crossover: right side (default F_weights)")
    sv.add_argument("--set", action="append", metavar="NAME=V", help="fix a symbol first")
    sv.add_argument("--model", default=None)
    sv.add_argument("--flops", default="two_per_mac",
                    choices=["two_per_mac", "one_per_mac", "exact"])
    sv.add_argument("--unfused", default=None, choices=["write_and_read", "materialize_once"])
    sv.add_argument("--flops-per-element", type=int, default=1)
    sv.add_argument("--lowering", default="explicit", choices=["explicit", "implicit"])
    sv.add_argument("--json", action="store_true")
    h = sub.add_parser("hardware", help="list or show chip specs")
    h.add_argument("action", choices=["list", "show"])
    h.add_argument("name", nargs="?")
    h.add_argument("--json", action="store_true")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit code (0 ok, 2 bad input)."""
    out = print
    try:
        args = build_parser().parse_args(argv)
        if args.command in ("derive", "eval"):
            return _derive(args, out)
        if args.command == "solve":
            return _solve(args, out)
        return _hardware(args, out)
    except SymroofError as exc:  # one line, whatever the input held
        line = str(exc).replace("\r", "\\r").replace("\n", "\\n")
        print(f"symroof: error: {line[:2000]}", file=sys.stderr)
        return 2
    except SystemExit as exc:  # --help
        return int(exc.code or 0) if not isinstance(exc.code, str) else 2


if __name__ == "__main__":
    sys.exit(main())

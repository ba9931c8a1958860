"""``symroof derive`` (formulas F, Q, I and values) and ``symroof eval`` (plus the roofline)."""

from __future__ import annotations

import argparse

from symroof import hardware
from symroof.cli.common import (Command, Output, add_format, add_workload_options,
                                build_workload, parse_sets, rows)
from symroof.evaluate import points
from symroof.hardware import UNITS
from symroof.precision import bytes_per_value
from symroof.present.commands import derive_json, derive_lines, dumps
from symroof.symbols import b

__all__ = ["COMMANDS"]


def _configure(p: argparse.ArgumentParser, with_hardware: bool) -> None:
    add_workload_options(p)
    add_format(p)
    p.add_argument("--set", action="append", metavar="NAME=V[,V...]",
                   help="value(s) of a symbol; several values make several rows")
    p.add_argument("--precision", default=None,
                   help="sets b (bytes per value); for eval also the peak (default bf16)")
    if with_hardware:
        p.add_argument("--hardware", required=True, help="a chip name (symroof hardware list)")
        p.add_argument("--unit", default=None, choices=list(UNITS))
        p.add_argument("--level", default=None, help="memory level (default: main memory)")


def _run(args: argparse.Namespace, out: Output) -> int:
    wl = build_workload(args)
    sets = parse_sets(args.set or [], wl.flops.free_symbols | wl.bytes.free_symbols)
    evaluating = args.command == "eval"
    precision = args.precision or ("bf16" if evaluating else None)
    if precision and b not in sets:
        sets[b] = (bytes_per_value(precision),)
    hw = hardware.get(args.hardware) if evaluating else None
    # every row is evaluated before anything is printed, so a bad row prints nothing else
    found = list(points(wl, rows(sets), hw=hw, precision=precision or "bf16",
                        unit=getattr(args, "unit", None), level=getattr(args, "level", None)))
    if args.json:
        out(dumps(derive_json(args.workload, wl, found)))
        return 0
    for line in derive_lines(args.workload, wl, found, args.format):
        out(line)
    return 0


COMMANDS = (
    Command("derive", "formulas F, Q, I (and values at --set points)",
            lambda p: _configure(p, False), _run),
    Command("eval", "derive plus roofline time and bound on --hardware",
            lambda p: _configure(p, True), _run),
)

"""``symroof derive`` (formulas F, Q, I and values) and ``symroof eval`` (plus the roofline)."""

from __future__ import annotations

import argparse

from symroof import hardware
from symroof.cli.common import (Command, Output, add_format, add_workload_options,
                                build_workload, check_format, parse_sets, rows,
                                workload_symbols)
from symroof.evaluate import points, workload_values
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
    fmt = check_format(args)
    wl = build_workload(args)
    free = workload_symbols(wl)
    sets = parse_sets(args.set or [], free, workload=args.workload)
    evaluating = args.command == "eval"
    precision = args.precision or ("bf16" if evaluating else None)
    if precision and b in free and b not in sets:
        sets[b] = (bytes_per_value(precision),)
    hw = hardware.get(args.hardware) if evaluating else None
    if hw is not None:  # the chip's figures, once, before any row
        hw.peak(precision or "bf16", unit=args.unit,
                ops_per_mac=wl.convention.flop_count.ops_per_mac)
        hw.bandwidth(args.level)
    for row in rows(sets):  # every row's values are checked before anything is written
        workload_values(wl, row, precision or "bf16")
    # then rows are made, evaluated and written one at a time
    found = points(wl, rows(sets), hw=hw, precision=precision or "bf16",
                   unit=getattr(args, "unit", None), level=getattr(args, "level", None))
    if args.json:  # one JSON document: its rows are held until the last one is made
        out(dumps(derive_json(args.workload, wl, found)))
        return 0
    for line in derive_lines(args.workload, wl, found, fmt):
        out(line)
    return 0


COMMANDS = (
    Command("derive", "formulas F, Q, I (and values at --set points)",
            lambda p: _configure(p, False), _run),
    Command("eval", "derive plus roofline time and bound on --hardware",
            lambda p: _configure(p, True), _run),
)

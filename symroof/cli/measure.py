"""``symroof measure machine|gemm|decode|prefill``: the machine at hand, and measured times
beside their roofline bounds.

- ``machine [--out FILE.toml]``: GEMM peaks per precision and STREAM bandwidth; the chip
  file it writes works with ``--hardware FILE.toml`` everywhere.
- ``gemm --set M=1,2,...,4096 --set N=4096 --set K=4096 [--hardware CHIP|FILE.toml]``:
  exercise A (without ``--hardware`` the machine is measured first), with ``--chart F.svg``.
- ``decode|prefill --model config.json --set B=1,8 --set S=128,1024``: exercise B.4 on a
  tiny random-weight model (PyTorch and transformers from the ``oracle`` extra); S is the
  past length for decode and the prompt length for prefill.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import sympy as sp

from symroof.budget import check_rows
from symroof.cli.base import Command, Output
from symroof.cli.common import parse_sets
from symroof.errors import SymroofError
from symroof.files import write_text
from symroof.measure import (Machine, measure_decode, measure_gemm, measure_machine, measure_prefill,
                             write_chip_file)
from symroof.measure.chipfile import check_chip_path
from symroof.measure.kernels import check_gemm_shape
from symroof.measure.limits import ITEMSIZE, MAX_REPS
from symroof.present.charts import roofline_pgfplots, roofline_svg
from symroof.present.commands import dumps
from symroof.present.measure import gemm_chart, gemm_lines, machine_lines, model_lines
from symroof.symbols import B, K, M, N, S

__all__ = ["COMMANDS"]


def _configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("what", choices=["machine", "gemm", "decode", "prefill"])
    p.add_argument("--out", default=None, help="machine: write the chip file (FILE.toml)")
    p.add_argument("--force", action="store_true",
                   help="overwrite an existing --out (machine) or --chart (gemm) file")
    p.add_argument("--hardware", default=None,
                   help="the chip the bounds use: a name or FILE.toml (default: measure this one)")
    p.add_argument("--set", action="append", metavar="NAME=V[,V...]",
                   help="gemm: M, N, K; decode/prefill: B and S")
    p.add_argument("--precision", default="fp32", help="fp64, fp32 or bf16 (default fp32)")
    p.add_argument("--model", default=None, help="decode/prefill: a config.json")
    p.add_argument("--cold", action="store_true", help="gemm: flush caches between repetitions")
    p.add_argument("--reps", type=int, default=5,
                   help=f"repetitions, at most {MAX_REPS} (the best one counts)")
    p.add_argument("--chart", default=None, help="gemm: also draw FILE.svg or FILE.tex")
    p.add_argument("--json", action="store_true", help="the records as JSON")


def _ints(values: tuple[sp.Expr, ...], name: str) -> list[int]:
    return [int(v) for v in values]


def _target(args: argparse.Namespace) -> Machine | str:
    """The chip the bounds use: ``--hardware``, or this machine measured now."""
    if args.hardware:
        return str(args.hardware)
    return measure_machine(reps=args.reps, precisions=[args.precision])


def _check_args(args: argparse.Namespace) -> None:
    """Everything the command line asks for, checked before anything is measured: the
    repetitions, the options the measurement takes, and the files it will write."""
    if not 1 <= args.reps <= MAX_REPS:
        raise SymroofError(f"--reps: expected an integer from 1 to {MAX_REPS}, got {args.reps}")
    takes = {"out": ("machine",), "chart": ("gemm",), "cold": ("gemm",),
             "model": ("decode", "prefill"), "set": ("gemm", "decode", "prefill")}
    for attr, whats in takes.items():
        if getattr(args, attr) and args.what not in whats:
            raise SymroofError(f"--{attr}: measure {args.what} does not use it (only measure "
                               f"{' and '.join(whats)})")
    if args.out:
        check_chip_path(args.out, overwrite=args.force, flag="--force")
    if args.chart:
        if not args.chart.endswith((".svg", ".tex")):
            raise SymroofError(f"--chart {args.chart}: expected a FILE.svg or FILE.tex")
        chart = Path(args.chart)
        if chart.is_dir():
            raise SymroofError(f"--chart {args.chart}: a folder, not a file")
        if (chart.exists() or chart.is_symlink()) and not args.force:
            raise SymroofError(f"--chart {args.chart}: file exists; pass --force to replace it")


def _run(args: argparse.Namespace, out: Output) -> int:
    _check_args(args)
    if args.what == "machine":
        machine = measure_machine(reps=args.reps)
        if args.out:
            write_chip_file(machine, Path(args.out), overwrite=args.force)
        if args.json:
            out(dumps(machine.as_dict()))
        else:
            for line in machine_lines(machine):
                out(line)
            if args.out:
                out(f"wrote {args.out} (use it with --hardware {args.out})")
        return 0
    if args.what == "gemm":
        sets = parse_sets(args.set or [], {M, N, K})
        if set(sets) - {M, N, K}:
            raise SymroofError("--set: measure gemm takes M, N and K")
        ms, ns, ks = (_ints(sets.get(s, (sp.Integer(1024),)), s.name) for s in (M, N, K))
        check_rows([("M", len(ms)), ("N", len(ns)), ("K", len(ks))], "--set")
        shapes = [(m, n, k) for n in ns for k in ks for m in ms]
        for shape in shapes:  # every operand fits before the machine is measured
            check_gemm_shape(*shape, args.precision if args.precision in ITEMSIZE else "fp64")
        hw = _target(args)
        sweep = measure_gemm(shapes, hw, precision=args.precision, reps=args.reps,
                             flush_cache=args.cold)
        if args.chart:
            chart = gemm_chart(sweep)
            text = roofline_svg(chart) if args.chart.endswith(".svg") else roofline_pgfplots(chart)
            write_text(args.chart, text)
        if args.json:
            out(dumps(sweep.as_dict()))
        else:
            for line in gemm_lines(sweep):
                out(line)
        return 0
    if args.model is None:
        raise SymroofError(f"measure {args.what}: --model config.json is required")
    sets = parse_sets(args.set or [], {B, S})
    batches = _ints(sets.get(B, (sp.Integer(1), sp.Integer(8))), "B")
    lengths = _ints(sets.get(S, (sp.Integer(128),)), "S")
    check_rows([("B", len(batches)), ("S", len(lengths))], "--set")
    hw = _target(args)
    if args.what == "decode":
        run = measure_decode(args.model, hw, batches=batches, pasts=lengths,
                             precision=args.precision, reps=args.reps)
    else:
        run = measure_prefill(args.model, hw, batches=batches, seqs=lengths,
                              precision=args.precision, reps=args.reps)
    if args.json:
        out(dumps(run.as_dict()))
    else:
        for line in model_lines(run):
            out(line)
    return 0


COMMANDS = (Command("measure", "the machine at hand, and measured times beside their bounds",
                    _configure, _run),)

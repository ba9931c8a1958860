"""``symroof memory`` (what each device holds while serving) and ``symroof capacity`` (how
many sequences fit), both from the sharded decode graph of a model."""

from __future__ import annotations

import argparse

from symroof.cli.base import Command, Output
from symroof.cli.common import (DEFAULT_PRECISION, add_layout_options, add_model_options,
                                check_precision, layout_of, model_of, number_arg, parse_sets,
                                rows)
from symroof.cli.derive import resolve_chip
from symroof.errors import SymroofError
from symroof.evaluate import roofline
from symroof.models import TransformerModel
from symroof.precision import bytes_per_value
from symroof.present.commands import capacity_doc, capacity_lines, dumps, memory_doc, memory_lines
from symroof.present.records import to_text
from symroof.serving import max_sequences
from symroof.symbols import B, S, b
from symroof.workloads import decode
from symroof.workloads.parallel import check_layout

__all__ = ["COMMANDS"]


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", required=True, help="model preset (any case), config.json or "
                   "a folder holding one")
    p.add_argument("--hardware", required=True, help="a chip name or a chip file .toml")
    add_layout_options(p)
    add_model_options(p)
    p.add_argument("--precision", default=None,
                   help=f"bytes per value of every tensor kind not given (default "
                   f"{DEFAULT_PRECISION})")
    p.add_argument("--reserve", default=None, help="share of each device's memory kept back "
                   "(runtime, activations, fragmentation; default 0, vLLM keeps 0.1)")
    p.add_argument("--json", action="store_true", help="machine-readable output")


def _configure_memory(p: argparse.ArgumentParser) -> None:
    _common(p)
    p.add_argument("--set", action="append", metavar="NAME=V[,V...]",
                   help="B (sequences) and S (context); several values make several rows")


def _configure_capacity(p: argparse.ArgumentParser) -> None:
    _common(p)
    p.add_argument("--context", required=True, metavar="S[,S...]",
                   help="positions per sequence (8k is 8000, 8Ki 8192); several make rows")


def _setup(args: argparse.Namespace) -> tuple[TransformerModel, str, dict[str, object]]:
    check_precision(args)
    m = model_of(args)
    lay = layout_of(args)
    check_layout(m, tp=lay["tp"], pp=lay["pp"], microbatches=lay["microbatches"],
                 names=("--tp", "--pp", "--microbatches"))
    return m, args.precision or DEFAULT_PRECISION, lay


def _run_memory(args: argparse.Namespace, out: Output) -> int:
    m, precision, lay = _setup(args)
    hw = resolve_chip(args)
    wl = decode(m, B, S, **lay)  # type: ignore[arg-type]
    free = wl.flops.free_symbols | wl.bytes.free_symbols
    sets = parse_sets(args.set or [], {x for x in free if x in (B, S)} | {B, S},
                      workload="memory")
    fill = {b: bytes_per_value(precision)} if b in free else {}
    reserve = number_arg(args.reserve, "--reserve", 0)
    found = [(row, roofline(wl, hw, precision=precision, subs={**row, **fill}, reserve=reserve))
             for row in rows(sets)]
    if args.json:
        out(dumps(memory_doc(to_text(m), found)))
        return 0
    for line in memory_lines(to_text(m), found):
        out(line)
    return 0


def _run_capacity(args: argparse.Namespace, out: Output) -> int:
    m, precision, lay = _setup(args)
    hw = resolve_chip(args)
    if lay["microbatches"] != 1:
        raise SymroofError("--microbatches: capacity counts sequences, not micro-batches")
    contexts = parse_sets([f"S={args.context}"], {S}, workload="--context")[S]
    reserve = number_arg(args.reserve, "--reserve", 0)
    found = [max_sequences(m, hw, context=c, tp=lay["tp"], pp=lay["pp"], reserve=reserve,
                           precision=precision) for c in contexts]
    pairs = list(zip(contexts, found))
    if args.json:
        out(dumps(capacity_doc(to_text(m), hw.name, pairs)))
        return 0
    for line in capacity_lines(to_text(m), hw.name, pairs):
        out(line)
    return 0


COMMANDS = (
    Command("memory", "what each device holds serving B sequences at context S, and the fit",
            _configure_memory, _run_memory),
    Command("capacity", "how many sequences of a context fit beside the weights",
            _configure_capacity, _run_capacity),
)

"""What every command shares: the workload table, options declared once, ``--set`` rows.

Choices come from the option enums, so the CLI and the library cannot disagree.
"""

from __future__ import annotations

import argparse
import itertools
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

import sympy as sp

from symroof import symbols as s
from symroof.analysis import Analysis
from symroof.budget import check_expr, check_rows
from symroof.cli.base import Command, Output, Parser
from symroof.errors import SymroofError, suggest
from symroof.ir import as_dim
from symroof.models import TransformerModel, resolve, transformer
from symroof.options import FlopCount, Lowering, Unfused
from symroof.parse import parse_assignments
from symroof.symbols import CANONICAL
from symroof.workloads import attention, conv2d, decode, elementwise, gemm, gemv, prefill, training

__all__ = ["Parser", "Command", "Output", "WORKLOADS", "build_workload", "add_workload_options",
           "add_format", "check_format", "choices", "given", "parse_sets", "rows",
           "workload_symbols"]  # Parser, Command, Output: from base

#: The options that shape a workload, as (attribute, flag); each workload takes some.
SHAPING = (("model", "--model"), ("flop_count", "--flop-count"),
           ("flops_per_element", "--flops-per-element"), ("lowering", "--lowering"),
           ("unfused", "--unfused"))

def choices(enum: type[StrEnum]) -> list[str]:
    """The string values of an option enum, for ``choices=``."""
    return [m.value for m in enum]


def _model(a: argparse.Namespace) -> TransformerModel:
    if a.model is None:  # the seeds' symbolic model
        return transformer(name="symbolic", layers=s.L, d_model=s.D, heads=s.H)
    return resolve(a.model)


@dataclass(frozen=True)
class WorkloadEntry:
    """A workload the CLI can build: what it is, how from the parsed options, and which
    of the shaping options (:data:`SHAPING`) it takes (any other given is an error)."""

    help: str
    build: Callable[[argparse.Namespace], Analysis]
    options: frozenset[str] = frozenset({"flop_count"})


def _flops(a: argparse.Namespace) -> FlopCount | str:
    return a.flop_count or FlopCount.TWO_PER_MAC


class _DefaultStr(str):
    """A default argparse filled in: equal to the value, but told apart from a given one."""


class _DefaultInt(int):
    """A default argparse filled in (an int)."""


def given(args: argparse.Namespace, attr: str) -> bool:
    """Whether the user gave option ``attr`` (not None, not a filled-in default)."""
    value = getattr(args, attr, None)
    return value is not None and not isinstance(value, (_DefaultStr, _DefaultInt))


_LM = frozenset({"model", "flop_count"})

#: The workloads, by name; each uses the canonical symbols (set them with --set).
WORKLOADS: Mapping[str, WorkloadEntry] = {
    "gemm": WorkloadEntry("C[M,N] = A[M,K] @ B[K,N]",
                          lambda a: gemm(s.M, s.N, s.K, flop_count=_flops(a))),
    "gemv": WorkloadEntry("y[N] = W[N,K] @ x[K] (GEMM with M = 1)",
                          lambda a: gemv(s.N, s.K, flop_count=_flops(a))),
    "elementwise": WorkloadEntry(
        "n outputs at --flops-per-element each (ReLU: 1)",
        lambda a: elementwise(s.n, flops_per_element=a.flops_per_element),
        frozenset({"flops_per_element"})),
    "conv2d": WorkloadEntry(
        "convolution via im2col (--lowering explicit|implicit); symbols N C H W K R S_f",
        lambda a: conv2d(s.N, s.C, s.H, s.dim("W"), s.K, (s.dim("R"), s.dim("S_f")),
                         lowering=a.lowering or Lowering.EXPLICIT, flop_count=_flops(a)),
        frozenset({"flop_count", "lowering"})),
    "attention": WorkloadEntry(
        "one attention layer's core over S tokens (--unfused to materialize the S x S matrices)",
        lambda a: attention(s.S, s.D, s.H, fused=a.unfused is None,
                            unfused=a.unfused or Unfused.WRITE_AND_READ,
                            flop_count=_flops(a)),
        frozenset({"flop_count", "unfused"})),
    "prefill": WorkloadEntry("forward over B x S prompt tokens (--model)",
                             lambda a: prefill(_model(a), s.B, s.S, flop_count=_flops(a)), _LM),
    "decode": WorkloadEntry("one decode step: B sequences attending to S positions (--model)",
                            lambda a: decode(_model(a), s.B, s.S, flop_count=_flops(a)), _LM),
    "training": WorkloadEntry("one training step over B x S tokens (--model)",
                              lambda a: training(_model(a), s.B, s.S, flop_count=_flops(a)),
                              _LM),
}


def build_workload(args: argparse.Namespace) -> Analysis:
    """The workload named on the command line (unknown names suggest close ones); a
    shaping option the workload does not take is an error, never ignored."""
    entry = WORKLOADS.get(args.workload)
    if entry is None:
        raise SymroofError(f"unknown workload {args.workload!r}; expected one of "
                           f"{', '.join(sorted(WORKLOADS))}{suggest(args.workload, WORKLOADS)}")
    for attr, flag in SHAPING:
        if given(args, attr) and attr not in entry.options:
            takes = ", ".join(f for a, f in SHAPING if a in entry.options) or "none"
            raise SymroofError(f"{flag}: workload {args.workload!r} does not use it "
                               f"(its options: {takes})")
    return entry.build(args)


def workload_symbols(wl: Analysis) -> set[sp.Symbol]:
    """The symbols a workload's F, Q and tokens use: the names ``--set`` may give."""
    free = wl.flops.free_symbols | wl.bytes.free_symbols
    if wl.tokens is not None:
        free |= wl.tokens.free_symbols
    return {x for x in free if isinstance(x, sp.Symbol)}


def _per_element(text: str) -> int:
    try:
        value = int(text) if len(text) <= 20 else -1
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a non-negative integer, got {text!r}")
    return value


def add_workload_options(p: argparse.ArgumentParser) -> None:
    """The workload and the options that shape it (declared once for every command)."""
    p.add_argument("workload", help=", ".join(WORKLOADS))
    p.add_argument("--model", default=None, help="model preset or config.json "
                   "(default: the seeds' symbolic model L, D, H)")
    p.add_argument("--flop-count", "--flops", dest="flop_count",
                   default=_DefaultStr(FlopCount.TWO_PER_MAC.value), choices=choices(FlopCount),
                   help="how a multiply-accumulate counts (default two_per_mac)")
    p.add_argument("--flops-per-element", type=_per_element, default=_DefaultInt(1),
                   help="elementwise: FLOPs per output value (default 1)")
    p.add_argument("--lowering", default=_DefaultStr(Lowering.EXPLICIT.value),
                   choices=choices(Lowering), help="conv2d: how im2col is done (default explicit)")
    p.add_argument("--unfused", default=None, choices=choices(Unfused),
                   help="attention: how the S x S matrices cross memory when unfused")
    p.add_argument("--json", action="store_true", help="machine-readable output")


def add_format(p: argparse.ArgumentParser) -> None:
    """``--format text|latex|markdown`` for formulas."""
    p.add_argument("--format", default=_DefaultStr("text"), choices=["text", "latex", "markdown"],
                   help="how formulas are written (default text; not with --json)")


def check_format(args: argparse.Namespace) -> str:
    """The formula format; ``--format`` with ``--json`` is an error (JSON formulas are
    SymPy syntax), never ignored."""
    if args.json and given(args, "format"):
        raise SymroofError(f"--format {args.format}: --json writes formulas in SymPy "
                           "syntax; give one of --format and --json")
    return str(args.format)


def parse_sets(items: Sequence[str], free: set[sp.Symbol], *,
               workload: str = "the workload") -> dict[sp.Symbol, tuple[sp.Expr, ...]]:
    """``--set NAME=V[,V...]`` values, each checked against its symbol's assumptions; a
    name of no symbol in ``free`` is an error naming those the workload uses."""
    table: dict[str, sp.Basic] = dict(CANONICAL)
    table.update({x.name: x for x in free})
    sets = parse_assignments(items, table, what="--set")
    used = ", ".join(sorted(x.name for x in free)) or "none"
    for sym, values in sets.items():
        if sym not in free:
            raise SymroofError(f"--set {sym.name}: {workload} does not use {sym.name} "
                               f"(its symbols: {used})")
        for v in values:
            _check_value(sym, v)
    return sets


def _check_value(sym: sp.Symbol, value: sp.Expr) -> None:
    """A value must fit the symbol's assumptions (dimensions are positive integers) and,
    if it is an expression, the size and degree limits."""
    if value.free_symbols:
        check_expr(value, f"--set {sym.name}")
        return
    if sym.is_integer:
        as_dim(value, f"--set {sym.name}")
    elif sym.is_positive and not value.is_positive:
        raise SymroofError(f"--set {sym.name}: expected a positive number, got {value}")


def rows(sets: Mapping[sp.Symbol, Sequence[sp.Expr]]) -> Iterator[dict[sp.Symbol, sp.Expr]]:
    """One assignment per combination of the values, in the order given, made one at a
    time; their number is checked against the rows limit before the first is made."""
    keys = list(sets)
    check_rows([(k.name, len(sets[k])) for k in keys], "--set")
    return (dict(zip(keys, combo)) for combo in itertools.product(*(sets[k] for k in keys)))

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
from symroof.cli.base import Command, Output, Parser
from symroof.errors import SymroofError, suggest
from symroof.ir import as_dim
from symroof.models import TransformerModel, resolve, transformer
from symroof.options import FlopCount, Lowering, Unfused
from symroof.parse import parse_assignments
from symroof.symbols import CANONICAL
from symroof.workloads import attention, conv2d, decode, elementwise, gemm, gemv, prefill, training

__all__ = ["Parser", "Command", "Output", "WORKLOADS", "build_workload", "add_workload_options",
           "add_format", "choices", "parse_sets", "rows"]  # Parser, Command, Output: from base

def choices(enum: type[StrEnum]) -> list[str]:
    """The string values of an option enum, for ``choices=``."""
    return [m.value for m in enum]


def _model(a: argparse.Namespace) -> TransformerModel:
    if a.model is None:  # the seeds' symbolic model
        return transformer(name="symbolic", layers=s.L, d_model=s.D, heads=s.H)
    return resolve(a.model)


@dataclass(frozen=True)
class WorkloadEntry:
    """A workload the CLI can build: what it is, and how from the parsed options."""

    help: str
    build: Callable[[argparse.Namespace], Analysis]


#: The workloads, by name; each uses the canonical symbols (set them with --set).
WORKLOADS: Mapping[str, WorkloadEntry] = {
    "gemm": WorkloadEntry("C[M,N] = A[M,K] @ B[K,N]",
                          lambda a: gemm(s.M, s.N, s.K, flop_count=a.flop_count)),
    "gemv": WorkloadEntry("y[N] = W[N,K] @ x[K] (GEMM with M = 1)",
                          lambda a: gemv(s.N, s.K, flop_count=a.flop_count)),
    "elementwise": WorkloadEntry("n outputs at --flops-per-element each (ReLU: 1)",
                                 lambda a: elementwise(s.n, flops_per_element=a.flops_per_element)),
    "conv2d": WorkloadEntry(
        "convolution via im2col (--lowering explicit|implicit); symbols N C H W K R S_f",
        lambda a: conv2d(s.N, s.C, s.H, s.dim("W"), s.K, (s.dim("R"), s.dim("S_f")),
                         lowering=a.lowering, flop_count=a.flop_count)),
    "attention": WorkloadEntry(
        "one attention layer's core over S tokens (--unfused to materialize the S x S matrices)",
        lambda a: attention(s.S, s.D, s.H, fused=a.unfused is None,
                            unfused=a.unfused or Unfused.WRITE_AND_READ,
                            flop_count=a.flop_count)),
    "prefill": WorkloadEntry("forward over B x S prompt tokens (--model)",
                             lambda a: prefill(_model(a), s.B, s.S, flop_count=a.flop_count)),
    "decode": WorkloadEntry("one decode step: B sequences attending to S positions (--model)",
                            lambda a: decode(_model(a), s.B, s.S, flop_count=a.flop_count)),
    "training": WorkloadEntry("one training step over B x S tokens (--model)",
                              lambda a: training(_model(a), s.B, s.S, flop_count=a.flop_count)),
}


def build_workload(args: argparse.Namespace) -> Analysis:
    """The workload named on the command line (unknown names suggest close ones)."""
    entry = WORKLOADS.get(args.workload)
    if entry is None:
        raise SymroofError(f"unknown workload {args.workload!r}; expected one of "
                           f"{', '.join(sorted(WORKLOADS))}{suggest(args.workload, WORKLOADS)}")
    return entry.build(args)


def add_workload_options(p: argparse.ArgumentParser) -> None:
    """The workload and the options that shape it (declared once for every command)."""
    p.add_argument("workload", help=", ".join(WORKLOADS))
    p.add_argument("--model", default=None, help="model preset or config.json "
                   "(default: the seeds' symbolic model L, D, H)")
    p.add_argument("--flop-count", "--flops", dest="flop_count", default=FlopCount.TWO_PER_MAC,
                   choices=choices(FlopCount), help="how a multiply-accumulate counts")
    p.add_argument("--flops-per-element", type=int, default=1,
                   help="elementwise: FLOPs per output value")
    p.add_argument("--lowering", default=Lowering.EXPLICIT, choices=choices(Lowering),
                   help="conv2d: how im2col is done")
    p.add_argument("--unfused", default=None, choices=choices(Unfused),
                   help="attention: how the S x S matrices cross memory when unfused")
    p.add_argument("--json", action="store_true", help="machine-readable output")


def add_format(p: argparse.ArgumentParser) -> None:
    """``--format text|latex|markdown`` for formulas."""
    p.add_argument("--format", default="text", choices=["text", "latex", "markdown"],
                   help="how formulas are written (default text)")


def parse_sets(items: Sequence[str], free: set[sp.Symbol]) -> dict[sp.Symbol, tuple[sp.Expr, ...]]:
    """``--set NAME=V[,V...]`` values, each checked against its symbol's assumptions."""
    table: dict[str, sp.Basic] = dict(CANONICAL)
    table.update({x.name: x for x in free})
    sets = parse_assignments(items, table)
    for sym, values in sets.items():
        for v in values:
            _check_value(sym, v)
    return sets


def _check_value(sym: sp.Symbol, value: sp.Expr) -> None:
    """A value must fit the symbol's assumptions (dimensions are positive integers)."""
    if value.free_symbols:
        return
    if sym.is_integer:
        as_dim(value, f"--set {sym.name}")
    elif sym.is_positive and not value.is_positive:
        raise SymroofError(f"--set {sym.name}: expected a positive number, got {value}")


def rows(sets: Mapping[sp.Symbol, Sequence[sp.Expr]]) -> Iterator[dict[sp.Symbol, sp.Expr]]:
    """One assignment per combination of the values, in the order given."""
    keys = list(sets)
    for combo in itertools.product(*(sets[k] for k in keys)):
        yield dict(zip(keys, combo))

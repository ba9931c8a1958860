"""What every command shares: the workload table, options declared once, ``--set`` rows.

Choices come from the option enums, so the CLI and the library cannot disagree.
"""

from __future__ import annotations

import argparse
import itertools
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

import sympy as sp

from symroof import symbols as s
from symroof.analysis import Analysis
from symroof.budget import check_expr, check_rows
from symroof.cli.base import Command, Output, Parser
from symroof.errors import SymroofError, suggest
from symroof.ir import as_dim, as_expr
from symroof.models import TransformerModel, names, resolve, transformer
from symroof.options import ExpertReads, FlopCount, Lowering, Unfused
from symroof.parse import parse_assignments, parse_expr
from symroof.precision import BYTES
from symroof.symbols import CANONICAL
from symroof.workloads import attention, conv2d, decode, elementwise, gemm, gemv, prefill, training
from symroof.workloads.parallel import check_layout

__all__ = ["Parser", "Command", "Output", "WORKLOADS", "build_workload", "add_workload_options",
           "add_format", "check_format", "choices", "given", "parse_sets", "rows",
           "workload_symbols", "add_model_options", "add_layout_options", "load_model",
           "peak_precision", "DEFAULT_PRECISION", "model_of", "layout_of", "number_arg", "check_precision"]  # Parser, Command, Output: from base

#: The precision of ``b`` and of the peak when none is given, in derive and eval alike.
DEFAULT_PRECISION = "bf16"

#: The options that shape a workload, as (attribute, flag); each workload takes some.
SHAPING = (("model", "--model"), ("flop_count", "--flop-count"),
           ("flops_per_element", "--flops-per-element"), ("lowering", "--lowering"),
           ("unfused", "--unfused"), ("tp", "--tp"), ("pp", "--pp"),
           ("microbatches", "--microbatches"), ("expert_reads", "--expert-reads"),
           ("weights", "--weights"), ("kv_cache", "--kv-cache"),
           ("activations", "--activations"))

#: Per-kind number formats: (attribute, flag, what they set).
KINDS = (("weights", "--weights", "weights"), ("kv_cache", "--kv-cache", "the KV cache"),
         ("activations", "--activations", "activations and the compute peak"))

def choices(enum: type[StrEnum]) -> list[str]:
    """The string values of an option enum, for ``choices=``."""
    return [m.value for m in enum]


def load_model(spec: str | None) -> TransformerModel:
    """A model from ``--model``: a preset name in any case, a config.json, or a folder
    holding one; None is the seeds' symbolic model (L, D, H)."""
    if spec is None:
        return transformer(name="symbolic", layers=s.L, d_model=s.D, heads=s.H)
    if os.path.isdir(spec):
        path = os.path.join(spec, "config.json")
        if not os.path.isfile(path):
            raise SymroofError(f"--model {spec}: a folder, but it holds no config.json")
        return resolve(path)
    lower = {n.lower(): n for n in names()}
    return resolve(lower.get(spec.lower(), spec) if not spec.endswith(".json") else spec)


def model_of(a: argparse.Namespace) -> TransformerModel:
    """The model on the command line, with ``--weights/--kv-cache/--activations``."""
    m = load_model(a.model)
    kinds = {attr: getattr(a, attr, None) for attr, _, _ in KINDS}
    if not any(kinds.values()):
        return m
    fill = getattr(a, "precision", None) or DEFAULT_PRECISION
    return m.with_precision(**{k: v or fill for k, v in kinds.items()})


def check_precision(a: argparse.Namespace) -> None:
    """``--precision``, if given, is a known format (the per-kind options are checked by
    their ``choices``)."""
    value = getattr(a, "precision", None)
    if value is not None and value not in BYTES:
        raise SymroofError(f"--precision {value}: unknown precision {value!r}; expected one "
                           f"of {', '.join(BYTES)}{suggest(value, BYTES)}")


def peak_precision(a: argparse.Namespace) -> tuple[str, str]:
    """The precision of the compute peak and the option that set it: ``--activations``
    (INT4 weight-only computes at the activations' 16 bits), else ``--precision``, else
    the default."""
    if getattr(a, "activations", None):
        return a.activations, "--activations"
    if getattr(a, "precision", None):
        return a.precision, "--precision"
    return DEFAULT_PRECISION, "--precision"


def layout_of(a: argparse.Namespace) -> dict[str, object]:
    """``tp``, ``pp``, ``microbatches`` and ``expert_reads`` as given (defaults for a
    command that does not offer them)."""
    return {"tp": getattr(a, "tp", None) or 1, "pp": getattr(a, "pp", None) or 1,
            "microbatches": getattr(a, "microbatches", None) or 1,
            "expert_reads": getattr(a, "expert_reads", None) or ExpertReads.ALL}


def _lm(builder: Callable[..., Analysis]) -> Callable[[argparse.Namespace], Analysis]:
    """A transformer workload over the model and layout on the command line."""
    def build(a: argparse.Namespace) -> Analysis:
        m = model_of(a)
        lay = layout_of(a)
        check_layout(m, tp=lay["tp"], pp=lay["pp"], microbatches=lay["microbatches"],
                     names=("--tp", "--pp", "--microbatches"))
        return builder(m, s.B, s.S, flop_count=_flops(a), **lay)
    return build


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
_SERVE = _LM | {"tp", "pp", "microbatches", "expert_reads", "weights", "kv_cache", "activations"}

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
    "prefill": WorkloadEntry("forward over B x S prompt tokens (--model)", _lm(prefill),
                             _SERVE),
    "decode": WorkloadEntry("one decode step: B sequences attending to S positions (--model)",
                            _lm(decode), _SERVE),
    "training": WorkloadEntry("one training step over B x S tokens (--model)",
                              lambda a: training(model_of(a), s.B, s.S, flop_count=_flops(a)),
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


def number_arg(text: str | None, flag: str, default: object) -> sp.Expr:
    """A number typed for an option (the safe parser; no symbols); ``default`` if absent."""
    if text is None:
        return as_expr(default, flag)
    value = parse_expr(text, {})
    if value.free_symbols or not value.is_number:
        raise SymroofError(f"{flag} {text}: expected a number")
    return value


def _positive(text: str) -> int:
    try:
        value = int(text) if len(text) <= 12 else 0
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def add_model_options(p: argparse.ArgumentParser) -> None:
    """``--weights``, ``--kv-cache``, ``--activations``: a number format per tensor kind."""
    for attr, flag, what in KINDS:
        p.add_argument(flag, dest=attr, default=None, choices=list(BYTES),
                       help=f"number format of {what} (default: --precision, else "
                       f"{DEFAULT_PRECISION}); int4 weights are 4-bit bytes, 16-bit compute")


def add_layout_options(p: argparse.ArgumentParser) -> None:
    """``--tp``, ``--pp``, ``--microbatches``, ``--expert-reads``: how a model is served."""
    p.add_argument("--tp", type=_positive, default=None,
                   help="tensor-parallel devices (default 1): must divide the heads")
    p.add_argument("--pp", type=_positive, default=None,
                   help="pipeline stages (default 1): at most the layers")
    p.add_argument("--microbatches", type=_positive, default=None,
                   help="micro-batches per step with --pp (default 1)")
    p.add_argument("--expert-reads", dest="expert_reads", default=None,
                   choices=choices(ExpertReads),
                   help="routed experts whose weights a step reads (default all; expected: "
                   "E(1 - (1 - k/E)^tokens) under uniform routing)")


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

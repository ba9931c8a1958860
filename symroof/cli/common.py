"""What every command shares: options declared once from the workload registry, and the
parser from the command line into a :class:`~symroof.request.Request`.

Flags and choices come from :mod:`symroof.workloads.registry` (each workload's options are
its builder's keyword-only parameters) and the number formats from
:class:`~symroof.precision.Precision`, so the CLI and the library cannot disagree.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator, Mapping, Sequence
from enum import StrEnum
from typing import Any

import sympy as sp

from symroof.analysis import Analysis
from symroof.cli.base import Command, Output, Parser
from symroof.errors import SymroofError
from symroof.evaluate import workload_symbols as _symbols
from symroof.ir import as_expr
from symroof.models import TransformerModel
from symroof.options import ExpertReads
from symroof.parse import parse_expr
from symroof.precision import DEFAULT, PRECISIONS, Numerics
from symroof.evaluate import product
from symroof.request import Request, analysis, load_model, make, refuse_unused
from symroof.request import model as _model
from symroof.request import parse_sets as _parse_sets
from symroof.workloads import registry

__all__ = ["Parser", "Command", "Output", "CLI_NAMES", "build_workload", "add_workload_options",
           "add_option_flags", "add_format", "check_format", "choices", "given", "parse_sets",
           "rows", "workload_symbols", "add_model_options", "add_layout_options", "load_model",
           "numerics_of", "request_of", "number_arg", "model_of"]  # Parser, Command, Output: from base

#: Per-kind number formats: (attribute, flag, what they set).
KINDS = (("weights", "--weights", "weights"), ("kv_cache", "--kv-cache", "the KV cache"),
         ("activations", "--activations", "activations and the compute peak"))

_LAYOUT_FLAGS = {"tp": "--tp", "pp": "--pp", "microbatches": "--microbatches",
                 "expert_reads": "--expert-reads"}

#: How the command line spells each field of a request, for its errors.
CLI_NAMES: Mapping[str, str] = {
    "sets": "--set", "chip": "--hardware", "model": "--model", "precision": "--precision",
    "level": "--level", "workload": "workload", "prompt": "--prompt", "draft": "--draft",
    **_LAYOUT_FLAGS,
    **{attr: flag for attr, flag, _ in KINDS},
    **{name: opt.flag for name, opt in registry.all_options().items()}}


def choices(enum: type[StrEnum]) -> list[str]:
    """The string values of an option enum, for ``choices=``."""
    return [m.value for m in enum]


def given(args: argparse.Namespace, attr: str) -> bool:
    """Whether the user gave option ``attr`` (not None, not False, not a filled-in
    default)."""
    value = getattr(args, attr, None)
    return value is not None and value is not False and not isinstance(value, _DefaultStr)


class _DefaultStr(str):
    """A default argparse filled in: equal to the value, but told apart from a given one."""


def _per_element(text: str) -> int:
    try:
        value = int(text) if len(text) <= 20 else -1
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a non-negative integer, got {text!r}")
    return value


def _flaggable() -> dict[str, registry.Option]:
    """The options the command line offers: each of the registry's, except those another
    implies (``--unfused MODE`` makes attention unfused)."""
    implied = {other for other, _ in registry.IMPLIES.values()}
    return {n: o for n, o in registry.all_options().items() if n not in implied}


def add_option_flags(p: argparse.ArgumentParser) -> None:
    """A flag per workload option of the registry, with its choices (None: not given,
    the builder's default)."""
    aliases: dict[str, list[str]] = {}
    for entry in registry.ENTRIES.values():
        for old, new in entry.aliases.items():
            alias = "--" + old.replace("_", "-")
            if alias not in aliases.setdefault(new, []):
                aliases[new].append(alias)
    for name, opt in _flaggable().items():
        takers = ", ".join(registry.takers(name))
        flags = [opt.flag, *aliases.get(name, [])]
        if opt.kind is bool:
            p.add_argument(*flags, dest=name, action="store_true",
                           help=f"{opt.help} ({takers})")
        elif opt.kind is int:
            p.add_argument(*flags, dest=name, type=_per_element, default=None,
                           help=f"{takers}: {opt.help} (default {opt.default})")
        else:
            p.add_argument(*flags, dest=name, default=None, choices=list(opt.choices or ()),
                           help=f"{opt.help} ({takers}; default {opt.default})")


def add_workload_options(p: argparse.ArgumentParser) -> None:
    """The workload and the options that shape it (declared once for every command)."""
    p.add_argument("workload", help=", ".join(registry.names()))
    p.add_argument("--model", default=None, help="model preset or config.json "
                   "(default: the seeds' symbolic model L, D, H)")
    add_option_flags(p)
    p.add_argument("--json", action="store_true", help="machine-readable output")


def add_model_options(p: argparse.ArgumentParser) -> None:
    """``--weights``, ``--kv-cache``, ``--activations``: a number format per tensor kind."""
    for attr, flag, what in KINDS:
        p.add_argument(flag, dest=attr, default=None, choices=list(PRECISIONS),
                       help=f"number format of {what} (default: --precision, else "
                       f"{DEFAULT}); int4 weights are 4-bit bytes, 16-bit compute")


def _positive(text: str) -> int:
    try:
        value = int(text) if len(text) <= 12 else 0
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


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
                   help="routed experts whose weights a step reads (default expected: "
                   "E(1 - (1 - k/E)^tokens) under uniform routing; all: an upper bound; "
                   "active: k per step; routed: min(E, tokens k))")


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


def number_arg(text: str | None, flag: str, default: object) -> sp.Expr:
    """A number typed for an option (the safe parser; no symbols); ``default`` if absent."""
    if text is None:
        return as_expr(default, flag)
    value = parse_expr(text, {})
    if value.free_symbols or not value.is_number:
        raise SymroofError(f"{flag} {text}: expected a number")
    return value


# -- the command line into a request --------------------------------------------------


def numerics_of(args: argparse.Namespace) -> Numerics:
    """``--precision``, ``--weights``, ``--kv-cache``, ``--activations``, resolved by the
    one rule (:meth:`Numerics.resolve`)."""
    precision = getattr(args, "precision", None)
    if isinstance(precision, list):  # atlas and plot list several: the first sets b
        precision = precision[0] if precision else None
    return Numerics.resolve(precision=precision, weights=getattr(args, "weights", None),
                            kv_cache=getattr(args, "kv_cache", None),
                            activations=getattr(args, "activations", None), names=CLI_NAMES)


def request_of(args: argparse.Namespace, *, numerics: Numerics | None = None,
               sets: Sequence[str] | None = None, chip: bool = False,
               efficiency: object = 1, reserve: object = 0, **extras: Any) -> Request:
    """The command line's request: the workload with the options given (one the workload
    does not take is an error naming its flag), model, layout, formats, ``--set`` rows
    and, with ``chip``, ``--hardware`` and its level, unit and link."""
    entry = registry.get(args.workload)
    fields = [*_flaggable(), "model", *_LAYOUT_FLAGS, *(a for a, _, _ in KINDS)]
    refuse_unused(entry, [f for f in fields if given(args, f)], CLI_NAMES)
    options = {n: getattr(args, n) for n in entry.options if given(args, n)}
    layout = {k: getattr(args, k) for k in _LAYOUT_FLAGS if given(args, k)}
    return make(args.workload, options=options, model=getattr(args, "model", None),
                numerics=numerics if numerics is not None else numerics_of(args),
                sets=sets or None, chip=args.hardware if chip else None,
                unit=getattr(args, "unit", None) if chip else None,
                level=getattr(args, "level", None) if chip else None,
                link=getattr(args, "link", None) if chip else None,
                efficiency=efficiency, reserve=reserve, names=CLI_NAMES, **layout, **extras)


def build_workload(args: argparse.Namespace) -> Analysis:
    """The workload named on the command line (unknown names suggest close ones); a
    shaping option the workload does not take is an error, never ignored."""
    return analysis(request_of(args))


def workload_symbols(wl: Analysis) -> set[sp.Symbol]:
    """The symbols a workload's F, Q and tokens use: the names ``--set`` may give."""
    return set(_symbols(wl))


def parse_sets(items: Sequence[str], free: set[sp.Symbol], *,
               workload: str = "the workload") -> dict[sp.Symbol, tuple[sp.Expr, ...]]:
    """``--set NAME=V[,V...]`` values, each checked against its symbol's assumptions (the
    one rule, :func:`symroof.request.check_sets`); a name of no symbol in ``free`` is an
    error naming those the workload uses."""
    return _parse_sets(items, free, what="--set", workload=workload)


def rows(sets: Mapping[sp.Symbol, Sequence[sp.Expr]]) -> Iterator[dict[sp.Symbol, sp.Expr]]:
    """One assignment per combination of the values, in the order given, made one at a
    time; their number is checked against the rows limit before the first is made."""
    return product(sets, "--set")


def model_of(request: Request) -> TransformerModel:
    """The request's model (its workload takes one)."""
    m = _model(request)
    if m is None:
        raise SymroofError(f"workload {request.workload!r} takes no model")
    return m

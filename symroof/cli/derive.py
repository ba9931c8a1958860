"""``symroof derive`` (formulas F, Q, I and values) and ``symroof eval`` (plus the roofline,
and for decode and prefill the serving figures: latency, tokens/s, memory per device)."""

from __future__ import annotations

import argparse
from typing import Any

from symroof import hardware
from symroof.cli.common import (Command, Output, add_format, add_layout_options,
                                add_model_options, add_workload_options, check_format,
                                number_arg, numerics_of, request_of)
from symroof.errors import SymroofError
# tests/robustness/test_hardening.py traps this name ("a row's check"); the rows' values are
# checked once, by the request (symroof.request), before any row is made
from symroof.evaluate import workload_values  # noqa: F401
from symroof.hardware import UNITS, HardwareSpec
from symroof.parse import parse_assignment
from symroof.precision import DEFAULT
from symroof.present.commands import derive_json, derive_lines, dumps
from symroof.request import MANY_ROWS, Draft, analysis, points, row_count, served
from symroof.symbols import CANONICAL

__all__ = ["COMMANDS", "COMPILED_ROWS", "resolve_chip"]

#: From this many rows, text output uses the compiled float64 path (it compiles once first,
#: which only pays off over many rows); --exact and --json keep exact rationals.
COMPILED_ROWS = MANY_ROWS


def _configure(p: argparse.ArgumentParser, with_hardware: bool) -> None:
    add_workload_options(p)
    add_layout_options(p)
    add_model_options(p)
    add_format(p)
    p.add_argument("--set", action="append", metavar="NAME=V[,V...]",
                   help="value(s) of a symbol; several values make several rows (8k is "
                   "8000, 8Ki 8192; each row shows the values as read)")
    p.add_argument("--precision", default=None,
                   help=f"bytes per value b at --set points and the peak, in derive and eval "
                   f"alike (default {DEFAULT}; formulas keep b)")
    p.add_argument("--exact", action="store_true",
                   help=f"evaluate every row exactly (rationals); by default text output of "
                   f"{COMPILED_ROWS} rows or more uses the compiled float64 path (to 1e-12)")
    if not with_hardware:
        return
    p.add_argument("--hardware", required=True,
                   help="a chip name (symroof hardware list, any case) or a chip file .toml")
    p.add_argument("--unit", default=None, choices=list(UNITS))
    p.add_argument("--level", default=None, help="memory level (default: main memory)")
    p.add_argument("--link", default=None,
                   help="interconnect for --tp/--pp traffic (default: the fastest)")
    p.add_argument("--collective", default="ring", choices=["ring", "tree", "full"],
                   help="how --tp collectives travel (default ring; tree: NCCL's all-reduce "
                   "tree; full: each device sends the full payload)")
    p.add_argument("--latency", action=argparse.BooleanOptionalAction, default=True,
                   help="add each collective's latency from the chip file's link (NCCL's "
                   "alpha-beta model) to the bandwidth term (default on; --no-latency: "
                   "the bandwidth term alone)")
    p.add_argument("--efficiency", default=None,
                   help="achieved fraction of the bound for latency and tokens/s (default 1; "
                   "seed 001: real systems reach 0.6-0.75)")
    p.add_argument("--reserve", default=None,
                   help="share of each device's memory kept back when judging the fit "
                   "(default 0; vLLM keeps 0.1)")
    p.add_argument("--prompt", default=None,
                   help="decode: time to first token for prompts of this many tokens")
    p.add_argument("--draft", default=None, help="decode: a draft model for speculative "
                   "decoding (with --draft-tokens and --acceptance)")
    p.add_argument("--draft-tokens", dest="draft_tokens", default=None,
                   help="tokens the draft proposes per round")
    p.add_argument("--acceptance", default=None,
                   help="probability that each drafted token is accepted")
    p.add_argument("--draft-tp", dest="draft_tp", default=None,
                   help="tensor-parallel devices of the draft model (default 1)")


def resolve_chip(args: argparse.Namespace) -> HardwareSpec:
    """``--hardware``: a shipped chip's name (any case) or a chip file."""
    return hardware.resolve(args.hardware)


def _extras(args: argparse.Namespace) -> dict[str, Any]:
    """``--prompt`` and ``--draft`` (with ``--draft-tokens``, ``--acceptance`` and
    ``--draft-tp``) as the request's ``prompt`` and ``draft``; the request refuses them
    for a workload other than decode."""
    for attr, flag in (("draft_tokens", "--draft-tokens"), ("acceptance", "--acceptance"),
                       ("draft_tp", "--draft-tp")):
        if getattr(args, attr, None) is not None and args.workload != "decode":
            raise SymroofError(f"{flag}: only for decode (workload {args.workload!r})")
    trio = [getattr(args, a, None) is not None for a in ("draft", "draft_tokens", "acceptance")]
    if any(trio) and not all(trio):
        raise SymroofError("--draft, --draft-tokens and --acceptance go together")
    out: dict[str, Any] = {}
    if getattr(args, "prompt", None) is not None:
        prompt = parse_assignment(f"S={args.prompt}", CANONICAL, what="--prompt")[1]
        if len(prompt) != 1:
            raise SymroofError(f"--prompt {args.prompt}: expected one number of tokens")
        out["prompt"] = prompt[0]
    if getattr(args, "draft", None) is not None:
        out["draft"] = Draft(args.draft, number_arg(args.draft_tokens, "--draft-tokens", 1),
                             number_arg(args.acceptance, "--acceptance", 0),
                             number_arg(args.draft_tp, "--draft-tp", 1))
    return out


def _run(args: argparse.Namespace, out: Output) -> int:
    fmt = check_format(args)
    evaluating = args.command == "eval"
    numerics = numerics_of(args)
    extras = _extras(args) if evaluating else {}
    r = request_of(args, numerics=numerics, sets=args.set or [], chip=evaluating,
                   efficiency=number_arg(getattr(args, "efficiency", None), "--efficiency", 1),
                   reserve=number_arg(getattr(args, "reserve", None), "--reserve", 0),
                   **({"collective": args.collective, "latency": args.latency}
                      if evaluating else {}), **extras)
    wl = analysis(r)
    # text output of many rows takes the compiled path; --exact and --json keep exact
    # rationals; rows are made, evaluated and written one at a time
    many = row_count(r) >= COMPILED_ROWS
    found = served(r, points(r, compiled=many and not args.exact and not args.json))
    if args.json:  # one JSON document: its rows are held until the last one is made
        out(dumps(derive_json(args.workload, wl, found, request=r)))
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

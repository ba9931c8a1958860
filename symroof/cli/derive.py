"""``symroof derive`` (formulas F, Q, I and values) and ``symroof eval`` (plus the roofline,
and for decode and prefill the serving figures: latency, tokens/s, memory per device)."""

from __future__ import annotations

import argparse
from collections.abc import Iterator

from symroof import hardware
from symroof.cli.common import (Command, Output, add_format, add_layout_options,
                                add_model_options, add_workload_options, check_format,
                                load_model, model_of, number_arg, numerics_of, parse_sets,
                                request_of)
from symroof.errors import SymroofError
from symroof.evaluate import Point, roofline
# tests/robustness/test_hardening.py traps this name ("a row's check"); the rows' values are
# checked once, by the request (symroof.request), before any row is made
from symroof.evaluate import workload_values  # noqa: F401
from symroof.hardware import UNITS, HardwareSpec
from symroof.models import TransformerModel
from symroof.options import Logits
from symroof.precision import DEFAULT, Numerics
from symroof.present.commands import ServingRow, derive_json, derive_lines, dumps
from symroof.request import MANY_ROWS, Request, analysis, points, row_count, spec
from symroof.serving import Speculation, speculative
from symroof.symbols import B, S, b
from symroof.workloads import prefill

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


def _extras_only_for_decode(args: argparse.Namespace) -> None:
    for attr, flag in (("prompt", "--prompt"), ("draft", "--draft"),
                       ("draft_tokens", "--draft-tokens"), ("acceptance", "--acceptance"),
                       ("draft_tp", "--draft-tp")):
        if getattr(args, attr, None) is not None and args.workload != "decode":
            raise SymroofError(f"{flag}: only for decode (workload {args.workload!r})")
    spec = [getattr(args, a, None) is not None for a in ("draft", "draft_tokens", "acceptance")]
    if any(spec) and not all(spec):
        raise SymroofError("--draft, --draft-tokens and --acceptance go together")


def _run(args: argparse.Namespace, out: Output) -> int:
    fmt = check_format(args)
    evaluating = args.command == "eval"
    numerics = numerics_of(args)
    if evaluating:
        _extras_only_for_decode(args)
    r = request_of(args, numerics=numerics, sets=args.set or [], chip=evaluating,
                   efficiency=number_arg(getattr(args, "efficiency", None), "--efficiency", 1),
                   reserve=number_arg(getattr(args, "reserve", None), "--reserve", 0))
    wl = analysis(r)
    # text output of many rows takes the compiled path; --exact and --json keep exact
    # rationals; rows are made, evaluated and written one at a time
    many = row_count(r) >= COMPILED_ROWS
    found = points(r, compiled=many and not args.exact and not args.json)
    served = _served(args, r, found) if r.chip is not None else found
    if args.json:  # one JSON document: its rows are held until the last one is made
        out(dumps(derive_json(args.workload, wl, served, request=r)))
        return 0
    for line in derive_lines(args.workload, wl, served, fmt):
        out(line)
    return 0


def _served(args: argparse.Namespace, r: Request, found: Iterator[Point]
            ) -> Iterator[Point | ServingRow]:
    """Each point, with the time to first token and speculative decoding where asked."""
    if args.workload != "decode" or (args.prompt is None and args.draft is None):
        yield from found
        return
    model = model_of(r)
    hw = spec(r)
    ttft = None
    if args.prompt is not None:
        prompt = parse_sets([f"S={args.prompt}"], {S}, workload="--prompt")[S]
        if len(prompt) != 1:
            raise SymroofError(f"--prompt {args.prompt}: expected one number of tokens")
        ttft = prefill(model, B, prompt[0], logits=Logits.LAST, tp=r.layout.tp,
                       pp=r.layout.pp, microbatches=r.layout.microbatches,
                       expert_reads=r.layout.expert_reads)
    for p in found:
        fixed = {k: v for k, v in p.values.items() if k in (B, b)}
        first = None if ttft is None else roofline(
            ttft, hw, precision=r.numerics.peak, subs={k: v for k, v in fixed.items()
                                                       if k in ttft.flops.free_symbols
                                                       | ttft.bytes.free_symbols},
            efficiency=r.efficiency, link=r.link)
        spec_ = None if args.draft is None else _speculation(args, r, model, hw, p)
        yield ServingRow(p, first, spec_)


def _speculation(args: argparse.Namespace, r: Request, model: TransformerModel,
                 hw: HardwareSpec, p: Point) -> Speculation:
    draft = _with_kinds(load_model(args.draft), r.numerics)
    k = number_arg(args.draft_tokens, "--draft-tokens", 1)
    a = number_arg(args.acceptance, "--acceptance", 0)
    batch, context = p.values.get(B, B), p.values.get(S, S)
    return speculative(model, draft, hw, batch=batch, context=context,
                       draft_tokens=k, acceptance=a, tp=r.layout.tp,
                       draft_tp=number_arg(args.draft_tp, "--draft-tp", 1),
                       precision=r.numerics.peak, link=r.link)


def _with_kinds(m: TransformerModel, numerics: Numerics) -> TransformerModel:
    """The draft model at the request's per-kind formats, as the target takes them."""
    if not numerics.per_kind:
        return m
    return m.with_precision(weights=numerics.weights, kv_cache=numerics.kv_cache,
                            activations=numerics.activations)


COMMANDS = (
    Command("derive", "formulas F, Q, I (and values at --set points)",
            lambda p: _configure(p, False), _run),
    Command("eval", "derive plus roofline time and bound on --hardware",
            lambda p: _configure(p, True), _run),
)

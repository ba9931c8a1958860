"""``symroof derive`` (formulas F, Q, I and values) and ``symroof eval`` (plus the roofline,
and for decode and prefill the serving figures: latency, tokens/s, memory per device)."""

from __future__ import annotations

import argparse
import math
from collections.abc import Iterator, Mapping
from typing import Any

from symroof import compiled, hardware
from symroof.analysis import Analysis
from symroof.cli.common import (DEFAULT_PRECISION, Command, Output, add_format,
                                add_layout_options, add_model_options, add_workload_options,
                                build_workload, check_format, check_precision, given, layout_of, load_model,
                                model_of, number_arg, parse_sets, peak_precision, rows,
                                workload_symbols)
from symroof.errors import SymroofError
from symroof.evaluate import Point, points, roofline, workload_values
from symroof.hardware import UNITS, HardwareSpec
from symroof.models import TransformerModel
from symroof.options import Logits
from symroof.precision import bytes_per_value
from symroof.present.commands import ServingRow, derive_json, derive_lines, dumps
from symroof.serving import Speculation, kv_cache_per_device, speculative
from symroof.symbols import B, S, b
from symroof.workloads import prefill

__all__ = ["COMMANDS", "COMPILED_ROWS", "resolve_chip", "check_peak"]

#: From this many rows, text output uses the compiled float64 path (it compiles once first,
#: which only pays off over many rows); --exact and --json keep exact rationals.
COMPILED_ROWS = 64


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
                   f"alike (default {DEFAULT_PRECISION}; formulas keep b)")
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


def check_peak(hw: HardwareSpec, args: argparse.Namespace, ops_per_mac: int = 2) -> str:
    """The peak's precision, refused in one line naming its option if the chip has none."""
    peak, flag = peak_precision(args)
    bytes_per_value(peak)
    try:
        hw.peak(peak, unit=getattr(args, "unit", None), ops_per_mac=ops_per_mac)
    except SymroofError:
        offers = ", ".join(hw.precisions(getattr(args, "unit", None)))
        hint = " (4-bit weights with 16-bit compute: --weights int4)" \
            if peak in ("int4", "fp4") else ""
        raise SymroofError(f"{flag} {peak}: {hw.name} has no peak for {peak}; it offers "
                           f"{offers}{hint}") from None
    return peak


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
    check_precision(args)
    if evaluating:
        _extras_only_for_decode(args)
    wl = build_workload(args)
    free = workload_symbols(wl)
    sets = parse_sets(args.set or [], free, workload=args.workload)
    precision = args.precision or DEFAULT_PRECISION
    fill = {b: bytes_per_value(precision)} if b in free and b not in sets else {}
    peak = peak_precision(args)[0]
    hw = resolve_chip(args) if evaluating else None
    if hw is not None:  # the chip's figures, once, before any row
        peak = check_peak(hw, args, wl.convention.flop_count.ops_per_mac)
        hw.bandwidth(args.level)
        if (given(args, "tp") or given(args, "pp")) and not hw.interconnects:
            flag = "--tp" if given(args, "tp") else "--pp"
            raise SymroofError(f"{flag} {getattr(args, flag[2:])}: {hw.name} lists no "
                               "interconnect (give a chip file with an [interconnect.*] table)")
    many = math.prod(len(v) for v in sets.values()) >= COMPILED_ROWS
    compiled_path = many and not args.exact and not args.json
    if not compiled_path:  # (the compiled path checks every row itself before the first)
        for row in rows(sets):  # every row's values are checked before anything is written
            workload_values(wl, {**row, **fill}, peak)
    options = _serving_options(args) if hw is not None else {}
    # then rows are made, evaluated and written one at a time (b at --precision, shown)
    made = ({**row, **fill} for row in rows(sets))
    evaluate_rows = compiled.points if compiled_path else points
    found = evaluate_rows(wl, made, hw=hw, precision=peak, unit=getattr(args, "unit", None),
                          level=getattr(args, "level", None), **options)
    served = _served(args, wl, found, hw, peak, options) if hw is not None else found
    if args.json:  # one JSON document: its rows are held until the last one is made
        out(dumps(derive_json(args.workload, wl, served)))
        return 0
    for line in derive_lines(args.workload, wl, served, fmt):
        out(line)
    return 0


def _serving_options(args: argparse.Namespace) -> dict[str, Any]:
    opts: dict[str, Any] = {"efficiency": number_arg(args.efficiency, "--efficiency", 1),
                            "reserve": number_arg(args.reserve, "--reserve", 0),
                            "link": args.link,
                            # a training step's memory is symroof train's (gradients, state)
                            "footprint": args.workload != "training"}
    if args.workload == "prefill":  # a prefill writes the cache it then holds
        lay = layout_of(args)
        opts["kv_cache"] = kv_cache_per_device(model_of(args), batch=B, context=S,
                                               tp=lay["tp"], pp=lay["pp"])
    return opts


def _served(args: argparse.Namespace, wl: Analysis, found: Iterator[Point],
            hw: HardwareSpec, peak: str, options: Mapping[str, Any]
            ) -> Iterator[Point | ServingRow]:
    """Each point, with the time to first token and speculative decoding where asked."""
    if args.workload != "decode" or (args.prompt is None and args.draft is None):
        yield from found
        return
    lay = layout_of(args)
    model = model_of(args)
    ttft = None
    if args.prompt is not None:
        prompt = parse_sets([f"S={args.prompt}"], {S}, workload="--prompt")[S]
        if len(prompt) != 1:
            raise SymroofError(f"--prompt {args.prompt}: expected one number of tokens")
        ttft = prefill(model, B, prompt[0], logits=Logits.LAST, **lay)  # type: ignore[arg-type]
    for p in found:
        fixed = {k: v for k, v in p.values.items() if k in (B, b)}
        first = None if ttft is None else roofline(
            ttft, hw, precision=peak, subs={k: v for k, v in fixed.items()
                                            if k in ttft.flops.free_symbols
                                            | ttft.bytes.free_symbols},
            efficiency=options.get("efficiency", 1), link=args.link)
        spec = None if args.draft is None else _speculation(args, model, hw, peak, p)
        yield ServingRow(p, first, spec)


def _speculation(args: argparse.Namespace, model: TransformerModel, hw: HardwareSpec,
                 peak: str, p: Point) -> Speculation:
    draft = load_model(args.draft)
    kinds = {k: getattr(args, k) for k in ("weights", "kv_cache", "activations")}
    if any(kinds.values()):
        fill = args.precision or DEFAULT_PRECISION
        draft = draft.with_precision(**{k: v or fill for k, v in kinds.items()})
    k = number_arg(args.draft_tokens, "--draft-tokens", 1)
    a = number_arg(args.acceptance, "--acceptance", 0)
    batch, context = p.values.get(B, B), p.values.get(S, S)
    return speculative(model, draft, hw, batch=batch, context=context,
                       draft_tokens=k, acceptance=a, tp=layout_of(args)["tp"],
                       draft_tp=number_arg(args.draft_tp, "--draft-tp", 1),
                       precision=peak, link=args.link)


COMMANDS = (
    Command("derive", "formulas F, Q, I (and values at --set points)",
            lambda p: _configure(p, False), _run),
    Command("eval", "derive plus roofline time and bound on --hardware",
            lambda p: _configure(p, True), _run),
)

"""``symroof memory`` (what each device holds while serving) and ``symroof capacity`` (how
many sequences fit), both from the sharded decode graph of a model."""

from __future__ import annotations

import argparse
import dataclasses

from symroof.cli.base import Command, Output
from symroof.cli.common import (CLI_NAMES, add_layout_options, add_model_options, given,
                                number_arg, numerics_of, parse_sets)
from symroof.errors import SymroofError
from symroof.precision import DEFAULT
from symroof.present.commands import capacity_doc, capacity_lines, dumps, memory_doc, memory_lines
from symroof.present.records import to_text
from symroof.models import TransformerModel
from symroof.options import WindowCache
from symroof.request import Request, load_model, make, model, points, spec
from symroof.serving import max_sequences
from symroof.symbols import B, S

__all__ = ["COMMANDS"]


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", required=True, help="model preset (any case), config.json or "
                   "a folder holding one")
    p.add_argument("--hardware", required=True, help="a chip name or a chip file .toml")
    add_layout_options(p)
    add_model_options(p)
    p.add_argument("--precision", default=None,
                   help=f"bytes per value of every tensor kind not given (default "
                   f"{DEFAULT})")
    p.add_argument("--reserve", default=None, help="share of each device's memory kept back "
                   "(runtime, activations, fragmentation; default 0, vLLM keeps 0.1)")
    p.add_argument("--window-cache", default="window", choices=[w.value for w in WindowCache],
                   help="positions a sliding-window layer's KV buffer holds once the context "
                   "passes the window (default window: W; window_minus_1: W - 1, as "
                   "transformers' dynamic cache keeps them)")
    p.add_argument("--json", action="store_true", help="machine-readable output")


def _configure_memory(p: argparse.ArgumentParser) -> None:
    _common(p)
    p.add_argument("--set", action="append", metavar="NAME=V[,V...]",
                   help="B (sequences) and S (context); several values make several rows")


def _configure_capacity(p: argparse.ArgumentParser) -> None:
    _common(p)
    p.add_argument("--context", required=True, metavar="S[,S...]",
                   help="positions per sequence (8k is 8000, 8Ki 8192); several make rows")


def _request(args: argparse.Namespace, sets: list[str] | None = None) -> Request:
    """A decode step of the model on the chip, as the request every command makes. Its
    peak is at b's format, not the activations': memory shows no time, so any chip holds
    it (a chip without an fp8 peak still holds fp8 activations)."""
    n = numerics_of(args)
    layout = {k: getattr(args, k) for k in ("tp", "pp", "microbatches", "expert_reads")
              if given(args, k)}
    numerics = dataclasses.replace(n, peak=n.values, peak_from="precision")
    spec_: str | TransformerModel = args.model
    if args.window_cache != WindowCache.WINDOW:   # the model as its KV buffers hold it
        spec_ = load_model(args.model).as_cached(args.window_cache)
    return make("decode", model=spec_, chip=args.hardware, sets=sets, numerics=numerics,
                reserve=number_arg(args.reserve, "--reserve", 0), names=CLI_NAMES, **layout)


def _text(args: argparse.Namespace, m: TransformerModel) -> str:
    """The model's line; under --window-cache window_minus_1 ``m`` is the model as its
    buffers hold it (window W - 1), which the line says."""
    if args.window_cache == WindowCache.WINDOW or m.window is None:
        return to_text(m)
    return (f"{to_text(m)} (window_cache=window_minus_1: a windowed layer's KV buffer "
            f"holds W - 1 = {m.window} positions of its window of {m.window + 1})")


def _run_memory(args: argparse.Namespace, out: Output) -> int:
    for item in args.set or []:  # memory takes the batch and the context only
        name = item.partition("=")[0].strip()
        if name not in ("B", "S"):
            raise SymroofError(f"--set {name}: memory does not use {name} (its symbols: B, S)")
    r = _request(args, args.set or [])
    m = model(r)
    assert m is not None  # decode takes a model
    found = []
    for p in points(r):
        assert p.roofline is not None  # the request names a chip
        found.append(({k: v for k, v in p.values.items() if k in (B, S)}, p.roofline))
    if args.json:
        out(dumps({**memory_doc(_text(args, m), found), "window_cache": args.window_cache}))
        return 0
    for line in memory_lines(_text(args, m), found):
        out(line)
    return 0


def _run_capacity(args: argparse.Namespace, out: Output) -> int:
    r = _request(args)
    m, hw = model(r), spec(r)
    assert m is not None  # decode takes a model
    if r.layout.microbatches != 1:
        raise SymroofError("--microbatches: capacity counts sequences, not micro-batches")
    contexts = parse_sets([f"S={args.context}"], {S}, workload="--context")[S]
    found = [max_sequences(m, hw, context=c, tp=r.layout.tp, pp=r.layout.pp,
                           reserve=r.reserve, precision=r.numerics.values) for c in contexts]
    # (a --window-cache other than W reached the model already: _request)
    pairs = list(zip(contexts, found))
    if args.json:
        out(dumps({**capacity_doc(_text(args, m), hw.name, pairs),
                   "window_cache": args.window_cache}))
        return 0
    for line in capacity_lines(_text(args, m), hw.name, pairs):
        out(line)
    return 0


COMMANDS = (
    Command("memory", "what each device holds serving B sequences at context S, and the fit",
            _configure_memory, _run_memory),
    Command("capacity", "how many sequences of a context fit beside the weights",
            _configure_capacity, _run_capacity),
)

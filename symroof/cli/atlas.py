"""``symroof atlas``: every crossover of a workload, as a table or JSON.

``symroof atlas decode --model llama-3-70b --hardware h100-sxm`` solves each pair of F's
and Q's parts and the intensity against each chip's ridge in B and in S; ``--set``
gives the point the value column is taken at; ``--compare weights=bf16,fp8,int4`` sets
the atlases of the model at several number formats side by side.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import sympy as sp

from symroof import symbols as s
from symroof.analysis import Analysis
from symroof.atlas import AtlasBudget, atlas, family, records
from symroof.cli.common import (Command, Output, add_workload_options, build_workload,
                                load_model, numerics_of, parse_sets, request_of)
from symroof.errors import SymroofError
from symroof.files import write_files
from symroof.hardware import UNITS
from symroof.models import TransformerModel
from symroof.precision import Precision
from symroof.present.atlas import atlas_doc, atlas_lines, family_doc, family_lines
from symroof.present.atlas_report import atlas_page
from symroof.present.commands import dumps
from symroof.request import analysis, make
from symroof.workloads import registry

__all__ = ["COMMANDS"]

#: ``--compare`` kinds: the keywords of ``TransformerModel.with_precision``.
_KINDS = ("weights", "kv_cache", "activations")


def _configure(p: argparse.ArgumentParser) -> None:
    add_workload_options(p)
    p.add_argument("--format", default="text", choices=["text", "markdown", "latex"],
                   help="how the table is written (default text)")
    p.add_argument("--over", default=None, metavar="B,S",
                   help="the variables to solve in (default: the workload's B, S, M, N, K, n)")
    p.add_argument("--hardware", action="append", metavar="CHIP",
                   help="a chip whose ridges the intensity meets (repeat for several)")
    p.add_argument("--precision", action="append", metavar="P",
                   help="ridge precision(s) (default bf16); the first also sets b at --set")
    p.add_argument("--level", default=None, help="memory level (default: each with a bandwidth)")
    p.add_argument("--unit", default=None, choices=list(UNITS))
    p.add_argument("--set", action="append", metavar="NAME=V",
                   help="the point the value column is taken at (one value per symbol)")
    p.add_argument("--textbook", action="store_true",
                   help="also give each solution with P, the model's parameter count")
    p.add_argument("--compare", default=None, metavar="KIND=P1,P2",
                   help="side by side at several formats: weights=bf16,fp8,int4 "
                        "(kinds: weights, kv_cache, activations)")
    p.add_argument("--report", default=None, metavar="DIR",
                   help="also write the atlas as a report page: DIR/atlas-WORKLOAD.md, .tex "
                        "and charts/*.svg (the crossing curves)")
    p.add_argument("--max-degree", type=int, default=AtlasBudget.max_degree,
                   help=f"highest polynomial degree solved (default {AtlasBudget.max_degree})")
    p.add_argument("--atlas-seconds", type=float, default=records.DEFAULT_SECONDS,
                   help=f"time for the whole atlas; pairs not reached by then are listed "
                        f"as unsolved (default {records.DEFAULT_SECONDS:g})")


def _model(args: argparse.Namespace) -> TransformerModel:
    if not registry.get(args.workload).model:
        takes = ", ".join(e.name for e in registry.ENTRIES.values() if e.model)
        raise SymroofError(f"--compare and --textbook need a model workload "
                           f"({takes}), got {args.workload!r}")
    return load_model(args.model)  # None: the seeds' symbolic model, as the others build it


def _build(args: argparse.Namespace, model: TransformerModel) -> Analysis:
    """The workload over ``model`` (a model object: its formats as they are)."""
    r = request_of(args)
    return analysis(make(r.workload, options=dict(r.options), model=model))


def _symbols(text: str, wl: Analysis) -> list[sp.Symbol]:
    free = {x.name: x for x in wl.flops.free_symbols | wl.bytes.free_symbols}
    out = []
    for name in (t.strip() for t in text.split(",")):
        if name not in free:
            raise SymroofError(f"--over {name!r}: expected symbols of the workload "
                               f"({', '.join(sorted(free))})")
        out.append(free[name])
    return out


def _compare(text: str) -> tuple[str, list[str]]:
    kind, sep, values = text.partition("=")
    if not sep or kind not in _KINDS or not values:
        raise SymroofError(f"--compare {text!r}: expected KIND=P1,P2 with KIND one of "
                           f"{', '.join(_KINDS)}, e.g. weights=bf16,fp8,int4")
    formats = [Precision.parse(v.strip(), f"--compare {kind}").value
               for v in values.split(",")]
    return kind, formats


def _textbook(model: TransformerModel | None) -> dict[sp.Symbol, sp.Expr]:
    assert model is not None
    if model.params.is_number:
        raise SymroofError(f"--textbook: model {model.name!r} has a numeric parameter count "
                           f"({model.params}); P names the count of a symbolic model")
    return {s.P: model.params}


def _budget(args: argparse.Namespace) -> AtlasBudget:
    if args.max_degree < 1 or args.max_degree > 4:
        raise SymroofError(f"--max-degree: expected 1 to 4, got {args.max_degree}")
    if not 0 < args.atlas_seconds <= 600:
        raise SymroofError(f"--atlas-seconds: expected a time above 0 and at most 600, got {args.atlas_seconds}")
    return AtlasBudget(max_degree=args.max_degree, seconds=args.atlas_seconds)


def _run(args: argparse.Namespace, out: Output) -> int:
    needs_model = args.compare is not None or args.textbook
    model = _model(args) if needs_model else None
    wl = _build(args, model) if model is not None else build_workload(args)
    free = wl.flops.free_symbols | wl.bytes.free_symbols
    values: dict[sp.Symbol, sp.Expr] = {}
    for k, v in parse_sets(args.set or [], free).items():
        if k not in free:
            raise SymroofError(f"--set {k.name}: not a symbol of {args.workload} (its symbols: "
                               f"{', '.join(sorted(x.name for x in free))})")
        if len(v) != 1:
            raise SymroofError(f"--set {k.name}: atlas takes one value per symbol, got {len(v)}")
        values[k] = v[0]
    numerics = numerics_of(args)  # the first --precision sets b (default bf16)
    precisions = args.precision or [numerics.values.value]
    if s.b in free and s.b not in values:
        values[s.b] = numerics.b
    options: dict[str, Any] = dict(
        over=None if args.over is None else _symbols(args.over, wl), hardware=args.hardware or (),
        precisions=precisions, levels=args.level, unit=args.unit, budget=_budget(args),
        named=_textbook(model) if args.textbook else None)
    if args.compare is not None:
        assert model is not None
        kind, formats = _compare(args.compare)
        members = {f: _build(args, model.with_precision(**{kind: f})) for f in formats}
        fam = family(members, **options)
        if args.json:
            out(dumps(family_doc(fam, values)))
        else:
            for line in family_lines(fam, values):
                out(line)
        return 0
    result = atlas(wl, **options)
    if args.report is not None:
        _write_page(result, values, args)
    if args.json:
        out(dumps(atlas_doc(result, values)))
        return 0
    for line in atlas_lines(result, values, args.format):
        out(line)
    return 0


def _write_page(result: Any, values: dict[sp.Symbol, sp.Expr], args: argparse.Namespace) -> None:
    """The atlas as a page in Markdown and LaTeX, with its curves, into ``--report``."""
    command = "symroof atlas " + args.workload + (f" --model {args.model}" if args.model else "")
    page = atlas_page(result, values, command)
    stem = f"atlas-{args.workload}" + (f"-{Path(args.model).stem}" if args.model else "")
    # one set, written whole (a full disk leaves the old page), nothing outside --report
    write_files(args.report, {f"{stem}.md": page.markdown, f"{stem}.tex": page.latex,
                              **{f"charts/{c.id}.svg": c.svg for c in page.charts}})


COMMANDS = (Command("atlas", "every crossover of a workload's F and Q parts and ridges",
                    _configure, _run),)

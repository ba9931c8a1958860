"""``symroof plan``: will these chips serve this model under these objectives? The
configurations that do, the best per chip, the Pareto front (drawn with ``--chart``), and
the closed forms that bind the best; where none does, the objective that binds first and
the closest configuration's shortfall."""

from __future__ import annotations

import argparse
import inspect
from collections.abc import Sequence
from pathlib import Path

import sympy as sp

from symroof.cli.base import Command, Output
from symroof.cli.common import number_arg
from symroof.errors import SymroofError
from symroof.files import write_text
from symroof.plan import Draft, Plan, plan
from symroof.plan.core import Config
from symroof.plan.core import plan_from_files
from symroof.plan.inputs import (ChunkTTFT, DecodeContext, Mode, Service, numerics_name,
                                 parse_numerics)
from symroof.plan.search import EXECUTORS
from symroof.plan.text import document, lines
from symroof.present.charts import CurveChart, curve_pgfplots, curve_svg
from symroof.present.commands import dumps

__all__ = ["COMMANDS", "chart", "TEX_WIDTH_CM"]

#: The pgfplots chart's axis width. The layout measures a label at 11 px of its 548-px
#: frame and pgfplots sets it in \scriptsize (8 pt): at 548 px x 8/11 pt = 14.0 cm a
#: label takes the room the layout gave it (at 10 cm the best's label ran under the
#: legend; a report scales the picture to its text width).
TEX_WIDTH_CM = 14.0

#: The library's defaults, which the flags' defaults are (one definition each).
_PLAN = {k: v.default for k, v in inspect.signature(plan).parameters.items()}
_SERVICE = Service()
_DRAFT = {f: Draft.__dataclass_fields__[f].default for f in ("tokens", "acceptance")}


def _configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", required=True, help="model preset (any case), config.json or a "
                   "folder holding one")
    p.add_argument("--chip", action="append", required=True, metavar="NAME=COUNT",
                   help="a chip (name or .toml) and how many are available; repeat for several")
    p.add_argument("--workload", action="append", required=True, metavar="PROMPT:OUTPUT[:WEIGHT]",
                   help="prompt and output tokens of a request class; repeat for a mix")
    p.add_argument("--ttft", default=None, metavar="S", help="objective: time to first token (s)")
    p.add_argument("--itl", default=None, metavar="S", help="objective: inter-token latency (s)")
    p.add_argument("--tokens-per-user", dest="tokens_per_user", default=None, metavar="N",
                   help="objective: tokens/s each user gets")
    load = p.add_mutually_exclusive_group(required=True)
    load.add_argument("--users", default=None, metavar="N", help="load: concurrent users")
    load.add_argument("--rps", default=None, metavar="R", help="load: requests per second")
    p.add_argument("--prices", default=None, metavar="FILE.toml",
                   help="price per chip hour: currency = \"USD\" and a [price] table "
                   "(see examples/prices.toml)")
    p.add_argument("--precision", action="append", default=None, metavar="FORMAT|KIND=F,...",
                   help="a choice of number formats: bf16, fp8, or weights=int4,kv_cache=fp8 "
                   "(kinds not named stay bf16); repeat to compare (default bf16)")
    p.add_argument("--tp", default=None, metavar="T[,T...]",
                   help="tensor-parallel degrees to try (default: every one that splits the "
                   "heads, up to the chips on offer)")
    pp = ",".join(map(str, _PLAN["pp"]))
    p.add_argument("--pp", default=pp, metavar="P[,P...]",
                   help=f"pipeline stages to try (default {pp})")
    p.add_argument("--microbatches", default=None, metavar="M[,M...]",
                   help="micro-batches a decode step runs through the pp stages, tried with "
                   "pp > 1 (default: 1 and pp; bubble (pp-1)/(m+pp-1))")
    p.add_argument("--expert-reads", dest="expert_reads",
                   default=",".join(map(str, _PLAN["expert_reads"])), metavar="R[,R...]",
                   help="MoE: how a step reads expert weights (all, routed, expected; default "
                   "all, the upper bound); several compare them")
    p.add_argument("--draft", default=None, metavar="MODEL",
                   help="speculative decoding with this draft model (tried on and off)")
    p.add_argument("--draft-tokens", dest="draft_tokens", default=str(_DRAFT["tokens"]),
                   metavar="K", help=f"tokens the draft proposes per round (default "
                   f"{_DRAFT['tokens']})")
    p.add_argument("--acceptance", default=str(_DRAFT["acceptance"]), metavar="A",
                   help=f"probability each drafted token is accepted (default "
                   f"{_DRAFT['acceptance']})")
    p.add_argument("--mode", default=_SERVICE.mode.value, choices=[m.value for m in Mode],
                   help="prefill on the decode chips between steps (colocated, default), on "
                   "chips of its own (disaggregated), or in chunks inside every decode step "
                   "(chunked)")
    p.add_argument("--chunk-tokens", dest="chunk_tokens", default=str(_SERVICE.chunk_tokens),
                   metavar="C", help=f"chunked: prompt tokens a decode step carries at most "
                   f"(default {_SERVICE.chunk_tokens})")
    p.add_argument("--chunk-ttft", dest="chunk_ttft", default=_SERVICE.chunk_ttft.value,
                   choices=[c.value for c in ChunkTTFT],
                   help="chunked: TTFT as the ceil(P/C) decode steps that carry the prompt's "
                   "chunks (steps, default) or the prompt's own prefill (prefill, a lower "
                   "bound)")
    p.add_argument("--kv-link-bandwidth", dest="kv_link_bandwidth", default=None,
                   metavar="GB/S", help="disaggregated: bandwidth (GB/s) of the link the "
                   "prompt's KV cache crosses to a decode replica (default: the chip's "
                   "fastest interconnect, one direction)")
    p.add_argument("--decode-context", dest="decode_context",
                   default=_SERVICE.decode_context.value,
                   choices=[d.value for d in DecodeContext],
                   help="the cache a decode step reads: final (prompt + output, default) or "
                   "mean (prompt + output/2)")
    p.add_argument("--compute-efficiency", dest="compute_efficiency",
                   default=f"{_SERVICE.compute_efficiency:g}",
                   metavar="E", help="achieved fraction of peak FLOP/s (default 1: the bound)")
    p.add_argument("--bandwidth-efficiency", dest="bandwidth_efficiency",
                   default=f"{_SERVICE.bandwidth_efficiency:g}",
                   metavar="E", help="achieved fraction of memory and link bandwidth "
                   "(default 1: the bound)")
    p.add_argument("--reserve", default=f"{_SERVICE.reserve:g}", metavar="R",
                   help="share of each device's memory kept back (default 0; vLLM keeps 0.1)")
    p.add_argument("--max-batch", dest="max_batch", default=str(_PLAN["max_batch"]),
                   metavar="B", help=f"largest batch per replica searched (default "
                   f"{_PLAN['max_batch']})")
    p.add_argument("--executor", default=_PLAN["executor"], choices=list(EXECUTORS),
                   help="where blocks run: serial (default), threads, processes, dask")
    p.add_argument("--workers", default=None, metavar="N", help="threads or processes")
    p.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="a Dask distributed scheduler (tcp://host:8786): blocks run there")
    p.add_argument("--chart", action="append", default=[], metavar="FILE.svg|FILE.tex",
                   help="draw the Pareto front (SVG, or a pgfplots picture for a report)")
    p.add_argument("--front-rows", dest="front_rows", default="12", metavar="N",
                   help="Pareto rows printed (default 12; the whole front goes to --json)")
    p.add_argument("--json", action="store_true", help="machine-readable output")


def _parsed(text: str, flag: str) -> sp.Expr:
    """A number typed for ``flag`` (the safe parser), an error naming the flag."""
    try:
        return number_arg(text, flag, None)
    except SymroofError as err:
        msg = str(err)
        raise SymroofError(msg if msg.startswith(flag) else f"{flag} {text}: {msg}") from None


def _number(text: str | None, flag: str) -> float | None:
    if text is None:
        return None
    return float(_parsed(text, flag))


def _integer(text: str, flag: str) -> int:
    v = _parsed(text, flag)
    if not (v.is_Integer and v > 0):
        raise SymroofError(f"{flag} {text}: expected a positive integer")
    return int(v)


def _integers(text: str, flag: str) -> list[int]:
    return [_integer(t.strip(), flag) for t in text.split(",") if t.strip()] or \
        [_integer(text, flag)]


def _chips(items: Sequence[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for item in items:
        name, eq, count = item.rpartition("=")
        if not eq or not name.strip():
            raise SymroofError(f"--chip {item}: expected NAME=COUNT (a100-80gb=4)")
        out[name.strip()] = _integer(count.strip(), f"--chip {name.strip()}")
    return out


def _workload(items: Sequence[str]) -> list[tuple[object, ...]]:
    out: list[tuple[object, ...]] = []
    for item in items:
        parts = item.split(":")
        if len(parts) not in (2, 3):
            raise SymroofError(f"--workload {item}: expected PROMPT:OUTPUT[:WEIGHT] (2000:500)")
        p = _integer(parts[0], "--workload prompt")
        o = _integer(parts[1], "--workload output")
        out.append((p, o) if len(parts) == 2 else (p, o, _number(parts[2], "--workload weight")))
    return out


def _link(text: str | None) -> float | None:
    """``--kv-link-bandwidth`` GB/s as bytes/s."""
    v = _number(text, "--kv-link-bandwidth")
    if v is not None and not v > 0:
        raise SymroofError(f"--kv-link-bandwidth {text}: expected a positive number of GB/s")
    return None if v is None else v * 1e9


def _plan(args: argparse.Namespace) -> Plan:
    from symroof.hardware import resolve  # chips by name or file, resolved once here

    chips = _chips(args.chip)
    names = [resolve(c).name for c in chips]
    prices, currency = plan_from_files(args.prices, names)
    draft = None
    if args.draft is not None:
        from symroof.request import load_model  # the front door's model reader

        draft = Draft(load_model(args.draft), _integer(args.draft_tokens, "--draft-tokens"),
                      float(_number(args.acceptance, "--acceptance") or 0))
    load = {"users": _number(args.users, "--users")} if args.users is not None else \
        {"requests_per_s": _number(args.rps, "--rps")}
    return plan(args.model, {resolve(c): n for c, n in chips.items()},
                workload=_workload(args.workload),
                objectives={"ttft_s": _number(args.ttft, "--ttft"),
                            "itl_s": _number(args.itl, "--itl"),
                            "tokens_per_user": _number(args.tokens_per_user,
                                                       "--tokens-per-user")},
                load=load, prices=prices, currency=currency,
                precisions=[parse_numerics(t, "--precision") for t in args.precision or _PLAN["precisions"]],
                tp=None if args.tp is None else _integers(args.tp, "--tp"),
                pp=_integers(args.pp, "--pp"),
                microbatches=None if args.microbatches is None else
                _integers(args.microbatches, "--microbatches"),
                expert_reads=[e.strip() for e in args.expert_reads.split(",")],
                draft=draft,
                service={"mode": args.mode, "decode_context": args.decode_context,
                         "compute_efficiency": _number(args.compute_efficiency,
                                                       "--compute-efficiency"),
                         "bandwidth_efficiency": _number(args.bandwidth_efficiency,
                                                         "--bandwidth-efficiency"),
                         "reserve": _number(args.reserve, "--reserve"),
                         "chunk_tokens": _integer(args.chunk_tokens, "--chunk-tokens"),
                         "chunk_ttft": args.chunk_ttft,
                         "kv_link_bandwidth": _link(args.kv_link_bandwidth)},
                max_batch=_integer(args.max_batch, "--max-batch"), executor=args.executor,
                workers=None if args.workers is None else _integer(args.workers, "--workers"),
                scheduler=args.scheduler)


def _split(c: Config) -> str:
    lay = c.layout
    return f"tp{lay.tp} pp{lay.pp}" + (f" mb{lay.microbatches}" if lay.microbatches > 1 else "")


def chart(p: Plan) -> CurveChart:
    """The Pareto front of each chip, one curve per chip (tokens/s per user against tokens/s per
    chip; log axes where the values span a decade), the best of each chip marked."""
    series, marks = [], []
    for chip, front in p.front_per_chip:
        cs = sorted(front, key=lambda c: c.tokens_per_user)
        if len(cs) >= 2:
            series.append((f"{chip} front", [c.tokens_per_user for c in cs],
                           [c.tokens_per_chip for c in cs]))
            for c in cs:  # a short front's points, each named; a long one's as dots
                if c in p.best_per_chip:
                    continue
                name = f"{_split(c)} {numerics_name(c.layout.numerics)} B={c.batch}" \
                    if len(cs) <= 6 else ""
                if len(cs) <= 40:
                    marks.append((name, c.tokens_per_user, c.tokens_per_chip))
        elif cs[0] not in p.best_per_chip:
            marks.append((f"{chip} B={cs[0].batch}", cs[0].tokens_per_user,
                          cs[0].tokens_per_chip))
    one_chip = len(p.front_per_chip) == 1  # the legend names the chip: labels need not
    for c in p.best_per_chip:
        marks.append((f"best {'' if one_chip else c.layout.chip + ' '}{_split(c)} "
                      f"{numerics_name(c.layout.numerics)} B={c.batch}",
                      c.tokens_per_user, c.tokens_per_chip))
    if not series:  # a chart needs a curve: the marks joined, or a flat stub
        pts = sorted((m[1], m[2]) for m in marks)
        if len(pts) < 2:
            x, y = pts[0] if pts else (1.0, 1.0)
            pts = [(x * 0.999, y), (x * 1.001, y)]
        series.append(("front", [x for x, _ in pts], [y for _, y in pts]))
    xs = [x for _, sx, _ in series for x in sx]
    ys = [y for _, _, sy in series for y in sy]
    return CurveChart(f"{p.model}: Pareto front", "tokens/s per user", "tokens/s per chip",
                      series, marks=marks, log_x=max(xs) > 10 * min(xs),
                      log_y=max(ys) > 10 * min(ys))  # log axes only over a decade or more


def _run(args: argparse.Namespace, out: Output) -> int:
    for path in args.chart:
        if Path(path).suffix not in (".svg", ".tex"):
            raise SymroofError(f"--chart {path!r}: expected a .svg or .tex file")
    front_rows = _integer(args.front_rows, "--front-rows")
    p = _plan(args)
    for path in args.chart:
        if not p.front:
            raise SymroofError(f"--chart {path}: no configuration meets the objectives, so "
                               "there is no front to draw")
        c = chart(p)
        write_text(path, curve_svg(c) if path.endswith(".svg") else
                   curve_pgfplots(c, width_cm=TEX_WIDTH_CM))
    if args.json:
        out(dumps(document(p)))
        return 0
    for line in lines(p, front_rows=front_rows):
        out(line)
    return 0


COMMANDS = (Command("plan", "will these chips serve this model? configurations, best per "
                    "chip, Pareto front, binding formulas", _configure, _run),)
